"""The model-space exact method of the generic convex reduction: a primal-dual interior-point method over the model
parameters and one epigraph variable per max term, with full-data oracles from the one loss object.

The saddle form (:mod:`.piecewise`) writes a convex declaration as affine(leaves) + sum_t max_p piece_tp(leaves)
subject to pieces C_j(leaves) <= 0, every piece affine in the *leaves*: means over row sets of a per-sample
expression, and exact terms of the weights (sums of squares, the AUC pair risks' quadratics). When every
per-sample expression is a twice-differentiable function h_i(z_i) of one linear score z_i = x_i . w + b (a loss
with a second derivative, a data vector times the score, sums and multiples of these) the program

    min_{theta, t}  a . leaves(theta) + sum_t t_t
    s.t.            M_tp . leaves(theta) + c_tp <= t_t,     C_j(leaves(theta)) <= 0,     ||theta||^2 <= R^2

is smooth and convex in D + T unknowns (D parameters, T max terms). Its oracles are full passes: leaf values
(1/|S|) sum_{i in S} h_i, gradients X' (h' restricted to S) / |S|, and the Hessian of the Lagrangian
X' diag(sum_k omega_k 1_S_k h'' / |S_k|) X (the curvature of :class:`~fairmodel.oracles.losses.LinearModelLoss`,
in row chunks: no copy of X). The interior-point core is :mod:`fairmodel.oracles.ipm`.

Certificate: the IPM's multipliers are the saddle form's dual variables (the weights of each max term, which sum
to one at a KKT point, and the constraints' multipliers). The Lagrangian Phi(., y) is smooth and convex: its
minimum over the ball is found by the projected Newton method of :mod:`fairmodel.exact.newton`, whose Frank-Wolfe
gap makes ``Phi(theta_N) - gap`` a rigorous lower bound on the optimum (weak duality); the judge recomputes the
Lagrangian gap from the same dual variables.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from ..exact import budget
from ..exact.newton import minimize_on_ball
from ..expressions import Add, Constant, Multiply, Parameter, ScalarMul
from ..expressions.atoms.losses import Loss
from ..expressions.atoms.norms import SumSquares
from ..expressions.variables import LinearScore
from ..oracles import ipm
from ..oracles.losses import LinearModelLoss, Squared
from .piecewise import DeterministicLeaf, SaddleForm, SampleLeaf

SPARSE_DENSITY = 0.25     # a design with at most this share of nonzeros is kept as a sparse matrix
CHUNK_ROWS = 65_536       # rows per block of X' D X (the weighted copy of a block, never of X)
IPM_TOL = 1e-9            # relative KKT residuals of the interior-point method
GAP_TOL = 1e-9            # relative complementarity gap s' lambda / (1 + |f|)
NEWTON_STEPS = 50         # the certificate's Newton steps (from a KKT point it needs a few; beyond: SolverError)
CERT_TOL = 1e-10          # the certificate's Newton solve: Frank-Wolfe gap relative to max(1, |Phi|)
DESCRIPTION = ("a primal-dual interior-point method in model space (the parameters plus one epigraph variable per "
               "max term; Mehrotra's predictor-corrector) with full-data value, gradient and Hessian oracles; "
               "certified by the Lagrangian dual bound of its multipliers (projected Newton, Frank-Wolfe gap)")


class NotSmooth(Exception):
    """The declaration has a part the model-space method does not take; the message says which."""


def _jet(e, w, found: dict):
    """A function z -> (h, h', h'') of the per-sample expression ``e`` as a function of its linear score z (the
    score recorded in ``found['score']``); raises :class:`NotSmooth` naming the node it does not take."""
    if isinstance(e, LinearScore):
        if e.w is not w or e.w.n_outputs is not None:
            raise NotSmooth(f"the score {e} is not a linear score of the vector of weights {w.name}")
        if found.setdefault("score", e).data is not e.data:
            raise NotSmooth("a per-sample term combines the scores of two data sets")
        return lambda z: (z, 1.0, 0.0)
    if isinstance(e, (Constant, Parameter)):
        return lambda z: (np.asarray(e.constant_value(), dtype=float), 0.0, 0.0)
    if isinstance(e, Loss):
        kernel = e.kernel
        if kernel.d2phi is None:
            raise NotSmooth(f"the {kernel.name} loss is not twice differentiable")
        inner, y = _jet(e.score, w, found), e.y

        def loss(z):
            u, u1, u2 = inner(z)
            d1 = kernel.dphi(u, y)
            return kernel.phi(u, y), d1 * u1, kernel.d2phi(u, y) * u1 * u1 + d1 * u2
        return loss
    if isinstance(e, (Multiply, ScalarMul)):
        inner, a = _jet(e.expr, w, found), (e.a if isinstance(e, Multiply) else e.c)
        return lambda z: tuple(a * part for part in inner(z))
    if isinstance(e, Add):
        parts = [_jet(t, w, found) for t in e.args]
        return lambda z: tuple(sum(p) for p in zip(*(f(z) for f in parts)))
    raise NotSmooth(f"{type(e).__name__} ({e}) in a per-sample term is not a smooth function of the score")


def smooth_reason(form: SaddleForm, w) -> str | None:
    """Why the model-space method does not take this saddle form (None: it does). Cheap: no data pass."""
    if w.n_outputs is not None:
        return "the weights are a matrix (several outputs); the model-space method takes a vector of weights"
    for leaf in form.leaves:
        try:
            if isinstance(leaf, SampleLeaf):
                _jet(leaf.expr, w, {})
            elif leaf.quadratic is None and not isinstance(leaf.node, SumSquares):
                raise NotSmooth(f"{leaf.label} is not differentiable everywhere (a norm has a kink at 0)")
        except NotSmooth as exc:
            return str(exc)
    return None


def estimate(form: SaddleForm, w) -> budget.Estimate:
    """The memory and time of the method from the sizes of the saddle form and its data, before anything is built
    (one pass over each design to count its nonzeros)."""
    samples = [leaf.expr for leaf in form.leaves if isinstance(leaf, SampleLeaf)]
    n = max((e.size for e in samples), default=0)
    nonzeros = None
    for e in samples:
        for node in e.nodes():
            if isinstance(node, LinearScore):
                X = node.data.in_memory_X("the model-space interior-point method")
                count = np.count_nonzero(X)
                if X.size and count <= SPARSE_DENSITY * X.size:
                    nonzeros = max(nonzeros or 0.0, count / X.shape[0])
    return budget.model_space(n, w.shape[0], len(samples), len({id(e) for e in samples}), nonzeros)


class _Expression:
    """The sample leaves of one per-sample expression: h as a function of the score, and the row weights R
    (n x leaves, 1/|S_k| on the rows of S_k)."""

    def __init__(self, expr, leaves: list, ks: list, w):
        found: dict = {}
        self.jet = _jet(expr, w, found)
        self.score = found.get("score")
        self.ks = ks
        n = expr.size
        self.R = np.zeros((n, len(ks)))
        for j, k in enumerate(ks):
            leaf = leaves[k]
            self.R[:, j] = 1.0 / leaf.count if leaf.rows is None else np.where(leaf.rows, 1.0 / leaf.count, 0.0)


class ModelSpace:
    """The smooth program of a saddle form in (theta, t), its oracles, and its certificate."""

    def __init__(self, form: SaddleForm, w):
        reason = smooth_reason(form, w)
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
        self.expressions = [_Expression(expr, leaves, ks, w) for expr, ks in groups.values()]
        self.designs: dict = {}
        for ex in self.expressions:
            if ex.score is not None and id(ex.score.data) not in self.designs:
                X = ex.score.data.in_memory_X("the model-space interior-point method")
                if X.size and np.count_nonzero(X) <= SPARSE_DENSITY * X.size:
                    X = sparse.csr_matrix(X)     # e.g. one-hot features: X' D X in O(sum_i nnz_i^2)
                self.designs[id(ex.score.data)] = X
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


    # -- the leaf oracle ---------------------------------------------------------------------------------------
    def _loss(self, ex) -> LinearModelLoss:
        X = self.designs[id(ex.score.data)]
        return LinearModelLoss(Squared, X, None, self.w.intercept, np.ones(X.shape[0]), drop_zero_weights=False)

    def leaves(self, theta, omega=None):
        """(values (L,), gradients (L x D), and with ``omega`` the Hessian of sum_k omega_k leaf_k (D x D))."""
        L = len(self.form.leaves)
        values, grads = np.zeros(L), np.zeros((L, self.D))
        curv: dict = {}
        scores: dict = {}
        for ex in self.expressions:
            if ex.score is None:
                h = np.broadcast_to(ex.jet(np.zeros(ex.R.shape[0]))[0], (ex.R.shape[0],))
                values[ex.ks] = h @ ex.R
                continue
            model = self._loss(ex)
            key = id(ex.score.data)
            if key not in scores:
                scores[key] = model.scores(theta)
            z = scores[key]
            h, h1, h2 = (np.broadcast_to(np.asarray(p, dtype=float), z.shape) for p in ex.jet(z))
            values[ex.ks] = h @ ex.R
            grads[ex.ks] = model.pullback(h1[:, None] * ex.R).T
            if omega is not None and np.any(h2):
                curv[key] = curv.get(key, 0.0) + h2 * (ex.R @ omega[ex.ks])
        for k in self.exact:
            v, g = self.form.leaves[k].value_grad(theta)
            values[k], grads[k] = v, g
        if omega is None:
            return values, grads
        H = np.zeros((self.D, self.D))
        for key, d in curv.items():
            X = self.designs[key]
            rows = X.shape[0] if sparse.issparse(X) else CHUNK_ROWS     # a sparse X is weighted without a copy
            for a in range(0, X.shape[0], rows):
                block = LinearModelLoss(Squared, X[a:a + rows], None, self.w.intercept,
                                        np.ones(min(rows, X.shape[0] - a)), drop_zero_weights=False)
                H += block.curvature(d[a:a + rows])
        for k in self.exact:
            if omega[k] == 0:
                continue
            leaf = self.form.leaves[k]
            if leaf.quadratic is not None:
                A = leaf.quadratic[0]
                H += omega[k] * (A + A.T)
            else:
                H += omega[k] * 2.0 * np.diag(leaf.node._mask())
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
