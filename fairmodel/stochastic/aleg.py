"""ALEG: variance-reduced stochastic mirror-prox for empirical group DRO (Algorithm 1, Section 4 of Yu, Cai,
Jiang, Zhang, "Efficient Algorithms for Empirical Group Distributional Robust Optimization and Beyond", 2024),
and the two-stage MERO method built on it (Algorithm 2, Section 5).

Conventions (the paper's Bregman setup, Section 3.3 and eqs. (9)-(12), with these choices): w-block
psi_w = ||w||^2/2 on the ball of radius rho (D_w^2 = rho^2/2), q-block negative entropy on the simplex
(D_q^2 = ln m). The distance-generating function (11) is block separable, so the mirror steps (19) and (23)
have closed forms with effective block steps gamma_w = 2 D_w^2 eta and gamma_q = 2 ln(m) eta:

    w+     = Proj_W(alpha w^s + (1 - alpha) w_k - gamma_w v_w)
    ln q+  = alpha lambda^s + (1 - alpha) ln q_k - gamma_q v_q - logsumexp(...)

Two inconsistencies of the paper are corrected. Algorithm 1 lists the full gradient at the snapshot z^s
(line 4) before the computation of z^s (line 5): here the snapshot is computed first (order 5 -> 6 -> 4).
The snapshot weights (17)/(18) are normalised over K_{s-1} (the previous epoch's length), as in the proof
((53)-(54)); the printed normaliser sums to K_s (the same when K_s is constant).

Extension (documented, off by default with ``batch_size=1``): ``batch_size`` b > 1 draws b samples per
group per inner step (eq. (20) draws one); the estimator (22) stays unbiased and the default number of
inner steps becomes ceil(n_bar / b), so an epoch touches the same number of samples.
"""
from __future__ import annotations

import math
import time

import numpy as np
from scipy import sparse

from ..errors import OptionError
from ..oracles.metric import DENSE_PARAMETERS, Coordinates, step_coordinates
from ..oracles.protocols import GroupRiskOracle
from ..utilities.progress import Progress
from ..utilities.validate import as_generator, check_number
from .averaging import TailAverage
from .schedules import check_budget, epoch_lengths, multiplier, schedule

OUTPUTS = ("average", "suffix", "tail", "snapshot")
BLOCK = 256  # inner steps whose samples are drawn (and whose snapshot terms are computed) in one go


def lipschitz_lz(D_w: float, L: float, G: float, m: int) -> float:
    """L_z of Lemma A.7, eq. (25)/(36): 2 D_w max{sqrt(2 D_w^2 L^2 + G^2 ln m), G sqrt(2 ln m)}."""
    lnm = math.log(m)
    return 2.0 * D_w * max(math.sqrt(2.0 * D_w ** 2 * L ** 2 + G ** 2 * lnm), G * math.sqrt(2.0 * lnm))


def theory_band(L_z: float, K: int) -> tuple[float, float]:
    """The step band of Theorem 4.5: 1/(10 L_z sqrt K) <= eta <= 1/(L_z sqrt(5K))."""
    return 1.0 / (10.0 * L_z * math.sqrt(K)), 1.0 / (L_z * math.sqrt(5.0 * K))


UNIT_SCORE = 1.0   # the score bound of the practical steps' curvature (see unit_curvature)
NONSMOOTH_RADIUS_STEP = 0.5   # a non-smooth loss's w-step: this times the radius over the subgradients' size


def label_bound(risks: GroupRiskOracle) -> float:
    """max |y| over the rows (1 without rows): the label bound of a loss's smoothness and slope facts."""
    return float(np.max(np.abs(risks.y))) if risks.y.size else 1.0


def unit_curvature(risks: GroupRiskOracle) -> float:
    """The loss's curvature bound for the practical steps: its smoothness on unit scores |z| <= 1 (1 for a loss that
    is not smooth: the hinge). For a loss of bounded curvature this is its global bound (logistic 1/4, squared 2);
    for one whose curvature grows with the score (the exponential loss, phi'' = phi = e^(-y z)) the bound on the
    whole ball (e^(radius max ||x||), e^38 on Adult at radius 5) would freeze the steps, while the averaged
    curvature the steps meet stays at the group risks: E_g[phi''] = R_g, at most R(w0) = 1 <= e^1 along a run that
    does not increase the risks from w = 0 (measured on Adult by race, radius 5: steps up to 2x this converge, 3x
    diverge)."""
    curvature = risks.loss.smoothness(UNIT_SCORE, label_bound(risks))
    return curvature if np.isfinite(curvature) else 1.0


