"""The generic convex reduction: any DCP-convex declaration, as one CVXPY program and as a stochastic
primal-dual method on its Lagrangian.

It is the fallback of the registry (priority 100): the paper families are tried first. It accepts a convex
objective and constraints ``convex <= concave`` built from atoms that have a CVXPY rule
(:mod:`fairmodel.exact.lower`), including family atoms that register one (the moment form of the AUC atoms).
Constraints whose left side is a max, an absolute value or a positive part are split into one-sided pieces
(``|E| <= eps`` as ``E <= eps`` and ``-E <= eps``), for both backends.
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np

from .._validate import check_options
from ..exact import solvers
from ..exact.lower import LoweringContext, lower, unlowerable
from ..expressions.canonicalize import constraint_pieces
from .base import Reduction, Solution
from .registry import register


def _convexity_reason(problem) -> str | None:
    canonical = problem.canonical
    for where, e in [("objective", canonical.objective)] + [(c.name, c.lhs) for c in canonical.constraints] \
            + [(c.name, c.rhs) for c in canonical.constraints]:
        node = unlowerable(e)
        if node is not None:
            return f"{type(node).__name__} ({node}) in {where} has no generic CVXPY lowering"
    expr = canonical.objective
    if not expr.is_convex():
        return f"the objective {expr} is not convex (curvature {expr.curvature})"
    for c in canonical.constraints:
        if not (c.lhs.is_convex() and c.rhs.is_concave()):
            return (f"constraint {c.name}: {c.lhs} <= {c.rhs} is not convex <= concave (curvatures "
                    f"{c.lhs.curvature} and {c.rhs.curvature})")
    if canonical.options:
        return f"no family options are accepted; got {sorted(canonical.options)}"
    return None


@register
class Convex(Reduction):
    name = "convex"
    title = "generic convex program"
    supported = "a convex objective and convex constraints (convex <= concave) built from atoms with a CVXPY rule"
    priority = 100
    exact_methods = {"cvxpy": "the problem lowered atom by atom to one CVXPY program"}
    stochastic_methods: dict = {}

    def __init__(self, problem, structure=None):
        super().__init__(problem)
        self._compiled = None

    @classmethod
    def accepts(cls, problem):
        reason = _convexity_reason(problem)
        return reason if reason is not None else True

    def _program(self):
        """The CVXPY program, compiled once; declared parameters become cp.Parameters updated before each solve."""
        if self._compiled is None:
            ctx = LoweringContext()
            canonical = self.problem.canonical
            objective = cp.Minimize(lower(canonical.objective, ctx))
            constraints = []
            for c in canonical.constraints:
                rhs = lower(c.rhs, ctx)
                constraints += [lower(piece, ctx) <= rhs for piece in constraint_pieces(c.lhs)]
            self._compiled = (cp.Problem(objective, constraints + ctx.domain_constraints()), ctx)
        program, ctx = self._compiled
        ctx.update_parameters()
        return program, ctx

    def to_cvxpy(self):
        return self._program()[0]

    def solve_exact(self, method, solver, verbose, **options):
        check_options(options, (), "the exact backend of a generic convex problem")
        program, ctx = self._program()
        record = solvers.solve(program, solver, verbose)
        variables = {w.name: w.project(np.asarray(v.value, dtype=float)) for w, v in ctx.variables.items()}
        timings = {"compile": record.pop("compile"), "solver": record.pop("solve")}
        return Solution(variables=variables, status=record["status"], solver=record, timings=timings,
                        certificate={"solver_optimum": record["value"]})
