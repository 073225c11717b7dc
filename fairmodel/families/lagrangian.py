"""The oracle of the generic stochastic lowering: the Lagrangian saddle form of a convex declaration
(:mod:`fairmodel.families.piecewise`) with minibatch estimates derived from the expression tree.

Phi(w, y) = a(w) + sum_t <p_t, v_t(w)> + bound * <mu, (C(w), 0)>, every v and C affine in the leaves. The leaf
weights omega(y) = a + sum_b M_b' y_b give grad_w Phi = sum_k omega_k grad leaf_k.

Sampling. The row sets of the sample leaves (all rows, a group, a group within a mask, ...) cut the rows into
*cells* (rows that belong to the same sets). A minibatch takes ``batch_size`` rows from every cell, uniformly
with replacement; a leaf over S is estimated by sum_{cells c in S} (n_c / |S|) (mean of its rows in c), which is
unbiased. For group risks the cells are the groups: the per-group sampling of ALEG (eq. (20) of Yu et al.).

Coordinates. The method and the certificate's inner minimum run in the preconditioned coordinates of
:func:`design_coordinates` (theta = M u, :mod:`fairmodel.oracles.metric`): every point, gradient and step of the
oracle's protocol is in u; the judge's values are in theta.
"""
from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from ..exact import budget, solvers
from ..exact.lower import LoweringContext, lower
from ..exact.newton import minimize_on_ball_first_order
from ..expressions.evaluate import Env
from ..expressions.variables import LinearScore
from ..oracles.domains import frank_wolfe_gap
from ..oracles.metric import Coordinates, second_moment
from ..oracles.smoothing import STEPS as SMOOTHING
from ..oracles.smoothing import minorant, smoothable, smoothed
from ..data.dask_sampler import DEFAULT_BUFFER_BYTES
from ..data.passes import CHUNKED_EPOCH_STEPS, epoch_steps, row_parts, row_sums
from ..errors import DataError, SolverError
from ..stochastic.primal_dual import BLOCK_STEPS, MIN_INNER
from .leaf_kernels import Cells, CurvatureDiagonal, CurvatureMoments, LeafSums, RowCurvature, compile_leaves
from .piecewise import DeterministicLeaf, SaddleForm, SampleLeaf

# rows per inner step when the batch size is not given: batch_size = max(4, ceil(32 / cells)) per cell. Measured
# on Law School (one cell, the covariance constraint of Zafar et al.): 4 rows per step left an objective gap of
# 5e-3 after 20 epochs, 32 rows reached the exact optimum (1e-6) in the same number of epochs
ROWS_PER_STEP = 32
DECIDED_SHARE = 0.25     # a failing checkpoint's inner minimum stops at a Frank-Wolfe gap of this share of its gap
GATHER_BYTES = 8 << 20   # the features of the minibatches of a block are gathered in chunks of at most this size
# the length, relative to max(1, ||w||), of the chords on which the w-step is measured when a sample term has a kink
# (the hinge): a difference quotient over a chord of 1e-4 x ||w|| divides a kink's jump in slope by that chord
# wherever a row's score sits at the kink (the hinge's margin 1 has many such rows near the optimum), and the step
# it gives collapses; over a chord of 1e-2 or 0.1 it measures the slope's change across the scale on which the step
# moves w. Measured on group DRO (hinge) under an equal-opportunity bound on 6,000 Adult rows by race, seeds 0-7, one
# thread: with chords of 1e-4, 6 of 8 ok (7 of 8 on a machine with other BLAS kernels; the others stopped at up to
# 16.5x their gap tolerance); with 0.1, 8 of 8 on both. Not a better step for every non-smooth problem: on 30
# held-out hinge declarations (seeds 0-2, 2026-12-02) 66 / 90 runs were ok with either chord, none falsely; this one
# certified bounded group loss on Law School (3 / 3 against 1 / 3) and group DRO under equal opportunity with a 90 / 10
# class balance (3 / 3 against 2 / 3), and lost bounded group loss over five groups (0 / 3 against 1 / 3, every run
# stalled at 3.4x its gap tolerance with a step 10x larger) and group DRO under equal opportunity over ten groups
# (0 / 3 against 1 / 3). What it removes is the step's dependence on whether a row sits exactly at its kink. On the
# same 90 runs a chord of 1e-2 was ok in 72 (both five-group cases 5 / 6, the ten-group case 0 / 3), none falsely,
# 8 / 8 on the Adult case above at 2-3x its epochs, and 39 / 39 on the non-smooth benchmark's runs as 0.1 (in 10 %
# more time); 1e-3 was ok in 0 / 8 on the Adult case. Adopted: 1e-2. Not derived: the chord a step for a kink
# should take (tied to the tolerance, as a smoothing would be) is still an open question
KINK_CHORD = 1e-2


def leaf_weights(form: SaddleForm) -> np.ndarray:
    """c_k of every leaf of the saddle form: its coefficient in the affine part plus the largest (in absolute value)
    it has in a piece of a max or a constraint."""
    weight = np.zeros(len(form.leaves))
    for k, v in form.affine.coef.items():
        weight[k] += abs(v)
    for piece in [p for term in form.objective_terms for p in term] + list(form.constraint_pieces):
        for k, v in piece.coef.items():
            weight[k] = max(weight[k], abs(v))
    return weight


