"""The IDCA subproblem (25) when its working set would hold a large share of the rows: follow the central path by
passes to a point near the minimizer, holding no hinge in memory, then finish exactly on the few hinges still near a
kink there.

Why: the working set of :mod:`fairmodel.oracles.dc_working_set` keeps the hinges near their kink *at the anchor*,
within the previous step's change. IDCA's first steps move most scores across a kink (28-77 % of the hinges on Law
School), and an exact subproblem needs each of those in memory. Near the subproblem's own minimizer, however, only a
few percent of the hinges lie near a kink. The path-following phase finds such a point without holding any.

Path following. Subproblem (25) in epigraph form (:mod:`fairmodel.oracles.dc_ipm`) has, per hinge (i, r), a slack
t >= pos(y_ir) and two multipliers, and per constraint a multiplier λ_i. On the weighted central path of
:mod:`~fairmodel.oracles.dc_ipm` at the barrier parameter τ (the n_i hinges of constraint i target τ / n_i, the
constraint τ), the slack minimizes ℓ t - κ log t - κ log(t - y) with ℓ = λ_i / n_i and κ = τ / n_i. Its stationarity
ℓ = κ / t + κ / (t - y) is a quadratic in t with the closed-form root

    t = (y + 2ρ + R) / 2,   s = t - y = (2ρ - y + R) / 2,   R = sqrt(y^2 + 4ρ^2),   ρ = κ / ℓ = τ / λ_i,

and the hinge's weight (the multiplier of t >= y over ℓ) is u = ρ / s in (0, 1). Eliminating every hinge this way
leaves a saddle function of (v, λ) alone,

    Φ_τ(v, λ) = F(v) + q(v) + sum_i λ_i (q(v) - s_i . v - c_i) + sum_ir h(y_ir(v), λ_i / n_i) + τ sum_i log λ_i,

with h(y, ℓ) = min_t [ℓ t - κ log t - κ log(t - y)] (∂h/∂y = ℓ u, ∂h/∂ℓ = t), convex in v and concave in λ. Its
stationary point is the point of the central path at τ: the Lagrangian's gradient in v with the hinge weights u is
0, and G_i + τ / λ_i = 0 with G_i = (1/n_i) sum_r t_ir - s_i . v - c_i + q(v) >= g_i(v). Each Newton step on
∇Φ_τ = 0 (a symmetric quasi-definite (D + m) system) is one pass over the rows: per chunk, every hinge's centred t,
u and their derivatives in (y, λ, τ), summed into D x D and m x D arrays (:class:`_CentredSums`). F enters through
its Newton model, re-centred a few times as in :mod:`~fairmodel.oracles.dc_ipm`. The client holds O(D^2 + m D)
numbers. A step at fixed τ is halved while the residual of ∇Φ_τ = 0 does not fall; once the iterate is centred
(Newton decrement sqrt((dx' H dx + dλ' C dλ) / τ) <= :data:`CENTRED`) τ falls by :data:`SIGMA`, the step aiming at
the new τ with the first-order change of the residuals in τ (no extra pass). The phase ends centred at
:data:`TAU_END` (relative to 1 + |F(a)|): hinges farther than a few ρ from their kink are decided there, and the
minimizer is close.

Finish: the working-set method of :mod:`~fairmodel.oracles.dc_working_set`, its hinges classified at the centred
point x_c instead of the anchor (any classification gives a relaxation of (25); the sign check at its answer adds
the misclassified hinges and solves again), radius :data:`RADIUS` x τ / max(1, max_i λ_i). Measured on Law School (800 and
5,000 rows) and random programs at IDCA anchors 0-6: 13-19 passes to the centre, then 2-3 scans with 0.5-3.4 % of
the hinges in the working set, where the anchor's working set held up to 100 %. The answer, its certificate and
its accuracy are the working-set method's: the same minimizer of (25) as a solve of every hinge.

A tie (:func:`central_step`): where many hinges sit at their kink at the minimizer itself (IDCA's first step from
w = 0, every score equal), the working set at the centre holds them all too. Exact IDCA then takes the central point
as its step instead: strictly feasible, within the path's duality gap of the minimizer, never a stopping point.

The exact solves route a working set through the centre only when it holds more than SHARE of the hinges and more
than :data:`SMALL` of them: a small data set's hinges are solved where they are.
"""
from __future__ import annotations

import numpy as np

from ..data.passes import row_sums
from ..utilities.threads import one_thread
from .dc_hinges import row_factors, scores
from .dc_ipm import NewtonModels
from .dc_working_set import WideWorkingSet, solve_with_working_set
from .losses import LinearModelLoss

