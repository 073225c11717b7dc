"""Cross-check: run both backends, judge both candidates on the full data, compare with stated tolerances."""
from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field

from .errors import InfeasibleError, OptionError, ResourceLimitError, SolverError, UnsupportedProblemError
from .families.base import Check
from .results.result import HEADLINE_METRICS, Result, _jsonable
from .utilities import display
from .utilities.validate import check_problem


@dataclass
class CrossCheckReport:
    """Both results, the checks applied (value, tolerance, reason, verdict) and the overall verdict ``ok``."""

    exact: Result
    stochastic: Result
    checks: list = field(default_factory=list)
    family: str = ""
    problem: str = ""
    name: str = ""          # what the problem is (its title and kind, e.g. "Adult by race (MERO)")

    @property
    def label(self) -> str:
        return self.name or self.family

    @property
    def ok(self) -> bool:
        return self.exact.ok and self.stochastic.ok and all(c.passed for c in self.checks)

    @property
    def objective_gap(self) -> float:
        return self.stochastic.objective - self.exact.objective

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict:
        def res(r: Result) -> dict:
            return {"status": r.status, "method": r.method, "objective": r.objective,
                    "constraints": r.constraints, "certificate": r.certificate, "metrics": r.metrics,
                    "timings": r.timings, "solver": r.solver, "seed": r.seed, "message": r.message}
        return _jsonable({
            "ok": self.ok, "family": self.family, "name": self.name, "problem": self.problem,
            "objective_gap": self.objective_gap,
            "checks": [{"name": c.name, "value": c.value, "tolerance": c.tolerance, "passed": c.passed,
                        "reason": c.reason} for c in self.checks],
            "exact": res(self.exact), "stochastic": res(self.stochastic)}, None)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    def to_markdown(self) -> str:
        e, s = self.exact, self.stochastic
        lines = [f"### Cross-check: {self.label} — {'OK' if self.ok else 'NOT OK'}", "",
                 "| | exact | stochastic |", "|---|---|---|",
                 f"| method | {e.method} | {s.method} |",
                 f"| status | {e.status} | {s.status} |",
                 f"| objective | {e.objective:.6g} | {s.objective:.6g} |"]
        for name in HEADLINE_METRICS:
            if name in e.metrics or name in s.metrics:
                lines.append(f"| {name.replace('_', ' ')} | {_fmt(e.metrics.get(name))} | "
                             f"{_fmt(s.metrics.get(name))} |")
        for name in dict.fromkeys(list(e.constraints) + list(s.constraints)):
            ev = e.constraints.get(name, {}).get("value", float("nan"))
            sv = s.constraints.get(name, {}).get("value", float("nan"))
            lines.append(f"| constraint {_cell(name)} | {ev:.6g} | {sv:.6g} |")
        for name in dict.fromkeys(list(e.certificate) + list(s.certificate)):
            lines.append(f"| {_cell(name)} | {_fmt(e.certificate.get(name))} | {_fmt(s.certificate.get(name))} |")
        lines.append(f"| solve time (s) | {e.timings.get('solve', float('nan')):.3g} | "
                     f"{s.timings.get('solve', float('nan')):.3g} |")
        marks, reasons = _reason_notes(self.checks)
        lines += ["", "| check | value | tolerance | verdict | why this tolerance |", "|---|---|---|---|---|"]
        for c, mark in zip(self.checks, marks):
            tolerance = "– (not checked)" if math.isinf(c.tolerance) else f"{c.tolerance:.3g}"
            lines.append(f"| {_cell(c.name)} | {c.value:.3g} | {tolerance} | {c.verdict} | {mark} |")
        if reasons:
            lines += ["", "Why these tolerances:", ""] + [f"- ({k}) {r}" for k, r in enumerate(reasons, 1)]
        for r in (e, s):
            if not r.ok:
                lines.append(f"\n{r.backend} backend ended with status {r.status}: {r.message}")
        return "\n".join(lines)

    def __str__(self):
        return self.to_markdown()

    def __repr__(self):
        failed = ", ".join(c.name for c in self.failed())
        return display.short(f"<fairmodel.CrossCheckReport {self.label}: {'OK' if self.ok else 'NOT OK'}; exact "
                              f"{self.exact.status} {display.fmt(self.exact.objective, 6)}, stochastic "
                              f"{self.stochastic.status} {display.fmt(self.stochastic.objective, 6)}; "
                              f"{len(self.checks)} checks" + (f", failed: {failed}" if failed else "") + "; "
                              ".to_markdown() for the table>")

    def _repr_markdown_(self):
        return self.to_markdown()

    def _repr_html_(self):
        e, s = self.exact, self.stochastic
        rows = [["method", e.method, s.method], ["status", e.status, s.status],
                ["objective", display.fmt(e.objective, 6), display.fmt(s.objective, 6)]]
        rows += [[f"constraint {k}", display.fmt(e.constraints.get(k, {}).get("value"), 6),
                  display.fmt(s.constraints.get(k, {}).get("value"), 6)]
                 for k in dict.fromkeys(list(e.constraints) + list(s.constraints))]
        marks, reasons = _reason_notes(self.checks)
        checks = [[c.name, display.fmt(c.value, 3), "–" if math.isinf(c.tolerance) else display.fmt(c.tolerance, 3),
                   c.verdict, mark] for c, mark in zip(self.checks, marks)]
        notes = "".join(f"<li>({k}) {html.escape(r)}</li>" for k, r in enumerate(reasons, 1))
        return (display.html_table(["", "exact", "stochastic"], rows,
                                    caption=f"Cross-check: {self.label} — {'OK' if self.ok else 'NOT OK'}")
                + display.html_table(["check", "value", "tolerance", "verdict", "why this tolerance"], checks)
                + (f"<p>Why these tolerances:</p><ul style=\"list-style: none\">{notes}</ul>" if notes else ""))


