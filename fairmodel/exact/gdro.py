"""Exact programs of group DRO and MERO (Yu, Cai, Jiang, Zhang 2024, eqs. (2)-(4) and the gap (13)).

* epigraph program  min_{w in W, t} t  s.t.  R_i(w) - c_i <= t  for all groups i, whose constraint
  duals are an optimal q* in the simplex (stationarity in t gives sum_i q_i = 1);
* per-group ERM values R_i* = min_{w in W} R_i(w) (the offsets of MERO, eq. (4));
* the inner minimum of the duality gap (13): min_{w in W} sum_i q_i R_i(w), with a Frank-Wolfe lower
  bound that turns any accurate minimizer into a rigorous certificate.
"""
from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
from scipy.optimize import minimize

from ..errors import OptionError, ResourceLimitError, SolverError
from ..oracles.domains import frank_wolfe_gap
from ..oracles.group_risks import GroupRisks
from ..oracles.losses import LinearModelLoss
from ..oracles.metric import Coordinates
from ..oracles.smoothing import STEPS as SMOOTHING
from ..oracles.smoothing import minorant, smoothable, smoothed
from ..utilities.threads import few_threads
from . import budget, solvers
from .domains import ball_constraint
from .lower import group_average_matrix, lower_loss
from .newton import accepted, minimize_many_on_ball, minimize_on_ball, minimize_on_ball_first_order


def cvxpy_losses(risks: GroupRisks, theta: cp.Expression, rows=None):
    """The per-sample losses of the group risks as a CVXPY vector (all rows, or ``rows``)."""
    X = risks.X if rows is None else risks.X[rows]
    y = risks.y if rows is None else risks.y[rows]
    return lower_loss(risks.loss, X @ theta, y)


def cvxpy_risks(risks: GroupRisks, theta: cp.Expression):
    return group_average_matrix(risks.codes, risks.sizes, risks.u) @ cvxpy_losses(risks, theta)


def cvxpy_weighted_risk(risks: GroupRisks, theta: cp.Expression, q):
    weights = risks.sample_weights(q)
    keep = weights > 0
    return cp.sum(cp.multiply(weights[keep], cvxpy_losses(risks, theta, np.flatnonzero(keep))))


def cvxpy_domain(risks: GroupRisks, theta: cp.Variable) -> list:
    return ball_constraint(theta, risks.radius)


def epigraph_program(risks: GroupRisks, offsets=None, max_memory_gb=None):
    """(problem, theta, t, constraint) of the epigraph form of min_w max_i (R_i(w) - c_i); refused before it is
    built when its memory estimate exceeds the limit (:mod:`fairmodel.exact.budget`)."""
    budget.check(budget.gdro_epigraph(risks.n_samples, risks.shape[0]), epigraph_alternative(risks), max_memory_gb)
    theta = cp.Variable(risks.shape, name=risks.name)
    t = cp.Variable(name="t")
    c = np.zeros(risks.m) if offsets is None else np.asarray(offsets, dtype=float)
    group_constraint = cvxpy_risks(risks, theta) - c <= t
    problem = cp.Problem(cp.Minimize(t), [group_constraint] + cvxpy_domain(risks, theta))
    return problem, theta, t, group_constraint


def epigraph_alternative(risks: GroupRisks) -> str:
    dual = "method='dual' (certified Newton steps, memory O(n d)) or " if risks.has_hessian else ""
    return f"Use {dual}backend='stochastic' (ALEG, one minibatch per group per step)"


