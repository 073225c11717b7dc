"""Switching subgradient (SSG) method: Algorithm 2 of the partial-fairness paper on the convex IDCA
subproblem (25), and Algorithm 3 on the DC program (21) itself (He, Huang, Yao, Lin, 2025; Nesterov (3.2.24)).

    if g(v_t) <= eps_t:  v_{t+1} = Proj_W(v_t - eps_t / ||g0'||^2 * g0')     (objective step; t joins 𝒯)
    else:                v_{t+1} = Proj_W(v_t - g(v_t) / ||g'||^2 * g')      (Polyak step on g = max_i g_i)
    output v_τ,  τ = argmin_{t in 𝒯} g0(v_t)                                 (best nearly feasible iterate)

No averaging. Edge cases (not covered by the paper): ||g0'|| = 0 on a nearly feasible point means v_t
minimizes g0 over R^n, so the method stops there; ||g'|| = 0 on an infeasible point means no step can
reduce the violation (status ``"stalled"``; IDCA turns it into an error, Algorithm 3 reports it).
"""
from __future__ import annotations

import numpy as np


def ssg(x0: np.ndarray, eps, iterations: int, objective, constraint, project, *, record_every: int = 0,
        callback=None, callback_every: int = 0) -> dict:
    """Run SSG from ``x0``.

    objective(x) -> (g0 value, subgradient); constraint(x) -> (g value = max_i g_i, thunk giving a
    subgradient of a maximizing g_i); project(x) -> Proj_W(x); eps: a number or a callable t -> eps_t.
    callback: ``callback({"epoch": j, "x": the output so far}) -> bool`` after every ``callback_every``
    iterations (j = 0, 1, ...); True stops the run (status ``completed``).

    Returns a dict: ``x`` (the output v_τ, or the last iterate if 𝒯 is empty), ``value`` (g0(v_τ)),
    ``status`` (``"completed"``, ``"converged"``, ``"stalled"``, ``"diverged"``, ``"never_feasible"``),
    ``message``, ``n_feasible`` (|𝒯|), ``iterations`` run and, if ``record_every``, a trace.
    """
    eps_t = eps if callable(eps) else (lambda t: eps)
    x = x0
    best_x, best_val, n_feasible = None, np.inf, 0
    status, message, trace = "completed", "", []
    t = 0
    for t in range(iterations):
        e = eps_t(t)
        gval, gthunk = constraint(x)
        if not np.isfinite(gval):
            status, message = "diverged", f"non-finite constraint value at SSG iteration {t}"
            break
        if gval <= e:
            f, g0 = objective(x)
            n_feasible += 1
            if f < best_val:
                best_x, best_val = x, f
            nrm2 = float(g0 @ g0)
            if record_every and t % record_every == 0:
                trace.append((t, f, gval))
            if nrm2 == 0.0:
                status, message = "converged", f"zero objective subgradient at a nearly feasible point (t = {t})"
                break
            x = project(x - (e / nrm2) * g0)
        else:
            gg = gthunk()
            nrm2 = float(gg @ gg)
            if record_every and t % record_every == 0:
                trace.append((t, np.nan, gval))
            if nrm2 == 0.0:
                status, message = "stalled", (f"the constraint violation {gval:.3g} > eps = {e:.3g} has a zero "
                                              f"subgradient at SSG iteration {t}: no step reduces it")
                break
            x = project(x - (gval / nrm2) * gg)
        if not np.all(np.isfinite(x)):
            status, message = "diverged", f"non-finite iterate at SSG iteration {t}"
            break
        if callback is not None and callback_every and (t + 1) % callback_every == 0 and \
                callback({"epoch": (t + 1) // callback_every - 1, "x": x if best_x is None else best_x}):
            message = f"stopped by the callback after SSG iteration {t}"
            break
    if best_x is None:
        if status == "completed":
            status, message = "never_feasible", f"no iterate was nearly feasible (g <= eps) in {iterations} iterations"
        best_x = x
    return {"x": best_x, "value": best_val, "status": status, "message": message, "n_feasible": n_feasible,
            "iterations": t + 1, "trace": trace}


def polyak_feasibility(x0: np.ndarray, constraint, project, iterations: int = 1000, target: float = 0.0) -> dict:
    """Polyak steps on g = max_i g_i until g <= ``target`` (the infeasible branch of SSG alone).

    Used to turn a random point into a feasible start (g = max_i f_i of the DC program). Returns
    ``{"x", "value", "status": "feasible" | "not_feasible", "iterations"}``.
    """
    x = x0
    gval = np.inf
    for t in range(iterations):
        gval, gthunk = constraint(x)
        if gval <= target:
            return {"x": x, "value": gval, "status": "feasible", "iterations": t}
        gg = gthunk()
        nrm2 = float(gg @ gg)
        if nrm2 == 0.0 or not np.isfinite(gval):
            break
        x = project(x - ((gval - target) / nrm2) * gg)
    return {"x": x, "value": gval, "status": "not_feasible", "iterations": iterations}
