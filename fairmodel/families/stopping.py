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
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np

from .base import inconsistent

GROWTH = 1.25             # once checks are sparse, one each time the run has grown by this factor
STOP_RULES = ("checks", "budget")   # stop when the judge's checks pass (the cap a safety limit), or run the budget


class CertifiedStop:
    """The callback of a stochastic method that stops the run when the judge's checks pass.

    ``reduction``: the reduction whose ``evaluate`` and ``acceptance`` judge; ``to_variables(info)``: the
    candidate's variables (by name) from the method's per-epoch ``info``; ``context``: keyword arguments of the
    reduction's ``evaluate`` (e.g. ``data=``); ``user_callback``: the user's own callback, called first (True stops);
    ``judge``: ``variables -> (evaluation, checks)`` in place of the reduction's (the inner stage of a method).
    """

    def __init__(self, reduction, to_variables, *, every: int = 1, backend: str = "stochastic",
                 context: dict | None = None, user_callback=None, enabled: bool = True, judge=None):
        self.reduction, self.to_variables, self.backend = reduction, to_variables, backend
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

    def __call__(self, info) -> bool:
        if self.user_callback is not None and self.user_callback(info):
            self.by_user = True
            return True
        done = int(info["epoch"]) + 1
        if not self.enabled or done < self.next:
            return False
        self.next = max(done + self.every, math.ceil(done * GROWTH))
        self.check(self.to_variables(info), info["epoch"])
        return self.passed or bool(self.contradicted)    # a certificate that contradicts itself: no epoch repairs it

    def check(self, variables: dict, epoch=None) -> bool:
        """Judge ``variables`` now (the checks that decide ``ok``); True when every check passed."""
        start = time.perf_counter()
        # a certificate that cannot be computed at a checkpoint is NaN: go on, and keep the warnings for the user in
        # case this evaluation becomes the result's (finish)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            evaluation, checks = self.judge(variables)
        self.last = (variables, evaluation, checks, epoch)
        self.last_warnings = [(w.message, w.category) for w in caught]
        self.passed = bool(checks) and all(c.computed and c.passed for c in checks)
        self.contradicted = inconsistent(checks)
        self.check_time += time.perf_counter() - start
        self.n_checks += 1
        return self.passed

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
        if solution.status in ("diverged", "failed", "interrupted"):
            return
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
                numbers = "; ".join(f"{c.name} = {c.value:.3g} <= {c.tolerance:.3g}" for c in checks)
                solution.status = "converged"
                solution.message = (f"stopped{where}: every check of the judge passed ({numbers}); {self.n_checks} "
                                    f"check(s) took {self.check_time:.3g} s")
                return
        if self.contradicted:
            solution.message = (f"{solution.message}; " if solution.message else "") + \
                f"stopped at a checkpoint whose certificate contradicts itself ({self.contradicted[0].name})"
            return
        if cap and self.enabled and not self.by_user:
            solution.message = (f"{solution.message}; " if solution.message else "") + \
                f"the run reached its cap ({cap}) before a checkpoint of the judge passed"
