"""The judge: one evaluation of any candidate on the full data, whichever path produced it.

The judge asks the problem's reduction for its :class:`~fairmodel.families.base.Evaluation`: the objective and
every constraint's value, bound and violation computed on the full data (by walking the declaration, or by
the family's exact closed forms of the same quantities), its fairness metrics, and the certificate of its
structure (duality gap, KKT residual, gradient-mapping norm, level-set bracket). Nothing is kept between
calls: the data a candidate is judged on come with the call (``data=`` for DP post-processing).
"""
from __future__ import annotations

from ..families.base import (Check, Evaluation, by_group, certificate_missing, constraint_record,  # noqa: F401
                              evaluate_constraints, passed_text)
from ..utilities.threads import few_threads
from ..utilities.validate import check_problem

ENDED_BADLY = ("diverged", "failed", "interrupted", "unbounded")   # the solver's own word; nothing to verify


def verdict(status: str, checks: list[Check], message: str = "", advice: str = "") -> tuple[str, str]:
    """The final (status, message) of a result from the solver's status and the judge's checks.

    A failed constraint check makes the result ``infeasible``, a failed certificate ``inaccurate``, whatever the
    solver's loop said; an ``optimal_inaccurate`` exact solve stays ok only when a certificate confirms it; a
    result without a single computed check, or whose certificate checks could none be computed, is ``unverified``
    (never ok: a loop that finished proves nothing, and met constraints alone do not bound the suboptimality).
    Checks that could not be computed (NaN) neither pass nor fail: they are named in the message. ``advice``
    (what usually fixes a failure, from the reduction) is appended when the result is not ok.
    """
    if status in ENDED_BADLY:
        return status, message
    failed = [c for c in checks if c.computed and not c.passed]
    notes = [message] if message else []
    missing = [c.name for c in checks if not c.computed]
    if missing:
        notes.append(f"not certified: {', '.join(missing)} could not be computed")
    if failed:
        worst = "infeasible" if any(c.kind == "constraint" for c in failed) else "inaccurate"
        notes.insert(0, "the judge's checks failed: " + "; ".join(failure_text(c) for c in failed))
        return worst, _sentences(notes, advice)
    if certificate_missing([(c.kind, c.computed) for c in checks]):
        notes.insert(0, "the certificate could not be computed, so nothing bounds this result's suboptimality "
                        "(its constraint checks alone do not verify it)")
        return "unverified", _sentences(notes, advice)
    if not any(c.computed for c in checks):
        notes.insert(0, "no check of the judge could be computed for this result (no constraint and no "
                        "certificate), so nothing verifies it")
        return "unverified", _sentences(notes, advice)
    if status == "optimal_inaccurate" and not any(c.kind == "certificate" and c.computed for c in checks):
        notes.insert(0, "the solver reported an inaccurate optimum and no certificate of the judge confirms it")
        return "inaccurate", _sentences(notes, advice)
    if status == "completed":      # a loop that ran to its budget or cap: its output is what the judge verified
        notes.append(f"its output passed every check of the judge ({passed_text(checks)})")
    return status, "; ".join(notes)


def _sentences(notes: list, advice: str = "") -> str:
    """The notes of a verdict joined by semicolons, then the advice as its own sentence."""
    text = "; ".join(n.rstrip(". ") for n in notes if n)
    return f"{text}. {advice}" if advice else text


def failure_text(check: Check) -> str:
    """``name = value > tolerance (k x the tolerance)``: a failed check and by how much."""
    ratio = check.value / check.tolerance if check.tolerance > 0 else float("inf")
    return f"{check.name} = {check.value:.3g} > {check.tolerance:.3g} ({ratio:.3g}x the tolerance)"


def judge_solution(reduction, solution, backend: str) -> tuple[Evaluation, list[Check]]:
    """The judge's evaluation of a backend's :class:`Solution` and the checks that decide ``ok``; sets the
    solution's final status and message (:func:`verdict`). The evaluation is computed on the full data, with the
    context the solve recorded for its judge, unless the solve already judged exactly these variables at its
    last checkpoint (``solution.evaluation``: a method that stops on the judge's checks). Called inside
    ``Problem.solve``, which already chose the threads."""
    evaluation = solution.evaluation
    if evaluation is None:
        evaluation = reduction.evaluate(dict(solution.variables), **solution.judge_context)
    checks = reduction.acceptance(evaluation, backend)
    failing = [c for c in checks if c.computed and not c.passed]
    advice = reduction.advice(backend, solution, failing) if solution.status not in ENDED_BADLY else ""
    solution.status, solution.message = verdict(solution.status, checks, solution.message, advice)
    return evaluation, checks


@few_threads
def judge(problem, candidate=None, **variables) -> Evaluation:
    """Evaluate a candidate for ``problem``: a ``Result``, a dict of variables by name, or keyword variables.

    Keyword arguments that are not variables of the problem (e.g. ``data=`` of DP post-processing) are
    passed to the reduction's judge as context.
    """
    check_problem(problem, "judge", ("family",), "a fm.Problem (the declaration to judge the candidate against)")
    reduction = problem.family
    if candidate is not None:
        produced_by = getattr(candidate, "family", None)      # a Result: judged by the reduction that produced it
        if isinstance(produced_by, str) and produced_by != reduction.name:
            reduction = problem.reduction(produced_by)
        candidate = getattr(candidate, "variables", candidate)
        variables = {**dict(candidate), **variables}
    context = {k: variables.pop(k) for k in list(variables) if k in getattr(reduction, "judge_options", ())}
    return reduction.evaluate(variables, **context)