def default_steps(risks: GroupRiskOracle, batch_size: int, risk_scale: float = 1.0) -> tuple[float, float]:
    """Practical effective steps (gamma_w, gamma_q) when none are given.

    gamma_w = 1 / L_bar with L_bar the loss curvature bound times the mean squared row norm (the
    smoothness of the averaged operator; the worst-row bound L of the theory is far more conservative);
    gamma_q = 0.5 / max(1, risk_scale): the entropic step multiplies the group risks (the q-block of the operator
    (16)), so it is measured in their units: ``risk_scale`` is the largest |R_i - c_i| at the start (about 0.7 for
    the logistic loss, so 0.5; a squared loss of targets in the tens has risks in the hundreds). The curvature bound
    is the loss's smoothness on unit scores (:func:`unit_curvature`); for hinge (not smooth) L_bar uses curvature 1.
    """
    curvature = unit_curvature(risks)
    mean_sq = risks.row_norm_stats()[0]
    return 1.0 / (curvature * mean_sq), 0.5 / max(1.0, float(risk_scale))


def radius_step(risks: GroupRiskOracle, batch_size: int) -> float | None:
    """For a loss that is not smooth on a ball of radius rho, the w-step of robust stochastic approximation, the
    domain's size over the subgradients' (Nemirovski, Juditsky, Lan, Shapiro 2009, Section 2.2): NONSMOOTH_RADIUS_STEP
    rho / G with G^2 = sup |phi'|^2 mean ||x||^2 >= E||phi' x||^2; None where the loss is smooth, there is no radius,
    or the step is within 2x of the curvature step of :func:`default_steps` (an alternative would change little). The
    families run it with the decreasing schedule when a run with the curvature step fails.

    Neither step serves every problem. The curvature step ignores the distance the iterates must cover: at radius 5
    on Adult (G about 3.6) it is 18x smaller than this, and group DRO with the hinge loss stalled at 10-12x its gap
    tolerance on 5,000 rows by race and by sex (8x on 10,000 rows at radius 10), the plain hinge risk at 6-7x at radii 5
    and 10; with this step all of them certify. This step overshoots where many rows average the kinks into an
    effective curvature and the solution lies inside the ball: the plain hinge risk on 5,000 Law School rows at radius
    2 (||w*|| = 1) certifies in 154 epochs with the curvature step and stopped failing fast at 7.5x with this one."""
    if risks.loss.smooth() or risks.radius is None:
        return None
    mean_sq = risks.row_norm_stats()[0]
    step = NONSMOOTH_RADIUS_STEP * risks.radius / (risks.loss.dphi_bound(UNIT_SCORE, label_bound(risks))
                                                  * math.sqrt(mean_sq))
    return step if step > 2.0 * default_steps(risks, batch_size)[0] else None


def minibatch_step(risks: GroupRiskOracle, batch_size: int, moment: np.ndarray | None = None) -> float | None:
    """For a smooth loss, the w-step 1 / (curvature ((1 - 1/b) top + mean_sq / b)) of the smoothness b rows per group
    meet: top the largest eigenvalue of the rows' second moment (the averaged operator's smoothness), mean_sq their
    mean squared norm (one row's, on average). This is the expected smoothness of b-minibatch sampling with
    replacement (Gower, Loizou, Qian, Sailanbayev, Shulgin, Richtarik 2019, Proposition 3.8) with the mean row in
    place of the largest; b = 1 gives the curvature step of :func:`default_steps`. None where the loss is not smooth,
    the steps take the design metric or more than DENSE_PARAMETERS parameters (no top eigenvalue), or the step is
    within 1.5x of the curvature step. The families run it when a run with the curvature step fails. ``moment``: the
    design's second moment (:func:`design_moment`) when the caller has it (else one more pass computes it).

    Neither step serves every problem. The curvature step crawled on MERO with the logistic loss on 8,000 Adult rows
    by race at radius 10 (the gap stalled at 14x its tolerance; with this step, 2.2x longer, it certifies); this step
    oscillates with the squared loss on Law School by race and gender (rows' squared norms up to 12x their mean: the
    gap stalled at 35x its tolerance, where the curvature step certifies in 20 epochs)."""
    if not risks.loss.smooth() or risks.shape[0] > DENSE_PARAMETERS:
        return None
    moment = design_moment(risks) if moment is None else moment
    if step_coordinates(moment, risks.radius) is not None:
        return None
    top = float(np.linalg.eigvalsh(moment)[-1])
    mean_sq = risks.row_norm_stats()[0]
    b = max(int(batch_size), 1)
    step = 1.0 / (unit_curvature(risks) * ((1.0 - 1.0 / b) * min(top, mean_sq) + mean_sq / b))
    return step if step > 1.5 * default_steps(risks, batch_size)[0] else None


