"""Strategic classification robust to Wasserstein shifts (WDRSC): the DSL atoms, the agents, and the
corrected convex-concave saddle function shared by the exact program, the stochastic methods and the judge.

Paper: Maheshwari et al., "Zeroth-order methods for convex-concave minmax problems: applications to
decision-dependent risk minimization" (§5, App. B); spec ``zeroth_order_minmax_dro.md`` §4.

Model (spec §4.1-§4.4), with labels y in {-1, +1}, scores z_i = <b_i(theta), theta> and the logistic loss
written in the GLM form ``l(z, y) = phi(z) - c y z`` with ``phi(z) = log(1 + e^z) - z/2``, ``c = 1/2``
(App. C.3; erratum U12: the paper's ``phi(z) - y z`` does not fit the logistic loss), L_phi = 1/2,
smoothness beta = 1/4:

* agents with y = -1 game the strategic features: ``b_i(theta) = x_i + zeta M theta`` (M = diag(mask);
  eq. (8)-(9) with erratum U13), so ``z_i = <x_i, theta> + zeta ||M theta||^2`` (Lemma 5.2, convex);
  agents with y = +1 do not move;
* the ambiguity set is the type-1 Wasserstein ball of radius delta around the shifted empirical
  distribution, transport cost ``||x - x'||_2 + kappa |y - y'|`` (a label flip costs 2 kappa, erratum
  U8), labels flip only for y = +1 (Assumption B.1);
* the corrected saddle function (spec §4.4 item 4; erratum U11 fixes the paper's eq. (7)):

      L(theta, alpha, gamma) = alpha delta + (1/n) sum_{I+} [phi(z_i) - kappa alpha + gamma_i (c z_i - kappa alpha)]
                                           + (1/n) sum_{I-} [phi(z_i) + c z_i]

  over (theta, alpha) in K = {(L_phi + c) ||theta|| <= alpha <= alpha_max} and gamma in [-1, 1]^n;
  the paper's literal eq. (7) is this minus kappa alpha n_-/n with slope 1/(beta + 1), unbounded below
  when delta < kappa n_-/n (``variant="paper"``).
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from . import expressions as E
from .data import Dataset
from .domains import TruncatedCone
from .errors import DataError, ExpressionTypeError, ModelError
from .stochastic.ogda import SaddleOracle

# The logistic loss in GLM form phi(z) - c y z (spec §4.1, `logistic_half`).
C_LABEL = 0.5      # c
L_PHI = 0.5        # Lipschitz constant of phi
BETA = 0.25        # smoothness of phi
VARIANTS = ("corrected", "paper")


def softplus(t):
    """log(1 + e^t), vectorized and overflow-safe."""
    return np.logaddexp(0.0, t)


def loss_pos(z):
    """phi(z) - c z = log(1 + e^{-z}): the loss of a y = +1 point at score z."""
    return softplus(-z)


def loss_neg(z):
    """psi(z) = phi(z) + c z = log(1 + e^{z}): the loss of a y = -1 point (non-decreasing, Thm 5.3)."""
    return softplus(z)


def _softplus1(t: float) -> float:
    # scalar hot paths of the stochastic oracle: math is ~20x faster than a NumPy ufunc on one number
    return max(t, 0.0) + math.log1p(math.exp(-abs(t)))


def _sigmoid1(t: float) -> float:
    if t >= 0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


def binary_labels(y) -> np.ndarray:
    """Labels as a {-1, +1} vector ({0, 1} is mapped to {-1, +1}, as the logistic loss does); else DataError."""
    return E._binary_labels(y, None, "strategic classification")


def strategic_mask(strategic_features, feature_names, p: int) -> np.ndarray:
    """A boolean mask over the p features from names, indices or a boolean mask of length p."""
    if strategic_features is None:
        return np.zeros(p, dtype=bool)
    arr = np.asarray(list(strategic_features) if not isinstance(strategic_features, np.ndarray)
                     else strategic_features)
    if arr.dtype == bool:
        if arr.shape != (p,):
            raise ModelError(f"a boolean mask of strategic features must have one entry per feature ({p}); "
                             f"got length {arr.shape[0] if arr.ndim == 1 else arr.shape}")
        return arr.copy()
    mask = np.zeros(p, dtype=bool)
    for f in arr.tolist():
        if isinstance(f, str):
            if f not in feature_names:
                raise ModelError(f"unknown strategic feature {f!r}; the data's features are "
                                 f"{', '.join(feature_names[:12])}{' ...' if len(feature_names) > 12 else ''}")
            mask[feature_names.index(f)] = True
        elif isinstance(f, (int, np.integer)) and not isinstance(f, bool) and 0 <= f < p:
            mask[int(f)] = True
        else:
            raise ModelError(f"strategic features must be feature names, indices in [0, {p}) or a boolean mask "
                             f"of length {p}; got {f!r}")
    return mask


def _check_nonneg(value, what: str, strict: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ModelError(f"{what} must be a number; got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (strict and value == 0):
        raise ModelError(f"{what} must be {'positive' if strict else 'non-negative'} and finite; got {value}")
    return value


class AgentOracle:
    """Simulated agents: ``respond(i, theta)`` is agent i's best response b_i(theta) (Lemma 5.2).

    The learner only sees the responses (black-box access, spec §4.2); ``zeta`` is private to the agents.
    Agents with y = -1 maximize ``<x, theta> - ||x - x_i||^2 / (2 zeta)`` over x differing from x_i only
    on the strategic features, so ``b_i = x_i + zeta M theta``; agents with y = +1 report x_i. ``queries``
    counts the best responses given.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, mask: np.ndarray, zeta: float):
        self._X, self._neg = X, y < 0
        self._zeta_mask = zeta * mask.astype(float)
        self.queries = 0

    def respond(self, i: int, theta: np.ndarray) -> np.ndarray:
        self.queries += 1
        return self._X[i] + self._zeta_mask * theta if self._neg[i] else self._X[i]

    def respond_all(self, theta: np.ndarray) -> np.ndarray:
        self.queries += self._X.shape[0]
        return self._X + np.outer(self._neg, self._zeta_mask * theta)


