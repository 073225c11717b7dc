"""The contract between a problem family and the rest of fairmodel.

A family recognizes a problem structure (``match``), lowers it to an exact program and to stochastic
methods (``solve_exact`` / ``solve_stochastic`` return a :class:`Solution`), and judges any candidate
(``evaluate`` returns a :class:`fairmodel.judge.Evaluation`). ``Problem.solve`` assembles the
:class:`fairmodel.results.Result` from the solution and the judge's evaluation, so every reported
objective is the judge's, computed on the full data.

To add a family: subclass :class:`Family`, decorate it with ``@register_family`` and import its module
in ``fairmodel/families/__init__.py``.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field

from ..errors import OptionError, UnsupportedProblemError
from ..problem import _FAMILIES


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
    judge_context: dict = field(default_factory=dict)  # extra keyword arguments for Family.evaluate


@dataclass
class Check:
    """One line of a cross-check: ``value`` must be ``<= tolerance``; ``reason`` says why that tolerance."""

    name: str
    value: float
    tolerance: float
    reason: str

    @property
    def passed(self) -> bool:
        return bool(self.value <= self.tolerance)


class Family(abc.ABC):
    """Base class of problem families. Subclasses fill in the class attributes and the methods."""

    name = "base"
    title = "base family"
    paper = ""
    supported = ""               # one line: which declarations the family accepts
    exact_methods: dict = {}     # method name -> description (the first is the default)
    stochastic_methods: dict = {}

    def __init__(self, problem):
        self.problem = problem

    @classmethod
    def match(cls, problem):
        """A family instance when the problem has this structure, else a string saying why not."""
        return "not implemented"

    # -- lowering --------------------------------------------------------------------------------------
    def describe(self) -> str:
        lines = [f"Problem family: {self.title}" + (f" ({self.paper})" if self.paper else ""), "",
                 str(self.problem), "", "Exact backend:"]
        lines += [f"  {m}: {d}" for m, d in self.exact_methods.items()] or ["  (none)"]
        lines += ["Stochastic backend:"]
        lines += [f"  {m}: {d}" for m, d in self.stochastic_methods.items()] or ["  (none)"]
        return "\n".join(lines + self.describe_extra())

    def describe_extra(self) -> list[str]:
        return []

    def to_cvxpy(self):
        raise UnsupportedProblemError(f"the {self.title} family has no single CVXPY program to show")

    def solve_exact(self, method, solver, verbose, **options) -> Solution:
        raise UnsupportedProblemError(f"the {self.title} family has no exact backend")

    def solve_stochastic(self, method, seed, verbose, **options) -> Solution:
        raise UnsupportedProblemError(f"the {self.title} family has no stochastic backend")

    # -- judging ---------------------------------------------------------------------------------------
    @abc.abstractmethod
    def evaluate(self, variables: dict, **context):
        """The judge of this family: an Evaluation of the candidate ``variables`` on the full data."""

    def crosscheck_checks(self, exact, stochastic) -> list[Check]:
        """The checks ``fm.crosscheck`` applies to the two judged results (override per family)."""
        return default_checks(exact, stochastic)

    def warm_start(self, result) -> dict:
        """Options that start the stochastic method from a previous result (used by sweeps)."""
        return {}

    def predictor(self, result):
        raise OptionError(f"results of the {self.title} family have no predictor()")


def default_checks(exact, stochastic, objective_tol: float = 1e-3, violation_tol: float = 1e-6,
                   reason: str = "default tolerance") -> list[Check]:
    """Objective gap and constraint violations of the stochastic result against the exact one."""
    checks = [Check("objective gap (stochastic - exact)", stochastic.objective - exact.objective,
                    objective_tol, reason),
              Check("constraint violation (stochastic)", stochastic.max_violation, violation_tol,
                    "a feasible point must satisfy every constraint"),
              Check("constraint violation (exact)", exact.max_violation, violation_tol,
                    "the exact solution must satisfy every constraint")]
    return checks


def family_by_name(name: str):
    from . import __name__ as _pkg  # noqa: F401  (ensures registration)
    for cls in _FAMILIES:
        if cls.name == name:
            return cls
    raise OptionError(f"unknown family {name!r}; known families are {', '.join(c.name for c in _FAMILIES)}")
