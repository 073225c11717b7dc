"""A primal-dual interior-point method for smooth convex programs in a small space.

    min_x  f(x)   s.t.   g_j(x) <= 0,  j = 1..m

with f and every g_j convex and twice differentiable, given by one oracle that returns f, grad f, g, the Jacobian
J of g and (when asked) the Hessian of the Lagrangian H = grad^2 f + sum_j lambda_j grad^2 g_j. With slacks s > 0
(g(x) + s = 0) and multipliers lambda > 0 the KKT residuals are

    r_d = grad f + J' lambda,    r_p = g + s,    r_c = S lambda - sigma mu e,     mu = s' lambda / m,

and each Newton system is reduced to the n x n system (H + J' S^-1 Lambda J) dx = -r_d - J' S^-1 (Lambda r_p - r_c)
(Nocedal and Wright, *Numerical Optimization*, 2006, eq. (19.12) with the slacks eliminated). Mehrotra's
predictor-corrector chooses sigma (Wright, *Primal-Dual Interior-Point Methods*, 1997, ch. 10), the steps keep
s and lambda positive by the fraction-to-the-boundary rule, and a backtracking search on the norm of the KKT
residual keeps the nonlinear constraints from undoing a step; a corrector step the search refuses is replaced by the
plain centred Newton step, which descends the residual's norm. The Newton matrix is factored, and its dual residual
measured, in Jacobi-scaled coordinates: data in raw units (Adult's fnlwgt beside indicators) put the diagonal 1e10
apart, and a ridge or a norm in the original coordinates would see only the largest. The method stops when the
relative residuals and the complementarity gap s' lambda (which, at r_p = r_d = 0, is the Lagrangian duality gap)
are below the tolerances.
The space is small (model parameters plus a few epigraph variables): one dense Cholesky factorization per step.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from ..errors import SolverError
from .metric import jacobi_scaled

STEP_FRACTION = 0.995     # fraction to the boundary of the positive orthant (Wright 1997, ch. 10)
ARMIJO = 1e-2             # sufficient decrease of the KKT residual norm per unit step
BACKTRACK = 0.5
MAX_BACKTRACKS = 30
FLOOR_SHARE = 0.1         # mu is kept above this share of mu_0 times the relative infeasibility left
# A run that stalls (no step reduces the KKT residual: the Newton systems have lost their last digits) with every
# relative residual at most this returns its point as "acceptable" instead of failing, as Ipopt's acceptable level
# does (Waechter and Biegler 2006, Section 3.9, whose default is 1e-6); the caller's certificate decides.
# Measured: a group-DRO program under an equal-opportunity bound on 10,000 synthetic rows stalled at relative
# residuals 5.8e-10 (dual), 1.9e-14 (primal), 1.9e-9 (gap) against its tolerance 1e-9.
ACCEPTABLE = 1e-6
# A run whose largest relative residual has not fallen below STALL_SHARE of its value STALL_WINDOW iterations ago
# has stalled as surely as one with no step at all (its steps are accepted by the merit but are a few units of
# 2^-30 long; measured on an infeasible program: 100 such iterations where the no-step rule had stopped at 2).
STALL_WINDOW = 10
STALL_SHARE = 0.9


@dataclass
class Point:
    """The oracle's answer at x: f, grad f, g (m,), J (m x n) and, when asked, the Lagrangian's Hessian H."""

    f: float
    grad: np.ndarray
    g: np.ndarray
    J: np.ndarray
    H: np.ndarray | None = None


@dataclass
class IPMResult:
    x: np.ndarray
    lam: np.ndarray
    s: np.ndarray
    f: float
    status: str                       # "optimal", "acceptable" (stalled within ACCEPTABLE) or "max_iter"
    iterations: int
    residuals: dict = field(default_factory=dict)
    history: list = field(default_factory=list)


def step_to_boundary(v: np.ndarray, dv: np.ndarray, fraction: float = STEP_FRACTION) -> float:
    """The largest alpha in (0, 1] with v + alpha dv >= (1 - fraction) v (v > 0)."""
    neg = dv < 0
    if not np.any(neg):
        return 1.0
    return float(min(1.0, fraction * np.min(-v[neg] / dv[neg])))


def _residuals(p: Point, lam, s):
    return p.grad + p.J.T @ lam, p.g + s


def _merit(r_d, r_p, s, lam, target: float, scale) -> float:
    """The norm of the KKT residual with the complementarity measured from this step's target sigma mu (the
    direction aims there: a merit with target 0 would refuse the centering steps) and the dual residual in the
    Jacobi-scaled coordinates of this step's Newton matrix (``scale`` = diag(K)^-1/2)."""
    r_c = s * lam - target
    r_d = r_d * scale
    return float(np.sqrt(r_d @ r_d + r_p @ r_p + r_c @ r_c))


