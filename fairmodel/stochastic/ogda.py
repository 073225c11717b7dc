"""Zeroth-order (or first-order) optimistic and plain gradient descent-ascent with random reshuffling
for finite-sum convex-concave saddle problems ``min_x max_y (1/n) sum_i L_i(x, y)`` (Maheshwari, Chiu,
Mazumdar, Sastry, Ratliff, "Zeroth-order methods for convex-concave minmax problems: applications to
decision-dependent risk minimization", AISTATS 2022; Section 4 and Appendix C.1).

Methods (one query set per inner step i of epoch t, u = (x, y), F = (grad_x L, -grad_y L)):

* ``ogda-rr`` (Algorithm 1, eq. (5)/(41)): sigma^t a fresh permutation per epoch and
  ``u_{i+1} = Proj(u_i - eta F_hat_{s_i}(u_i; v_i) - eta F_hat_{s_{i-1}}(u_i; v_i)
  + eta F_hat_{s_{i-1}}(u_{i-1}; v_{i-1}))``
  (the sign of the last term is "+", as in eq. (5), eq. (41) and the proof's gamma_i^t; the proof of
  Lemma A.7 once restates the update with "-");
* ``ogda-wr`` (Algorithm 2, eq. (42)): the same with indices drawn with replacement;
* ``sgda-rr`` (eq. (43)) and ``sgda-wr`` (eq. (44)): ``u_{i+1} = Proj(u_i - eta F_hat_{s_i}(u_i; v_i))``.
  The printed bodies of Algorithms 3 and 4 (Appendix C.1) are swapped relative to their names and
  equations (an erratum of the paper); these follow the names and the equations.

The estimator (Section 4.1, Prop. A.3) is the one-point sphere estimator ``(d/R) L_i(u + R v) v`` with the
sign flip J = diag(I, -I) of the y-block (the paper never writes it, but the updates need F, not grad L),
applied to the coordinates of ``oracle.zo`` (the block mode of the paper's experiments, Section 6, which
estimates only the theta-gradient: the others use the oracle's exact partial gradients at u).
``estimator="two-point"`` is a NON-PAPER extension:
the central difference ``(d/(2R)) (L_i(u + R v) - L_i(u - R v)) v``, same mean, far lower variance.
``variance_reduction=True`` (NON-PAPER) replaces F_i(u) by F_i(u) - F_i(w) + F_bar(w), w the iterate at the start of
the epoch (:class:`~fairmodel.stochastic.ogda_estimator.SnapshotEstimate`; at order 0, F_bar(w) by coordinate
differences and F_i(w) along the direction of F_i(u)); the optimistic difference F_(s_(i-1))(u_i) -
F_(s_(i-1))(u_(i-1)) is left as it is (within an epoch the snapshot's terms cancel there), at order 0 taken along the
direction of F_(s_(i-1))(u_(i-1)).

Schedules (Thm 4.1, with the step exponent -3/4-chi of its proof: the statement prints -3/4+chi, under which
sum_t eta_t R_t diverges): ``eta_t = eta0 (t+1)^(-3/4-chi)``, ``R_t = R0 (t+1)^(-1/4)``,
depending on the epoch t only; ``schedule="constant"`` keeps eta0 and R0; arrays and callables are
accepted too. Output: the step-size-weighted average of all post-update iterates u_{i+1}^t.

Extension (NON-PAPER, off by default): ``y_step_scale`` s multiplies the y-block step. When the
zeroth-order coordinates lie in x, this is exactly OGDA in the coordinates (x, y / sqrt(s)), i.e. in the
norm ||x||^2 + ||y||^2 / s (the projection onto a product X x Y stays blockwise), so Theorem 4.1 applies
with D and G measured in that norm. It matters when each L_i touches one coordinate of y (strategic DRO:
y = gamma in [-1, 1]^n), where the plain Euclidean geometry moves y n times more slowly than x (measured
in docs/minmax.md). ``output="suffix"`` (NON-PAPER) averages the second half of the epochs only.

Memory: an epoch's directions v are drawn ``DIRECTION_BLOCK`` steps at a time, fewer where that would hold more than
``DIRECTION_FLOATS`` numbers (the same random stream as all at once), and the oracle is told the epoch's components
first (``prepare_epoch``), so that an oracle on chunked rows gathers them a block at a time: the run never holds an
n x d array.
"""
from __future__ import annotations

