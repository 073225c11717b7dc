"""Compiled evaluators of the sample leaves of the generic lowering: the per-sample expression of a linear score
as a few vectorized operations on the rows, instead of a walk over the expression tree at every step.

A per-sample expression built from one linear score z_i = x_i . w + b by losses, sums, scalar multiples and
products with fixed data vectors (the covariance of Zafar et al. 2017, the sample weights of an aggregate) is

    e_i(w) = c_i + sum_t a_{t,i} f_t(z_i, y_i),

f_t either the score itself or a pointwise loss kernel of :mod:`fairmodel.oracles.losses` (the same kernel the
loss atom evaluates: the formulas are the tree walk's, term by term); the atoms state it as their fact
``score_form()`` (:mod:`fairmodel.expressions.score_forms`), and this module evaluates it on rows. Its value and its
derivative in the score on any rows then cost one product of the rows with w, a few elementwise operations and,
for the gradient of a weighted sum of such expressions, one product of the rows' transpose with the summed
coefficients (the chain rule through the score, as in :class:`fairmodel.oracles.losses.LinearModelLoss`).
Expressions outside this form (a hinge inside a ``pos``, a matrix of weights, two data sets) are not compiled:
:func:`compile_leaves` returns None and the oracle walks the tree.

The same compiled expressions are the model-space method's per-sample functions (:mod:`.model_space`): with
every kernel twice differentiable, the jet (``PerSample.jet``) adds the curvature d^2 e / dz^2, and a chunk of rows
takes its part of the data vectors by ``PerSample.row_slice`` (a pass over chunked data ships only that part).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scipy import sparse

from ..oracles.losses import LinearModelLoss, Squared


class NotCompiled(Exception):
    """The per-sample expression is not a sum of data-weighted functions of one linear score."""


def _culprit(e):
    """The part of ``e`` that is not of the form: following the arguments that are not, the last one whose own
    arguments all are (or are the weights)."""
    while True:
        below = next((a for a in e.args if a.kind != "parameters" and a.score_form() is None), None)
        if below is None:
            return e
        e = below


def compile_expression(e, w) -> tuple:
    """(the LinearScore node, :class:`~fairmodel.expressions.score_forms.PerSample`) of the per-sample expression
    ``e`` of the vector of weights ``w`` (its fact :meth:`~fairmodel.expressions.Expr.score_form`); raises
    :class:`NotCompiled` saying which part is not a sum of data-weighted functions of one linear score."""
    form = e.score_form()
    if form is None:
        bad = _culprit(e)
        raise NotCompiled(f"{type(bad).__name__} ({bad}) is not a sum of multiples of a linear score and of "
                          f"losses of it")
    if form.score is None:
        raise NotCompiled(f"{e} has no linear score")
    if form.score.w is not w:
        raise NotCompiled(f"the score {form.score} is not a linear score of the vector of weights {w.name}")
    return form.score, form.per_sample


class SparseRows:
    """Gathered CSR feature rows of a sparse design, for row indices of any ``shape`` (e.g. minibatches x rows):
    ``csr`` holds them one after the other; ``X[j]`` are the rows of index j along the first axis (a slice of
    consecutive CSR rows). The dense counterpart is an array of shape ``shape + (d,)``."""

    def __init__(self, csr, shape: tuple):
        self.csr, self.shape = csr, tuple(shape)

    def __getitem__(self, j) -> "SparseRows":
        per = int(np.prod(self.shape[1:], dtype=int))
        return SparseRows(self.csr[j * per:(j + 1) * per], self.shape[1:])

    def __len__(self) -> int:
        return self.shape[0]


@dataclass
class CompiledLeaves:
    """The compiled per-sample expressions of an oracle's sample leaves, all of one linear score of w on one data
    set: ``forms[j]`` evaluates the j-th distinct expression. Gathered rows are dense arrays, or
    :class:`SparseRows` for a sparse design (the products below take either: one code path)."""

    data: object
    w: object
    forms: list

    @property
    def sparse(self) -> bool:
        return bool(getattr(self.data, "is_sparse", False))

    def substituted(self, kernel_map) -> "CompiledLeaves":
        """The same leaves with every kernel k replaced by ``kernel_map(k)``."""
        return CompiledLeaves(self.data, self.w, [f.substituted(kernel_map) for f in self.forms])

    def nonzeros_per_row(self) -> float:
        """The stored entries of a row: d for a dense design, the mean number of nonzeros of a sparse one."""
        return self.data.X.nnz / max(self.data.n_samples, 1) if self.sparse else float(self.data.n_features)

    def row_bytes(self) -> float:
        """The memory of one gathered row: 8 d bytes dense, 12 bytes per nonzero (CSR) for a sparse design."""
        return 12.0 * self.nonzeros_per_row() + 8.0 if self.sparse else 8.0 * self.data.n_features

    def gather(self, rows):
        """The feature rows X[rows] (any shape of row indices: the rows' features along a last axis; CSR rows
        of a sparse design as :class:`SparseRows`)."""
        rows = np.asarray(rows)
        found = self.data.rows(rows.ravel())
        if sparse.issparse(found):
            return SparseRows(found, rows.shape)
        return found.reshape(rows.shape + (-1,))

    def scores(self, theta, X=None) -> np.ndarray:
        """z = X w + b on the gathered rows X (None: all rows, one pass through the data source)."""
        w, b = self.w.split(theta)
        if X is None:
            return self.data.matvec(w) + b
        if isinstance(X, SparseRows):
            return (X.csr @ w).reshape(X.shape) + b
        return X @ w + b

    def pullback(self, coef, X=None) -> np.ndarray:
        """The gradient in theta of sum_i coef_i z_i: X' coef (and sum coef for the intercept); a matrix coef
        (a column per function) gives one gradient per column."""
        if X is None:
            g = self.data.rmatvec(coef)
        else:
            g = (X.csr.T if isinstance(X, SparseRows) else X.T) @ coef
        return np.concatenate([g, coef.sum(axis=0, keepdims=True)]) if self.w.intercept else g

    def pullback_many(self, coef, X) -> np.ndarray:
        """:meth:`pullback` of several minibatches at once: coef (batches, rows), X (batches, rows, features);
        one gradient per row of the result."""
        if isinstance(X, SparseRows):       # (block-diagonal coefficients) @ rows: one sparse product
            batches, per = coef.shape
            C = sparse.csr_matrix((coef.ravel(), np.arange(batches * per), np.arange(0, batches * per + 1, per)),
                                  shape=(batches, batches * per))
            g = (C @ X.csr).toarray()
        else:
            g = np.einsum("srd,sr->sd", X, coef)
        return np.hstack([g, coef.sum(axis=1, keepdims=True)]) if self.w.intercept else g


def compile_leaves(exprs: list, w) -> CompiledLeaves | None:
    """The compiled evaluators of the distinct per-sample expressions ``exprs`` of the sample leaves, or None when
    one of them is not a sum of data-weighted functions of a linear score of ``w``, or they use two data sets."""
    try:
        compiled = [compile_expression(e, w) for e in exprs]
    except NotCompiled:
        return None
    if not compiled or any(s.data is not compiled[0][0].data for s, _ in compiled):
        return None
    return CompiledLeaves(compiled[0][0].data, w, [ps for _, ps in compiled])


# -- full passes ----------------------------------------------------------------------------------------------------
class Cells:
    """The rows of one data set cut into *cells* (rows in the same row sets of the sample leaves: groups, masks): a
    code per row (1 byte below 256 cells) and, per expression, the weight A[k, c] = 1/|S_k| of a row of cell c in its
    leaf k (0 outside S_k). A full pass ships a chunk's codes; the weights are a small table."""

    def __init__(self, leaves: list, ks_lists: list, n: int):
        masks = []
        for ks in ks_lists:
            for k in ks:
                rows = leaves[k].rows
                if rows is not None and not any(rows is m or np.array_equal(rows, m) for m in masks):
                    masks.append(rows)
        if not masks:
            patterns, codes = np.zeros((1, 0), dtype=bool), np.zeros(n, dtype=np.uint8)
        elif len(masks) < 63:         # one integer key per row: the bits of its masks
            key = np.zeros(n, dtype=np.int64)
            for j, m in enumerate(masks):
                key |= np.asarray(m, dtype=np.int64) << j
            keys, codes = np.unique(key, return_inverse=True)
            patterns = (keys[:, None] >> np.arange(len(masks))) & 1 == 1
        else:
            patterns, codes = np.unique(np.stack(masks, axis=1), axis=0, return_inverse=True)
        self.n_cells = patterns.shape[0]
        self.codes = np.asarray(codes).ravel().astype(np.min_scalar_type(max(self.n_cells - 1, 0)))
        self.weights = []
        for ks in ks_lists:
            A = np.zeros((len(ks), self.n_cells))
            for r, k in enumerate(ks):
                leaf = leaves[k]
                inside = np.ones(self.n_cells, dtype=bool) if leaf.rows is None else \
                    patterns[:, next(j for j, m in enumerate(masks) if m is leaf.rows or np.array_equal(m, leaf.rows))]
                A[r, inside] = 1.0 / leaf.count
            self.weights.append(A)


