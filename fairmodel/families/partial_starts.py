"""Starting points and the constants of the theory for IDCA on partial-fairness programs (He, Huang, Yao, Lin
2025): feasible starts (w = 0, the penalty start for ramp rate gaps, and random feasible points for multi-start),
the Lipschitz estimate M of Assumption 6.3D and the schedule of Theorem 6.5 / eq. (28).

The penalty start. IDCA from w = 0 spends most of its time far from the answer: its first subproblems move most
scores across a kink of a ramp, so their working sets are wide (a central path followed by passes), and its path
converges linearly from there. For ramp rate gaps (in memory) IDCA starts instead from an approximate minimizer of
the quadratic penalty (Nocedal and Wright 2006, Framework 17.1)

    f_0(x) + rho sum_i pos(f_i(x))^2,   every ramp bound tightened to (1 - PENALTY_MARGIN) eps,

by L-BFGS (scipy's L-BFGS-B; Byrd, Lu, Nocedal, Zhu 1995), a few iterations for each rho in PENALTY_WEIGHTS, each
from the last, one pass over the rows for all f_i and their subgradients an evaluation. Its last point, when it meets
the declared bounds (its centres set by the blocks) with a lower objective than w = 0, is the start, else w = 0
(:func:`better_start`). The runs of the true-rate continuation start likewise from the previous answer
(:func:`continuation_start`). IDCA and its certificate are unchanged
(a feasible anchor is all Lemma C.1 needs): the start only moves where the path begins. Measured against w = 0 on all
training rows of Adult (21,113) and Law School (14,560), the three rate gaps at 0.1, 0.05, 0.02, 0.01 (21 rows, one
BLAS thread; Adult's selection-rate gap at 0.1 and 0.02 was not run from w = 0): IDCA's last run took 1 to 7 outer
iterations in 19 rows (12 to 55 from w = 0) and the whole fit 1.3x to 16x less time in all 21; the answer's objective
is lower or within 2e-5 in 18 rows and higher by 1e-4 to 6e-4 in three (other local solutions: the program is not
convex). In one more row (Adult, equalized odds at 0.01) the penalty's point misses the bound and IDCA starts from
w = 0. ``start="zero"`` keeps w = 0.
"""
from __future__ import annotations

import time

import numpy as np
from scipy.optimize import minimize

from ..errors import OptionError
from ..oracles.dc import DCProgram
from ..oracles.dc_bands import RampBandBlock
from ..oracles.dc_hinges import score_vector
from ..stochastic.idca import check_feasible_start, theory_schedule
from ..stochastic.ssg import polyak_feasibility
from ..utilities.validate import as_generator
from .partial_program import max_constraint
from .partial_rates import ramp_bounds, rate_blocks

STARTS_SCALE = 1.0        # random starts: scores with this standard deviation, then made feasible
START_KINDS = ("penalty", "zero")
PENALTY_MARGIN = 0.2      # the penalty start aims at ramp bounds (1 - margin) eps, so that its point meets eps
PENALTY_WEIGHTS = (1.0, 10.0, 100.0, 1000.0)   # rho, each from the last (from w = 0 at rho = 100, L-BFGS's line
                          # search stopped at once: every score moves together). Measured on the 24 full-size rows
                          # of the module docstring: the last weight met the bounds in 23; in the other (Adult,
                          # equalized odds at 0.01) rho = 1e4 did, and IDCA from there took longer (39 s against 29 s
                          # from w = 0) to a higher objective (by 1.3e-3), so w = 0 is the start there
PENALTY_ITERATIONS = 30   # L-BFGS iterations a weight (89-207 passes in all on Adult and Law School; one thread,
                          # 0.1-0.26 s on Law School, 1.4-1.8 s on Adult; 15 a weight halved the passes and cost 3-16
                          # more outer iterations in 4 of 12 Law School rows)
RESTART_WEIGHTS = (100.0, 1000.0)   # from the previous answer of the true-rate continuation (it met a bound just
                          # above the new one): the weights that enforce the bounds. Measured on all training rows of
                          # Adult by race (dp 0.1 and 0.05, eo 0.05) and Communities (dp 0.02) against all four
                          # weights: the continuation's runs took 0.2-3.9 s against 3.9-6.5 s (and two more runs on
                          # Communities), to objectives 2e-4 to 9e-4 higher (7e-3 on Communities)


def feasible_starts(program: DCProgram, start, starts: int, seed, allow_infeasible: bool, default: str = "zero"):
    """Feasible starting points: the given start (a dict of values, "zero" for w = 0 or "penalty" for
    :func:`penalty_start`; None: ``default``), then random feasible ones; and notes on how the first was found and on
    the random starts that found no feasible point."""
    kind = default if start is None else start
    notes = []
    if isinstance(kind, str):
        if kind not in START_KINDS:
            raise OptionError(f"start must be a dict of starting values, 'zero' (w = 0) or 'penalty' (an approximate "
                              f"minimizer of the quadratic penalty, for ramp rate gaps); got {kind!r}")
        x0 = program.start()
        if kind == "penalty":
            x0, note = penalty_start(program, x0)
            notes.append(note)
    else:
        x0 = program.start(start)
    check_feasible_start(program, x0, allow_infeasible)
    points = [x0]
    rng = as_generator(seed)
    for j in range(1, starts):
        x = random_start(program, rng)
        if x is None:
            notes.append(f"random start {j}: no feasible point found by Polyak steps; skipped")
            continue
        points.append(x)
    return points, notes