import math
import numbers
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import OptionError
from ..oracles.protocols import SaddleOracle
from ..utilities.progress import Progress
from ..utilities.validate import as_generator, check_int, check_number
from .averaging import tail_start
from .ogda_estimator import FD_RADIUS, Estimator, SnapshotEstimate, sphere_directions
from .schedules import epoch_lengths, schedule

METHODS = {
    "ogda-rr": "zeroth-order OGDA with random reshuffling (Algorithm 1 of Maheshwari et al. 2022)",
    "ogda-wr": "zeroth-order OGDA, components drawn with replacement (Algorithm 2 of Maheshwari et al. 2022)",
    "sgda-rr": "zeroth-order SGDA with random reshuffling (eq. (43) of Maheshwari et al. 2022)",
    "sgda-wr": "zeroth-order SGDA, components drawn with replacement (eq. (44) of Maheshwari et al. 2022)",
}
ESTIMATORS = ("one-point", "two-point")
NOISE_MARGIN = 2.0        # noise=: the steps shrink once the measured noise exceeds twice the noise they were set for
HISTORY_RECORDS = 1000   # a run of a one-component game can take 10^6 epochs: its history is thinned
DIRECTION_BLOCK = 4096   # the directions v of an epoch are drawn this many steps at a time (the same random stream),
DIRECTION_FLOATS = 1 << 16   # fewer where a block would hold more numbers than this (512 KB, within a core's cache):
                          # with 118 directions of 118 coordinates a step (Communities, 1,994 rows) an epoch's block
                          # was 222 MB; in blocks of four steps the same numbers came out and the default run took
                          # 70 s against 81-82 s (one thread, measured side by side)


def _positive(value, name: str) -> float:
    return check_number(value, name, low=0.0, strict=True)


SCHEDULES = ("theory", "constant", "anytime")


def step_schedules(kind, eta0, R0, chi, epochs: int, eta_max=None):
    """(eta(t), R(t)) from ``kind`` and eta0/R0 (numbers, arrays, callables): ``"theory"`` (Theorem 4.1),
    ``"constant"``, or ``"anytime"`` (NON-PAPER): ``eta_t = min(eta_max, eta0 / sqrt(t + 1))`` and a constant R0,
    a schedule that does not depend on the run's length (the steps of robust stochastic approximation with
    variable steps, Nemirovski, Juditsky, Lan, Shapiro, SIAM J. Optim. 2009, Section 2.3: with the average over
    the last half of the iterates the error is of the order of that of the best constant step for the same
    number of steps, without knowing that number), capped at eta_max (e.g. 1/(2 ell), Theorem 4.1's hypothesis)."""
    lengths = epoch_lengths(1, epochs)
    if kind not in SCHEDULES:
        raise OptionError(f"schedule must be 'theory' (eta0 (t+1)^(-3/4-chi), R0 (t+1)^(-1/4); Theorem 4.1 of Maheshwari et al. 2022), "
                          f"'constant' or 'anytime' (min(eta_max, eta0 / sqrt(t+1)), R0); got {kind!r}")
    cap = math.inf if eta_max is None else _positive(eta_max, "eta_max")
    if kind == "theory":
        chi = float(chi)
        if not 0.0 < chi < 0.25:
            raise OptionError(f"chi must lie in (0, 1/4) for the theory schedule (Theorem 4.1 of Maheshwari et al. "
                              f"2022); got {chi}")
    powers = {"theory": (-0.75 - chi, -0.25), "constant": (0.0, 0.0), "anytime": (-0.5, 0.0)}[kind]
    funcs = []
    for value, name, power in ((eta0, "eta0", powers[0]), (R0, "R0", powers[1])):
        if isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, bool):
            base = _positive(value, name)
            if name == "eta0" and kind == "anytime":
                funcs.append(lambda t, base=base: min(cap, base / math.sqrt(t + 1.0)))
            else:
                funcs.append(lambda t, base=base, power=power: base * (t + 1.0) ** power)
        else:  # a user schedule: an array with one value per epoch, or a callable (t, 0) -> value
            f = schedule(value, name, lengths)
            funcs.append(lambda t, f=f: f(t, 0))
    return funcs[0], funcs[1]


