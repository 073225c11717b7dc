"""Norms of the model parameters (regularizers): deterministic convex functions of the weights."""
from __future__ import annotations

import numpy as np

from ...errors import ExpressionTypeError, ModelError
from ..core import Expr
from ..variables import Weights


class SumSquares(Expr):
    """||w||_2^2 (squared Frobenius norm for a matrix); the intercept is included when present."""

    def __init__(self, w: Weights, include_intercept: bool = False):
        if not isinstance(w, Weights):
            raise ExpressionTypeError(f"sum_squares needs fairmodel.Weights; got {type(w).__name__}")
        self.w, self.args = w, (w,)
        self.include_intercept = include_intercept

    own_curvature = "convex"
    own_smooth = True
    sign = "nonneg"
    lipschitz = None          # smooth: no Lipschitz constant needed by the stochastic lowering

    def get_data(self):
        return (self.include_intercept,)

    def _mask(self):
        mask = np.ones(self.w.shape)
        if self.w.intercept and not self.include_intercept:
            mask[-1] = 0.0
        return mask

    def _numeric(self, env):
        return float(np.sum((env[self.w] * self._mask()) ** 2))

    def backprop(self, env, upstream, grads):
        self.w.backprop(env, 2.0 * upstream * env[self.w] * self._mask(), grads)

    def render(self, n):
        name = self.w.render(n)
        return n.norm(f"({name}, b)" if self.w.intercept and self.include_intercept else name, squared=True)


class Norm(Expr):
    """||w||_p for p in {1, 2, inf} (the intercept is not penalized)."""

    def __init__(self, w: Weights, p=2):
        if not isinstance(w, Weights):
            raise ExpressionTypeError(f"norm needs fairmodel.Weights; got {type(w).__name__}")
        if p not in (1, 2, np.inf, "inf"):
            raise ModelError(f"norm order p must be 1, 2 or inf; got {p!r}")
        self.w, self.args, self.p = w, (w,), (np.inf if p == "inf" else p)

    own_curvature = "convex"
    own_smooth = False          # a kink at 0
    sign = "nonneg"

    def get_data(self):
        return (self.p,)

    @property
    def lipschitz(self) -> float:
        """Its Lipschitz constant in the l2 norm of the weights: sqrt(size) for ||.||_1, 1 for ||.||_2 and ||.||_inf."""
        return float(np.sqrt(self.w.size)) if self.p == 1 else 1.0

    def _core(self, theta):
        return theta[:-1] if self.w.intercept else theta

    def _numeric(self, env):
        return float(np.linalg.norm(np.ravel(self._core(env[self.w])), ord=self.p))

    def backprop(self, env, upstream, grads):
        theta = env[self.w]
        core = self._core(theta)
        if self.p == 2:
            nrm = np.linalg.norm(core)
            g = core / nrm if nrm > 0 else np.zeros_like(core)
        elif self.p == 1:
            g = np.sign(core)
        else:
            g = np.zeros_like(core)
            flat = np.abs(core).ravel()
            g.flat[int(np.argmax(flat))] = np.sign(core.flat[int(np.argmax(flat))])
        full = np.zeros_like(theta)
        full[: core.shape[0]] = g
        self.w.backprop(env, upstream * full, grads)

    def render(self, n):
        return n.norm(self.w.render(n), self.p)


def sum_squares(w: Weights, include_intercept: bool = False) -> SumSquares:
    """Squared Euclidean (Frobenius) norm of the weights (intercept excluded by default)."""
    return SumSquares(w, include_intercept)


def norm(w: Weights, p=2) -> Norm:
    """The p-norm of the weights (p in {1, 2, inf}); the intercept is not included."""
    return Norm(w, p)
