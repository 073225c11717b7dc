"""The contract of a reduction: how a problem family turns a canonical declaration into programs, and judges.

A reduction (one per paper family, plus the generic convex one) is a class with

* ``accepts(problem)`` (classmethod): the structure it recognizes in the problem's canonical form, or a
  string saying why not. It never raises: validation errors belong to the constructor, which runs only for
  the chosen reduction;
* ``__init__(problem, structure)``: the *program object*: what the exact backend lowers and the stochastic
  methods run on (validated here);
* ``solve_exact`` / ``solve_stochastic``: a :class:`Solution` in the declaration's variables (the inverse map);
* ``evaluate(variables, **context)``: the reduction's part of the judge (an :class:`Evaluation` on the full
  data: objective, constraint values, fairness metrics and the certificate of its structure).

``priority`` orders the reductions that accept a problem: the specialised paper methods (10) come before the
generic convex lowering (100), as CVXPY picks a QP path before the conic one; the registry
(:mod:`fairmodel.families.registry`) picks the lowest.
"""
from __future__ import annotations

import abc
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import FairmodelError, OptionError, SlowSolveWarning, UnsupportedProblemError
from ..exact.structure import structure_lines
from ..expressions.atoms.aggregates import GroupMean
from ..expressions.atoms.losses import Loss
from ..expressions.evaluate import Env, aggregates_by_pass
from ..utilities import display


@dataclass
class Solution:
    """What a backend returns before judging: variables plus the solver's own record."""

    variables: dict
    status: str
    message: str = ""
    history: list = field(default_factory=list)
    solver: dict = field(default_factory=dict)      # name, version, options, ...
    timings: dict = field(default_factory=dict)     # e.g. compile, solve (seconds)
    metrics: dict = field(default_factory=dict)     # method-specific extras (e.g. gradient evaluations)
    certificate: dict = field(default_factory=dict)  # method-specific certificates
    judge_context: dict = field(default_factory=dict)  # extra keyword arguments for the reduction's evaluate
    evaluation: "Evaluation | None" = None   # the judge's evaluation of exactly these variables, if the run made it


def certificate_missing(checks) -> bool:
    """True when the result has certificate checks and none of them could be computed (``checks``: pairs
    ``(kind, computed)``): its constraints may be met, but nothing bounds its suboptimality, so it is not verified.
    A family without a certificate for a problem (e.g. a network score) has no certificate check at all."""
    certificates = [computed for kind, computed in checks if kind == "certificate"]
    return bool(certificates) and not any(certificates)


@dataclass
class Check:
    """One check of the judge's numbers: ``value`` must be ``<= tolerance``; ``reason`` says why that tolerance.

    ``kind`` is ``"constraint"`` (a judged violation), ``"certificate"`` (a certified bound on the suboptimality)
    or ``"agreement"`` (two results compared, in a cross-check). A NaN value means "not computed" (e.g. an inner
    solve of a certificate failed): it does not pass, and it does not count as a failure of the result either.
    """

    name: str
    value: float
    tolerance: float
    reason: str
    kind: str = "agreement"

    @property
    def passed(self) -> bool:
        return bool(self.value <= self.tolerance)

    @property
    def computed(self) -> bool:
        return not math.isnan(float(self.value))

    @property
    def verdict(self) -> str:
        """``pass`` / ``FAIL``; ``reported`` for a number shown without a bound (tolerance inf), ``not computed``
        for NaN."""
        if not self.computed:
            return "not computed"
        if math.isinf(self.tolerance):
            return "reported"
        return "pass" if self.passed else "FAIL"

    def to_dict(self) -> dict:
        return {"name": self.name, "value": float(self.value), "tolerance": float(self.tolerance),
                "passed": self.passed, "kind": self.kind, "reason": self.reason}


def passed_text(checks) -> str:
    """``name = value <= tolerance; ...``: the computed checks with a bound, which passed, and their numbers."""
    return "; ".join(f"{c.name} = {c.value:.3g} <= {c.tolerance:.3g}" for c in checks
                     if c.computed and math.isfinite(c.tolerance))


