"""The generic convex reduction: any DCP-convex declaration, as one CVXPY program and as a stochastic
primal-dual method on its Lagrangian.

It is the fallback of the registry (priority 100): the paper families are tried first. It accepts a convex
objective and constraints ``convex <= concave`` built from atoms that have a CVXPY rule
(:mod:`fairmodel.exact.lower`), including family atoms that register one (the moment form of the AUC atoms).
Constraints whose left side is a max, an absolute value or a positive part are split into one-sided pieces
(``|E| <= eps`` as ``E <= eps`` and ``-E <= eps``), for both backends.
"""
from __future__ import annotations

import time
import warnings

import cvxpy as cp
import numpy as np

from ..errors import DataError, InfeasibleError, OptionError, ResourceLimitError, SolverError
from ..exact import budget, solvers
from ..exact.gdro import group_optimal_values
from ..exact.lower import LoweringContext, lower, unlowerable
from ..exact.newton import minimize_on_ball
from ..expressions import value_and_grad
from ..expressions.atoms.aggregates import GroupOptimal
from ..expressions.canonicalize import constraint_pieces
from ..expressions.core import Inequality
from ..expressions.rules import is_nonneg
from ..expressions.diagnose import explain
from ..oracles.metric import RIDGE as CERTIFICATE_RIDGE
from ..oracles.metric import RUN_RIDGE, Coordinates
from ..oracles.smoothing import smoothed
from ..stochastic.primal_dual import balanced_weight, primal_dual
from ..utilities.validate import as_generator, check_choice, check_int, check_number, check_options
from .base import Check, Evaluation, Reduction, Solution, bound_order, cap_tip, own_tolerance
from .gdro import group_risks_of
from .lagrangian import LagrangianOracle, design_moment
from .model_space import CERT_TOL, NEWTON_STEPS, ModelSpace, smooth_reason
from .model_space import DESCRIPTION as MODEL_SPACE
from .model_space import estimate as model_space_estimate
from .piecewise import NotPiecewise, saddle_form
from .registry import register
from .stopping import STOP_RULES, CertifiedStop

PRIMAL_DUAL = ("variance-reduced stochastic mirror-prox on the Lagrangian saddle form (ALEG's Algorithm 1 with "
               "one simplex per max and an exact-penalty simplex over the constraint pieces); minibatch estimates "
               "of every mean from per-cell row samples")
EPOCHS = 40              # the fixed budget of stop="budget" (epochs of one pass each)
CHECKS_PER_BUDGET = 4    # with stop="checks", the judge's checks run every EPOCHS // 4 epochs (then every 25 %)
CAP_FACTOR = 10          # with stop="checks", the default cap on the epochs is EPOCHS times this
BOUND_ROUNDS = 4         # the multiplier bound is raised at most this many times (x RAISE each) when ...
RAISE = 4.0
VIOLATION_RAISE = 1e-4   # ... (stop="budget") the output violates a constraint by more than this (relative)
LAST_RESORT_RAISES = 1   # ... and this many times when the fail-fast rule would stop a run whose constraint check fails
# (stop="checks"), as a last resort:
# the penalty is exact for any bound above the optimal multipliers' sum, but with a bound close to it the multipliers
# answer a violation slowly. Measured: squared-loss group DRO (labels +-1) under equalized odds <= 0.05 on 6,000 Adult
# rows grouped by age quartile, with the batch doublings below: the constraint stayed violated under the bound 1.56
# and the fail-fast rule stopped the run after 124 epochs ('infeasible'); under 6.22 it certifies after 194 (2.3 s).
RELATIVE, FLOOR = 2e-3, 1e-2   # accuracy of a stochastic result: 0.2 % of the objective's scale, at least 2e-5
ACCURACY_REASON = ("it bounds the suboptimality of the stochastic w (weak duality); the tolerance is 0.2 % of the "
                   "objective's natural scale (the sum of its terms' absolute values without constants; at least "
                   "2e-5): below the statistical error of an empirical mean (1/sqrt(n) > 2e-3 for n < 250,000 rows), "
                   "so the answer is as good as the exact one for learning")
EXACT_GAP = 1e-6         # the Lagrangian gap of an exact result (the model-space method), relative to max(1, |f|)
SLACK_SHARE = 1e-2       # the certificate's inner minimum stops within this share of the accuracy
SLACK_FULL = 1e-2        # ... (stop="checks") a constraint check fails and the slack weight is below this
RIDGE = {"run": RUN_RIDGE, "certificate": CERTIFICATE_RIDGE}   # the preconditioner's ridge (relative)
MIX = 1e-3               # a restart mixes the dual weights with this share of uniform weights (no weight stays
                         # at a vertex of its simplex, where entropic steps would take long to move it back)
