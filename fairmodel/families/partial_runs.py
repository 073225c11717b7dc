"""The stochastic methods of partial fairness (He, Huang, Yao, Lin 2025): IDCA with switching-subgradient
subproblems (Algorithms 1 + 2), switching subgradient applied directly to the DC program (Algorithm 3), and the
penalty baseline (78)/(83). Each runs from the starts of :meth:`PartialFairness.multistart`, which judges them.

How a run stops (``stop="checks"``, the default): the judge's checks (constraint violations and the Lemma C.1
step of (25) at the iterate, the very checks that decide ``ok``) run at checkpoints and the run stops when they
pass; the outer iterations (IDCA) or iterations (SSG, penalty) are caps, CAP_FACTOR times the old fixed budgets.
IDCA + SSG checks an iterate only when its SSG step ||x_(k+1) - x_k|| / max(1, ||x_k||) (a cheap estimate of the
exact step, eq. (60)) is within the tolerance, at most on the schedule of :class:`CertifiedStop` (after 5 outer
iterations, then every 5 until that is less than 25 % of the run, then at each 25 % growth). SSG and the penalty
are checked after every quarter of their old budgets (then every 25 % of the run). The fail-fast rule of
:class:`CertifiedStop` measures IDCA + SSG's work in SSG iterations, what an outer iteration costs once its T_k is
raised (on Communities, 118 features, T_k grew from 300 to 4,800 as stalled checks doubled it). Where the judge does not
compute the certificate (large programs without the interior-point solver, ``certificate=False``) the run is the
budget one and says so. ``stop="budget"`` runs the old fixed budgets.

The judge's certificate takes three exact steps of Algorithm 1 from the iterate (solves of (25), to project the
objective decrease left on the path). IDCA + SSG (``exact_steps=True``, the default) judges that path's end too when a
checkpoint fails, keeps the closer to passing, and goes on from the end of the farthest path judged: SSG's outputs
keep an error of about sqrt(2 eps_k / mu) that can hold the judged step above its tolerance however long the run goes
on (measured on held-out partial and weak partial DP problems of 300-450 rows: stalls at 1.4-2.4x the step's
tolerance or at 1.6-2.2x that of the decrease left). Once the run has taken a path end, every iterate whose SSG step
passes is checked at once instead of on the schedule: the checks' exact steps move it along the path for less than
the SSG iterations the schedule waits for, and SSG may not move at all from a point of the exact path (its constraints
are active there: every objective step leaves the feasible set, and the Polyak steps come back).
"""
from __future__ import annotations

import time

import numpy as np

from ..errors import InfeasibleError, OptionError
from ..stochastic.idca import idca, ssg_inner, working_set_ssg_inner
from ..stochastic.ssg import ssg
from ..utilities.validate import check_bool, check_choice
from .partial_program import MU, extrapolate_option, max_constraint, nonneg, positive_int, schedule, ssg_scales
from .partial_rates import RATE_STEPS, rate_blocks, with_true_rates
from .stopping import STOP_RULES, CertifiedStop

