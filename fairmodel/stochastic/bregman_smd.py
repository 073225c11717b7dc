"""Stochastic mirror descent with the AUC-fairness paper's Bregman divergence (Algorithm 2 of Yao,
Lin, Yang, AISTATS 2023).

It solves the convex-concave saddle problem (27) that gives the level-set function H(r) (or H^(r) of (33)
with a proximal term):

    min_{x in X} max_{y in Y}  E[Phi(x, y, z)] - q d_y(y) + d_x(x),   Phi = y~' F(x, z) + alpha~' G(w, z),

x = (w, a, b) in W x I^{2P}, y = (y~, alpha~) with y~ in the simplex over the blocks (objective and one per
constraint) and alpha~_i = y~_{block(i)} alpha_i, alpha_i in I; F and G are the per-sample functions (8)
(one F_i and G_i per pair i; alpha_i is paired with G_i as in App. D: eq. (26) orders and signs the G_i
differently, which only flips the sign of alpha_i for a symmetric I).

Steps (29): x is a projected gradient step (closed form); y is the prox of the new Bregman divergence
(28) V_y = C KL(y~ || y~') + sum_i y~_{block(i)} (alpha_i - alpha'_i)^2 with C = 2 (1 + sqrt(2) I)^2, solved in
closed form (Lemma 3):

    alpha#_i = clip((tau v_i + 2 alpha'_i) / (2 q_i tau + 2), I)
    mu_i     = -alpha#_i v_i + q_i alpha#_i^2 + (alpha#_i - alpha'_i)^2 / tau
    y~#_k    ∝ y~'_k exp(-tau (M_k - u_k) / C),   M_k = sum_{i in block k} mu_i.

The stochastic upper bound U(r) of (30) has the closed form of Lemma 4, with tau-weighted averages of F and G
(App. B.2 drops the tau_t in the numerators, which contradicts (30)) and "max" for every alpha block (the
proof of Lemma 4 prints "min" for the last one).
The y-state is stored as (log y~, alpha) (unscaled alpha) so that no tiny y~_k is divided by.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import OptionError
from ..oracles.domains import project_ball
from ..oracles.metric import Coordinates
from ..oracles.protocols import PairRiskOracle, ScoreModel
from ..utilities.validate import check_number
from .aleg import normalize_log

AVERAGING = ("uniform", "tau_weighted")
SAMPLING = ("stratified", "uniform")
STEP_RULES = ("practical", "theory")


def bregman_constant(half_width: float) -> float:
    """C = 2 (1 + sqrt(2) I)^2, the weight of the entropy in omega_y (Section 4)."""
    return 2.0 * (1.0 + math.sqrt(2.0) * half_width) ** 2


class AUCSaddle:
    """Per-sample F_i, G_i of (8) and the stochastic gradients of Phi (26) for a score model.

    model : a :class:`~fairmodel.oracles.protocols.ScoreModel` (``shape``, ``forward(theta, X) -> (h, cache)``,
        ``backward(theta, cache, coef)``); pairs : the pair table (a :class:`~fairmodel.oracles.protocols.PairRiskOracle`); bounds : the constants of the blocks' F entries
        (block 0 is replaced by the level r at each call, blocks k >= 1 hold 1 + kappa_k); half_width : I.
    X : the design rows in memory (n x p), or None when every step's rows come with the minibatch (a stream of
        rows gathered from chunked data, :func:`smd`); mean_square_norm : the mean ||x_i||^2 of the design rows
        (the step rule's scale; computed from X when given).
    The probabilities p_G are the training frequencies n_G / n (estimates of the paper's Pr(z in G)), so E over the
    data of the per-sample F_i equals the closed form of :class:`PairRisks`. With sample weights a row of G
    enters with w_j / (W_G / n) instead of 1 / p_G (W_G the total weight of G): a row drawn uniformly still gives an
    unbiased estimate of the weighted moments.
    """

    def __init__(self, model: ScoreModel, pairs: PairRiskOracle, bounds, half_width: float, X=None,
                 mean_square_norm: float | None = None):
        self.model = model
        self.X = X
        self.n = pairs.masks.shape[1]
        self.pairs = pairs
        self.P, self.K1 = pairs.n_pairs, pairs.n_blocks
        freq = pairs.set_weights / self.n
        # the row j of the n x 2P weights (w_j 1_S_i(z_j) / p_S_i for every pair i, then w_j 1_S'_i(z_j) / p_S'_i;
        # w_j = 1 unweighted) from the row's cell: a table of the cells, 1 byte a row instead of 2P floats
        self.codes, members = pairs.cells
        self.members = np.hstack([members[:, pairs.first], members[:, pairs.second]])
        self.freq = np.concatenate([freq[pairs.first], freq[pairs.second]])
        self.table = self.members / self.freq
        if mean_square_norm is None and X is not None:
            mean_square_norm = float(np.einsum("ij,ij->", X, X)) / X.shape[0]
        self.mean_square_norm = mean_square_norm     # mean ||x_i||^2 of the design rows (the step rule's scale)
        self.bounds = np.asarray(bounds, dtype=float)
        self.I = float(half_width)
        self.C = bregman_constant(self.I)
        self.block_sum = np.zeros((self.K1, self.P))
        self.block_sum[pairs.block, np.arange(self.P)] = 1.0
        # constants of the 2P-vector form of the batch means (first the S-parts, then the S'-parts)
        c1, c2 = pairs.c1, pairs.c2
        self.block_sum2 = np.hstack([self.block_sum, self.block_sum])
        self.block2 = np.concatenate([pairs.block, pairs.block])
        self.c1x = np.concatenate([c1, c1])
        self.twoc1x = 2 * self.c1x
        self.sign = np.concatenate([np.ones(self.P), -np.ones(self.P)])
        self.lin = -2 * self.sign * self.c1x * np.concatenate([c2, c2])   # -2 c1 c2 on S, +2 c1 c2 on S'
        self.c2sign = self.sign * np.concatenate([c2, c2])
        self.diff = np.hstack([np.diag(2 * c1), -np.diag(2 * c1)])          # v = 2 c1 (m1_S - m1_S')
        self.c1c2sq = self.block_sum @ (c1 * c2 ** 2)

    def shift(self, r: float) -> np.ndarray:
        """The constants of u per block: sum_i c1 c2^2 minus (r, 1 + kappa_1, ...) (the constants of (26))."""
        c = self.bounds.copy()
        c[0] = r
        return self.c1c2sq - c

    def row_weights(self, rows) -> np.ndarray:
        """The (B, 2P) weights of the rows ``rows`` (see the class docstring)."""
        if self.pairs.weights is None:
            return self.table[self.codes[rows]]
        return (self.members[self.codes[rows]] * self.pairs.weights[rows][:, None]) / self.freq

    def strata(self, batch_size: int) -> tuple[list, np.ndarray, np.ndarray]:
        """A stratified minibatch of about ``batch_size`` rows: (the rows of every cell drawn from, the rows drawn
        from each, the weight of each position of the minibatch in the batch means).

        The cells (rows in the same sets) are the strata; drawing b_c rows uniformly within cell c and weighting
        each by (N_c / n) / b_c gives unbiased estimates of the same means as uniform rows (stratified sampling,
        Cochran 1977, Ch. 5). The allocation b_c proportional to N_c ||row of the weights of cell c|| is Neyman's
        (1934) for the sum of the variances of the 2P per-set moments of the batch (each is a mean over its set S,
        whose rows weigh 1 / p_S): a set of a few percent of the rows (e.g. the positives of the protected group)
        gets about as many rows as a large one instead of a few, and cells in no set (whose rows move nothing) get
        none. Every cell in a set gets at least one row."""
        counts = np.bincount(self.codes, minlength=len(self.table))
        need = counts * np.sqrt(np.einsum("ij,ij->i", self.table, self.table))
        used = np.flatnonzero(need > 0)
        sizes = np.maximum(1, np.rint(batch_size * need[used] / need[used].sum())).astype(int)
        order = np.argsort(self.codes, kind="stable")
        cuts = np.cumsum(counts)
        members = [order[cuts[c] - counts[c]:cuts[c]] for c in used]
        share = np.repeat(counts[used] / self.n / sizes, sizes)
        return members, sizes, share

    def gradients(self, theta, ab, ytil, alpha, rows, shift, X=None, share=None):
        """Stochastic gradients (g_x = (g_theta, g_a, g_b), u, v) of Phi at x = (theta, ab = (a, b)) and
        y = (y~, alpha) on a minibatch; ``shift`` = :meth:`shift` (r). ``X``: the design rows of ``rows`` when
        the caller gathered them (chunked data), else ``self.X[rows]``. ``share``: the weight of each row in
        the batch means (a stratified minibatch, :meth:`strata`); None: 1 / B each (uniform rows).

        u = F(x, z) (one entry per block, with the constants -r, -1 - kappa) and v = G(w, z), averaged over
        the batch. With s = 1_S / p_S and s' = 1_S' / p_S', the batch means of (8) need only the weighted
        moments m_k = mean_j s_j h_j^k (k = 0, 1, 2), so the work is one product of a 3 x B matrix with the
        B x 2P matrix of weights, then a few operations on 2P-vectors (S-part then S'-part):
        mean F_i = c1 c2^2 + sum over the two parts of c1 (m2 - 2 e m1 + e^2 m0) -/+ 2 c1 c2 m1 (e = a or b).
        Written this way because the loop is dominated by NumPy call overhead at these sizes (measured: about
        half the calls of the per-pair form, 35 % fewer microseconds per step at B = 100, p = 5).
        """
        h, cache = self.model.forward(theta, self.X[rows] if X is None else X)
        W = self.row_weights(rows)
        H = np.empty((3, h.shape[0]))
        H[0] = 1.0 / h.shape[0] if share is None else share
        np.multiply(h, H[0], out=H[1])
        np.multiply(H[1], h, out=H[2])
        m0, m1, m2 = H @ W
        abm0 = ab * m0
        u = self.block_sum2 @ (self.c1x * (m2 + ab * (abm0 - 2 * m1)) + self.lin * m1) + shift
        slope = self.twoc1x * ytil[self.block2]                     # 2 c1 beta_i on both parts
        alpha2 = np.concatenate((alpha, alpha))
        offset = slope * (self.sign * alpha2 - ab - self.c2sign)     # per-sample dPhi/dh = h W.slope + W.offset
        coef = (h * (W @ slope) + W @ offset) * H[0]
        g = np.concatenate((self.model.backward(theta, cache, coef), slope * (abm0 - m1)))
        return g, u, self.diff @ m1


def y_prox(logy, alpha, u, v, tau, C, q, I, block_sum):
    """Lemma 3: the y-step (29) in closed form; returns (log y~#, alpha#) (unscaled alpha)."""
    alpha_new = np.minimum(np.maximum((tau * v + 2 * alpha) / (2 * q * tau + 2), -I), I)
    step = alpha_new - alpha
    mu = alpha_new * (q * alpha_new - v) + step * step / tau
    return normalize_log(logy - (tau / C) * (block_sum @ mu - u)), alpha_new


def upper_bound(u_avg, v_avg, q, I, block_sum, prox_avg: float = 0.0) -> float:
    """Lemma 4: U(r) = max_k (u_k + sum_{i in k} max_{alpha in I} {alpha v_i - q alpha^2}) + prox term."""
    a = np.clip(v_avg / (2 * q), -I, I)
    return float(np.max(u_avg + block_sum @ (a * v_avg - q * a ** 2)) + prox_avg)


def bregman_divergence(y1, y2, C: float, block) -> float:
    """V_y(y, y') of (28) for y = (y~, alpha) given with unscaled alpha."""
    (yt, al), (yt2, al2) = y1, y2
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(yt > 0, yt * np.log(yt / yt2), 0.0).sum()
    return float(C * kl + np.sum(yt[block] * (al - al2) ** 2))


class StepRule:
    """eta_t and tau_t of Algorithm 2.

    ``practical`` (the experiments, App. E.3): eta_t = c_eta / sqrt(t + 1) and tau_t = c_tau C / sqrt(t + 1);
    tau must scale with C or y~ never moves (measured: with C ~ 3e3, tau = 0.5 / sqrt(t + 1) leaves y~ at
    its start and U(r) useless). ``eta="auto"`` sets c_eta = 1 / (2 max c1 mean_i ||x_i||^2), the inverse of a
    curvature scale of the surrogate in w (the Hessian of a pair risk is 2 c1 (Sigma_S + Sigma_S' + ...));
    the paper tunes c_eta in {0.01, 0.1, 1}, which fits standardized low-dimensional data but diverges on
    one-hot Adult (measured: U(r0) = +7.7 with c_eta = 0.5). ``theory`` (eq. (31)):
    eta_t = 2 D_x^2 / (M sqrt(t + 1)) and tau_t = 2 D_y^2 / (M sqrt(t + 1)) (App. C prints D_x in
    tau_t, a misprint), with M of (55) given or estimated from the gradient norms at the start point (M_x, M_y
    are unknown in practice).
    """

    def __init__(self, rule: str = "practical", eta="auto", tau_scale: float = 0.5, M: float | None = None):
        if rule not in STEP_RULES:
            raise OptionError(f"steps must be one of {', '.join(STEP_RULES)}; got {rule!r}")
        self.rule = rule
        self.eta = eta if eta == "auto" else check_number(eta, "eta (c in eta_t = c / sqrt(t + 1))", low=0.0,
                                                          strict=True)
        self.tau_scale = check_number(tau_scale, "tau_scale", low=0.0, strict=True)
        self.M = None if M is None else check_number(M, "M", low=0.0, strict=True)

    def bases(self, saddle: AUCSaddle, radius: float, estimate_M, mean_square_norm: float | None = None
              ) -> tuple[float, float]:
        """(eta_0, tau_0) so that eta_t = eta_0 / sqrt(t + 1) and tau_t = tau_0 / sqrt(t + 1); ``mean_square_norm``:
        that of the design rows in the coordinates of the steps (default: the saddle's, Euclidean)."""
        if self.rule == "practical":
            eta = self.eta
            if eta == "auto":
                scale = saddle.mean_square_norm if mean_square_norm is None else mean_square_norm
                eta = 1.0 / (2.0 * saddle.pairs.c1.max() * scale)
            return eta, self.tau_scale * saddle.C
        I, P = saddle.I, saddle.P
        pairs_per_block = np.bincount(saddle.pairs.block).max()
        Dx2 = 0.5 * (radius ** 2 + 2 * P * I ** 2)
        Dy2 = saddle.C * math.log(saddle.K1) + pairs_per_block * I ** 2
        M = self.M if self.M is not None else estimate_M(Dx2, Dy2)
        return 2 * Dx2 / M, 2 * Dy2 / M


def smd(saddle: AUCSaddle, r: float, *, T: int, eta0: float, tau0: float, batch_size: int, rng,
        radius: float | None, rho_hat: float = 0.0, center=None, x0=None, y0=None, averaging: str = "uniform",
        stream=None, coordinates: Coordinates | None = None, sampling: str = "stratified") -> dict:
    """One run of Algorithm 2 at level r; returns U(r), the averaged (x, y) and the last iterate.

    x is handled as one flat vector (theta, a, b). radius : of the ball W (None: no projection).
    center : x~ of d_x (with rho_hat > 0). x0, y0 : start points (default: the paper's x = 0,
    y~ = (1/K1, ...), alpha = 0); y0 = (y~, alpha). stream : an iterator of row-index arrays, or of (rows, design
    rows) pairs (minibatches gathered from chunked data), used instead of uniform minibatches (any order of samples
    gives valid steps). sampling : "stratified" (minibatches of rows in memory drawn per cell,
    :meth:`AUCSaddle.strata`) or "uniform" (rows drawn uniformly, as the paper). coordinates : preconditioned
    coordinates of the weights (theta = M u, a :class:`~fairmodel.oracles.metric.Coordinates` of the ball of radius
    ``radius``; rho_hat = 0): the w-part of the x-step (29) is then taken with the distance
    ||theta - theta_t||_P^2 / 2 instead of the Euclidean one (a step of M'g in u, then the projection onto the ball
    in the metric of u), a valid distance-generating function of the mirror-descent analysis (Nemirovski, Juditsky,
    Lan, Shapiro 2009); the iterates, U(r) and the output stay in theta.

    The loop body is a few NumPy calls on vectors of length P or d (the minibatch enters only through
    :meth:`AUCSaddle.gradients`): in-place updates, ufunc min/max instead of np.clip and pre-drawn row
    blocks, because per-call overhead dominates at these sizes (measured ~3x on a 5-feature problem).
    """
    P, K1, I, C = saddle.P, saddle.K1, saddle.I, saddle.C
    q, block_sum, block = saddle.pairs.q, saddle.block_sum, saddle.pairs.block
    d = int(np.prod(saddle.model.shape))
    x = np.zeros(d + 2 * P) if x0 is None else np.array(x0, dtype=float)
    th, ab = x[:d], x[d:]
    shift = saddle.shift(r)
    logy, alpha = (np.full(K1, -math.log(K1)), np.zeros(P)) if y0 is None else (np.log(y0[0]), y0[1].copy())
    acc_x, acc_y, acc_at = np.zeros_like(x), np.zeros(K1), np.zeros(P)
    u_sum, v_sum, tau_sum, prox_sum, weight_sum = np.zeros(K1), np.zeros(P), 0.0, 0.0, 0.0
    weighted = averaging == "tau_weighted"
    n, status, block_rows, share = saddle.n, "completed", None, None
    if stream is None and sampling == "stratified":
        members, sizes, share = saddle.strata(batch_size)
    for t in range(T):
        X = None
        if stream is not None:
            rows = next(stream)
            if isinstance(rows, tuple):
                rows, X = rows
        else:
            if t % 1024 == 0:
                steps = min(1024, T - t)
                block_rows = rng.integers(0, n, size=(steps, batch_size)) if share is None else np.hstack(
                    [cell[rng.integers(0, cell.size, size=(steps, b))] for cell, b in zip(members, sizes)])
            rows = block_rows[t % 1024]
        root = math.sqrt(t + 1.0)
        eta, tau = eta0 / root, tau0 / root
        ytil = np.exp(logy)
        g, u, v = saddle.gradients(th, ab, ytil, alpha, rows, shift, X, share)
        # records of U(r) (30) and of the output average, at (x_t, y_t)
        u_sum += tau * u
        v_sum += tau * v
        tau_sum += tau
        wt = tau if weighted else 1.0
        weight_sum += wt
        acc_x += wt * x
        acc_y += wt * ytil
        acc_at += wt * (ytil[block] * alpha)
        # x-step (29) in closed form: Proj_X((x + eta rho x~ - eta g) / (1 + eta rho))
        if rho_hat > 0:
            diff = x - center
            prox_sum += tau * (diff @ diff)
            x += eta * rho_hat * center - eta * g
            x *= 1.0 / (1.0 + eta * rho_hat)
            th[...] = project_ball(th, radius)
        elif coordinates is None:
            x -= eta * g
            th[...] = project_ball(th, radius)
        else:
            ab -= eta * g[d:]
            th[...] = coordinates.to_theta(coordinates.project(coordinates.to_u(th)
                                                               - eta * coordinates.gradient_to_u(g[:d])))
        np.minimum(np.maximum(ab, -I, out=ab), I, out=ab)
        # y-step (29) in closed form (Lemma 3)
        logy, alpha = y_prox(logy, alpha, u, v, tau, C, q, I, block_sum)
        if t % 512 == 0 and not (np.all(np.isfinite(x)) and np.all(np.isfinite(logy))):
            status = "diverged"
            break
    U = upper_bound(u_sum / tau_sum, v_sum / tau_sum, q, I, block_sum, 0.5 * rho_hat * prox_sum / tau_sum)
    y_bar = acc_y / weight_sum
    alpha_bar = np.divide(acc_at / weight_sum, y_bar[block], out=np.zeros(P), where=y_bar[block] > 0)
    x_bar = acc_x / weight_sum
    if not (np.isfinite(U) and np.all(np.isfinite(x_bar))):
        status = "diverged"
    return {"U": U, "x": x_bar, "y": (y_bar, alpha_bar), "x_last": x, "y_last": (np.exp(logy), alpha),
            "status": status, "steps": t + 1}