def metric_minibatch_scale(risks: GroupRiskOracle, batch_size: int, moment: np.ndarray | None = None) -> float | None:
    """For a smooth loss with the steps in the design metric w'Pw/2 (:func:`design_coordinates`), the factor of the
    metric's curvature step 1 / (curvature p) that gives the step of :func:`minibatch_step` measured in that metric. In
    the metric the rows' second moment is P's whitened form: its largest eigenvalue at most 1 and the rows' mean squared
    norm E[z' P^-1 z] at most p, so the expected smoothness of b rows per group is at most curvature ((1 - 1/b) + p / b)
    (Gower et al. 2019, Proposition 3.8) and the factor p / ((1 - 1/b) + p / b). None where the loss is not smooth,
    there is no metric, or the factor is at most 1.5 (one row per group, or few parameters). ``moment``: as for
    :func:`minibatch_step`."""
    if not risks.loss.smooth():
        return None
    moment = design_moment(risks) if moment is None else moment
    if step_coordinates(moment, risks.radius) is None:
        return None
    p, b = risks.shape[0], max(int(batch_size), 1)
    scale = p / ((1.0 - 1.0 / b) + p / b)
    return scale if scale > 1.5 else None


MARGIN_DISTANCE = 2.0   # the design-metric distance a non-smooth loss's answer lies from w = 0, in units of |y|


def metric_radius_scale(risks: GroupRiskOracle, moment: np.ndarray | None = None) -> float | None:
    """For a loss that is not smooth with the steps in the design metric w'Pw/2 (:func:`design_coordinates`), the
    factor of the curvature step that gives the radius step of :func:`radius_step` measured in that metric:
    NONSMOOTH_RADIUS_STEP D / G with G^2 = sup |phi'|^2 E[z' P^-1 z] <= sup |phi'|^2 p, the subgradients' size in the
    dual norm, and D the answer's distance from w = 0 in the metric. That distance is its root-mean-square score
    (||w||_P^2 = E[(z'w)^2] for the second moment P), at most the radius times sqrt(lambda_max(P)) and, for a loss with
    a kink at the margin (the hinge: |score| = |y|), about MARGIN_DISTANCE |y| (the ball's bound is 1e5 on raw census
    columns, where the steps of 3x to 30x the curvature step certified and the curvature step stalled at 12-15x its
    gap tolerance). None where the loss is smooth, there is no radius or no metric, or the factor is at most 2.
    ``moment``: as for :func:`minibatch_step`."""
    if risks.loss.smooth() or risks.radius is None:
        return None
    moment = design_moment(risks) if moment is None else moment
    if step_coordinates(moment, risks.radius) is None:
        return None
    top = float(np.linalg.eigvalsh(moment)[-1]) if moment.ndim == 2 else float(np.max(moment))
    y = label_bound(risks)
    distance = min(risks.radius * math.sqrt(max(top, 0.0)), MARGIN_DISTANCE * y)
    p = risks.shape[0]
    step = NONSMOOTH_RADIUS_STEP * distance / (risks.loss.dphi_bound(UNIT_SCORE, y) * math.sqrt(p))
    scale = step * unit_curvature(risks) * p
    return scale if scale > 2.0 else None