SHARE = 0.1          # a working set at the anchor of more than this share of the hinges: choose it at the centre
SMALL = 4096         # hinges: an exact solve's working set of at most this many is solved where it is, whatever its
                     # share (on Communities' 1,388 rows, 2,776 hinges, the central path's passes each form the
                     # Hessian X' D X of 118 features: six fits, the three rate gaps at 0.1 and 0.02, one thread,
                     # one after the other under the same load, took 8.7-21.9 s with the central path and 4.7-19.1 s
                     # without, 1.1x-3.6x less, to the same objectives within 1e-6)
CENTRED = 0.5        # Newton decrement (per sqrt(τ)) below which an iterate is centred: τ then falls
SIGMA = 0.1          # the fall of τ once centred
FRACTION = 0.99      # a step keeps λ above (1 - FRACTION) of its value
TAU_START = 1e-2     # τ at the start and at the end of the path-following phase, relative to 1 + |F(a)|: measured
TAU_END = 1e-4       # (Law School, random programs) 13-19 passes from λ = 1; a start at 1e-1 took 3-8x more passes,
                     # and the multipliers of the previous subproblem as a start 1.6x more
RADIUS = 10.0        # the finish's working set: the hinges within RADIUS x τ / max(1, max_i λ_i) of their kink at the
                     # centre (ρ_i = τ / λ_i is the smoothing of constraint i's hinges; with every constraint
                     # inactive, λ -> 0, a radius of 10 τ: the sign check adds what it misclassified)
POLISH = 1e-10       # with ``exact``: the residual of the central point at TAU_END, relative to 1 + |F(a)|
BACKTRACK = 8        # halvings of a step at fixed τ whose residual does not fall
MAX_ITER = 100       # Newton steps (passes) of the path-following phase


class _CentredSums:
    """One chunk's part of a pass (module docstring): per family f (a hinge average, constraint idx[f]) over its
    cell's rows, with the design rows e_r = u_r scale (x_r, 1):

    ``t`` sum t, ``dt_drho`` sum ∂t/∂ρ, ``u_e`` / ``u_1`` sum u e_r / sum u, ``dty_e`` / ``dty_1`` sum ∂t/∂y e_r /
    sum ∂t/∂y, ``psi_e`` / ``psi_1`` sum ψ e_r / sum ψ with ψ = ℓ ∂u/∂y, ``dur_e`` / ``dur_1`` sum ∂u/∂ρ e_r / sum
    ∂u/∂ρ, and ``gram`` sum_r (sum_f ψ_rf) e_r e_r'."""

    def __init__(self, theta, cuts, rho, ell, intercept: bool, scale: float, cell):
        self.theta, self.cuts, self.rho, self.ell = theta, cuts, rho, ell
        self.intercept, self.scale, self.cell = intercept, scale, cell

    def __call__(self, batch, codes, u=None):
        F = self.cell.size
        Dw = self.theta.size
        factors = row_factors(codes, u)
        z = self.scale * scores(batch, self.theta, self.intercept)
        out = {k: np.zeros(F) for k in ("t", "dt_drho", "u_1", "dty_1", "psi_1", "dur_1")}
        out.update({k: np.zeros((F, Dw)) for k in ("u_e", "dty_e", "psi_e", "dur_e")})
        psi_rows = np.zeros(codes.size)
        for c in np.unique(codes[codes >= 0]):
            rows = np.flatnonzero(codes == c)
            fam = np.flatnonzero(self.cell == c)
            ur = factors[rows][:, None]
            y = ur * (z[rows][:, None] - self.cuts[fam][None, :])
            rho = self.rho[fam][None, :]
            R = np.sqrt(y * y + 4.0 * rho * rho)
            with np.errstate(divide="ignore"):                       # R + y and R - y without cancellation
                P = np.where(y >= 0, R + y, 4.0 * rho * rho / (R - y))
                M = np.where(y >= 0, 4.0 * rho * rho / (R + y), R - y)
            t, s = 0.5 * P + rho, 0.5 * M + rho
            weight = rho / s
            per_row = {"u": weight, "dty": P / (2.0 * R),
                       "psi": self.ell[fam][None, :] * weight * weight * M / (2.0 * rho * R),
                       "dur": -y * M / (2.0 * R * s * s)}
            out["t"][fam] = t.sum(axis=0)
            out["dt_drho"][fam] = (1.0 + 2.0 * rho / R).sum(axis=0)
            design = LinearModelLoss(None, batch.X[rows], None, self.intercept, drop_zero_weights=False)
            # the four row sums in one product: the rows are read once (the product is memory-bound)
            pulled = self.scale * design.pullback(np.hstack([values * ur for values in per_row.values()])).T
            for k, (key, values) in enumerate(per_row.items()):
                out[key + "_1"][fam] = values.sum(axis=0)
                out[key + "_e"][fam] = pulled[k * fam.size:(k + 1) * fam.size]
            psi_rows[rows] = per_row["psi"].sum(axis=1) * (ur[:, 0] * self.scale) ** 2
        out["gram"] = LinearModelLoss(None, batch.X, None, self.intercept, drop_zero_weights=False).curvature(psi_rows)
        return out


