"""Group risks of a linear model: the object the group-DRO exact programs, solvers and judge share.

``R_i(theta) = (1/n_i) sum_{j in group i} phi(x_j . theta, y_j)`` for a per-sample loss ``phi`` convex in
the score (eq. (2) of the group-DRO paper). One full pass gives every group risk and the q-weighted
gradient ``sum_i q_i grad R_i`` with one product ``X @ theta`` and one ``X.T @ v``.
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np

from . import expressions as E
from .errors import UnsupportedProblemError


class GroupRisks:
    """Per-group empirical risks of ``loss(data.score(w), y)``; m = 1 for a plain mean (ERM)."""

    def __init__(self, loss: E.Loss, codes: np.ndarray, names, weights: E.Weights):
        score = loss.score
        if not isinstance(score, E.LinearScore):
            raise UnsupportedProblemError(f"group risks need a loss of a linear score data.score(w); got {loss}")
        self.loss_expr = loss
        self.loss = type(loss)
        self.w = weights
        self.X = score.design()              # n x p, intercept column appended when present
        self.y = loss.y
        self.codes = np.asarray(codes, dtype=np.intp)
        self.names = tuple(names)
        self.m = len(self.names)
        self.sizes = np.bincount(self.codes, minlength=self.m).astype(float)
        order = np.argsort(self.codes, kind="stable")
        self.index = np.split(order, np.cumsum(self.sizes.astype(int))[:-1])
        self._order, self._starts = order, np.concatenate([[0], np.cumsum(self.sizes.astype(int))[:-1]])

    def draw_per_group(self, rng: np.random.Generator, batch_size: int) -> np.ndarray:
        """Row ids of ``batch_size`` samples from every group, uniform within the group, with replacement
        (eq. (20) of the group-DRO paper); rows come group by group (group i at i*b .. (i+1)*b - 1)."""
        local = (rng.random((self.m, batch_size)) * self.sizes[:, None]).astype(np.intp)
        return self._order[(self._starts[:, None] + local).ravel()]

    @classmethod
    def from_expr(cls, expr: E.Expr) -> "GroupRisks":
        """From ``group_mean(loss, groups)`` (m groups) or ``mean(loss)`` (one group)."""
        if isinstance(expr, E.GroupMean) and isinstance(expr.expr, E.Loss):
            return cls(expr.expr, expr.groups.codes, expr.groups.names, expr.variables()[0])
        if isinstance(expr, E.Mean) and isinstance(expr.expr, E.Loss):
            n = expr.expr.size
            return cls(expr.expr, np.zeros(n, dtype=np.intp), ("all",), expr.variables()[0])
        raise UnsupportedProblemError(f"expected fm.group_mean(loss, groups) or fm.mean(loss); got {expr}")

    def single_group(self, i: int) -> "GroupRisks":
        """The risk of group i alone, as a one-group problem (MERO stage 1)."""
        rows = self.index[i]
        out = object.__new__(GroupRisks)
        out.loss_expr, out.loss, out.w = self.loss_expr, self.loss, self.w
        out.X, out.y = self.X[rows], self.y[rows]
        out.codes = np.zeros(rows.size, dtype=np.intp)
        out.names, out.m = (self.names[i],), 1
        out.sizes = np.array([float(rows.size)])
        out.index = [np.arange(rows.size)]
        out._order, out._starts = out.index[0], np.array([0])
        return out

    @property
    def shape(self) -> tuple:
        return self.w.shape

    @property
    def radius(self):
        return self.w.radius

    def project(self, theta):
        return self.w.project(theta)

    # -- full passes -------------------------------------------------------------------------------------
    def scores(self, theta, rows=None) -> np.ndarray:
        return (self.X if rows is None else self.X[rows]) @ theta

    def losses(self, theta, rows=None) -> np.ndarray:
        return self.loss.phi(self.scores(theta, rows), self.y if rows is None else self.y[rows])

    def risks(self, theta) -> np.ndarray:
        """The vector of group risks R_i(theta) (eq. (2))."""
        return self.group_means(self.losses(theta))

    def group_means(self, per_sample: np.ndarray) -> np.ndarray:
        return np.bincount(self.codes, weights=per_sample, minlength=self.m) / self.sizes

    def risks_and_grad(self, theta, q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(R(theta), sum_i q_i grad R_i(theta), scores) in one pass over the data (operator (16))."""
        z = self.scores(theta)
        r = self.group_means(self.loss.phi(z, self.y))
        coef = self.loss.dphi(z, self.y)
        weight = (np.asarray(q) / self.sizes)[self.codes]
        coef = coef * (weight[:, None] if coef.ndim == 2 else weight)
        return r, self.X.T @ coef, z

    def weighted_value_and_grad(self, theta, q) -> tuple[float, np.ndarray]:
        """f(theta) = sum_i q_i R_i(theta) and its gradient."""
        r, g, _ = self.risks_and_grad(theta, q)
        return float(np.dot(q, r)), g

    def weighted_oracle(self, q):
        """theta -> (f, grad f, Hessian of f) for f = sum_i q_i R_i (binary losses with d2phi), for Newton."""
        weight = (np.asarray(q, dtype=float) / self.sizes)[self.codes]
        rows = np.flatnonzero(weight > 0)
        X, y, wt = self.X[rows], self.y[rows], weight[rows]

        def fun(theta, value_only=False):
            z = X @ theta
            value = float(wt @ self.loss.phi(z, y))
            if value_only:
                return value
            grad = X.T @ (wt * self.loss.dphi(z, y))
            hess = (X * (wt * self.loss.d2phi(z, y))[:, None]).T @ X
            return value, grad, hess
        return fun

    @property
    def has_hessian(self) -> bool:
        return self.loss.d2phi is not None and self.w.n_outputs is None

    # -- constants of the theory --------------------------------------------------------------------------
    def lipschitz_constants(self) -> tuple[float, float]:
        """(G, L): per-sample Lipschitz and smoothness bounds from the data (spec §1.6 worked example).

        logistic: G = max ||x||, L = max ||x||^2 / 4; softmax: G = sqrt(2) max ||x||, L = max ||x||^2 / 2;
        squared: L = 2 max ||x||^2 (G depends on the domain); hinge: G = max ||x||, not smooth.
        """
        xmax = float(np.sqrt(np.max(np.einsum("ij,ij->i", self.X, self.X))))
        G = {E.SoftmaxLoss: np.sqrt(2.0) * xmax}.get(self.loss, xmax)
        if self.loss is E.SquaredLoss:
            G = 2.0 * xmax * (xmax * (self.radius or np.inf) + np.max(np.abs(self.y)))
        return G, float(self.loss.smoothness * xmax ** 2)

    # -- CVXPY --------------------------------------------------------------------------------------------
    def cvxpy_losses(self, theta: cp.Expression, rows=None):
        from .exact.lower import lower_loss
        X = self.X if rows is None else self.X[rows]
        y = self.y if rows is None else self.y[rows]
        return lower_loss(self.loss, X @ theta, y)

    def cvxpy_risks(self, theta: cp.Expression):
        from .exact.lower import group_average_matrix
        return group_average_matrix(self.codes, self.sizes) @ self.cvxpy_losses(theta)

    def cvxpy_group_risk(self, theta: cp.Expression, i: int):
        rows = self.index[i]
        return cp.sum(self.cvxpy_losses(theta, rows)) / rows.size

    def cvxpy_weighted_risk(self, theta: cp.Expression, q):
        weights = (np.asarray(q, dtype=float) / self.sizes)[self.codes]
        keep = weights > 0
        return cp.sum(cp.multiply(weights[keep], self.cvxpy_losses(theta, np.flatnonzero(keep))))

    def cvxpy_domain(self, theta: cp.Variable) -> list:
        if self.radius is None:
            return []
        return [cp.norm(theta, "fro" if theta.ndim == 2 else 2) <= self.radius]