class _Steps:
    """Resolves the three ways to give steps into (gamma_w(s,k), gamma_q(s,k), output weight(s,k))."""

    def __init__(self, risks, lengths, alpha, eta, step_w, step_q, step_schedule, theory, theta, batch_size,
                 risk_scale=lambda: 1.0, step_scale: float = 1.0, design_metric: bool = False):
        m = risks.m
        self.metric = None          # the w-block's preconditioned coordinates (design_coordinates) or None
        self.lnm = math.log(m) if m > 1 else 0.0
        given = [x is not None for x in (eta, step_w)]
        if theory and any(given) or all(given):
            raise OptionError("give steps one way: eta= (the paper's eta, needs a radius), step_w=/step_q= "
                              "(effective Euclidean and entropic steps) or schedule='theory'")
        if theory or eta is not None:
            if risks.radius is None:
                raise OptionError("eta= and schedule='theory' need a bounded domain (D_w = radius/sqrt(2)); "
                                  "set fm.Weights(..., radius=...) or give effective steps step_w=, step_q=")
            D_w2 = risks.radius ** 2 / 2.0
            if theory:
                if not (0.8 <= theta < 0.99):  # Lemma A.10's (0.8, 0.99), closed at 0.8 as Thm 4.5's band is
                    raise OptionError(f"theta must lie in [0.8, 0.99) (Lemma A.10, Theorem 4.5); got {theta}")
                G, L = risks.lipschitz_constants()
                if m == 1:  # stage 1: Thm 5.2's band, read as a band on the effective step sqrt(alpha(1-theta))/L
                    self.eta = lambda s, k: math.sqrt(alpha(s, k) * (1 - theta)) / (L * 2.0 * D_w2)
                else:
                    L_z = lipschitz_lz(math.sqrt(D_w2), L, G, m)
                    self.eta = lambda s, k: math.sqrt(alpha(s, k) * (1 - theta)) / L_z
            else:
                self.eta = schedule(eta, "eta", lengths)
            self.gw = lambda s, k: 2.0 * D_w2 * self.eta(s, k)
            self.gq = lambda s, k: 2.0 * self.lnm * self.eta(s, k)
            self.weight = self.eta
        else:
            auto_w, auto_q = default_steps(risks, batch_size, risk_scale() if m > 1 and step_q is None else 1.0)
            if step_w is None:
                self.metric = design_coordinates(risks, design_metric)
                if self.metric is not None:     # the smoothness in the metric: curvature times E[z' P^-1 z] <= p
                    auto_w = 1.0 / (unit_curvature(risks) * risks.shape[0])
            base_w = auto_w * step_scale if step_w is None else schedule(step_w, "step_w", lengths)(0, 0)
            base_q = auto_q if step_q is None else schedule(step_q, "step_q", lengths)(0, 0)
            mult = multiplier(step_schedule, lengths)
            self.gw = lambda s, k: base_w * mult(s, k)
            self.gq = lambda s, k: base_q * mult(s, k)
            self.weight = mult


def design_coordinates(risks: GroupRiskOracle, always: bool = False) -> Coordinates | None:
    """The w-block's mirror map w'Pw/2 (its preconditioned coordinates, :mod:`fairmodel.oracles.metric`) of the
    default steps, or None for the paper's Euclidean setup. P is the second moment of the design rows (x, 1) with a
    relative ridge, used when it is ill-conditioned (:func:`~fairmodel.oracles.metric.step_coordinates`):
    the Hessian of a group risk of a linear score is (1/n_g) sum_i phi''_i z_i z_i', so P has its shape up to the
    loss's curvature, and columns of very different scales, uncentered columns (whose common mean dominates the
    spectrum) and nearly collinear ones no longer slow the Euclidean steps down (the step allowed by the largest
    eigenvalue crawls along the smallest). Any strongly convex distance-generating function is a valid Bregman setup
    of the analysis (Section 3.3 of Yu et al. 2024; Nemirovski 2004); the domain and the output stay in the user's
    parametrization. Beyond DENSE_PARAMETERS parameters (no D x D matrix) P is the diagonal of the columns' second
    moments. Rows of a matrix of weights (softmax) share their row of P."""
    return step_coordinates(design_moment(risks), risks.radius, always)


def design_moment(risks: GroupRiskOracle) -> np.ndarray:
    """The second moment of the design rows (x, 1): D x D up to DENSE_PARAMETERS parameters, else its diagonal."""
    return risks.second_moment(full=risks.shape[0] <= DENSE_PARAMETERS)


def start_risk_scale(risks: GroupRiskOracle, w, offsets) -> float:
    """The largest |R_i(w) - c_i| at the start: the units of the q-block (one full pass)."""
    return float(np.max(np.abs(risks.risks(w) - offsets)))


def normalize_log(logq: np.ndarray) -> np.ndarray:
    """ln q - logsumexp(ln q): the log of a point on the simplex.

    Written out (max-shifted, as scipy.special.logsumexp does) because this runs twice per inner step on
    a vector of m entries, where scipy's array-API dispatch costs ~300 us a call (measured: 78% of an
    ALEG epoch on Adult); this form costs ~5 us. Tested against scipy in tests/test_aleg.py.
    """
    top = logq.max()
    return logq - (top + np.log(np.exp(logq - top).sum()))


