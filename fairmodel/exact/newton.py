"""Projected Newton method on a Euclidean ball, certified by the Frank-Wolfe gap.

Solves min_{||theta|| <= rho} f(theta) for a smooth convex f given by value, gradient and Hessian (the
weighted risks of a linear model with a twice-differentiable loss). Each step minimizes the quadratic
model over the ball exactly (eigendecomposition and the secular equation for the multiplier, as in
Moré-Sorensen trust-region steps), then backtracks along the feasible segment (Armijo).

The stopping test is the Frank-Wolfe gap  <grad f(theta), theta> + rho ||grad f(theta)||, an upper bound
on f(theta) - min f by convexity, so the returned lower bound  f(theta) - gap  is rigorous whatever the
iterate's accuracy. Used by the judge for the inner minimum of the group-DRO duality gap, where a conic
interior-point solve of tens of thousands of exponential cones is slow and sometimes stalls.

Projected Newton can stall on the boundary of the ball when f is flat in some directions (a one-hot design with
an intercept has exactly collinear columns, and a rare category that the labels separate makes the curvature
vanish along its column): the eigenvectors of the zero and the nearly zero eigenvalues mix, the step's multiplier
for the ball amplifies the gradient's rounding noise along the flat directions, and the iterate stays where its
gradient cannot be antiparallel to it (no descent, a Frank-Wolfe gap far from 0). Such a solve continues with
the primal-dual interior-point method of :mod:`fairmodel.oracles.ipm` on the same function with the ball as its
constraint, from the solve's start (its Newton systems carry the barrier's curvature lambda / rho in every
direction); the Frank-Wolfe gap of its point certifies as before.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from ..errors import SolverError
from ..oracles import ipm
from ..oracles.domains import frank_wolfe_gap, project_ball
from ..oracles.metric import jacobi_scaled


def _pseudo_solve(H: np.ndarray, b: np.ndarray):
    """(x, eigenvalues, eigenvectors): the minimum-norm solution of H x = b (H symmetric PSD; eigenvalues below
    1e-12 of the largest dropped, clipped at 0) and H's eigendecomposition."""
    lam, V = np.linalg.eigh(H)
    lam = np.maximum(lam, 0.0)
    tol = 1e-12 * max(lam.max(), 1e-300)
    inv = np.where(lam > tol, 1.0 / np.where(lam > tol, lam, 1.0), 0.0)
    return V @ (inv * (V.T @ b)), lam, V


def ball_qp_step(H: np.ndarray, b: np.ndarray, rho: float | None, current: np.ndarray | None = None) -> np.ndarray:
    """argmin_theta 1/2 theta'H theta - b'theta over ||theta|| <= rho (H symmetric PSD).

    The unconstrained minimizer is H's minimum-norm solution; where that does not solve H theta = b (its residual
    above 1e-9 of ||b||: a cut relative to H's largest eigenvalue dropped real directions, as on raw data whose
    curvatures range from 1e10 to 1e-2, and a Frank-Wolfe bound built on the step was off by 0.1), it is solved again
    in Jacobi-scaled coordinates (H = D H~ D, D the square roots of H's diagonal), where the cut is relative to each
    coordinate's own curvature, and its component in H's null space (the null space of H~, scaled back) is dropped: the
    minimum-norm solution again (one-hot columns beside an intercept on raw units: the scaled solution's norm was 7.3
    where the minimum-norm one's is 6.8). On the sphere the multiplier is bracketed on H's eigenvalues and the answer
    is refined in the same scaled coordinates (:func:`_sphere_refined`).

    ``current`` (the iterate the step starts from): an unconstrained solution inside the ball whose model value is not
    below the current point's is not a minimizer (b has a part outside H's range that the solve lost, the model falls
    without bound along it, as a smoothed hinge's Hessian of rank 20 of 103 on raw units): the answer is on the
    sphere then."""
    free, lam, V = _pseudo_solve(H, b)
    residual = float(np.linalg.norm(H @ free - b))
    Hs, d = jacobi_scaled(H)
    if residual > 1e-9 * float(np.linalg.norm(b)):
        with np.errstate(over="ignore", invalid="ignore"):     # a coordinate of curvature ~0: a huge candidate
            scaled, lam_s, U = _pseudo_solve(Hs, b / d)
            scaled /= d
            null = U[:, lam_s <= 1e-12 * max(lam_s.max(), 1e-300)] / d[:, None]    # H's null space: D^-1 (H~'s)
            if null.shape[1]:       # the minimum-norm solution in theta (not in D theta): drop its null component
                scaled -= null @ np.linalg.lstsq(null, scaled, rcond=None)[0]
            if np.all(np.isfinite(scaled)) and np.linalg.norm(H @ scaled - b) < residual:
                free = scaled
    inside = rho is None or np.linalg.norm(free) <= rho
    if inside and (rho is None or current is None or _model(H, b, free) < _model(H, b, current)):
        return free
    c = V.T @ b
    tol = 1e-12 * max(lam.max(), 1e-300)
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
    theta *= min(1.0, rho / np.linalg.norm(theta))
    with np.errstate(over="ignore", invalid="ignore"):
        refined = _sphere_refined(Hs, d, b, rho, hi)
    if refined is not None and np.all(np.isfinite(refined)) and _model(H, b, refined) < _model(H, b, theta):
        return refined
    return theta