class _Pass:
    """One pass at (x, λ, τ): the residuals of ∇Φ_τ = 0, the blocks of its Newton system and the residuals'
    derivatives in τ, assembled from every hinge average's sums (:class:`_CentredSums`)."""

    def __init__(self, source, model, x, lam, tau, anchor, S, c, mu):
        D = source.D
        d = x - anchor
        _, gF, HF = model
        h = mu * d[None, :] - S                                     # ∇(q - s_i . v) of every constraint
        self.r_v = gF + mu * d + lam @ h
        self.H = HF + mu * (1.0 + lam.sum()) * np.eye(D)
        self.B = h.copy()                                           # ∂G_i / ∂v
        self.G = -(S @ x + c) + 0.5 * mu * float(d @ d)
        self.C = tau / lam ** 2                                     # -∂(G_i + τ / λ_i) / ∂λ_i
        self.dr_v = np.zeros(D)                                     # ∂r_v / ∂τ
        self.dr_l = 1.0 / lam                                       # ∂(G_i + τ / λ_i) / ∂τ
        for avg, idx in source.parts:
            lam_f, n, w = lam[idx], avg.n_each, avg.wsl
            rho, ell = tau / lam_f, lam_f / n
            sums = row_sums(avg.data, _CentredSums(x[w], avg.cuts(x), rho, ell, avg.intercept, avg.scale, avg.cell),
                            *avg.per_row)
            self.G[idx] += sums["t"] / n
            self.C[idx] += rho / (lam_f * n) * sums["dt_drho"]
            self.dr_l[idx] += sums["dt_drho"] / (n * lam_f)
            self.r_v[w] += ell @ sums["u_e"]
            self.B[idx, w] += sums["dty_e"] / n[:, None]
            self.H[w, w] += sums["gram"]
            self.dr_v[w] += (sums["dur_e"] / n[:, None]).sum(axis=0)
            for f in np.flatnonzero(avg.has_j):                     # the threshold coordinate: -1 in every e_ir
                j = avg.j[f]
                self.r_v[j] -= ell[f] * sums["u_1"][f]
                self.B[idx[f], j] -= sums["dty_1"][f] / n[f]
                self.H[w, j] -= sums["psi_e"][f]
                self.H[j, w] -= sums["psi_e"][f]
                self.H[j, j] += sums["psi_1"][f]
                self.dr_v[j] -= sums["dur_1"][f] / n[f]
        self.r_l = self.G + tau / lam

    def residual(self) -> float:
        return max(float(np.max(np.abs(self.r_v))), float(np.max(np.abs(self.r_l), initial=0.0)))

    def newton(self, dtau: float = 0.0):
        """The Newton step (dx, dλ) towards the central point at τ + dtau, and its decrement sqrt(dx' H dx +
        dλ' C dλ)."""
        D = self.H.shape[0]
        J = np.block([[self.H, self.B.T], [self.B, -np.diag(self.C)]])
        rhs = -np.concatenate([self.r_v + dtau * self.dr_v, self.r_l + dtau * self.dr_l])
        step = np.linalg.solve(J, rhs)
        dx, dl = step[:D], step[D:]
        return dx, dl, float(np.sqrt(max(dx @ self.H @ dx + dl @ (self.C * dl), 0.0)))


def _fraction_to_boundary(lam, dl) -> float:
    shrink = dl < 0
    return min(1.0, float(np.min(-FRACTION * lam[shrink] / dl[shrink], initial=np.inf)))


