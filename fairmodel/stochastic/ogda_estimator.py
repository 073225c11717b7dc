"""The gradient estimator of zeroth-order OGDA / SGDA (Maheshwari, Chiu, Mazumdar, Sastry, Ratliff, AISTATS 2022,
Section 4.1 and Prop. A.3): the one-point sphere estimator (d/R) L_i(u + R v) v with the sign flip of the
y-block, the NON-PAPER two-point variant, the NON-PAPER variance-reduced estimate, uniform directions on the
sphere, and the automatic constant steps of :func:`auto_steps`. Used by :func:`fairmodel.stochastic.ogda.ogda`."""
from __future__ import annotations

import math

import numpy as np

from ..errors import OptionError
from ..oracles.protocols import SaddleOracle


def sphere_directions(rng: np.random.Generator, m: int, d: int, k: int = 1) -> np.ndarray:
    """m directions uniform on the unit sphere S^{d-1}: Gaussian vectors normalized (Section 4.1); with ``k`` > 1,
    m mini-batches of k independent directions (shape (m, k, d); the same random stream as m k single ones)."""
    g = rng.standard_normal((m * k, d))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return g if k == 1 else g.reshape(m, k, d)


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

    def _values(self, i, u, shifts):
        vals = self.oracle.values(i, u, shifts)
        self.queries += shifts.shape[0]
        if not math.isfinite(vals.sum()) and not np.isfinite(vals).all():   # one reduction in the usual case
            raise NonFiniteValue(f"the value oracle returned {vals[~np.isfinite(vals)][0]} for component {i} at a "
                                 f"point u + shift, u = {np.array2string(u, threshold=12, precision=4)}")
        return vals

    def _coefficient(self, i, u, R, v):
        """d_zo <grad L_i, v> estimated along one direction v: the one- or two-point difference quotient."""
        if self.two_point:
            return (self._value(i, u, R * v) - self._value(i, u, -R * v)) * (self.d_zo / (2.0 * R))
        return self._value(i, u, R * v) * (self.d_zo / R)

    def coefficients(self, i, u, R, V) -> np.ndarray:
        """The difference quotients of :meth:`_coefficient` along each row of V, in one vectorized oracle call."""
        if self.two_point:
            RV = R * V
            values = self._values(i, u, np.concatenate((RV, -RV)))
            k = V.shape[0]
            return (values[:k] - values[k:]) * (self.d_zo / (2.0 * R))
        return self._values(i, u, R * V) * (self.d_zo / R)

    def _zo_estimate(self, i, u, R, v) -> np.ndarray:
        """The estimate of the zo-part of grad L_i: coef v for one direction v (shape (d_zo,)), the mean of coef_j
        v_j over the rows of v for a mini-batch of directions (shape (k, d_zo))."""
        if v.ndim == 1:
            return self._coefficient(i, u, R, v) * v
        return (self.coefficients(i, u, R, v) @ v) / v.shape[0]

    def __call__(self, i: int, u: np.ndarray, R: float, v):
        if self.order == 1 or self.partial:
            self.gradients += 1
            gx, yi, gy = self.oracle.gradient(i, u, self.order == 0)
        else:
            gx, yi, gy = np.zeros(self.d_x), None, np.zeros(self.d_y)
        if self.order == 0:
            self._place(self._zo_estimate(i, u, R, v), gx, gy)
        return gx, yi, -gy

    def _place(self, g: np.ndarray, gx: np.ndarray, gy: np.ndarray) -> None:
        """Write the zo-part ``g`` of a gradient into its x- and y-coordinates."""
        gx[self.zo_x] = g[:self.n_zo_x]
        if self.zo_y.shape[0]:
            gy[self.zo_y] = g[self.n_zo_x:]

    def coordinate_gradient(self, i: int, u: np.ndarray, h: float):
        """F_i(u) at order 0 without a random direction: central differences of L_i along each zo coordinate axis with
        the step h (2 d_zo queries in one call of ``oracle.values``; error O(ell_3 h^2)), exact partial gradients
        elsewhere. Returns ``(F_x, y_index, F_y)`` as :meth:`__call__` does."""
        if self.partial:
            self.gradients += 1
            gx, yi, gy = self.oracle.gradient(i, u, True)
        else:
            gx, yi, gy = np.zeros(self.d_x), None, np.zeros(self.d_y)
        axes = h * np.eye(self.d_zo)
        values = self._values(i, u, np.concatenate((axes, -axes)))
        self._place((values[:self.d_zo] - values[self.d_zo:]) / (2.0 * h), gx, gy)
        return gx, yi, -gy


