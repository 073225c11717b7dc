"""Problems: objective, constraints, structure recognition, solve, describe.

A :class:`Problem` is matched, at declaration, against the registered problem *families* (group DRO,
DP post-processing, AUC fairness, partial fairness, strategic DRO, generic convex). The first family
that recognizes the structure lowers it to its exact program and to its stochastic method, and provides
the judge. A problem no family recognizes raises :class:`UnsupportedProblemError` that names the
expression and lists what each family supports.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from .errors import ExpressionTypeError, ModelError, OptionError, UnsupportedProblemError
from .expressions import Expr, as_expr

BACKENDS = ("exact", "stochastic")


class Minimize:
    """The objective of a problem: minimize a scalar expression."""

    def __init__(self, expr):
        expr = as_expr(expr)
        if expr.kind != "scalar":
            raise ExpressionTypeError(
                f"the objective must be a scalar; {expr} is a {expr.kind} vector of size {expr.size}. "
                f"Aggregate it with fm.max(...) or fm.mean(...)")
        self.expr = expr

    def __str__(self):
        return f"minimize {self.expr}"


class Inequality:
    """A constraint ``lhs <= rhs``. ``name`` labels it in results (default ``c0, c1, ...``)."""

    def __init__(self, lhs: Expr, rhs: Expr, name: str | None = None):
        if lhs.kind != "scalar" or rhs.kind != "scalar":
            bad = lhs if lhs.kind != "scalar" else rhs
            raise ExpressionTypeError(f"constraints compare scalars; {bad} is a {bad.kind} vector. "
                                      f"Use fm.max(...) to bound every entry")
        self.lhs, self.rhs, self.name = lhs, rhs, name

    def named(self, name: str) -> "Inequality":
        return Inequality(self.lhs, self.rhs, name)

    @property
    def expr(self) -> Expr:
        """``lhs - rhs`` (the constraint is ``expr <= 0``)."""
        return self.lhs - self.rhs

    def bound(self) -> float:
        """The right-hand side when it is a constant."""
        if self.rhs.curvature != "constant":
            raise ModelError(f"the right-hand side of {self} is not a constant")
        return float(self.rhs.constant_value())

    def __bool__(self):
        raise ExpressionTypeError("a constraint has no truth value; pass it to Problem(objective, [constraints])")

    def __str__(self):
        return f"{self.lhs} <= {self.rhs}"


class Problem:
    """A fair-learning problem: ``Problem(Minimize(expr), [constraints], **family_options)``.

    Family options are forwarded to the family that recognizes the problem (e.g. ``entropy=1/beta`` for
    DP post-processing). The recognized family is ``problem.family``.
    """

    def __init__(self, objective: Minimize, constraints: Sequence[Inequality] = (), **options):
        if not isinstance(objective, Minimize):
            raise ExpressionTypeError(f"Problem needs fm.Minimize(expr) as objective; got {type(objective).__name__}")
        constraints = list(constraints)
        for i, c in enumerate(constraints):
            if not isinstance(c, Inequality):
                raise ExpressionTypeError(f"constraint {i} must be built with <= or >=; got {type(c).__name__}")
        names = [c.name or f"c{i}" for i, c in enumerate(constraints)]
        if len(set(names)) != len(names):
            raise ModelError(f"constraint names must be unique; got {names}")
        self.objective = objective
        self.constraints = tuple(c if c.name else c.named(n) for c, n in zip(constraints, names))
        self.options = dict(options)
        self.family = recognize(self)

    # -- introspection -------------------------------------------------------------------------------
    def variables(self):
        out = []
        for e in [self.objective.expr] + [c.expr for c in self.constraints]:
            for v in e.variables():
                if v not in out:
                    out.append(v)
        return out

    def describe(self) -> str:
        """The problem in math notation and what each backend will do with it."""
        return self.family.describe()

    def to_cvxpy(self):
        """The exact CVXPY program (for inspection and teaching)."""
        return self.family.to_cvxpy()

    def __str__(self):
        lines = [str(self.objective)]
        if self.constraints:
            lines.append("subject to")
            lines += [f"  {c.name}: {c}" for c in self.constraints]
        return "\n".join(lines)

    # -- solving ---------------------------------------------------------------------------------------
    def solve(self, backend: str = "exact", method: str | None = None, *, seed=None, solver: str | None = None,
              verbose: bool | None = None, **options):
        """Solve with the ``"exact"`` (CVXPY) or the ``"stochastic"`` backend; returns a :class:`Result`.

        ``method`` picks an algorithm of the family (``None``: its default); ``solver`` a CVXPY solver
        for exact programs; ``seed`` makes stochastic runs reproducible; other keyword options go to the
        method (unknown names raise an error listing the valid ones).
        """
        from .results import Result
        if backend not in BACKENDS:
            raise OptionError(f"unknown backend {backend!r}; valid backends are {', '.join(BACKENDS)}")
        family = self.family
        methods = family.exact_methods if backend == "exact" else family.stochastic_methods
        if not methods:
            raise UnsupportedProblemError(f"the {family.title} family has no {backend} backend for this problem")
        method = method or next(iter(methods))
        if method not in methods:
            raise OptionError(f"unknown {backend} method {method!r} for {family.title}; valid methods are "
                              f"{', '.join(methods)}")
        start = time.perf_counter()
        if backend == "exact":
            solution = family.solve_exact(method=method, solver=solver, verbose=verbose, **options)
        else:
            if solver is not None:
                raise OptionError("solver= chooses a CVXPY solver for the exact backend; the stochastic backend "
                                  "takes method= instead")
            solution = family.solve_stochastic(method=method, seed=seed, verbose=verbose, **options)
        solved = time.perf_counter()
        evaluation = family.evaluate(solution.variables, **solution.judge_context)
        judged = time.perf_counter()
        timings = {"total": judged - start, "solve": solved - start, "judge": judged - solved}
        timings.update(solution.timings)
        return Result.from_parts(backend=backend, method=method, family=family.name, seed=seed,
                                 solution=solution, evaluation=evaluation, timings=timings,
                                 problem_text=str(self))

    def parameters(self) -> dict:
        """The DSL parameters of the problem, by name."""
        from .expressions import Parameter
        found = {}
        for e in [self.objective.expr] + [c.lhs for c in self.constraints] + [c.rhs for c in self.constraints]:
            for node in e.nodes():
                if isinstance(node, Parameter):
                    found[node.name] = node
        return found

    def sweep(self, param: str, values, backend: str = "exact", warm_start: bool = True,
              verbose: bool | None = None, **options):
        """Solve for every value of the parameter ``param``; returns a :class:`fairmodel.sweep.Frontier`.

        The parameter keeps its last value afterwards only if the sweep fails; it is restored otherwise.
        """
        from .sweep import sweep
        params = self.parameters()
        if param not in params:
            raise OptionError(f"the problem has no parameter {param!r}; its parameters are "
                              f"{', '.join(params) or '(none: declare one with fm.parameter(value, name))'}")
        node, original = params[param], params[param].value

        def build(value):
            node.value = value
            return self
        try:
            return sweep(build, values, param=param, backend=backend, warm_start=warm_start, verbose=verbose,
                         **options)
        finally:
            node.value = original

    def evaluate(self, candidate: dict | None = None, **variables):
        """Judge any candidate (from either backend or your own): an :class:`Evaluation`.

        Pass variables by name, e.g. ``prob.evaluate(w=my_weights)``, or a ``Result``'s variables.
        """
        if candidate is not None:
            from .results import Result
            if isinstance(candidate, Result):
                candidate = candidate.variables
            variables = {**dict(candidate), **variables}
        return self.family.evaluate(variables)


# ---------------------------------------------------------------------------------------------------
# Structure recognition
# ---------------------------------------------------------------------------------------------------
_FAMILIES: list = []


def register_family(cls):
    """Class decorator: add a family to the recognizers (tried in registration order)."""
    _FAMILIES.append(cls)
    return cls


def recognize(problem: Problem):
    """The family instance that accepts ``problem``, or an error naming the expression and the rules."""
    from . import families  # noqa: F401  (registers the built-in families)
    reasons = []
    for cls in _FAMILIES:
        verdict = cls.match(problem)
        if not isinstance(verdict, str):
            return verdict
        reasons.append(f"- {cls.title}: {verdict}")
    raise UnsupportedProblemError(
        "no backend supports this problem:\n" + _indent(str(problem)) + "\nwhat each family accepts:\n"
        + "\n".join(reasons))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def check_options(options: dict, allowed: Sequence[str], where: str) -> None:
    """Raise an :class:`OptionError` naming unknown option keys and listing the valid ones."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise OptionError(f"unknown option(s) {', '.join(map(repr, unknown))} for {where}; valid options are "
                          f"{', '.join(sorted(allowed)) or '(none)'}")


def finite_or_nan(x) -> float:
    x = float(x)
    return x if np.isfinite(x) else float("nan")
