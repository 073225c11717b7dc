"""Running CVXPY: solver choice and validation, status checking, timings.

A solver failure never returns numbers as if optimal: any status other than ``optimal`` or
``optimal_inaccurate`` raises :class:`SolverError` with CVXPY's status.
"""
from __future__ import annotations

import time
import warnings

import cvxpy as cp

from ..errors import InfeasibleError, OptionError, SolverError

SUPPORTED_SOLVERS = ("CLARABEL", "ECOS", "SCS", "HIGHS", "OSQP")
DEFAULT_SOLVER = "CLARABEL"


def check_solver(solver: str | None, needs: str = "conic") -> str:
    """The validated solver name (upper case). ``needs`` is ``"conic"`` (exp/SOC cones) or ``"lp"``."""
    name = DEFAULT_SOLVER if solver is None else str(solver).upper()
    if name not in SUPPORTED_SOLVERS:
        raise OptionError(f"unknown solver {solver!r}; supported solvers are {', '.join(SUPPORTED_SOLVERS)}")
    installed = cp.installed_solvers()
    if name not in installed:
        have = [s for s in SUPPORTED_SOLVERS if s in installed]
        raise OptionError(f"solver {name} is not installed; installed solvers are {', '.join(have)}")
    if needs == "conic" and name in ("HIGHS", "OSQP"):
        raise OptionError(f"solver {name} cannot handle exponential or second-order cones; use one of "
                          f"CLARABEL, ECOS, SCS")
    return name


def solve(problem: cp.Problem, solver: str | None = None, verbose: bool | None = False, needs: str = "conic",
          what: str = "the exact program", **options) -> dict:
    """Solve a CVXPY problem; return a record {name, version, status, options, compile, solve, value}."""
    name = check_solver(solver, needs)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # CVXPY's "solution may be inaccurate"
            problem.solve(solver=name, verbose=bool(verbose), **options)
    except cp.error.SolverError as exc:
        raise SolverError(f"{name} failed on {what}: {exc}", status="solver_error") from None
    elapsed = time.perf_counter() - start
    status = problem.status
    if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise InfeasibleError(f"{what} is infeasible (CVXPY status {status!r} from {name})")
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise SolverError(f"{name} did not solve {what}: CVXPY status {status!r}", status=status)
    stats = problem.solver_stats
    solve_time = stats.solve_time if stats and stats.solve_time is not None else elapsed
    return {"name": name, "version": cp.__version__, "status": status, "options": dict(options),
            "solve": float(solve_time), "compile": max(0.0, elapsed - float(solve_time)),
            "iterations": getattr(stats, "num_iters", None), "value": float(problem.value)}
