"""The judge: one NumPy evaluation of any candidate on the full data, whichever path produced it.

Each family builds an :class:`Evaluation` with the helpers here: the objective, every constraint's
value, bound and violation, fairness metrics, and the family's certificate (duality gap, KKT residual,
gradient-mapping norm, level-set bracket, ...). ``Problem.evaluate(...)`` and ``fm.judge`` expose it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .expressions import Env


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


def constraint_record(value: float, bound: float) -> dict:
    """The record of a constraint ``value <= bound``."""
    value, bound = float(value), float(bound)
    return {"value": value, "bound": bound, "violation": max(0.0, value - bound)}


def evaluate_constraints(constraints, env: Env) -> dict:
    """Records of DSL constraints ``lhs <= rhs`` (evaluated as ``lhs - rhs <= 0`` when rhs varies)."""
    out = {}
    for c in constraints:
        if c.rhs.curvature == "constant":
            out[c.name] = constraint_record(c.lhs.value(env), c.bound())
        else:
            out[c.name] = constraint_record(c.lhs.value(env) - c.rhs.value(env), 0.0)
    return out


def by_group(values, names) -> dict:
    """A ``{group name: value}`` dict (names turned into strings, for JSON)."""
    return {_name(n): float(v) for n, v in zip(names, np.asarray(values, dtype=float))}


def _name(n) -> str:
    return "/".join(map(str, n)) if isinstance(n, tuple) else str(n)


def judge(problem, candidate=None, **variables) -> Evaluation:
    """Evaluate a candidate for ``problem`` (same as ``problem.evaluate``)."""
    return problem.evaluate(candidate, **variables)
