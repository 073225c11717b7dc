"""The stochastic methods of partial fairness (He, Huang, Yao, Lin 2025): IDCA with switching-subgradient
subproblems (Algorithms 1 + 2), switching subgradient applied directly to the DC program (Algorithm 3), and the
penalty baseline (78)/(83). Each runs from the starts of :meth:`PartialFairness.multistart`, which judges them."""
from __future__ import annotations

import time

import numpy as np

from ..errors import InfeasibleError, OptionError
from ..stochastic.idca import idca, ssg_inner
from ..stochastic.ssg import ssg
from .partial_program import MU, max_constraint, nonneg, positive_int, schedule

# IDCA + SSG: eps_k = max(eps_min, eps * eps_decay^k) (measured on Law School subsamples: a constant
# eps = 1e-3 (the paper's grid) stalls 0.05 above the exact-inner objective after 100 x 200 iterations;
# the decreasing schedule reaches ~1e-3); the paper's constant eps is eps_decay=1.
IDCA_DEFAULTS = {"outer": 300, "inner": 300, "eps": 1e-2, "eps_decay": 0.97, "eps_min": 1e-5}
SSG_DEFAULTS = {"iterations": 20000, "eps": 1e-3}
PENALTY_DEFAULTS = {"iterations": 20000, "step": 1e-3}


def solve_idca_ssg(family, seed, verbose, options):
    """IDCA (Algorithm 1) with switching-subgradient subproblems (Algorithm 2)."""
    program = family.program
    mu = nonneg(options.get("mu", MU), "mu")
    outer = positive_int(options.get("outer", IDCA_DEFAULTS["outer"]), "outer", 0)
    margin = bool(options.get("margin", True))
    tol = nonneg(options.get("tol", 0.0), "tol")
    theory = {}
    if options.get("theory_eps") is not None:
        if "eps" in options or "inner" in options:
            raise OptionError("give either theory_eps= (eps_k and T_k from eq. (28)) or eps=/inner=, not both")
        if mu <= 0:
            raise OptionError("theory_eps= needs mu > 0 (Assumption 6.3A)")
        theory = family.theory(nonneg(options["theory_eps"], "theory_eps", strict=True), mu)
        eps, inner_T = theory["eps_k"], theory["T_k"]
        outer = min(outer, theory["K"]) if "outer" in options else theory["K"]
    else:
        eps = options.get("eps", IDCA_DEFAULTS["eps"])
        inner_T = options.get("inner", IDCA_DEFAULTS["inner"])
    eps_k = schedule(eps, "eps")
    if np.ndim(eps) == 0 and not callable(eps) and not theory:
        decay = nonneg(options.get("eps_decay", IDCA_DEFAULTS["eps_decay"]), "eps_decay", strict=True)
        floor = nonneg(options.get("eps_min", IDCA_DEFAULTS["eps_min"]), "eps_min", strict=True)
        if decay > 1:
            raise OptionError(f"eps_decay must lie in (0, 1] (eps_k = max(eps_min, eps * eps_decay^k)); "
                              f"got {decay}")
        base = eps_k(0)
        eps_k = (lambda k: max(floor, base * decay ** k))
    inner = ssg_inner(program, mu, eps_k, schedule(inner_T, "inner", integer=True), margin)

    def run(x0, label):
        return idca(program, x0, inner, outer=outer, tol=tol, mu=mu, verbose=verbose, label=label,
                    max_time=options.get("max_time"))

    solver = {"name": "idca+ssg", "mu": mu, "outer": outer, "margin": margin,
              "eps": eps if isinstance(eps, (int, float)) else "schedule", "final_eps": eps_k(max(outer - 1, 0)),
              "inner": inner_T if isinstance(inner_T, (int, float)) else "schedule"}
    sol = family.multistart(run, "IDCA (SSG subproblems)", options, mu, method="idca", seed=seed, solver=solver)
    sol.metrics.update({f"theory_{k}": v for k, v in theory.items()})
    return sol

def solve_direct_ssg(family, seed, verbose, options):
    """Algorithm 3: SSG on (21) with f = max_i f_i and the DC subgradient f+' - f-' (App. D.6)."""
    program = family.program
    iterations = positive_int(options.get("iterations", SSG_DEFAULTS["iterations"]), "iterations")
    kind = options.get("eps_schedule", "static")
    if kind == "static":
        eps = nonneg(options.get("eps", SSG_DEFAULTS["eps"]), "eps", strict=True)
        eps_t = eps
    elif kind == "diminishing":
        c = nonneg(options.get("c", 1.0), "c", strict=True)
        eps_t = (lambda t: c / (t + 1.0))
    else:
        raise OptionError(f"eps_schedule must be 'static' or 'diminishing' (eps_t = c / (t + 1)); got {kind!r}")

    constraint = max_constraint(program)

    def run(x0, label):
        start = time.perf_counter()
        if program.max_violation(x0) > (eps_t(0) if callable(eps_t) else eps_t):
            raise InfeasibleError("direct SSG (Algorithm 3) needs a start with f_i(w0) <= eps")
        out = ssg(x0, eps_t, iterations, program.objective_value_and_grad, constraint, program.project,
                  record_every=max(1, iterations // 200))
        status = {"completed": "completed", "converged": "converged"}.get(out["status"], "failed")
        history = [{"iteration": t, "objective": f, "max_f": g} for t, f, g in out["trace"]]
        return {"x": out["x"], "status": status, "message": out["message"], "history": history,
                "outer_iterations": 0, "time": time.perf_counter() - start, "inner_total": out["iterations"],
                "n_feasible": out["n_feasible"]}

    solver = {"name": "ssg", "iterations": iterations, "eps_schedule": kind}
    return family.multistart(run, "SSG (Algorithm 3)", options, 0.0, method="ssg", seed=seed, solver=solver)

def solve_penalty(family, seed, verbose, options):
    """Penalty models (78)/(83): f_0 + lam * penalty, plain subgradient descent, last iterate (App. D.4)."""
    program = family.program
    if "lam" not in options:
        raise OptionError("the penalty baseline needs lam= (the weight of the unfairness penalty (78)/(83))")
    lam = nonneg(options["lam"], "lam")
    iterations = positive_int(options.get("iterations", PENALTY_DEFAULTS["iterations"]), "iterations")
    step = nonneg(options.get("step", PENALTY_DEFAULTS["step"]), "step", strict=True)

    def run(x0, label):
        start = time.perf_counter()
        x, history, status, message = x0, [], "completed", ""
        every = max(1, iterations // 200)
        for t in range(iterations):
            f, g0 = program.objective_value_and_grad(x)
            p, gp = program.penalty(x)
            if t % every == 0:
                history.append({"iteration": t, "objective": f, "penalty": p})
            x = program.project(x - step * (g0 + lam * gp))
            if not np.all(np.isfinite(x)):
                status, message = "diverged", f"non-finite iterate at iteration {t}; use a smaller step"
                break
        return {"x": x, "status": status, "message": message, "history": history, "outer_iterations": 0,
                "time": time.perf_counter() - start}

    solver = {"name": "penalty-subgradient", "lam": lam, "iterations": iterations, "step": step}
    return family.multistart(run, "penalty", {**options, "allow_infeasible_start": True}, 0.0, method="penalty",
                            seed=seed, solver=solver)