def _model(H, b, theta) -> float:
    return float(0.5 * theta @ (H @ theta) - b @ theta)


def _sphere_refined(Hs, d, b, rho, mu, steps: int = 20):
    """theta(mu) = (H + mu I)^{-1} b on the sphere ||theta|| = rho, by Newton's method on the secular equation
    1 / ||theta(mu)|| = 1 / rho from the bracketed mu (Moré and Sorensen 1983), each theta(mu) by a Cholesky
    factorization in Jacobi-scaled coordinates: D^{-1} (H~ + mu D^{-2})^{-1} D^{-1} b. H's eigenvalues carry an absolute
    error of about 1e-16 of the largest, so on raw units (curvatures 4e9 beside 1e-3) the eigenbasis answer errs in
    the flat directions by more than the step it takes there: on 5,000 raw Adult rows projected Newton's steps stopped
    descending at a Frank-Wolfe gap 45x its tolerance; the scaled factorization is accurate relative to each
    coordinate's own curvature. ``Hs, d``: H's Jacobi-scaled form (:func:`jacobi_scaled`). None when a factorization
    fails (then the eigenbasis answer stands)."""
    bs, inv_d2 = b / d, 1.0 / (d * d)
    theta = None
    for _ in range(steps):
        A = Hs + np.diag(mu * inv_d2)
        if not np.all(np.isfinite(A)):        # a coordinate of curvature ~0 (a smoothed hinge's rows all flat)
            return None
        try:
            factor = cho_factor(A, lower=True)
        except np.linalg.LinAlgError:
            return theta
        xs = cho_solve(factor, bs)
        theta = xs / d
        norm = float(np.linalg.norm(theta))
        psi = 1.0 / norm - 1.0 / rho
        if abs(psi) <= 1e-15 / rho:
            break
        w = solve_triangular(factor[0], inv_d2 * xs, lower=True)   # d||theta||^2/dmu = -2 ||w||^2
        slope = float(w @ w) / norm ** 3
        if not slope > 0:
            break
        mu = mu - psi / slope if mu - psi / slope > 0 else 0.1 * mu
    return theta * (rho / np.linalg.norm(theta))