def solve_epigraph(risks: GroupRisks, offsets=None, solver=None, verbose=False, max_memory_gb=None, **options):
    """Solve the epigraph program; returns (theta*, OPT, q*, solver record).

    q* is the dual of the group constraints, clipped at 0 and normalised (it sums to 1 up to solver
    tolerance: stationarity in t; the unnormalised sum is kept in the record as ``dual_sum``). Refused before it
    is built when its memory estimate exceeds the limit (:mod:`fairmodel.exact.budget`).
    """
    problem, theta, t, group_constraint = epigraph_program(risks, offsets, max_memory_gb)
    record = solvers.solve(problem, solver, verbose, what="the group-DRO epigraph program", **options)
    dual = np.maximum(np.asarray(group_constraint.dual_value, dtype=float).ravel(), 0.0)
    record["dual_sum"] = float(dual.sum())
    q = dual / dual.sum() if dual.sum() > 0 else np.full(risks.m, 1.0 / risks.m)
    # a conic solver meets the ball to its feasibility tolerance (||w|| = 5.00008 at radius 5 on columns scaled
    # 1e-6..1e6, which the judge refuses): its point projected onto the ball
    return risks.project(np.asarray(theta.value, dtype=float)), float(t.value), q, record


SMOOTHED_TOL = 1e-9    # the relative gap at which the smoothing path stops (and its record says optimal)


def solve_weighted_erm(risks: GroupRisks, q, solver=None, verbose=False, method: str = "auto", max_memory_gb=None,
                       theta0=None, **options):
    """(theta, record) of min_{theta in W} sum_i q_i R_i(theta) (the inner minimum of (13)).

    ``method="newton"`` (the default for logistic and squared losses of a vector of weights) uses the
    certified projected Newton method of :mod:`fairmodel.exact.newton` (started at ``theta0``, e.g. the
    candidate being judged); a hinge loss on a ball (``"auto"``) the minimum of its smoothing and the tangent lines
    there (:func:`smoothed_weighted_erm`); ``"cvxpy"`` the conic program.
    """
    start = time.perf_counter()
    if method == "newton" or (method == "auto" and risks.has_hessian and solver is None):
        # on a ball the Frank-Wolfe gap bounds the error of any point, so a solve that stops short of its tolerance
        # (Newton's steps on the sphere resolve a gap of about 3e-7 on raw units at radius 50) is returned with it
        bounded = risks.radius is not None
        theta, value, gap, name = newton_weighted_erm(risks, q, theta0, max_memory_gb=max_memory_gb,
                                                      strict=not bounded)
        status = "optimal" if accepted(value, gap, 1e-10) else "optimal_inaccurate"
        return theta, {"name": name, "status": status, "value": value, "fw_gap": gap,
                       "solve": time.perf_counter() - start, "compile": 0.0}
    if method == "auto" and solver is None and smoothable(risks.loss) and risks.radius is not None \
            and len(risks.shape) == 1:
        theta, value, bound, name = smoothed_weighted_erm(risks, q, theta0, max_memory_gb=max_memory_gb)
        status = "optimal" if value - bound <= SMOOTHED_TOL * max(1.0, abs(value)) else "inaccurate"
        return theta, {"name": name, "status": status, "value": value, "fw_gap": value - bound,
                       "solve": time.perf_counter() - start, "compile": 0.0}
    keep = int(np.count_nonzero(risks.sample_weights(q)))
    budget.check(budget.gdro_epigraph(keep, risks.shape[0], "the weighted-ERM program (CVXPY)"),
                 "Give the model a twice-differentiable loss (logistic or squared) for the Newton method, or "
                 "subsample the data", max_memory_gb)
    theta = cp.Variable(risks.shape, name=risks.name)
    problem = cp.Problem(cp.Minimize(cvxpy_weighted_risk(risks, theta, q)), cvxpy_domain(risks, theta))
    record = solvers.solve(problem, solver, verbose, what="the weighted-ERM program of the duality gap", **options)
    return risks.project(np.asarray(theta.value, dtype=float)), record