def _reason_notes(checks) -> tuple[list[str], list[str]]:
    """Each distinct reason once: the note mark of every check, "(1)", "(2)", ... (numbered in order of first use;
    checks with the same reason share a note), and the notes' texts in that order."""
    reasons = list(dict.fromkeys(c.reason for c in checks))
    return [f"({reasons.index(c.reason) + 1})" for c in checks], reasons


def _cell(text) -> str:
    """Text for a Markdown table cell: a "|" (as in |x - y|) would start a new cell, so it is escaped."""
    return str(text).replace("|", "\\|")


def _fmt(v) -> str:
    if v is None:
        return "–"
    try:
        return f"{float(v):.4g}"
    except (TypeError, ValueError):
        return str(v)


def crosscheck(problem, seed=0, exact_options: dict | None = None, stochastic_options: dict | None = None,
               exact=None, stochastic=None, **common) -> CrossCheckReport:
    """Solve ``problem`` (a :class:`fairmodel.Problem` or a :class:`fairmodel.SaddleProblem`) with both backends and
    compare the judged results.

    ``exact_options`` / ``stochastic_options`` are keyword arguments for ``problem.solve`` on each path
    (``method``, ``solver``, and method options); ``common`` options (e.g. ``data=`` or ``verbose=``) go
    to both. ``exact``: a result of ``problem.solve(backend="exact")`` already computed (e.g. a long solve on large
    data), compared instead of solving again; ``stochastic``: likewise a result of
    ``problem.solve(backend="stochastic")`` (two long solves run in two processes, each result saved with
    :meth:`~fairmodel.Result.save` and read back with :func:`~fairmodel.load_result`). The checks and their
    tolerances come from the reduction that produced the stochastic result (the problem's family, or the generic
    convex reduction when a method of it was asked for), each with its reason.
    """
    check_problem(problem, "crosscheck", ("solve", "crosscheck_checks", "label"), "a fm.Problem or a fm.SaddleProblem")
    for name, given in (("exact_options", exact_options), ("stochastic_options", stochastic_options)):
        if given is not None and not isinstance(given, dict):
            raise OptionError(f"{name} must be a dict of keyword options for problem.solve (e.g. {{'method': ...}}) "
                              f"or None; got {type(given).__name__}")
    exact = _given_or_solved(problem, "exact", exact, exact_options, common)
    stochastic = _given_or_solved(problem, "stochastic", stochastic, stochastic_options, {"seed": seed, **common})
    if "failed" in (exact.status, stochastic.status) and not (exact.variables and stochastic.variables):
        checks, family = [], getattr(getattr(problem, "family", None), "name", "minmax")   # nothing to compare
    else:
        checks, family = problem.crosscheck_checks(exact, stochastic, **common)
    return CrossCheckReport(exact=exact, stochastic=stochastic, checks=checks, family=family, problem=str(problem),
                            name=problem.label)


def _given_or_solved(problem, backend: str, given, options, common) -> Result:
    """``given`` (a result of ``problem.solve(backend=backend)`` computed before), or the problem solved now."""
    if given is None:
        return _solve_or_failed(problem, backend, **{**common, **(options or {})})
    if getattr(given, "backend", None) != backend or options:
        raise OptionError(f"{backend}= takes a result of problem.solve(backend={backend!r}) (then no "
                          f"{backend}_options); got "
                          + (f"a {type(given).__name__}" if getattr(given, "backend", None) is None
                             else f"a result of the {given.backend!r} backend"))
    return given


def _solve_or_failed(problem, backend: str, **options) -> Result:
    """The judged result of one backend, or a ``failed`` result carrying the error when that backend cannot solve
    the problem (a solver failure, a program too large, a problem it does not support): the other backend's result
    is kept and the report says NOT OK with the reason. Errors in the options themselves are raised."""
    try:
        return problem.solve(backend=backend, **options)
    except (SolverError, ResourceLimitError, UnsupportedProblemError, InfeasibleError) as exc:
        method = options.get("method") or ""
        return Result(status="failed", objective=float("nan"), backend=backend, method=str(method),
                      family=getattr(getattr(problem, "family", None), "name", "minmax"),
                      message=f"the {backend} backend failed: {type(exc).__name__}: {exc}", problem=str(problem))