# A restart after a checkpoint whose largest check ratio is not below PROGRESS x the best before it (since the
# multiplier bound last changed) halves the default steps, at most SHRINKS times: a variance-reduced run whose steps
# are too large for its epoch oscillates at a floor that scales with the step, which neither more epochs nor restarts
# lower. Measured: group DRO under an equal-opportunity bound on 10,000 synthetic rows (4 groups) stalled at 5-8x its
# gap tolerance with the default steps and certified in 20-40 epochs with either step halved. Smooth declarations
# only: with the hinge loss (group DRO under equal opportunity, 6,000 rows of Adult by race) the halved steps made the
# gap grow (28x to 210x its tolerance over five checkpoints), where the default steps certify after 124 epochs. The
# fail-fast rule keeps measuring the rate across a halving: when it was measured afresh, runs that no step rescues
# (the AUC gap on sparse synthetic data, 100,000 features) took 152 s to say so instead of 47 s. Only where the
# restarts' primal weight (below) left the split as it was (the run's applied weight 1: w's step at its curvature cap,
# as with many parameters, or nothing to balance): where the weight moves the split, it does the halving's job (the
# 10,000-row run above certifies through it alone) and a halving on top of it slows a run that was converging. Measured
# on 2026-11-30 (one thread, seed 0) on the same declaration at 3,000 rows: 24 / 28 ok when every run could halve (four
# runs halved three times and stalled with the constraint violated 5-10x its tolerance), 28 / 28 with this rule; 12 / 12
# at 10,000 and 17 / 17 at 20,000 either way; without any halving, the AUC gap on the sparse synthetic set (100,000
# features: w at its cap, the weight 1) stopped inaccurate at 96 s, where one halving certifies it in 16 s.
PROGRESS = 0.8
SHRINKS = 3
# ... and where the halving does not apply (a non-smooth declaration, or the primal weight moved the split), a restart
# after two such checkpoints in a row doubles the rows a step draws from every cell, at most BATCH_DOUBLINGS times
# (batch_size= not given): the floor such a stall sits at is the noise of the minibatch estimates, which a larger batch
# lowers at about the same cost a pass (an epoch's steps fewer). Measured on 2026-11-30 (seed 0, one thread), defaults
# only, on held-out variants: hinge group DRO under equal opportunity <= 0.03 (5,000 rows, three synthetic groups, 10 %
# of the labels flipped: 8.3x its gap tolerance, stopped by the fail-fast rule) certifies after two doublings in 1.1 s;
# squared-loss group DRO under equalized odds <= 0.05 (6,000 Adult rows by age quartile: stalled at 2.5x) after four
# and the last-resort raise below; hinge loss under a covariance bound (Adult, white vs other, radius 2: 2.2x at the
# cap) after one. After one checkpoint without progress instead of two, group DRO with the hinge loss under equal
# opportunity on 6,000 Adult rows by race (one such checkpoint at epoch 40, then progress again) doubled four times,
# each epoch's fewer steps slowed it, and it ended not ok where the default batch certifies after 99 epochs. Only once
# the best checkpoint came within FLOOR_NEAR of passing: a floor shows near the tolerance, and a run whose best is still
# far from it is not at one. Bounded group loss with the hinge loss on 6,000 Law School rows by race and gender (radius
# 2, the bound active) doubled at 35x and stayed there (0 of 6 seeds ok, 3 of 6 without the doublings; its Lagrangian
# gap jumps between checkpoints whatever the batch: 2, 4, 8 or 16 rows a cell fixed from the start, 3, 2, 3 and 1 of 4
# seeds ok); the three others doubled with their best at 13x, 2.9x and 1.7x. Over six seeds of the four: 21 / 24 ok,
# 8 / 24 without the doublings, 18 / 24 without FLOOR_NEAR.
# Far from passing, a run doubles when the two checkpoints without progress also rise (the last above the one before:
# the iterates are driven away from the average, not resting at a floor). Measured on 2026-12-02 (one thread): group
# DRO with the hinge loss under equal opportunity <= 0.05 over ten groups (10,000 synthetic rows, 20 standardized
# features, the smallest group 4 %, radius 2): its ratios went 190, 56, 33, 51, 219, 274, 365 at 4 rows a cell and the
# fail-fast rule stopped it at 33x (0 / 3 seeds ok); doubling at the rise, 3 / 3 in 194-304 epochs (fixed batches of 8,
# 16 and 32 rows a cell from the start: ok at seed 0 in 155, 124 and 63 epochs). The Law School case above does not rise
# twice in a row and keeps its batch.
BATCH_DOUBLINGS = 4
FLOOR_NEAR = 16.0
# The primal weight: every restart of a smooth declaration (or of one whose only non-smooth terms are norms: below)
# sets the split of the coupling bound between w and the simplices by the last run's movements
# (stochastic/primal_dual.py, balanced_weight), and the fail-fast rule never stops a run before FAIL_FAST_EARLIEST of
# its cap: the restarts change the steps (the weight, the halvings), so a
# stall measured across them early says little. Measured on 2026-11-30 (one thread, seed 0, group DRO under equal
# opportunity on the four-group synthetic set; ok out of runs at 3,000 / 5,000 / 20,000 rows): the fixed split 25 / 28,
# 10 / 12, 16 / 17, and with the earliest share 26 / 28, 10 / 12, 16 / 17 (167 s in all); the weight alone 21 / 28,
# 12 / 12, 17 / 17; both 24 / 28, 12 / 12, 17 / 17 (114 s); the wide suite 24 / 24 (23 / 24 before); Zafar et al.'s
# covariance composition on Adult at c = 0.01 x in 20 epochs (40). The weight moves halfway in log scale (a quarter
# power of the ratio); an eighth power gave 26 / 28, 12 / 12, 16 / 17 (137 s; seed 3 at 20,000 rows stalled 0.022 above
# the optimum). Not with a non-smooth Phi: a hinge loss has no curvature cap on w's step, its w moved 30-10,000x more
# than the simplices (in the steps' units), the weight took w's step to 46x the default and two defaults-suite cases
# that the fixed split certifies (covariance with the hinge loss at d = 200; group DRO under equal opportunity on 6,000
# Adult rows) stalled at 3-6x their gap tolerance.
# A norm in a constraint or in the objective (an exact term with a Lipschitz bound, not a kink of the sample terms)
# leaves w's curvature cap in place, so the weight applies there. Measured on 2026-12-02 (one thread, seeds 0 and 1):
# logistic group DRO under ||w||_1 <= 0.5 at d = 60 (3,000 synthetic rows, 4 groups) sat with the simplices' step at 77
# and w's at 1.3e-5 and reached its cap of 400 epochs at 1.5-1.7x its gap tolerance with the fixed split; with the
# weight, ok in 63-79 epochs; syn_norm_budget_m5 ok in 50 epochs against 63-79.
FAIL_FAST_EARLIEST = 0.25
# A failed checkpoint of a non-smooth Phi (hinge losses, norms) restarts the run only when it made no progress
# (_no_progress) or to raise the multiplier bound; otherwise the run goes on and keeps its average. A non-smooth saddle
# problem converges at the O(1 / sqrt(T)) rate of the average of its iterates (Nemirovski 2004, Section 3; ALEG's
# variance-reduced estimate lowers no error term there, differences of subgradients not being small), and a restart
# resets that average to the window since the last checkpoint; restarted averaging's linear rate (Applegate, Hinder,
# Lu, Lubin 2023) needs the sharpness and the steps of the smooth case. A run that stalls still restarts: the restart
# takes its duals from the certificate's inner minimum, which a run stuck with a simplex near a vertex needs (bounded
# group loss with the hinge on 6,000 Law School rows by gender at radius 2 sat at 2.37x its gap tolerance for 100
# epochs without it). Measured on 2026-12-01 (one thread): group DRO with the hinge loss under equal opportunity on
# 6,000 Adult rows by race, seeds 0-7: 4 / 8 ok with a restart at every failed checkpoint (the others stalled at
# 2.8-22x their gap tolerance; halving the steps on top, 0 / 8), 7 / 8 never restarting but to raise the bound, 7 / 8
# with this rule in half the time; the non-smooth cases of the defaults suite and held-out variants, three seeds
# each: 34 / 39, 35 / 39 and 38 / 39 (docs/benchmarks.md, "Non-smooth declarations"). Since the w-step of a loss with a
# kink is measured on longer chords (lagrangian.KINK_CHORD), the hinge case above is ok at 8 / 8 seeds either way, and
# the rule matters on a non-smooth constraint: measured on 2026-12-02 (one thread, the same 39 runs), group DRO with
# ||w||_1 <= 1 on a five-group synthetic set is ok at 0 / 3 seeds restarting at every failed checkpoint (each stopped
# at 2.1x its gap tolerance) and 3 / 3 with this rule; all runs 36 / 39 against 39 / 39.