def smoothed_weighted_erm(risks: GroupRisks, q, theta0=None, tol: float | None = None, max_memory_gb=None):
    """(theta, f(theta), a lower bound on min_W f, method) for f = sum_i q_i R_i of a non-smooth loss (the hinge) on a
    ball: for each smoothing parameter mu in turn (:mod:`fairmodel.oracles.smoothing`), the minimum theta_mu of the
    smoothed risks (:func:`newton_weighted_erm`, warm started), then the Frank-Wolfe bound of the tangent lines'
    risks at theta_mu, a convex minorant of f; stops when the bound is within ``tol * max(1, |f|)`` of the smallest
    f seen. Rigorous whatever the accuracy of theta_mu (e.g. on 6,000 rows of Adult, 2e-7 below the CVXPY minimum
    at mu = 1e-3; on 1,500 rows with group weights (0.9, 0.1), 8e-6 below: the minorant loses on the rows at a kink,
    and projected Newton on the smoothing stops converging at mu = 1e-4)."""
    tol = SMOOTHED_TOL if tol is None else tol
    theta = np.zeros(risks.shape) if theta0 is None else np.asarray(theta0, dtype=float)
    upper, best, name = risks.weighted_value_and_grad(theta, q)[0], -np.inf, ""
    for mu in SMOOTHING:
        theta, _, _, how = newton_weighted_erm(risks.with_loss(smoothed(risks.loss, mu)), q, theta,
                                               max_memory_gb=max_memory_gb, strict=False)
        value, grad = risks.with_loss(minorant(risks.loss, mu)).weighted_value_and_grad(theta, q)
        best = max(best, value - frank_wolfe_gap(theta, grad, risks.radius))
        upper = min(upper, risks.weighted_value_and_grad(theta, q)[0])
        name = f"tangent lines at the smoothed minimum (mu = {mu:g}; {how})"
        if upper - best <= tol * max(1.0, abs(upper)):
            break
    return theta, upper, best, name


def newton_weighted_erm(risks: GroupRisks, q, theta0=None, tol: float = 1e-10, max_memory_gb=None,
                        strict: bool = True):
    """(theta, f(theta), Frank-Wolfe gap, method name) of min_{||theta|| <= rho} sum_i q_i R_i(theta) by projected
    Newton, in the row space of the design when it has fewer rows than columns.

    f depends on theta only through X theta, so a minimizer over the ball lies in the row space span(V) of
    X = U S V^T (projecting theta onto span(V) keeps every score and does not increase the norm);
    theta = V a turns a d-dimensional Newton step (an O(d^3) eigendecomposition) into an r-dimensional one,
    r = rank <= n. The gradient X^T g lies in span(V) as well, so the Frank-Wolfe gap, hence the certificate,
    is the same in both coordinates. Cost with n < d: one SVD O(n^2 d), then O(n d) per step.

    When the Newton method's memory (:func:`fairmodel.exact.budget.newton`) exceeds the limit, or its steps are larger
    than ``budget.DENSE_PARAMETERS`` (an r x r eigendecomposition per step), and the domain is a ball,
    the accelerated projected gradient method is used instead, in the diagonal metric of the columns' second
    moments and by passes over the rows (a sparse design stays sparse): its Frank-Wolfe gap certifies the same way.
    ``strict=False``: a Newton solve that does not reach ``tol`` returns its last point instead of failing.
    """
    start = np.zeros(risks.shape) if theta0 is None else theta0
    n_rows = int(np.count_nonzero(risks.sample_weights(q)))
    estimate = budget.newton(n_rows, risks.shape[0])
    rank = risks.shape[0] if risks.data.is_chunked else min(n_rows, risks.shape[0])    # the size of a Newton step
    large = rank > budget.DENSE_PARAMETERS or not (risks.data.is_chunked or budget.fits(estimate, max_memory_gb))
    if large and risks.radius is not None:
        coordinates = Coordinates.from_second_moment(risks.second_moment(), risks.radius) \
            if len(risks.shape) == 1 else None
        theta, value, gap = minimize_on_ball_first_order(lambda t: risks.weighted_value_and_grad(t, q), start,
                                                         risks.radius, tol=tol, coordinates=coordinates)
        return theta, value, gap, "accelerated projected gradient (diagonal metric)"
    if risks.data.is_chunked:  # Dask-backed data: every Newton step is one pass over the chunks (d x d Hessian)
        theta, value, gap = minimize_on_ball(risks.weighted_oracle(q), start, risks.radius, tol=tol,
                                             full_trial=True, strict=strict)   # a Hessian per chunk: about a read
        return theta, value, gap, "projected-newton (chunked passes)"
    if large:
        budget.check(estimate, "Give the Weights a radius (the first-order method then certifies the gap with "
                               "memory O(n d))", max_memory_gb)
    loss = risks.weighted_loss(q)
    X = loss.X
    if X.shape[0] >= X.shape[1]:
        theta, value, gap = minimize_on_ball(loss.newton_oracle(), start, risks.radius, tol=tol, strict=strict)
        return theta, value, gap, "projected-newton"
    _, S, Vt = np.linalg.svd(X.toarray() if hasattr(X, "toarray") else X, full_matrices=False)
    keep = S > S[0] * 1e-14 if S.size and S[0] > 0 else np.zeros(S.size, dtype=bool)
    V = Vt[keep].T                                                  # d x r, orthonormal columns
    reduced = LinearModelLoss(risks.loss, X @ V, loss.y, sample_weight=loss.s)
    a0 = np.zeros(V.shape[1]) if theta0 is None else V.T @ theta0
    a, value, gap = minimize_on_ball(reduced.newton_oracle(), a0, risks.radius, tol=tol, strict=strict)
    return V @ a, value, gap, "projected-newton (row space)"