@dataclass
class OGDAOptions:
    """The step, estimator and averaging options of :func:`ogda`, checked when created.

    method : one of ``ogda-rr``, ``ogda-wr``, ``sgda-rr``, ``sgda-wr``.
    order : 0 (value oracle; zeroth-order estimator on ``oracle.zo``) or 1 (exact gradients).
    epochs : T; an epoch is n inner steps (a cap when ``stop`` ends the run on a certificate).
    eta0, R0, chi, schedule, eta_max : step and query-radius schedules (see :func:`step_schedules`).
    estimator : ``"one-point"`` (the paper's) or ``"two-point"`` (NON-PAPER extension, module docstring).
    variance_reduction : NON-PAPER: the variance-reduced estimate of the module docstring in place of F_i(u) (at order
        1, 2n more gradients an epoch: the snapshot's pass and one more per step, at the snapshot; at order 0, 2 d_zo n
        queries for the snapshot's mean and one more estimate per step).
    directions : k, the directions of one estimate (NON-PAPER for k > 1, module docstring): the mean of k
        estimates at independent directions, queried in one call of ``oracle.values``.
    y_step_scale : multiplier of the y-block step (NON-PAPER extension, module docstring); 1 = the paper.
    output : ``"average"`` (the paper's eta-weighted average of all post-update iterates), ``"suffix"``
        (NON-PAPER: the same average over the second half of the epochs, which drops the transient from
        u_0; with constant steps the full average keeps a bias of order 1/T from it) or ``"tail"`` (NON-PAPER:
        for a run of unknown length, at epoch s in [2^j, 2^(j+1)) the average over the epochs 2^(j-1)..s,
        between the last half and the last three quarters of the run; the doubling trick of
        :mod:`fairmodel.stochastic.averaging`).
    first_step : ``"drop"`` (no optimistic term at the very first step, where u_{-1} is undefined) or ``"repeat"``
        (u_{-1} := u_0 with a random sigma_{-1}: one extra query).
    boundary : ``"reuse"`` (the cached F_hat of the last step of the previous epoch, computed with
        R^{t-1}) or ``"recompute"`` (recomputed with R^t: one extra query per epoch boundary).
    ell : the smoothness constant, if known: warns when eta0 >= 1/(2 ell) (Theorem 4.1's hypothesis).
    noise : NON-PAPER: the noise of the x-part of the estimates the steps were set for (``sigma_x`` of
        :func:`~fairmodel.stochastic.ogda_estimator.auto_steps`); when the root-mean-square deviation of the x-part
        of the fresh estimates F_hat_(s_i)(u_i) around their mean within an epoch exceeds twice that, the steps of
        the following epochs are multiplied by 2 ``noise`` / (the largest such deviation seen so far): never up
        (the factor 2 leaves the sampling error of the probes alone). The
        step of robust stochastic approximation D / (M sqrt(N)) needs the noise M over the whole domain, which
        probes at the start can underestimate (a one-point estimate (d/R) L_i(u + R v) v grows with |L_i|, e.g.
        with ||w|| in strategic DRO, where the larger steps otherwise feed on themselves).
    """

    method: str = "ogda-rr"
    order: int = 0
    epochs: int = 100
    eta0: object = 0.01
    R0: object = 0.1
    chi: float = 0.05
    schedule: str = "theory"
    eta_max: object = None
    estimator: str = "one-point"
    variance_reduction: bool = False
    directions: int = 1
    y_step_scale: float = 1.0
    output: str = "average"
    first_step: str = "drop"
    boundary: str = "reuse"
    ell: object = None
    noise: object = None

    def __post_init__(self):
        if self.method not in METHODS:
            raise OptionError(f"unknown method {self.method!r}; valid methods are {', '.join(METHODS)}")
        if self.order not in (0, 1) or isinstance(self.order, bool):
            raise OptionError(f"order must be 0 (zeroth order: values only) or 1 (gradients); got {self.order!r}")
        if self.estimator not in ESTIMATORS:
            raise OptionError(f"estimator must be one of {', '.join(ESTIMATORS)}; got {self.estimator!r}")
        if self.variance_reduction not in (True, False):
            raise OptionError(f"variance_reduction must be True or False; got {self.variance_reduction!r}")
        if self.output not in ("average", "suffix", "tail"):
            raise OptionError(f"output must be 'average', 'suffix' or 'tail'; got {self.output!r}")
        if self.first_step not in ("drop", "repeat"):
            raise OptionError(f"first_step must be 'drop' or 'repeat'; got {self.first_step!r}")
        if self.boundary not in ("reuse", "recompute"):
            raise OptionError(f"boundary must be 'reuse' or 'recompute'; got {self.boundary!r}")
        self.y_step_scale = _positive(self.y_step_scale, "y_step_scale")
        self.directions = check_int(self.directions, "directions")
        if self.noise is not None:
            self.noise = _positive(self.noise, "noise")

    @property
    def optimistic(self) -> bool:
        return self.method.startswith("ogda")

    @property
    def reshuffle(self) -> bool:
        return self.method.endswith("-rr")