def prox_step(risks: GroupRiskOracle, anchor_w, anchor_logq, v_w, v_q, gamma_w, gamma_q, metric=None):
    """Closed form of the mirror steps (19)/(23) under the block-separable DGF (11):
    argmin_z { eta <v, z> + alpha B(z, z_bar^s) + (1 - alpha) B(z, z_k) } with the anchors
    alpha w^s + (1 - alpha) w_k (Euclidean block, then projection) and alpha lambda^s + (1 - alpha) ln q_k
    (entropic block, a normalised exponentiated step computed in log space). With preconditioned coordinates
    ``metric`` (theta = M u, :func:`design_coordinates`) the w-block's distance-generating function is w'Pw/2: the
    step is Euclidean in u (the gradient M'v), then the projection onto the ball in the metric of u."""
    logq = normalize_log(anchor_logq - gamma_q * v_q)
    if metric is None:
        return risks.project(anchor_w - gamma_w * v_w), logq
    return metric.to_theta(metric.project(metric.to_u(anchor_w) - gamma_w * metric.gradient_to_u(v_w))), logq


def snapshot_terms(risks: GroupRiskOracle, batch, z_s, snap_w=None):
    """(design, labels, l(w^s; xi), l'(w^s; xi)) of a Batch: the snapshot's part of the estimator (22), which
    depends only on the snapshot scores z_s = X w^s (cached from the full pass) and the samples; with
    ``z_s=None`` (chunked data: no O(n) vector kept) the sampled rows' scores are computed from ``snap_w``."""
    Xb, yb = risks.batch(batch)
    zs = Xb @ snap_w if z_s is None else z_s[batch.rows]
    return Xb, yb, risks.loss.phi(zs, yb), risks.loss.dphi(zs, yb)


def draw_block(risks: GroupRiskOracle, sampler, batch_size: int, n_steps: int, z_s, snap_w=None):
    """The per-group samples of ``n_steps`` inner steps drawn at once (they do not depend on the iterates),
    with their snapshot terms: arrays whose first axis is the step, each step's rows group by group."""
    m = risks.m
    batch = sampler.draw(batch_size * n_steps)          # group-major: group i has rows i*b*n .. (i+1)*b*n - 1

    def by_step(a):
        a = a.reshape((m, n_steps, batch_size) + a.shape[1:]).swapaxes(0, 1)
        return a.reshape((n_steps, m * batch_size) + a.shape[3:])
    Xb, yb, phi_s, dphi_s = snapshot_terms(risks, batch, z_s, snap_w)
    if sparse.issparse(Xb):       # CSR rows (a sparse design): reordered step-major, one slice of rows per step
        per = m * batch_size
        Xb = Xb[by_step(np.arange(Xb.shape[0])).ravel()]
        Xb = [Xb[j * per:(j + 1) * per] for j in range(n_steps)]
    else:
        Xb = by_step(Xb)
    return Xb, by_step(yb), by_step(phi_s), by_step(dphi_s)


def vr_operator(risks: GroupRiskOracle, Xb, yb, phi_s, dphi_s, batch_size: int, w_half, q_half, snap_q, r_s, g_s):
    """The variance-reduced estimator g of eq. (22) at z_half = (w_half, q_half), as (v_w, v_q).

    g = grad F(z_half; xi) - grad F(z^s; xi) + grad F(z^s) with the stochastic operator (21)
    grad F(z; xi) = (sum_i q_i grad l(w; xi_i); -[l(w; xi_i)]_i); xi = the rows of ``Xb`` (batch_size per group,
    group by group) with labels ``yb`` and snapshot terms ``phi_s``, ``dphi_s`` (:func:`snapshot_terms`).
    r_s, g_s: the (offset) risks and q^s-weighted gradient at the snapshot. Per-group offsets cancel in the
    difference term (stage 2 of MERO, the paper's (96)-(97)).
    """
    m = risks.m
    z_half = Xb @ w_half
    diff = (risks.loss.phi(z_half, yb) - phi_s).reshape(m, batch_size).sum(axis=1) / batch_size
    coef_half = risks.loss.dphi(z_half, yb)
    wq_half = np.repeat(q_half / batch_size, batch_size)
    wq_s = np.repeat(snap_q / batch_size, batch_size)
    if coef_half.ndim == 2:
        coef = coef_half * wq_half[:, None] - dphi_s * wq_s[:, None]
    else:
        coef = coef_half * wq_half - dphi_s * wq_s
    return Xb.T @ coef + g_s, -(diff + r_s)


def check_initial(risks: GroupRiskOracle, w0, q0):
    """Validated (w0, ln q0): w0 in the domain, q0 strictly inside the simplex."""
    w = risks.project(np.zeros(risks.shape)) if w0 is None else risks.check_start(w0, "w0")
    if q0 is None:
        return w, np.full(risks.m, -math.log(risks.m))
    q = np.asarray(q0, dtype=float)
    if q.shape != (risks.m,) or not np.all(np.isfinite(q)):
        raise OptionError(f"q0 must be a finite vector of length {risks.m} (one weight per group)")
    if np.any(q <= 0) or abs(q.sum() - 1.0) > 1e-9:
        raise OptionError(f"q0 must lie in the interior of the simplex (all entries > 0, sum 1; the entropy "
                          f"mirror map needs q > 0); got min {q.min():.3g}, sum {q.sum():.12g}")
    return w, np.log(q)


