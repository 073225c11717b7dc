"""Projected Newton method on a Euclidean ball, certified by the Frank-Wolfe gap.

Solves min_{||theta|| <= rho} f(theta) for a smooth convex f given by value, gradient and Hessian (the
weighted risks of a linear model with a twice-differentiable loss). Each step minimizes the quadratic
model over the ball exactly (eigendecomposition and the secular equation for the multiplier, as in
Moré-Sorensen trust-region steps), then backtracks along the feasible segment (Armijo).

The stopping test is the Frank-Wolfe gap  <grad f(theta), theta> + rho ||grad f(theta)||, an upper bound
on f(theta) - min f by convexity, so the returned lower bound  f(theta) - gap  is rigorous whatever the
iterate's accuracy. Used by the judge for the inner minimum of the group-DRO duality gap, where a conic
interior-point solve of tens of thousands of exponential cones is slow and sometimes stalls.
"""
from __future__ import annotations

import numpy as np

from ..errors import SolverError


def ball_qp_step(H: np.ndarray, b: np.ndarray, rho: float | None) -> np.ndarray:
    """argmin_theta 1/2 theta'H theta - b'theta over ||theta|| <= rho (H symmetric PSD)."""
    lam, V = np.linalg.eigh(H)
    lam = np.maximum(lam, 0.0)
    c = V.T @ b
    tol = 1e-12 * max(lam.max(), 1e-300)
    inv = np.where(lam > tol, 1.0 / np.where(lam > tol, lam, 1.0), 0.0)
    free = V @ (inv * c)
    if rho is None or np.linalg.norm(free) <= rho:
        return free
    lo, hi = 0.0, max(np.linalg.norm(c) / rho, tol)
    for _ in range(200):  # ||theta(mu)|| is decreasing in mu; bisection on a bracketed root
        mid = 0.5 * (lo + hi)
        if np.linalg.norm(c / (lam + mid)) > rho:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(hi, 1.0):
            break
    theta = V @ (c / (lam + hi))
    return theta * min(1.0, rho / np.linalg.norm(theta))


def minimize_on_ball(fun, theta0: np.ndarray, rho: float | None, tol: float = 1e-10,
                     max_iter: int = 100) -> tuple[np.ndarray, float, float]:
    """Minimize ``fun`` (theta -> (value, grad, hessian)) over the ball; returns (theta, value, fw_gap).

    Raises :class:`SolverError` if the gap does not fall below ``tol * max(1, |f|)`` in ``max_iter`` steps.
    Without a radius the gap is ||grad|| (a stationarity measure, not a bound).
    """
    theta = np.array(theta0, dtype=float)
    value, grad, hess = fun(theta)
    gap = np.inf
    for _ in range(max_iter):
        gap = _fw_gap(theta, grad, rho)
        if gap <= tol * max(1.0, abs(value)):
            return theta, value, gap
        target = ball_qp_step(hess, hess @ theta - grad, rho)
        direction = target - theta
        slope = float(grad @ direction)
        if slope >= 0:  # the model step does not descend: numerically converged
            break
        if -slope < 1e-9 * max(1.0, abs(value)):
            # the decrease is below what function values resolve: Armijo cannot verify it, but the Newton
            # step is locally quadratically convergent; take it whole (the gradient-based gap test decides)
            theta = target
            value, grad, hess = fun(theta)
            continue
        t = 1.0
        while True:
            cand = theta + t * direction
            new_value = fun(cand, value_only=True)
            if new_value <= value + 1e-4 * t * slope:
                break
            t *= 0.5
            if t < 1e-10:  # no decrease in floating point: numerically converged (the gap check decides)
                cand = None
                break
        if cand is None:
            break
        theta = cand
        value, grad, hess = fun(theta)
    gap = _fw_gap(theta, grad, rho)
    if gap <= max(tol, 1e-7) * max(1.0, abs(value)):
        return theta, value, gap
    raise SolverError(f"projected Newton did not converge: Frank-Wolfe gap {gap:.3g} after {max_iter} steps",
                      status="max_iterations")


def _fw_gap(theta, grad, rho) -> float:
    if rho is None:
        return float(np.linalg.norm(grad))
    return max(0.0, float(grad @ theta) + rho * float(np.linalg.norm(grad)))