class LeafSums:
    """One chunk's part of the sample leaves of compiled expressions of one linear score at theta: (values (L,),
    gradients (L, D)), and with ``omega`` the Hessian of sum_k omega_k leaf_k (D, D) (every kernel twice
    differentiable). A picklable per-chunk function of a pass (:func:`fairmodel.data.passes.row_sums`): ``batch`` the
    chunk's rows, ``codes`` their cell codes, ``forms`` the expressions' ``PerSample`` parts for the chunk."""

    def __init__(self, theta, intercept: bool, ks: list, weights: list, n_leaves: int, omega=None):
        self.theta, self.intercept, self.ks, self.weights = np.asarray(theta, dtype=float), intercept, ks, weights
        self.n_leaves, self.omega = n_leaves, omega

    def __call__(self, batch, codes, *forms):
        model = LinearModelLoss(Squared, batch.X, None, self.intercept, np.ones(batch.X.shape[0]),
                                drop_zero_weights=False)
        z = model.scores(self.theta)
        values, grads = np.zeros(self.n_leaves), np.zeros((self.n_leaves, self.theta.size))
        curvature = None
        for ks, A, form in zip(self.ks, self.weights, forms):
            if self.omega is None:
                h, h1 = form.value_and_slope(z)
            else:
                h, h1, h2 = form.jet(z)
                part = h2 * (self.omega[ks] @ A)[codes]
                curvature = part if curvature is None else curvature + part
            values[ks] += A @ np.bincount(codes, weights=np.broadcast_to(h, z.shape), minlength=A.shape[1])
            grads[ks] += model.pullback(np.broadcast_to(h1, z.shape)[:, None] * A[:, codes].T).T
        if self.omega is None:
            return values, grads
        H = model.curvature(curvature) if curvature is not None and np.any(curvature) else \
            np.zeros((self.theta.size, self.theta.size))
        return values, grads, H