def _no_progress(points) -> bool:
    """Whether the last checkpoint's largest ratio (value / tolerance of its checks) is not below PROGRESS x the best
    of the checkpoints before it (``points``: (work, ratio) since the multiplier bound last changed)."""
    return len(points) >= 2 and points[-1][1] > PROGRESS * min(r for _, r in points[:-1])


def _at_a_floor(points) -> bool:
    """Whether the run sits at a noise floor (the batch doubling's condition): two checkpoints in a row without
    progress, with the best checkpoint within FLOOR_NEAR of passing or the last of the two above the one before."""
    if not (_no_progress(points) and _no_progress(points[:-1])):
        return False
    return min(r for _, r in points) <= FLOOR_NEAR or points[-1][1] > points[-2][1]


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


STALL_ADVICE = ("A stall of the interior-point method comes from a badly scaled program: a radius far from the scale "
                "of a good model (e.g. 1e6 or 1e-6; try a radius between 0.1 and 100), features of very different "
                "scales (standardize them), or a constraint with no strictly feasible point (e.g. a bound of 0 on a "
                "gap or a norm: give a small positive bound)")


def multiplier_sum(result) -> float:
    """The sum of a result's multipliers of the constraint pieces (its ``multipliers`` without the slack's last
    entry; 0 without them)."""
    lam = result.variables.get("multipliers")
    return 0.0 if lam is None or np.size(lam) == 0 else float(np.sum(np.asarray(lam, dtype=float)[:-1]))