@dataclass
class Evaluation:
    """What the judge computed for one candidate."""

    objective: float
    constraints: dict = field(default_factory=dict)   # name -> {"value", "bound", "violation"}
    metrics: dict = field(default_factory=dict)       # name -> number, array, or {group: number}
    certificate: dict = field(default_factory=dict)   # name -> number

    @property
    def max_violation(self) -> float:
        """The largest constraint violation (0 when every constraint holds or there are none)."""
        return max((c["violation"] for c in self.constraints.values()), default=0.0)


ROUNDING = 1e-6
BOUND_ORDER = "a lower bound above the value it bounds"
ROUNDING_REASON = ("a lower bound can exceed the value it bounds only by the errors of computing the two: rounding "
                   "(about n x 1e-16 relative for closed forms over n terms) and the tolerance of an exact inner "
                   "solve (the conic solvers' 1e-8 relative); 1e-6 max(1, |values|) is that with the margin of the "
                   "exact checks. A larger excess is no rounding: it proves one of the two computations wrong, so the "
                   "certificate (a negative gap) proves nothing")


def bound_order(lower_name: str, lower: float, upper_name: str, upper: float) -> Check:
    """The check that a lower bound does not exceed the value it bounds (weak duality: a dual bound below its primal
    value, ``min_x L(., y) <= L(x, y) <= max_y L(x, .)``), i.e. that the gap ``upper - lower`` is not negative
    beyond rounding (:data:`ROUNDING`, relative to the larger of 1 and the two values). A gap check alone passes a
    negative gap; this check fails it, naming the two numbers."""
    lower, upper = float(lower), float(upper)
    scale = max([1.0] + [abs(v) for v in (lower, upper) if math.isfinite(v)])
    return Check(f"{lower_name} - {upper_name} ({BOUND_ORDER})", lower - upper, ROUNDING * scale, ROUNDING_REASON,
                 "certificate")


def own_tolerance(result, check_name: str, fallback: float) -> float:
    """The tolerance that ``result``'s own acceptance gave its check ``check_name``, else ``fallback``: a cross-check
    judges the certificate of a result by the number that decided the result's ``ok`` (an accuracy scaled by the
    exact result's largest group risk instead of the stochastic one's failed a group-DRO result whose gap, 3.48712e-5,
    had passed its own tolerance and was 1.0005x the other)."""
    return next((float(c["tolerance"]) for c in (getattr(result, "checks", None) or [])
                 if c.get("name") == check_name), float(fallback))


NO_LARGER_CAP = "not a larger cap (the fail-fast rule measured that the checks would not pass before it)"


def cap_tip(solution, tip: str) -> str:
    """``tip`` (the advice of a larger cap), or, for a run the fail-fast rule stopped (its metrics hold the measured
    rate), that a larger cap is no remedy: the run said so itself, so advising it would contradict the message."""
    return NO_LARGER_CAP if "certificate_rate" in getattr(solution, "metrics", {}) else tip


def inconsistent(checks) -> list[Check]:
    """The failed :func:`bound_order` checks: a certificate that contradicts itself (no further iteration fixes it)."""
    return [c for c in checks if c.computed and not c.passed and c.name.endswith(f"({BOUND_ORDER})")]


def constraint_record(value: float, bound: float) -> dict:
    """The record of a constraint ``value <= bound``."""
    value, bound = float(value), float(bound)
    return {"value": value, "bound": bound, "violation": max(0.0, value - bound)}


def evaluate_constraints(constraints, env: Env) -> dict:
    """Records of declared constraints ``lhs <= rhs`` (evaluated as ``lhs - rhs <= 0`` when rhs varies)."""
    out = {}
    for c in constraints:
        if c.rhs.curvature == "constant":
            out[c.name] = constraint_record(c.lhs.numeric(env), c.bound())
        else:
            out[c.name] = constraint_record(c.lhs.numeric(env) - c.rhs.numeric(env), 0.0)
    return out


def declared_exprs(problem) -> list:
    """The objective and both sides of every constraint of a declaration."""
    return [problem.objective.expr] + [e for c in problem.constraints for e in (c.lhs, c.rhs)]