class CurvatureMoments(LeafSums):
    """One chunk's part of the two curvature matrices of the minibatch Hessians of sum_k omega_k leaf_k at theta
    (every kernel twice differentiable): H = sum_i c_i z_i z_i' (the Hessian; c_i the row's coefficient, its
    expression's second derivative times omega's weights over its leaves' row counts; z_i = (x_i, 1) with an
    intercept) and K = sum_i n_i c_i^2 (z_i' P z_i) z_i z_i' (n_i the size of the row's sampling cell, ``sizes``;
    P the inverse of the metric of the method's coordinates, ``inverse_metric``). A row drawn uniformly from its
    cell estimates the cell's part of H by A_i = n_i c_i z_i z_i', whose second moment in the metric is the cell's
    part of K: a minibatch of b rows per cell has E ||H_b d||^2 <= d' (H P H + K / b) d in the metric's norms."""

    def __init__(self, theta, intercept: bool, ks: list, weights: list, n_leaves: int, omega, inverse_metric):
        super().__init__(theta, intercept, ks, weights, n_leaves, omega)
        self.inverse_metric = inverse_metric

    def __call__(self, batch, codes, sizes, *forms):
        model, c = self.row_curvatures(batch, codes, forms)
        return model.curvature(c), model.curvature(sizes * c * c * _quadratic_forms(batch.X, self.inverse_metric,
                                                                                      self.intercept))

    def row_curvatures(self, batch, codes, forms):
        """(the chunk's design, c): the coefficient c_i of every row in the Hessian sum_i c_i z_i z_i'."""
        model = LinearModelLoss(Squared, batch.X, None, self.intercept, np.ones(batch.X.shape[0]),
                                drop_zero_weights=False)
        z = model.scores(self.theta)
        c = np.zeros(z.shape)
        for ks, A, form in zip(self.ks, self.weights, forms):
            c += form.jet(z)[2] * (self.omega[ks] @ A)[codes]
        return model, c


