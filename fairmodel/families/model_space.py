"""The model-space exact method of the generic convex reduction: a primal-dual interior-point method over the model
parameters and one epigraph variable per max term, with full-data oracles computed by passes over the rows.

The saddle form (:mod:`.piecewise`) writes a convex declaration as affine(leaves) + sum_t max_p piece_tp(leaves)
subject to pieces C_j(leaves) <= 0, every piece affine in the *leaves*: means over row sets of a per-sample
expression, and exact terms of the weights (sums of squares, the AUC pair risks' quadratics). When every
per-sample expression is a twice-differentiable function h_i(z_i) of one linear score z_i = x_i . w + b (a loss
with a second derivative, a data vector times the score, sums and multiples of these: the compiled expressions of
:mod:`.leaf_kernels`) the program

    min_{theta, t}  a . leaves(theta) + sum_t t_t
    s.t.            M_tp . leaves(theta) + c_tp <= t_t,     C_j(leaves(theta)) <= 0,     ||theta||^2 <= R^2

is smooth and convex in D + T unknowns (D parameters, T max terms). Its oracles are sums over rows, computed in one
pass over each data set's rows (:func:`fairmodel.data.passes.row_sums`: NumPy row blocks, or the chunks of a
Dask-backed data set on whatever scheduler is active): leaf values (1/|S|) sum_{i in S} h_i, gradients
X' (h' restricted to S) / |S|, and the Hessian of the Lagrangian X' diag(sum_k omega_k 1_S_k h'' / |S_k|) X (the
curvature of :class:`~fairmodel.oracles.losses.LinearModelLoss`, a chunk at a time). The rows are cut into *cells*
(rows in the same leaves' sets: groups, masks), so a row's weight in every leaf is a small table indexed by its cell
code: what a pass ships per row is that code and the expressions' data vectors (labels, coefficients). The
interior-point core is :mod:`fairmodel.oracles.ipm`.

Certificate: the IPM's multipliers are the saddle form's dual variables (the weights of each max term, which sum
to one at a KKT point, and the constraints' multipliers). The Lagrangian Phi(., y) is smooth and convex: its
minimum over the ball is found by the projected Newton method of :mod:`fairmodel.exact.newton`, whose Frank-Wolfe
gap makes ``Phi(theta_N) - gap`` a rigorous lower bound on the optimum (weak duality); the judge recomputes the
Lagrangian gap from the same dual variables.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
from scipy.linalg import solve_triangular

from ..data.passes import count_nonzeros, row_sums, showing_passes, sparse_enough
from ..errors import SolverError
from ..exact import budget, solvers
from ..exact.newton import minimize_on_ball
from ..expressions.evaluate import evaluate
from ..oracles import ipm
from .leaf_kernels import Cells, LeafSums, NotCompiled, compile_expression
from .piecewise import DeterministicLeaf, SaddleForm, SampleLeaf

SPARSE_DENSITY = 0.25     # an in-memory design with at most this share of nonzeros is read as a sparse matrix
IPM_TOL = 1e-9            # relative KKT residuals of the interior-point method
GAP_TOL = 1e-9            # relative complementarity gap s' lambda / (1 + |f|)
NEWTON_STEPS = 50         # the certificate's Newton steps (from a KKT point it needs a few; beyond: SolverError)
CERT_TOL = 1e-10          # the certificate's Newton solve: Frank-Wolfe gap relative to max(1, |Phi|)
DESCRIPTION = ("a primal-dual interior-point method in model space (the parameters plus one epigraph variable per "
               "max term; Mehrotra's predictor-corrector) with full-data value, gradient and Hessian oracles, one "
               "pass over the rows each; certified by the Lagrangian dual bound of its multipliers (projected Newton, "
               "Frank-Wolfe gap)")


class NotSmooth(Exception):
    """The declaration has a part the model-space method does not take; the message says which."""


def _compiled(expr, w, kernel_map=None):
    """(the linear score node or None, the compiled per-sample expression or its constant values) of a sample leaf's
    expression, its kernels replaced by ``kernel_map`` (e.g. the softplus smoothing of a hinge,
    :mod:`fairmodel.oracles.smoothing`); raises :class:`NotSmooth` naming what the model-space method does not
    take."""
    if not expr.variables():            # no weights in it: its values once
        return None, np.broadcast_to(np.asarray(evaluate(expr, {}), dtype=float), (expr.size,))
    try:
        score, form = compile_expression(expr, w)
    except NotCompiled as exc:
        raise NotSmooth(f"{expr} is not a sum of multiples of the linear score of {w.name} and of losses of it "
                        f"({exc})") from None
    if kernel_map is not None:
        form = form.substituted(kernel_map)
    if not form.twice_differentiable:
        bad = next(t.kernel.name for t in form.terms if t.kernel is not None and t.kernel.d2phi is None)
        raise NotSmooth(f"the {bad} loss is not twice differentiable")
    return score, form


def smooth_reason(form: SaddleForm, w, kernel_map=None) -> str | None:
    """Why the model-space method does not take this saddle form, its kernels replaced by ``kernel_map`` (None: it
    does). Cheap: no data pass."""
    if w.n_outputs is not None:
        return "the weights are a matrix (several outputs); the model-space method takes a vector of weights"
    for leaf in form.leaves:
        try:
            if isinstance(leaf, SampleLeaf):
                _compiled(leaf.expr, w, kernel_map)
            elif leaf.low_rank:
                raise NotSmooth(f"{leaf.label} is given without its D x D Hessian (more than "
                                f"{budget.DENSE_PARAMETERS} parameters): the stochastic method takes it")
            elif leaf.quadratic is None and not leaf.node.is_smooth():
                raise NotSmooth(f"{leaf.label} is not differentiable everywhere (a norm has a kink at 0)")
        except NotSmooth as exc:
            return str(exc)
    return None


def _sample_data(form: SaddleForm) -> list:
    """The data sets of the linear scores in the form's sample leaves (each once)."""
    found = {}
    for leaf in form.leaves:
        if isinstance(leaf, SampleLeaf):
            for node in leaf.expr.nodes():
                data = getattr(node, "data", None)
                if data is not None and hasattr(node, "w"):
                    found.setdefault(id(data), data)
    return list(found.values())