class StepSizes:
    """eta_t and R_t of epoch t: the schedule (:func:`step_schedules`) times the noise damping (``noise=``, never
    up) and the factor of the warm restarts asked by ``stop``."""

    def __init__(self, opts: OGDAOptions):
        self.eta_f, self.R_f = step_schedules(opts.schedule, opts.eta0, opts.R0, opts.chi, opts.epochs, opts.eta_max)
        if opts.ell is not None and self.eta_f(0) >= 1.0 / (2.0 * _positive(opts.ell, "ell")):
            warnings.warn(f"eta0 = {self.eta_f(0):g} >= 1/(2 ell) = {1 / (2 * opts.ell):g}: the step hypothesis of "
                          f"Theorem 4.1 of Maheshwari et al. 2022 fails, convergence is not guaranteed", stacklevel=3)
        self.noise, self.y_scale = opts.noise, opts.y_step_scale
        self.damping, self.rescale, self.restarts = 1.0, 1.0, 0

    def at(self, t: int) -> tuple[float, float]:
        """(eta, R) of epoch t."""
        return self.eta_f(t) * self.damping * self.rescale, self.R_f(t)

    def observe_noise(self, g_sum: np.ndarray, g_sq: float, n: int) -> None:
        """Shrink the following epochs' steps when the spread of this epoch's x-estimates exceeds the noise set."""
        if self.noise is not None and n > 1:
            spread = math.sqrt(max(g_sq - float(g_sum @ g_sum) / n, 0.0) / (n - 1))
            self.damping = min(self.damping, NOISE_MARGIN * self.noise / spread) if spread > 0 else self.damping

    def restart(self, factor: float) -> None:
        self.rescale *= factor
        self.restarts += 1

    def summary(self, done: int) -> dict:
        return {"eta0": self.eta_f(0), "eta_last": self.eta_f(max(done - 1, 0)) * self.damping * self.rescale,
                "R0": self.R_f(0), "step_damping": self.damping, "step_restarts": self.restarts,
                "y_step_scale": self.y_scale}


