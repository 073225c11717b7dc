"""Strategic classification robust to Wasserstein shifts (WDRSC): the strategic score, the agents, and the
corrected convex-concave saddle function shared by the atoms, the exact program, the stochastic methods and the
judge.

Paper: Maheshwari et al., "Zeroth-order methods for convex-concave minmax problems: applications to
decision-dependent risk minimization" (§5, App. B), AISTATS 2022.

Model (the paper's §5, corrected where noted), with labels y in {-1, +1}, scores z_i = <b_i(theta), theta> and
the logistic loss written in the GLM form ``l(z, y) = phi(z) - c y z`` with ``phi(z) = log(1 + e^z) - z/2``,
``c = 1/2`` (App. C.3; the paper's GLM form ``phi(z) - y z`` does not fit its logistic loss, hence the label
coefficient c), L_phi = 1/2, smoothness beta = 1/4:

* agents with y = -1 game the strategic features: ``b_i(theta) = x_i + zeta M theta`` (M = diag(mask);
  eq. (8)-(9) write ``x_i + zeta theta`` while the text calls only the first five features strategic), so
  ``z_i = <x_i, theta> + zeta ||M theta||^2`` (Lemma 5.2, convex); agents with y = +1 do not move;
* the ambiguity set is the type-1 Wasserstein ball of radius delta around the shifted empirical
  distribution, transport cost ``||x - x'||_2 + kappa |y - y'|`` (a label flip costs 2 kappa; the paper
  prints a squared norm, but its derivation uses this cost), labels flip only for y = +1 (Assumption B.1);
* the corrected saddle function (from the proof of Theorem 5.3; the paper's eq. (7) subtracts kappa alpha for
  every sample, the proof's dual variables s_i only for y = +1):

      L(theta, alpha, gamma) = alpha delta + (1/n) sum_{I+} [phi(z_i) - kappa alpha + gamma_i (c z_i - kappa alpha)]
                                           + (1/n) sum_{I-} [phi(z_i) + c z_i]

  over (theta, alpha) in K = {(L_phi + c) ||theta|| <= alpha <= alpha_max} and gamma in [-1, 1]^n;
  the paper's literal eq. (7) is this minus kappa alpha n_-/n with slope 1/(beta + 1), unbounded below
  when delta < kappa n_-/n (``variant="paper"``).
"""
from __future__ import annotations

import math

import numpy as np

from scipy.special import expit

from ..data.dask_dataset import concatenate_rows
from ..data.dask_sampler import DEFAULT_BUFFER_BYTES
from ..data.passes import row_parts, row_sums
from ..errors import ModelError
from ..utilities.validate import check_number
from .domains import TruncatedCone
from .losses import binary_labels as _binary_labels
from .losses import softplus
from .protocols import SaddleOracle

# The logistic loss in GLM form phi(z) - c y z (App. C.3).
C_LABEL = 0.5      # c
L_PHI = 0.5        # Lipschitz constant of phi
BETA = 0.25        # smoothness of phi
VARIANTS = ("corrected", "paper")


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
    return _binary_labels(y, None, "strategic classification")


def strategic_mask(strategic_features, feature_names, p: int) -> np.ndarray:
    """A boolean mask over the p features from names, indices or a boolean mask of length p."""
    if strategic_features is None:
        return np.zeros(p, dtype=bool)
    if isinstance(strategic_features, (str, bytes)) or not hasattr(strategic_features, "__iter__"):
        strategic_features = [strategic_features]          # one feature (checked below like any entry)
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
    return check_number(value, what, low=0.0, strict=strict, error=ModelError)


class AgentOracle:
    """Simulated agents: ``respond(i, theta)`` is agent i's best response b_i(theta) (Lemma 5.2).

    The learner only sees the responses (black-box access, §5.2 of the paper); ``zeta`` is private to the agents.
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

    def scores_many(self, i: int, thetas: np.ndarray) -> np.ndarray:
        """The scores <b_i(theta), theta> of agent i's best responses to each row theta of ``thetas`` (one query
        each): <x_i, theta> + zeta ||M theta||^2 for y = -1, <x_i, theta> for y = +1 (Lemma 5.2)."""
        self.queries += thetas.shape[0]
        z = thetas @ self._X[i]
        return z + (thetas * thetas) @ self._zeta_mask if self._neg[i] else z

    def respond_all(self, theta: np.ndarray) -> np.ndarray:
        self.queries += self._X.shape[0]
        return self._X + np.outer(self._neg, self._zeta_mask * theta)


# ---------------------------------------------------------------------------------------------------
# Rows in chunks: the features of a Dask-backed Dataset as the numerics below use a matrix
# ---------------------------------------------------------------------------------------------------
class _Product:
    """One chunk's scores X theta (a per-chunk function of a pass)."""

    def __init__(self, theta):
        self.theta = theta

    def __call__(self, batch):
        return batch.X @ self.theta