class CurvatureDiagonal(CurvatureMoments):
    """One chunk's part of the diagonal of the Hessian H of :class:`CurvatureMoments` (sum_i c_i z_i * z_i
    entrywise): O(nnz) without a D x D matrix."""

    def __init__(self, theta, intercept: bool, ks: list, weights: list, n_leaves: int, omega):
        super().__init__(theta, intercept, ks, weights, n_leaves, omega, None)

    def __call__(self, batch, codes, *forms):
        c = self.row_curvatures(batch, codes, forms)[1]
        diagonal = np.asarray(_squares(batch.X).T @ c).ravel()
        return np.append(diagonal, c.sum()) if self.intercept else diagonal


class RowCurvature(CurvatureMoments):
    """The largest n_i c_i^2 (z_i' P z_i)^2 over a chunk's rows (P the diagonal of ``inverse_metric``, a vector): the
    row's own term of K's quadratic form along its direction P^{1/2} z_i (unit) in the metric's coordinates, at most
    that form, so that its largest over the rows bounds the top eigenvalue of K from below with O(nnz) work and no
    D x D matrix."""

    def __call__(self, batch, codes, sizes, *forms):
        c = self.row_curvatures(batch, codes, forms)[1]
        P, d = self.inverse_metric, batch.X.shape[1]
        q = np.asarray(_squares(batch.X) @ P[:d]).ravel() + (P[d] if self.intercept else 0.0)
        return float(np.max(sizes * (c * q) ** 2)) if c.size else 0.0


def _squares(X):
    """X * X entrywise (dense or scipy.sparse)."""
    return X.multiply(X) if sparse.issparse(X) else X * X


QUADRATIC_ROWS = 4096    # rows of X P formed at once by _quadratic_forms (a dense block even for a sparse X)


def _quadratic_forms(X, P, intercept: bool) -> np.ndarray:
    """z_i' P z_i for the rows z_i = (x_i, 1) (with an intercept) or x_i of X (dense or scipy.sparse), by blocks of
    QUADRATIC_ROWS rows."""
    d = X.shape[1]
    q = np.empty(X.shape[0])
    for start in range(0, X.shape[0], QUADRATIC_ROWS):
        block = X[start:start + QUADRATIC_ROWS]
        XP = np.asarray(block @ P[:d, :d])
        q[start:start + QUADRATIC_ROWS] = np.asarray(block.multiply(XP).sum(axis=1)).ravel() \
            if sparse.issparse(block) else np.einsum("ij,ij->i", block, XP)
    if intercept:
        q += 2.0 * np.asarray(X @ P[:d, d]).ravel() + P[d, d]
    return q