def group_risk_node(problem) -> GroupMean | None:
    """The per-group means of the objective's per-sample loss, the groups being those of the declaration's first
    ``fm.group_mean`` (else the sensitive groups of the loss's data); None when the declaration has no loss or no
    groups."""
    loss = next((n for n in problem.objective.expr.nodes() if isinstance(n, Loss)), None)
    groups = next((n.groups for e in declared_exprs(problem) for n in e.nodes() if isinstance(n, GroupMean)), None)
    data = getattr(getattr(loss, "score", None), "data", None)
    if groups is None and data is not None and data.has_groups:
        groups = data.groups
    if loss is None or groups is None or len(groups) != loss.size or groups.n_groups < 2:
        return None
    return GroupMean(loss, groups)           # weighted when the loss is


def group_risk_metrics(node: GroupMean | None, env: Env) -> dict:
    """``group_risks`` and ``worst_group`` from :func:`group_risk_node` (empty without one)."""
    if node is None:
        return {}
    risks = np.asarray(node.numeric(env), dtype=float)
    worst = node.groups.names[int(np.argmax(risks))]
    return {"group_risks": by_group(risks, node.groups.names), "worst_group": group_label(worst)}


def by_group(values, names) -> dict:
    """A ``{group name: value}`` dict (names turned into strings, for JSON)."""
    return {group_label(n): float(v) for n, v in zip(names, np.asarray(values, dtype=float))}


def group_label(n) -> str:
    return "/".join(map(str, n)) if isinstance(n, tuple) else str(n)


