"""Group risks of a linear model: the object the group-DRO exact programs, solvers and judge share.

``R_i(theta) = (1/n_i) sum_{j in group i} phi(x_j . theta, y_j)`` for a per-sample loss ``phi`` convex in
the score (eq. (2) of the group-DRO paper). One full pass gives every group risk and the q-weighted
gradient ``sum_i q_i grad R_i`` with one product ``X @ theta`` and one ``X.T @ v``.
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np

from . import expressions as E
from .data import Dataset, Groups
from .errors import UnsupportedProblemError


class GroupRisks:
    """Per-group empirical risks of ``loss(data.score(w), y)``; m = 1 for a plain mean (ERM)."""

    def __init__(self, loss: E.Loss, groups: Groups, weights: E.Weights, data: Dataset | None = None):
        score = loss.score
        if not isinstance(score, E.LinearScore):
            raise UnsupportedProblemError(f"group risks need a loss of a linear score data.score(w); got {loss}")
        self.loss_expr = loss
        self.loss = type(loss)
        self.w = weights
        self.data = score.data if data is None else data     # the data source: chunks() and sampler()
        self.y = loss.y                                      # validated labels of the loss, aligned with rows
        self.groups = groups
        self.codes = groups.codes
        self.names = tuple(groups.names)
        self.m = len(self.names)
        self.sizes = groups.sizes.astype(float)
        self.index = groups.indices()
        self._X = None

    @property
    def X(self) -> np.ndarray:
        """The in-memory design matrix (X with a ones column for an intercept): for exact solvers and constants."""
        if self._X is None:
            self._X = self.design(self.data.X)
        return self._X

    @property
    def n_samples(self) -> int:
        return self.data.n_samples

    def design(self, X: np.ndarray) -> np.ndarray:
        return np.hstack([X, np.ones((X.shape[0], 1))]) if self.w.intercept else X

    def sampler(self, batch_size: int, rng) -> "object":
        """Per-group minibatches (eq. (20) of the group-DRO paper): ``batch_size`` rows from every group,
        uniform within the group, with replacement, group by group, through the data source's sampler."""
        return self.data.sampler("per_group", batch_size, seed=rng, groups=self.groups)

    def batch(self, batch) -> tuple[np.ndarray, np.ndarray]:
        """(design, labels) of a :class:`fairmodel.data.Batch`."""
        return self.design(batch.X), self.y[batch.rows]

    @classmethod
    def from_expr(cls, expr: E.Expr) -> "GroupRisks":
        """From ``group_mean(loss, groups)`` (m groups) or ``mean(loss)`` (one group)."""
        if isinstance(expr, E.GroupMean) and isinstance(expr.expr, E.Loss):
            return cls(expr.expr, expr.groups, expr.variables()[0])
        if isinstance(expr, E.Mean) and isinstance(expr.expr, E.Loss):
            n = expr.expr.size
            return cls(expr.expr, Groups(np.zeros(n, dtype=np.intp), names=("all",)), expr.variables()[0])
        raise UnsupportedProblemError(f"expected fm.group_mean(loss, groups) or fm.mean(loss); got {expr}")

    def single_group(self, i: int) -> "GroupRisks":
        """The risk of group i alone, as a one-group problem (MERO stage 1)."""
        rows = self.index[i]
        out = object.__new__(GroupRisks)
        out.__dict__.update(self.__dict__)
        out.data, out.y = self.data.take(rows), self.y[rows]
        out.groups = Groups(np.zeros(rows.size, dtype=np.intp), names=(self.names[i],))
        out.codes, out.names, out.m = out.groups.codes, out.groups.names, 1
        out.sizes, out.index = out.groups.sizes.astype(float), out.groups.indices()
        out._X = None if self._X is None else self._X[rows]
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
        """The vector of group risks R_i(theta) (eq. (2)), by one pass over the data source."""
        return self.risks_and_grad(theta, np.zeros(self.m))[0]

    def group_means(self, per_sample: np.ndarray) -> np.ndarray:
        return np.bincount(self.codes, weights=per_sample, minlength=self.m) / self.sizes

    def risks_and_grad(self, theta, q, chunk: int = 1 << 16) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(R(theta), sum_i q_i grad R_i(theta), scores) in one pass over the data source's chunks (the
        operator (16) at (theta, q)); the scores of every row are returned for the variance-reduced steps."""
        weight = np.asarray(q, dtype=float) / self.sizes
        totals = np.zeros(self.m)
        grad = np.zeros(self.shape)
        z_all = np.empty((self.n_samples,) + self.shape[1:])
        for batch in self.data.chunks(chunk):
            Xd, y = self.batch(batch)
            codes = self.codes[batch.rows]
            z = Xd @ theta
            z_all[batch.rows] = z
            totals += np.bincount(codes, weights=np.atleast_1d(self.loss.phi(z, y)), minlength=self.m)
            coef = self.loss.dphi(z, y)
            wt = weight[codes]
            grad += Xd.T @ (coef * (wt[:, None] if coef.ndim == 2 else wt))
        return totals / self.sizes, grad, z_all

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

    def row_norms_squared(self) -> np.ndarray:
        """||x_j||^2 of every design row (one pass over the data source)."""
        out = np.empty(self.n_samples)
        for batch in self.data.chunks():
            Xd = self.design(batch.X)
            out[batch.rows] = np.einsum("ij,ij->i", Xd, Xd)
        return out

    # -- constants of the theory --------------------------------------------------------------------------
    def lipschitz_constants(self) -> tuple[float, float]:
        """(G, L): per-sample Lipschitz and smoothness bounds from the data (spec §1.6 worked example).

        logistic: G = max ||x||, L = max ||x||^2 / 4; softmax: G = sqrt(2) max ||x||, L = max ||x||^2 / 2;
        squared: L = 2 max ||x||^2 (G depends on the domain); hinge: G = max ||x||, not smooth.
        """
        xmax = float(np.sqrt(self.row_norms_squared().max()))
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
