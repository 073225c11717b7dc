"""Exact CVXPY programs of strategic Wasserstein DRO (Maheshwari, Chiu, Mazumdar, Sastry,
Ratliff, AISTATS 2022: Theorem 5.3 and its proof, with the corrections of docs/minmax.md).

* (E1) the corrected primal with gamma maximized out (an epigraph per y = +1 sample), whose duals give a
  saddle point gamma* (a plain sign(c z_i - kappa alpha) is wrong where c z_i* = kappa alpha*);
* (E3) the inner minimum min_{(theta, alpha) in K_trunc} L(theta, alpha, gamma) of the duality gap;
* (E4) the baselines: strategic logistic ERM ("LogReg SC", trained at a given zeta) and plain logistic ERM.

All DCP: for y = -1 the score x.theta + zeta ||M theta||^2 is convex and enters the non-decreasing
softplus; for y = +1 it is affine. Data enter as constants. Note: E1 and the first-order oracle use the
agents' zeta and mask (a model-based reference); the zeroth-order methods never see them.

On chunked (Dask-backed) rows, (E1) is refused: it has an epigraph variable per row labelled +1, a per-row program
(its objective in the model's parameters alone is not smooth). (E3) is a smooth convex program in theta plus a norm,
solved there by projected Newton steps whose oracle is one pass over the chunks (:func:`inner_min_by_passes`).
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np

from ..data.passes import row_sums
from ..errors import DataError, SolverError
from ..oracles.strategic import C_LABEL, WDRSC, InnerPass
from . import budget, solvers
from .domains import ball_constraint, domain_constraints
from .newton import minimize_on_ball


def _scores(model: WDRSC, theta, zeta=None):
    """(z of the y = +1 rows (affine), z of the y = -1 rows (convex)) as CVXPY expressions."""
    zeta = model.zeta if zeta is None else zeta
    zp = model.X[model.pos] @ theta
    zn = model.X[model.neg] @ theta
    if zeta > 0 and model.mask.any():
        zn = zn + zeta * cp.sum_squares(theta[np.flatnonzero(model.mask)])
    return zp, zn


ALTERNATIVE = ("Use backend='stochastic' (zeroth-order OGDA, one sample per step; order=1 for first-order steps), "
               "or subsample the data")


def wdrsc_program(model: WDRSC, max_memory_gb=None):
    """(problem, theta, alpha, pos_constraints) of (E1): the epigraph
    s_i >= max{phi - c z, phi + c z - 2 kappa alpha}; refused before it is built when its memory estimate exceeds
    the limit (:mod:`fairmodel.exact.budget`)."""
    if model.chunked:
        raise DataError(f"the exact program (E1) of strategic Wasserstein DRO has an epigraph variable for every row "
                        f"labelled +1 (a per-row CVXPY program), so it needs the features in memory; these "
                        f"{model.n} rows are backed by Dask ({model.X.data.n_chunks} chunks). Solve with the "
                        f"stochastic backend, prob.solve(backend='stochastic') (zeroth-order OGDA-RR of Maheshwari et "
                        f"al. 2022, Algorithm 1, reading the rows chunk by chunk; method='ogda-wr', 'sgda-rr' or "
                        f"'sgda-wr' too), or build the problem on an in-memory sample: data.subsample(n, seed=0)")
    budget.check(budget.strategic(model.n, model.p), ALTERNATIVE, max_memory_gb)
    theta, alpha = cp.Variable(model.p, name="w"), cp.Variable(name="alpha")
    zp, zn = _scores(model, theta)
    objective = alpha * (model.delta - model.paper_shift)
    constraints = domain_constraints(model.x_domain, cp.hstack([theta, alpha]))
    pos_constraints = None
    if model.n_pos:
        s = cp.Variable(model.n_pos, name="s")
        c_minus = s >= cp.logistic(-zp)                                   # lambda^- (gamma = -1 branch)
        c_plus = s >= cp.logistic(zp) - 2.0 * model.kappa * alpha         # lambda^+ (gamma = +1 branch)
        pos_constraints = (c_minus, c_plus)
        constraints += [c_minus, c_plus]
        objective = objective + model.mass_pos @ s                       # (1/n) sum_i, or sum_i p_i (weights)
    if model.n_neg:
        objective = objective + model.mass_neg @ cp.logistic(zn)
    return cp.Problem(cp.Minimize(objective), constraints), theta, alpha, pos_constraints


def solve_wdrsc(model: WDRSC, solver=None, verbose=False, max_memory_gb=None):
    """Solve (E1); returns (theta*, alpha*, gamma*, OPT, record).

    gamma*_i = (lambda_i^+ - lambda_i^-) / p_i for y_i = +1 (stationarity in s_i gives lambda^+ + lambda^- = p_i,
    the row's mass, 1/n without weights; gamma_i = 0 for a row of mass 0, which does not enter L), 0 for y_i = -1 (those gamma_i do not enter L, so the saddle point is not unique in them). Raises SolverError
    when alpha* reaches alpha_max (the truncation would change the problem: raise alpha_max).
    """
    problem, theta, alpha, pos_constraints = wdrsc_program(model, max_memory_gb)
    record = solvers.solve(problem, solver, verbose, what="the strategic Wasserstein-DRO program (E1)")
    gamma = np.zeros(model.n)
    if pos_constraints is not None:
        lam_minus = np.asarray(pos_constraints[0].dual_value, dtype=float)
        lam_plus = np.asarray(pos_constraints[1].dual_value, dtype=float)
        p = model.mass_pos
        live = p > 0
        g = np.zeros(p.size)
        g[live] = np.clip((lam_plus - lam_minus)[live] / p[live], -1.0, 1.0)
        gamma[model.pos] = g
        record["dual_sum_error"] = float(np.max(np.abs((lam_plus + lam_minus)[live] / p[live] - 1.0), initial=0.0))
    a = float(alpha.value)
    if a >= model.alpha_max * (1 - 1e-6):
        raise SolverError(f"alpha* = {a:.6g} reached alpha_max = {model.alpha_max:.6g}: the truncated problem differs "
                          f"from the untruncated one; pass a larger alpha_max to wasserstein_worst_case"
                          + (" (the paper's literal objective may be unbounded: its eq. (7) subtracts kappa alpha "
                             "for every sample, not only for y = +1)"
                             if model.variant == "paper" else ""), status="alpha_max_active")
    u = model.x_domain.project(np.concatenate([np.asarray(theta.value, dtype=float), [a]]))
    return u[:-1], float(u[-1]), gamma, float(problem.value), record


def inner_min(model: WDRSC, gamma, solver=None, verbose=False, max_memory_gb=None) -> tuple[float, np.ndarray, float]:
    """(E3) min over (theta, alpha) in K_trunc of L(theta, alpha, gamma): (value, theta, alpha).

    For y = +1: phi(z) + gamma_i c z = softplus(z) + (c (1 + gamma_i) - 1) z. L is linear in alpha with
    coefficient a = delta - kappa (n_+ + sum gamma_i)/n, and alpha ranges over [||theta|| / r, alpha_max]
    (K_trunc), so alpha is eliminated exactly: alpha = ||theta|| / r when a >= 0 (a term a ||theta|| / r),
    alpha = alpha_max when a < 0 (that is why the bound is needed), with ||theta|| <= r alpha_max.
    Eliminating it also avoids the degenerate free direction that stalled Clarabel when a ~ 0.
    On chunked rows: :func:`inner_min_by_passes` (its value a rigorous lower bound).
    """
    if model.chunked:
        return inner_min_by_passes(model, gamma)
    budget.check(budget.strategic(model.n, model.p, judge=True), "The judge reports the duality gap as nan; "
                 "judge on a subsample of the data for a certificate", max_memory_gb,
                 "max_memory_gb= to solve(...) or evaluate(...)")
    gamma = np.asarray(gamma, dtype=float)
    a = model.alpha_coefficient(gamma)
    theta = cp.Variable(model.p, name="w")
    zp, zn = _scores(model, theta)
    slope, top = model.slope, model.alpha_max
    objective = a / slope * cp.norm(theta, 2) if a >= 0 else a * top
    if model.n_pos:
        gp = gamma[model.pos]
        p = model.mass_pos
        linear = model.X[model.pos].T @ (p * (C_LABEL * (1.0 + gp) - 1.0))   # z affine for y = +1
        objective = objective + p @ cp.logistic(zp) + linear @ theta
    if model.n_neg:
        objective = objective + model.mass_neg @ cp.logistic(zn)
    radius = slope * top if model.x_domain.radius is None else min(slope * top, model.x_domain.radius)
    problem = cp.Problem(cp.Minimize(objective), ball_constraint(theta, radius))
    what = "the inner minimum of the duality gap (E3)"
    try:
        solvers.solve(problem, solver, verbose, what=what)
    except SolverError:
        if solver is not None:
            raise
        solvers.solve(problem, "ECOS", verbose, what=what)        # second opinion before giving up
    t = np.asarray(theta.value, dtype=float)
    alpha = float(np.linalg.norm(t)) / slope if a >= 0 else top
    return float(problem.value), t, alpha


NORM_SMOOTHING = 1e-9    # mu of the smoothed norm sqrt(||theta||^2 + mu^2) (relative to the ball's radius)


def inner_min_by_passes(model: WDRSC, gamma, tol: float = 1e-10) -> tuple[float, np.ndarray, float]:
    """(E3) on chunked rows: (a rigorous lower bound on the minimum, theta, alpha), alpha eliminated as in
    :func:`inner_min`, so the objective is h(theta) = g(theta) + (a / r) ||theta|| (a >= 0) or g(theta) + a alpha_max
    (a < 0) over the ball ||theta|| <= r alpha_max, g the smooth part of
    :class:`~fairmodel.oracles.strategic.InnerPass`.

    Projected Newton steps (:func:`fairmodel.exact.newton.minimize_on_ball`), each one pass over the chunks (value,
    gradient and d x d Hessian at once), on h_mu with the norm smoothed as sqrt(||theta||^2 + mu^2) (differentiable
    at 0, where the minimum often is). By convexity h_mu(theta) minus its Frank-Wolfe gap bounds min h_mu from below,
    and h_mu <= h + (a / r) mu, so the value returned, h_mu(theta) - gap - (a / r) mu, is <= min h whatever the
    iterate's accuracy: the duality gap computed from it is an upper bound."""
    gamma = np.asarray(gamma, dtype=float)
    a = model.alpha_coefficient(gamma)
    slope, top = model.slope, model.alpha_max
    radius = slope * top if model.x_domain.radius is None else min(slope * top, model.x_domain.radius)
    c, offset = (a / slope, 0.0) if a >= 0 else (0.0, a * top)
    mu = NORM_SMOOTHING * radius
    coef = np.where(model.pos, model.mass * (C_LABEL * (1.0 + gamma) - 1.0), 0.0)   # r_i of the linear term

    def fun(theta, value_only=False):
        part = row_sums(model.X.data, InnerPass(theta, model.zeta, model.mask, value_only), model.neg, model.mass,
                        coef)
        s = float(np.sqrt(theta @ theta + mu * mu))
        if value_only:
            return part + c * s + offset
        value, grad, hess = part
        return (value + c * s + offset, grad + c * theta / s,
                hess + c * (np.eye(theta.size) / s - np.outer(theta, theta) / s ** 3))

    theta, value, gap = minimize_on_ball(fun, np.zeros(model.p), radius, tol=tol, full_trial=True)
    alpha = float(np.linalg.norm(theta)) / slope if a >= 0 else top
    return value - gap - c * mu, theta, alpha


def logistic_erm(X, y, mask=None, zeta: float = 0.0, ridge: float = 0.0, radius: float | None = None,
                 solver=None, verbose=False) -> np.ndarray:
    """(E4) min_theta (1/n) sum_i log(1 + exp(-y_i z_i(theta))) + ridge ||theta||^2 [, ||theta|| <= radius].

    With zeta > 0 and a mask, z_i is the strategic score (the "LogReg SC" baseline of the paper, trained
    at that zeta); with zeta = 0 it is plain logistic regression. Unregularized ERM diverges on separable
    data: give ridge > 0 or a radius there.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    theta = cp.Variable(X.shape[1], name="w")
    pos, neg = y > 0, y < 0
    z_pos = X[pos] @ theta
    z_neg = X[neg] @ theta
    if zeta > 0 and mask is not None and np.any(mask):
        z_neg = z_neg + zeta * cp.sum_squares(theta[np.flatnonzero(mask)])
    objective = (cp.sum(cp.logistic(-z_pos)) + cp.sum(cp.logistic(z_neg))) / X.shape[0]
    if ridge > 0:
        objective = objective + ridge * cp.sum_squares(theta)
    constraints = ball_constraint(theta, radius)
    solvers.solve(cp.Problem(cp.Minimize(objective), constraints), solver, verbose,
                  what="the logistic ERM baseline (E4)")
    return np.asarray(theta.value, dtype=float)