# IDCA + SSG: eps_k = max(eps_min, eps * eps_decay^k) (measured on Law School subsamples: a constant
# eps = 1e-3 (the paper's grid) stalls 0.05 above the exact-inner objective after 100 x 200 iterations;
# the decreasing schedule reaches ~1e-3); the paper's constant eps is eps_decay=1.
IDCA_DEFAULTS = {"outer": 300, "inner": 300, "eps": 1e-2, "eps_decay": 0.97, "eps_min": 1e-5}
SSG_DEFAULTS = {"iterations": 20000, "eps": 1e-3}
PENALTY_DEFAULTS = {"iterations": 20000, "step": 1e-3}
CAP_FACTOR = 10          # stopping on the checks, the old budget times this is the cap
IDCA_CHECK_EVERY = 5     # outer iterations before the first check of IDCA + SSG (then the CertifiedStop schedule)
CHECKS_PER_BUDGET = 4    # SSG and the penalty: a check after every quarter of the old budget
INNER_CAP_FACTOR = 16    # SSG iterations per subproblem at most this times the default 300
STALL_RATIO, STALL_BOOST = 2.0, 2   # a check whose exact step exceeds SSG's step 2x: twice the SSG iterations
# IDCA + SSG from a start that SSG cannot leave: an outer iteration whose SSG output is its anchor, before the run has
# moved at all, halves eps_k from then on (stop="checks"). SSG's objective steps move eps_k / ||g_0'||; at w = 0 every
# score sits at a kink of the bands' ramps, where the linearized constraint of (25) grows at first order, so with a
# tight bound every objective step leaves the feasible set and the Polyak steps come back to the anchor: the output was
# the start (w = 0, ln 2 for the logistic loss) until the fail-fast rule stopped the run. Measured on 400 rows of Law
# School by gender (partial_dp, band (0.5, 1), kappa 0.01) and of Adult by sex (weak_partial_dp, kappa 0.004): NOT OK
# at w = 0 after 20 outer iterations; with one halving both certify (29 s, 9 s), within 3.1e-4 and 7e-5 of exact IDCA.
START_EPS_CUT = 2.0


def _stop_rule(family, options, stop, last_step=None):
    """(stop on the checks?, note): the checks need the judge's certificate; without it the budget is run."""
    stop = check_choice(stop, "stop", STOP_RULES)
    if stop == "budget":
        return False, ""
    if family.certificate_available(nonneg(options.get("mu", MU), "mu") or MU, options.get("certificate"), last_step):
        return True, ""
    return False, ("the judge does not compute the Lemma C.1 certificate of this program (certificate=False, or "
                   "too many ramp pieces for the CVXPY program of (25)), so the run used its budget "
                   "(stop='budget')")


def _stopper(family, program, mu, options, enabled, every, user_callback, cap, unit, verbose, path_ends=False,
             on_ramp=False):
    """The run's :class:`CertifiedStop`, and the list its checkpoints' (evaluation, end of the exact IDCA path its
    certificate followed) go to (with ``path_ends``; the caller empties it). ``path_ends``: a checkpoint that fails
    also judges that path's end (the second opinion), and keeps the closer to passing. ``on_ramp``: the checks are
    :meth:`~fairmodel.families.partial.PartialFairness.run_acceptance` (a run of the true-rate continuation)."""
    stopper = CertifiedStop(family, lambda info: program.layout.split(info["x"]), every=every,
                            context={"mu": mu if mu > 0 else MU, "certificate": options.get("certificate")},
                            user_callback=user_callback, enabled=enabled, cap=cap, unit=unit, verbose=verbose)
    acceptance = family.run_acceptance if on_ramp else family.acceptance
    judged = []
    if path_ends or on_ramp:
        def judge(variables):
            judged.append(family.evaluate_along_path(variables, **stopper.context))
            return judged[-1][0], acceptance(judged[-1][0], "stochastic")

        stopper.judge = judge
        if path_ends:       # called right after the candidate's judgment: the end of the path it followed
            stopper.second_opinion = lambda variables: judged[-1][1]
    return stopper, judged


