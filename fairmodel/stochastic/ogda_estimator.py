"""The gradient estimator of zeroth-order OGDA / SGDA (Maheshwari, Chiu, Mazumdar, Sastry, Ratliff, AISTATS 2022,
Section 4.1 and Prop. A.3): the one-point sphere estimator (d/R) L_i(u + R v) v with the sign flip of the
y-block, the NON-PAPER two-point variant, uniform directions on the sphere, and the automatic constant steps
of :func:`auto_steps`. Used by :func:`fairmodel.stochastic.ogda.ogda`."""
from __future__ import annotations

import math

import numpy as np

from ..errors import OptionError
from ..oracles.protocols import SaddleOracle


def sphere_directions(rng: np.random.Generator, m: int, d: int) -> np.ndarray:
    """m directions uniform on the unit sphere S^{d-1}: Gaussian vectors normalized (Section 4.1)."""
    g = rng.standard_normal((m, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


class NonFiniteValue(ArithmeticError):
    """Raised inside a run when an oracle returns NaN or inf; turned into status ``failed``."""


class Estimator:
    """F_hat_i(u; R, v) for one component: zeroth-order on ``oracle.zo``, exact elsewhere (Section 4.1, Section 6).

    Returns ``(F_x, y_index, F_y)`` with F = J grad L: the y-part is negated (J, see the module) and, as in
    :meth:`SaddleOracle.gradient`, dense (``y_index`` None) or restricted to ``y_index``. ``order=1``
    gives the exact F_i(u) (the first-order variant). Counts value queries and gradient evaluations.
    """

    def __init__(self, oracle: SaddleOracle, order: int, estimator: str):
        self.oracle, self.order, self.two_point = oracle, order, estimator == "two-point"
        self.d_x, self.d_y = oracle.d_x, oracle.dim - oracle.d_x
        self.zo = oracle.zo
        self.d_zo = oracle.zo.shape[0]
        self.zo_x = self.zo[self.zo < self.d_x]
        if np.array_equal(self.zo_x, np.arange(self.zo_x.shape[0])):
            self.zo_x = slice(0, self.zo_x.shape[0])      # the usual case; slicing is cheaper than fancy indexing
        self.zo_y = self.zo[self.zo >= self.d_x] - self.d_x
        self.n_zo_x = int(np.count_nonzero(self.zo < self.d_x))
        self.partial = order == 0 and self.d_zo < oracle.dim
        self.queries = 0
        self.gradients = 0

    def _value(self, i, u, shift):
        val = self.oracle.value(i, u, shift)
        self.queries += 1
        if not math.isfinite(val):
            raise NonFiniteValue(f"the value oracle returned {val} for component {i} at the point "
                                 f"u + shift, u = {np.array2string(u, threshold=12, precision=4)}")
        return val

    def __call__(self, i: int, u: np.ndarray, R: float, v):
        if self.order == 1 or self.partial:
            self.gradients += 1
            gx, yi, gy = self.oracle.gradient(i, u, self.order == 0)
        else:
            gx, yi, gy = np.zeros(self.d_x), None, np.zeros(self.d_y)
        if self.order == 0:
            if self.two_point:
                coef = (self._value(i, u, R * v) - self._value(i, u, -R * v)) * (self.d_zo / (2.0 * R))
            else:
                coef = self._value(i, u, R * v) * (self.d_zo / R)
            gx[self.zo_x] = coef * v[:self.n_zo_x]
            if self.zo_y.shape[0]:
                gy[self.zo_y] = coef * v[self.n_zo_x:]
        return gx, yi, -gy


def auto_steps(oracle: SaddleOracle, order: int, estimator: str, *, method: str, epochs: int, diameter: float,
               rng, probes: int = 64) -> dict:
    """Default constant step and query radius from the problem's own scale (NON-PAPER: the paper reports no
    constants for its experiments; Theorem 4.1 only asks eta0 < 1/(2 ell)).

    * R0 = D/2, D the diameter of X x Y: the ball-smoothing bias of the estimator is at most ell R (Prop. A.3 (11))
      and zero for a bilinear or quadratic L, while its one-point variance (d/R)^2 E[L_i(u + R v)^2] falls as
      R grows; the radius is measured in the units of the domain, not fixed;
    * eta0 = D / (G sqrt(k n T)), G^2 the mean of ||F_hat_i(u0; R0, v)||^2 over ``probes`` random (i, v) at the
      start and k the number of independent estimates in one update (3 for OGDA: F_hat_(s_i)(u_i),
      F_hat_(s_(i-1))(u_i) and F_hat_(s_(i-1))(u_(i-1)); 1 for SGDA): the constant step of robust stochastic approximation for convex-concave saddle problems with an
      averaged output, whose gap bound is of order D G / sqrt(N) after N = n T steps (Nemirovski, Juditsky, Lan,
      Shapiro, SIAM J. Optim. 2009, Section 3).

    Returns {"eta0", "R0", "G", "probe_queries"}; the probes are counted as queries of the run.
    """
    est = Estimator(oracle, order, estimator)
    u = oracle.project(np.zeros(oracle.dim))
    R0 = 0.5 * float(diameter)
    if not math.isfinite(R0) or R0 <= 0:
        raise OptionError("the automatic steps need bounded domains with a positive diameter; pass eta0= and R0=")
    idx = rng.integers(0, oracle.n, size=probes)
    dirs = sphere_directions(rng, probes, est.d_zo) if order == 0 else [None] * probes
    sq = []
    for i, v in zip(idx, dirs):
        gx, yi, gy = est(int(i), u, R0, v)
        sq.append(float(gx @ gx + gy @ gy))
    G = math.sqrt(max(float(np.mean(sq)), 1e-300))
    k = 3 if method.startswith("ogda") else 1
    eta0 = float(diameter) / (G * math.sqrt(k * oracle.n * max(int(epochs), 1)))
    return {"eta0": eta0, "R0": R0, "G": G, "probe_queries": est.queries, "probe_gradients": est.gradients}