def strategic_response(theta, X, y, zeta, mask) -> np.ndarray:
    """The shifted features b_i(theta): y = -1 rows move by zeta M theta, y = +1 rows stay (eq. (9))."""
    theta = np.asarray(theta, dtype=float)
    neg = np.asarray(y) < 0
    return np.asarray(X, dtype=float) + np.outer(neg, zeta * np.asarray(mask, dtype=float) * theta)


# ---------------------------------------------------------------------------------------------------
# The WDRSC saddle function (numpy core shared by the exact program, the oracle and the judge)
# ---------------------------------------------------------------------------------------------------
class WDRSC:
    """The strategic Wasserstein-DRO problem on data (X, y): scores, the saddle function L, its closed-form
    inner maximum (E2), the worst-case risk, and the feasible sets (spec §4.4-§4.7).

    ``alpha_max`` defaults to phi(0) / delta_eff = log(2) / delta_eff with delta_eff = delta (corrected) or
    delta - kappa n_-/n (paper): the objective of (E1) is alpha delta_eff plus terms that are > 0, and its
    value at theta = 0, alpha = 0 is log 2, so every optimum has alpha* < log 2 / delta_eff and the bound
    never binds (the exact backend checks it). A tight bound matters: the duality gap grows with alpha_max.
    """

    def __init__(self, X, y, mask, zeta: float, delta: float, kappa: float, variant: str = "corrected",
                 alpha_max: float | None = None, theta_radius: float | None = None):
        if variant not in VARIANTS:
            raise ModelError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
        self.X = np.asarray(X, dtype=float)
        self.y = binary_labels(y)
        self.n, self.p = self.X.shape
        self.mask = np.asarray(mask, dtype=bool)
        self.zeta = _check_nonneg(zeta, "zeta (the strategic power)", strict=False)
        self.delta = _check_nonneg(delta, "radius (delta, the Wasserstein budget)", strict=True)
        self.kappa = _check_nonneg(kappa, "label_cost (kappa)", strict=True)
        self.variant = variant
        self.pos, self.neg = self.y > 0, self.y < 0
        self.n_pos, self.n_neg = int(self.pos.sum()), int(self.neg.sum())
        self.paper_shift = self.kappa * self.n_neg / self.n if variant == "paper" else 0.0
        delta_eff = self.delta - self.paper_shift
        if delta_eff <= 0:
            raise ModelError(
                f"the paper's literal objective (eq. (7)) is unbounded below here: radius {self.delta:g} <= "
                f"kappa n_-/n = {self.paper_shift:.4g} (erratum U11); use the corrected variant (the default) "
                f"or a radius above {self.paper_shift:.4g}")
        self.slope = 1.0 / (L_PHI + C_LABEL) if variant == "corrected" else 1.0 / (BETA + 1.0)
        if alpha_max is None:
            alpha_max = math.log(2.0) / delta_eff
        self.alpha_max = _check_nonneg(alpha_max, "alpha_max", strict=True)
        self.x_domain = TruncatedCone(self.p, self.slope, self.alpha_max, theta_radius)
        self.agents = AgentOracle(self.X, self.y, self.mask, self.zeta)

    # -- scores -----------------------------------------------------------------------------------------
    def scores(self, theta, zeta: float | None = None) -> np.ndarray:
        """z_i = <b_i(theta), theta> = <x_i, theta> + zeta ||M theta||^2 [y_i = -1] (Lemma 5.2)."""
        zeta = self.zeta if zeta is None else zeta
        z = self.X @ theta
        z[self.neg] += zeta * float(np.sum((theta * self.mask) ** 2))
        return z

    def _parts(self, theta):
        z = self.scores(theta)
        return z, float(np.sum(loss_neg(z[self.neg]))) / self.n

    # -- the saddle function and its inner maximum ------------------------------------------------------
    def value(self, theta, alpha, gamma) -> float:
        """L(theta, alpha, gamma) (spec §4.4 item 4; paper variant: minus kappa alpha n_-/n)."""
        z, neg_term = self._parts(theta)
        zp, gp = z[self.pos], np.asarray(gamma)[self.pos]
        pos_term = np.sum(loss_pos(zp) + C_LABEL * zp - self.kappa * alpha + gp * (C_LABEL * zp - self.kappa * alpha))
        return alpha * (self.delta - self.paper_shift) + float(pos_term) / self.n + neg_term

    def primal(self, theta, alpha) -> float:
        """max_gamma L(theta, alpha, gamma) in closed form (E2): gamma_i = sign(c z_i - kappa alpha)."""
        z, neg_term = self._parts(theta)
        zp = z[self.pos]
        pos_term = np.sum(np.maximum(loss_pos(zp), loss_neg(zp) - 2.0 * self.kappa * alpha))
        return alpha * (self.delta - self.paper_shift) + float(pos_term) / self.n + neg_term

    def alpha_coefficient(self, gamma) -> float:
        """The coefficient of alpha in L(., ., gamma): delta - kappa (n_+ + sum_{I+} gamma_i)/n (- paper shift)."""
        flips = self.n_pos + float(np.sum(np.asarray(gamma)[self.pos]))
        return self.delta - self.paper_shift - self.kappa * flips / self.n

    def worst_case_risk(self, theta) -> tuple[float, float]:
        """(sup over the ambiguity set of the expected loss, the minimizing alpha) at theta (Theorem 5.3).

        min over alpha >= (L_phi + c)||theta|| of E2, a convex piecewise-linear function of alpha:
        f(alpha) = A + s0 alpha + (kappa/n) sum_{I+} |alpha - b_i| with b_i = c z_i / kappa, minimized
        exactly over its breakpoints (sorting and prefix sums, O(n log n)). Corrected variant: no upper
        bound on alpha (alpha_max is an algorithmic device only); paper variant: capped at alpha_max.
        """
        z, neg_term = self._parts(theta)
        zp = z[self.pos]
        lo = float(np.linalg.norm(theta)) / self.slope
        A = float(np.sum(loss_pos(zp) + C_LABEL * zp)) / self.n + neg_term
        s0 = self.delta - self.paper_shift - self.kappa * self.n_pos / self.n
        b = np.sort(C_LABEL * zp / self.kappa)
        hi = self.alpha_max if self.variant == "paper" else np.inf
        cand = np.concatenate([[lo], b[(b > lo) & (b < hi)], [hi] if np.isfinite(hi) and hi > lo else []])
        prefix = np.concatenate([[0.0], np.cumsum(b)])
        k = np.searchsorted(b, cand, side="right")
        abs_sum = cand * k - prefix[k] + (prefix[-1] - prefix[k]) - cand * (b.size - k)
        f = A + s0 * cand + self.kappa * abs_sum / self.n
        j = int(np.argmin(f))
        return float(f[j]), float(cand[j])

    def losses(self, theta, zeta: float | None = None) -> np.ndarray:
        """Per-sample logistic losses log(1 + exp(-y z)) on the strategically shifted data."""
        z = self.scores(theta, zeta)
        return softplus(-self.y * z)