def _second_moments(batch, mass):
    """One chunk's sum_i p_i x_i^2, per column."""
    return mass @ (batch.X * batch.X)


def _second_moment(batch, mass):
    """One chunk's sum_i p_i x_i x_i' (p x p)."""
    return (batch.X.T * mass) @ batch.X


class ChunkedRows:
    """The features of a chunked data source (a Dask-backed Dataset), never all in memory, as the strategic numerics
    use a matrix: ``X @ theta`` is one pass (the last product is kept, since the judge asks for it at one theta
    several times), ``X[i]`` a row of the coming epoch's components gathered a block of ``buffer_bytes`` at a time
    (:meth:`prepare`, called by the stochastic methods at every epoch) or, for any other row, on demand;
    :meth:`second_moments` one pass."""

    is_chunked = True
    RECENT = 4              # rows kept after use (the optimistic step asks again for the previous component's row)

    def __init__(self, data, buffer_bytes: int = DEFAULT_BUFFER_BYTES):
        self.data = data
        self.shape = (data.n_samples, data.n_features)
        self.block = max(1, int(buffer_bytes) // (8 * data.n_features))
        self._product = None
        self._order, self._next, self._keys, self._rows, self._recent = None, 0, None, None, {}
        self.gathers = 0

    def __matmul__(self, theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        if self._product is None or not np.array_equal(self._product[0], theta):
            self._product = (theta.copy(), concatenate_rows(row_parts(self.data, _Product(theta))))
        return self._product[1]

    def second_moments(self, mass, full: bool = False) -> np.ndarray:
        return row_sums(self.data, _second_moment if full else _second_moments, mass)

    def prepare(self, order) -> None:
        """The components of the coming epoch, in order: their rows are gathered a block at a time as they come."""
        self._order, self._next, self._keys, self._rows = order, 0, None, None

    def __getitem__(self, i) -> np.ndarray:
        i = int(i)
        row = self._recent.get(i)
        if row is not None:
            return row
        if self._keys is not None:
            k = int(self._keys.searchsorted(i))
            if k < self._keys.size and self._keys[k] == i:
                row = self._rows[k]
        if row is None and self._order is not None and self._next < self._order.size:
            keys = np.unique(self._order[self._next:self._next + self.block])
            k = int(keys.searchsorted(i))
            if k < keys.size and keys[k] == i:       # the first row of the next block: gather the block
                self._keys, self._rows = None, None
                self._keys, self._rows = keys, self.data.rows(keys)
                self._next += self.block
                self.gathers += 1
                row = self._rows[k]
        if row is None:                              # a row outside the epoch's order (e.g. the step-size probes)
            row = self.data.rows(np.array([i]))[0]
            self.gathers += 1
        self._recent[i] = row
        if len(self._recent) > self.RECENT:
            self._recent.pop(next(iter(self._recent)))
        return row


def second_moments(X, mass, full: bool = False) -> np.ndarray:
    """sum_i p_i x_i^2 of every column (the mean squares of the features under the masses p); ``full``: the matrix
    sum_i p_i x_i x_i'."""
    if isinstance(X, ChunkedRows):
        return X.second_moments(mass, full)
    return (X.T * mass) @ X if full else mass @ (X * X)


def strategic_scores(theta, X, negative, zeta: float, mask) -> np.ndarray:
    """z_i = <b_i(theta), theta> = x_i . theta + zeta ||M theta||^2 [y_i = -1] (Lemma 5.2): the score of the
    linear model on the data after the agents' best response; ``negative`` marks the agents labelled -1."""
    theta = np.asarray(theta, dtype=float)
    return X @ theta + np.asarray(negative, dtype=float) * (zeta * float(np.sum((theta * mask) ** 2)))


def strategic_scores_vjp(theta, X, negative, zeta: float, mask, upstream) -> np.ndarray:
    """d/dtheta of sum_i upstream_i z_i(theta) for the scores of :func:`strategic_scores`."""
    return X.T @ upstream + 2.0 * zeta * float(np.sum(upstream[negative])) * mask * theta


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
    inner maximum (E2), the worst-case risk, and the feasible sets (Theorem 5.3, corrected).

    ``alpha_max`` defaults to phi(0) / delta_eff = log(2) / delta_eff with delta_eff = delta (corrected) or
    delta - kappa n_-/n (paper): the objective of (E1) is alpha delta_eff plus terms that are > 0, and its
    value at theta = 0, alpha = 0 is log 2, so every optimum has alpha* < log 2 / delta_eff and the bound
    never binds (the exact backend checks it). A tight bound matters: the duality gap grows with alpha_max.

    ``sample_weight`` (w_i >= 0, not all zero): the reference measure of the ambiguity set is the weighted
    empirical distribution, mass ``p_i = w_i / sum_j w_j`` on row i (default 1/n), so every (1/n) sum_i of the
    theorem becomes sum_i p_i; integer weights are repeated rows, a zero weight removes the row.
    """

    def __init__(self, X, y, mask, zeta: float, delta: float, kappa: float, variant: str = "corrected",
                 alpha_max: float | None = None, theta_radius: float | None = None, sample_weight=None):
        if variant not in VARIANTS:
            raise ModelError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
        if getattr(X, "is_chunked", False) and not isinstance(X, ChunkedRows):
            X = ChunkedRows(X)                      # a Dask-backed Dataset: the features stay in their chunks
        self.chunked = isinstance(X, ChunkedRows)
        self.X = X if self.chunked else np.asarray(X, dtype=float)
        self.y = binary_labels(y)
        self.n, self.p = self.X.shape
        self.mask = np.asarray(mask, dtype=bool)
        self.zeta = _check_nonneg(zeta, "zeta (the strategic power)", strict=False)
        self.delta = _check_nonneg(delta, "radius (delta, the Wasserstein budget)", strict=True)
        self.kappa = _check_nonneg(kappa, "label_cost (kappa)", strict=True)
        self.variant = variant
        self.pos, self.neg = self.y > 0, self.y < 0
        self.n_pos, self.n_neg = int(self.pos.sum()), int(self.neg.sum())
        if sample_weight is None:
            self.mass = np.full(self.n, 1.0 / self.n)
        else:
            w = np.asarray(sample_weight, dtype=float)
            self.mass = w / w.sum()
        self.weighted = sample_weight is not None
        self.mass_pos, self.mass_neg = self.mass[self.pos], self.mass[self.neg]
        self.paper_shift = self.kappa * float(self.mass_neg.sum()) if variant == "paper" else 0.0
        delta_eff = self.delta - self.paper_shift
        if delta_eff <= 0:
            raise ModelError(
                f"the paper's literal objective (eq. (7)) is unbounded below here: radius {self.delta:g} <= "
                f"kappa n_-/n = {self.paper_shift:.4g} (its eq. (7) subtracts kappa alpha for every sample, not only "
                f"for y = +1); use the corrected variant (the default) or a radius above {self.paper_shift:.4g}")
        self.slope = 1.0 / (L_PHI + C_LABEL) if variant == "corrected" else 1.0 / (BETA + 1.0)
        if alpha_max is None:
            alpha_max = math.log(2.0) / delta_eff
        self.alpha_max = _check_nonneg(alpha_max, "alpha_max", strict=True)
        self.x_domain = TruncatedCone(self.p, self.slope, self.alpha_max, theta_radius)
        self.agents = AgentOracle(self.X, self.y, self.mask, self.zeta)

    # -- scores -----------------------------------------------------------------------------------------
    def second_moments(self, full: bool = False) -> np.ndarray:
        """sum_i p_i x_i^2 of every feature, or with ``full`` the matrix sum_i p_i x_i x_i' (one pass on chunked
        rows)."""
        return second_moments(self.X, self.mass, full)

    def scores(self, theta, zeta: float | None = None) -> np.ndarray:
        """z_i = <b_i(theta), theta> = <x_i, theta> + zeta ||M theta||^2 [y_i = -1] (Lemma 5.2)."""
        return strategic_scores(theta, self.X, self.neg, self.zeta if zeta is None else zeta, self.mask)

    def _parts(self, theta):
        z = self.scores(theta)
        return z, float(self.mass_neg @ loss_neg(z[self.neg]))

    # -- the saddle function and its inner maximum ------------------------------------------------------
    def value(self, theta, alpha, gamma) -> float:
        """L(theta, alpha, gamma) (corrected; paper variant: minus kappa alpha n_-/n)."""
        z, neg_term = self._parts(theta)
        zp, gp = z[self.pos], np.asarray(gamma)[self.pos]
        pos_term = self.mass_pos @ (loss_pos(zp) + C_LABEL * zp - self.kappa * alpha
                                    + gp * (C_LABEL * zp - self.kappa * alpha))
        return alpha * (self.delta - self.paper_shift) + float(pos_term) + neg_term

    def primal(self, theta, alpha) -> float:
        """max_gamma L(theta, alpha, gamma) in closed form (E2): gamma_i = sign(c z_i - kappa alpha)."""
        z, neg_term = self._parts(theta)
        zp = z[self.pos]
        pos_term = self.mass_pos @ np.maximum(loss_pos(zp), loss_neg(zp) - 2.0 * self.kappa * alpha)
        return alpha * (self.delta - self.paper_shift) + float(pos_term) + neg_term

    def alpha_coefficient(self, gamma) -> float:
        """The coefficient of alpha in L(., ., gamma): delta - kappa sum_{I+} p_i (1 + gamma_i) (- paper shift)."""
        flips = float(self.mass_pos @ (1.0 + np.asarray(gamma)[self.pos]))
        return self.delta - self.paper_shift - self.kappa * flips

    def worst_case_risk(self, theta) -> tuple[float, float]:
        """(sup over the ambiguity set of the expected loss, the minimizing alpha) at theta (Theorem 5.3).

        min over alpha >= (L_phi + c)||theta|| of E2, a convex piecewise-linear function of alpha:
        f(alpha) = A + s0 alpha + kappa sum_{I+} p_i |alpha - b_i| with b_i = c z_i / kappa, minimized
        exactly over its breakpoints (sorting and prefix sums, O(n log n)). Corrected variant: no upper
        bound on alpha (alpha_max is an algorithmic device only); paper variant: capped at alpha_max.
        """
        z, neg_term = self._parts(theta)
        zp = z[self.pos]
        lo = float(np.linalg.norm(theta)) / self.slope
        A = float(self.mass_pos @ (loss_pos(zp) + C_LABEL * zp)) + neg_term
        s0 = self.delta - self.paper_shift - self.kappa * float(self.mass_pos.sum())
        order = np.argsort(C_LABEL * zp / self.kappa, kind="stable")
        b, pb = (C_LABEL * zp / self.kappa)[order], self.mass_pos[order]
        hi = self.alpha_max if self.variant == "paper" else np.inf
        cand = np.concatenate([[lo], b[(b > lo) & (b < hi)], [hi] if np.isfinite(hi) and hi > lo else []])
        mass = np.concatenate([[0.0], np.cumsum(pb)])            # weight of the b_i <= alpha
        prefix = np.concatenate([[0.0], np.cumsum(pb * b)])      # and their weighted sum
        k = np.searchsorted(b, cand, side="right")
        abs_sum = cand * mass[k] - prefix[k] + (prefix[-1] - prefix[k]) - cand * (mass[-1] - mass[k])
        f = A + s0 * cand + self.kappa * abs_sum
        j = int(np.argmin(f))
        return float(f[j]), float(cand[j])

    def multipliers(self, theta) -> tuple[float, np.ndarray]:
        """(alpha, gamma) of the saddle point's form at theta: alpha minimizing E2 (:meth:`worst_case_risk`, capped at
        alpha_max) and gamma its subgradient's certificate, gamma_i = sign(c z_i - kappa alpha) for y_i = +1 (0 for
        y_i = -1), the rows at the breakpoint (c z_i = kappa alpha) sharing the flip mass that makes alpha's
        coefficient delta - kappa sum_{I+} p_i (1 + gamma_i) zero (as close to zero as [-1, 1] allows).

        At a saddle point (theta*, alpha*, gamma*) these are alpha* and gamma* (up to how rows tied at the breakpoint
        share its mass), so max_gamma L(theta, alpha, .) - min L(., ., gamma) at them tends to 0 as theta tends to
        theta*: a dual point from a primal one, as a stochastic method's averages of alpha and gamma need not be
        (their flip mass sets alpha's coefficient, whose error the gap multiplies by alpha_max)."""
        _, alpha = self.worst_case_risk(theta)
        alpha = min(alpha, self.alpha_max)
        breakpoints = C_LABEL * self.scores(theta)[self.pos] / self.kappa
        tie = np.abs(breakpoints - alpha) <= 1e-12 * max(1.0, abs(alpha))
        gp = np.where(breakpoints > alpha, 1.0, -1.0)
        if tie.any():
            flips = (self.delta - self.paper_shift) / self.kappa - float(self.mass_pos[~tie] @ (1.0 + gp[~tie]))
            gp[tie] = float(np.clip(flips / self.mass_pos[tie].sum(), 0.0, 2.0)) - 1.0
        gamma = np.zeros(self.n)
        gamma[self.pos] = gp
        return alpha, gamma

    def losses(self, theta, zeta: float | None = None) -> np.ndarray:
        """Per-sample logistic losses log(1 + exp(-y z)) on the strategically shifted data."""
        z = self.scores(theta, zeta)
        return softplus(-self.y * z)


class WDRSCOracle(SaddleOracle):
    """The WDRSC saddle function as n components for the OGDA/SGDA methods (L = (1/n) sum_i L_i).

    With sample weights L = sum_i p_i L_i = (1/n) sum_i (n p_i) L_i: component i is scaled by n p_i, so a
    component drawn uniformly is still an unbiased estimate of L and of its gradient.

    u = (theta, alpha, gamma), d_x = p + 1, y-block gamma in [-1, 1]^n. ``L_i`` depends on gamma only
    through gamma_i. ``zo="theta"`` (the paper's experiments, §6): the estimator perturbs theta only,
    alpha and gamma get exact partial derivatives (they do not involve the agents); ``zo="all"``: every
    coordinate (the theory's setting, d = p + 1 + n). Values query the agents' best responses at the
    perturbed theta; the exact theta-gradient of first-order mode uses the response model (it needs zeta).

    ``coordinates`` (a :class:`~fairmodel.oracles.metric.Coordinates`, or None for theta itself): the methods'
    coordinates phi, theta = M phi, so that their steps and the estimator's perturbations of theta are in the metric
    of M (M'M is diagonal, so the feasible set is the cone in phi, :meth:`TruncatedCone.in_coordinates`);
    :meth:`theta` maps a point back.
    """

    def __init__(self, model: WDRSC, zo: str = "theta", coordinates=None):
        if zo not in ("theta", "all"):
            raise ModelError(f"zo must be 'theta' (hybrid, as in the paper's experiments) or 'all'; got {zo!r}")
        self.m = model
        self.coordinates = coordinates
        self.x_domain = model.x_domain if coordinates is None else \
            model.x_domain.in_coordinates(1.0 / np.sqrt(coordinates.d))        # ||theta||^2 = sum_j phi_j^2 / d_j
        self.n, self.p = model.n, model.p
        self.d_x = self.p + 1
        self.dim = self.p + 1 + self.n
        self.zo = np.arange(self.p) if zo == "theta" else np.arange(self.dim)
        self.full_zo = zo == "all"
        self._pos = model.pos.tobytes()             # 1 byte a row (a list would take 8)
        # alpha coefficients of L_i: delta, minus kappa for y = -1 in the paper variant
        self._a_pos = model.delta
        self._a_neg = model.delta - (model.kappa if model.variant == "paper" else 0.0)
        self._zm = model.zeta * model.mask.astype(float)
        self.y_box = (np.broadcast_to(-1.0, self.n), np.broadcast_to(1.0, self.n))     # views: no n-vectors
        self._weight = (model.mass * model.n).tolist() if model.weighted else None

    def theta(self, u) -> np.ndarray:
        """The model's theta at a point u of the methods' coordinates."""
        return u[:self.p] if self.coordinates is None else self.coordinates.to_theta(u[:self.p])

    def value(self, i, u, shift):
        v = self._value(i, u, shift)
        return v if self._weight is None else self._weight[i] * v

    def gradient(self, i, u, exact_only):
        g, idx, g_gamma = self._gradient(i, u, exact_only)
        if self._weight is not None:
            g, g_gamma = self._weight[i] * g, self._weight[i] * g_gamma
        return g, idx, g_gamma

    def _value(self, i, u, shift):
        p, m = self.p, self.m
        theta = u[:p] + shift[:p]
        if self.coordinates is not None:
            theta = self.coordinates.to_theta(theta)
        alpha, gamma = u[p], u[p + 1 + i]
        if self.full_zo:
            alpha += shift[p]
            gamma += shift[p + 1 + i]
        return self._of_score(i, alpha, gamma, float(m.agents.respond(i, theta) @ theta), _softplus1)

    def _of_score(self, i, alpha, gamma, z, softplus_of):
        """L_i from its agent's score z = <b_i(theta), theta> (numbers, or arrays of one entry per query point;
        ``softplus_of`` the softplus of a number or of an array)."""
        if self._pos[i]:
            kappa = self.m.kappa
            return (alpha * self._a_pos + softplus_of(-z) + C_LABEL * z - kappa * alpha
                    + gamma * (C_LABEL * z - kappa * alpha))
        return alpha * self._a_neg + softplus_of(z)

    def values(self, i, u, shifts):
        """L_i at u + embed(s) for each row s of ``shifts``: one vectorized evaluation (the agents answer each)."""
        p, m = self.p, self.m
        thetas = u[:p] + shifts[:, :p]
        if self.coordinates is not None:
            thetas = self.coordinates.to_theta(thetas.T).T
        alpha, gamma = u[p], u[p + 1 + i]
        if self.full_zo:
            alpha, gamma = alpha + shifts[:, p], gamma + shifts[:, p + 1 + i]
        v = self._of_score(i, alpha, gamma, m.agents.scores_many(i, thetas), softplus)
        return v if self._weight is None else self._weight[i] * v

    def _gradient(self, i, u, exact_only):
        """(grad_(theta, alpha) L_i, [i], [d L_i / d gamma_i]): L_i touches gamma_i only."""
        p, m = self.p, self.m
        g = np.zeros(self.d_x)
        theta, alpha, gamma = self.theta(u), u[p], u[p + 1 + i]
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
                z = float(strategic_scores(theta, x[None, :], True, m.zeta, m.mask)[0])
                g[:p] = _sigmoid1(z) * (x + 2.0 * self._zm * theta)
        if self.coordinates is not None and not exact_only:
            g[:p] = self.coordinates.gradient_to_u(g[:p])       # the chain rule of theta = M phi
        return g, np.array([i]), np.array([g_gamma])

    def prepare_epoch(self, order):
        """Chunked rows: the epoch's components, whose rows are gathered a block at a time as the steps reach them."""
        if self.m.chunked:
            self.m.X.prepare(order)

    def project_x(self, x):
        return self.x_domain.project(x)

    def project_y(self, y):
        return np.clip(y, -1.0, 1.0)


class InnerPass:
    """One chunk's part of (value, gradient, Hessian) of the smooth part of the inner minimum (E3) of the duality
    gap, g(theta) = sum_i p_i softplus(z_i(theta)) + sum_i r_i x_i . theta, with z_i the strategic score (Lemma 5.2:
    z_i = x_i . theta + zeta ||M theta||^2 for y_i = -1) and r_i = p_i (c (1 + gamma_i) - 1) for y_i = +1, 0 for
    y_i = -1 (the per-chunk function of a pass; ``value_only``: the value alone)."""

    def __init__(self, theta, zeta: float, mask, value_only: bool):
        self.theta, self.zeta, self.mask, self.value_only = theta, zeta, np.asarray(mask, dtype=float), value_only

    def __call__(self, batch, negative, mass, coef):
        X, theta = batch.X, self.theta
        linear = X @ theta
        z = strategic_scores(theta, X, negative, self.zeta, self.mask) if self.zeta else linear
        value = float(mass @ softplus(z) + coef @ linear)
        if self.value_only:
            return value
        s = expit(z)
        shift = 2.0 * self.zeta * self.mask * theta              # grad of zeta ||M theta||^2
        neg_mass = float(mass[negative] @ s[negative])
        grad = X.T @ (mass * s + coef) + neg_mass * shift
        G = X + np.outer(negative, shift)                        # grad z_i, row by row
        hess = (G * (mass * s * (1.0 - s))[:, None]).T @ G + np.diag(2.0 * self.zeta * neg_mass * self.mask)
        return value, grad, hess