def _factor(K: np.ndarray):
    """A Cholesky factor of the symmetric positive semidefinite K in Jacobi-scaled form (D^-1 K D^-1 with D the square
    roots of K's diagonal, :func:`~fairmodel.oracles.metric.jacobi_scaled`, so that the ridge a singular K needs is
    relative to every coordinate, not to the largest: raw units put columns 10 orders of magnitude apart), with a small
    ridge when it is singular, and D^-1; :func:`_solve` applies them."""
    Ks, d = jacobi_scaled(K)
    for ridge in (1e-12, 1e-10, 1e-8, 1e-6):    # a ridge always: collinear features make K singular
        try:
            return sla.cho_factor(Ks + ridge * np.eye(K.shape[0]), check_finite=False), 1.0 / d
        except (np.linalg.LinAlgError, ValueError):
            continue
    raise SolverError("the interior-point Newton system is singular (the problem may be unbounded or degenerate)",
                      status="numerical")


def _solve(factor, b: np.ndarray) -> np.ndarray:
    cho, inv_d = factor
    return inv_d * sla.cho_solve(cho, inv_d * b, check_finite=False)


def _worst(record: dict) -> float:
    return max(record["dual"], record["primal"], record["gap"])


def _stalled(x, lam, s, p: Point, it: int, res: dict, history: list, why: str) -> IPMResult:
    """The point of a stalled run as "acceptable" when every relative residual is within ACCEPTABLE; else raise."""
    if max(res.values()) <= ACCEPTABLE:
        return IPMResult(x, lam, s, p.f, "acceptable", it, res, history)
    raise SolverError(f"the interior-point method stalled at iteration {it}: {why} (relative residuals {res})",
                      status="numerical")