def estimate(form: SaddleForm, w) -> budget.Estimate:
    """The memory and time of the method from the sizes of the saddle form and its data, before anything is built:
    the model-space state, a chunk's working arrays, and the cell code of every row (on in-memory data one pass
    counts the nonzeros: a sparse design is read as CSR)."""
    samples = [leaf.expr for leaf in form.leaves if isinstance(leaf, SampleLeaf)]
    n = max((e.size for e in samples), default=0)
    nonzeros = None
    for data in _sample_data(form):
        if not data.is_chunked:
            count = data.reduce_chunks(count_nonzeros)
            if sparse_enough(count, data.n_samples * data.n_features, SPARSE_DENSITY):
                nonzeros = max(nonzeros or 0.0, count / data.n_samples)
    return budget.model_space(n, w.shape[0], len(samples), len({id(e) for e in samples}), nonzeros)


class _Expression:
    """The sample leaves ``ks`` of one per-sample expression: its compiled form (or constant values) and its data."""

    def __init__(self, expr, ks: list, w, kernel_map=None):
        self.ks = ks
        self.score, self.form = _compiled(expr, w, kernel_map)
        self.data = None if self.score is None else self.score.data


@dataclass
class _DataPart:
    """The sample leaves over one data set: its expressions, the cells of its rows, whether its in-memory design is
    read as a sparse matrix."""

    data: object
    expressions: list
    cells: Cells
    sparse: bool