def follow_path(source, anchor, S, c, mu: float, max_iter: int = MAX_ITER, exact: bool = False, start=None):
    """The path-following phase (module docstring) for (25) at ``anchor`` (linearization ``S`` (m, D), ``c`` (m,),
    proximal weight ``mu`` > 0) on a :class:`~fairmodel.oracles.dc_working_set.HingeSource`: from (a, λ = 1) at
    τ = TAU_START to the central point at τ = TAU_END (relative to 1 + |F(a)|), or from ``start`` = (x, λ, τ,
    1 + |F(a)|) (the end of an earlier call: its info's ``scale``).
    ``exact``: the central point itself, Newton's method continued at TAU_END until the residual is at most POLISH
    (relative) with F's own values at x (5-9 more passes measured: the point then depends on (25) alone, not on
    the path's iterates, so it is the same in memory and on chunks). Returns ``(x, λ, info)``, info
    with ``status`` ("centred", or "max_iter": the last iterate), ``iterations``, ``passes`` (F's models
    included), ``tau``, ``scale`` and ``max_G``, the largest G_i at the end (an upper bound of g_i(x): x is strictly feasible
    for (25) when it is < 0). BLAS runs on one thread (the model-space products are small)."""
    if not mu > 0:
        raise ValueError("the path-following phase needs mu > 0 (strongly convex subproblem)")
    a, S, c = np.asarray(anchor, dtype=float), np.asarray(S, dtype=float), np.asarray(c, dtype=float)
    with one_thread():
        objective = NewtonModels(source.objective)
        if start is None:
            model = objective(a, np.inf)
            scale = 1.0 + abs(model[0])
            x, lam, tau = a.copy(), np.ones(source.m), TAU_START * scale
        else:
            x, lam, tau, scale = (np.array(start[0], dtype=float), np.array(start[1], dtype=float),
                                  float(start[2]), float(start[3]))
            model = objective(x, np.inf)
        end, tight = TAU_END * scale, POLISH * scale if exact else np.inf
        here = _Pass(source, model, x, lam, tau, a, S, c, mu)
        passes, status, it = 1, "max_iter", 0
        for it in range(1, max_iter + 1):
            dx, dl, decrement = here.newton()
            if decrement <= CENTRED * np.sqrt(tau) and tau <= end and here.residual() <= tight:
                if not exact or objective.exact_at(x):
                    status = "centred"
                    break
                objective.centre(x, here.residual())            # F's own values at x, then Newton again
                here = _Pass(source, objective.known_at(x), x, lam, tau, a, S, c, mu)
                passes += 1
                continue
            if decrement <= CENTRED * np.sqrt(tau) and tau > end:
                new_tau = max(SIGMA * tau, end)
                dx, dl, _ = here.newton(new_tau - tau)
            else:
                new_tau = tau
            step = _fraction_to_boundary(lam, dl)
            for _ in range(BACKTRACK):
                x_new, lam_new = x + step * dx, lam + step * dl
                trial = _Pass(source, objective(x_new, here.residual()), x_new, lam_new, new_tau, a, S, c, mu)
                passes += 1
                if new_tau < tau or trial.residual() < here.residual():
                    break
                step *= 0.5
            else:
                if tau <= end and decrement <= CENTRED * np.sqrt(tau):     # centred; rounding stops the residual
                    status = "centred"
                    break
            x, lam, tau, here = x_new, lam_new, new_tau, trial
    return x, lam, {"status": status, "iterations": it, "passes": passes + objective.count, "tau": tau,
                    "scale": scale, "max_G": float(np.max(here.G, initial=-np.inf))}


def within_share(source, guard=None, small: int = 0):
    """A working-set guard ``(nbytes, pairs)`` raising
    :class:`~fairmodel.oracles.dc_working_set.WideWorkingSet` beyond SHARE of the hinges of ``source`` and beyond
    ``small`` hinges (the exact solves pass SMALL), then calling ``guard``."""
    def limited(nbytes, pairs):
        if pairs > max(SHARE * source.pieces, small):
            raise WideWorkingSet
        if guard is not None:
            guard(nbytes, pairs)
    return limited


def centre_of(source, anchor, S, c, mu: float):
    """(x_c, the working set's radius there, the path's info with ``lam`` = λ_c): the end of :func:`follow_path`
    and RADIUS x τ / max(1, max_i λ_i)."""
    x_c, lam_c, path = follow_path(source, anchor, S, c, mu)
    return x_c, RADIUS * path["tau"] / max(1.0, float(np.max(lam_c))), {**path, "lam": lam_c}


def change_from(source, anchor, x) -> float:
    """The largest change of a hinge argument from ``anchor`` to ``x`` (a pass per hinge average): the next
    subproblem's working-set radius."""
    return max((avg.max_change(anchor, x) for avg, _ in source.parts), default=0.0)