class WDRSCOracle(SaddleOracle):
    """The WDRSC saddle function as n components for the OGDA/SGDA methods (spec §4.5).

    u = (theta, alpha, gamma), d_x = p + 1, y-block gamma in [-1, 1]^n. ``L_i`` depends on gamma only
    through gamma_i. ``zo="theta"`` (the paper's experiments, §2.3): the estimator perturbs theta only,
    alpha and gamma get exact partial derivatives (they do not involve the agents); ``zo="all"``: every
    coordinate (the theory's setting, d = p + 1 + n). Values query the agents' best responses at the
    perturbed theta; the exact theta-gradient of first-order mode uses the response model (it needs zeta).
    """

    def __init__(self, model: WDRSC, zo: str = "theta"):
        if zo not in ("theta", "all"):
            raise ModelError(f"zo must be 'theta' (hybrid, as in the paper's experiments) or 'all'; got {zo!r}")
        self.m = model
        self.n, self.p = model.n, model.p
        self.d_x = self.p + 1
        self.dim = self.p + 1 + self.n
        self.zo = np.arange(self.p) if zo == "theta" else np.arange(self.dim)
        self.full_zo = zo == "all"
        self._pos = model.pos.tolist()
        # alpha coefficients of L_i: delta, minus kappa for y = -1 in the paper variant (spec §4.5)
        self._a_pos = model.delta
        self._a_neg = model.delta - (model.kappa if model.variant == "paper" else 0.0)
        self._zm = model.zeta * model.mask.astype(float)
        self.y_box = (np.full(self.n, -1.0), np.full(self.n, 1.0))

    def value(self, i, u, shift):
        p, m = self.p, self.m
        theta = u[:p] + shift[:p]
        alpha, gamma = u[p], u[p + 1 + i]
        if self.full_zo:
            alpha += shift[p]
            gamma += shift[p + 1 + i]
        z = float(m.agents.respond(i, theta) @ theta)
        if self._pos[i]:
            return (alpha * self._a_pos + _softplus1(-z) + C_LABEL * z - m.kappa * alpha
                    + gamma * (C_LABEL * z - m.kappa * alpha))
        return alpha * self._a_neg + _softplus1(z)

    def gradient(self, i, u, exact_only):
        """(grad_(theta, alpha) L_i, [i], [d L_i / d gamma_i]): L_i touches gamma_i only."""
        p, m = self.p, self.m
        g = np.zeros(self.d_x)
        theta, alpha, gamma = u[:p], u[p], u[p + 1 + i]
        x = m.X[i]
        if self._pos[i]:
            z = float(x @ theta)
            g[p] = self._a_pos - m.kappa * (1.0 + gamma)
            g_gamma = C_LABEL * z - m.kappa * alpha
            if not exact_only:  # d/dz [softplus(-z) + c z + gamma c z] = c (1 + gamma) - sigmoid(-z)
                g[:p] = (C_LABEL * (1.0 + gamma) - _sigmoid1(-z)) * x
        else:
            g[p], g_gamma = self._a_neg, 0.0
            if not exact_only:  # psi'(z) grad z, grad z = x + 2 zeta M theta (needs the response model)
                z = float(x @ theta) + float(self._zm @ (theta * theta))
                g[:p] = _sigmoid1(z) * (x + 2.0 * self._zm * theta)
        return g, np.array([i]), np.array([g_gamma])

    def project_x(self, x):
        return self.m.x_domain.project(x)

    def project_y(self, y):
        return np.clip(y, -1.0, 1.0)