def group_optimal_values(risks: GroupRisks, solver=None, verbose=False) -> np.ndarray:
    """R_i* = min_{w in W} R_i(w) for every group (one exact solve per group), eq. (4). On chunked data the m
    projected Newton solves run in lockstep, every round one pass over the chunks for all groups; each solve is
    certified by its Frank-Wolfe gap as alone."""
    if risks.data.is_chunked and risks.has_hessian and solver is None:
        found = minimize_many_on_ball(risks.group_newton_oracle(), [np.zeros(risks.shape)] * risks.m, risks.radius,
                                      tol=1e-10, full_trial=True)
        return np.array([value for _, value, _ in found])
    values = np.empty(risks.m)
    for i in range(risks.m):
        q = np.zeros(risks.m)
        q[i] = 1.0
        theta, record = solve_weighted_erm(risks, q, solver, verbose)
        values[i] = risks.weighted_value_and_grad(theta, q)[0]
        if record["status"] != "optimal" and not risks.data.is_chunked:
            # R_i* enters MERO's objective as it is: a solve that stopped short of its tolerance (the hinge's smoothing
            # path 1.35e-5 above the minimum on 4,000 rows, which put the objective that far below its optimum) is
            # settled by the conic program, and the smaller of the two values kept (both are values at a point of W)
            try:
                theta, _ = solve_weighted_erm(risks, q, solver, verbose, method="cvxpy")
            except (ResourceLimitError, SolverError):   # a program too large, or failing: the path's value stands
                continue
            values[i] = min(values[i], risks.weighted_value_and_grad(theta, q)[0])
    return values


def lower_bound_from_newton(risks: GroupRisks, record: dict) -> tuple[float, float] | None:
    """(f(theta), lower bound on min_W f) from the Newton record of :func:`solve_weighted_erm` at its theta,
    without another pass: the Frank-Wolfe gap <grad, theta> + rho ||grad|| (clipped at 0) is the bound of
    :func:`lower_bound_on_ball`, f(theta) - gap, computed from the same value and gradient. None when the
    record has no gap (the conic path) or the domain is unbounded (the gap is then not a bound)."""
    if "fw_gap" not in record or risks.radius is None or not np.isfinite(record["fw_gap"]):
        return None
    return record["value"], record["value"] - record["fw_gap"]


def lower_bound_on_ball(risks: GroupRisks, q, theta) -> tuple[float, float]:
    """(f(theta), a lower bound on min_W f) for f = sum_i q_i R_i, from convexity at ``theta``.

    f(w) >= f(theta) + <grad f(theta), w - theta>, minimized over the ball ||w|| <= rho:
    LB = f(theta) - <grad, theta> - rho ||grad|| (the Frank-Wolfe gap bound). Without a radius the linear
    bound is -inf unless grad = 0 exactly (and the infimum need not be attained), so no bound is certified: NaN.
    """
    value, grad = risks.weighted_value_and_grad(theta, q)
    if risks.radius is None:
        return value, float("nan")
    return value, value - frank_wolfe_gap(theta, grad, risks.radius)