def solve_idca_ssg(family, seed, verbose, options, stop="checks"):
    """IDCA (Algorithm 1) with switching-subgradient subproblems (Algorithm 2)."""
    program = family.program
    checks, note = _stop_rule(family, options, stop, last_step=1.0)
    mu = nonneg(options.get("mu", MU), "mu")
    outer = positive_int(options.get("outer", IDCA_DEFAULTS["outer"] * (CAP_FACTOR if checks else 1)), "outer", 0)
    margin = check_bool(options.get("margin", True), "margin")
    extrapolate = extrapolate_option(options)
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
    # raised where a check finds SSG's steps far shorter than the exact step (factor), and while SSG cannot leave the
    # start (eps_cut, START_EPS_CUT)
    boost = {"factor": 1, "eps_cut": 1.0, "moved": False}
    if np.ndim(eps) == 0 and not callable(eps) and not theory:
        decay = nonneg(options.get("eps_decay", IDCA_DEFAULTS["eps_decay"]), "eps_decay", strict=True)
        floor = nonneg(options.get("eps_min", IDCA_DEFAULTS["eps_min"]), "eps_min", strict=True)
        if decay > 1:
            raise OptionError(f"eps_decay must lie in (0, 1] (eps_k = max(eps_min, eps * eps_decay^k)); "
                              f"got {decay}")
        base = eps_k(0)
        eps_k = (lambda k: max(floor, base * decay ** k / boost["eps_cut"]))
    travel = None
    if checks and not theory:
        # SSG must be able to move as far as the step the judge tolerates, or its step says nothing about it
        travel = (lambda anchor: family.step_tolerance * max(1.0, float(np.linalg.norm(anchor))))
    inner_cap = INNER_CAP_FACTOR * IDCA_DEFAULTS["inner"]
    base_T = schedule(inner_T, "inner", integer=True)
    T = (lambda k: min(inner_cap, base_T(k) * boost["factor"]))
    split = objective_split(family, options)
    scales = ssg_scales(program, mu)
    if split == "curvature":
        inner = working_set_ssg_inner(program, family.hinge(), mu, eps_k, T, margin, travel=travel,
                                      max_iterations=inner_cap, guard=family.working_set_guard(), scales=scales)
    else:
        inner = ssg_inner(program, mu, eps_k, T, margin, travel=travel, max_iterations=inner_cap, scales=scales)
    user_callback = options.get("callback")
    follow = checks and check_bool(options.get("exact_steps", True), "exact_steps")
    rate_steps = positive_int(options.get("rate_steps", RATE_STEPS), "rate_steps", 0)
    on_ramp = bool(rate_steps and rate_blocks(program))

    # the fail-fast rule counts the run's work in SSG iterations, not outer iterations: an outer iteration costs its
    # T_k, which the travel rule and the boosts below raise up to INNER_CAP_FACTOR x, so a run whose boosted
    # iterations stall is measured by what they cost; its cap is what the outer cap costs at the unraised T_k
    work_cap = sum(base_T(k) for k in range(outer))

    def run(x0, label):
        stopper, judged = _stopper(family, program, mu, options, checks, IDCA_CHECK_EVERY, None, work_cap,
                                   "SSG iterations", verbose, path_ends=follow, on_ramp=on_ramp)
        boost.update(factor=1, eps_cut=1.0, moved=False)
        done = {"ssg": 0, "adopted": 0}
        ahead = {}      # the judged end of an exact IDCA path from the next anchor, taken as its outer iteration's step

        def counted(anchor, k):
            if ahead.get("from") is anchor:
                done["adopted"] += 1
                return ahead.pop("to"), {"inner_iterations": 0, "adopted": 1}
            x_next, info = inner(anchor, k)
            done["ssg"] += info["inner_iterations"]
            return x_next, info

        def callback(info):
            if user_callback is not None and user_callback(info):
                stopper.by_user = True
                return True
            if ahead.pop("from", None) is not None:     # the outer iteration just taken is a judged path's end
                return False
            # the SSG step estimates the exact step of (25) at the iterate (within sqrt(2 eps_k / mu), eq. (60)):
            # the judge's (costlier) check runs only when the estimate passes
            x = info["x"]
            boost["moved"] = boost["moved"] or info["step"] > 0.0
            if checks and not boost["moved"]:
                boost["eps_cut"] *= START_EPS_CUT
            relative = info["step"] / max(1.0, float(np.linalg.norm(x)))
            if not checks or relative > family.step_tolerance:
                return False
            stopper.context["last_step"] = info["step"]
            # once the run has taken a path end, every iterate whose SSG step passes is checked at once, not on the
            # schedule: the checks' exact steps move it along the path for less than the SSG iterations the schedule
            # waits for (300 rows of Communities, 118 features: 9 checks took 1.9 s of a 19 s run; on the schedule
            # 6 checks took 1.3 s of a 49 s run that ended not ok), and SSG may not move at all (stuck: its output is
            # its anchor, a point of the exact path whose constraints are active, where every objective step leaves
            # the feasible set and the Polyak steps come back)
            stuck = done["adopted"] > 0 and info["step"] == 0.0
            if done["adopted"] > 0:
                stopper.check(stopper.to_variables(info), info["epoch"], done["ssg"])
                if stopper.stop_now or stopper.contradicted:
                    return True
            elif stopper({**info, "work": done["ssg"]}):
                return True
            checked = stopper.last is not None and stopper.last[3] == info["epoch"]
            # the candidate's own evaluation, and the end of the farthest exact path judged from it
            own = judged[0][0] if judged else stopper.last[1] if checked else None
            end = next((program.start(e) for _, e in reversed(judged) if e is not None), None)
            judged.clear()
            if checked and end is not None and not np.array_equal(end, x):
                ahead.update({"from": x, "to": end})
            if checked and not stuck and own.certificate.get("relative_step", 0.0) > STALL_RATIO * relative:
                # a stall, not a critical point: SSG's output moves far less than the exact solution of (25)
                # (it zig-zags between nearly active constraints), so its subproblems get more iterations
                boost["factor"] = min(boost["factor"] * STALL_BOOST, INNER_CAP_FACTOR)
            return False

        out = idca(program, x0, counted, outer=outer, tol=tol, mu=mu, verbose=verbose, label=label,
                   max_time=options.get("max_time"), callback=callback, extrapolate=extrapolate)
        if stopper.passed and not stopper.by_user:      # the checkpoint that passed may be its judged path's end
            out["x"] = program.start(stopper.last[0])
        elif stopper.gave_up is not None and not stopper.by_user and stopper.best is not None:
            out["x"] = program.start(stopper.best[2])   # the best checkpoint, which the result returns (finish)
        out.update(stopper=stopper, cap=f"outer={outer}, {work_cap:,} SSG iterations without raised inner iterations",
                   adopted_path_ends=done["adopted"])
        return out

    solver = {"name": "idca+ssg" + ("" if split == "exact" else " (working set, curvature split)"), "split": split,
              "mu": mu, "outer": outer, "margin": margin, "extrapolate": extrapolate,
              "stop": "checks" if checks else "budget",
              "eps": eps if isinstance(eps, (int, float)) else "schedule", "final_eps": eps_k(max(outer - 1, 0)),
              "inner": inner_T if isinstance(inner_T, (int, float)) else "schedule", "rate_steps": rate_steps}
    sol = family.multistart(with_true_rates(program, run, rate_steps, verbose, family.restart(options)),
                            "IDCA (SSG subproblems)", options, mu, method="idca", seed=seed, solver=solver, note=note)
    sol.metrics.update({f"theory_{k}": v for k, v in theory.items()})
    return sol