def design_moment(form: SaddleForm, w) -> np.ndarray | None:
    """The matrix of the preconditioned coordinates of the generic lowering (:mod:`fairmodel.oracles.metric`)
    for the weights w (None: no data term and no quadratic, plain Euclidean coordinates).

    P = S + sum_k c_k H_k: S the second moment (1/n) sum_i z_i z_i' of the rows z = (x, 1) (with an intercept) of
    every linear score of w in a sample leaf (averaged over the data sets; computed on at most metric.METRIC_ROWS rows
    drawn with a fixed seed), H_k the Hessian of a smooth exact leaf (a sum of squares, an AUC pair risk) and c_k
    the largest coefficient it has in the saddle form (:func:`leaf_weights`). For a loss of a linear score the Hessian of the mean is
    (1/n) sum_i l''_i z_i z_i', so P has its shape up to the curvature of the loss: features of any scale and
    nearly collinear columns no longer slow the steps down. Beyond budget.DENSE_PARAMETERS parameters P is the vector of the
    diagonal of that matrix (S's diagonal by one pass over all rows), a Jacobi preconditioner in O(D) memory, plus
    c_k times the diagonal of the Hessian at w = 0 of every sample leaf (:func:`_sample_curvature`, the same pass):
    there the AUC atoms' pair risks are sample leaves (means of h^2 over their sets,
    :func:`~fairmodel.families.piecewise._auc_blocks_by_samples`) instead of exact quadratics, and a set of a few
    percent of the rows (Adult's women with a positive label) curves its features tens of times more than S says.
    Measured on 3,000 Adult rows with all pairwise interactions under an AUC gap: the default steps' curvature in u
    fell from 2,145 to 40 and the coupling of w and the multipliers from 50 to 4.7."""
    weight = leaf_weights(form)
    rows = w.shape[0]
    full = rows <= budget.DENSE_PARAMETERS
    moments, P = {}, np.zeros((rows, rows) if full else rows)
    for k, leaf in enumerate(form.leaves):
        if isinstance(leaf, SampleLeaf):
            for node in leaf.expr.nodes():
                if isinstance(node, LinearScore) and node.w is w and id(node.data) not in moments:
                    moments[id(node.data)] = second_moment(node.data, w.intercept, full)
        elif (H := leaf.hessian() if full else leaf.hessian_diagonal()) is not None and H.shape[0] == rows:
            P += weight[k] * H
    if moments:
        P += sum(moments.values()) / len(moments)
    if not full:
        P += _sample_curvature(form, w, weight)
    return P if np.any(P) else None


def _sample_curvature(form: SaddleForm, w, weight) -> np.ndarray | float:
    """The diagonal of the Hessian at w = 0 of sum_k weight_k leaf_k over the sample leaves (one pass), where every
    per-sample expression is compiled and twice differentiable (else 0: the second moment alone)."""
    by_expr = _by_expression(form.leaves)
    kernels = compile_leaves([e for e, _ in by_expr.values()], w)
    if kernels is None or not all(f.twice_differentiable for f in kernels.forms):
        return 0.0
    ks = [ks for _, ks in by_expr.values()]
    cells = Cells(form.leaves, ks, kernels.data.n_samples)
    kernel = CurvatureDiagonal(np.zeros(w.shape), w.intercept, ks, cells.weights, len(form.leaves), weight)
    return row_sums(kernels.data, kernel, cells.codes, *kernels.forms)


def _by_expression(leaves) -> dict:
    """The sample leaves by their per-sample expression: {id: (expression, [leaf indices])}, in leaf order."""
    out = {}
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, SampleLeaf):
            out.setdefault(id(leaf.expr), (leaf.expr, []))[1].append(k)
    return out


@dataclass
class Snapshot:
    w: np.ndarray
    ys: list
    leaves: np.ndarray        # exact leaf values at w
    omega: np.ndarray         # leaf weights of ys
    grad: np.ndarray          # grad_w Phi(w, ys), exact
    sample_grad: np.ndarray   # its part from the sample leaves
    values: list              # v_b(w) per block
    objective: float          # max_y Phi(w, y)


@dataclass
class PreparedStep:
    """One inner step's minibatch: its feature rows, its compiled expressions, and the snapshot's side of the
    estimate on it (the block values with the snapshot's minibatch estimates taken out, the coefficients of the
    snapshot's minibatch gradient X' c)."""

    rows: np.ndarray
    X: np.ndarray
    forms: list
    index: int
    base: np.ndarray
    snap_coef: np.ndarray