def minimize_on_ball(fun, theta0: np.ndarray, rho: float | None, tol: float = 1e-10,
                     max_iter: int = 100, full_trial: bool = False, strict: bool = True) -> tuple[np.ndarray, float, float]:
    """Minimize ``fun`` (theta -> (value, grad, hessian)) over the ball; returns (theta, value, fw_gap).

    ``full_trial``: evaluate the whole Newton step's (value, grad, hessian) at once, and reuse them when the
    step is accepted (for oracles where one call is one pass over chunked data and the Hessian costs little
    more than the value: one pass per accepted step instead of two).

    A strict solve that stalls on a ball is done again by the interior-point method (:func:`minimize_on_ball_ipm`)
    from ``theta0`` (not from the stalled iterate, which carries the noise amplified along the flat directions: on
    Adult's covariance composition the method stalled from there after 50 steps, and from ``theta0`` converged in
    6); a solve with ``strict=False`` wants a point, not a certified minimum, and returns the stalled one (the
    interior-point solve doubled the time of the smoothed-hinge certificates, which stall at small smoothing). Raises :class:`SolverError` if the gap does not fall below ``tol * max(1, |f|)`` in ``max_iter``
    steps (``strict=False``: returns the best iterate and its gap instead, e.g. for a point at which a bound is
    computed). Without a radius the gap is ||grad|| (a stationarity measure, not a bound).
    """
    steps = newton_steps(theta0, rho, tol, max_iter, full_trial, strict=False)
    try:
        theta, value_only = next(steps)
        while True:
            theta, value_only = steps.send(fun(theta, value_only=True) if value_only else fun(theta))
    except StopIteration as done:
        theta, value, gap = done.value
    if rho is not None and strict and not accepted(value, gap, tol):
        found = minimize_on_ball_ipm(fun, theta0, rho, tol, max_iter)
        # its point if it converged, else the point with the better lower bound value - gap (both are rigorous)
        if accepted(found[1], found[2], tol) or found[1] - found[2] > value - gap:
            theta, value, gap = found
    return _converged(theta, value, gap, tol, max_iter, strict)


def minimize_on_ball_ipm(fun, theta0: np.ndarray, rho: float, tol: float = 1e-10,
                         max_iter: int = 100) -> tuple[np.ndarray, float, float]:
    """Minimize ``fun`` (as :func:`minimize_on_ball`) over ||theta|| <= rho by the primal-dual interior-point method
    of :mod:`fairmodel.oracles.ipm` with the one constraint (||theta||^2 - rho^2) / (2 rho) <= 0 from ``theta0``;
    returns (theta, value, fw_gap) at its last point (scaled into the ball), or at ``theta0`` when the method
    fails. Each oracle call evaluates ``fun`` in full (the method's trial points need the gradient), and the
    Hessian of an accepted trial point is reused."""
    last = {}

    def oracle(x, lam, hessian):
        if last.get("x") is None or not np.array_equal(last["x"], x):
            last["x"], last["out"] = x.copy(), fun(x)
        value, grad, hess = last["out"]
        H = hess + float(lam[0]) / rho * np.eye(x.size) if hessian else None
        return ipm.Point(value, grad, np.array([(x @ x - rho * rho) / (2.0 * rho)]), (x / rho)[None, :], H)

    start = np.array(theta0, dtype=float)
    try:
        result = ipm.solve(oracle, start, tol=tol, gap_tol=tol, max_iter=max_iter, reset=np.array([0]))
        theta = project_ball(result.x, rho)
    except SolverError:
        theta = project_ball(start, rho)
    value, grad, _ = fun(theta)
    return theta, value, _fw_gap(theta, grad, rho)


def accepted(value, gap, tol) -> bool:
    """Whether a solve has converged: its gap within ``tol`` (at least 1e-7, what a Newton step resolves in
    floating point) relative to max(1, |value|)."""
    return gap <= max(tol, 1e-7) * max(1.0, abs(value))


def _converged(theta, value, gap, tol, max_iter, strict):
    """(theta, value, gap), or :class:`SolverError` when ``strict`` and the solve has not converged."""
    if accepted(value, gap, tol) or not strict:
        return theta, value, gap
    raise SolverError(f"projected Newton (and its interior-point continuation) did not converge: Frank-Wolfe gap "
                      f"{gap:.3g} after {max_iter} steps",
                      status="max_iterations")