class Reduction(abc.ABC):
    """Base class of the reductions; subclasses fill in the class attributes and the methods."""

    name = "base"
    title = "base family"
    paper = ""
    supported = ""               # one line: which declarations the reduction accepts
    priority = 10                # lower is tried first (specialised paper methods before the generic lowering)
    exact_methods: dict = {}     # method name -> description (the first is the default)
    solverless_methods: tuple = ()   # exact methods that use no CVXPY solver (skipped by default when solver= is given)
    stochastic_methods: dict = {}
    program_method: str | None = None   # the exact method that solves the program of to_cvxpy(), when not all do

    def __init__(self, problem, structure=None):
        self.problem = problem

    @property
    def display_name(self) -> str:
        """What the user declared, for headings and plot titles (e.g. "MERO", "ERM", "composition");
        ``name`` stays the stable identifier that results store in ``family``."""
        return self.title

    @classmethod
    @abc.abstractmethod
    def accepts(cls, problem):
        """The structure this reduction recognizes in ``problem.canonical``, or a string saying why not."""

    # -- lowering --------------------------------------------------------------------------------------
    def describe(self, format: str = "text", program: bool = True) -> str:
        """The problem for a reader: the formulation (objective, domain, constraints, notation), the backends'
        methods, the structure the reduction recognized and (``program=True``) the exact program's variables and
        constraint blocks. ``format``: ``"text"``, ``"markdown"`` (math as ``$$...$$``) or ``"latex"`` (a document
        fragment)."""
        if format not in DESCRIBE_FORMATS:
            raise OptionError(f"format must be one of {', '.join(DESCRIBE_FORMATS)}; got {format!r}")
        title = f"Problem family: {self.title}" + (f" ({self.paper})" if self.paper else "")
        methods = [("Exact backend", self.exact_methods), ("Stochastic backend", self.stochastic_methods)]
        notes = [line for line in self.describe_extra() if note_text(line).strip()]
        return describe_sections(title, self.problem.formulation(format), methods, notes, format,
                                 self.program_lines() if program else [])

    def program_lines(self) -> list[str]:
        """The exact program's variables and constraint blocks (sizes, kinds, functions), or why there is none; the
        method that solves it when the default method does not, and the time estimate of its solve when long."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SlowSolveWarning)
            try:
                program = self.structure_program()
            except FairmodelError as exc:
                return [f"Exact program: not shown ({exc})"]
        lines = structure_lines(program)
        default = next(iter(self.exact_methods), None)
        if self.program_method and default != self.program_method:
            lines[0] = lines[0].replace("Exact program (", f"Exact program of method {self.program_method!r} (not "
                                                           f"built by the default method {default!r}; ", 1)
        lines += [f"  solving it: {w.message}" for w in caught if issubclass(w.category, SlowSolveWarning)]
        return lines

    def describe_extra(self) -> list:
        """Notes of ``describe`` after the methods: lines of text, or ``(text, latex)`` pairs whose LaTeX (math in
        ``$...$``) replaces the automatic setting of the text's ASCII math in ``format="latex"``."""
        return []

    def objective_regularizer(self, n) -> str:
        """A term the reduction adds to the declared objective (rendered in the notation ``n``, starting with its
        sign), so that the formulation shows what the solver minimizes; none by default."""
        return ""

    def structure_program(self):
        """The program whose structure ``describe`` shows: :meth:`to_cvxpy`, or one of the same structure that is
        cheaper to build (override)."""
        return self.to_cvxpy()

    def to_cvxpy(self):
        raise UnsupportedProblemError(f"the {self.title} family has no single CVXPY program to show")

    def solve_exact(self, method, solver, verbose, **options) -> Solution:
        raise UnsupportedProblemError(f"the {self.title} family has no exact backend")

    def solve_stochastic(self, method, seed, verbose, **options) -> Solution:
        raise UnsupportedProblemError(f"the {self.title} family has no stochastic backend")

    # -- judging ---------------------------------------------------------------------------------------
    def environment(self, variables: dict) -> Env:
        """The declaration's variables, checked, as an :class:`Env` for walking the declaration."""
        ws = {w.name: w for w in self.problem.variables()}
        if set(variables) != set(ws):
            raise OptionError(f"a candidate needs exactly the variables {sorted(ws)}; got {sorted(variables)}")
        return Env({w: w.check_value(variables[name], "candidate") for name, w in ws.items()})

    def evaluate(self, variables: dict, **context) -> Evaluation:
        """The judge of this reduction: the declaration walked on the full data, with the per-group risks of its
        loss when it has groups (override to add metrics and the certificate of the structure)."""
        env = self.environment(variables)
        risks = group_risk_node(self.problem)
        aggregates_by_pass(env, declared_exprs(self.problem) + ([] if risks is None else [risks]))
        return Evaluation(objective=float(self.problem.objective.expr.numeric(env)),
                          constraints=evaluate_constraints(self.problem.constraints, env),
                          metrics=group_risk_metrics(risks, env))

    # -- what "ok" means ---------------------------------------------------------------------------------
    def acceptance(self, evaluation: Evaluation, backend: str) -> list[Check]:
        """The checks a judged result of ``backend`` must pass to be ok: every constraint's violation within
        the backend's tolerance, and the reduction's certificates (override :meth:`certificate_checks`)."""
        checks = []
        for name, record in evaluation.constraints.items():
            tolerance, reason = self.violation_tolerance(record["bound"], backend)
            checks.append(Check(f"violation of {name}", record["violation"], tolerance, reason, "constraint"))
        return checks + self.certificate_checks(evaluation, backend)

    def violation_tolerance(self, bound: float, backend: str) -> tuple[float, str]:
        """(tolerance, reason) of a constraint ``value <= bound``: the solvers' feasibility tolerance for an exact
        result, a hundredth of the budget for a stochastic one."""
        if backend == "exact":
            return 1e-6 * max(1.0, abs(bound)), ("the conic and LP solvers' feasibility tolerance (1e-8), with a "
                                                 "margin, relative to max(1, |bound|)")
        return 1e-2 * abs(bound) + 1e-5, ("1% of the budget (plus 1e-5): a larger violation does not satisfy the "
                                          "declared constraint")

    def certificate_checks(self, evaluation: Evaluation, backend: str) -> list[Check]:
        """Checks of the reduction's certificates (duality gaps, brackets) for ``ok``; none by default."""
        return []

    def advice(self, backend: str, solution, failing: list[Check]) -> str:
        """What usually fixes a result whose checks failed (appended to its message); families refine it."""
        if backend == "exact":
            others = [m for m in self.exact_methods if m != solution.solver.get("method")]
            return ("What to try: another exact method" + (f" ({', '.join(others)})" if others else "")
                    + " or another solver (solver=).")
        cap = cap_tip(solution, "a larger cap (epochs=, or max_time=) lets the run continue until the checks pass")
        return (f"What to try: {cap}; if the values stall, smaller steps; the exact backend (backend='exact') where "
                "the data fit in memory.")

    def crosscheck_checks(self, exact, stochastic, **context) -> list[Check]:
        """The checks ``fm.crosscheck`` applies to the two judged results (override per family); ``context``
        holds the solve-time data of the cross-check (e.g. ``data=``) that the reduction's judge takes."""
        return default_checks(exact, stochastic)

    def warm_start(self, result) -> dict:
        """Options that start the stochastic method from a previous result (used by sweeps)."""
        return {}

    @classmethod
    def predictor(cls, result):
        raise OptionError(f"results of the {cls.title} family have no predictor()")


