"""Generic convex problems: any DCP-convex objective with convex constraints, solved exactly by CVXPY.

The fallback family, tried last: it gives every convex declaration an exact program (for example a
regularized ERM baseline, ``fm.mean(loss) + lam * fm.sum_squares(w)``) and the judge's objective and
constraint values. It has no stochastic method.
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np

from ..errors import OptionError
from ..exact import solvers
from ..exact.lower import LOWERING, LoweringContext, lower
from ..expressions import Env
from ..judge import Evaluation, evaluate_constraints
from ..problem import check_options, register_family
from .base import Family, Solution


@register_family
class Convex(Family):
    name = "convex"
    title = "generic convex program"
    supported = "a convex objective and convex constraints (convex <= concave) built from the core atoms"
    exact_methods = {"cvxpy": "the problem lowered atom by atom to one CVXPY program"}
    stochastic_methods = {}

    @classmethod
    def match(cls, problem):
        exprs = [("objective", problem.objective.expr)] + [(c.name, c.lhs) for c in problem.constraints] \
            + [(c.name, c.rhs) for c in problem.constraints]
        for where, e in exprs:
            for node in e.nodes():
                if type(node) not in LOWERING:
                    return f"{type(node).__name__} ({node}) in {where} has no generic CVXPY lowering"
        if not problem.objective.expr.is_convex():
            expr = problem.objective.expr
            return f"the objective {expr} is not convex (curvature {expr.curvature})"
        for c in problem.constraints:
            if not (c.lhs.is_convex() and c.rhs.is_concave()):
                return f"constraint {c.name}: {c} is not convex <= concave"
        if problem.options:
            return f"no family options are accepted; got {sorted(problem.options)}"
        return cls(problem)

    def _program(self):
        """The CVXPY program, compiled once; DSL parameters become cp.Parameters updated before each solve."""
        if not hasattr(self, "_compiled"):
            ctx = LoweringContext()
            objective = cp.Minimize(lower(self.problem.objective.expr, ctx))
            constraints = [lower(c.lhs, ctx) <= lower(c.rhs, ctx) for c in self.problem.constraints]
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

    def evaluate(self, variables: dict, **context):
        ws = {w.name: w for w in self.problem.variables()}
        if set(variables) != set(ws):
            raise OptionError(f"a candidate needs exactly the variables {sorted(ws)}; got {sorted(variables)}")
        env = Env({w: w.check_value(variables[name], "candidate") for name, w in ws.items()})
        return Evaluation(objective=float(self.problem.objective.expr.value(env)),
                          constraints=evaluate_constraints(self.problem.constraints, env))