# ---------------------------------------------------------------------------------------------------
# DSL atoms
# ---------------------------------------------------------------------------------------------------
class StrategicScore(E.Expr):
    """Per-sample score <b_i(w), w> on the data shifted by the agents' best response (Lemma 5.2).

    Convex in w: ``x_i . w + zeta ||M w||^2`` for y_i = -1 (M = diag of the strategic-feature mask),
    ``x_i . w`` for y_i = +1.
    """

    kind = "samples"

    def __init__(self, data: Dataset, w: E.Weights, mask: np.ndarray, zeta: float):
        self.data, self.w, self.mask, self.zeta = data, w, mask, zeta
        self.y = binary_labels(data.y)
        self.args = (w,)
        self.size = data.n_samples

    @property
    def curvature(self):
        return "convex" if self.zeta > 0 and self.mask.any() else "affine"

    def _value(self, env):
        theta = env[self.w]
        X = self.data.X if env.rows is None else self.data.X[env.rows]
        y = self.y if env.rows is None else self.y[env.rows]
        return X @ theta + (y < 0) * (self.zeta * float(np.sum((theta * self.mask) ** 2)))

    def backprop(self, env, upstream, grads):
        theta = env[self.w]
        X = self.data.X if env.rows is None else self.data.X[env.rows]
        y = self.y if env.rows is None else self.y[env.rows]
        g = X.T @ upstream + 2.0 * self.zeta * float(np.sum(upstream[y < 0])) * self.mask * theta
        self.w.backprop(env, g, grads)

    def __str__(self):
        return f"<b(x; {self.w}), {self.w}>"


