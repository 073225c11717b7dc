"""Stopping a stochastic run on the judge's checks: tolerances, not budgets.

Every stochastic method calls ``callback(info)`` at the end of an epoch (an outer iteration, a round); the
reduction hands it a :class:`CertifiedStop`, which turns the run's current output into the candidate's variables,
judges them on the full data with the reduction's own evaluation and acceptance checks (the very checks that decide
``ok`` afterwards: constraint violations and certificates such as duality gaps) and asks the method to stop once
every one of them passes. The method's epochs, T or time are then caps, not the stopping rule.

A check costs full passes (and, for some certificates, an inner exact solve), so checks run on a schedule of epochs
that depends only on the run (never on timing, so the same seed gives the same result): after ``every`` epochs,
then every ``every`` epochs until that is less than a quarter of the epochs run so far, then each time the run has
grown by a quarter (the number of checks grows like the logarithm of the run's length, and a run stops at most
``max(every, 25 %)`` epochs after the first epoch at which the checks would pass). Each family sets ``every`` from
its old fixed budget (a fraction of it), so a run on the bundled problems costs at most about that budget plus a
few checks. The last check's evaluation is reused by the judge when the run returns exactly the variables it
checked.

Failing fast. A run whose certificate has stalled, or falls too slowly to pass before the cap, stops at a
checkpoint and says so instead of running to its cap. At every failed checkpoint :func:`outlook` measures the rate
at which the checks approach their tolerances: with r the largest ratio value / tolerance of the checks (the check
farthest from passing; r <= 1 passes) at the work W done so far (epochs, outer iterations, sampled points: the unit
of the cap), taken best so far, the rate is ``p = (log r(W') - log r(W)) / (log W - log W')`` over the last
doubling of the work (W' the latest checkpoint at or before W / 2), the exponent of a certificate that falls like
W^-p (p = 1/2 for the O(1/sqrt(N)) rates of robust stochastic approximation, Nemirovski, Juditsky, Lan, Shapiro
2009; p = 1 for mirror-prox on smooth problems, Juditsky, Nemirovski, Tauvel 2011; p = 0 for a run at its noise
floor). At that
rate the checks pass after ``W r^(1/p)`` work (never, for a stall: p < STALL_RATE names it so in the message). The
run stops, with the measured rate and the projected cost in its message (the judge's verdict then says what failed
and what to try: the reduction's advice), when two checkpoints in a row project more than FAIL_FAST_MARGIN times the
cap. One such projection is not enough: restarted methods accelerate (the generic lowering's Lagrangian gap on group
DRO with the hinge loss under equal opportunity, Adult by race, fell at the rate 0.8 from 20 to 40 epochs and at 2.3
from 30 to 63), and the level-set method's bracket can stay put for its first checks (SFLS on Law School by gender:
the rate 0.05 from 2,500 to 7,500 SMD steps, then 0.6). The first projection needs FAIL_FAST_CHECKS checkpoints (at
least a doubling of the work since the first), so a run is never stopped by the rule before its fourth checkpoint,
about four times the work of its first (which each family places at a quarter of its former fixed budget, about
where the bundled problems pass); the best-so-far ratios make it optimistic (a noisy certificate's lucky checkpoints
count, its unlucky ones do not), and the margin leaves room for a rate that improves later (ALEG on
scikit-learn's 16-row sample-weight check measured 0.82, 1.37 and 1.30 at 150, 200 and 250 epochs, projecting
64,000, 5,900 and 7,300 epochs against its cap of 2,000; it passes at epoch 1,199). A run whose best
checkpoint is within FAIL_FAST_NEAR of passing is never stopped by the rule: there a noisy certificate's scatter
between checkpoints is as large as the distance to its tolerance, so a flat best-so-far says nothing (strategic DRO
on 300 synthetic points: the gap 1.17x its tolerance at epoch 100, then 1.6x and 2.3x after two warm restarts of the
tail average, a measured rate 0; it passes at epoch 489). A rate that grows at two checkpoints in a row (by
ACCELERATION each time, to at least ACCELERATING_RATE) is a method entering a phase of linear convergence, where log r
falls in proportion to the work (variance-reduced mirror-prox near a sharp or strongly convex optimum): its projection
extrapolates the last doubling's decrease of log r per unit of work instead of the power law. Two growths in a row,
because one lucky checkpoint raises one rate (and lowers the next). ALEG on 500 synthetic rows with 200 features
(logistic loss, radius 10) measured the ratios 279, 216, 150 and 114 at 50 to 200 epochs, the rates 0.37, 0.56 and
0.92 at the last three: the power law projected 34,000 epochs against the cap of 2,000, and the run, stopped there,
ended at 114x its tolerance; it passes at epoch 613 (the ratios 87, 26, 19 and 14 at 250 to 490 epochs).

Progress. Each checkpoint writes one line (:class:`~fairmodel.utilities.progress.Notes`: on standard error where the
progress bar is drawn, a terminal or ``verbose=True``; at most one every few seconds): the work done and the time, the
check farthest from passing against its tolerance, and the time left, estimated from the rate measured as above (the
seconds per unit of work so far times the work still projected), or up to the cap while no rate is measured yet.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..utilities.progress import Notes
from .base import inconsistent, passed_text

GROWTH = 1.25             # once checks are sparse, one each time the run has grown by this factor
STOP_RULES = ("checks", "budget")   # stop when the judge's checks pass (the cap a safety limit), or run the budget
FAIL_FAST_CHECKS = 3      # checkpoints with a computed certificate before the fail-fast rule may stop a run
FAIL_FAST_SPAN = 2.0      # the rate is measured over (at least) the last doubling of the work
FAIL_FAST_MARGIN = 4.0    # a run stops when the projected work to pass exceeds the cap times this
STALL_RATE = 0.05         # a measured rate below this is reported as a stall
FAIL_FAST_NEAR = 2.0      # a run whose best checkpoint is within this factor of passing is never stopped by the rule
ACCELERATION = 1.25       # a rate grown by this factor at each of the last two checkpoints (to ACCELERATING_RATE at
ACCELERATING_RATE = 0.5   # least) is projected at its last doubling's decrease per unit of work (linear convergence)


@dataclass
class Outlook:
    """What the checkpoints so far say about a run: the largest ratio value / tolerance of its checks at the last
    checkpoint (best so far), the rate p at which it fell over the work ``since`` .. ``work`` (its log per log of
    the work), and the work after which the checks would pass at that rate (inf when p <= 0)."""

    work: float
    ratio: float
    rate: float
    since: float
    projected: float
    previous_rate: float | None = None    # the rate at the checkpoint before, when the rate is accelerating

    @property
    def stalled(self) -> bool:
        return self.rate < STALL_RATE


def _rates(envelope, span: float) -> list:
    """(work, ratio, rate, since, ratio at since) at every checkpoint of a best-so-far ``envelope`` that has one at or
    before its work / ``span`` (None at the others)."""
    out = []
    for k, (work, ratio) in enumerate(envelope):
        earlier = [(w, r) for w, r in envelope[:k] if 0 < w <= work / span]
        if not earlier or work <= 0:
            out.append(None)
            continue
        since, before = earlier[-1]
        out.append((work, ratio, (math.log(before) - math.log(ratio)) / (math.log(work) - math.log(since)), since,
                    before))
    return out


def outlook(points, span: float = FAIL_FAST_SPAN) -> Outlook | None:
    """The :class:`Outlook` of a run from its checkpoints ``points``: (work done, largest value / tolerance of its
    checks) in order; None while no checkpoint lies at or before the last one's work / ``span``. The ratios are
    taken best so far (the smallest up to each checkpoint), so a lucky checkpoint counts and an unlucky one does
    not; the projected work is ``W r^(1/p)``, or, when the rate grew by ACCELERATION at each of the last two
    checkpoints to at least ACCELERATING_RATE, ``W + log r (W - W') / (log r(W') - log r)``."""
    best, envelope = math.inf, []
    for work, ratio in points:
        best = min(best, ratio)
        envelope.append((float(work), best))
    rates = _rates(envelope, span)
    if not rates or rates[-1] is None:
        return None
    work, ratio, rate, since, before = rates[-1]
    trend = [r[2] for r in rates[-3:] if r is not None]
    accelerating = (len(trend) == 3 and rate >= ACCELERATING_RATE and trend[0] > 0
                    and all(later >= ACCELERATION * sooner for sooner, later in zip(trend, trend[1:])))
    if ratio <= 1.0:
        projected = work
    elif rate <= 0.0:
        projected = math.inf
    elif accelerating:     # log r falling linearly in the work, as over the last doubling
        projected = work + math.log(ratio) * (work - since) / (math.log(before) - math.log(ratio))
    else:
        log_projected = math.log(work) + math.log(ratio) / rate
        projected = math.exp(log_projected) if log_projected < 700.0 else math.inf
    return Outlook(work, ratio, rate, since, projected, trend[-2] if accelerating else None)


def worst_ratio(checks) -> tuple[float, str] | None:
    """(largest value / tolerance, its check's name) over ``checks``; None when a check was not computed or has no
    positive tolerance (no rate can be measured from it)."""
    if not checks or any(not c.computed or not c.tolerance > 0 for c in checks):
        return None
    worst = max(checks, key=lambda c: c.value / c.tolerance)
    return max(worst.value / worst.tolerance, 1e-300), worst.name


def _passed(checks) -> bool:
    return bool(checks) and all(c.computed and c.passed for c in checks)


def _closer(checks, than) -> bool:
    """Whether ``checks`` are closer to passing than ``than``: they pass, or their largest value / tolerance is
    smaller (both computed)."""
    if _passed(checks):
        return True
    mine, theirs = worst_ratio(checks), worst_ratio(than)
    return mine is not None and (theirs is None or mine[0] < theirs[0])


class CertifiedStop:
    """The callback of a stochastic method that stops the run when the judge's checks pass.

    ``reduction``: the reduction whose ``evaluate`` and ``acceptance`` judge; ``to_variables(info)``: the
    candidate's variables (by name) from the method's per-epoch ``info``; ``context``: keyword arguments of the
    reduction's ``evaluate`` (e.g. ``data=``); ``user_callback``: the user's own callback, called first (True stops);
    ``judge``: ``variables -> (evaluation, checks)`` in place of the reduction's (the inner stage of a method);
    ``cap``: the run's cap in the units of its work (``info["work"]`` when the method gives it, else the epochs
    done), for the fail-fast rule (None: no such rule); ``earliest``: the share of the cap before which the rule
    never stops the run (0: from its FAIL_FAST_CHECKS-th checkpoint on); ``unit``: the name of that unit, for the
    messages;
    ``verbose``: the progress lines of the checkpoints (None: on a terminal, as the progress bars);
    ``second_opinion``: ``variables -> variables or None``, another candidate for the same output (other dual
    variables for its certificate), judged when the first fails its checks; the checkpoint keeps the one closer to
    passing (``last`` holds it).

    After a checkpoint, ``passed`` says whether every check passed and ``gave_up`` holds the :class:`Outlook` of a
    run that the fail-fast rule stops (None otherwise); ``stop_now`` is either.
    """

    def __init__(self, reduction, to_variables, *, every: int = 1, backend: str = "stochastic",
                 context: dict | None = None, user_callback=None, enabled: bool = True, judge=None,
                 cap: float | None = None, unit: str = "epochs", verbose: bool | None = None,
                 second_opinion=None, earliest: float = 0.0):
        self.reduction, self.to_variables, self.backend = reduction, to_variables, backend
        self.second_opinion = second_opinion
        self.judge = judge or self._reduction_judge   # variables -> (evaluation, checks)
        self.context = dict(context or {})
        self.user_callback, self.enabled = user_callback, enabled
        self.every = max(1, int(every))
        self.next = self.every        # check after the epoch that completes this many epochs
        self.last = None              # (variables, evaluation, checks, epoch) of the last check
        self.passed = False
        self.contradicted = []        # the failed consistency checks of the last check (base.inconsistent)
        self.by_user = False
        self.n_checks, self.check_time = 0, 0.0
        self.last_warnings: list = []   # (message, category) the judge raised at the last check
        self.cap, self.unit, self.earliest = cap, unit, earliest
        self.points: list = []          # (work, largest value / tolerance) of the checkpoints with computed checks
        self.worst = ""                 # the name of the check farthest from passing at the last checkpoint
        self.gave_up: Outlook | None = None
        self.best = None                # (ratio, check name, variables, evaluation, checks, epoch, warnings)
        self.hopeless = False           # the last checkpoint's projection exceeded the cap (by the margin)
        self.started = time.perf_counter()
        self.notes = Notes(verbose)

    @property
    def stop_now(self) -> bool:
        """Whether the run should stop after the last checkpoint: its checks passed, or it cannot pass in time."""
        return self.passed or self.gave_up is not None

    def restart_rate(self) -> None:
        """Forget the checkpoints' ratios (the method changed its problem, e.g. a larger multiplier bound): the rate
        is measured afresh from the next checkpoints (and a hopeless projection before it, or a verdict of the
        fail-fast rule at the checkpoint that made the change, does not count)."""
        self.points = []
        self.hopeless = False
        self.gave_up = None

    def __call__(self, info) -> bool:
        if self.user_callback is not None and self.user_callback(info):
            self.by_user = True
            return True
        done = int(info["epoch"]) + 1
        if not self.enabled or done < self.next:
            return False
        self.next = max(done + self.every, math.ceil(done * GROWTH))
        self.check(self.to_variables(info), info["epoch"], info.get("work", done))
        return self.stop_now or bool(self.contradicted)  # a certificate that contradicts itself: no epoch repairs it

    def check(self, variables: dict, epoch=None, work=None) -> bool:
        """Judge ``variables`` now (the checks that decide ``ok``); True when every check passed. ``work``: the work
        done so far in the unit of the cap (default the epochs, ``epoch + 1``); when the checks fail, the fail-fast
        rule sets ``gave_up`` if they cannot pass before the cap at the rate measured so far."""
        start = time.perf_counter()
        # a certificate that cannot be computed at a checkpoint is NaN: go on, and keep the warnings for the user in
        # case this evaluation becomes the result's (finish)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            evaluation, checks = self.judge(variables)
            other = None if self.second_opinion is None or _passed(checks) else self.second_opinion(variables)
            if other is not None:
                judged = self.judge(other)
                if _closer(judged[1], checks):
                    variables, (evaluation, checks) = other, judged
        self.last = (variables, evaluation, checks, epoch)
        self.last_warnings = [(w.message, w.category) for w in caught]
        self.passed = _passed(checks)
        self.contradicted = inconsistent(checks)
        self.check_time += time.perf_counter() - start
        self.n_checks += 1
        if not self.passed:
            self._fail_fast(variables, evaluation, checks, epoch, work)
        self.notes.note(self.progress_line(checks, epoch, work))
        return self.passed

    def progress_line(self, checks, epoch=None, work=None) -> str:
        """One line on the checkpoint just judged: the work done and the time, the check farthest from passing
        against its tolerance, and the time left (from the rate measured by :func:`outlook`; up to the cap while
        no rate is measured yet)."""
        elapsed = time.perf_counter() - self.started
        work = float(work if work is not None else (epoch + 1 if epoch is not None else self.n_checks))
        head = f"checkpoint {self.n_checks}: {work:,.0f} {self.unit}, {elapsed:.1f} s"
        if self.passed:
            return f"{head}: every check passed"
        worst = worst_ratio(checks)
        if worst is None:
            return f"{head}: the certificate was not computed at this checkpoint"
        check = next(c for c in checks if c.name == worst[1])
        text = f"{head}: {check.name} = {check.value:.3g}, {worst[0]:.3g}x its tolerance {check.tolerance:.3g}"
        to_cap = elapsed * (self.cap / work - 1.0) if self.cap is not None and work > 0 else None
        found = outlook(self.points) if self.points and self.points[-1][0] == work else None
        if found is None or found.stalled or found.projected == math.inf:
            why = "no rate measured yet" if found is None else f"the certificate stalled (rate {found.rate:.2g})"
            return text + (f"; {why}: at most {to_cap:.3g} s left (to the cap)" if to_cap is not None else f"; {why}")
        left = elapsed * (found.projected / work - 1.0)
        if to_cap is not None and left > to_cap:
            return text + (f"; at the measured rate ({found.rate:.2g}) it would pass after {found.projected:.3g} "
                           f"{self.unit}, past the cap: at most {to_cap:.3g} s left")
        return text + f"; at the measured rate ({found.rate:.2g}): about {left:.3g} s left"

    def _fail_fast(self, variables, evaluation, checks, epoch, work) -> None:
        worst = worst_ratio(checks)
        if worst is None:
            return
        work = float(work if work is not None else (epoch + 1 if epoch is not None else self.n_checks))
        self.points.append((work, worst[0]))
        self.worst = worst[1]
        if self.best is None or worst[0] < self.best[0]:     # the point a run stopped by the rule returns
            self.best = (*worst, variables, evaluation, checks, epoch, self.last_warnings)
        found = outlook(self.points) if self.cap is not None and len(self.points) >= FAIL_FAST_CHECKS else None
        hopeless = (found is not None and found.ratio > FAIL_FAST_NEAR
                    and found.projected > FAIL_FAST_MARGIN * self.cap)
        if hopeless and self.hopeless and work >= self.earliest * self.cap:     # measured twice in a row
            self.gave_up = found
        self.hopeless = hopeless

    def _reduction_judge(self, variables):
        evaluation = self.reduction.evaluate(variables, **self.context)
        return evaluation, self.reduction.acceptance(evaluation, self.backend)

    def finish(self, solution, cap: str = "") -> None:
        """Record the stop on ``solution`` (a :class:`~fairmodel.families.base.Solution`): status ``converged``
        and the passing checks when the run stopped on them, the reuse of the last evaluation when the solution's
        variables are the ones checked, the cost of the checks in its metrics; ``cap`` names the safety limit the
        run otherwise ran into (for the message)."""
        solution.metrics["checks_run"] = self.n_checks
        solution.metrics["check_time_s"] = self.check_time
        if self.points:     # the work and the largest value / tolerance of the checks at each failed checkpoint
            solution.metrics["checkpoint_ratios"] = [[w, r] for w, r in self.points]
        if solution.status in ("diverged", "failed", "interrupted"):
            return
        returned_best = None
        if self.gave_up is not None and not self.by_user and self.best is not None and \
                set(self.best[2]) == set(solution.variables):   # a run stopped by the rule returns its best checkpoint
            *_, variables, evaluation, checks, epoch, caught = self.best
            solution.variables = dict(variables)
            self.last, self.last_warnings, returned_best = (variables, evaluation, checks, epoch), caught, (True, epoch)
        if self.last is not None:
            variables, evaluation, checks, epoch = self.last
            same = set(variables) == set(solution.variables) and all(
                np.array_equal(np.asarray(variables[k]), np.asarray(solution.variables[k])) for k in variables)
            if same and self.reduction is not None:
                solution.evaluation = evaluation
                for message, category in self.last_warnings:   # what the judge would have said on this evaluation
                    warnings.warn(message, category, stacklevel=2)
            if self.passed and same and not self.by_user:
                where = f" after epoch {epoch}" if epoch is not None else ""
                numbers = passed_text(checks)
                solution.status = "converged"
                solution.message = (f"stopped{where}: every check of the judge passed ({numbers}); {self.n_checks} "
                                    f"check(s) took {self.check_time:.3g} s")
                return
        if self.contradicted:
            solution.message = (f"{solution.message}; " if solution.message else "") + \
                f"stopped at a checkpoint whose certificate contradicts itself ({self.contradicted[0].name})"
            return
        if self.gave_up is not None and not self.by_user:
            if solution.status == "converged":     # the method's word for "the callback stopped me"
                solution.status = "completed"
            solution.message = self.fail_fast_message(cap)
            if returned_best and self.best[0] < self.points[-1][1]:
                where = f"after epoch {returned_best[1]}, " if returned_best[1] is not None else ""
                solution.message += (f"; the result is its best checkpoint ({where}{self.best[1]} "
                                     f"{self.best[0]:.3g}x its tolerance)")
            solution.metrics.update(certificate_rate=self.gave_up.rate, projected_work=self.gave_up.projected)
            return
        if cap and self.enabled and not self.by_user:
            solution.message = (f"{solution.message}; " if solution.message else "") + \
                f"the run reached its cap ({cap}) before a checkpoint of the judge passed"

    def fail_fast_message(self, cap: str = "") -> str:
        """Why the fail-fast rule stopped the run: the measured rate and the projected cost."""
        o, unit = self.gave_up, self.unit
        elapsed = time.perf_counter() - self.started
        head = (f"stopped early after {o.work:.4g} {unit} ({elapsed:.3g} s): the judge's checks cannot pass before "
                f"the cap{f' ({cap})' if cap else ''}")
        where = f"{self.best[1] if self.best else self.worst} is {o.ratio:.3g}x its tolerance"
        if o.stalled:
            return (f"{head}: the certificate stalled ({where}, best so far, and fell at a rate of {o.rate:.2g} "
                    f"(log of the ratio to the tolerance per log of the work) from {o.since:.4g} to {o.work:.4g} "
                    f"{unit})")
        seconds = elapsed * o.projected / o.work
        how = "at that rate" if o.previous_rate is None else (
            f"the rate grew from {o.previous_rate:.2g}, and falling by as much per unit of work as over that span")
        return (f"{head}: {where} and fell at a rate of {o.rate:.2g} (log of the ratio to the tolerance per log of "
                f"the work) from {o.since:.4g} to {o.work:.4g} {unit}; {how} it would pass after about "
                f"{o.projected:.2g} {unit} (about {seconds:.2g} s), more than {FAIL_FAST_MARGIN:g}x the cap")
