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

import warnings

from .._validate import check_int, check_number, check_options
from ..errors import OptionError, SolverError
from ..exact import solvers
from ..exact.lower import LoweringContext, lower, unlowerable
from ..exact.gdro import group_optimal_values
from ..expressions.atoms.aggregates import GroupOptimal
from ..expressions.canonicalize import constraint_pieces
from ..expressions.diagnose import explain
from ..stochastic.primal_dual import primal_dual
from .base import Check, Evaluation, Reduction, Solution
from .gdro import group_risks_of
from .lagrangian import LagrangianOracle
from .piecewise import NotPiecewise, saddle_form
from .registry import register

PRIMAL_DUAL = ("variance-reduced stochastic mirror-prox on the Lagrangian saddle form (ALEG's Algorithm 1 with "
               "one simplex per max and an exact-penalty simplex over the constraint pieces); minibatch estimates "
               "of every mean from per-cell row samples")
BOUND_ROUNDS = 4         # the multiplier bound is raised at most this many times (x4 each) when ...
VIOLATION_RAISE = 1e-4   # ... the output violates a constraint by more than this (relative to the objective)

def _convexity_reason(problem) -> str | None:
    canonical = problem.canonical
    for where, e in [("objective", canonical.objective)] + [(c.name, c.lhs) for c in canonical.constraints] \
            + [(c.name, c.rhs) for c in canonical.constraints]:
        reason = unlowerable(e)
        if reason is not None:
            return f"{reason} (in {where})"
    expr = canonical.objective
    if not expr.is_convex():
        return f"the objective is not convex (minimize needs a convex objective): {explain(expr)}"
    for c in canonical.constraints:
        if not c.lhs.is_convex():
            return f"constraint {c.name} is not convex <= concave: {explain(c.lhs)}"
        if not c.rhs.is_concave():
            return f"constraint {c.name} is not convex <= concave: {explain(c.rhs, 'concave')}"
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
    judge_options = ("solver",)

    def __init__(self, problem, structure=None):
        super().__init__(problem)
        self._compiled = None
        self.unavailable = {}
        variables = problem.canonical.variables()
        self.w = variables[0] if len(variables) == 1 else None
        try:
            if self.w is None:
                raise NotPiecewise(f"the stochastic lowering takes one Weights variable; the problem has "
                                   f"{[v.name for v in variables]}")
            saddle_form(problem.canonical, self.w, structure_only=True)
            self.stochastic_methods = {"primal_dual": PRIMAL_DUAL}
        except NotPiecewise as exc:
            self.stochastic_methods = {}
            self.unavailable["stochastic"] = str(exc)

    def form(self):
        """The saddle form with the current values of the declared parameters (R*_g computed if needed)."""
        for node in self.problem.canonical.objective.nodes():
            if isinstance(node, GroupOptimal) and not node.resolved:
                node.resolve(group_optimal_values(group_risks_of(node.risks)))
        return saddle_form(self.problem.canonical, self.w)

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

    def describe_extra(self) -> list[str]:
        if "stochastic" in self.unavailable:
            return ["", f"No stochastic lowering: {self.unavailable['stochastic']}"]
        form = self.form()
        return ["", f"Saddle form: {len(form.leaves)} leaves (sample means and exact terms), "
                    f"{len(form.objective_terms)} max term(s) in the objective, {len(form.constraint_pieces)} "
                    f"constraint piece(s) under an exact penalty (one multiplier each)",
                "Judge certificate: Lagrangian gap max_y Phi(w, y) - min_w' Phi(w', y) at the returned (w, y), "
                "the inner minimum solved exactly (CVXPY); it bounds the suboptimality of a feasible w"]

    def solve_exact(self, method, solver, verbose, **options):
        check_options(options, (), "the exact backend of a generic convex problem")
        program, ctx = self._program()
        record = solvers.solve(program, solver, verbose)
        variables = {w.name: w.project(np.asarray(v.value, dtype=float)) for w, v in ctx.variables.items()}
        timings = {"compile": record.pop("compile"), "solver": record.pop("solve")}
        return Solution(variables=variables, status=record["status"], solver=record, timings=timings,
                        certificate={"solver_optimum": record["value"]})

    # -- the generic stochastic lowering -----------------------------------------------------------------------
    def _default_bound(self, form, batch_size) -> float:
        """The starting multiplier bound: twice the multiplier that balances the gradients of the objective and
        of a typical constraint piece at w = proj(0) (KKT: grad f + lambda grad C = 0); it is raised (x4) when
        the estimated multipliers use most of it, so a start too small costs time, not correctness."""
        probe = LagrangianOracle(form, self.w, 1.0, batch_size)
        zero = self.w.project(np.zeros(self.w.shape))
        slack_only = [np.full(m, 1.0 / m) for m in probe.blocks[:-1]] + [np.eye(probe.blocks[-1])[-1]]
        g_f = float(np.linalg.norm(probe.snapshot(zero, slack_only).grad))
        g_c = np.linalg.norm(probe.piece_gradients(zero, len(probe.blocks) - 1)[:-1], axis=1)
        g_c = g_c[g_c > 0]
        if g_f == 0 or g_c.size == 0:
            return 1.0
        return float(np.clip(2.0 * g_f / np.median(g_c), 1e-2, 1e4))

    @staticmethod
    def _bound_binds(oracle, out, bound) -> bool:
        """Whether the output violates a constraint piece by more than 1e-4 (relative): with a bound above the
        optimal multipliers the exact penalty's minimizers are feasible, so the bound is raised."""
        snap = oracle.snapshot(out["w"], out["ys"])
        pieces = snap.values[-1][:-1] / bound                     # the constraint pieces C_j(w) themselves
        return float(np.max(pieces)) > VIOLATION_RAISE * max(1.0, abs(snap.objective))

    def solve_stochastic(self, method, seed, verbose, multiplier_bound=None, batch_size=None, **options):
        check_options(options, ("epochs", "inner", "step_w", "step_y", "w0", "callback", "max_time"),
                      "the stochastic method 'primal_dual'")
        form = self.form()
        given = multiplier_bound is not None
        if batch_size is not None:
            batch_size = check_int(batch_size, "batch_size")
        bound = 0.0 if not form.constraint_pieces else (
            check_number(multiplier_bound, "multiplier_bound", low=0.0, strict=True) if given
            else self._default_bound(form, batch_size))
        rounds, out = 0, None
        while True:
            oracle = LagrangianOracle(form, self.w, bound, batch_size)
            out = primal_dual(oracle, seed=seed, verbose=verbose, **options)
            if given or not form.constraint_pieces or rounds == BOUND_ROUNDS or out["status"] == "diverged" \
                    or not self._bound_binds(oracle, out, bound):
                break
            rounds, bound = rounds + 1, 4.0 * bound
            options = {**options, "w0": out["w"]}
        multipliers = {}
        if form.constraint_pieces:
            mu = out["ys"][-1]
            multipliers = {label: float(bound * m) for label, m in zip(form.constraint_labels, mu[:-1])}
        metrics = {"grad_evals": out["grad_evals"], "epochs_run": out["epochs_run"], "multiplier_bound": bound,
                   "bound_raised": rounds, "estimated_multipliers": multipliers, **out["steps"]}
        duals = {f"weights_{t}": y for t, y in enumerate(out["ys"][:len(form.objective_terms)])}
        if form.constraint_pieces:
            duals["multipliers"] = bound * out["ys"][-1]          # lambda_j = bound mu_j, and the slack last
        return Solution(variables={self.w.name: out["w"], **duals}, status=out["status"], message=out["message"],
                        history=out["history"], metrics=metrics,
                        solver={"name": "primal_dual", "options": {k: v for k, v in options.items()
                                                                   if isinstance(v, (int, float, str))}})

    def _duals(self, form, variables: dict):
        """(ys, bound) from a candidate's dual variables, or None when it has none (no certificate then). A problem
        without a max term or a constraint has no dual variable: Phi is the objective itself, and the gap is the
        suboptimality bound objective(w) - min_w' objective(w')."""
        names = [f"weights_{t}" for t in range(len(form.objective_terms))]
        names += ["multipliers"] if form.constraint_pieces else []
        if not names:
            return [], 0.0
        given = [n for n in names if n in variables]
        if not given:
            return None
        if len(given) != len(names):
            raise OptionError(f"the certificate needs every dual variable {names}; got {given}")
        sizes = [len(t) for t in form.objective_terms] + ([len(form.constraint_pieces) + 1] if names[-1:] ==
                                                          ["multipliers"] else [])
        ys = []
        for n, size in zip(names, sizes):
            y = np.asarray(variables[n], dtype=float).ravel()
            if y.shape != (size,) or not np.all(np.isfinite(y)) or np.any(y < 0) or y.sum() <= 0:
                raise OptionError(f"{n} must hold {size} finite non-negative numbers, not all zero")
            ys.append(y)
        bound = float(ys[-1].sum()) if form.constraint_pieces else 0.0
        return [y / y.sum() for y in ys], bound

    def evaluate(self, variables: dict, solver=None) -> Evaluation:
        if "stochastic" in self.unavailable:
            return super().evaluate(variables)
        form = self.form()
        declared = {w.name for w in self.problem.variables()}
        evaluation = super().evaluate({k: v for k, v in variables.items() if k in declared})
        duals = self._duals(form, {k: v for k, v in variables.items() if k not in declared})
        if duals is not None:
            ys, bound = duals
            oracle = LagrangianOracle(form, self.w, bound)
            theta = np.asarray(variables[self.w.name], dtype=float)
            snap = oracle.snapshot(theta, [np.full(m, 1.0 / m) for m in oracle.blocks])
            sup = oracle.penalized(snap.leaves, snap.values)
            try:
                lower_bound, how = oracle.lower_bound(ys, theta, solver)
            except SolverError as exc:
                warnings.warn(f"the Lagrangian gap is not certified (reported as nan): its inner minimum failed: "
                              f"{exc}", stacklevel=3)
                lower_bound, how = np.nan, "failed"
            evaluation.metrics["lower_bound_method"] = how
            evaluation.certificate = {"lagrangian_gap": sup - lower_bound, "lower_bound": lower_bound,
                                      "penalized_objective": sup, "multiplier_bound": bound}
        return evaluation

    def certificate_checks(self, evaluation, backend) -> list[Check]:
        gap = evaluation.certificate.get("lagrangian_gap")
        if gap is None:
            return []
        return [Check("Lagrangian gap", gap, 2e-2 * max(1.0, abs(evaluation.objective)),
                      "max_y Phi - min_w Phi bounds the suboptimality of a feasible point; the generic lowering's "
                      "default budget reaches 1e-3 on the bundled compositions (docs/modeling.md)", "certificate")]

    def crosscheck_checks(self, exact, stochastic, **context) -> list[Check]:
        scale = max(1.0, abs(exact.objective))
        return [
            Check("objective: stochastic - exact", abs(stochastic.objective - exact.objective), 1e-2 * scale,
                  "the generic lowering is a first-order stochastic method: 1e-2 relative to max(1, |optimum|) "
                  "is the accuracy its default budget reaches on the bundled data (measured, docs/benchmarks.md)"),
            Check("constraint violation (stochastic)", stochastic.max_violation, 1e-3 * scale,
                  "the exact penalty makes the output feasible up to the optimization error; 1e-3 relative"),
            Check("constraint violation (exact)", exact.max_violation, 1e-6 * scale,
                  "the conic solver's feasibility tolerance (1e-8) with a margin"),
            Check("Lagrangian gap of the stochastic result", stochastic.certificate.get("lagrangian_gap", np.inf),
                  2e-2 * scale, "max_y Phi - min_w Phi bounds the suboptimality of a feasible point; the "
                                "averaged iterates of the default budget reach 2e-2 relative"),
        ]
