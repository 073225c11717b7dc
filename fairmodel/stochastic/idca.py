"""Inexact difference-of-convex algorithm (IDCA, Algorithm 1 of the partial-fairness paper; He,
Huang, Yao, Lin, 2025).

At the feasible iterate x_k, every concave part -f_i- (i = 0..m) is linearized (eq. (26)) and the convex
subproblem (25), with the proximal term (μ/2)||v - x_k||^2 in the objective and in every constraint
((μ/2)||x||^2 added to both convex parts of every function, Assumption 6.3A), is solved to precision ε_k (27).
Two inner solvers:

* exact, certified (default where it applies): the interior-point method of :mod:`fairmodel.oracles.dc_ipm`
  in the small space (w, θ) with exact full-data oracles, returning a duality-gap certificate of (25);
* exact, CVXPY: the program of :mod:`fairmodel.exact.partial`, compiled once and re-solved;
* SSG (Algorithm 2, :func:`fairmodel.stochastic.ssg.ssg`) warm-started at x_k, ``T_k`` iterations.

Extension (documented, on by default): ``margin=True`` runs SSG on the subproblem with every constraint
tightened by ε_k, so its output satisfies g_i <= 0 instead of g_i <= ε_k; by the majorization
f_i <= g_i - (μ/2)||v - x_k||^2 every iterate of IDCA is then *exactly* feasible for (21), not only
ε_k-feasible. The paper's version is ``margin=False``.

This module also holds the theory helpers of Theorem 6.5 (eq. (28)) and the Lemma C.1 certificate.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..errors import InfeasibleError, OptionError, SolverError
from ..oracles.dc_centred import centre_of, central_step, change_from, solve_hinge_subproblem, within_share
from ..oracles.dc_working_set import WideWorkingSet, solve_with_working_set, working_set_rounds
from ..oracles.protocols import DCProgramOracle
from ..utilities.progress import Progress
from .ssg import ssg


# ---------------------------------------------------------------------------------------------------
# Theory (Theorem 6.5, Lemmas C.1, C.2)
# ---------------------------------------------------------------------------------------------------
def theory_schedule(M: float, mu: float, nu: float, f0_gap: float, eps: float) -> dict:
    """K, ε_k and the Lemma C.2 bound on T_k of eq. (28) for a target nearly ε-KKT point.

    ``M``: Lipschitz constant of every f_i+- (Assumption 6.3D); ``nu``: the uniform Slater margin (6.3B);
    ``f0_gap``: f_0(w^(0)) - f_lb. T_k needs ||w^(k) - ŵ^(k+1)||^2, bounded here by (2M/μ)^2 (Lemma C.2).
    """
    for name, v in (("M", M), ("mu", mu), ("nu", nu), ("eps", eps)):
        if not (np.isfinite(v) and v > 0):
            raise OptionError(f"theory_schedule needs {name} > 0; got {v}")
    c = min(1.0, 1.0 / (4 * M ** 2), mu * nu / (8 * M ** 4))
    K = math.ceil(max(1.0, 4 * M ** 2, 8 * M ** 4 / (mu * nu)) * max(f0_gap, 0.0) / (mu * eps ** 2))
    eps_k = mu / 8.0 * c * eps ** 2
    return {"K": int(K), "eps_k": eps_k, "T_k": ssg_iterations(M, mu, eps_k, (2 * M / mu) ** 2)}


def ssg_iterations(M: float, mu: float, eps_k: float, dist2: float) -> int:
    """T_k = (M^2 / (ε_k μ)) ln(μ ||w^(k) - ŵ^(k+1)||^2 / ε_k) of Proposition 6.4 (at least 1)."""
    return max(1, math.ceil(M ** 2 / (eps_k * mu) * math.log(max(mu * dist2 / eps_k, 1.0))))


def nearly_kkt_epsilon(step: float, M: float, lam_max: float) -> float:
    """The ε that Lemma C.1 certifies for a feasible anchor w: ε = ||ŵ - w|| / min{1, 1/(2M), 1/(2M max λ)}.

    (ŵ, λ) is the primal-dual solution of the subproblem (25) anchored at w (1/max λ = inf when λ = 0).
    """
    factor = min(1.0, 1.0 / (2 * M), (1.0 / (2 * M * lam_max)) if lam_max > 0 else np.inf)
    return float(step / factor)


def projected_decrease(decreases, floor: float = 0.0) -> float:
    """The objective decrease still ahead on an IDCA path whose next exact steps lower f_0 by ``decreases``
    (Δ1, Δ2, ...): Δ1 / (1 - q), the tail of a path converging linearly at the rate q, with q the largest measured
    ratio Δ_(j+1) / Δ_j (a point off the path, such as an inexact run's, takes one long step back to it and then the
    path's own rate: the largest ratio, not the first, is that rate). Decreases at most ``floor`` (rounding) count
    as 0; 0 when Δ1 is, inf when q >= 1 (the path is not slowing down)."""
    d = [max(float(v), 0.0) if v > floor else 0.0 for v in decreases]
    if not d or d[0] == 0.0:
        return 0.0
    q = max((b / a if a > 0 else (0.0 if b == 0 else math.inf)) for a, b in zip(d[:-1], d[1:])) if len(d) > 1 else 0.0
    return d[0] / (1.0 - q) if q < 1.0 else math.inf


# ---------------------------------------------------------------------------------------------------
# Inner solvers
# ---------------------------------------------------------------------------------------------------
def _ssg_on_subproblem(anchor, k, mu, e, T, objective_fn, plus_fn, plus_grad_fn, S, c, margin, project,
                       anchor_feasible, scales=None):
    """SSG (Algorithm 2) on (25) at the anchor: g_0 = objective_fn + the proximal term, g_i = f+_i (``plus_fn``)
    minus the linearization (S, c) plus the proximal term, each tightened by ε_k with ``margin``. With ``scales`` p
    (no projection: the weights have no radius) SSG runs in the coordinates u = p * v, the same subproblem."""
    shift = e if margin else 0.0

    def constraint(v):
        fp, cache = plus_fn(v)
        d = v - anchor
        g = fp - (S @ v + c) + 0.5 * mu * float(d @ d) + shift
        i = int(np.argmax(g))
        return float(g[i]), (lambda: plus_grad_fn(v, i, cache) - S[i] + mu * d)

    def objective(v):
        f, grad = objective_fn(v)
        d = v - anchor
        return f + 0.5 * mu * float(d @ d), grad + mu * d

    if scales is None:
        out = ssg(anchor, e, T, objective, constraint, project)
    else:
        start = anchor * scales
        out = ssg(start, e, T, *in_coordinates(objective, constraint, scales), lambda u: u)
        out["x"] = anchor if out["x"] is start else out["x"] / scales     # the anchor itself, not a rounding of it
    # "never_feasible" happens only from an infeasible anchor (allow_infeasible_start): the last iterate of the
    # Polyak steps is then the next anchor; from a feasible anchor a stall means (25) is infeasible there
    if out["status"] == "stalled" and anchor_feasible():
        raise InfeasibleError(f"SSG could not solve the IDCA subproblem (25) at outer iteration {k}: "
                              f"{out['message']}. The subproblem is infeasible at this anchor; start "
                              f"from a strictly feasible point (w = 0 for partial_dp / weak_partial_dp)")
    return out


def in_coordinates(objective, constraint, scales):
    """The oracles of SSG in the coordinates u = scales * v: values unchanged, subgradients divided by the scales."""
    def objective_u(u):
        f, g = objective(u / scales)
        return f, in_units(g, scales)

    def constraint_u(u):
        value, thunk = constraint(u / scales)
        return value, (lambda: in_units(thunk(), scales))
    return objective_u, constraint_u


def in_units(gradient, scales):
    """A gradient in x as the gradient in SSG's coordinates u = scales * x (unchanged without scales)."""
    return gradient if scales is None else gradient / scales


def _iterations(program_grad, anchor, e, T, travel, max_iterations):
    """T_k, raised to 2 travel ||g_0'(anchor)|| / ε_k (at most ``max_iterations``) when ``travel`` is given."""
    if travel is None:
        return T
    need = math.ceil(2.0 * travel(anchor) * float(np.linalg.norm(program_grad(anchor))) / e)
    return max(T, min(need, max_iterations or need))


def ssg_inner(program: DCProgramOracle, mu: float, eps, iterations, margin: bool = True, travel=None, max_iterations=None,
              scales=None):
    """An inner solver ``(anchor, k) -> (x_next, info)`` running SSG (Algorithm 2) on (25) at the anchor.

    ``eps`` and ``iterations`` are ε_k and T_k: numbers or callables of the outer index k. ``travel``
    (optional): anchor -> a distance the subproblem's solution may lie from the anchor; T_k is then raised to
    2 travel ||∇g_0(anchor)|| / ε_k (at most ``max_iterations``): an objective step of SSG moves ε_k / ||g_0'||,
    so with fewer iterations SSG could not reach a solution that far and would return a step that
    underestimates the IDCA step (a stall, not a critical point). ``scales``: SSG's coordinates u = scales * x
    (:func:`_ssg_on_subproblem`; the gradient's norm above is then the one in u).
    """
    eps_k = eps if callable(eps) else (lambda k: eps)
    T_k = iterations if callable(iterations) else (lambda k: iterations)

    def inner(anchor, k):
        e = float(eps_k(k))
        T = _iterations(lambda a: in_units(program.objective_value_and_grad(a)[1], scales), anchor, e, int(T_k(k)),
                        travel, max_iterations)
        vals, S = program.linearize(anchor)
        out = _ssg_on_subproblem(anchor, k, mu, e, T, program.objective_value_and_grad, program.plus,
                                 program.plus_grad, S, vals - S @ anchor, margin, program.project,
                                 lambda: program.max_violation(anchor) <= 0, scales)
        return out["x"], {"inner_iterations": out["iterations"], "n_feasible": out["n_feasible"], "eps": e,
                          "inner_status": out["status"]}
    return inner


def working_set_ssg_inner(program: DCProgramOracle, source, mu: float, eps, iterations, margin: bool = True,
                          travel=None, max_iterations=None, guard=None, scales=None):
    """An inner solver ``(anchor, k) -> (x_next, info)`` running SSG (Algorithm 2) on (25) with no pass over the
    rows per step: the objective's smooth part enters by its quadratic majorant at the anchor
    (:class:`~fairmodel.oracles.dc_ipm.QuadraticModel`: the DC split f_0 = [(1/2) v'Lv + ridge] - [(1/2) v'Lv - loss] of
    eq. (21), linearized like every f_i-, L >= the loss's Hessian), and the constraints by the working set of
    hinges of :mod:`fairmodel.oracles.dc_working_set` (a relaxation of (25), exact once no replaced hinge changes
    sign at SSG's output: checked by one scan, else the changed hinges join and SSG runs again). Per outer
    iteration: a pass for the linearization, one for the majorant, one scan per round, and the gathered rows of the
    working set; ``source`` is the program's :class:`~fairmodel.oracles.dc_working_set.HingeSource` (rows behind
    passes), ``guard`` may refuse a working set. The working set's radius is the previous output's largest change
    of a hinge argument (0 at the first outer iteration). A working set that would hold more than
    :data:`~fairmodel.oracles.dc_centred.SHARE` of the hinges (IDCA's first steps move most scores across a kink) is
    chosen at the central point of (25) instead, reached by passes (:func:`~fairmodel.oracles.dc_centred.centre_of`):
    SSG still solves the relaxation, with a few percent of the hinges in memory. Where that set too would pass the
    share (a tie: IDCA's first step from w = 0), the central point itself is the step
    (:func:`~fairmodel.oracles.dc_centred.central_step`), as in exact IDCA."""
    eps_k = eps if callable(eps) else (lambda k: eps)
    T_k = iterations if callable(iterations) else (lambda k: iterations)
    state = {"L": None, "radius": 0.0}

    def inner(anchor, k):
        if state["L"] is None:
            state["L"] = source.objective.curvature_bound()          # one pass, once
        if k == 0:
            state["radius"] = 0.0
        e = float(eps_k(k))
        model = source.objective.majorant(anchor, state["L"])
        T = _iterations(lambda a: in_units(model.value_and_grad(a)[1], scales), anchor, e, int(T_k(k)), travel,
                        max_iterations)
        vals, S = program.linearize(anchor)
        c = vals - S @ anchor
        runs = {"iterations": 0}

        def solve(reduced, S_r, c_r, ws):
            out = _ssg_on_subproblem(anchor, k, mu, e, T, model.value_and_grad, reduced.plus_and_args,
                                     reduced.plus_grad, S_r, c_r, margin, program.project,
                                     lambda: program.max_violation(anchor) <= 0, scales)
            runs.update(out=out, iterations=runs["iterations"] + out["iterations"])
            return out["x"], True

        try:
            x, _, _, _, scans, ws, rounds, passes = working_set_rounds(source, anchor, S, c, state["radius"], solve,
                                                                       within_share(source, guard))
            state["radius"], centring = max((s["change"] for s in scans), default=0.0), 0
        except WideWorkingSet:      # the hinges classified at the central point of (25) instead (few near a kink)
            x_c, radius, path = centre_of(source, anchor, S, c, mu)
            usable = path["status"] == "centred" and path["max_G"] < 0      # x_c itself can be the step
            try:
                x, _, _, _, scans, ws, rounds, passes = working_set_rounds(
                    source, x_c, S, c, radius, solve, within_share(source, guard) if usable else guard)
            except WideWorkingSet as wide:
                # a tie (IDCA's first step from w = 0: one family of hinges at its kink on every row): the central
                # point itself is the step, strictly feasible and within the path's duality gap of (25)'s minimum,
                # as exact IDCA takes it, instead of SSG on a working set of half the hinges
                x, _, _, info = central_step(source, anchor, S, c, mu, x_c, path, wide.rows)
                state["radius"] = info["hinge_change"]
                return x, {"inner_iterations": runs["iterations"], "n_feasible": 0, "eps": e,
                           "inner_status": "central", "working_set_pairs": 0, "working_set_rows": wide.rows,
                           "working_set_rounds": 0, "centring_passes": info["centring_passes"], "central_step": 1}
            state["radius"], centring = change_from(source, anchor, x), path["passes"]
        out = runs["out"]
        return x, {"inner_iterations": runs["iterations"], "n_feasible": out["n_feasible"], "eps": e,
                   "inner_status": out["status"], "working_set_pairs": ws.pairs, "working_set_rows": ws.rows,
                   "working_set_rounds": rounds, "centring_passes": centring}
    return inner


def certified_inner(program: DCProgramOracle, hinge, mu: float, tol: float = 1e-10, max_iter: int = 200,
                    working_set: bool = True, first_radius: float = 0.0, guard=None):
    """An inner solver ``(anchor, k) -> (x_hat, info)`` solving (25) by the certified interior-point method
    (:func:`fairmodel.oracles.dc_ipm.solve_subproblem`); ``info`` carries λ, the hinge weights u and the
    duality gap of (25) at x_hat.

    With ``working_set`` (the default) the interior-point method sees only the hinges within the previous
    outer iteration's largest change of a hinge argument (:mod:`fairmodel.oracles.dc_working_set`; the first
    outer iteration those within ``first_radius``, by default only the hinges that cross their kink, found by the
    sign check): the same minimizer and certificate, each iteration on a few percent of the hinges, and never every
    row of chunked data at once. Where that working set would hold more than
    :data:`~fairmodel.oracles.dc_centred.SHARE` of the hinges (IDCA's first steps move most scores across a kink)
    and more than :data:`~fairmodel.oracles.dc_centred.SMALL`, it is chosen at the central point of (25) instead,
    reached by passes (:func:`~fairmodel.oracles.dc_centred.solve_hinge_subproblem`). Without ``working_set`` every
    hinge is in every subproblem. ``guard(nbytes, pairs)`` may refuse a working set (raises).
    """
    first_radius = first_radius if working_set else None
    state = {"warm": None, "radius": first_radius}

    def inner(anchor, k):
        if k == 0:                      # a new start (multistart): no warm start, the first radius
            state.update(warm=None, radius=first_radius)
        vals, S = program.linearize(anchor)
        c = vals - S @ anchor
        if working_set:
            x_hat, lam, u, info = solve_hinge_subproblem(hinge, anchor, S, c, mu, state["radius"], tol=tol,
                                                         max_iter=max_iter, warm=state["warm"], guard=guard,
                                                         central=True)
        else:
            x_hat, lam, u, info = solve_with_working_set(hinge, anchor, S, c, mu, None, tol=tol, max_iter=max_iter,
                                                         warm=state["warm"], guard=guard)
        central = info["status"] == "central"       # an inexact step at a tie (dc_centred.central_step)
        stalled = not central and info["status"] != "optimal" and _descends(hinge, x_hat, anchor, S, c, mu)
        if not (central or stalled) and (info["status"] != "optimal" or info["max_g"] > 1e-9):
            raise SolverError(f"the interior-point solver of subproblem (25) stopped with status {info['status']} "
                              f"(duality gap {info['gap']:.3g}, max g_i {info['max_g']:.3g}) at outer iteration "
                              f"{k}; pass solver_options={{'max_iter': ...}} or inner='cvxpy'",
                              status=info["status"])
        state["warm"] = None if central or stalled else (lam, u)
        if working_set:
            state["radius"] = info["hinge_change"]
        return x_hat, {"lam": lam, "u": u, "solver_status": info["status"], "ipm_iterations": info["iterations"],
                       "subproblem_gap": info["gap"], "subproblem_max_g": info["max_g"],
                       "working_set": info["working_set"], "working_set_pairs": info["working_set_pairs"],
                       "working_set_rows": info["working_set_rows"], "working_set_rounds": info["rounds"],
                       "centring_passes": info.get("centring_passes", 0), "central_step": int(central),
                       "stalled_step": int(stalled)}
    return inner


def _descends(hinge, x_hat, anchor, S, c, mu) -> bool:
    """Whether the point where the interior-point solve of (25) stalled (or reached its cap) is an inexact step of
    Algorithm 1: feasible for (25) on every hinge (max g_i <= 1e-9, the rule of an optimal solve; a working set's
    answer is checked against all of them, one pass) and no worse than the anchor in the objective of (25). By the
    majorization the next anchor is then feasible and f_0 does not increase, which is all the outer loop needs; the
    step certifies nothing (:func:`inexact`), so IDCA never stops on it. Else the caller's fallback (the CVXPY program
    of (25)) solves it: on all 1,388 rows of Communities (118 features, equalized odds, mu = 0.01) that one solve
    took 40 s of a 45 s fit, where the stalled point's duality gap was 2.8e-5."""
    return bool(np.max(hinge.g_values(x_hat, anchor, S, c, mu), initial=0.0) <= 1e-9
                and hinge.objective_value(x_hat, anchor, mu) <= hinge.objective_value(anchor, anchor, mu))


def inexact(info) -> bool:
    """Whether an outer step certifies nothing: a central step at a tie, or a stalled solve of (25) taken as it is."""
    return bool(info.get("central_step") or info.get("stalled_step"))


def exact_inner(subproblem, verbose=False, **solver_options):
    """An inner solver ``(anchor, k) -> (x_hat, info)`` re-solving the compiled CVXPY program (25)."""
    def inner(anchor, k):
        x_hat, lam, record = subproblem.solve(anchor, verbose=verbose, **solver_options)
        return x_hat, {"lam": lam, "solver_status": record["status"], "solver_time": record["solve"],
                       "solver_iterations": record.get("iterations"), "newton_steps": record.get("newton_steps", 1)}
    return inner


# ---------------------------------------------------------------------------------------------------
# The outer loop
# ---------------------------------------------------------------------------------------------------
def check_feasible_start(program: DCProgramOracle, x0, allow_infeasible: bool = False, tol: float = 0.0) -> float:
    """max_i f_i(x0); raise :class:`InfeasibleError` (saying how to find a feasible start) when it is > tol."""
    worst = program.max_violation(x0)
    if worst > tol and not allow_infeasible:
        i = int(np.argmax(program.values(x0)))
        raise InfeasibleError(
            f"IDCA needs a feasible start (Algorithm 1); at the given start the constraint "
            f"{program.labels[i]} has f_i = {worst:.4g} > 0. Start from w = 0 (strictly feasible for "
            f"partial_dp / weak_partial_dp with kappa > 0; the thresholds θ are then set to satisfy every "
            f"constraint strictly), "
            f"shrink your start towards 0, or pass allow_infeasible_start=True to try anyway")
    return worst


def _extrapolated(program: DCProgramOracle, x, x_prev, t: float, f_x: float):
    """The next anchor by Nesterov extrapolation, as in the accelerated DCA of Nhat Phan, Le and Le Thi (2018, IJCAI),
    with the momentum weights of Beck and Teboulle (2009): z = x + ((t - 1) / t') (x - x_prev),
    t' = (1 + sqrt(1 + 4 t^2)) / 2. z is kept when f_0(z) <= f_0(x) (their acceptance test, with q = 0) and, an
    extension for the constraints of (21), when it is feasible (max_i f_i(z) <= 0: the subproblem (25) at z is then
    feasible and Lemma C.1 certifies z like any anchor). Returns ((z, f_0(z)) or None, the next t); a rejected z
    restarts the weights (t = 1: the next anchor is x itself, the one after it extrapolates again)."""
    t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
    if t == 1.0:                    # weight 0: z = x
        return None, t_next
    z = x + ((t - 1.0) / t_next) * (x - x_prev)
    if program.max_violation(z) > 0:
        return None, 1.0
    f_z = program.objective_value(z)
    if f_z > f_x:
        return None, 1.0
    return (z, f_z), t_next


def idca(program: DCProgramOracle, x0, inner, *, outer: int = 50, tol: float = 1e-6, mu: float = 0.0, keep_anchor: bool = False,
         verbose=None, label: str = "IDCA", callback=None, max_time: float | None = None,
         rel_tol: float = 0.0, confirm=None, extrapolate: bool = False) -> dict:
    """Run Algorithm 1 from the feasible ``x0`` with ``inner(anchor, k) -> (x_next, info)``.

    Stops after ``outer`` updates, or when ||x_{k+1} - x_k|| <= ``tol`` > 0 or <= ``rel_tol`` max(1, ||x_k||)
    and, when ``confirm(x_k, x_{k+1}, f_0(x_k), f_0(x_{k+1}), record) -> bool`` is given, it returns True (it may
    add its counters to ``record``, this outer iteration's history record), unless :func:`inexact` marks
    the step inexact
    (then ``keep_anchor`` returns the anchor x_k, whose subproblem solution ``info`` certifies it by Lemma C.1:
    with an exact inner solver the step of (25) at x_k *is* the next IDCA step, so the certificate of x_k is free;
    else x_{k+1}). With ``tol = rel_tol = 0`` it always runs ``outer`` updates: SSG may return its anchor at one
    ε_k and move again at a smaller one. ``callback(info) -> bool`` runs after every update with ``info``:
    ``epoch`` = k, ``x`` = the next anchor (x_{k+1}, or its extrapolation), ``anchor`` = x_k and ``step``; True
    stops the run (status ``completed``) and returns that ``x``.
    The history records per outer iteration: objective f_0, max_i f_i, the step ||x_{k+1} - x_k||, the
    proximal descent f_0(x_k) - f_0(x_{k+1}) - (μ/2)||x_{k+1} - x_k||^2 (>= 0 with exact subproblems:
    the subproblem majorizes f_0 and is tight at x_k) and the inner solver's counters.

    ``extrapolate``: the next anchor is x_{k+1} + beta_k (x_{k+1} - x_k) where that point is feasible and no worse
    in f_0 (:func:`_extrapolated`), else x_{k+1}; the history marks the iterations whose next anchor was
    extrapolated (``extrapolated``: 1). Every anchor stays feasible, so every step still certifies its anchor.
    """
    x = np.asarray(x0, dtype=float)
    f_prev = program.objective_value(x)
    history = [{"outer": 0, "objective": f_prev, "max_f": program.max_violation(x), "time": 0.0}]
    status, message, last_info = "budget_exhausted", f"{outer} outer iterations done", {}
    start = time.perf_counter()
    previous, t = x, 1.0            # the last subproblem output and the momentum weight (extrapolate)
    with Progress(outer, label, verbose) as bar:
        for k in range(outer):
            x_next, info = inner(x, k)
            if not np.all(np.isfinite(x_next)):
                status, message = "diverged", f"non-finite iterate at outer iteration {k}"
                break
            step = float(np.linalg.norm(x_next - x))
            f_next = program.objective_value(x_next)
            rec = {"outer": k + 1, "objective": f_next, "max_f": program.max_violation(x_next), "step": step,
                   "descent": f_prev - f_next - 0.5 * mu * step ** 2, "time": time.perf_counter() - start}
            rec.update({key: v for key, v in info.items() if isinstance(v, (int, float)) and v is not None})
            history.append(rec)
            bar.update(1, objective=f_next, step=step)
            last_info = dict(info, anchor=x, x_next=x_next, step=step)
            scale = max(1.0, float(np.linalg.norm(x)))
            exact = not inexact(info)                   # an inexact step certifies nothing: never stop on it
            small = (exact and rel_tol > 0 and step <= rel_tol * scale
                     and (confirm is None or confirm(x, x_next, f_prev, f_next, rec)))
            if exact and ((tol > 0 and step <= tol) or small or (keep_anchor and step == 0.0)):
                status, message = "converged", (
                    f"||x_(k+1) - x_k|| = {step:.3g} <= tol = {tol:g} at outer iteration {k}" if tol > 0 and step <= tol
                    else f"||x_(k+1) - x_k|| / max(1, ||x_k||) = {step / scale:.3g} <= {rel_tol:g} at outer "
                         f"iteration {k}")
                if not keep_anchor:
                    x = x_next
                break
            anchor, x, f_prev = x, x_next, f_next
            if extrapolate:
                moved, t = _extrapolated(program, x, previous, t, f_next)
                previous = x
                if moved is not None:
                    (x, f_prev), rec["extrapolated"] = moved, 1
            if callback is not None and callback({"epoch": k, "x": x, "anchor": anchor, "step": step}):
                status, message = "completed", f"stopped by the callback after outer iteration {k}"
                break
            if max_time is not None and time.perf_counter() - start >= max_time:
                status, message = "budget_exhausted", f"time budget {max_time} s reached after outer iteration {k}"
                break
            if bar.stopped:
                status, message = "interrupted", f"interrupted (Ctrl-C) after outer iteration {k}"
                break
    return {"x": x, "status": status, "message": message, "history": history, "outer_iterations": len(history) - 1,
            "last": last_info, "time": time.perf_counter() - start}