Family = Reduction   # the name used before reductions were made explicit
DESCRIBE_FORMATS = ("text", "markdown", "latex")


def note_text(note) -> str:
    """The text of a note of ``describe`` (a line, or a ``(text, latex)`` pair)."""
    return note[0] if isinstance(note, tuple) else note


def _note_latex(note) -> str:
    return note[1] if isinstance(note, tuple) else display.latex_prose(note.strip())


def describe_sections(title: str, formulation: str, methods: list, notes: list, format: str,
                      structure: list = ()) -> str:
    """The sections of ``describe()``: the title ("Problem family: ..."), the formulation, the methods of each
    backend (``[(heading, {method: description})]``), notes and the exact program's structure, in ``format``."""
    if format == "text":
        lines = [title, "", formulation, ""]
        for head, table in methods:
            lines += [f"{head}:"] + ([f"  {m}: {d}" for m, d in table.items()] or ["  (none)"])
        notes = [note_text(n) for n in notes]
        return "\n".join(lines + ([""] + notes if notes else []) + ([""] + list(structure) if structure else []))
    if format == "markdown":
        head, _, rest = title.partition(": ")
        lines = [f"**{head}:** {rest}" if rest else f"**{title}**", "", formulation, ""]
        for head, table in methods:
            lines += [f"**{head}:**", ""] + ([f"- `{m}`: {d}" for m, d in table.items()] or ["- (none)"]) + [""]
        lines += [f"- {note_text(n)}" for n in notes] + ([""] if notes else [])
        if structure:
            lines += [f"**{structure[0]}**", ""] + [f"- {s.strip()}" for s in structure[1:]]
        return "\n".join(lines)
    prose = display.latex_prose
    head, _, rest = title.partition(": ")
    lines = [f"\\paragraph{{{prose(head)}}} {prose(rest)}", formulation]
    for head, table in methods:
        lines += [f"\\paragraph{{{head}}}", "\\begin{itemize}"]
        lines += [f"  \\item \\texttt{{{display.latex_text(m)}}}: {prose(d)}" for m, d in table.items()] \
            or ["  \\item (none)"]
        lines += ["\\end{itemize}"]
    if notes:
        lines += ["\\paragraph{Structure}", "\\begin{itemize}"] + [f"  \\item {_note_latex(n)}" for n in notes]
        lines += ["\\end{itemize}"]
    if structure:
        lines += [f"\\paragraph{{Exact program}} {prose(structure[0][len('Exact program '):])}",
                  "\\begin{itemize}"] + [f"  \\item {prose(s.strip())}" for s in structure[1:]] + ["\\end{itemize}"]
    return "\n".join(lines)


def default_checks(exact, stochastic, objective_tol: float = 1e-3, violation_tol: float = 1e-6,
                   reason: str = "default tolerance") -> list[Check]:
    """Objective gap and constraint violations of the stochastic result against the exact one."""
    return [Check("objective gap (stochastic - exact)", stochastic.objective - exact.objective, objective_tol, reason),
            Check("constraint violation (stochastic)", stochastic.max_violation, violation_tol,
                  "a feasible point must satisfy every constraint"),
            Check("constraint violation (exact)", exact.max_violation, violation_tol,
                  "the exact solution must satisfy every constraint")]
