"""Starting points and the constants of the theory for IDCA on partial-fairness programs (He, Huang, Yao, Lin
2025): feasible starts (the default w = 0 and random feasible points for multi-start), the Lipschitz estimate M
of Assumption 6.3D and the schedule of Theorem 6.5 / eq. (28)."""
from __future__ import annotations

import numpy as np

from ..errors import OptionError
from ..oracles.dc import DCProgram
from ..oracles.dc_bands import RampBandBlock
from ..oracles.dc_hinges import score_vector
from ..stochastic.idca import check_feasible_start, theory_schedule
from ..stochastic.ssg import polyak_feasibility
from ..utilities.validate import as_generator
from .partial_program import max_constraint

STARTS_SCALE = 1.0        # random starts: scores with this standard deviation, then made feasible


def feasible_starts(program: DCProgram, start, starts: int, seed, allow_infeasible: bool):
    """Feasible starting points: the given (or default) start, then random feasible ones; and notes on the
    random starts that found no feasible point."""
    x0 = program.start(start)
    check_feasible_start(program, x0, allow_infeasible)
    points, notes = [x0], []
    rng = as_generator(seed)
    for j in range(1, starts):
        x = random_start(program, rng)
        if x is None:
            notes.append(f"random start {j}: no feasible point found by Polyak steps; skipped")
            continue
        points.append(x)
    return points, notes


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