def solve_from_centre(source, anchor, S, c, mu: float, *, tol: float = 1e-10, max_iter: int = 100, guard=None,
                      central: bool = False):
    """Solve (25) as :func:`~fairmodel.oracles.dc_working_set.solve_with_working_set` does, its working set chosen
    at the central point that :func:`follow_path` reaches by passes instead of at the anchor (module docstring).
    Returns the working-set method's ``(x, lam, u, info)``, ``info`` with ``centring_passes`` and
    ``centring_status`` added, ``hinge_change`` measured from the anchor and ``passes`` counting every phase.

    ``central``: where the working set at the central point too would hold more than SHARE and SMALL hinges (its sign
    checks adding hinges beyond that share), return the central point itself when it is strictly feasible
    (:func:`central_step`) instead of solving on that set."""
    x_c, radius, path = centre_of(source, anchor, S, c, mu)
    accept = central and path["status"] == "centred" and path["max_G"] < 0
    try:
        x, lam, u, info = solve_with_working_set(source, anchor, S, c, mu, radius, tol=tol, max_iter=max_iter,
                                                 guard=within_share(source, guard, SMALL) if accept else guard,
                                                 centre=x_c)
    except WideWorkingSet as wide:
        return central_step(source, anchor, S, c, mu, x_c, path, wide.rows)
    return x, lam, u, {**info, "passes": info["passes"] + path["passes"] + len(source.parts),
                       "centring_passes": path["passes"], "centring_status": path["status"],
                       "hinge_change": change_from(source, anchor, x)}


def central_step(source, anchor, S, c, mu: float, x_c, path, rows: int = 0):
    """The central point x_c of (25) as an inexact step, for a tie: the hinges at their kink at the minimizer itself
    (IDCA's first step from w = 0 moves the thresholds and the intercept alone, so every score is equal and one
    family of hinges sits at its kink on every row; an exact working set holds them all). x_c is strictly feasible
    for (25), so for the DC program, and on the weighted central path at τ its objective is within the duality gap
    of the path, 3 m τ (τ per constraint and τ / n_i per hinge multiplier), of the minimum. It certifies nothing:
    ``info["status"]`` is "central", ``u`` is None, and the caller must not stop on it. ``rows``: those the working
    set at x_c gathered before it grew past SHARE. The path's end is first made the central point itself
    (``exact`` of :func:`follow_path`): the step then depends on (25) alone, so it is the same in memory and on
    chunks, and so is the rest of the run."""
    x, lam, polish = follow_path(source, anchor, S, c, mu, exact=True,
                                 start=(x_c, path["lam"], path["tau"], path["scale"]))
    passes, max_G = path["passes"] + polish["passes"], polish["max_G"]
    if polish["status"] != "centred" or max_G >= 0:          # the path's end, strictly feasible, as it was
        x, lam, max_G = x_c, path["lam"], path["max_G"]
    return x, lam, None, {
        "status": "central", "iterations": path["iterations"] + polish["iterations"],
        "gap": 3.0 * source.m * path["tau"], "max_g": max_G, "rounds": 0, "working_set": 0.0,
        "working_set_pairs": 0, "working_set_rows": rows, "passes": passes + len(source.parts),
        "centring_passes": passes, "centring_status": path["status"], "hinge_change": change_from(source, anchor, x)}


def solve_hinge_subproblem(source, anchor, S, c, mu: float, radius, *, tol: float = 1e-10, max_iter: int = 100,
                           warm=None, guard=None, central: bool = False):
    """The exact solve of (25) on a :class:`~fairmodel.oracles.dc_working_set.HingeSource`: the working set at the
    anchor within ``radius`` (:func:`~fairmodel.oracles.dc_working_set.solve_with_working_set`, warm from
    ``warm``) while it holds at most SHARE of the hinges or at most SMALL of them, else :func:`solve_from_centre`
    (cold, ``central`` passed on). Both return the same minimizer and certificate; ``info["centring_passes"]`` is 0
    for the first."""
    try:
        x, lam, u, info = solve_with_working_set(source, anchor, S, c, mu, radius, tol=tol, max_iter=max_iter,
                                                 warm=warm, guard=within_share(source, guard, SMALL))
        return x, lam, u, {**info, "centring_passes": 0}
    except WideWorkingSet:
        return solve_from_centre(source, anchor, S, c, mu, tol=tol, max_iter=max_iter, guard=guard,
                                 central=central)