class PreparedBlock:
    """The steps of a block of minibatches (:meth:`LagrangianOracle.prepare`), gathered and evaluated at the
    snapshot in chunks of at most GATHER_BYTES of features as the steps reach them."""

    def __init__(self, oracle, batches, snap):
        self.oracle, self.batches, self.snap = oracle, batches, snap
        self.chunk = max(1, int(oracle.gather_bytes // max(1.0, batches.shape[1] * oracle.kernels.row_bytes())))
        self.start = None

    def __len__(self):
        return self.batches.shape[0]

    def _load(self, start):
        o, snap, rows = self.oracle, self.snap, self.batches[start:start + self.chunk]
        k = o.kernels
        self.start, self.X, self.forms = start, k.gather(rows), [f.take(rows) for f in k.forms]
        z = k.scores(o.coords.to_theta(snap.w), self.X)
        self.base = np.tile(o.M_all @ snap.leaves + o.c_all - o.M_all[:, o.exact] @ snap.leaves[o.exact],
                            (rows.shape[0], 1))
        self.coef = np.zeros(rows.shape)
        for f, (ks, V, _) in zip(self.forms, o.fused):
            e, slope = f.value_and_slope(z)
            self.base -= e @ V.T
            self.coef += (snap.omega[ks] @ o.W_batch[ks]) * slope

    def __getitem__(self, k) -> PreparedStep:
        if self.start is None or not self.start <= k < self.start + self.chunk:
            self._load(k - k % self.chunk)
        j = k - self.start
        return PreparedStep(self.batches[k], self.X[j], self.forms, j, self.base[j], self.coef[j])


def _rounded(v, digits: int = 9) -> np.ndarray:
    """``v`` relative to its largest magnitude, rounded: entries equal up to summation order compare equal."""
    v = np.asarray(v, dtype=float)
    return np.round(v / max(float(np.max(np.abs(v))), 1e-300), digits) if v.size else v


def _largest(v) -> int:
    """The index of the largest entry; entries equal up to rounding: the first (so that summation order, e.g. of
    a pass over chunks, never changes the choice)."""
    return int(np.argmax(_rounded(v)))


def _descending(v) -> np.ndarray:
    """The indices from the largest entry down; entries equal up to rounding in index order."""
    return np.lexsort((np.arange(np.size(v)), -_rounded(v)))


class LagrangianOracle:
    """The protocol of :func:`fairmodel.stochastic.primal_dual.primal_dual` for a :class:`SaddleForm`."""

    def __init__(self, form: SaddleForm, w, bound: float, batch_size: int | None = None,
                 coordinates: Coordinates | None = None, compiled: bool = True):
        self.form, self.w, self.bound = form, w, float(bound)
        self.coords = coordinates.fresh() if coordinates is not None else Coordinates(None, w.radius)
        self.shape = w.shape
        L = len(form.leaves)
        self.a0 = np.zeros(L)
        for k, v in form.affine.coef.items():
            self.a0[k] += v
        self.c0 = form.affine.const
        self.M, self.c = [], []
        for term in form.objective_terms:
            self._block(term, 1.0)
        if form.constraint_pieces:
            self._block(form.constraint_pieces + [None], self.bound)      # the slack piece 0
        self.blocks = [m.shape[0] for m in self.M]
        self.sample = [k for k, leaf in enumerate(form.leaves) if isinstance(leaf, SampleLeaf)]
        self.exact = [k for k, leaf in enumerate(form.leaves) if isinstance(leaf, DeterministicLeaf)]
        self.rough = [k for k in self.exact if form.leaves[k].lipschitz is not None]     # non-smooth exact terms
        self.kinked = not all(form.leaves[k].expr.is_smooth() for k in self.sample)     # a sample term with a kink
        self.smooth = not self.rough and not self.kinked
        self._cells()
        # the sample leaves' per-sample expressions as vectorized evaluators (None: walk the tree at every step)
        self.kernels = compile_leaves([e for e, _ in self.by_expr.values()], w) if compiled else None
        C = self.cell_size.size
        self.b = max(4, -(-self._rows_per_step() // max(C, 1))) if batch_size is None else int(batch_size)
        self.batch_cells = np.repeat(np.arange(C), self.b)
        self.W_batch = self.W_cell[:, self.batch_cells] / self.b
        self.rows_per_step = C * self.b
        if self.kernels is not None:
            self._fuse()
            self.cells = Cells(form.leaves, [ks for _, ks in self.by_expr.values()], self.n_samples)
        # chunked data: a gather reads every chunk holding a drawn row (about a pass), so an epoch's minibatches are
        # drawn at once and gathered in buffers of the chunk sampler's size
        chunked = next((node.data for e, _ in self.by_expr.values() for node in e.nodes()
                        if isinstance(node, LinearScore) and node.data.is_chunked), None)
        if chunked is not None and self.kernels is None:
            raise DataError("the generic stochastic method on chunked (Dask-backed) data needs every per-sample "
                            "expression to be a sum of data-weighted losses of one linear score (it gathers the "
                            "rows of an epoch's minibatches at once); this declaration is not: solve it on an "
                            "in-memory sample (data.subsample(n, seed=0)), or with the exact model-space method")
        self.block_steps = BLOCK_STEPS if chunked is None else CHUNKED_EPOCH_STEPS
        self.epoch_steps = None if chunked is None else \
            epoch_steps(chunked, max(MIN_INNER, -(-self.n_samples // max(self.rows_per_step, 1))))
        self.gather_bytes = GATHER_BYTES if chunked is None else DEFAULT_BUFFER_BYTES

    def _rows_per_step(self) -> int:
        """Rows per inner step when the batch size is not given: ROWS_PER_STEP, or more with many parameters. A step
        costs O(D) for the iterate (anchors, projection, coordinates: a few dozen vector operations) plus O(rows x
        nonzeros per row) for its rows; with D / (nonzeros per row) rows the two are alike (a sparse design with
        D = 1e5 and 20 nonzeros a row: 5,000 rows), capped so that an epoch keeps MIN_INNER steps of its pass."""
        if self.kernels is None:
            return ROWS_PER_STEP
        balance = self.shape[0] / max(self.kernels.nonzeros_per_row(), 1.0)
        return int(min(max(ROWS_PER_STEP, math.ceil(balance)), max(ROWS_PER_STEP, self.n_samples // MIN_INNER)))

    def _block(self, pieces, scale):
        M = np.zeros((len(pieces), len(self.form.leaves)))
        c = np.zeros(len(pieces))
        for j, p in enumerate(pieces):
            if p is None:
                continue
            for k, v in p.coef.items():
                M[j, k] += scale * v
            c[j] = scale * p.const
        self.M.append(M)
        self.c.append(c)

    # -- rows and cells ----------------------------------------------------------------------------------
    def _cells(self):
        leaves = self.form.leaves
        n = next((leaf.expr.size for leaf in leaves if isinstance(leaf, SampleLeaf)), 0)
        self.n_samples = max(n, 1)
        masks = []
        for k in self.sample:
            if leaves[k].rows is not None and not any(np.array_equal(leaves[k].rows, m) for m in masks):
                masks.append(leaves[k].rows)
        if masks:
            bits = np.stack(masks).astype(np.int64)
            key = (bits * (1 << np.arange(len(masks)))[:, None].astype(np.int64)).sum(axis=0) \
                if len(masks) < 62 else np.unique(bits.T, axis=0, return_inverse=True)[1]
            _, first, cell = np.unique(key, return_index=True, return_inverse=True)
        else:
            first, cell = np.zeros(min(n, 1), dtype=np.intp), np.zeros(n, dtype=np.intp)
        C = first.size
        # the cell of every row in the smallest integer type (1 byte below 256 cells: the judge's certificate builds
        # this oracle on every row of chunked data too)
        self.cell_of_row = cell.astype(np.min_scalar_type(max(C - 1, 0)))
        self.cell_size = np.bincount(self.cell_of_row, minlength=C).astype(float)
        self.W_cell = np.zeros((len(leaves), C))         # leaf k over S: n_c / |S| for the cells c in S
        for k in self.sample:
            leaf = leaves[k]
            inside = np.ones(C, dtype=bool) if leaf.rows is None else np.asarray(leaf.rows[first], dtype=bool)
            self.W_cell[k, inside] = self.cell_size[inside] / leaf.count
        self.by_expr = _by_expression(leaves)

    @functools.cached_property
    def cell_rows(self) -> list:
        """The rows of every cell (what the minibatches are drawn from; made on first use, not for a certificate)."""
        return [np.flatnonzero(self.cell_of_row == c) for c in range(self.cell_size.size)]

    def draw(self, rng, n_steps: int) -> np.ndarray:
        """Rows of ``n_steps`` minibatches: ``batch_size`` per cell, uniform within the cell, with replacement."""
        cols = [rows[rng.integers(0, rows.size, size=(n_steps, self.b))] for rows in self.cell_rows]
        return np.concatenate(cols, axis=1) if cols else np.zeros((n_steps, 0), dtype=np.intp)

    def project(self, u):
        """The projection onto the domain (the ball ||theta|| <= radius) in the coordinates u."""
        return self.coords.project(u)

    def to_theta(self, u):
        return self.coords.to_theta(u)

    def to_u(self, theta):
        return self.coords.to_u(np.asarray(theta, dtype=float))

    # -- values and gradients ------------------------------------------------------------------------------
    def omega(self, ys) -> np.ndarray:
        out = self.a0.copy()
        for M, y in zip(self.M, ys):
            out += M.T @ y
        return out

    def _exact(self, u, omega):
        values, grad = self._exact_theta(self.coords.to_theta(u), omega)
        return values, self.coords.gradient_to_u(grad)

    def _sample_pass(self, u, omega, rows=None, weights=None):
        """Sample-leaf values and the gradient (in u) of sum_k omega_k leaf_k: on all rows or on minibatch rows."""
        values, grad = self._sample_pass_theta(self.coords.to_theta(u), omega, rows, weights)
        return values, self.coords.gradient_to_u(grad)

    def _exact_theta(self, theta, omega):
        values, grad = np.zeros(len(self.form.leaves)), np.zeros(self.shape)
        for k in self.exact:
            v, g = self.form.leaves[k].value_grad(theta)
            values[k] = v
            grad += omega[k] * g
        return values, grad

    def _sample_pass_theta(self, theta, omega, rows=None, weights=None):
        """Sample-leaf values and grad of sum_k omega_k leaf_k: on all rows (exact) or on minibatch ``rows``."""
        if self.kernels is not None:
            return self._compiled_pass(theta, omega, rows, weights)
        values, grad = np.zeros(len(self.form.leaves)), np.zeros(self.shape)
        for expr, ks in self.by_expr.values():
            env = Env({self.w: theta}, rows)
            e = np.asarray(expr.numeric(env), dtype=float)
            if rows is None:
                means = np.bincount(self.cell_of_row, weights=e, minlength=self.cell_size.size) / self.cell_size
                values[ks] = self.W_cell[ks] @ means
                upstream = (omega[ks] @ self.W_cell[ks])[self.cell_of_row] / self.cell_size[self.cell_of_row]
            else:
                values[ks] = weights[ks] @ e
                upstream = omega[ks] @ weights[ks]
            grads: dict = {}
            expr.backprop(env, upstream, grads)
            grad += grads.get(self.w, 0.0)
        return values, grad

    def _row_weights(self, omega, ks, rows):
        """The weight of every row in sum_{k in ks} omega_k leaf_k: per cell (all rows) or per minibatch slot."""
        if rows is None:
            return (omega[ks] @ self.W_cell[ks])[self.cell_of_row] / self.cell_size[self.cell_of_row]
        return omega[ks] @ self.W_batch[ks]

    def _compiled_terms(self, z, omega, rows, weights=None, values=None):
        """The compiled expressions at the scores z of ``rows`` (None: all rows): the sample-leaf values (into
        ``values``, estimated with the slot ``weights`` on a minibatch) and the coefficients c of the gradient
        X' c of sum_k omega_k leaf_k. ``z`` and ``rows`` may hold several minibatches (one per row of a matrix)."""
        coef = np.zeros(z.shape)
        for form, (_, ks) in zip(self.kernels.forms, self.by_expr.values()):
            e, slope = form.value_and_slope(z, rows)
            if values is not None:
                if rows is None:
                    means = np.bincount(self.cell_of_row, weights=e, minlength=self.cell_size.size) / self.cell_size
                    values[..., ks] = self.W_cell[ks] @ means
                else:
                    values[..., ks] = e @ weights[ks].T
            coef += self._row_weights(omega, ks, rows) * slope
        return coef

    def _compiled_pass(self, theta, omega, rows=None, weights=None):
        """:meth:`_sample_pass_theta` by the compiled evaluators: one product with the rows and one with their
        transpose for all the sample leaves (on all rows: one pass over the data source, a chunk at a time)."""
        if rows is None:
            values, grads = self._leaf_sums(theta)
            return values, omega @ grads
        values = np.zeros(len(self.form.leaves))
        X = None if rows is None else self.kernels.gather(rows)
        coef = self._compiled_terms(self.kernels.scores(theta, X), omega, rows, weights, values)
        return values, self.kernels.pullback(coef, X)

    def _leaf_sums(self, theta):
        """(values (L,), gradients (L, D)) of the compiled sample leaves on all rows: one pass over the data source."""
        kernel = LeafSums(theta, self.w.intercept, [ks for _, ks in self.by_expr.values()], self.cells.weights,
                          len(self.form.leaves))
        return row_sums(self.kernels.data, kernel, self.cells.codes, *self.kernels.forms)

    def prepare(self, batches, snap: Snapshot):
        """The minibatches of a block of inner steps (``draw``) made ready for :meth:`estimate` at the snapshot
        ``snap``: their feature rows gathered, and the snapshot's side of the variance-reduced estimate (its leaf
        estimates and gradient coefficients on every minibatch) computed for the whole block at once, since the
        snapshot does not change within an epoch. Without compiled evaluators: the minibatches as they are."""
        if self.kernels is None:
            return batches
        return PreparedBlock(self, np.asarray(batches), snap)

    def _block_values(self, leaves) -> list:
        return [M @ leaves + c for M, c in zip(self.M, self.c)]

    def snapshot(self, w, ys) -> Snapshot:
        omega = self.omega(ys)
        s_values, s_grad = self._sample_pass(w, omega)
        e_values, e_grad = self._exact(w, omega)
        leaves = s_values + e_values
        values = self._block_values(leaves)
        return Snapshot(w, ys, leaves, omega, s_grad + e_grad, s_grad, values, self.penalized(leaves, values))

    def objective_scale(self, leaves) -> float:
        """The natural scale of the objective at these leaf values: sum_k |a_k leaf_k| plus, for every max term,
        the largest sum_k |M_jk leaf_k| over its pieces (constants left out: a shift of the objective does not
        change how accurately it is minimized)."""
        absolute = np.abs(leaves)
        terms = [float(np.max(np.abs(M) @ absolute)) for M in self.M[:len(self.form.objective_terms)]]
        return float(np.abs(self.a0) @ absolute) + sum(terms)

    def penalized(self, leaves, values) -> float:
        """max_y Phi(w, y) = objective(w) + bound * max(0, max_j C_j(w))."""
        return float(self.a0 @ leaves + self.c0 + sum(float(np.max(v)) for v in values))

    def estimate(self, rows, w, ys, snap: Snapshot):
        """The variance-reduced (grad_u Phi, [v_b]) at (w, ys) on the minibatch ``rows`` (row indices, or a step of
        :meth:`prepare`'s block)."""
        if self.kernels is not None:
            return self._compiled_estimate(rows if isinstance(rows, PreparedStep)
                                           else self.prepare(np.asarray(rows)[None], snap)[0], w, ys, snap)
        omega = self.omega(ys)
        h_values, h_grad = self._sample_pass(w, omega, rows, self.W_batch)
        s_values, s_grad = self._sample_pass(snap.w, snap.omega, rows, self.W_batch)
        e_values, e_grad = self._exact(w, omega)
        leaves = snap.leaves.copy()
        leaves[self.sample] += h_values[self.sample] - s_values[self.sample]
        leaves[self.exact] = e_values[self.exact]
        return snap.sample_grad + h_grad - s_grad + e_grad, self._block_values(leaves)

    def _fuse(self):
        """The compiled estimate's matrices. With all blocks stacked (v = M_all leaves + c_all, omega = a0 +
        M_all' y), a sample leaf's minibatch estimate W_k . e, and its expression's rows' weights in the gradient
        omega_ks' W_ks: per compiled expression f with leaves ks, V_f = M_all[:, ks] W_ks (the block values per
        unit of e_i) and r_f = a0[ks]' W_ks, so that one step costs v = base + sum_f V_f e_f and
        c = sum_f (r_f + V_f' y) * de_f/dz, without a loop over leaves or blocks."""
        self.M_all = np.vstack(self.M) if self.M else np.zeros((0, len(self.form.leaves)))
        self.c_all = np.concatenate(self.c) if self.c else np.zeros(0)
        self.offsets = np.cumsum([0] + self.blocks)
        self.fused = []
        for _, ks in self.by_expr.values():
            W = self.W_batch[ks]
            self.fused.append((ks, self.M_all[:, ks] @ W, self.a0[ks] @ W))

    def _compiled_estimate(self, step, w, ys, snap):
        theta = self.coords.to_theta(w)
        y = np.concatenate(ys) if len(ys) > 1 else ys[0] if ys else np.zeros(0)
        z = self.kernels.scores(theta, step.X)
        v, coef = step.base.copy(), -step.snap_coef
        for f, (_, V, r) in zip(step.forms, self.fused):
            e, slope = f.value_and_slope(z, step.index)
            v += V @ e
            coef = coef + (r + y @ V) * slope
        g = self.kernels.pullback(coef, step.X)
        if self.exact:
            e_values, e_grad = self._exact_theta(theta, self.a0 + self.M_all.T @ y)
            v += self.M_all[:, self.exact] @ e_values[self.exact]
            g = g + e_grad
        grad = snap.sample_grad + self.coords.gradient_to_u(g)
        return grad, [v[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]

    # -- default steps from the data --------------------------------------------------------------------------
    def default_steps(self, w0=None, y0=None, power_iterations: int = 8, probes: int = 32, primal_weight: float = 1.0):
        """(step_w, [step_y]) from the data at w0 (in u), for mirror-prox with variance-reduced minibatch
        estimates; measured again at every restart, so that they follow the constants near the solution.

        step_w = 1 / (2 L_ww): L_ww is the mean-square Lipschitz constant of the minibatch gradient of
        w -> Phi(w, y) (along the top curvature direction found by power iteration on full gradients, or on
        chunked data from the Hessian of one pass, and two random directions; where every kernel is twice
        differentiable and the parameters fit a D x D matrix, at least its value in the worst direction, from one
        pass: the square root of the top eigenvalue of H^2 + K / b, :meth:`_curvature_moments`, since probes of a
        few minibatches miss a rare row: on Adult's one-hot design, where a category of one row stretches the
        metric, the probes gave a step 5x too large and the run oscillated 4e-3 above the optimum; with more
        parameters and a piece curved in w, K's value along every row's own direction, :meth:`_row_curvature`),
        with every
        leaf at the largest weight it has at uniform y, at y0 and at the vertex of each simplex on its largest piece
        at w0 (a multiplier that concentrates on a curved constraint piece raises the curvature by up to the bound:
        measured at uniform y only, the steps of a bounded group loss on Communities were twice too large and the run
        stalled infeasible). Every entropic block b gets
        step_y_b = 1 / (2 (range + max |v_b|)) (at most a factor e^(1/2) between two weights
        per step, in the units of v_b: a constant such as 1 added there would make problems with small losses
        slow, e.g. a squared loss of 0.02), and step_w is the largest with step_w step_y_b L_b^2 <= 1/4 for
        every b, L_b the coupling of w and block b
        (the largest full gradient of a piece, or the mean-square change of its minibatch estimate along that
        gradient if larger); the range is taken at least a hundredth of the objective's natural scale (pieces
        all near 0 at a restart point would make the step unbounded and stall w). Minibatch
        constants matter: the estimates' variance scales with them, not with the curvature of the mean
        (Alacaoglu and Malitsky 2022, Assumption 1).

        With more than budget.DENSE_PARAMETERS parameters (a diagonal metric) the split of the coupling bound is
        the other way round: step_w = 1 / (2 L_ww) and step_y_b the largest with step_w step_y_b L_b^2 <= 1/4 (at
        most the step of its spread). On Adult with all pairwise interactions (d = 2,736) under Zafar et al.'s
        covariance bound, the split above left w a twentieth of its curvature's step and the run ended inaccurate
        at its cap of 400 epochs (Lagrangian gap 1.8x its tolerance, the part of w 2e4 times the part of y at 20
        epochs); with this one the default run is ok in 17 s (a gap of 3.2e-4 after 30 epochs, against 9.4e-3).
        Under an AUC gap the split above drifts from restart to restart: the constraint pieces near 0 take the
        spread's floor, step_y_b grows to 160 and step_w falls to 6e-7, and w stops moving with the Lagrangian gap
        almost all its part (3,000 Adult rows with interactions: 12x its tolerance, the part of w 7.7e-3 against
        4e-7 for y)."""
        rng = np.random.default_rng(0)
        theta = self.project(np.zeros(self.shape) if w0 is None else np.asarray(w0, dtype=float))
        uniform = [np.full(m, 1.0 / m) for m in self.blocks]
        snap = self.snapshot(theta, uniform)
        h = (KINK_CHORD if self.kinked else 1e-4) * max(1.0, float(np.linalg.norm(theta)))
        # the curvature of w -> Phi(w, y) grows with the weights y puts on curved pieces: measured with every leaf
        # at the largest weight it has at uniform y, at y0, and at the vertex of each block that the y-steps
        # move to first (its largest piece at w0), so that a multiplier that concentrates keeps the steps stable
        vertices = [np.eye(m)[_largest(v)] for m, v in zip(self.blocks, snap.values)]
        omega = np.maximum(np.abs(snap.omega), np.abs(self.omega(vertices)))
        if y0 is not None:
            omega = np.maximum(omega, np.abs(self.omega([np.asarray(y, dtype=float) for y in y0])))
        omega[self.rough] = 0.0          # curvature of the smooth part; the norms enter through their Lipschitz bound

        def full_grad(t):
            return self._sample_pass(t, omega)[1] + self._exact(t, omega)[1]
        twice = self.kernels is not None and all(f.twice_differentiable for f in self.kernels.forms)
        worst, moments = 0.0, twice and self.shape[0] <= budget.DENSE_PARAMETERS
        if moments:
            # the minibatch Hessians' mean-square norm in their worst direction, from one pass: sampled probes
            # miss it when it lies along a rare row (a one-hot category of a few rows); it only ever lowers the step
            H_u, K_u = self._curvature_moments(theta, omega)
            worst = float(np.sqrt(max(np.linalg.eigvalsh(H_u @ H_u + K_u)[-1], 0.0)))
        elif twice and not self._affine_coupling():
            worst = self._row_curvature(theta, omega)
        if moments and self.epoch_steps is not None:
            # chunked data (a pass reads every chunk): the top eigenpair of the Hessian of that pass, instead of the
            # power iteration's passes (which estimates the same eigenvalue from below)
            values, vectors = np.linalg.eigh(H_u)
            top = int(np.argmax(np.abs(values)))
            curvature, u = float(abs(values[top])), vectors[:, top].reshape(self.shape)
        else:
            u, curvature, g0 = rng.standard_normal(self.shape), 0.0, full_grad(theta)
            for _ in range(power_iterations):
                u /= np.linalg.norm(u)
                diff = (full_grad(theta + h * u) - g0) / h
                curvature = float(np.linalg.norm(diff))
                u = diff if curvature > 0 else rng.standard_normal(self.shape)
        batches = self.draw(rng, probes)
        directions = [u / max(np.linalg.norm(u), 1e-300)] + [d / np.linalg.norm(d) for d in
                                                            rng.standard_normal((2,) + tuple(self.shape))]
        L_ww = max(curvature, worst)
        base = self._minibatch_passes(theta, omega, batches)[1]
        for d in directions:
            sq = np.sum(((self._minibatch_passes(theta + h * d, omega, batches)[1] - base) / h) ** 2, axis=1)
            exact = float(np.linalg.norm((self._exact(theta + h * d, omega)[1] - self._exact(theta, omega)[1]) / h))
            L_ww = max(L_ww, float(np.sqrt(np.mean(sq))) + exact)
        step_w = 0.5 / L_ww if L_ww > 1e-12 else np.inf
        stretch = self.coords.lipschitz_factor()     # a norm's Lipschitz constant in theta, times this, in u
        spreads, couplings = [], []
        estimates = self._leaf_estimates_many(theta, batches)
        for b, v in enumerate(snap.values):
            spreads.append(float(np.ptp(v)) + float(np.max(np.abs(v))))
            G = self.piece_gradients(theta, b)
            norms = np.linalg.norm(G, axis=1)
            bounds = stretch * np.abs(self.M[b][:, self.rough]) @ np.array(
                [self.form.leaves[k].lipschitz for k in self.rough]) if self.rough else np.zeros(len(norms))
            coupling = float(np.max(norms + bounds))
            # the largest gradients first; norms equal up to rounding (a piece and its negation) by index, so that
            # summation order never changes which pieces are probed
            for j in _descending(norms)[:8]:
                if norms[j] == 0:
                    break
                d = (G[j] / norms[j]).reshape(self.shape)
                changes = (self._leaf_estimates_many(theta + h * d, batches) - estimates) @ self.M[b][j] / h
                coupling = max(coupling, float(np.sqrt(np.mean(np.square(changes)))))
            couplings.append(coupling)
        # every simplex the step of its spread (at least a hundredth of the objective's scale, so that pieces all
        # near 0 at a restart point do not make it unbounded), then w the largest within the coupling bounds
        floor = 1e-2 * self.objective_scale(snap.leaves)
        step_y = [0.5 / max(s, floor) if max(s, floor) > 0 else 0.5 for s in spreads]
        if self.shape[0] > budget.DENSE_PARAMETERS and np.isfinite(step_w):
            # many parameters (a diagonal metric): w keeps the step of its curvature and every simplex takes what
            # the coupling leaves (see the docstring)
            step_y = [min(g, 0.25 / (step_w * c ** 2)) if c > 0 else g for g, c in zip(step_y, couplings)]
        for g, c in zip(step_y, couplings):
            if c > 0:
                step_w = min(step_w, 0.25 / (g * c ** 2))
        step_w = step_w if np.isfinite(step_w) else 0.5 / max(L_ww, 1e-12)
        self.applied_weight = 1.0
        if primal_weight != 1.0 and np.isfinite(step_w):
            # the restarts' primal weight (primal_dual.balanced_weight): w's step times it within w's own cap, every
            # simplex what the coupling bound then leaves within its spread's step
            base, step_w = step_w, min(step_w * primal_weight, 0.5 / L_ww if L_ww > 1e-12 else np.inf)
            step_y = [min(0.5 / max(s, floor) if max(s, floor) > 0 else 0.5, 0.25 / (step_w * c ** 2)) if c > 0
                      else g for s, g, c in zip(spreads, step_y, couplings)]
            self.applied_weight = step_w / base
        # the simplices whose step the coupling bound with w sets (their product with w's step at the bound): the
        # ones a change of the split trades against w
        self.coupled = [bool(c > 0 and step_w * g * c ** 2 >= 0.25 * (1 - 1e-9)) for g, c in zip(step_y, couplings)]
        return step_w, step_y

    def _curvature_moments(self, u, omega) -> tuple[np.ndarray, np.ndarray]:
        """(H_u, K_u) at u, in u: the Hessian of w -> sum_k omega_k leaf_k (the sample leaves' X' D X from one pass,
        plus the exact quadratics; every kernel twice differentiable) and the bound K / b on the second moment of a
        minibatch Hessian's deviation from it (:class:`~fairmodel.families.leaf_kernels.CurvatureMoments`), so
        that the mean-square Lipschitz constant of the minibatch gradient along a unit d is at most
        sqrt(d' (H_u^2 + K_u) d) (Alacaoglu and Malitsky 2022, Assumption 1)."""
        c = self.coords
        theta = c.to_theta(u)
        D = self.shape[0]
        inverse = np.eye(D) if c.identity else np.diag(c.scale ** 2) if c.diagonal else c.M @ c.M.T
        kernel = CurvatureMoments(theta, self.w.intercept, [ks for _, ks in self.by_expr.values()], self.cells.weights,
                                  len(self.form.leaves), omega, inverse)
        H, K = row_sums(self.kernels.data, kernel, self.cells.codes, self.cell_size[self.cell_of_row],
                        *self.kernels.forms)
        for k in self.exact:
            exact = self.form.leaves[k].hessian() if omega[k] != 0 else None
            if exact is not None:
                H = H + omega[k] * exact

        def to_u(A):
            A_u = c.gradient_to_u(c.gradient_to_u(A).T)
            return (A_u + A_u.T) / 2
        return to_u(H), to_u(K) / self.b

    def _affine_coupling(self) -> bool:
        """Whether every piece of every block (each max's pieces, the constraints) is affine in w: sample leaves
        of affine per-sample expressions only (a bilinear coupling, whose curvature in w is the same at every y)."""
        used = np.flatnonzero(np.any(np.vstack(self.M) != 0, axis=0)) if self.M else []
        return all(k in self.sample and self.form.leaves[k].expr.is_affine() for k in used)

    def _row_curvature(self, u, omega) -> float:
        """Without a D x D matrix (a diagonal metric): the largest over the rows of the mean-square Lipschitz
        constant of the minibatch gradient along the row's own direction in u, sqrt(n_i c_i^2 (z_i' P^-1 z_i)^2 / b)
        (:class:`~fairmodel.families.leaf_kernels.RowCurvature`, one pass), a lower bound on the dense path's
        sqrt(top eigenvalue of H^2 + K / b) that catches a row of rare columns. Measured on 3,000 Adult rows with
        all pairwise interactions under an AUC gap: 85 (the dense formula: 86), where the probes gave 43 and the
        run's w-iterates scattered until the constraint pieces were 0.13 to 0.45 at the iterates and 0.01 to 0.03
        at their average, which held the multipliers at the bound (a quarter of the probes' step held; half of it
        scattered again after 30 epochs). Only where a piece is curved in w (:meth:`_affine_coupling`): there
        scattered iterates bias the pieces' average (Jensen); affine pieces average out, and under Zafar et al.'s
        covariance bound the smaller step doubled the time on Adult with interactions (8.9 s to 16.0 s)."""
        c = self.coords
        inverse = np.ones(self.shape[0]) if c.identity else c.scale ** 2
        kernel = RowCurvature(c.to_theta(u), self.w.intercept, [ks for _, ks in self.by_expr.values()],
                              self.cells.weights, len(self.form.leaves), omega, inverse)
        parts = row_parts(self.kernels.data, kernel, self.cells.codes, self.cell_size[self.cell_of_row],
                          *self.kernels.forms)
        return math.sqrt(max(parts, default=0.0) / self.b)

    def _minibatch_passes(self, u, omega, batches):
        """:meth:`_sample_pass` on each of the minibatches ``batches`` (one per row): sample-leaf estimates
        (one row per minibatch) and gradients in u (one row per minibatch), all at once when compiled."""
        if self.kernels is None:
            out = [self._sample_pass(u, omega, r, self.W_batch) for r in batches]
            return np.array([v for v, _ in out]), np.array([g for _, g in out])
        values = np.zeros((len(batches), len(self.form.leaves)))
        X = self.kernels.gather(batches)
        coef = self._compiled_terms(self.kernels.scores(self.coords.to_theta(u), X), omega, batches, self.W_batch,
                                    values)
        return values, self.coords.gradient_to_u(self.kernels.pullback_many(coef, X).T).T

    def _compiled_leaf_gradients(self, u, ks) -> np.ndarray:
        """The gradients in u (one row each) of the sample leaves ``ks`` on all rows: one pass."""
        return self.coords.gradient_to_u(self._leaf_sums(self.coords.to_theta(u))[1][ks].T).T

    def _leaf_estimates_many(self, u, batches) -> np.ndarray:
        """:meth:`_leaf_estimates` on each of the minibatches ``batches`` (one row per minibatch)."""
        zero = np.zeros(len(self.form.leaves))
        return self._minibatch_passes(u, zero, batches)[0] + self._exact(u, zero)[0]

    def _leaf_estimates(self, theta, rows) -> np.ndarray:
        """Minibatch estimates of the sample leaves, exact values of the others."""
        zero = np.zeros(len(self.form.leaves))
        return self._sample_pass(theta, zero, rows, self.W_batch)[0] + self._exact(theta, zero)[0]

    def piece_gradients(self, theta, block: int) -> np.ndarray:
        """The gradients (flattened, one row per piece) of the pieces v_b of a block at theta (full passes)."""
        L = len(self.form.leaves)
        used = np.flatnonzero(np.any(self.M[block] != 0, axis=0))
        jac = np.zeros((L, int(np.prod(self.shape))))
        if self.kernels is not None:         # the sample leaves' gradients in one pass, one column of X' C each
            sample = [k for k in used if k in self.sample]
            jac[sample] = self._compiled_leaf_gradients(theta, sample)
            used = [k for k in used if k not in self.sample]
        for k in used:
            e = np.zeros(L)
            e[k] = 1.0
            jac[k] = np.ravel(self._sample_pass(theta, e)[1] + self._exact(theta, e)[1])
        return self.M[block] @ jac

    # -- the judge's certificate --------------------------------------------------------------------------------
    def phi(self, theta, ys) -> tuple[float, np.ndarray]:
        """(Phi(theta, ys), grad_theta Phi) at theta (not u): one full pass."""
        omega = self.omega(ys)
        s_values, s_grad = self._sample_pass_theta(theta, omega)
        e_values, e_grad = self._exact_theta(theta, omega)
        values = self._block_values(s_values + e_values)
        value = self.a0 @ (s_values + e_values) + self.c0 + sum(float(y @ v) for y, v in zip(ys, values))
        return float(value), s_grad + e_grad

    def with_kernels(self, kernel_map) -> "LagrangianOracle":
        """The same oracle with every loss kernel k of the compiled sample leaves replaced by ``kernel_map(k)``."""
        out = copy.copy(self)
        out.kernels = self.kernels.substituted(kernel_map)
        return out

    @property
    def smoothable(self) -> bool:
        """Whether a non-smooth Phi is smooth but for loss kernels with a smoothing (the hinge): compiled sample
        leaves, no norm."""
        return self.kernels is not None and not self.rough and all(
            t.kernel is None or t.kernel.smooth() or smoothable(t.kernel)
            for f in self.kernels.forms for t in f.terms)

    def _first_order_minimum(self, ys, theta0, slack, enough=None):
        """(theta, value, Frank-Wolfe gap) of min Phi(., ys) on the ball by accelerated projected gradient from
        ``theta0``, in the oracle's preconditioned coordinates (``enough``: an early stop, as in
        :func:`~fairmodel.exact.newton.minimize_on_ball_first_order`)."""
        scale = max(1.0, abs(self.phi(theta0, ys)[0]))
        return minimize_on_ball_first_order(lambda t: self.phi(t, ys), theta0, self.w.radius,
                                            tol=max(1e-8, slack / scale),
                                            coordinates=None if self.coords.identity else self.coords, enough=enough)

    def lower_bound(self, ys, theta0, solver=None, slack: float = 0.0, minimize_smoothed=None,
                    upper: float = np.inf, decided: float = np.inf) -> tuple[float, str]:
        """A certified lower bound on min_w Phi(w, ys), hence on the optimum (weak duality), and how.

        On a ball, for a smooth Phi: accelerated projected gradient from ``theta0`` (in the oracle's
        preconditioned coordinates), then the Frank-Wolfe bound Phi(w') - <grad, w'> - R ||grad|| at its best
        iterate (valid by convexity at any w', so it stays a lower bound wherever the method stops). It stops
        within ``slack`` of the minimum or, given ``upper`` (max_y Phi(w, y) of the candidate) and ``decided`` (the
        largest tolerance of the gap upper - min), at the first iterate w' whose value already shows
        upper - Phi(w') > decided (min <= Phi(w'): the gap fails every check) with its Frank-Wolfe gap at most
        DECIDED_SHARE of that: the gap reported is then within 1 + DECIDED_SHARE of the true one (what the
        fail-fast rule's rates need), and a checkpoint far from passing costs a few passes, not thousands (on
        3,000 Adult rows with all pairwise interactions, d = 2,736, the Lagrangian of the AUC gap took about 3,800
        passes a checkpoint, 96 % of the run). For a Phi that is non-smooth through its losses (the hinge): the
        bound of the linear minorant at the minimum of the softplus-smoothed Phi (:meth:`_minorant_bound`; a
        first-order method's gradient need not vanish at a kink, so the plain Frank-Wolfe bound stays loose:
        measured 4e-2 below the true minimum after 2,000 steps). Without a radius, or with other kinks (norms, |.|
        of per-sample terms): the exact minimum of the CVXPY program."""
        if self.w.radius is not None and self.smooth:
            def enough(value, gap):
                return upper - value > decided and gap <= DECIDED_SHARE * (upper - value)
            _, value, gap = self._first_order_minimum(ys, theta0, slack, enough)
            return value - gap, "Frank-Wolfe bound after accelerated projected gradient"
        if self.w.radius is not None and self.smoothable:
            return self._minorant_bound(ys, theta0, slack, minimize_smoothed)
        return self._cvxpy_minimum(ys, solver), "CVXPY"

    def _minorant_bound(self, ys, theta0, slack, minimize_smoothed=None) -> tuple[float, str]:
        """The lower bound of :mod:`fairmodel.oracles.smoothing`: for mu in SMOOTHING, minimize Phi with its
        non-smooth losses replaced by their softplus smoothings (``minimize_smoothed(kernel_map, theta0) -> theta``,
        e.g. projected Newton in model space, else accelerated projected gradient), then bound min Phi from below by
        the Frank-Wolfe bound of the linear minorant Phi_lin <= Phi at that point (rigorous: Phi_lin is convex).
        Stops when the bound is within ``slack`` of the smallest Phi seen (an upper bound on the minimum)."""
        theta = np.asarray(theta0, dtype=float)
        upper, best, used = self.phi(theta, ys)[0], -np.inf, None
        for mu in SMOOTHING:
            def smooth_map(k, mu=mu):
                return smoothed(k, mu)
            if minimize_smoothed is not None:
                theta = minimize_smoothed(smooth_map, theta)
            else:
                theta = self.with_kernels(smooth_map)._first_order_minimum(ys, theta, slack)[0]
            value, grad = self.with_kernels(lambda k, mu=mu: minorant(k, mu)).phi(theta, ys)
            bound = value - frank_wolfe_gap(theta, grad, self.w.radius)
            upper = min(upper, self.phi(theta, ys)[0])
            if bound > best:
                best, used = bound, mu
            if upper - best <= max(slack, 1e-12 * max(1.0, abs(upper))):
                break
        how = "projected Newton in model space" if minimize_smoothed is not None else "accelerated projected gradient"
        return best, (f"Frank-Wolfe bound of the linear minorant at the minimum of the softplus-smoothed Lagrangian "
                      f"(mu = {used:g}; {how})")

    def _cvxpy_minimum(self, ys, solver=None) -> float:
        """min_w Phi(w, ys), solved by CVXPY."""
        omega = self.omega(ys)
        ctx = LoweringContext()
        theta = ctx.variable(self.w)
        const = self.c0 + sum(float(c @ y) for c, y in zip(self.c, ys))
        terms = []
        for expr, ks in self.by_expr.values():
            row_weights = (omega[ks] @ self.W_cell[ks])[self.cell_of_row] / self.cell_size[self.cell_of_row]
            keep = np.flatnonzero(row_weights != 0)
            if keep.size:
                terms.append(row_weights[keep] @ lower(expr, ctx)[keep])
        for k in self.exact:
            leaf = self.form.leaves[k]
            if omega[k] == 0:
                continue
            if leaf.low_rank:
                raise SolverError(f"{leaf.label} has no CVXPY form (a product of means, possibly indefinite alone); "
                                  f"give the weights a radius for the first-order bound", status="not_applicable")
            if leaf.quadratic is not None:
                A, g, c = leaf.quadratic
                lam, V = np.linalg.eigh((A + A.T) / 2)
                F = np.sqrt(np.clip(lam, 0, None))[:, None] * V.T
                terms.append(omega[k] * (cp.sum_squares(F @ theta) + g @ theta + c))
            else:
                terms.append(omega[k] * lower(leaf.node, ctx))
        program = cp.Problem(cp.Minimize(sum(terms) + const), ctx.domain_constraints())
        record = solvers.solve(program, solver, False, what="the inner minimum of the Lagrangian gap")
        return float(record["value"])