def solve(oracle, x0: np.ndarray, tol: float = 1e-8, gap_tol: float = 1e-8, max_iter: int = 100,
          slack0: float = 1.0, reset=None) -> IPMResult:
    """Minimize f subject to g <= 0 from ``x0`` (need not be feasible).

    ``oracle(x, lam, hessian)`` returns a :class:`Point` (H the Hessian of f + lam' g when ``hessian``). Stops when
    ||r_d||_inf <= tol (1 + ||grad f||_inf), ||r_p||_inf <= tol (1 + ||g||_inf at the start) and
    s' lambda <= gap_tol (1 + |f|). Raises :class:`SolverError` when the Newton system cannot be solved or a step
    cannot reduce the residual before every relative residual is within :data:`ACCEPTABLE` (then the status is
    "acceptable").

    ``reset``: indices of nonlinear constraints whose slack is reset to -g(x) at every trial point where g(x) < 0
    (the slack of a strictly satisfied constraint, e.g. a ball, then carries no residual: without it the
    linearization error of g makes ||g + s|| grow with the steps and blocks them)."""
    x = np.asarray(x0, dtype=float).copy()
    p = oracle(x, None, False)
    m = p.g.size
    s = np.maximum(-p.g, slack0)
    lam = np.full(m, 1.0) if m else np.zeros(0)
    lam = lam * max(1.0, float(np.max(np.abs(p.grad)))) / max(1.0, float(np.max(np.abs(p.J)))) if m else lam
    p_scale = 1.0 + float(np.max(np.abs(p.g))) if m else 1.0
    history, start = [], None
    for it in range(max_iter + 1):
        p = oracle(x, lam, True)
        r_d, r_p = _residuals(p, lam, s)
        gap = float(s @ lam)
        res = {"dual": float(np.max(np.abs(r_d))) / (1.0 + float(np.max(np.abs(p.grad)))),
               "primal": float(np.max(np.abs(r_p))) / p_scale if m else 0.0,
               "gap": gap / (1.0 + abs(p.f))}
        history.append({"iteration": it, "f": p.f, **res})
        start = start or (max(res["primal"], res["dual"], 1e-300), gap / max(m, 1))
        if res["dual"] <= tol and res["primal"] <= tol and res["gap"] <= gap_tol:
            return IPMResult(x, lam, s, p.f, "optimal", it, res, history)
        if it == max_iter:
            break
        if it >= STALL_WINDOW and _worst(history[-1]) > STALL_SHARE * _worst(history[-1 - STALL_WINDOW]):
            return _stalled(x, lam, s, p, it, res, history,
                            f"the residuals fell by less than {1 - STALL_SHARE:.0%} in {STALL_WINDOW} iterations")
        w = lam / s if m else np.zeros(0)
        K = p.H + (p.J.T * w) @ p.J if m else p.H
        factor = _factor(0.5 * (K + K.T))
        scale = factor[1]

        def direction(r_c):
            # ds = -r_p - J dx;  lambda ds + s dlam = -r_c  =>  dlam = (-r_c + lam r_p + lam J dx) / s
            if not m:
                return _solve(factor, -r_d), s, lam
            dx = _solve(factor, -r_d - p.J.T @ ((lam * r_p - r_c) / s))
            ds = -r_p - p.J @ dx
            dlam = (-r_c - lam * ds) / s
            return dx, ds, dlam

        if m:
            mu = gap / m
            dx, ds, dlam = direction(s * lam)                      # the affine-scaling (predictor) direction
            a_aff = min(step_to_boundary(s, ds, 1.0), step_to_boundary(lam, dlam, 1.0))
            mu_aff = float((s + a_aff * ds) @ (lam + a_aff * dlam)) / m
            sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0
            # complementarity may not fall faster than the infeasibility (the neighbourhood of the infeasible
            # path-following methods, Wright 1997, ch. 6): a mu near 0 while g + s != 0 jams the slacks at 0
            floor = FLOOR_SHARE * start[1] * max(res["primal"], res["dual"]) / start[0]
            sigma = min(1.0, max(sigma, floor / mu)) if mu > 0 else sigma
            target = sigma * mu
            # Mehrotra's corrector, then the plain centred direction: the corrector's second-order term
            # (ds_aff * dlam_aff) is a guess for a linear complementarity; on a nonlinear program it can make the
            # direction ascend the merit (measured: raw-unit Adult, logistic loss under an equalized-odds bound, every
            # step cut to 0.004-0.03 and 100 iterations; with the fallback, full steps and 27 iterations)
            candidates = [(direction(s * lam + ds * dlam - target), 1), (direction(s * lam - target), MAX_BACKTRACKS)]
        else:
            target = 0.0
            candidates = [(direction(None), MAX_BACKTRACKS)]
        merit = _merit(r_d, r_p, s, lam, target, scale)

        def trial(dx, ds, dlam, alpha):
            """The point a step alpha reaches, or None when it does not decrease the merit enough."""
            x_new, s_new, lam_new = x + alpha * dx, s + alpha * ds, lam + alpha * dlam
            q = oracle(x_new, lam_new, False)
            if reset is not None:
                inside = reset[q.g[reset] < 0]
                s_new[inside] = -q.g[inside]
            if not (np.isfinite(q.f) and np.all(np.isfinite(q.g))):
                return None
            r_d_new, r_p_new = _residuals(q, lam_new, s_new)
            if _merit(r_d_new, r_p_new, s_new, lam_new, target, scale) > (1.0 - ARMIJO * alpha) * merit:
                return None
            return x_new, s_new, lam_new

        accepted = None
        for (dx, ds, dlam), tries in candidates:
            alpha = min(step_to_boundary(s, ds), step_to_boundary(lam, dlam)) if m else 1.0
            for _ in range(tries):
                accepted = trial(dx, ds, dlam, alpha)
                if accepted is not None:
                    break
                alpha *= BACKTRACK
            if accepted is not None:
                break
        if accepted is None:
            return _stalled(x, lam, s, p, it, res, history, "no step reduces the KKT residual")
        x, s, lam = accepted
        history[-1]["step"] = alpha
    return IPMResult(x, lam, s, p.f, "max_iter", max_iter, res, history)