def mean_operator(est: Estimator, u: np.ndarray, h: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """F_bar(u) = (1/n) sum_i F_i(u), the x- and y-parts (dense), from one pass of ``est`` over the n components (at
    order 0, by central differences along the coordinate axes with the step ``h``)."""
    fx, fy = np.zeros(est.d_x), np.zeros(est.d_y)
    for i in range(est.oracle.n):
        gx, yi, gy = est(i, u, 0.0, None) if est.order == 1 else est.coordinate_gradient(i, u, h)
        fx += gx
        fy += _dense(yi, gy, est.d_y)
    return fx / est.oracle.n, fy / est.oracle.n


class SnapshotEstimate:
    """The variance-reduced estimate F_i(u) - F_i(w) + F_bar(w) of F_bar(u) (NON-PAPER), w the snapshot: the estimator
    of SVRG (Johnson and Zhang, NeurIPS 2013) as the variance-reduced extragradient method carries it to monotone
    operators (Chavdarova, Gidel, Fleuret, Lacoste-Julien, NeurIPS 2019; Alacaoglu and Malitsky, COLT 2022, whose
    convergence proof for merely monotone problems also pulls the iterate toward w). Unbiased like F_i(u); its variance,
    at most ell^2 ||u - w||^2, vanishes as u and w approach a saddle point, so a constant step reaches a small duality
    gap where the plain estimate stops at its noise floor unless its steps shrink like 1/sqrt(t). :meth:`reset` takes a
    snapshot (one pass: n gradients); each estimate costs one more, at w. The y-part is dense (F_bar has every
    coordinate).

    At order 0 (zeroth-order SVRG with coordinate-wise estimates of the snapshot's mean: Liu, Kailkhura, Chen, Ting,
    Chang, Amini, NeurIPS 2018) F_bar(w) comes from central differences along the coordinate axes (2 d_zo queries a
    component) and F_i(w) from the estimator along the same direction v and radius R as F_i(u), so that the
    direction's noise cancels where u is near w: the estimate's variance is then about (d_zo / k) ell^2 ||u - w||^2
    with k directions an estimate."""

    def __init__(self, est: Estimator):
        self.est, self.w, self.mean = est, None, None

    def reset(self, u: np.ndarray, h: float = 0.0) -> None:
        """Take the snapshot w = u (``h``: the step of the coordinate differences at order 0)."""
        self.w = u.copy()
        self.mean = mean_operator(self.est, self.w, h)

    def __call__(self, i: int, g_u, R: float = 0.0, v=None) -> tuple:
        """The estimate at u of component i, from ``g_u`` = F_i(u) as the estimator returned it along the direction v
        with the radius R (order 0)."""
        gx, yi, gy = self.est(i, self.w, R, v)
        d_y = self.est.d_y
        return g_u[0] - gx + self.mean[0], None, _dense(g_u[1], g_u[2], d_y) - _dense(yi, gy, d_y) + self.mean[1]


FD_RADIUS = float(np.finfo(float).eps) ** (1.0 / 3.0)   # the two-point query radius, in units of the one-point's
CHOICE_BATCH = 128      # the directions of each of the two estimates a probe of the choice takes (at most d_zo)


def choose_estimator(oracle: SaddleOracle, rng, R0: float, probes: int = 64) -> dict:
    """The zeroth-order estimator of a run, from the noise that probes at the start u0 measure (NON-PAPER: the paper
    uses the one-point estimator and reports no constants; an explicit ``estimator=`` keeps it).

    * Both estimators along one direction: the one-point at the radius R0 of the caller, the two-point central
      difference at the radius FD_RADIUS R0 (the cube root of the machine epsilon in the caller's units: the step of a
      central difference that balances its truncation and rounding errors, Nocedal and Wright, Numerical
      Optimization, 2006, Section 8.1). A small radius costs the two-point estimator nothing: its second moment stays
      bounded as the smoothing radius goes to 0, E ||g||^2 <= 2 (d + 4) ||grad f||^2 + O(mu^2), and its bias, of order
      mu, vanishes with it (Nesterov and Spokoiny, Found. Comput. Math. 2017, Theorem 4 and Lemma 3), where the
      one-point estimate (d/R) L_i(u + R v) v grows like 1/R.
    * The one-point estimator is kept when its variance per query is at most the two-point's (which takes two
      queries): the error of robust stochastic approximation after N estimates is of order sigma D / sqrt(N).
    * Otherwise the two-point estimator with a mini-batch of k directions: the variance of one estimate is
      c + D_dir / k, with c the spread of the components' own gradients (what exact gradients would have) and
      D_dir the variance the random direction adds. c is measured as the mean inner product of two independent
      mini-batch estimates of the same component, around the mean (their direction errors are independent, so
      the product is unbiased for c), and c + D_dir as the variance of the one-direction estimates.
      k = (c + D_dir) / c (at most d_zo; c taken at least (c + D_dir) / d_zo) makes the noise below sqrt(2) times
      that of exact gradients: the steps,
      D / (sigma sqrt(k n)), are then those of a first-order run, for 2k queries per estimate, which one
      vectorized call of ``oracle.values`` answers.

    Returns {"estimator", "directions", "R0", "noise_one_point", "noise_two_point", "component_noise",
    "probe_queries"} (the noises are root-mean-square deviations of one estimate of the zo-part)."""
    u = oracle.project(np.zeros(oracle.dim))
    one, two = Estimator(oracle, 0, "one-point"), Estimator(oracle, 0, "two-point")
    d, R2 = one.d_zo, FD_RADIUS * R0
    K = min(d, CHOICE_BATCH)
    idx = rng.integers(0, oracle.n, size=probes)
    V1 = sphere_directions(rng, probes, d)
    g1 = np.array([one.coefficients(int(i), u, R0, v[None])[0] * v for i, v in zip(idx, V1)])
    V2 = sphere_directions(rng, 2 * probes * K, d).reshape(probes, 2, K, d)
    single, pairs = [], []
    for i, (va, vb) in zip(idx, V2):
        ca, cb = two.coefficients(int(i), u, R2, va), two.coefficients(int(i), u, R2, vb)
        single.append(ca[:, None] * va)
        pairs.append((ca @ va / K, cb @ vb / K))
    single = np.concatenate(single)
    mean = single.mean(axis=0)
    var_one, var_two = _variance(g1), _variance(single)
    a, b = (np.array(e) - mean for e in zip(*pairs))
    component = max(float(np.mean(np.sum(a * b, axis=1))), var_two / d)
    out = {"noise_one_point": math.sqrt(var_one), "noise_two_point": math.sqrt(var_two),
           "component_noise": math.sqrt(component), "probe_queries": one.queries + two.queries}
    if var_one <= 2.0 * var_two:
        return {"estimator": "one-point", "directions": 1, "R0": R0, **out}
    k = min(d, math.ceil(var_two / component))
    return {"estimator": "two-point", "directions": k, "R0": R2, **out}


def _variance(F: np.ndarray) -> float:
    """The mean squared deviation of the rows of F from their mean (unbiased)."""
    m = F.shape[0]
    return float(np.mean(np.sum((F - F.mean(axis=0)) ** 2, axis=1))) * m / max(m - 1, 1)


def auto_steps(oracle: SaddleOracle, order: int, estimator: str, *, method: str, epochs: int | None, diameter: float,
               rng, probes: int = 64, smoothness: bool = False, R0: float | None = None, x_only: bool = False,
               directions: int = 1) -> dict:
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
      Corollary 1), and ``smoothness=True`` (from gradients, or at order 0 from coordinate differences of the values)
      eta_max = 1/(2 ell_hat), Theorem 4.1's
      hypothesis, with ell_hat the largest |eigenvalue| of the Hessian of a few components L_i at two points
      (power iteration on finite differences of the gradient; exact for bilinear and quadratic L). Without noise
      (one component, exact gradients) the step is the constant 1/(2 ell_hat) (``schedule`` "constant").

    ``R0`` given: that radius instead of D/2; ``directions``: the mini-batch of directions of each estimate;
    ``x_only``: G and sigma of the x-block only (D then the diameter of X:
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
        dirs = sphere_directions(rng, m, est.d_zo, directions) if order == 0 else [None] * m
        F = np.array([gx if x_only else np.concatenate([gx, _dense(yi, gy, est.d_y)]) for gx, yi, gy in
                      (est(int(i), point, R0, v) for i, v in zip(idx, dirs))])
        sq.append(np.mean(np.sum(F * F, axis=1)))
        noise.append(_variance(F))
        noise_x.append(_variance(F[:, :oracle.d_x]))
    G, sigma = math.sqrt(max(float(np.mean(sq)), 1e-300)), math.sqrt(float(np.mean(noise)))
    k = 3 if method.startswith("ogda") else 1
    n = oracle.n
    ell = _smoothness(oracle, points[:2], rng, float(diameter), None if order == 1 else est) if smoothness else None
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


def _gradient(oracle: SaddleOracle, i: int, u: np.ndarray, est: Estimator | None = None, h: float = 0.0) -> np.ndarray:
    """grad L_i(u) from the oracle, or (``est`` at order 0) by central differences along the axes with the step h."""
    gx, yi, gy = oracle.gradient(i, u, False) if est is None else est.coordinate_gradient(i, u, h)
    gy = _dense(yi, gy, oracle.dim - oracle.d_x)
    return np.concatenate([gx, gy if est is None else -gy])      # the estimator's y-part is F's: -grad_y L


def _smoothness(oracle: SaddleOracle, points, rng, diameter: float, est: Estimator | None = None, components: int = 4,
                iterations: int = 10) -> float:
    """ell_hat: the largest |eigenvalue| of the Hessian of L_i, by power iteration on (grad L_i(u + h v) -
    grad L_i(u)) / h, for a few components i at each point (the Hessian of L is symmetric, so this is its
    spectral norm, the smoothness constant of Assumption 3.1 there), along the directions a move inside X x Y can
    take (``oracle.tangent``: on a simplex, a constant added to every payoff changes the Hessian by c 1 1' but not L on
    the simplex, and would shrink the steps by c sqrt(m k) for nothing). Without gradients (``est`` at order 0) the
    gradients are central differences along the axes with the two-point step FD_RADIUS D / 2, and h is 1e-4 D instead
    of 1e-6 D (their rounding error, of order eps |L| / (FD_RADIUS D), is divided by h)."""
    h = (1e-6 if est is None else 1e-4) * max(diameter, 1e-12)
    step = FD_RADIUS * 0.5 * max(diameter, 1e-12)
    ell = 0.0
    for u in points:
        for i in rng.choice(oracle.n, size=min(components, oracle.n), replace=False):
            g0 = _gradient(oracle, int(i), u, est, step)
            v = oracle.tangent(rng.standard_normal(oracle.dim))
            if not np.linalg.norm(v) > 0:       # a set with no direction to move in (a point)
                continue
            v /= np.linalg.norm(v)
            norm = 0.0
            for _ in range(iterations):
                hv = oracle.tangent((_gradient(oracle, int(i), u + h * v, est, step) - g0) / h)
                norm = float(np.linalg.norm(hv))
                if not math.isfinite(norm) or norm <= 1e-300:
                    break
                v = hv / norm
            if math.isfinite(norm):
                ell = max(ell, norm)
    return ell
