"""Running CVXPY: solver choice and validation, fallback, status checking, timings.

A solver failure never returns numbers as if optimal: any status other than ``optimal`` or
``optimal_inaccurate`` raises :class:`SolverError` with CVXPY's status. When no solver was asked for and the
default (Clarabel) stops inaccurate or fails, the program is solved again by the next conic solver (ECOS, then
SCS for conic programs; the record says so): an accurate answer from another solver beats an inaccurate one.
A program the solver proves unbounded raises :class:`SolverError` with status ``"unbounded"`` at once (no
fallback: unboundedness is a property of the program, and the next solver's failure would hide it).
"""
from __future__ import annotations

import importlib
import os
import sys
import threading
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


FALLBACKS = {"conic": ("ECOS", "SCS"), "lp": ("CLARABEL", "SCS")}
UNBOUNDED = "unbounded"   # the SolverError status of a program whose objective is unbounded below


def solve(problem: cp.Problem, solver: str | None = None, verbose: bool | None = False, needs: str = "conic",
          what: str = "the exact program", **options) -> dict:
    """Solve a CVXPY problem; return a record {name, version, status, options, compile, solve, value}.

    Without ``solver`` (and without solver options), an inaccurate or failed default solve falls back to the
    next installed solver of :data:`FALLBACKS`; the record keeps ``fallback_from`` (the solvers tried first)."""
    if solver is not None or options:
        return _solve_with(problem, check_solver(solver, needs), verbose, what, options)
    names = [check_solver(None, needs)] + [s for s in FALLBACKS[needs] if s in cp.installed_solvers()
                                          and s != DEFAULT_SOLVER]
    tried, inaccurate = [], None        # the latest inaccurate record is the one whose values the problem holds
    for name in names:
        try:
            record = _solve_with(problem, name, verbose, what, {})
        except SolverError as exc:
            if exc.status == UNBOUNDED:       # a property of the program, not of the solver: no fallback
                raise
            tried.append(f"{name}: {exc.status}")
            if name == names[-1] and inaccurate is None:
                raise
            continue
        if record["status"] == cp.OPTIMAL:
            break
        tried.append(f"{name}: {record['status']}")
        inaccurate = record
    else:
        record = inaccurate
    return {**record, "fallback_from": tried} if tried else record


_BANNER = {"shown": False, "lock": threading.Lock()}


def _silence_highs_banner() -> None:
    """HiGHS prints its banner on standard output (from C++, whatever ``verbose`` says) the first time a solver
    object is made in a process: make that first one here with the file descriptor of standard output pointed at
    the null device, so that a quiet solve stays quiet (later objects print nothing)."""
    with _BANNER["lock"]:
        if _BANNER["shown"]:
            return
        _BANNER["shown"] = True
        try:
            highspy = importlib.import_module("highspy")
        except ImportError:
            return
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def _solve_with(problem: cp.Problem, name: str, verbose, what: str, options: dict) -> dict:
    if str(name).upper() == "HIGHS" and not verbose:
        _silence_highs_banner()
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
    if status in (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE):
        raise SolverError(f"{what} is unbounded (CVXPY status {status!r} from {name}): the objective has no "
                          f"finite minimum on the declared domain; give the weights a radius "
                          f"(fm.Weights(d, radius=...)) or add a regularizer such as fm.sum_squares(w)",
                          status=UNBOUNDED)
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise SolverError(f"{name} did not solve {what}: CVXPY status {status!r}", status=status)
    stats = problem.solver_stats
    solve_time = stats.solve_time if stats and stats.solve_time is not None else elapsed
    return {"name": name, "version": cp.__version__, "status": status, "options": dict(options),
            "solve": float(solve_time), "compile": max(0.0, elapsed - float(solve_time)),
            "iterations": getattr(stats, "num_iters", None), "value": float(problem.value)}