def minimize_many_on_ball(batch_fun, starts: list, rho: float | None, tol: float = 1e-10, max_iter: int = 100,
                          full_trial: bool = False) -> list[tuple[np.ndarray, float, float]]:
    """Several independent problems solved in lockstep, each exactly as :func:`minimize_on_ball` would: every
    round, the oracle requests of the unfinished solves go to one call ``batch_fun({k: (theta, value_only)})``
    that returns ``{k: result}`` (e.g. one pass over chunked data for the m group optima of MERO)."""
    solves = [newton_steps(s, rho, tol, max_iter, full_trial) for s in starts]
    out = [None] * len(solves)
    pending = {k: next(g) for k, g in enumerate(solves)}
    while pending:
        answers, pending = batch_fun(pending), {}
        for k, answer in answers.items():
            try:
                pending[k] = solves[k].send(answer)
            except StopIteration as done:
                out[k] = done.value
    return out


def newton_steps(theta0: np.ndarray, rho: float | None, tol: float = 1e-10, max_iter: int = 100,
                 full_trial: bool = False, strict: bool = True):
    """The projected Newton method as a generator: it yields oracle requests ``(theta, value_only)`` and is sent
    ``value`` (value_only) or ``(value, grad, hessian)``; it returns (theta, value, fw_gap) (see
    :func:`minimize_on_ball`)."""
    theta = np.array(theta0, dtype=float)
    value, grad, hess = yield theta, False
    gap, best = np.inf, None
    for _ in range(max_iter):
        gap = _fw_gap(theta, grad, rho)
        if gap <= tol * max(1.0, abs(value)):
            return theta, value, gap
        # the iterate of the smallest gap is the answer: where rounding limits the steps along a sphere, whole steps
        # can raise the gap again (4,000 raw Adult rows at radius 50: 6.9e-9, then 9.5e-6, 3.2e-5, 1.3e-4). Stopping
        # after a few such steps was tried: it cut the smoothed hinge's solves short, whose gaps rise and fall on the
        # way (group DRO on 1,000 rows with 200 features: the judge's gap 6x larger)
        if best is None or gap < best[2]:
            best = (theta, value, gap)
        elif accepted(best[1], best[2], tol):
            break           # a step that does not improve on an accepted iterate: the steps are at rounding level
        target = ball_qp_step(hess, hess @ theta - grad, rho, theta)
        direction = target - theta
        slope = float(grad @ direction)
        resolution = 1e-9 * max(1.0, abs(value))
        if slope >= resolution:  # the model step does not descend: numerically converged
            break
        if slope >= 0:
            # the slope's sign is rounding: on a sphere the radial part of a step of length s adds mu s^2 / 2 > 0 and
            # the tangential part subtracts about as much (measured: 4e-19 each on raw units, the Frank-Wolfe gap 10x
            # its tolerance); take the step if it lowers the gap, else stop where it was
            previous = theta, value, grad, hess
            theta = target
            value, grad, hess = yield theta, False
            if _fw_gap(theta, grad, rho) >= gap:
                theta, value, grad, hess = previous
                break
            continue
        if -slope < resolution:
            # the decrease is below what function values resolve: Armijo cannot verify it, but the Newton
            # step is locally quadratically convergent; take it whole (the gradient-based gap test decides)
            theta = target
            value, grad, hess = yield theta, False
            continue
        t, trial = 1.0, None
        while True:
            cand = theta + t * direction
            trial = (yield cand, False) if full_trial and t == 1.0 else None
            new_value = trial[0] if trial is not None else (yield cand, True)
            if new_value <= value + 1e-4 * t * slope:
                break
            t *= 0.5
            if t < 1e-10:  # no decrease in floating point: numerically converged (the gap check decides)
                cand = None
                break
        if cand is None:
            break
        theta = cand
        value, grad, hess = trial if trial is not None else (yield theta, False)
    gap = _fw_gap(theta, grad, rho)
    if best is not None and best[2] < gap:
        theta, value, gap = best
    return _converged(theta, value, gap, tol, max_iter, strict)


