"""Problems: declare, canonicalize, reduce, solve, judge.

``Problem(Minimize(expr), [constraints], **options)`` keeps the declaration as written (for ``str``,
``describe`` and the judge), builds its canonical form (:mod:`fairmodel.expressions.canonicalize`) and asks
the reductions (:mod:`fairmodel.families`) which of them accept it; the one of lowest priority builds its
program (``problem.family``). A problem that none accepts raises :class:`UnsupportedProblemError` naming the
expression and what each family supports.
"""
from __future__ import annotations

import inspect
import time
from typing import Sequence

from . import families  # noqa: F401  (registers the reductions)
from .errors import (
    DataError,
    ExpressionTypeError,
    ModelError,
    OptionError,
    ResourceLimitError,
    SolverError,
    UnsupportedProblemError,
)
from .expressions.canonicalize import canonical_problem
from .expressions.core import Inequality, Minimize, Parameter, check_depth
from .expressions.notation import Notation, layout, render_wide
from .families.registry import recognize
from .results.judge import judge, judge_solution
from .results.result import Result
from .sweeps.frontier import sweep as run_sweep
from .utilities import display
from .utilities.progress import interruptible
from .utilities.threads import few_threads
from .utilities.validate import check_int, check_number, check_options

BACKENDS = ("exact", "stochastic")


def _render_constraint(c: Inequality, n: Notation) -> str:
    if type(c) is not Inequality:           # a family's constraint (e.g. the DP constraint) writes itself
        return c.render(n)
    return f"{render_wide(c.lhs, n)} {n.le()} {c.rhs.render(n)}"

__all__ = ["BACKENDS", "Inequality", "Minimize", "Problem"]


def _first_line(exc) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _check_keywords(method, options: dict, where: str) -> None:
    """Unknown option names of a solve method without ``**options`` raise an OptionError listing the valid ones."""
    params = inspect.signature(method).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        check_options(options, [n for n in params if n not in ("method", "seed", "solver", "verbose")], where)


def _check_shared_options(options: dict) -> None:
    """The options many methods share, checked once before any work: ``batch_size`` (rows a step draws: a positive
    integer, or None for the method's default), ``max_time`` (seconds, > 0) and ``max_grad_evals`` (a positive
    integer); None for either of these is no limit, as their defaults."""
    if "batch_size" in options and options["batch_size"] is None:
        del options["batch_size"]
    if "batch_size" in options:
        check_int(options["batch_size"], "batch_size")
    check_number(options.get("max_time"), "max_time", low=0.0, strict=True, allow_none=True)
    if options.get("max_grad_evals") is not None:
        check_int(options["max_grad_evals"], "max_grad_evals")


def _check_distinct_names(exprs) -> None:
    """Two different parameters (or variables) with one name would share one value in the exact program, in
    ``parameters()``, in sweeps and in results (which key them by name): refuse them."""
    seen: dict = {}
    for e in exprs:
        for node in e.nodes():
            if isinstance(node, Parameter) or node in e.variables():
                kind = "parameters" if isinstance(node, Parameter) else "variables"
                other = seen.setdefault((kind, node.name), node)
                if other is not node:
                    what = (f"(values {other.value:g} and {node.value:g})" if kind == "parameters" else
                            f"({other!r} and {node!r})")
                    raise ModelError(f"two different {kind} are named {node.name!r} {what}; give each its own name "
                                     f"(name=...), or use the same object in both places")


