"""Compiled evaluators of the sample leaves of the generic lowering: the per-sample expression of a linear score
as a few vectorized operations on the rows, instead of a walk over the expression tree at every step.

A per-sample expression built from one linear score z_i = x_i . w + b by losses, sums, scalar multiples and
products with fixed data vectors (the covariance of Zafar et al. 2017, the sample weights of an aggregate) is

    e_i(w) = c_i + sum_t a_{t,i} f_t(z_i, y_i),

f_t either the score itself or a pointwise loss kernel of :mod:`fairmodel.oracles.losses` (the same kernel the
loss atom evaluates: the formulas are the tree walk's, term by term). Its value and its derivative in the score on
any rows then cost one product of the rows with w, a few elementwise operations and, for the gradient of a
weighted sum of such expressions, one product of the rows' transpose with the summed coefficients (the chain rule
through the score, as in :class:`fairmodel.oracles.losses.LinearModelLoss`). Expressions outside this form (a
hinge inside a ``pos``, a matrix of weights, two data sets) are not compiled: :func:`compile_leaves` returns None
and the oracle walks the tree.

The same compiled expressions are the model-space method's per-sample functions (:mod:`.model_space`): with
every kernel twice differentiable, :meth:`PerSample.jet` adds the curvature d^2 e / dz^2, and a chunk of rows takes
its part of the data vectors by :meth:`PerSample.row_slice` (a pass over chunked data ships only that part).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scipy import sparse

from ..expressions import Add, Constant, LinearScore, Loss, Multiply, Parameter, ScalarMul
from ..oracles.losses import LinearModelLoss, Squared


class NotCompiled(Exception):
    """The per-sample expression is not a sum of data-weighted functions of one linear score."""


@dataclass
class Term:
    """a_i f(z_i, y_i): ``kernel`` None for the score itself (f = z)."""

    coef: float | np.ndarray
    kernel: object = None
    y: np.ndarray | None = None


@dataclass
class PerSample:
    """e_i = const_i + sum_t a_{t,i} f_t(z_i, y_i) of the one linear score z."""

    terms: list
    const: float | np.ndarray = 0.0

    def take(self, rows) -> "PerSample":
        """The expression restricted to ``rows`` (any shape of indices): its data vectors gathered once."""
        def at(v):
            return v[rows] if isinstance(v, np.ndarray) else v
        return PerSample([Term(at(t.coef), t.kernel, None if t.y is None else t.y[rows]) for t in self.terms],
                         at(self.const))

    def substituted(self, kernel_map) -> "PerSample":
        """The expression with every kernel k replaced by ``kernel_map(k)`` (e.g. a smoothed hinge)."""
        return PerSample([Term(t.coef, None if t.kernel is None else kernel_map(t.kernel), t.y) for t in self.terms],
                         self.const)

    def row_slice(self, start: int, stop: int) -> "PerSample":
        """The expression on the rows [start, stop) (views of the data vectors): a chunk's part in a pass."""
        return self.take(slice(start, stop))

    @property
    def smooth(self) -> bool:
        """Every kernel has a second derivative (the model-space method's condition)."""
        return all(t.kernel is None or t.kernel.d2phi is not None for t in self.terms)

    def jet(self, z):
        """(e, de/dz, d^2e/dz^2) at the scores z of the rows the data vectors hold (every kernel has ``d2phi``)."""
        value, slope, curvature = np.zeros_like(z), np.zeros_like(z), np.zeros_like(z)
        for t in self.terms:
            if t.kernel is None:
                value += t.coef * z
                slope += t.coef
                continue
            value += t.coef * t.kernel.phi(z, t.y)
            slope += t.coef * t.kernel.dphi(z, t.y)
            curvature += t.coef * t.kernel.d2phi(z, t.y)
        return value + self.const, slope, curvature

    def value_and_slope(self, z, rows=None):
        """(e, de/dz) on the rows whose scores are z. ``rows`` indexes the data vectors (row indices, or the
        index of a minibatch in a :meth:`take` of several; None: the vectors as they are)."""
        def at(v):
            return v[rows] if isinstance(v, np.ndarray) and rows is not None else v

        def plus(total, part):          # total + part, skipping the additions and products of a plain sum
            return part if total is None else total + part
        value, slope = None, None
        for t in self.terms:
            a = at(t.coef)
            if t.kernel is None:
                f, df = z, 1.0
            else:
                y = at(t.y)
                f, df = t.kernel.phi(z, y), t.kernel.dphi(z, y)
            one = not isinstance(a, np.ndarray) and a == 1.0
            value, slope = plus(value, f if one else a * f), plus(slope, df if one else a * df)
        const = at(self.const)
        if isinstance(const, np.ndarray) or const != 0.0:
            value = value + const
        return value, slope       # value has the shape of z; slope may be a number (an affine expression)


def _scaled(form: tuple, c) -> tuple:
    score, ps = form
    return score, PerSample([Term(t.coef * c, t.kernel, t.y) for t in ps.terms], ps.const * c)


def _compile(e, w) -> tuple:
    """(the LinearScore node, PerSample) of the per-sample expression ``e`` of the weights ``w``."""
    if isinstance(e, LinearScore):
        if e.w is not w or w.n_outputs is not None:
            raise NotCompiled(f"the score {e} is not a linear score of the vector of weights {w.name}")
        return e, PerSample([Term(1.0)])
    if isinstance(e, Loss):
        if not isinstance(e.score, LinearScore):
            raise NotCompiled(f"the loss {e} is not of the linear score itself")
        score, _ = _compile(e.score, w)
        return score, PerSample([Term(1.0, e.kernel, e.y)])
    if isinstance(e, ScalarMul):
        return _scaled(_compile(e.expr, w), e.c)
    if isinstance(e, Multiply) and e.kind == "samples":
        return _scaled(_compile(e.expr, w), e.a)
    if isinstance(e, Add):
        score, terms, const = None, [], 0.0
        for a in e.args:
            if isinstance(a, (Constant, Parameter)) and not a.variables():
                value = a.constant_value()      # a number, or one value per row
                const = const + (float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=float))
                continue
            s, ps = _compile(a, w)
            if score is not None and (s.data is not score.data or s.w is not score.w):
                raise NotCompiled("a per-sample term combines the scores of two data sets")
            score, terms, const = (s if score is None else score), terms + ps.terms, const + ps.const
        if score is None:
            raise NotCompiled(f"{e} has no linear score")
        return score, PerSample(terms, const)
    raise NotCompiled(f"{type(e).__name__} ({e}) is not a sum of multiples of a linear score and of losses of it")


def compile_expression(e, w) -> tuple:
    """(the LinearScore node, :class:`PerSample`) of the per-sample expression ``e`` of the weights ``w``; raises
    :class:`NotCompiled` saying which part is not a sum of data-weighted functions of one linear score."""
    return _compile(e, w)


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
        compiled = [_compile(e, w) for e in exprs]
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
    chunk's rows, ``codes`` their cell codes, ``forms`` the expressions' :class:`PerSample` parts for the chunk."""

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
        model = LinearModelLoss(Squared, batch.X, None, self.intercept, np.ones(batch.X.shape[0]),
                                drop_zero_weights=False)
        z = model.scores(self.theta)
        c = np.zeros(z.shape)
        for ks, A, form in zip(self.ks, self.weights, forms):
            c += form.jet(z)[2] * (self.omega[ks] @ A)[codes]
        return model.curvature(c), model.curvature(sizes * c * c * _quadratic_forms(batch.X, self.inverse_metric,
                                                                                      self.intercept))


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