class IterateAverage:
    """The eta-weighted average of the post-update iterates over the output window of ``output``.

    The y-part is summed lazily (a coordinate's running sum is brought up to date only when it changes:
    sum += y_j * (W - W at its last change), in :meth:`_Run.step_y`), so a step that changes a few coordinates of y costs
    O(d_x). ``anchors`` hold the running sums at the epochs 2^j where a tail window may start.
    """

    def __init__(self, d_x: int, d_y: int, output: str, epochs: int, store: bool):
        self.acc_x, self.acc_y, self.last_w, self.weight = np.zeros(d_x), np.zeros(d_y), np.zeros(d_y), 0.0
        self.output, self.epochs, self.store = output, epochs, store
        self.base_sum, self.base_weight = 0.0, 0.0     # the running sum and weight where the output window starts
        self.anchors, self.restart = {}, None          # tail windows; the last restart (epoch, sum, weight)
        self.iterates, self.iterate_weights = [], []

    def running_sum(self, y: np.ndarray) -> np.ndarray:
        return np.concatenate([self.acc_x, self.acc_y + y * (self.weight - self.last_w)])

    def start_epoch(self, t: int, y: np.ndarray) -> None:
        """Mark where an output window may start (the second half for "suffix", powers of two for "tail")."""
        if self.output == "suffix" and t == self.epochs // 2:
            self.base_sum, self.base_weight = self.running_sum(y), self.weight
        elif self.output == "tail" and t & (t - 1) == 0:
            self.anchors = {e: v for e, v in self.anchors.items() if e >= t // 4}
            self.anchors[t] = (self.running_sum(y), self.weight)

    def mark_restart(self, epoch: int, y: np.ndarray) -> None:
        """A warm restart: with ``output="tail"`` the window starts again at ``epoch``."""
        self.restart = (epoch, self.running_sum(y), self.weight)

    def output_now(self, u: np.ndarray, done: int) -> np.ndarray:
        """The output of a run stopped now: the average over the output window (over all the iterates when the
        window has not started yet), or u itself before any step."""
        s0, w0 = self.base_sum, self.base_weight
        if self.output == "tail" and done:
            first = tail_start(done - 1)
            s0, w0 = self.anchors.get(first, (0.0, 0.0))
            if self.restart is not None and first < self.restart[0] < done:     # the window starts at the restart
                s0, w0 = self.restart[1], self.restart[2]
        y = u[self.acc_x.shape[0]:]
        if self.weight > w0:
            return (self.running_sum(y) - s0) / (self.weight - w0)
        return self.running_sum(y) / self.weight if self.weight > 0 else u.copy()


class _Constant:
    """The bounds of a box whose every coordinate has the same bound: ``lo[j]`` without a list of n numbers."""

    __slots__ = ("value",)

    def __init__(self, value: float):
        self.value = value

    def __getitem__(self, j) -> float:
        return self.value


def _bounds(b: np.ndarray):
    """One side of the y-box for the sparse steps: plain Python numbers (a list, or one number for all)."""
    b = np.asarray(b, dtype=float)
    return _Constant(float(b[0])) if b.size and np.all(b == b[0]) else b.tolist()


class _Run:
    """One run's iterate u = (x, y) (updated in place), its estimator, steps, average and the optimistic memory
    (the previous component, its estimate, and the point and direction it was taken at)."""

    def __init__(self, oracle: SaddleOracle, opts: OGDAOptions, u: np.ndarray, rng, store: bool):
        self.oracle, self.opts, self.u, self.rng = oracle, opts, u, rng
        self.n, self.d_x = oracle.n, oracle.d_x
        self.x, self.y = u[:self.d_x], u[self.d_x:]          # views: the iterate is updated in place
        self.est = Estimator(oracle, opts.order, opts.estimator)
        self.snapshot = SnapshotEstimate(self.est) if opts.variance_reduction else None
        self.steps = StepSizes(opts)
        self.avg = IterateAverage(self.d_x, oracle.dim - self.d_x, opts.output, opts.epochs, store)
        box = oracle.y_box
        self.box, self.lo, self.hi = box, *((_bounds(box[0]), _bounds(box[1])) if box is not None else (None, None))
        self.prepare = getattr(oracle, "prepare_epoch", None)
        self.prev_i, self.g_prev, self.u_prev, self.v_prev = None, None, None, None
        self.v_last = None                                  # the direction g_prev was estimated along (order 0)
        self.k = 0                                          # the inner step (for the message of a failure)

    def step_y(self, terms, step: float) -> None:
        """y <- Proj_Y(y - step * sum of the y-parts of ``terms``), sparse when every part is."""
        y, avg = self.y, self.avg
        if self.box is not None and all(t[1] is not None for t in terms):
            # a few coordinates: plain Python scalars beat NumPy calls on 1-3 entries (measured ~5x)
            acc_y, last_w, weight, lo, hi = avg.acc_y, avg.last_w, avg.weight, self.lo, self.hi
            change: dict = {}
            for _, yi, gy in terms:
                for j, g in zip(yi.tolist(), gy.tolist()):
                    change[j] = change.get(j, 0.0) + g
            for j, g in change.items():
                acc_y[j] += y[j] * (weight - last_w[j])
                last_w[j] = weight
                yj = y[j] - step * g
                y[j] = min(max(yj, lo[j]), hi[j])
            return
        total = np.zeros(y.shape[0])
        for _, yi, gy in terms:
            if yi is None:
                total += gy
            else:
                np.add.at(total, yi, gy)
        avg.acc_y[:] += y * (avg.weight - avg.last_w)
        avg.last_w[:] = avg.weight
        y[:] = self.oracle.project_y(y - step * total)

    def epoch(self, t: int) -> tuple[float, float]:
        """The n inner steps of epoch t (eq. (5) for OGDA, (43)/(44) for SGDA); returns (eta, R)."""
        opts, est, avg, rng, n, u, x = self.opts, self.est, self.avg, self.rng, self.n, self.u, self.x
        optimistic, order, noise = opts.optimistic, opts.order, opts.noise is not None
        avg.start_epoch(t, self.y)
        eta, R = self.steps.at(t)
        g_sum, g_sq = np.zeros(self.d_x), 0.0
        step_x, step_yb = eta, eta * opts.y_step_scale
        prev_i, g_prev, v_last = self.prev_i, self.g_prev, self.v_last
        if optimistic and t == 0 and opts.first_step == "repeat":
            prev_i, self.u_prev = int(rng.integers(0, n)), u.copy()
            self.v_prev = sphere_directions(rng, 1, est.d_zo, opts.directions)[0] if order == 0 else None
        idx_t = rng.permutation(n) if opts.reshuffle else rng.integers(0, n, size=n)
        if self.prepare is not None:        # e.g. an oracle on chunked rows gathers the epoch's rows ahead
            self.prepare(idx_t)
        if optimistic and t == 0 and opts.first_step == "repeat":
            g_prev, v_last = est(prev_i, self.u_prev, R, self.v_prev), self.v_prev
        elif optimistic and t > 0 and opts.boundary == "recompute":
            g_prev, v_last = est(prev_i, self.u_prev, R, self.v_prev), self.v_prev
        recompute, project_x, step_y, snapshot = opts.boundary == "recompute", self.oracle.project_x, self.step_y, \
            self.snapshot
        if snapshot is not None:            # at order 0 its mean by coordinate differences, at the two-point radius
            snapshot.reset(u, FD_RADIUS * R)
        store = avg.store
        block = max(1, min(DIRECTION_BLOCK, DIRECTION_FLOATS // (est.d_zo * opts.directions)))
        k = 0
        try:
            for k in range(n):
                if k % block == 0:    # the directions of the next steps, a block at a time: O(block d)
                    V = sphere_directions(rng, min(block, n - k), est.d_zo, opts.directions) if order == 0 else None
                i, v = int(idx_t[k]), None if V is None else V[k % block]
                g_cur = est(i, u, R, v)
                g_step = g_cur if snapshot is None else snapshot(i, g_cur, R, v)
                if noise:
                    g_sum += g_step[0]
                    g_sq += float(g_step[0] @ g_step[0])
                if optimistic and prev_i is not None:
                    # with variance reduction along g_prev's direction, so that the difference loses its noise too
                    g_pc = est(prev_i, u, R, v if snapshot is None else v_last)
                    gx = g_step[0] + g_pc[0] - g_prev[0]
                    terms = (g_step, g_pc, (None, g_prev[1], -g_prev[2]))
                else:
                    gx, terms = g_step[0], (g_step,)
                if optimistic:
                    prev_i, g_prev, v_last = i, g_cur, v
                    if recompute and k == n - 1:
                        self.u_prev, self.v_prev = u.copy(), v
                x[:] = project_x(x - step_x * gx)
                step_y(terms, step_yb)
                avg.acc_x += eta * x
                avg.weight += eta
                if store:
                    avg.iterates.append(u.copy())
                    avg.iterate_weights.append(eta)
        finally:
            self.k, self.prev_i, self.g_prev, self.v_last = k, prev_i, g_prev, v_last
        self.steps.observe_noise(g_sum, g_sq, n)
        return eta, R

    def info(self, t: int, elapsed: float) -> dict:
        """What the callback and stop hooks see after epoch t."""
        avg, est = self.avg, self.est
        return {"epoch": t, "u": avg.output_now(self.u, t + 1), "u_sum": avg.running_sum(self.y),
                "weight": avg.weight, "u_last": self.u.copy(), "queries": est.queries, "gradients": est.gradients,
                "time": elapsed}


def _hooks(run: _Run, t: int, record: dict, elapsed: float, callback, stop) -> tuple[str, str] | None:
    """The callback and the stop hook after epoch t: (status, message) when the run ends, else None (a number in
    (0, 1) from ``stop`` is a warm restart: smaller steps, a new output window)."""
    if callback is None and stop is None:
        return None
    info = run.info(t, elapsed)
    out = callback(info) if callback is not None else None
    if out is True:
        return "completed", f"stopped by the callback after epoch {t}"
    if isinstance(out, dict):
        record.update(out)
    verdict = stop(info) if stop is not None else None
    if verdict is True:
        return "converged", f"stopped after epoch {t}"
    if isinstance(verdict, float) and 0.0 < verdict < 1.0:
        run.steps.restart(verdict)
        run.avg.mark_restart(t + 1, run.y)
        record["restart"] = run.steps.rescale
    return None


def _budget(run: _Run, t: int, elapsed: float, max_queries, max_time, bar) -> tuple[str, str] | None:
    """(status, message) when a budget is reached or Ctrl-C was pressed after epoch t, else None. The query
    budget counts value queries (order 0) or gradient evaluations (order 1); schedules.check_budget speaks of
    gradient evaluations only, hence these lines of our own."""
    est = run.est
    if max_queries is not None and (est.queries if run.opts.order == 0 else est.gradients) >= max_queries:
        return "budget_exhausted", f"query budget {max_queries} reached at epoch {t}"
    if max_time is not None and elapsed >= max_time:
        return "budget_exhausted", f"time budget {max_time} s reached at epoch {t}"
    if bar.stopped:
        return "interrupted", f"interrupted (Ctrl-C) after epoch {t}"
    return None


def _start_point(oracle: SaddleOracle, u0) -> np.ndarray:
    dim = oracle.dim
    u = oracle.project(np.zeros(dim)) if u0 is None else np.array(u0, dtype=float)
    if u.shape != (dim,) or not np.all(np.isfinite(u)):
        raise OptionError(f"u0 must be a finite vector of length {dim}")
    if np.linalg.norm(oracle.project(u) - u) > 1e-9 * max(1.0, np.linalg.norm(u)):
        raise OptionError("u0 is not feasible; project it onto the domain first")
    return u


def ogda(oracle: SaddleOracle, options: OGDAOptions | None = None, *, u0=None, seed=None, verbose=None,
         callback=None, stop=None, max_queries: int | None = None, max_time: float | None = None,
         store_iterates: bool = False, **settings) -> dict:
    """Run OGDA-RR / OGDA-WR / SGDA-RR / SGDA-WR on ``oracle`` (Algorithms 1-4 of the paper).

    Parameters
    ----------
    options : an :class:`OGDAOptions` (method, order, epochs, the step and radius schedules, the estimator, the
        y-step scale, the output average, the first step and epoch boundary, ell, noise); or give its fields as
        keywords (``settings``), e.g. ``ogda(oracle, method="sgda-rr", epochs=50)``.
    u0 : starting point (default: the projection of 0); it must be feasible.
    callback : called after every epoch with a dict (epoch; u: the output the run would return if it stopped
        now; u_sum and weight: the running eta-weighted sum of all post-update iterates and the sum of the weights
        since the start, so any window average is a difference quotient; u_last, queries, gradients, time); it
        may return True (stop) or a dict of numbers added to that epoch's history record.
    stop : called after ``callback`` with the same dict; True ends the run with status ``converged`` (the
        judge's checks of :class:`fairmodel.families.stopping.CertifiedStop`, which passed on ``u``); a number f in
        (0, 1) asks for a warm restart (NON-PAPER, :class:`RestartOnStall`): the steps of the following epochs are
        multiplied by f and, with ``output="tail"``, the output window starts again at the next epoch.
    max_queries, max_time : budgets (value queries for order 0, gradient evaluations for order 1; seconds);
        reaching one ends the run, after the current epoch, with status ``budget_exhausted``.
    store_iterates : keep every post-update iterate and its weight (for tests and teaching; memory nT dim).

    Returns a dict: ``u`` (the eta-weighted average of the post-update iterates), ``u_last``, ``status``
    (``completed``, ``converged``, ``budget_exhausted`` or ``failed``), ``message``, ``history`` (one record per
    epoch for the first HISTORY_RECORDS epochs, then one every epochs // HISTORY_RECORDS), ``queries`` (value-oracle
    calls), ``gradients`` (gradient-oracle calls), ``epochs_run``, ``steps`` (the step sizes used).
    Query count with the defaults: 2nT - 1 (OGDA: two new values per step, none at the first optimistic
    term) or nT (SGDA); twice that with the two-point estimator. Gradient count at order 1: the same, or 4nT - 1
    (OGDA) and 3nT (SGDA) with ``variance_reduction=True``.
    """
    if options is not None and settings:
        raise OptionError(f"give the options either as an OGDAOptions or as keywords, not both; got options and "
                          f"{', '.join(sorted(settings))}")
    opts = OGDAOptions(**settings) if options is None else options
    if opts.order == 0 and oracle.zo.shape[0] == 0:
        raise OptionError("zeroth-order mode needs at least one coordinate in zo_mask; use order=1 for exact "
                          "gradients everywhere")
    run = _Run(oracle, opts, _start_point(oracle, u0), as_generator(seed), store_iterates)
    epochs, history, status, message, done = opts.epochs, [], "completed", "", 0
    stride = max(1, epochs // HISTORY_RECORDS)   # long runs: a record every stride epochs after the first ones
    start = time.perf_counter()
    with Progress(epochs, f"{opts.method} (order {opts.order})", verbose) as bar:
        try:
            for t in range(epochs):
                eta, R = run.epoch(t)
                elapsed = time.perf_counter() - start
                record = {"epoch": t, "queries": run.est.queries, "gradients": run.est.gradients, "eta": eta, "R": R,
                          "time": elapsed}
                done = t + 1
                if t < HISTORY_RECORDS or done % stride == 0:
                    history.append(record)
                bar.update(1)
                end = _hooks(run, t, record, elapsed, callback, stop) or _budget(run, t, elapsed, max_queries,
                                                                                 max_time, bar)
                if end is not None:
                    status, message = end
                    break
        except ArithmeticError as exc:             # NonFiniteValue, or a projection of a diverged point
            status = "failed"
            message = f"stopped at epoch {done}, inner step {run.k}: {exc}"
    out = {"u": run.avg.output_now(run.u, done), "u_last": run.u.copy(), "status": status, "message": message,
           "history": history, "queries": run.est.queries, "gradients": run.est.gradients, "epochs_run": done,
           "steps": run.steps.summary(done)}
    if store_iterates:
        out["iterates"], out["iterate_weights"] = np.array(run.avg.iterates), np.array(run.avg.iterate_weights)
    return out


class RestartOnStall:
    """A ``stop`` hook around the judge's checks that restarts a run which stalls (NON-PAPER): when a check finds the
    run no closer to passing than the previous check (the largest value / tolerance of its checks did not decrease),
    the run continues from where it is with the steps multiplied by ``factor`` and the output window starting
    afresh. The step of a run that stops on its certificate is set from the diameter of the domain, which can be much
    larger than the distance to the solution; a step too large for the problem at hand leaves the gap at its noise
    level, and halving it on a stall is the usual remedy (restarting the average drops the iterates of the larger
    steps).

    ``checks``: the stop hook of the judge's checks, a :class:`~fairmodel.families.stopping.CertifiedStop` (called
    with ``info``, True when every check passed; ``n_checks`` and ``last`` = (variables, evaluation, checks, epoch)
    say what the last check found); ``after``: the epochs before which no check counts as a stall (the early checks of
    a variance-reduced run, whose tail average jumps as its window moves). Deterministic: it depends on the checks'
    numbers only.
    """

    def __init__(self, checks, factor: float = 0.5, after: int = 0):
        self.checks, self.factor, self.after = checks, factor, after
        self.seen, self.previous, self.restarts = 0, None, 0

    def __call__(self, info):
        if self.checks(info):
            return True
        if self.checks.n_checks == self.seen or self.checks.last is None:
            return False
        self.seen = self.checks.n_checks
        ratios = [c.value / c.tolerance for c in self.checks.last[2] if c.computed and c.tolerance > 0]
        worst = max(ratios, default=None)
        stalled = (worst is not None and self.previous is not None and worst >= self.previous
                   and info["epoch"] + 1 >= self.after)
        self.previous = worst if worst is not None else self.previous
        if stalled:
            self.restarts += 1
            return self.factor
        return False


def theory_bound(*, n: int, d: int, D: float, G: float, ell: float, M_L: float, eta0: float, R0: float,
                 chi: float, T: int, version: str = "proof") -> float:
    """The bound K T^(-1/4+chi) of Theorem 4.1 on E[Delta(u_T)] (its proof, Appendix A.2); informative only.

    ``version="proof"`` uses the constants of the proof (47/(4n), C with n d^2), ``"statement"`` those of
    the theorem statement (5/(4n), C with n d); the two disagree (an inconsistency of the paper).
    """
    m = max(R0, eta0, eta0 * R0, eta0 / R0, eta0 / R0 ** 2)
    if version == "proof":
        C1 = d ** 2 * max(6 * G * ell * D, 18 * G ** 2 + 6 * M_L * ell * D, 30 * M_L * G, 12 * M_L ** 2)
        C = max(3 * n * C1, (6 * n * d + 14 * n + 4) * n * G, 6 * n * d * M_L, 3 * ell * D * d * G,
                3 * ell * D * d * M_L)
        lead = 47.0 / (4.0 * n)
    elif version == "statement":
        C = max(3 * n * d * D * ell, 18 * n * d * D * G * ell, 54 * n * d * G ** 2 + 18 * n * d * D * ell * M_L,
                90 * n * d * G * M_L, 36 * n * d * M_L ** 2, 6 * d * G * n ** 2 + 14 * G * n ** 2 + 4 * n * G,
                6 * d * M_L * n, 3 * d * D * G * ell, 3 * d * D * ell * M_L)
        lead = 5.0 / (4.0 * n)
    else:
        raise OptionError(f"version must be 'proof' or 'statement'; got {version!r}")
    K = 3.0 * D / (16.0 * n) + lead * C * m * (1.0 + 1.0 / chi)
    return K * T ** (-0.25 + chi)