class Problem:
    """A fair-learning problem: ``Problem(Minimize(expr), [constraints], **family_options)``.

    Family options are forwarded to the reduction that accepts the problem (e.g. ``entropy=1/beta`` for
    DP post-processing). The chosen reduction is ``problem.family``; ``problem.canonical`` is the canonical
    form it recognized. ``title`` (optional) names the problem in results, cross-check headings and plots
    (``problem.label``: the title and the kind of problem declared, e.g. "Adult by race (MERO)").
    """

    def __init__(self, objective: Minimize, constraints: Sequence[Inequality] = (), *, title: str | None = None,
                 **options):
        if not isinstance(objective, Minimize):
            raise ExpressionTypeError(f"Problem needs fm.Minimize(expr) as objective; got {type(objective).__name__}")
        if isinstance(constraints, Inequality):
            constraints = [constraints]
        constraints = list(constraints)
        for i, c in enumerate(constraints):
            if not isinstance(c, Inequality):
                raise ExpressionTypeError(f"constraint {i} must be built with <= or >=; got {type(c).__name__}")
        check_depth(objective.expr, "the objective")
        for i, c in enumerate(constraints):
            check_depth(c.lhs, f"constraint {c.name or i}")
            check_depth(c.rhs, f"constraint {c.name or i}")
        if objective.expr.curvature == "constant":
            raise ModelError(f"the objective {display.short(str(objective.expr))} does not depend on any variable "
                             f"(it is a constant, e.g. a function of the labels y alone): minimize an expression of "
                             f"the model, e.g. fm.mean(fm.logistic_loss(data.score(w), data.y))")
        names = [c.name or f"c{i}" for i, c in enumerate(constraints)]
        if len(set(names)) != len(names):
            raise ModelError(f"constraint names must be unique; got {names}")
        _check_distinct_names([objective.expr] + [c.expr for c in constraints])
        self.objective = objective
        self.title = None if title is None else str(title)
        self.constraints = tuple(c if c.name else c.named(n) for c, n in zip(constraints, names))
        self.options = dict(options)
        self.canonical = canonical_problem(objective.expr, self.constraints, self.options)
        self.recognition = recognize(self)
        cls, structure = self.recognition.accepted[0]
        self.family = cls(self, structure)
        self._others: dict = {}

    def replace(self, *, objective: Minimize | None = None, constraints=None, **options) -> "Problem":
        """A new problem with some parts replaced (the options are merged)."""
        return Problem(objective or self.objective, self.constraints if constraints is None else constraints,
                       title=self.title, **{**self.options, **options})

    @property
    def label(self) -> str:
        """What the user declared, for results, cross-check headings and plots: the kind of problem ("group DRO",
        "MERO", "ERM", "composition", ...) after the title when there is one."""
        kind = self.family.display_name
        return f"{self.title} ({kind})" if self.title else kind

    # -- introspection -------------------------------------------------------------------------------
    def variables(self):
        out = []
        for e in [self.objective.expr] + [c.expr for c in self.constraints]:
            for v in e.variables():
                if v not in out:
                    out.append(v)
        return out

    def formulation(self, format: str = "text") -> str:
        """The problem as math: the objective (with the term the reduction adds to it, e.g. the entropy term of DP
        post-processing), the domain of the weights, the constraints and what every symbol means (the "where"
        lines), as ``"text"``, ``"markdown"`` (display math) or ``"latex"`` (an ``align*`` environment and a list; it
        needs the amsmath and amssymb packages)."""
        n = Notation(latex=format != "text")
        family = getattr(self, "family", None)      # None while the reductions are still being asked (their messages)
        objective = render_wide(self.objective.expr, n) + (family.objective_regularizer(n) if family else "")
        domain = [v.domain(n) for v in self.variables() if hasattr(v, "domain")]
        constraints = [(c.name, _render_constraint(c, n)) for c in self.constraints]
        return layout("minimize", objective, domain, constraints, n.where(), format)

    def describe(self, format: str = "text", program: bool = True) -> str:
        """The problem in math notation (:meth:`formulation`), what each backend will do, the exact program's
        structure (variables and constraint blocks with their sizes; ``program=False`` skips building it) and which
        reductions accept it. ``format``: ``"text"``, ``"markdown"`` or ``"latex"`` (a document fragment for
        the amsmath and amssymb packages; ``fairmodel describe --format latex`` prints a whole document)."""
        head = self.family.describe(format=format, program=program)
        explain = self.recognition.explain()
        if format == "latex":
            return head + "\n\\paragraph{Reductions} (tried in order of priority)\n\\begin{itemize}\n" + "\n".join(
                f"  \\item {display.latex_prose(line.strip())}" for line in explain) + "\n\\end{itemize}"
        if format == "markdown":
            return head + "\n\n**Reductions** (tried in order of priority):\n\n" + "\n".join(
                f"- {line.strip()}" for line in explain)
        return head + "\n\nReductions (tried in order of priority):\n" + "\n".join(explain)

    def to_cvxpy(self):
        """The exact CVXPY program (for inspection and teaching)."""
        return self.family.to_cvxpy()

    def __str__(self):
        return self.formulation()

    def __repr__(self):
        n = len(self.constraints)
        return display.short(f"<fairmodel.Problem ({self.family.title}): minimize {self.objective.expr}"
                              + (f" s.t. {n} constraint{'s' * (n != 1)}" if n else "")
                              + "; .describe() for the math and the programs>")

    def _repr_markdown_(self):
        return self.describe(format="markdown", program=False)

    # -- solving ---------------------------------------------------------------------------------------
    def reduction_for(self, backend: str, method: str | None, solver: str | None = None):
        """(reduction, method): the chosen reduction, or another accepting one that offers ``method``. With
        ``solver=`` and no method, the default is the first exact method that uses a CVXPY solver."""
        if backend not in BACKENDS:
            raise OptionError(f"unknown backend {backend!r}; valid backends are {', '.join(BACKENDS)}")
        attr = "exact_methods" if backend == "exact" else "stochastic_methods"
        if method is None and solver is not None and backend == "exact":
            method = next((m for m in self.family.exact_methods if m not in self.family.solverless_methods), None)
        if method is None or method in getattr(self.family, attr):
            return self.family, method or self._default_method(attr, backend)
        candidates = [self.family] + [self._other(cls, structure) for cls, structure in self.recognition.accepted[1:]]
        for reduction in candidates:
            if method in getattr(reduction, attr):
                return reduction, method
        valid = list(dict.fromkeys(m for r in candidates for m in getattr(r, attr)))
        reason = next((r.unavailable[method] for r in candidates if method in getattr(r, "unavailable", {})), None)
        if reason:          # a method of the family that does not apply to this declaration: say why
            raise UnsupportedProblemError(f"the {backend} method {method!r} does not apply to this problem: {reason}; "
                                          f"valid methods here are {', '.join(valid) or '(none)'}")
        raise OptionError(f"unknown {backend} method {method!r} for {self.family.title}; valid methods are "
                          f"{', '.join(valid) or '(none)'}")

    def _default_method(self, attr: str, backend: str) -> str:
        methods = getattr(self.family, attr)
        if not methods:
            reason = getattr(self.family, "unavailable", {}).get(backend)
            raise UnsupportedProblemError(f"the {self.family.title} family has no {backend} backend for this "
                                          f"problem" + (f": {reason}" if reason else ""))
        return next(iter(methods))

    def reduction(self, name: str):
        """The accepting reduction called ``name`` (the chosen one or another that accepts the problem)."""
        for cls, structure in self.recognition.accepted:
            if cls.name == name:
                return self.family if cls is type(self.family) else self._other(cls, structure)
        raise OptionError(f"no reduction {name!r} accepts this problem; the accepting ones are "
                          f"{', '.join(cls.name for cls, _ in self.recognition.accepted)}")

    def _other(self, cls, structure):
        if cls.name not in self._others:
            self._others[cls.name] = cls(self, structure)
        return self._others[cls.name]

    @few_threads
    def solve(self, backend: str = "exact", method: str | None = None, *, seed=None, solver: str | None = None,
              verbose: bool | None = None, **options) -> Result:
        """Solve with the ``"exact"`` (CVXPY) or the ``"stochastic"`` backend; returns a :class:`Result`.

        ``method`` picks an algorithm (``None``: the chosen family's default; a method of another reduction
        that accepts the problem, e.g. ``"primal_dual"``, uses that one); ``solver`` a CVXPY solver for exact
        programs; ``seed`` makes stochastic runs reproducible; other keyword options go to the method
        (unknown names raise an error listing the valid ones). The options many methods share are checked here before
        any work: ``batch_size`` (None: the method's default), ``max_time`` and ``max_grad_evals`` (None: no limit).
        """
        default = method is None
        family, method = self.reduction_for(backend, method, solver)
        _check_shared_options(options)
        if options.get("callback") is not None and not callable(options["callback"]):
            raise OptionError(f"callback must be a callable f(info) or None; got "
                              f"{type(options['callback']).__name__}")
        if backend == "exact":
            _check_keywords(family.solve_exact, options, f"the exact method {method!r}")
            if default:        # the default exact method falls back to the family's others when it fails
                return self._exact_with_fallback(family, method, solver, verbose, options)
        elif solver is not None:
            raise OptionError("solver= chooses a CVXPY solver for the exact backend; the stochastic backend "
                              "takes method= instead")
        else:
            _check_keywords(family.solve_stochastic, options, f"the stochastic method {method!r}")
        return self._solve_with(family, backend, method, seed, solver, verbose, options)

    def _solve_with(self, family, backend, method, seed, solver, verbose, options) -> Result:
        """One solve by ``family``'s ``method``, judged on the full data."""
        start = time.perf_counter()
        if backend == "exact":
            solution = family.solve_exact(method=method, solver=solver, verbose=verbose, **options)
        else:
            with interruptible() as stop:   # Ctrl-C: the method stops at its next epoch; its iterate is judged
                solution = family.solve_stochastic(method=method, seed=seed, verbose=verbose, **options)
                if stop.requested:   # the loops that stop early say where; others ran to their end
                    where = (solution.message if solution.status == "interrupted"
                             else f"interrupted by Ctrl-C {solution.message}".strip())
                    solution.status = "interrupted"
                    solution.message = f"{where}; the last iterate is returned, judged on the full data"
        solved = time.perf_counter()
        evaluation, checks = judge_solution(family, solution, backend)
        judged = time.perf_counter()
        timings = {"total": judged - start, "solve": solved - start, "judge": judged - solved}
        timings.update(solution.timings)
        return Result.from_parts(backend=backend, method=method, family=family.name, seed=seed,
                                 solution=solution, evaluation=evaluation, timings=timings,
                                 problem_text=str(self), checks=[c.to_dict() for c in checks], name=self.label)

    def _exact_with_fallback(self, family, method, solver, verbose, options) -> Result:
        """The default exact method, and when it fails (a solver error, or a result the judge does not accept)
        the family's other exact methods in order, until one gives an ok result; the result says what failed."""
        others = [m for m in family.exact_methods if m != method
                  and not (solver is not None and m in family.solverless_methods)]
        failures, last, first_error = [], None, None
        for m in [method] + others:
            try:
                result = self._solve_with(family, "exact", m, None, solver, verbose, options)
            except (SolverError, ResourceLimitError) as exc:
                if m == method and not others:
                    raise
                first_error = first_error or exc
                failures.append(f"the exact method {m!r} failed ({_first_line(exc)})")
                continue
            except (OptionError, UnsupportedProblemError):
                if m == method:
                    raise
                continue          # a method that does not apply to this problem
            except DataError as exc:     # e.g. a per-row program on chunked data: say so, keep the first result
                if m == method:
                    raise
                failures.append(f"the exact method {m!r} cannot run on these data ({_first_line(exc)})")
                continue
            if result.ok or result.status in ("unbounded",):
                break
            failures.append(f"the exact method {m!r} gave a result the judge did not accept ({result.status})")
            last = last or result
        else:
            if last is None:
                raise first_error
            result = last
        if failures:
            note = "; ".join(failures) + (f"; solved by {result.method!r} instead" if result.ok else "")
            result.message = f"{note}. {result.message}".strip() if result.message else note
        return result

    def parameters(self) -> dict:
        """The parameters of the problem, by name."""
        found = {}
        for e in [self.objective.expr] + [c.lhs for c in self.constraints] + [c.rhs for c in self.constraints]:
            for node in e.nodes():
                if isinstance(node, Parameter):
                    found[node.name] = node
        return found

    def sweep(self, param: str, values, backend: str = "exact", warm_start: bool = True,
              verbose: bool | None = None, **options):
        """Solve for every value of the parameter ``param``; returns a :class:`fairmodel.sweeps.frontier.Frontier`.

        The parameter keeps its last value afterwards only if the sweep fails; it is restored otherwise.
        """
        params = self.parameters()
        if param not in params:
            raise OptionError(f"the problem has no parameter {param!r}; its parameters are "
                              f"{', '.join(params) or '(none: declare one with fm.parameter(value, name))'}")
        node, original = params[param], params[param].value

        def build(value):
            node.value = value
            return self
        try:
            return run_sweep(build, values, param=param, backend=backend, warm_start=warm_start, verbose=verbose,
                             **options)
        finally:
            node.value = original

    def crosscheck_checks(self, exact: Result, stochastic: Result, **common) -> tuple[list, str]:
        """The checks ``fm.crosscheck`` applies, from the reduction that produced the stochastic result, and that
        reduction's name; ``common`` holds the cross-check's shared options (those the judge takes, e.g. ``data=``)."""
        reduction = self.reduction(stochastic.family)
        context = {k: v for k, v in common.items() if k in getattr(reduction, "judge_options", ())}
        return reduction.crosscheck_checks(exact, stochastic, **context), reduction.name

    def evaluate(self, candidate: dict | None = None, **variables):
        """Judge any candidate (from either backend or your own): an :class:`Evaluation`.

        Pass variables by name, e.g. ``prob.evaluate(w=my_weights)``, or a ``Result``'s variables; solve-time
        context such as ``data=`` for DP post-processing goes with them.
        """
        return judge(self, candidate, **variables)