def penalty_start(program: DCProgram, x0):
    """(x, note): the penalty start of the module docstring from ``x0`` (w = 0), or ``x0`` itself when the program
    has no ramp rate gap, or the penalty's point does not meet the declared bounds or has no lower objective than
    ``x0`` (:func:`better_start`); the note says which, in how many passes and seconds."""
    if not rate_blocks(program):
        return x0, "start: w = 0 (the penalty start is for ramp rate gaps)"
    point, feasible, rho, passes, seconds = penalty_point(program, x0, PENALTY_WEIGHTS)
    done = f"rho = {rho:g} (L-BFGS, {passes} passes, {seconds:.2g} s)"
    start, why = better_start(program, point, feasible, x0)
    if start is point:
        return point, f"start: the quadratic penalty's minimizer at {done}"
    return x0, f"start: w = 0 (the quadratic penalty's minimizer at {done} {why})"


def better_start(program: DCProgram, point, feasible: bool, other):
    """(start, why): the penalty's ``point`` when it meets the bounds (``feasible``) with a lower objective than the
    feasible ``other``, else ``other`` and why not. The quadratic penalty of a ramp gap can be met by squeezing every
    score into the ramp (each group's ramp rate then near 1/2): on 399 rows of scikit-learn's breast cancer data
    with groups by the top 20 % of mean radius (selection rates 0.01 and 0.78), demographic parity at 0.1, its point
    had an objective of 0.877 against w = 0's log 2, and IDCA from it ended at 0.524 against 0.381 from w = 0."""
    if not feasible:
        return other, "does not meet the declared bounds"
    f_point, f_other = program.objective_value(point), program.objective_value(other)
    if f_point >= f_other:
        return other, f"has the objective {f_point:.4g}, not below {f_other:.4g}"
    return point, ""


def penalty_point(program: DCProgram, x, weights):
    """(point, feasible, rho, passes, seconds): L-BFGS on the quadratic penalty of the module docstring from ``x``
    for each rho of ``weights`` in turn (the ramp bounds tightened by PENALTY_MARGIN), its last point with the centres
    set by the blocks, and whether that point meets the program's bounds."""
    begin, passes = time.perf_counter(), [0]

    def penalized(x, rho):
        passes[0] += 1
        f0, grad = program.objective_value_and_grad(x)
        f, jac = program.values_and_jacobian(x)
        excess = np.maximum(f, 0.0)
        return f0 + rho * float(excess @ excess), grad + 2.0 * rho * (jac.T @ excess)

    layout = program.layout
    with ramp_bounds(program, {name: (1.0 - PENALTY_MARGIN) * b.eps for name, b in rate_blocks(program).items()}):
        for rho in weights:
            x = minimize(penalized, x, args=(rho,), jac=True, method="L-BFGS-B",
                         options={"maxiter": PENALTY_ITERATIONS}).x
        x = program.project(x)
        point = program.start({w.name: x[layout.slices[w.name]] for w in layout.weights})
    return point, program.max_violation(point) <= 0, rho, passes[0], time.perf_counter() - begin


def continuation_start(program: DCProgram, x, back, penalty: bool = True):
    """The start of a run of the true-rate continuation (:mod:`~fairmodel.families.partial_rates`) near its previous
    answer (or shifted point) ``x``, the program at its new ramp bounds, which ``back`` (the caller's point near
    ``x``) meets: with ``penalty`` (in memory), the quadratic penalty's point from ``x`` itself (RESTART_WEIGHTS)
    where :func:`better_start` prefers it to ``back``; else ``back``."""
    if not penalty:
        return back
    point, feasible = penalty_point(program, x, RESTART_WEIGHTS)[:2]
    return better_start(program, point, feasible, back)[0]


def random_start(program: DCProgram, rng):
    """A random direction with score spread STARTS_SCALE, thresholds set, then Polyak steps to f <= 0."""
    x = np.zeros(program.D)
    for w in program.layout.weights:
        x[program.layout.slices[w.name]] = rng.standard_normal(w.size)
    scores = [score_vector(b.avg.data, x[b.wsl], b.avg.intercept) for b in program.blocks if hasattr(b, "avg")]
    spread = max((float(np.std(s)) for s in scores), default=1.0) or 1.0
    for w in program.layout.weights:
        x[program.layout.slices[w.name]] *= STARTS_SCALE / spread
    x = program.project(x)
    x = program.start({**program.layout.split(x), **{f"theta_{b.name}": b.best_thresholds(x)
                                                     for b in program.blocks if isinstance(b, RampBandBlock)}})
    out = polyak_feasibility(x, max_constraint(program), program.project, iterations=2000, target=-1e-4)
    return out["x"] if out["status"] == "feasible" else None


def theory(program: DCProgram, eps: float, mu: float) -> dict:
    """K, ε_k, T_k of eq. (28) with M estimated at the default start and ν = -max_i f_i(x0) (Theorem 6.5)."""
    x0 = program.start()
    nu = -program.max_violation(x0)
    if nu <= 0:
        raise OptionError("theory_eps= needs a strictly feasible default start (nu = -max_i f_i(x0) > 0)")
    M = lipschitz_estimate(program, [x0])
    return {**theory_schedule(M, mu, nu, program.objective_value(x0), eps), "M": M, "nu": nu}


def lipschitz_estimate(program: DCProgram, points) -> float:
    """Largest norm of the subgradients of f_0 and of every f_i+- observed at ``points`` (Assumption 6.3D)."""
    M = 0.0
    for x in points:
        M = max(M, float(np.linalg.norm(program.objective_value_and_grad(x)[1])))
        _, jac = program.minus(x)
        M = max(M, float(np.max(np.linalg.norm(jac, axis=1), initial=0.0)))
        M = max(M, float(np.max(np.linalg.norm(program.plus_jacobian(x), axis=1), initial=0.0)))
    return M