class ModelSpace:
    """The smooth program of a saddle form in (theta, t), its oracles (passes over the rows), and its certificate.
    ``kernel_map``: every loss kernel k of the sample leaves replaced by ``kernel_map(k)`` (the smoothed program of
    a non-smooth declaration, for its certificate)."""

    def __init__(self, form: SaddleForm, w, kernel_map=None):
        reason = smooth_reason(form, w, kernel_map)
        if reason is not None:
            raise NotSmooth(reason)
        self.form, self.w = form, w
        self.D, self.T = w.shape[0], len(form.objective_terms)
        leaves = form.leaves
        L = len(leaves)
        groups: dict = {}
        for k, leaf in enumerate(leaves):
            if isinstance(leaf, SampleLeaf):
                groups.setdefault(id(leaf.expr), (leaf.expr, []))[1].append(k)
        expressions = [_Expression(expr, ks, w, kernel_map) for expr, ks in groups.values()]
        # constant per-sample expressions: their leaves once
        self.constant_values = np.zeros(L)
        for ex, (expr, ks) in zip(expressions, groups.values()):
            if ex.score is None:
                for k in ks:
                    rows = leaves[k].rows
                    self.constant_values[k] = float(np.mean(ex.form if rows is None else ex.form[rows]))
        # per data set: its expressions, the cells of its rows, whether its design is read as CSR
        self.by_data: list = []
        for data in _sample_data(form):
            mine = [ex for ex in expressions if ex.data is data]
            sparse = False
            if not data.is_chunked:
                sparse = sparse_enough(data.reduce_chunks(count_nonzeros), data.n_samples * data.n_features,
                                       SPARSE_DENSITY)
            self.by_data.append(_DataPart(data, mine, Cells(leaves, [ex.ks for ex in mine], data.n_samples), sparse))
        self.exact = [k for k, leaf in enumerate(leaves) if isinstance(leaf, DeterministicLeaf)]
        # the constraint rows of the IPM: the pieces of every max term (minus its t), the constraint pieces
        rows, E_rows, self.row_kind = [], [], []
        for t, term in enumerate(form.objective_terms):
            for piece in term:
                rows.append(piece)
                E_rows.append(t)
                self.row_kind.append(("term", t))
        for j, piece in enumerate(form.constraint_pieces):
            rows.append(piece)
            E_rows.append(-1)
            self.row_kind.append(("constraint", j))
        m = len(rows)
        self.G, self.cg, self.E = np.zeros((m, L)), np.zeros(m), np.zeros((m, self.T))
        for r, (piece, t) in enumerate(zip(rows, E_rows)):
            for k, v in piece.coef.items():
                self.G[r, k] += v
            self.cg[r] = piece.const
            if t >= 0:
                self.E[r, t] = 1.0
        self.a0 = np.zeros(L)
        for k, v in form.affine.coef.items():
            self.a0[k] += v
        self.c0 = form.affine.const
        self.radius = w.radius

    def showing_passes(self, desc: str, verbose=None):
        """A progress bar of the passes over the (first) chunked data set of the sample leaves while the block runs."""
        chunked = [part.data for part in self.by_data if part.data.is_chunked]
        return showing_passes(chunked[0], desc, verbose) if chunked else contextlib.nullcontext()

    # -- the leaf oracle ---------------------------------------------------------------------------------------
    def leaves(self, theta, omega=None):
        """(values (L,), gradients (L x D), and with ``omega`` the Hessian of sum_k omega_k leaf_k (D x D)): one
        pass over the rows of each data set of the sample leaves, the exact leaves at theta."""
        L = len(self.form.leaves)
        values, grads = self.constant_values.copy(), np.zeros((L, self.D))
        H = None if omega is None else np.zeros((self.D, self.D))
        for part in self.by_data:
            kernel = LeafSums(theta, self.w.intercept, [ex.ks for ex in part.expressions], part.cells.weights, L,
                              omega)
            out = row_sums(part.data, kernel, part.cells.codes, *(ex.form for ex in part.expressions),
                           sparse=part.sparse)
            values += out[0]
            grads += out[1]
            if omega is not None:
                H += out[2]
        for k in self.exact:
            v, g = self.form.leaves[k].value_grad(theta)
            values[k], grads[k] = v, g
        if omega is None:
            return values, grads
        for k in self.exact:
            if omega[k] != 0:
                H += omega[k] * self.form.leaves[k].hessian()
        return values, grads, H

    # -- the program in x = (theta, t) ---------------------------------------------------------------------------
    def _oracle(self, x, lam, hessian):
        theta, t = x[:self.D], x[self.D:]
        m = self.G.shape[0]
        lam_rows = np.zeros(m) if lam is None else lam[:m]
        omega = self.a0 + self.G.T @ lam_rows
        out = self.leaves(theta, omega if hessian else None)
        values, grads = out[0], out[1]
        f = float(self.a0 @ values + self.c0 + t.sum())
        grad = np.concatenate([grads.T @ self.a0, np.ones(self.T)])
        g = self.G @ values + self.cg - self.E @ t
        J = np.hstack([self.G @ grads, -self.E])
        if self.radius is not None:
            R = self.radius
            g = np.append(g, (theta @ theta - R * R) / (2.0 * R))
            J = np.vstack([J, np.concatenate([theta / R, np.zeros(self.T)])])
        H = None
        if hessian:
            H = np.zeros((self.D + self.T, self.D + self.T))
            H[:self.D, :self.D] = out[2]
            if self.radius is not None:
                H[:self.D, :self.D] += float(lam[-1]) / self.radius * np.eye(self.D)
        return ipm.Point(f, grad, g, J, H)

    def solve(self, max_iter: int = 100) -> dict:
        """Run the IPM from theta = 0; returns theta, the saddle form's dual variables, the IPM record."""
        theta0 = np.zeros(self.D)
        values = self.leaves(theta0)[0]
        t0 = np.array([max(float(p.const + sum(v * values[k] for k, v in p.coef.items())) for p in term)
                       for term in self.form.objective_terms]) + 1.0
        ball = None if self.radius is None else np.array([self.G.shape[0]])     # the ball is the last row
        result = ipm.solve(self._oracle, np.concatenate([theta0, t0]), tol=IPM_TOL, gap_tol=GAP_TOL,
                           max_iter=max_iter, reset=ball)
        theta = result.x[:self.D]
        if self.radius is not None and np.linalg.norm(theta) > self.radius:
            theta = theta * (self.radius / np.linalg.norm(theta))
        ys, lam_c = self.duals(result.lam)
        return {"theta": theta, "ys": ys, "multipliers": lam_c, "ipm": result}

    def duals(self, lam):
        """The IPM's multipliers as the saddle form's dual variables: per max term its pieces' weights
        (normalized; they sum to one at a KKT point), and the constraint pieces' multipliers."""
        ys = []
        for t in range(self.T):
            y = np.array([lam[r] for r, kind in enumerate(self.row_kind) if kind == ("term", t)])
            y = np.maximum(y, 0.0)
            ys.append(y / y.sum() if y.sum() > 0 else np.full(y.size, 1.0 / y.size))
        lam_c = np.array([max(lam[r], 0.0) for r, kind in enumerate(self.row_kind) if kind[0] == "constraint"])
        return ys, lam_c

    # -- the certificate -------------------------------------------------------------------------------------------
    def lagrangian(self, ys, lam_c):
        """theta -> Phi(theta, y) (value, or value, gradient, Hessian) of the saddle form at the dual variables."""
        omega, const = self.a0.copy(), self.c0
        rows = {("term", t): y for t, y in enumerate(ys)}
        for r, kind in enumerate(self.row_kind):
            weight = rows[kind][sum(1 for q in self.row_kind[:r] if q == kind)] if kind[0] == "term" \
                else lam_c[kind[1]]
            omega += weight * self.G[r]
            const += weight * self.cg[r]

        def fun(theta, value_only=False):
            if value_only:
                return float(omega @ self.leaves(theta)[0] + const)
            values, grads, H = self.leaves(theta, omega)
            return float(omega @ values + const), grads.T @ omega, H
        return fun

    def model_duals(self, theta, ys, lam_c):
        """The dual variables that maximize the second-order model of the dual function d(y) = min Phi(., y) at
        theta, or None when its program fails: per max term its pieces' weights (a simplex), the constraint pieces'
        multipliers (>= 0).

        Phi(theta, y) and its gradient g(y) are affine in y (one pass: the leaves' values and gradients, and the
        Hessian H of the Lagrangian at the given ``ys``, ``lam_c``), so the Newton model of d at theta,
        Phi(theta, y) - g(y)' H^-1 g(y) / 2, is a concave quadratic in y (the ball's multiplier is one more
        variable >= 0, its piece (||theta||^2 - R^2) / 2R). Its maximizer is the Lagrange multiplier estimate of
        theta: exact at a minimizer of the declaration (there g(y*) = 0 with y* supported on the active pieces),
        so a candidate's certificate then measures the suboptimality of theta, not the noise of the duals a
        stochastic method averaged alongside it. Any y gives a valid bound (weak duality): a caller keeps these only
        where they certify more."""
        weights = np.concatenate(list(ys) + [np.asarray(lam_c, dtype=float)])     # one per row of G
        values, grads, H = self.leaves(theta, self.a0 + self.G.T @ weights)
        p, P = self.G @ values + self.cg, self.G @ grads
        if self.radius is not None:
            R = self.radius
            p = np.append(p, (theta @ theta - R * R) / (2.0 * R))
            P = np.vstack([P, theta / R])
        # H's null space (collinear one-hot columns with the intercept) holds no gradient of a leaf (both lie in the
        # span of the rows): the ridge only keeps the factorization finite
        ridge = 1e-10 * max(1.0, float(np.trace(H)) / self.D)
        try:
            L = np.linalg.cholesky(H + ridge * np.eye(self.D))
        except np.linalg.LinAlgError:
            return None
        A, a = solve_triangular(L, P.T, lower=True), solve_triangular(L, grads.T @ self.a0, lower=True)
        z = cp.Variable(len(p), nonneg=True)
        terms = [[r for r, kind in enumerate(self.row_kind) if kind == ("term", t)] for t in range(self.T)]
        program = cp.Problem(cp.Maximize(p @ z - 0.5 * cp.sum_squares(a + A @ z)),
                             [cp.sum(z[r]) == 1 for r in terms])
        try:
            solvers.solve(program, what="the model of the dual function")
        except SolverError:
            return None
        if z.value is None or not np.all(np.isfinite(z.value)):
            return None
        z = np.maximum(z.value, 0.0)
        return [z[r] / z[r].sum() for r in terms], \
            np.array([z[r] for r, kind in enumerate(self.row_kind) if kind[0] == "constraint"])

    def objective(self, theta) -> tuple[float, float]:
        """(objective, largest constraint piece) at theta, from the exact leaves."""
        values = self.leaves(theta)[0]
        obj = float(self.a0 @ values + self.c0)
        pieces = self.G @ values + self.cg
        for t in range(self.T):
            obj += float(max(pieces[r] for r, kind in enumerate(self.row_kind) if kind == ("term", t)))
        cons = [pieces[r] for r, kind in enumerate(self.row_kind) if kind[0] == "constraint"]
        return obj, float(max(cons)) if cons else -np.inf

    def certificate(self, theta, ys, lam_c) -> dict:
        """The Lagrangian dual bound min_{||theta'|| <= R} Phi(theta', y) (projected Newton, minus its Frank-Wolfe
        gap: rigorous on a ball; without a radius the gradient norm at the Newton point is reported instead and
        the bound is the value there) and the duality gap objective + sum(lambda) max(0, C) - bound."""
        fun = self.lagrangian(ys, lam_c)
        _, value, fw = minimize_on_ball(fun, theta, self.radius, tol=CERT_TOL, max_iter=NEWTON_STEPS)
        lower = value - fw if self.radius is not None else value
        obj, worst = self.objective(theta)
        upper = obj + float(lam_c.sum()) * max(0.0, worst)
        return {"dual_bound": lower, "duality_gap": upper - lower,
                "stationarity" if self.radius is None else "frank_wolfe_gap": fw}