def aleg(risks: GroupRiskOracle, *, epochs: int = 50, inner=None, batch_size: int = 4, alpha=None, eta=None,
         step_w=None, step_q=None, step_schedule="constant", schedule_mode: str = "practical", theta: float = 0.8,
         offsets=None, w0=None, q0=None, output: str = "average", seed=None, verbose=None, callback=None,
         max_grad_evals: int | None = None, max_time: float | None = None, track_output: bool = False,
         trace: list | None = None, prefetch: bool = True, step_scale: float = 1.0,
         design_metric: bool = False) -> dict:
    """Run ALEG (Algorithm 1) on the group risks ``risks`` (minus per-group ``offsets``, eq. (6)).

    Parameters (the inputs of Algorithm 1)
    ----------
    epochs : S. inner : K_s (int, per-epoch sequence or callable s -> K_s); default ceil(n_bar / batch_size).
    alpha : alpha_k^s in (0, 1] (number, array or callable (s, k)); default 1 / K_s.
    Steps, one of: ``eta`` (the paper's eta_k^s; needs a radius), ``step_w``/``step_q`` effective steps times
    ``step_schedule`` ("constant", "decreasing" = 1/sqrt(s+1), array or callable), or
    ``schedule_mode="theory"`` (eta = sqrt(alpha (1 - theta)) / L_z, L_z of eq. (25) from the data).
    step_scale : a factor of the default w-step (no ``step_w``), which keeps the design metric the default steps
        choose (the families' second runs, :func:`metric_radius_scale`).
    design_metric : the default steps in the design metric (:func:`design_coordinates`) even where the design's
        ratios would leave them Euclidean (the families' second run after Euclidean steps failed).
    output : "average" (eq. (24), the eta-weighted mean of all half iterates), "suffix" (the same mean over
        the second half of the epochs), "tail" (the same mean over the last half to three quarters of the epochs
        run so far, :class:`~fairmodel.stochastic.averaging.TailAverage`: for runs that stop on a certificate
        before ``epochs``) or "snapshot" (the last snapshot).
    callback : called after every epoch with a dict (epoch, w, q: the output the run would return now,
        grad_evals, time); return True to stop.
    trace : a list to which every inner step appends its iterates (for tests and teaching; costs memory).
    prefetch : on chunked (Dask) data, gather the next buffer of sampled rows in a background thread while
        the steps use the current one (the rows drawn are the same either way); the time spent waiting for
        sampled rows is returned as ``sampler_wait``.
    m = 1 needs no special case: ln q = 0 is a fixed point of the normalised q-step (Delta_1 = {1}).

    Returns a dict with w, q (the output), status, message, history and counters. The gradient
    counter counts, per inner step, 2 b m per-sample gradients (at the half point and at the snapshot,
    as the paper counts) and n per full pass.
    """
    if schedule_mode not in ("practical", "theory"):
        raise OptionError(f"schedule_mode must be 'practical' or 'theory'; got {schedule_mode!r}")
    if output not in OUTPUTS:
        raise OptionError(f"output must be one of {', '.join(OUTPUTS)}; got {output!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise OptionError(f"batch_size must be a positive integer; got {batch_size!r}")
    rng = as_generator(seed)
    m, n = risks.m, risks.n_samples
    n_bar = n / m
    lengths = epoch_lengths(max(1, math.ceil(n_bar / batch_size)) if inner is None else inner, epochs)
    alpha_f = (lambda s, k: 1.0 / lengths[s]) if alpha is None else schedule(alpha, "alpha", lengths, high=1.0)
    c = np.zeros(m) if offsets is None else _check_offsets(offsets, m)
    w, logq = check_initial(risks, w0, q0)
    if isinstance(step_scale, bool) or not isinstance(step_scale, (int, float, np.integer, np.floating)) or \
            not (np.isfinite(step_scale) and step_scale > 0):
        raise OptionError(f"step_scale must be a positive finite number; got {step_scale!r}")
    steps = _Steps(risks, lengths, alpha_f, eta, step_w, step_q, step_schedule, schedule_mode == "theory", theta,
                   batch_size, lambda: start_risk_scale(risks, w, c), step_scale, design_metric)
    sampler = risks.sampler(batch_size, rng, prefetch=prefetch)
    try:
        out = _aleg_loop(risks, sampler, epochs, lengths, alpha_f, steps, c, w, logq, output, verbose, callback,
                         max_grad_evals, max_time, track_output, trace, batch_size)
    finally:
        close = getattr(sampler, "close", None)       # a chunk sampler's prefetch thread ends here
        if close is not None:
            close()
    out["sampler_wait"] = float(getattr(sampler, "wait_time", 0.0))
    return out


def _aleg_loop(risks, sampler, epochs, lengths, alpha_f, steps, c, w, logq, output, verbose, callback,
               max_grad_evals, max_time, track_output, trace, batch_size) -> dict:
    """The epochs of Algorithm 1 (see :func:`aleg`)."""
    m, n = risks.m, risks.n_samples
    keep_scores = not risks.data.is_chunked      # chunked data: the sampled rows' snapshot scores are recomputed

    # virtual epoch -1 (Algorithm 1, line 2): every iterate equals z_0, so the first snapshot is z_0
    snap_w, snap_q, snap_lam = w.copy(), np.exp(logq), logq.copy()
    average = TailAverage()          # output (24) over the chosen epochs: all, the second half, or the tail
    evals, history, status, message = 0, [], "completed", ""
    start = time.perf_counter()
    suffix_from = epochs // 2 if output == "suffix" else 0

    def current_output():
        """The output the run returns if it stops now: (w, q)."""
        value = average.value() if output != "snapshot" else None
        if value is None:
            return snap_w, snap_q
        return value[0], value[1] / value[1].sum()

    with Progress(epochs, "ALEG", verbose) as bar:
        for s in range(epochs):
            # line 4 (after lines 5-6): full operator at the snapshot, eq. (16)
            r_s, g_s, z_s = risks.risks_and_grad(snap_w, snap_q, keep_scores=keep_scores)
            r_s = r_s - c
            evals += n
            if not (np.all(np.isfinite(r_s)) and np.all(np.isfinite(g_s))):
                status, message = "diverged", (f"non-finite group risks or gradient at the snapshot of epoch {s}; "
                                               f"the steps are too large for this data (try smaller step_w/step_q)")
                break
            history.append({"epoch": s, "max_risk": float(np.max(r_s)), "objective": float(np.max(r_s)),
                            "grad_evals": evals, "time": time.perf_counter() - start})
            acc_w, acc_logq, acc_q, acc_a = np.zeros_like(w), np.zeros(m), np.zeros(m), 0.0
            if output == "tail":
                average.start_epoch(s)
            elif s == suffix_from and output == "suffix":
                average = TailAverage()
            for k in range(lengths[s]):
                if k % BLOCK == 0:  # per-group sampling (20) for the next BLOCK steps at once
                    block = draw_block(risks, sampler, batch_size, min(BLOCK, lengths[s] - k), z_s, snap_w)
                a, gw, gq = alpha_f(s, k), steps.gw(s, k), steps.gq(s, k)
                anchor_w, anchor_logq = a * snap_w + (1.0 - a) * w, a * snap_lam + (1.0 - a) * logq
                # half step (19) with the full snapshot operator (g_s; -r_s)
                w_half, logq_half = prox_step(risks, anchor_w, anchor_logq, g_s, -r_s, gw, gq, steps.metric)
                q_half = np.exp(logq_half)
                # variance-reduced estimator (22) on this step's samples, full step (23) with the same anchors
                j = k % BLOCK
                v_w, v_q = vr_operator(risks, block[0][j], block[1][j], block[2][j], block[3][j], batch_size,
                                       w_half, q_half, snap_q, r_s, g_s)
                w, logq = prox_step(risks, anchor_w, anchor_logq, v_w, v_q, gw, gq, steps.metric)
                evals += 2 * m * batch_size
                if trace is not None:
                    trace.append({"epoch": s, "step": k, "w_half": w_half, "q_half": q_half, "w": w,
                                  "q": np.exp(logq), "snap_w": snap_w, "snap_q": snap_q, "snap_lam": snap_lam,
                                  "alpha": a})
                # output (24): eta-weighted half iterates; snapshot (17)/(18): z_{k+1} weighted by alpha_k
                if s >= suffix_from:
                    average.add(steps.weight(s, k), w_half, q_half)
                acc_a += a
                acc_w += a * w
                acc_logq += a * logq
                acc_q += a * np.exp(logq)
            # snapshot (17) and mirror snapshot (18) for the next epoch, normalised over this epoch's
            # K_s steps (the K_{s-1} of the next epoch, as in the proof (53)-(54); (17)/(18) print K_s)
            snap_w, snap_lam = acc_w / acc_a, acc_logq / acc_a
            snap_q = acc_q / acc_a
            snap_q /= snap_q.sum()
            elapsed = time.perf_counter() - start
            if track_output and average.weight > 0:
                history[-1]["output_objective"] = float(np.max(risks.risks(current_output()[0]) - c))
            bar.update(1, max_risk=history[-1]["max_risk"])
            stop = check_budget(s, evals, elapsed, max_grad_evals, max_time, callback,
                                lambda: dict(zip(("w", "q"), current_output()), epoch=s, grad_evals=evals,
                                             time=elapsed))
            if stop:
                status, message = stop
                break

    w_out, q_out = current_output()
    if not np.all(np.isfinite(w_out)):
        status, message = "diverged", message or "the output contains non-finite values"
    return {"w": w_out, "q": q_out, "status": status, "message": message, "history": history,
            "grad_evals": evals, "epochs_run": len(history), "inner": lengths,
            "steps": {"step_w": steps.gw(0, 0), "step_q": steps.gq(0, 0)}}


def _check_offsets(offsets, m: int) -> np.ndarray:
    c = np.asarray(offsets, dtype=float)
    if c.shape != (m,) or not np.all(np.isfinite(c)):
        raise OptionError(f"offsets must be a finite vector with one entry per group ({m})")
    return c


def mero_two_stage(risks: GroupRiskOracle, *, budget: float | None = None, stage1: dict | None = None,
                   stage1_callback=None, stage1_settle=None, stage1_offsets=None, seed=None, verbose=None,
                   **stage2) -> dict:
    """Two-stage MERO (Algorithm 2, Section 5): per-group ALEG (m = 1) gives R_hat*_i = R_i(w_bar_i)
    by a full pass; then ALEG on the shifted risks R_i - R_hat*_i (eq. (6)).

    ``budget`` is T of Theorems 5.2/5.3: both stages run S = ceil(T / sqrt(n_bar)) epochs unless
    ``epochs`` is given in ``stage1`` / ``stage2``. ``stage1_callback(i)``: the callback of group i's stage-1 run
    (e.g. a stop on its suboptimality). ``stage1_settle(i, estimate)``: the offset stage 2 takes for group i given
    its stage-1 estimate (default: the estimate). ``stage1_offsets``: the R_hat* of an earlier stage 1 (stage 1 is
    not run again; ``group_w`` is then empty). Returns the stage-2 output plus
    ``offsets`` (R_hat*), ``group_w`` (the w_bar_i) and the total gradient count.
    """
    budget = check_number(budget, "budget", low=0.0, strict=True, allow_none=True)
    if stage1 is not None and not isinstance(stage1, dict):
        raise OptionError(f"stage1 must be a dict of ALEG's options for stage 1 (e.g. {{'epochs': 40}}) or None; "
                          f"got {stage1!r}")
    rng = as_generator(seed)
    n_bar = risks.n_samples / risks.m
    default_epochs = max(1, math.ceil(budget / math.sqrt(n_bar))) if budget is not None else None
    s1 = dict(stage1 or {})
    if default_epochs is not None:
        s1.setdefault("epochs", default_epochs)
        stage2.setdefault("epochs", default_epochs)
    s1.setdefault("inner", max(1, round(n_bar / s1.get("batch_size", 1))))  # K = n_bar (Thm 5.2)
    offsets, group_w, evals = np.empty(risks.m), [], 0
    if stage1_offsets is not None:
        offsets = _check_offsets(stage1_offsets, risks.m)
    for i in range(risks.m if stage1_offsets is None else 0):
        single = risks.single_group(i)
        callback = stage1_callback(i) if stage1_callback is not None else s1.get("callback")
        res = aleg(single, seed=rng, verbose=False, **{**s1, "callback": callback})
        if res["status"] == "diverged":
            res["message"] = f"stage 1 (group {risks.names[i]}): {res['message']}"
            return {**res, "offsets": offsets, "group_w": group_w, "grad_evals": evals + res["grad_evals"]}
        group_w.append(res["w"])
        offsets[i] = float(single.risks(res["w"])[0])  # R_hat*_i = R_i(w_bar_i), a full pass
        if stage1_settle is not None:
            offsets[i] = stage1_settle(i, offsets[i])
        evals += res["grad_evals"] + single.n_samples
    res = aleg(risks, offsets=offsets, seed=rng, verbose=verbose, **stage2)
    res.update(offsets=offsets, group_w=np.array(group_w), grad_evals=evals + res["grad_evals"],
               stage1_grad_evals=evals)
    return res