@register
class Convex(Reduction):
    name = "convex"
    title = "generic convex program"
    supported = "a convex objective and convex constraints (convex <= concave) built from atoms with a CVXPY rule"
    priority = 100
    CVXPY = "the problem lowered atom by atom to one CVXPY program"
    exact_methods = {"cvxpy": CVXPY}
    judge_options = ("solver",)

    def __init__(self, problem, structure=None):
        super().__init__(problem)
        self._compiled = None
        self._coordinates = {}
        self._model_space = None
        self._probed = None    # (solver, the CVXPY solution) the stall's feasibility probe computed
        self.unavailable = {}
        variables = problem.canonical.variables()
        self.w = variables[0] if len(variables) == 1 else None
        self.unbounded = self._unbounded_reason()
        try:
            if self.w is None:
                raise NotPiecewise(f"the stochastic lowering takes one Weights variable; the problem has "
                                   f"{[v.name for v in variables]}")
            saddle_form(problem.canonical, self.w, structure_only=True)
            self.stochastic_methods = {"primal_dual": PRIMAL_DUAL}
        except NotPiecewise as exc:
            self.stochastic_methods = {}
            self.unavailable["stochastic"] = str(exc)
        # the model-space interior-point method, the default exact method where every per-sample term is a smooth
        # function of a linear score (the reason otherwise, shown by describe())
        reason = self.unavailable.get("stochastic") if self.w is None or "stochastic" in self.unavailable \
            else smooth_reason(saddle_form(problem.canonical, self.w, structure_only=True), self.w)
        if reason is None:
            self.exact_methods = {"model_space": MODEL_SPACE, "cvxpy": self.CVXPY}
            self.solverless_methods = ("model_space",)
        else:
            self.unavailable["model_space"] = reason

    @property
    def display_name(self) -> str:
        return "composition"

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

    def _unbounded_reason(self) -> str | None:
        """Why the objective has no finite minimum on the declared domain, when that is plain from the declaration:
        weights without a radius, no constraint, and an objective linear in them with a gradient that is not 0
        (it decreases without bound along minus the gradient). Other unbounded declarations are found by the exact
        solver (status "unbounded")."""
        canonical = self.problem.canonical
        if self.w is None or self.w.radius is not None or canonical.constraints \
                or canonical.objective.curvature != "affine":
            return None
        _, grads = value_and_grad(canonical.objective, {self.w: np.zeros(self.w.shape)})
        if not np.any(grads[self.w]):
            return None
        return (f"the objective is linear in {self.w.name} (its gradient is not 0) and {self.w.name} has no radius "
                f"or constraint, so it decreases without bound: give the weights a radius "
                f"(fm.Weights(d, radius=...)), a constraint, or a regularizer such as fm.sum_squares(w)")

    def _unbounded(self, why: str) -> Solution:
        """The result of an unbounded declaration: status "unbounded", objective -inf, the reason."""
        return Solution(variables={w.name: w.project(np.zeros(w.shape)) for w in self.problem.variables()},
                        status="unbounded", message=f"unbounded: {why}",
                        evaluation=Evaluation(objective=-np.inf))

    def _program(self):
        """The CVXPY program, compiled once; declared parameters become cp.Parameters updated before each solve."""
        if self._compiled is None:
            ctx = LoweringContext()
            canonical = self.problem.canonical
            objective = cp.Minimize(lower(canonical.objective, ctx))
            constraints = [piece <= rhs for _, pieces, rhs in self._lowered_constraints(ctx) for piece in pieces]
            self._compiled = (cp.Problem(objective, constraints + ctx.domain_constraints()), ctx)
        program, ctx = self._compiled
        ctx.update_parameters()
        return program, ctx

    def _lowered_constraints(self, ctx: LoweringContext) -> list[tuple]:
        """(name, the CVXPY expressions of its one-sided pieces, the lowered bound) of every declared constraint."""
        rows = []
        for c in self.problem.canonical.constraints:
            rhs = lower(c.rhs, ctx)                 # the bound first, as the program has always been lowered
            rows.append((c.name, [lower(piece, ctx) for piece in constraint_pieces(c.lhs)], rhs))
        return rows

    def to_cvxpy(self):
        return self._program()[0]

    def exact_method_line(self) -> str:
        """Which exact method a declaration gets by default, and why."""
        if "model_space" in self.exact_methods:
            return ("Exact method: model_space (every per-sample term is a twice-differentiable function of a linear "
                    "score; the exact terms are smooth), cvxpy if it fails")
        return f"Exact method: cvxpy (the model-space method does not apply: {self.unavailable['model_space']})"

    def describe_extra(self) -> list[str]:
        if self.unbounded:
            return ["", f"Unbounded: {self.unbounded}"]
        if "stochastic" in self.unavailable:
            return ["", self.exact_method_line(), f"No stochastic lowering: {self.unavailable['stochastic']}"]
        form = self.form()
        if "model_space" in self.exact_methods and self.w is not None and self.w.radius is not None:
            inner = inner_tex = "projected Newton in model space with the Frank-Wolfe bound on the ball of the weights"
        elif self.w is not None and self.w.radius is not None:
            inner = ("on the ball of the weights, for a smooth Phi, a lower bound by accelerated projected gradient and "
                     "the Frank-Wolfe bound Phi(w') - <grad, w'> - R ||grad|| (valid at any w'); for a non-smooth Phi "
                     "(hinge losses, norms, |.| of per-sample terms) the CVXPY program")
            inner_tex = ("on the ball $\\|w\\| \\le R$ of the weights, for a smooth $\\Phi$, a lower bound by "
                         "accelerated projected gradient and the Frank-Wolfe bound $\\Phi(w', y) - \\langle g, w'\\rangle "
                         "- R\\,\\|g\\|$, $g = \\nabla_{w} \\Phi(w', y)$ (valid at any $w'$); for a non-smooth $\\Phi$ "
                         "(hinge losses, norms, $|\\cdot|$ of per-sample terms) the CVXPY program")
        else:
            inner = inner_tex = "the CVXPY program (the weights have no radius)"
        judge = ("Judge certificate: Lagrangian gap max_y Phi(w, y) - min_w' Phi(w', y) at the returned (w, y); it "
                 "bounds the suboptimality of a feasible w. The inner minimum: " + inner)
        judge_tex = ("Judge certificate: the Lagrangian gap $\\max_{y} \\Phi(w, y) - \\min_{w'} \\Phi(w', y)$ at the "
                     "returned $(w, y)$; it bounds the suboptimality of a feasible $w$. The inner minimum: " + inner_tex)
        return ["", self.exact_method_line(), f"Saddle form: {len(form.leaves)} leaves (sample means and exact terms), "
                    f"{len(form.objective_terms)} max term(s) in the objective, {len(form.constraint_pieces)} "
                    f"constraint piece(s) under an exact penalty (one multiplier each)", (judge, judge_tex)]

    def model_space(self) -> ModelSpace:
        """The smooth program of the model-space method (built once: the row weights of every sample leaf)."""
        if self._model_space is None:
            self._model_space = ModelSpace(self.form(), self.w)
        return self._model_space

    def solve_exact(self, method, solver, verbose, max_memory_gb=None, **options):
        check_options(options, ("max_iter",) if method == "model_space" else (),
                      f"the exact method {method!r} of a generic convex problem")
        probed, self._probed = self._probed, None    # valid only for the solve right after the stall
        if self.unbounded:
            return self._unbounded(self.unbounded)
        self._check_sign_feasible()
        if method == "model_space":
            try:
                return self._solve_model_space(max_memory_gb, verbose=verbose, **options)
            except SolverError as exc:
                return self._after_stall(exc, solver, verbose)
        if probed is not None and probed[0] == solver:    # the default's fallback right after a stall: solved already
            return probed[1]
        return self._solve_cvxpy(solver, verbose)

    def _check_sign_feasible(self) -> None:
        """Refuse a constraint whose left side is never negative (a norm, a square, an absolute value) under a
        negative bound: no point satisfies it, whatever a solver would report."""
        for c in self.problem.canonical.constraints:
            if type(c) is Inequality and is_nonneg(c.lhs.sign) and float(c.rhs.constant_value()) < 0:
                raise InfeasibleError(f"constraint {c.name!r} is infeasible: {c.lhs} is never negative but its bound "
                                      f"is {float(c.rhs.constant_value()):g}; give a bound >= 0")

    def _after_stall(self, exc: SolverError, solver, verbose):
        """The model-space method stalled: the CVXPY program decides whether any point satisfies the constraints
        (its InfeasibleError is raised), else the stall is reported with what causes it. The CVXPY solution is kept
        for the very next solve when it is ``method='cvxpy'`` with the same solver (the default exact method's
        fallback), so that the fallback does not solve the same program again."""
        try:
            self._probed = (solver, self._solve_cvxpy(solver, verbose))
        except (SolverError, DataError, ResourceLimitError):   # e.g. chunked data: the stall is reported as it is
            pass
        raise SolverError(f"{exc}. {STALL_ADVICE}; or use method='cvxpy'", status=exc.status) from None

    def _solve_cvxpy(self, solver, verbose) -> Solution:
        program, ctx = self._program()
        try:
            record = solvers.solve(program, solver, verbose)
        except InfeasibleError as exc:
            raise InfeasibleError(f"{exc}{self._least_excess(solver)}") from None
        except SolverError as exc:
            if exc.status == solvers.UNBOUNDED:
                return self._unbounded(str(exc))
            raise
        variables = {w.name: w.project(np.asarray(v.value, dtype=float)) for w, v in ctx.variables.items()}
        timings = {"compile": record.pop("compile"), "solver": record.pop("solve")}
        context = {"solver_optimum": record["value"]} if record["status"] == cp.OPTIMAL else {}
        return Solution(variables=variables, status=record["status"], solver=record, timings=timings,
                        certificate={"solver_optimum": record["value"]}, judge_context=context)

    def _least_excess(self, solver) -> str:
        """How far an infeasible declaration is from feasible, for its error message: the least value t such that some
        weights in the domain meet every constraint piece with its bound raised by t (the phase-one program: minimize
        t subject to each piece <= its bound + t), and each constraint's left side against its bound at such a point
        (with one constraint, the least value its left side takes). '' when that program fails too."""
        ctx, excess = LoweringContext(), cp.Variable()
        rows = self._lowered_constraints(ctx)
        constraints = [piece <= rhs + excess for _, pieces, rhs in rows for piece in pieces]
        ctx.update_parameters()
        try:
            solvers.solve(cp.Problem(cp.Minimize(excess), constraints + ctx.domain_constraints()), solver, False)
        except (SolverError, InfeasibleError):
            return ""
        if excess.value is None or not excess.value > 0:
            return ""
        values = "; ".join(f"{name}: {max(float(np.max(p.value)) for p in pieces):.6g} against its bound "
                           f"{float(np.max(getattr(rhs, 'value', rhs))):.6g}" for name, pieces, rhs in rows)
        more = "; loosening one bound alone can take more" if len(rows) > 1 else ""
        return (f". No weights in the domain meet every constraint: the least amount by which the constraints' left "
                f"sides must exceed their bounds is {float(excess.value):.3g} (where it is reached: {values}); every "
                f"bound raised by that amount makes them feasible{more}")

    def _solve_model_space(self, max_memory_gb=None, max_iter=100, verbose=None) -> Solution:
        """The model-space interior-point method; its variables carry the saddle form's dual variables, so the
        judge recomputes the Lagrangian gap (the certificate) from them."""
        start = time.perf_counter()
        form = self.form()
        budget.check(model_space_estimate(form, self.w),
                     "Use the stochastic backend (backend='stochastic', method='primal_dual'), which reads the data "
                     "in minibatches, or fm.Dataset.subsample", max_memory_gb)
        program = self.model_space()
        built = time.perf_counter()
        with program.showing_passes("model-space interior-point method", verbose):
            out = program.solve(check_int(max_iter, "max_iter"))
            solved = time.perf_counter()
            record = out["ipm"]
            theta, ys, lam = out["theta"], out["ys"], out["multipliers"]
            try:
                certificate = program.certificate(theta, ys, lam)
            except SolverError as exc:      # the judge recomputes the Lagrangian gap from the duals anyway
                certificate = {}
                warnings.warn(f"the model-space method's own dual bound failed ({exc}); the judge's Lagrangian gap "
                              f"certifies the result", stacklevel=3)
        variables = {self.w.name: self.w.project(theta)}
        variables.update({f"weights_{t}": y for t, y in enumerate(ys)})
        if form.constraint_pieces:   # lambda and the slack weight of the saddle form (one when every lambda is 0)
            variables["multipliers"] = np.append(lam, 0.0 if lam.sum() > 0 else 1.0)
        status = "optimal" if record.status == "optimal" else "optimal_inaccurate"
        stop = "stalled (no step reduced its residuals further)" if record.status == "acceptable" else "stopped"
        message = "" if status == "optimal" else (f"the interior-point method {stop} after {record.iterations} "
                                                  f"iterations with relative residuals {record.residuals}")
        return Solution(variables=variables, status=status, message=message, history=record.history,
                        solver={"name": "model_space", "method": "model_space", "iterations": record.iterations,
                                "status": record.status, **{f"residual_{k}": v for k, v in record.residuals.items()}},
                        timings={"compile": built - start, "solver": solved - built,
                                 "certificate": time.perf_counter() - solved},
                        metrics={"iterations": record.iterations}, certificate=certificate)

    # -- the generic stochastic lowering -----------------------------------------------------------------------
    def coordinates(self, form=None, use: str = "run") -> Coordinates:
        """The preconditioned coordinates of the method (``use="run"``) and of the certificate's inner minimum
        (``"certificate"``), from the design's second moment computed once per problem (it depends on the data
        and the structure only; any positive definite metric gives a valid method and a valid bound)."""
        if not self._coordinates:
            form = self.form() if form is None else form
            moment = design_moment(form, self.w)
            self._coordinates = {use: Coordinates.from_second_moment(moment, self.w.radius, ridge)
                                 for use, ridge in RIDGE.items()}
            coupled = {k for piece in [p for t in form.objective_terms for p in t] + list(form.constraint_pieces)
                       for k in piece.coef}
            if any(form.leaves[k].lipschitz is not None for k in coupled if hasattr(form.leaves[k], "lipschitz")):
                # a norm inside a max or a constraint: its subgradient jumps by up to its Lipschitz constant,
                # which the metric of an ill-conditioned P stretches by 1 / sqrt(min eigenvalue): plain steps
                self._coordinates["run"] = Coordinates(None, self.w.radius)
        return self._coordinates[use]

    def _default_bound(self, form, batch_size) -> float:
        """The starting multiplier bound: twice the multiplier that balances the gradients of the objective and
        of a typical constraint piece at w = proj(0) (KKT: grad f + lambda grad C = 0, norms in the
        preconditioned coordinates); it is raised (x4) when the output violates a constraint while the
        multipliers use all of it, so a start too small costs time, not correctness."""
        probe = LagrangianOracle(form, self.w, 1.0, batch_size, self.coordinates(form))
        zero = probe.project(np.zeros(self.w.shape))
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
        optimal multipliers the exact penalty's minimizers are feasible, so the bound is raised (stop='budget')."""
        snap = oracle.snapshot(out["w"], out["ys"])
        pieces = snap.values[-1][:-1] / bound                     # the constraint pieces C_j(w) themselves
        return float(np.max(pieces)) > VIOLATION_RAISE * max(1.0, abs(snap.objective))

    @staticmethod
    def _violated(last) -> bool:
        """Whether a constraint check failed at the checkpoint ``last`` (CertifiedStop.last)."""
        return any(c.kind == "constraint" and c.computed and not c.passed for c in last[2])

    @classmethod
    def _bound_too_small(cls, last, ys) -> bool:
        """At a failed checkpoint: a constraint check failed, the multipliers hold (almost) all of the bound (slack
        weight below SLACK_FULL) and the output's objective is below the certified lower bound on the optimum
        (weak duality): the output profits from its violation more than the penalty charges, which is what an
        exact penalty with a bound below the optimal multipliers' sum allows, whatever the accuracy."""
        evaluation = last[1]
        below = evaluation.objective < evaluation.certificate.get("lower_bound", -np.inf)
        return cls._violated(last) and below and float(ys[-1][-1]) < SLACK_FULL

    def _variables(self, form, coords, u, ys, bound) -> dict:
        """The result's variables from the method's output in coordinates u: w, the max weights, the multipliers."""
        out = {self.w.name: self.w.project(coords.to_theta(u))}
        out.update({f"weights_{t}": y for t, y in enumerate(ys[:len(form.objective_terms)])})
        if form.constraint_pieces:
            out["multipliers"] = bound * ys[-1]          # lambda_j = bound mu_j, and the slack last
        return out

    def _with_model_duals(self, form, variables: dict) -> dict | None:
        """The candidate ``variables`` with the dual variables that maximize the dual function's Newton model at its
        w (:meth:`ModelSpace.model_duals`), or None where model space does not serve the certificate or the model's
        program fails. The averaged multipliers of a primal-dual method carry the noise of its steps, so the bound
        they give can stay far from the optimum while w is already near it (group DRO under equal opportunity,
        20,000 synthetic rows: a gap of 6.6x its tolerance from the averaged duals, 7.4e-5, w's own suboptimality,
        from the model's). A checkpoint judges these when the method's own fail, and keeps the closer to passing
        (:class:`~fairmodel.families.stopping.CertifiedStop`); any duals give a valid bound (weak duality)."""
        duals = self._duals(form, variables)
        if not duals or not duals[0] or not self._model_space_certifies(form):
            return None
        ys, bound = duals
        T = len(form.objective_terms)
        multipliers = bound * ys[-1][:-1] if form.constraint_pieces else np.zeros(0)
        theta = np.asarray(variables[self.w.name], dtype=float)
        found = self.model_space().model_duals(theta, ys[:T], multipliers)
        if found is None:
            return None
        model_ys, model_lam = found
        out = {self.w.name: theta, **{f"weights_{t}": y for t, y in enumerate(model_ys)}}
        if form.constraint_pieces:        # the slack keeps the run's bound where the model's multipliers sum less
            out["multipliers"] = np.append(model_lam, max(bound - float(model_lam.sum()), 0.0))
            if not out["multipliers"].sum() > 0:
                return None
        return out

    @staticmethod
    def _restart_duals(form, checked: dict, bound):
        """The dual variables a restart starts from: those of the checkpoint's candidate (the dual model's, where
        they were closer to passing), the constraint multipliers as shares of the run's bound (scaled onto it when
        they sum to more)."""
        T = len(form.objective_terms)
        out = [np.asarray(checked[f"weights_{t}"], dtype=float) for t in range(T)]
        if form.constraint_pieces:
            mu = np.asarray(checked["multipliers"], dtype=float)[:-1] / bound
            mu = mu / max(1.0, float(mu.sum()))
            out.append(np.append(mu, 1.0 - mu.sum()))
        return out

    def solve_stochastic(self, method, seed, verbose, stop="checks", multiplier_bound=None, batch_size=None,
                         **options):
        """The generic primal-dual lowering. ``stop="checks"`` (default): the judge's checks (constraint
        violations and the Lagrangian gap) run at checkpoints (every EPOCHS // CHECKS_PER_BUDGET epochs, then
        every 25 % of the run); the run stops when they pass, and each failed checkpoint restarts the method from
        its averaged output with steps measured again there (restarted averaging), raising the multiplier bound
        (x4) first when a constraint is violated while the multipliers hold the whole bound. ``epochs`` is then
        a cap (default CAP_FACTOR x EPOCHS). ``stop="budget"``: ``epochs`` (default EPOCHS) in one run, the bound
        raised after the run while the output violates a constraint (at most BOUND_ROUNDS times)."""
        check_options(options, ("epochs", "inner", "step_w", "step_y", "w0", "callback", "max_time"),
                      "the stochastic method 'primal_dual'")
        stop = check_choice(stop, "stop", STOP_RULES)
        if self.unbounded:
            return self._unbounded(self.unbounded)
        form = self.form()
        coords = self.coordinates(form)
        given = multiplier_bound is not None
        if batch_size is not None:
            batch_size = check_int(batch_size, "batch_size")
        bound = 0.0 if not form.constraint_pieces else (
            check_number(multiplier_bound, "multiplier_bound", low=0.0, strict=True) if given
            else self._default_bound(form, batch_size))
        cap = check_int(options.pop("epochs", EPOCHS * (CAP_FACTOR if stop == "checks" else 1)), "epochs")
        w0 = options.pop("w0", None)
        u = None if w0 is None else coords.to_u(self.w.check_value(w0, "w0"))
        max_time = options.pop("max_time", None)
        state = {"bound": bound, "step_scale": 1.0, "shrinks": 0, "weight": 1.0, "last_resorts": 0, "batch": None,
                 "doublings": 0}
        stopper = CertifiedStop(self, lambda info: self._variables(form, coords, info["w"], info["ys"],
                                                                   state["bound"]),
                                every=EPOCHS // CHECKS_PER_BUDGET, user_callback=options.pop("callback", None),
                                enabled=stop == "checks", cap=cap, verbose=verbose,
                                second_opinion=lambda variables: self._with_model_duals(form, variables),
                                earliest=FAIL_FAST_EARLIEST)
        rng = as_generator(seed)
        start = time.perf_counter()
        done, ys, rounds, restarts, history, evals = 0, None, 0, 0, [], 0
        while True:
            oracle = LagrangianOracle(form, self.w, state["bound"], batch_size or state["batch"], coords)
            action = []

            def segment(info, offset=done):
                before = stopper.n_checks
                stopped = stopper({**info, "epoch": info["epoch"] + offset})
                if stopper.n_checks == before or stopper.passed or stopper.by_user or stopper.contradicted:
                    return stopped
                # a checkpoint failed: restart from the averaged output, under a larger bound where the bound is
                # what holds the run back (the fail-fast rule's rate was measured under the smaller one)
                raise_bound = not given and rounds < BOUND_ROUNDS and bool(form.constraint_pieces) \
                    and (self._bound_too_small(stopper.last, info["ys"])
                         or (stopped and state["last_resorts"] < LAST_RESORT_RAISES
                             and self._violated(stopper.last)))
                state["last_resorts"] += int(stopped and raise_bound)
                if stopped and not raise_bound:
                    return True     # the fail-fast rule stopped the run
                if not raise_bound and not oracle.smooth and not _no_progress(stopper.points):
                    return False    # a non-smooth Phi keeps its average while it progresses (note at the top)
                action.append("raise" if raise_bound else "restart")
                return True
            remaining = None if max_time is None else max(0.0, max_time - (time.perf_counter() - start))
            out = primal_dual(oracle, epochs=cap - done, w0=u, y0=ys, output="tail" if stop == "checks" else
                              "suffix", seed=rng, verbose=verbose, callback=segment,
                              max_time=remaining, step_scale=state["step_scale"],
                              primal_weight=state["weight"], **options)
            history += [{**h, "epoch": h["epoch"] + done, "grad_evals": h["grad_evals"] + evals}
                        for h in out["history"]]
            done, evals = done + out["epochs_run"], evals + out["grad_evals"]
            if stop == "budget":
                if given or not form.constraint_pieces or rounds == BOUND_ROUNDS or out["status"] == "diverged" \
                        or not self._bound_binds(oracle, out, state["bound"]):
                    break
                rounds, state["bound"], done = rounds + 1, RAISE * state["bound"], 0
                u = out["w"]
                continue
            if not action or out["status"] != "completed" or done >= cap:
                if action or stopper.by_user:      # the segment's own words ("stopped by the callback after
                    out["message"] = f"stopped by the callback after epoch {done - 1}" if stopper.by_user \
                        else ""                    # epoch s", s within the segment) are not the run's
                break
            if not oracle.kinked:      # the primal weight (see its note at the top of this module)
                start_w = oracle.project(np.zeros(oracle.shape)) if u is None else u
                start_y = [np.full(m, 1.0 / m) for m in oracle.blocks] if ys is None else [y / y.sum() for y in ys]
                state["weight"] = balanced_weight(out["steps"]["primal_weight"], start_w, out["w"], start_y,
                                                  out["ys"], out["steps"]["step_w"], out["steps"]["step_y"],
                                                  out["steps"]["coupled"])
            u, ys = out["w"], [(1.0 - MIX) * y + MIX / y.size
                               for y in self._restart_duals(form, stopper.last[0], state["bound"])]
            if action[0] == "raise":       # the same multipliers lambda = bound mu under the larger bound
                rounds, state["bound"] = rounds + 1, RAISE * state["bound"]
                stopper.restart_rate()     # another penalty: its gap is measured afresh
                mu = ys[-1][:-1] / RAISE
                ys[-1] = np.append(mu, 1.0 - mu.sum())
            elif state["shrinks"] < SHRINKS and oracle.smooth and oracle.applied_weight == 1.0 \
                    and _no_progress(stopper.points):
                state["step_scale"], state["shrinks"] = state["step_scale"] / 2, state["shrinks"] + 1
            elif batch_size is None and state["doublings"] < BATCH_DOUBLINGS and _at_a_floor(stopper.points) \
                    and 2 * oracle.b <= oracle.cell_size.max():
                state["batch"], state["doublings"] = 2 * oracle.b, state["doublings"] + 1
            restarts += 1
        multipliers = {}
        if form.constraint_pieces:
            multipliers = {label: float(state["bound"] * m) for label, m in zip(form.constraint_labels,
                                                                                 out["ys"][-1][:-1])}
        metrics = {"grad_evals": evals, "epochs_run": done, "multiplier_bound": state["bound"],
                   "bound_raised": rounds, "restarts": restarts, "steps_halved": state["shrinks"],
                   "batch_doubled": state["doublings"], "rows_per_step": oracle.rows_per_step,
                   "estimated_multipliers": multipliers,
                   **{k: v for k, v in out["steps"].items() if k != "coupled"}}
        variables = self._variables(form, coords, out["w"], out["ys"], state["bound"])
        if stopper.last is not None and np.array_equal(stopper.last[0][self.w.name], variables[self.w.name]):
            variables = dict(stopper.last[0])      # the output's candidate as its last checkpoint judged it
        solution = Solution(variables=variables,
                            status=out["status"], message=out["message"], history=history, metrics=metrics,
                            solver={"name": "primal_dual", "options": {k: v for k, v in options.items()
                                                                       if isinstance(v, (int, float, str))}})
        stopper.finish(solution, cap=f"epochs={cap}")
        return solution

    def warm_start(self, result) -> dict:
        """A sweep starts the next stochastic run from the previous result's weights."""
        if self.w is None or self.w.name not in result.variables or result.status == "unbounded":
            return {}
        return {"w0": np.asarray(result.variables[self.w.name], dtype=float)}

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

    def evaluate(self, variables: dict, solver=None, solver_optimum=None) -> Evaluation:
        """The declaration on the full data, its natural scale, the Lagrangian gap when the candidate has duals
        (or the saddle form has none), and ``solver_optimum``: the optimal value an exact solve reported, to
        compare with the judged objective."""
        if "stochastic" in self.unavailable:
            evaluation = super().evaluate(variables)
            self._solver_gap(evaluation, solver_optimum)
            return evaluation
        form = self.form()
        declared = {w.name for w in self.problem.variables()}
        evaluation = super().evaluate({k: v for k, v in variables.items() if k in declared})
        duals = self._duals(form, {k: v for k, v in variables.items() if k not in declared})
        ys, bound = duals if duals is not None else (None, 0.0)
        oracle = LagrangianOracle(form, self.w, bound, coordinates=self.coordinates(form, "certificate"))
        theta = np.asarray(variables[self.w.name], dtype=float)
        snap = oracle.snapshot(oracle.to_u(theta), [np.full(m, 1.0 / m) for m in oracle.blocks])
        evaluation.metrics["objective_scale"] = oracle.objective_scale(snap.leaves)
        if duals is not None:
            sup = oracle.penalized(snap.leaves, snap.values)
            try:       # the bound's own slack: a hundredth of the accuracy the check asks
                lower_bound, how = self._newton_bound(form, theta, ys, bound)
                if how is None:
                    accuracy = self.accuracy(evaluation)
                    lower_bound, how = oracle.lower_bound(ys, theta, solver, slack=SLACK_SHARE * accuracy,
                                                          minimize_smoothed=self._smoothed_newton(form, ys, bound),
                                                          upper=sup, decided=self._decided(evaluation, accuracy))
            except SolverError as exc:
                if exc.status == solvers.UNBOUNDED:   # min_w Phi(w, y) = -inf: the gap is +inf, not unknown
                    lower_bound, how = -np.inf, "unbounded: Phi(., y) has no finite minimum (CVXPY)"
                else:
                    warnings.warn(f"the Lagrangian gap is not certified (reported as nan): its inner minimum "
                                  f"failed: {exc}", stacklevel=3)
                    lower_bound, how = np.nan, "failed"
            evaluation.metrics["lower_bound_method"] = how
            evaluation.certificate = {"lagrangian_gap": sup - lower_bound, "lower_bound": lower_bound,
                                      "penalized_objective": sup, "multiplier_bound": bound}
        self._solver_gap(evaluation, solver_optimum)
        return evaluation

    def _decided(self, evaluation, accuracy) -> float:
        """The Lagrangian gap above which a candidate fails every backend's check (the inner minimum of its
        certificate may then stop early: :meth:`LagrangianOracle.lower_bound`), or inf when a constraint fails the
        stochastic check: there the bound is compared with the objective (:meth:`_bound_too_small`, whether to raise
        the multiplier bound) and is computed in full. (A violation within that tolerance fails an exact result's
        check whatever the gap.)"""
        if any(record["violation"] > self.violation_tolerance(record["bound"], "stochastic")[0]
               for record in evaluation.constraints.values()):
            return np.inf
        return max(accuracy, EXACT_GAP * max(1.0, abs(evaluation.objective)))

    def _newton_bound(self, form, theta, ys, bound):
        """(lower bound, how) of min_w Phi(w, y) by projected Newton with the model-space oracles (Frank-Wolfe bound,
        rigorous on a ball), or (nan, None) where they do not apply or Newton does not converge in its steps (a
        singular Hessian with the ball active, far from the optimum): the caller then uses the first-order bound."""
        if not self._model_space_certifies(form):
            return np.nan, None
        lam = bound * ys[-1][:-1] if form.constraint_pieces else np.zeros(0)
        try:
            cert = self.model_space().certificate(theta, ys[:len(form.objective_terms)], lam)
        except SolverError:
            return np.nan, None
        return cert["dual_bound"], "Frank-Wolfe bound after projected Newton (model space)"

    def _model_space_certifies(self, form) -> bool:
        """Whether the Lagrangian's minimum comes from projected Newton in model space: a smooth declaration (the
        model-space method applies) that :meth:`_newton_fits`."""
        return "model_space" in self.exact_methods and self._newton_fits(form)

    def _newton_fits(self, form) -> bool:
        """Whether projected Newton in model space can serve the certificate: a ball, at most budget.DENSE_PARAMETERS
        parameters (a D x D eigendecomposition per step) and the model-space state within the memory guard."""
        return self.w.radius is not None and self.w.shape[0] <= budget.DENSE_PARAMETERS and \
            budget.fits(model_space_estimate(form, self.w))

    def _smoothed_newton(self, form, ys, bound):
        """``(kernel_map, theta0) -> theta``: projected Newton in model space on the Lagrangian at ``ys`` with the
        non-smooth losses replaced by ``kernel_map`` (their softplus smoothings), for the minorant bound of
        :meth:`LagrangianOracle.lower_bound`; None where model space does not serve (then accelerated gradient)."""
        if not self._newton_fits(form) or smooth_reason(form, self.w, lambda k: smoothed(k, 1.0)) is not None:
            return None
        lam = bound * ys[-1][:-1] if form.constraint_pieces else np.zeros(0)

        def minimize(kernel_map, theta0):
            fun = ModelSpace(form, self.w, kernel_map).lagrangian(ys[:len(form.objective_terms)], lam)
            return minimize_on_ball(fun, theta0, self.w.radius, tol=CERT_TOL, max_iter=NEWTON_STEPS, strict=False)[0]
        return minimize

    @staticmethod
    def _solver_gap(evaluation, solver_optimum) -> None:
        if solver_optimum is not None:
            evaluation.certificate["solver_optimum_gap"] = abs(evaluation.objective - float(solver_optimum))

    def accuracy(self, evaluation: Evaluation) -> float:
        """The accuracy asked of a stochastic result, in objective units: RELATIVE times the objective's natural
        scale (the sum of the absolute values of its terms without constants, e.g. the mean loss, or the largest
        group risk of a max), at least FLOOR."""
        scale = evaluation.metrics.get("objective_scale", abs(evaluation.objective))
        return RELATIVE * max(abs(float(scale)), FLOOR)

    def certificate_checks(self, evaluation, backend) -> list[Check]:
        checks = []
        solver_gap = evaluation.certificate.get("solver_optimum_gap")
        if solver_gap is not None:
            checks.append(Check("judged objective - solver's optimum", solver_gap,
                                1e-6 * max(1.0, abs(evaluation.objective)),
                                "the conic solver's status 'optimal' certifies its optimal value up to its tolerance "
                                "(1e-8, primal-dual gap); the objective judged on the full data must be that value, "
                                "with a margin", "certificate"))
        gap = evaluation.certificate.get("lagrangian_gap")
        if gap is not None and backend == "exact":
            checks.append(Check("Lagrangian gap", gap, EXACT_GAP * max(1.0, abs(evaluation.objective)),
                                "an exact method's dual variables certify its optimality to the precision of an exact "
                                "solver: the conic solvers' duality gap (1e-8) with a margin, relative to "
                                "max(1, |objective|)", "certificate"))
        elif gap is not None:
            checks.append(Check("Lagrangian gap", gap, self.accuracy(evaluation), ACCURACY_REASON, "certificate"))
        if gap is not None:
            cert = evaluation.certificate
            checks.append(bound_order("lower bound min_w Phi(w, y)", cert["lower_bound"],
                                      "penalized objective max_y Phi(w, y)", cert["penalized_objective"]))
        return checks

    def advice(self, backend, solution, failing) -> str:
        if backend == "exact":
            return super().advice(backend, solution, failing)
        names = {c.kind for c in failing}
        steps = []
        if any(c.name == "Lagrangian gap" and c.value == np.inf for c in failing):
            steps.append("the inner minimum of the certificate is unbounded (min_w Phi(w, y) = -inf): the "
                         "declaration may be unbounded; give the weights a radius or a regularizer, and try the "
                         "exact backend, which reports an unbounded program")
        if "constraint" in names:
            steps.append("if a constraint stays violated while the multipliers hold the whole bound "
                         f"(metrics['multiplier_bound'] = {solution.metrics.get('multiplier_bound', float('nan')):.3g}"
                         "), a larger multiplier_bound=")
        return ("What to try: " + cap_tip(solution, "a larger cap (epochs=) lets the run continue until the checks "
                                                    "pass")
                + "".join(f"; {s}" for s in steps)
                + "; if the Lagrangian gap stalls, a larger batch_size= (less noise) or smaller steps (step_w=, "
                  "step_y=); the exact backend (backend='exact', one CVXPY program) where the data fit in memory.")

    def crosscheck_checks(self, exact, stochastic, **context) -> list[Check]:
        accuracy = own_tolerance(stochastic, "Lagrangian gap",
                                 self.accuracy(Evaluation(objective=exact.objective, metrics=exact.metrics)))
        # f* <= f(w) + lambda* v for any w violating the constraints by v (Lagrangian duality, lambda* the optimal
        # multipliers): the exact result's multipliers, or the stochastic result's estimate where larger (its bound
        # can sit below lambda*, and its w then violates by up to the tolerance: a bounded group loss at 1.01x its
        # smallest feasible bound on Law School, lambda* = 2.6, the stochastic bound 1.73)
        lam = max(multiplier_sum(stochastic), multiplier_sum(exact))
        violation = stochastic.max_violation
        return [
            Check("objective: stochastic - exact", stochastic.objective - exact.objective, accuracy,
                  "the Lagrangian gap of the stochastic result bounds f(w) - optimum for any w (weak duality), and "
                  "an ok result's gap is within the accuracy asked of it (" + ACCURACY_REASON.split("; ", 1)[1] + ")"),
            Check("objective: exact - stochastic", exact.objective - stochastic.objective,
                  accuracy + lam * violation,
                  "the exact optimum is a lower bound, up to what a violation v of the constraints can buy: at most "
                  "lambda v with lambda the multipliers' sum (Lagrangian duality; lambda the larger of the exact "
                  f"and the stochastic result's: {lam:.3g}), plus the accuracy"),
            self._violation_check(stochastic, "stochastic"),
            self._violation_check(exact, "exact"),
            Check("Lagrangian gap of the stochastic result", stochastic.certificate.get("lagrangian_gap", np.inf),
                  accuracy, "max_y Phi - min_w Phi bounds the suboptimality of the stochastic w: " + ACCURACY_REASON),
        ]

    def _violation_check(self, result, backend) -> Check:
        """The largest violation of a result relative to the judge's tolerance for it (the constraint whose
        ratio is largest), with the same tolerance as the result's own acceptance."""
        rows = [(record["violation"], *self.violation_tolerance(record["bound"], backend))
                for record in result.constraints.values()] or [(0.0, *self.violation_tolerance(0.0, backend))]
        return Check(f"constraint violation ({backend})", *max(rows, key=lambda r: r[0] / r[1]))
