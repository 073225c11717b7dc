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


def auto_steps(oracle: SaddleOracle, order: int, estimator: str, *, method: str, epochs: int | None, diameter: float,
               rng, probes: int = 64, smoothness: bool = False, R0: float | None = None, x_only: bool = False) -> dict:
    """Default steps and query radius from the problem's own constants (NON-PAPER: the paper reports no constants
    for its experiments; Theorem 4.1 only asks eta0 < 1/(2 ell)).

    * R0 = D/2, D the diameter of X x Y: the ball-smoothing bias of the estimator is at most ell R (Prop. A.3 (11))
      and zero for a bilinear or quadratic L, while its one-point variance (d/R)^2 E[L_i(u + R v)^2] falls as
      R grows; the radius is measured in the units of the domain, not fixed;
    * G^2, the mean of ||F_hat_i(u; R0, v)||^2, and sigma^2, the mean of ||F_hat_i(u; R0, v) - F_bar(u)||^2 (the
      noise of one estimate around the mean of the estimates at the same point), over ``probes`` random (i, v)
      at the start u0 (and, for ``epochs=None``, spread over u0 and three points of the domain around it); k the number of independent estimates in one
      update (3 for OGDA: F_hat_(s_i)(u_i), F_hat_(s_(i-1))(u_i) and F_hat_(s_(i-1))(u_(i-1)); 1 for SGDA);
    * ``epochs`` T given (a fixed budget): the constant step eta0 = D / (G sqrt(k n T)) of robust stochastic
      approximation for convex-concave saddle problems with an averaged output, whose gap bound is of order
      D G / sqrt(N) after N = n T steps (Nemirovski, Juditsky, Lan, Shapiro, SIAM J. Optim. 2009, Section 3);
    * ``epochs=None`` (a run that stops on its certificate, schedule ``"anytime"``): eta_t = min(eta_max,
      eta0 / sqrt(t + 1)) with eta0 = D / (sigma sqrt(k n)), the same step for a run of t + 1 epochs with the noise
      sigma in place of G (stochastic mirror-prox: error ell D^2 / N + sigma D / sqrt(N) with the step
      min(1/(sqrt(3) ell), D / (sigma sqrt(N))), Juditsky, Nemirovski, Tauvel, Stochastic Systems 2011,
      Corollary 1), and ``smoothness=True`` (gradients available) eta_max = 1/(2 ell_hat), Theorem 4.1's
      hypothesis, with ell_hat the largest |eigenvalue| of the Hessian of a few components L_i at two points
      (power iteration on finite differences of the gradient; exact for bilinear and quadratic L). Without noise
      (one component, exact gradients) the step is the constant 1/(2 ell_hat) (``schedule`` "constant").

    ``R0`` given: that radius instead of D/2; ``x_only``: G and sigma of the x-block only (D then the diameter of X:
    a y-block with a step of its own, ``y_step_scale``).

    Returns {"eta0", "R0", "G", "sigma", "schedule", "sigma_x" (the x-block's noise, for ogda's ``noise=``), "ell",
    "eta_max",
    "probe_queries", "probe_gradients"} (``ell`` and
    ``eta_max`` None when not measured); the probes are not counted as queries of the run.
    """
    est = Estimator(oracle, order, estimator)
    u = oracle.project(np.zeros(oracle.dim))
    R0 = 0.5 * float(diameter) if R0 is None else float(R0)
    if not math.isfinite(R0) or R0 <= 0 or not math.isfinite(float(diameter)):
        raise OptionError("the automatic steps need bounded domains with a positive diameter; pass eta0= and R0=")
    points = [u]
    if epochs is None:   # the noise of the estimates, measured around the start as well
        points += [oracle.project(u + R0 * v) for v in sphere_directions(rng, 3, oracle.dim)]
    sq, noise, noise_x = [], [], []
    for j, point in enumerate(points):
        m = probes // len(points)
        idx = rng.integers(0, oracle.n, size=m)
        dirs = sphere_directions(rng, m, est.d_zo) if order == 0 else [None] * m
        F = np.array([gx if x_only else np.concatenate([gx, _dense(yi, gy, est.d_y)]) for gx, yi, gy in
                      (est(int(i), point, R0, v) for i, v in zip(idx, dirs))])
        sq.append(np.mean(np.sum(F * F, axis=1)))
        noise.append(np.mean(np.sum((F - F.mean(axis=0)) ** 2, axis=1)) * m / max(m - 1, 1))
        Fx = F[:, :oracle.d_x]
        noise_x.append(np.mean(np.sum((Fx - Fx.mean(axis=0)) ** 2, axis=1)) * m / max(m - 1, 1))
    G, sigma = math.sqrt(max(float(np.mean(sq)), 1e-300)), math.sqrt(float(np.mean(noise)))
    k = 3 if method.startswith("ogda") else 1
    n = oracle.n
    ell = _smoothness(oracle, points[:2], rng, float(diameter)) if smoothness else None
    eta_max = 0.5 / ell if ell is not None and ell > 0 else None
    schedule = "constant" if epochs is not None else "anytime"
    if epochs is not None:
        eta0 = float(diameter) / (G * math.sqrt(k * n * max(int(epochs), 1)))
    elif sigma > 1e-12 * G:
        eta0 = float(diameter) / (sigma * math.sqrt(k * n))
    elif eta_max is not None:   # no noise: the constant step of the smoothness
        eta0, schedule = eta_max, "constant"
    else:                       # no noise and no curvature (L linear): robust approximation's decreasing step
        eta0 = float(diameter) / (G * math.sqrt(k * n))
    return {"eta0": eta0, "R0": R0, "G": G, "sigma": sigma, "schedule": schedule, "sigma_x": math.sqrt(float(np.mean(noise_x))),
            "ell": ell, "eta_max": eta_max,
            "probe_queries": est.queries, "probe_gradients": est.gradients}


def _dense(y_index, g_y, d_y: int) -> np.ndarray:
    if y_index is None:
        return np.asarray(g_y, dtype=float)
    out = np.zeros(d_y)
    np.add.at(out, y_index, g_y)
    return out


def _gradient(oracle: SaddleOracle, i: int, u: np.ndarray) -> np.ndarray:
    gx, yi, gy = oracle.gradient(i, u, False)
    return np.concatenate([gx, _dense(yi, gy, oracle.dim - oracle.d_x)])


def _smoothness(oracle: SaddleOracle, points, rng, diameter: float, components: int = 4, iterations: int = 10) -> float:
    """ell_hat: the largest |eigenvalue| of the Hessian of L_i, by power iteration on (grad L_i(u + h v) -
    grad L_i(u)) / h, for a few components i at each point (the Hessian of L is symmetric, so this is its
    spectral norm, the smoothness constant of Assumption 3.1 there)."""
    h = 1e-6 * max(diameter, 1e-12)
    ell = 0.0
    for u in points:
        for i in rng.choice(oracle.n, size=min(components, oracle.n), replace=False):
            g0 = _gradient(oracle, int(i), u)
            v = rng.standard_normal(oracle.dim)
            v /= np.linalg.norm(v)
            norm = 0.0
            for _ in range(iterations):
                hv = (_gradient(oracle, int(i), u + h * v) - g0) / h
                norm = float(np.linalg.norm(hv))
                if not math.isfinite(norm) or norm <= 1e-300:
                    break
                v = hv / norm
            if math.isfinite(norm):
                ell = max(ell, norm)
    return ell