def strategic_score(data: Dataset, w: E.Weights, strategic_features=None, zeta: float = 0.05) -> StrategicScore:
    """The score of ``w`` on the data after the agents' best response (spec §4.2).

    Agents with label -1 move their ``strategic_features`` (names, indices or a boolean mask of length
    ``data.n_features``; none means non-strategic) by ``zeta * w`` restricted to those features, the best
    response to a quadratic cost ||x - x_i||^2 / (2 zeta) (eq. (8)-(9)). Labels come from ``data.y``
    ({-1, +1} or {0, 1}).
    """
    if not isinstance(data, Dataset):
        raise ExpressionTypeError(f"strategic_score needs a fairmodel.Dataset; got {type(data).__name__}")
    if not isinstance(w, E.Weights) or w.n_outputs is not None:
        raise ExpressionTypeError("strategic_score needs a vector of weights fm.Weights(data.n_features)")
    if w.n_features != data.n_features:
        raise ModelError(f"Weights has {w.n_features} features but the data has {data.n_features}")
    if w.intercept:
        raise ModelError("strategic_score does not support an intercept (the Wasserstein transport moves "
                         "features only); center the features or add a constant column instead")
    if data.y is None:
        raise DataError("strategic_score needs labels (data.y): only agents labelled -1 move")
    mask = strategic_mask(strategic_features, list(data.feature_names), data.n_features)
    zeta = _check_nonneg(zeta, "zeta (the strategic power)", strict=False)
    return StrategicScore(data, w, mask, zeta)