# SLSQP again from its answer while the duality gap is above the status's tolerance and the last run halved it: its
# stopping test is on the dual value (ftol), which near q* is flat to second order, so a run can stop with q's
# small weights unsettled. Measured: Adult by race, 5,000 rows, columns scaled by 1e-6..1e6: the first run stopped
# at a duality gap of 1.7e-5 (the judge's tolerance 1e-5; "Other" weighted 4e-5 while its risk was the largest), one
# more run of 3 iterations left 7.5e-9.
RESTARTS = 3


@few_threads
def solve_dual(risks: GroupRisks, offsets=None, tol: float = 1e-9, max_iter: int = 300, max_memory_gb=None):
    """Exact group DRO through its concave dual, for losses with a Hessian (logistic, squared).

    g(q) = min_{w in W} sum_i q_i (R_i(w) - c_i) is concave on the simplex with gradient R(w(q)) - c
    (Danskin), and max_q g(q) = OPT by the minimax theorem. g is maximized by SLSQP over the
    simplex, each g(q) by the certified projected Newton method (warm started); the primal point is
    w(q*). Returns (theta*, max_i (R_i(theta*) - c_i), q*, record) like :func:`solve_epigraph`; the
    record holds the duality gap max_i (R_i(theta*) - c_i) - g(q*), which certifies the answer.
    """
    if not risks.has_hessian:
        raise OptionError("the dual method needs a twice-differentiable loss of a vector of weights "
                          "(logistic or squared); use method='epigraph'")
    c = np.zeros(risks.m) if offsets is None else np.asarray(offsets, dtype=float)
    state = {"theta": np.zeros(risks.shape), "calls": 0}
    start = time.perf_counter()

    def dual(q):
        q = np.clip(q, 0.0, None)
        q = q / q.sum()
        # as in solve_weighted_erm, a solve on a ball that stops short is bounded by its gap; without a ball the gap
        # is a gradient norm, and the solve must converge
        bounded = risks.radius is not None
        theta, _, inner_gap, _ = newton_weighted_erm(risks, q, state["theta"], tol=1e-11, max_memory_gb=max_memory_gb,
                                                     strict=not bounded)
        state["theta"], state["inner_gap"] = theta, inner_gap if bounded else 0.0
        state["calls"] += 1
        r = risks.risks(theta) - c
        return -float(q @ r), -r

    q, nit, gap = np.full(risks.m, 1.0 / risks.m), 0, np.inf
    for _ in range(1 + RESTARTS):
        res = minimize(dual, q, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * risks.m,
                       constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones_like(q)}],
                       options={"ftol": tol * 1e-3, "maxiter": max_iter})
        q, nit, last = np.clip(res.x, 0.0, None), nit + int(res.nit), gap
        q /= q.sum()
        g_value = -dual(q)[0] - state["inner_gap"]     # a lower bound on g(q) whatever the inner solve's accuracy
        theta = state["theta"]
        primal = float(np.max(risks.risks(theta) - c))
        gap = primal - g_value
        if gap <= 1e3 * tol * max(1.0, abs(primal)) or gap >= 0.5 * last:
            break
    record = {"name": "dual-slsqp-newton", "status": "optimal" if gap <= 1e3 * tol * max(1.0, abs(primal))
              else "optimal_inaccurate",
              "iterations": nit, "inner_solves": state["calls"], "dual_value": g_value,
              "duality_gap": gap, "solve": time.perf_counter() - start, "compile": 0.0, "value": primal,
              "message": str(res.message)}
    if not np.isfinite(primal) or gap > 1e-4 * max(1.0, abs(primal)):     # relative: risks of any scale
        raise SolverError(f"the dual method stopped with duality gap {gap:.3g} ({res.message})", status="inaccurate")
    return theta, primal, q, record