SPLITS = ("exact", "curvature")


def objective_split(family, options) -> str:
    """How IDCA + SSG treats the objective's smooth part: ``"exact"`` (f_0 in every subproblem, its value and gradient
    at every SSG step: a pass over the rows each) or ``"curvature"`` (f_0 split as [(1/2) v'Lv] - [(1/2) v'Lv - f_0]
    with L >= its Hessian, the second part linearized at each anchor like every f_i-, and the constraints on a
    working set of hinges: SSG runs in the client, a few passes per outer iteration). Default: "curvature" on chunked
    rows where the program has the hinge form (partial_dp, ramp rate gaps; a smooth objective), else "exact"."""
    split = options.get("split")
    if split is None:
        return "curvature" if family.chunked and not isinstance(family.hinge(), str) else "exact"
    split = check_choice(split, "split", SPLITS)
    if split == "curvature" and isinstance(family.hinge(), str):
        raise OptionError(f"split='curvature' needs the hinge form of the constraints and a smooth objective: "
                          f"{family.hinge()}; use split='exact'")
    return split


def solve_direct_ssg(family, seed, verbose, options, stop="checks"):
    """Algorithm 3: SSG on (21) with f = max_i f_i and the DC subgradient f+' - f-' (App. D.6)."""
    program = family.program
    checks, note = _stop_rule(family, options, stop)
    iterations = positive_int(options.get("iterations", SSG_DEFAULTS["iterations"] * (CAP_FACTOR if checks else 1)),
                              "iterations")
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
    every = SSG_DEFAULTS["iterations"] // CHECKS_PER_BUDGET

    def run(x0, label):
        start = time.perf_counter()
        if program.max_violation(x0) > (eps_t(0) if callable(eps_t) else eps_t):
            raise InfeasibleError("direct SSG (Algorithm 3) needs a start with f_i(w0) <= eps")
        stopper = _stopper(family, program, 0.0, options, checks, 1, options.get("callback"), iterations,
                           "SSG iterations", verbose)[0]
        out = ssg(x0, eps_t, iterations, program.objective_value_and_grad, constraint, program.project,
                  record_every=max(1, iterations // 200), callback_every=every,
                  callback=lambda info: stopper({**info, "work": (info["epoch"] + 1) * every}))
        status = {"completed": "completed", "converged": "converged"}.get(out["status"], "failed")
        history = [{"iteration": t, "objective": f, "max_f": g} for t, f, g in out["trace"]]
        return {"x": out["x"], "status": status, "message": out["message"], "history": history,
                "outer_iterations": 0, "time": time.perf_counter() - start, "inner_total": out["iterations"],
                "n_feasible": out["n_feasible"], "stopper": stopper, "cap": f"iterations={iterations}"}

    solver = {"name": "ssg", "iterations": iterations, "eps_schedule": kind, "stop": "checks" if checks else "budget"}
    return family.multistart(run, "SSG (Algorithm 3)", options, 0.0, method="ssg", seed=seed, solver=solver,
                             note=note)


def solve_penalty(family, seed, verbose, options, stop="checks"):
    """Penalty models (78)/(83): f_0 + lam * penalty, plain subgradient descent, last iterate (App. D.4)."""
    program = family.program
    if "lam" not in options:
        raise OptionError("the penalty baseline needs lam= (the weight of the unfairness penalty (78)/(83))")
    checks, note = _stop_rule(family, options, stop)
    lam = nonneg(options["lam"], "lam")
    iterations = positive_int(options.get("iterations", PENALTY_DEFAULTS["iterations"]
                                          * (CAP_FACTOR if checks else 1)), "iterations")
    step = nonneg(options.get("step", PENALTY_DEFAULTS["step"]), "step", strict=True)
    every = PENALTY_DEFAULTS["iterations"] // CHECKS_PER_BUDGET

    def run(x0, label):
        start = time.perf_counter()
        stopper = _stopper(family, program, 0.0, options, checks, 1, options.get("callback"), iterations,
                           "iterations", verbose)[0]
        x, history, status, message = x0, [], "completed", ""
        record = max(1, iterations // 200)
        for t in range(iterations):
            f, g0 = program.objective_value_and_grad(x)
            p, gp = program.penalty(x)
            if t % record == 0:
                history.append({"iteration": t, "objective": f, "penalty": p})
            x = program.project(x - step * (g0 + lam * gp))
            if not np.all(np.isfinite(x)):
                status, message = "diverged", f"non-finite iterate at iteration {t}; use a smaller step"
                break
            if (t + 1) % every == 0 and stopper({"epoch": (t + 1) // every - 1, "x": x, "work": t + 1}):
                message = f"stopped after iteration {t}"
                break
        return {"x": x, "status": status, "message": message, "history": history, "outer_iterations": 0,
                "time": time.perf_counter() - start, "stopper": stopper, "cap": f"iterations={iterations}"}

    solver = {"name": "penalty-subgradient", "lam": lam, "iterations": iterations, "step": step,
              "stop": "checks" if checks else "budget"}
    return family.multistart(run, "penalty", {**options, "allow_infeasible_start": True}, 0.0, method="penalty",
                             seed=seed, solver=solver, note=note)