class WassersteinWorstCase(E.Expr):
    """sup over P in the Wasserstein ball of radius delta of E_P[loss] (Theorem 5.3, corrected).

    The value is computed exactly at any w: min over alpha of the closed form E2
    (:meth:`WDRSC.worst_case_risk`). Built by :func:`wasserstein_worst_case`.
    """

    def __init__(self, loss: E.LogisticLoss, radius: float, label_cost: float, variant: str,
                 alpha_max: float | None):
        score = loss.score
        self.loss, self.args = loss, (loss,)
        self.w = score.w
        self.data = score.data
        if isinstance(score, StrategicScore):
            mask, zeta = score.mask, score.zeta
        else:
            mask, zeta = np.zeros(self.data.n_features, dtype=bool), 0.0
        if not np.array_equal(loss.y, binary_labels(self.data.y)):
            raise ModelError("the labels of the loss must be the data's labels (data.y): the strategic response "
                             "and the label flips of the ambiguity set depend on them")
        self.model = WDRSC(self.data.X, loss.y, mask, zeta, radius, label_cost, variant, alpha_max,
                           theta_radius=self.w.radius)
        self.radius, self.label_cost, self.variant = self.model.delta, self.model.kappa, variant

    @property
    def curvature(self):
        return "convex"

    def _value(self, env):
        if env.rows is not None:
            raise ModelError("the worst-case risk is defined on the full data only (no minibatch value)")
        return self.model.worst_case_risk(env[self.w])[0]

    def __str__(self):
        return (f"sup_(W(P, D(w)) <= {self.radius:g}, flip cost {2 * self.label_cost:g}) E_P[{self.loss}]"
                + (" [paper's literal eq. (7)]" if self.variant == "paper" else ""))


def wasserstein_worst_case(loss, radius: float = 0.1, label_cost: float = 0.5, *, variant: str = "corrected",
                           alpha_max: float | None = None) -> WassersteinWorstCase:
    """The worst-case expected ``loss`` over a type-1 Wasserstein ball around the (strategically shifted)
    empirical distribution (spec §4.3-§4.4).

    loss : ``fm.logistic_loss(score, data.y)`` with ``score = fm.strategic_score(...)`` or ``data.score(w)``
        (non-strategic DRO). Only the logistic loss has the GLM form phi(z) - c y z with phi + c id
        non-decreasing that Theorem 5.3 needs.
    radius : delta > 0, the transport budget. label_cost : kappa > 0 (flipping a +1 label costs 2 kappa).
    variant : ``"corrected"`` (default) or ``"paper"``, the literal eq. (7), which is unbounded below when
        radius < kappa n_-/n (refused) and warns otherwise (erratum U11).
    alpha_max : the bound on the dual variable alpha (erratum U18); default log(2)/delta, provably above
        the optimum (see :class:`WDRSC`).
    """
    if not isinstance(loss, E.Loss):
        raise ExpressionTypeError(f"wasserstein_worst_case needs a per-sample loss such as fm.logistic_loss(...); "
                                  f"got {loss!r}")
    if not isinstance(loss, E.LogisticLoss):
        raise ModelError(f"wasserstein_worst_case supports the logistic loss only: Theorem 5.3 needs a loss "
                         f"phi(z) - c y z with phi convex, smooth, Lipschitz and phi + c id non-decreasing; "
                         f"{loss.symbol} is not of that form (e.g. the squared loss has psi(z) = z^2/2 + z, not "
                         f"monotone)")
    if not isinstance(loss.score, (StrategicScore, E.LinearScore)):
        raise ModelError(f"the loss must be of fm.strategic_score(...) or data.score(w); got {loss.score}")
    if isinstance(loss.score, E.LinearScore) and loss.score.w.intercept:
        raise ModelError("wasserstein_worst_case does not support an intercept; center the features instead")
    if variant == "paper":
        warnings.warn("variant='paper' implements the paper's literal eq. (7), which subtracts kappa*alpha for "
                      "every sample: it is unbounded below when radius < kappa n_-/n and can fall below the "
                      "nominal risk (erratum U11); the corrected variant is the default", stacklevel=2)
    return WassersteinWorstCase(loss, radius, label_cost, variant, alpha_max)