def _fw_gap(theta, grad, rho) -> float:
    """The Frank-Wolfe gap on the ball of radius rho; without a radius the gradient norm (the stationarity test)."""
    if rho is None:
        return float(np.linalg.norm(grad))
    return frank_wolfe_gap(theta, grad, rho)


def minimize_on_ball_first_order(fun, theta0: np.ndarray, rho: float, tol: float = 1e-8,
                                 max_iter: int = 2000, coordinates=None,
                                 enough=None) -> tuple[np.ndarray, float, float]:
    """Minimize a convex ``fun`` (theta -> (value, grad)) over the ball ||theta|| <= rho by accelerated projected
    gradient (FISTA with backtracking, Beck and Teboulle 2009); returns (theta, value, fw_gap).

    For convex functions without a Hessian (sums of hinge-like pieces, norms, general expression trees). The
    Frank-Wolfe gap of the best iterate bounds its suboptimality whatever its accuracy, so ``value - gap`` is a
    rigorous lower bound even when the gap has not reached ``tol * max(1, |f|)`` within ``max_iter`` steps.
    ``coordinates`` (a :class:`~fairmodel.oracles.metric.Coordinates` of the ball of radius ``rho``): run the
    method in preconditioned coordinates (badly scaled or collinear features then cost tens of steps, not
    thousands); the Frank-Wolfe gap is computed in theta, so the bound is the same certificate. ``enough(value,
    gap) -> bool``: stop at an iterate that it accepts (e.g. when the bound already decides what it is for), and
    return that iterate.
    """
    if coordinates is None:
        u, value, gap = _fista(fun, np.array(theta0, dtype=float), lambda z: project_ball(z, rho),
                               lambda x, g: _fw_gap(x, g, rho), tol, max_iter, enough)
        return u, value, gap
    c = coordinates

    def fun_u(u):
        value, grad = fun(c.to_theta(u))
        return value, c.gradient_to_u(grad)
    u, value, gap = _fista(fun_u, c.to_u(np.array(theta0, dtype=float)), c.project,
                           lambda x, g: _fw_gap(c.to_theta(x), c.gradient_to_theta(g), rho), tol, max_iter, enough)
    return c.to_theta(u), value, gap


def _fista(fun, x0, project, fw_gap, tol, max_iter, enough=None):
    """FISTA with backtracking and adaptive restarts from x0; the best iterate by the Frank-Wolfe gap ``fw_gap``, or
    the first that ``enough(value, gap)`` accepts."""
    x = project(x0)
    fx, gx = fun(x)
    best = (fw_gap(x, gx), x, fx)
    y, t, step = x.copy(), 1.0, 1.0 / max(float(np.linalg.norm(gx)), 1.0)
    for _ in range(max_iter):
        fy, gy = fun(y)
        while True:
            x_new = project(y - step * gy)
            d = x_new - y
            f_new, g_new = fun(x_new)
            if f_new <= fy + float(np.vdot(gy, d)) + float(np.vdot(d, d)) / (2.0 * step) + 1e-15 * max(1.0, abs(fy)):
                break
            step *= 0.5
            if step < 1e-20:
                return best[1], best[2], best[0]
        gap = fw_gap(x_new, g_new)
        if enough is not None and enough(f_new, gap):
            return x_new, f_new, gap
        if gap < best[0]:
            best = (gap, x_new, f_new)
        if gap <= tol * max(1.0, abs(f_new)):
            break
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        y = x_new + ((t - 1.0) / t_new) * (x_new - x)
        if f_new > fx:            # adaptive restart (O'Donoghue and Candes 2015): drop the momentum
            y, t_new = x_new.copy(), 1.0
        x, fx, t = x_new, f_new, t_new
        step *= 1.5
    return best[1], best[2], best[0]
