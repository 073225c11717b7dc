"""The stochastic methods of AUC fairness (Yao, Lin, Yang, AISTATS 2023): SFLS (Algorithm 1) with the Bregman SMD
oracle (Algorithm 2) and IQRC (Algorithm 3) for weakly convex scores, run for :class:`fairmodel.families.auc.AUCFairness`.

How a run stops (``stop="checks"``, the default, for a linear score with a radius, where the judge has the
level-set bracket): the judge's checks (constraint violations and the bracket width, the very checks that decide
``ok``) run on the best feasible SFLS iterate after every ``CHECK_EVERY`` outer iterations (then every 25 % of the
run), and in between whenever the iterate's exact f0 minus the last check's lower bound on f* (nearly independent
of the candidate: the weak-duality bound is maximized over the multipliers) is within the tolerance; the run stops
when they pass. SFLS's own halting rule U(r) >= -eps_opt then means "the oracle cannot resolve H(r) at this level":
instead of halting, the run doubles the SMD steps per oracle call (a warm restart with a doubled budget) and
continues at the same level. ``max_outer`` and ``max_steps`` (total SMD steps) are caps, CAP_FACTOR times the old
fixed budget (T = 4000 steps x 60 outer iterations). IQRC is checked at the end of each stage (one SFLS run on
(32), with the paper's halting rule); ``S`` is its cap, and a stage that makes no progress doubles the SMD steps
of the next one. ``stop="budget"`` runs Algorithm 1 as printed with the old fixed budget (and IQRC its S
stages with the paper's random output). A network score has no certificate of the judge (it is not convex), so
there the run is the budget one: the judge checks feasibility only.
"""
from __future__ import annotations

import numpy as np

from ..data.dask_sampler import DEFAULT_BUFFER_BYTES
from ..errors import OptionError
from ..stochastic.bregman_smd import AVERAGING, SAMPLING, StepRule, smd
from ..stochastic.iqrc import iqrc
from ..stochastic.sfls import sfls
from ..utilities.validate import as_generator, check_choice, check_int, check_options
from .base import Solution
from .stopping import STOP_RULES, CertifiedStop

SFLS_DEFAULTS = {"T": 4000, "batch_size": 100, "eta": "auto", "tau_scale": 0.5, "steps": "practical", "M": None,
                 "theta": 1.5, "delta": 0.05, "eps": 0.02, "eps_opt": None, "r0": None, "max_outer": 60,
                 "averaging": "uniform", "warm_start": True, "select": "best_feasible", "max_steps": None,
                 "prefetch": True, "sampling": "stratified"}
IQRC_DEFAULTS = {"S": 5, "rho_hat": 1e-5, "output": "random"}
CAP_FACTOR = 10    # stopping on the judge's checks, the old budget (outer iterations, SMD steps, IQRC stages) x this
CHECK_EVERY = 5    # outer iterations between the first scheduled checks (one check costs about a tenth of one)
# Stopping on the checks, the first oracle call takes T = 500 SMD steps and each refinement doubles it: far from f*
# a coarse oracle moves the level as well as a fine one (measured on the bundled Adult problem: 21,500 SMD steps to
# the 1 % bracket from T = 500, 41,000 from T = 1000, 136,000 with the fixed T = 4000).
CHECKS_T = 500
GATHER_BYTES = DEFAULT_BUFFER_BYTES // 2   # chunked data: the features of the minibatches drawn and gathered at once


def solve_sfls(family, method, seed, verbose, options: dict, stop: str = "checks") -> Solution:
    """SFLS (Algorithm 1) or IQRC (Algorithm 3) for ``family``, its result as a Solution."""
    allowed = list(SFLS_DEFAULTS) + ["x0", "callback"] + (list(IQRC_DEFAULTS) if method == "iqrc" else [])
    check_options(options, allowed, f"the stochastic method {method!r}")
    stop = check_choice(stop, "stop", STOP_RULES)
    family.check_kappas()
    checks = stop == "checks" and family.certified
    defaults = {**SFLS_DEFAULTS, **(IQRC_DEFAULTS if method == "iqrc" else {})}
    if checks:
        defaults.update(T=CHECKS_T, max_outer=CAP_FACTOR * SFLS_DEFAULTS["max_outer"],
                        S=CAP_FACTOR * IQRC_DEFAULTS["S"], output="last")
    opts = {**defaults, **options}
    user_callback = opts.pop("callback", None)
    rng = as_generator(seed)
    runner = Runner(family, opts, rng, verbose, method)
    try:
        return _run(family, method, runner, opts, rng, verbose, checks, stop, user_callback, seed)
    finally:
        runner.close()


def _run(family, method, runner, opts, rng, verbose, checks, stop, user_callback, seed) -> Solution:
    stopper = CertifiedStop(family, runner.variables, every=CHECK_EVERY if method == "sfls" else 1,
                            user_callback=user_callback, enabled=checks,
                            cap=runner.max_steps if method == "sfls" else opts["S"],
                            unit="SMD steps" if method == "sfls" else "IQRC stages", verbose=verbose)
    if method == "sfls":
        out = runner.sfls(x0=runner.start_point(opts.get("x0")), stopper=stopper, refine=checks)
        history, metrics = out["history"], out["metrics"]
    else:
        start = runner.start_point(opts.get("x0"))
        previous = {"x": start}

        def stage_end(info):
            if stopper(info):
                return True
            if checks and np.array_equal(info["x"], previous["x"]):
                # the stage made no progress (its SFLS halted at once, or its point was worse): the next stage's
                # oracle takes twice the SMD steps (a warm restart with a doubled budget); the certificate's rate
                # over stages of another budget says nothing of the next, so the fail-fast rule measures it afresh
                grown = min(2 * runner.T, runner.max_steps)
                if grown > runner.T:
                    runner.T = grown
                    stopper.restart_rate()
            previous["x"] = info["x"]
            return False
        out = iqrc(runner.sfls, start, S=opts["S"], rho_hat=opts["rho_hat"], output=opts["output"], rng=rng,
                   evaluate=runner.track, delta=opts["delta"], keep_best=opts["select"] == "best_feasible",
                   verbose=verbose, callback=stage_end)
        history = out["history"]
        metrics = {"iqrc_outer": len(out["centers"]) - 1, "output_index": out["index"],
                   "iterates": np.array([c[: runner.d] for c in out["centers"]]),
                   "smd_steps": sum(o["metrics"]["smd_steps"] for o in out["calls"]),
                   "outer_iterations": sum(o["metrics"]["outer_iterations"] for o in out["calls"])}
    variables = runner.variables(out)
    metrics.update({"interval_half_width": family.half_width, "bregman_C": runner.saddle.C})
    if runner.sampler is not None:      # chunked data: the time the steps waited for gathered rows
        metrics["sampler_wait_s"] = runner.sampler.wait_time
    solver = {"name": method, "stop": stop if checks else "budget",
              "options": {k: v for k, v in opts.items() if isinstance(v, (int, float, str, bool)) or v is None},
              "seed": seed if isinstance(seed, int) else None}
    message = out["message"]
    if stop == "checks" and not checks:
        message += ("; no certificate of the judge for this score (not a linear score on a ball with a valid "
                    "interval I), so the run used its budget (stop='budget') and the judge checks feasibility only")
    solution = Solution(variables=variables, status=out["status"], message=message, history=history,
                        metrics=metrics, solver=solver, certificate=out.get("certificate", {}))
    cap = (f"max_steps={runner.max_steps}, max_outer={opts['max_outer']}" if method == "sfls"
           else f"S={opts['S']} IQRC stages")
    stopper.finish(solution, cap=cap)
    return solution


class Runner:
    """Builds the SMD oracle and runs SFLS for the family (shared by the 'sfls' and 'iqrc' methods)."""

    def __init__(self, family, opts: dict, rng, verbose, method: str = "sfls"):
        self.family, self.opts, self.rng, self.verbose = family, opts, rng, verbose
        self.saddle = family.saddle()
        self.sampler = self.stream = None
        self.d = int(np.prod(family.w.shape))
        self.P = family.pairs.n_pairs
        self.T = check_int(opts["T"], "T (SMD steps per oracle call)")
        self.batch = check_int(opts["batch_size"], "batch_size")
        self.max_steps = (check_int(opts["max_steps"], "max_steps (a cap on the SMD steps of the run)")
                          if opts["max_steps"] is not None else
                          CAP_FACTOR * SFLS_DEFAULTS["T"] * SFLS_DEFAULTS["max_outer"])
        if opts["averaging"] not in AVERAGING:
            raise OptionError(f"averaging must be one of {', '.join(AVERAGING)}; got {opts['averaging']!r}")
        if opts["sampling"] not in SAMPLING:
            raise OptionError(f"sampling must be one of {', '.join(SAMPLING)} (minibatches drawn per cell of the "
                              f"sets, or uniformly as the paper); got {opts['sampling']!r}")
        if opts["select"] not in ("last", "best_feasible"):
            raise OptionError(f"select must be 'last' (the halting iterate, as the paper) or 'best_feasible'; "
                              f"got {opts['select']!r}")
        rule = StepRule(opts["steps"], opts["eta"], opts["tau_scale"], opts["M"])
        radius = family.w.radius
        if opts["steps"] == "theory" and radius is None:
            raise OptionError("steps='theory' needs the diameter of W: give the weights a radius")
        if self.saddle.X is None:       # chunked data: uniform minibatches gathered from the chunks
            self.sampler = family.data.sampler("uniform", self.batch, seed=rng, prefetch=bool(opts["prefetch"]))
            self.stream = self._gathered()
        # the weights' metric (SFLS with the practical steps; IQRC's proximal term is Euclidean): the step's scale
        # is the mean of x' P^-1 x over the design rows, at most the number of parameters (E[x' S^-1 x] = p)
        self.coordinates = family.coordinates() if method == "sfls" and opts["steps"] == "practical" else None
        self.eta0, self.tau0 = rule.bases(self.saddle, radius, self._estimate_M,
                                          None if self.coordinates is None else float(self.d))

    def _gathered(self):
        """Minibatches (rows, design rows) of chunked data: i.i.d. uniform rows (the law of the in-memory draws;
        :class:`~fairmodel.data.dask_sampler.ChunkSampler`), drawn and gathered for as many steps at a time as half
        a sampler buffer of features holds (GATHER_BYTES: the gathers, not the steps, cost the time on small data)."""
        p = int(np.prod(self.family.w.shape))
        steps = max(1, GATHER_BYTES // (8 * p * self.batch))
        while True:
            drawn = self.sampler.draw(steps * self.batch)
            X = self.saddle.batch_design(drawn.X)
            for k in range(0, steps * self.batch, self.batch):
                yield drawn.rows[k:k + self.batch], X[k:k + self.batch]

    def draw(self) -> tuple:
        """One minibatch: (rows, None) drawn uniformly in memory, or (rows, design rows) from chunked data."""
        if self.stream is not None:
            return next(self.stream)
        return self.rng.integers(0, self.saddle.n, size=self.batch), None

    def close(self) -> None:
        """End the sampler's prefetching (chunked data)."""
        if self.sampler is not None:
            self.sampler.close()

    def start_point(self, x0) -> np.ndarray:
        """x(0) = (theta, a = 0, b = 0): the given theta, or a constant score (w = 0, the paper's start; a
        network with a random hidden layer and zero output weights)."""
        P = self.P
        theta = self.family.model.initial(self.rng) if x0 is None else self.family.w.check_value(x0, "x0")
        return np.concatenate([np.ravel(theta), np.zeros(2 * P)])

    def variables(self, out: dict) -> dict:
        """The candidate's variables from an output with ``x`` = (theta, a, b) and ``y`` = (y~, alpha) or None."""
        fam, d, P = self.family, self.d, self.P
        x = out["x"]
        theta = fam.w.project(x[:d])
        shift = getattr(self.saddle, "score_shift", None)      # SMD on the centered design: a, b of the scores
        offset = 0.0 if shift is None else float(shift @ theta)
        variables = {fam.w.name: theta, "a": x[d:d + P] + offset, "b": x[d + P:] + offset}
        y = out.get("y")
        if y is not None:
            variables["y_tilde"], variables["alpha"] = y
            if y[0][0] > 1e-12 and len(fam.gaps):
                variables["lambda"] = y[0][1:] / y[0][0]
        return variables

    def _estimate_M(self, Dx2, Dy2) -> float:
        """M of (55) from the largest stochastic gradient norms at the start point (plug-in for M_x, M_y)."""
        x = self.start_point(None)
        d, P, K1 = self.d, self.P, self.saddle.K1
        gx, gy = 0.0, 0.0
        for _ in range(20):
            rows, X = self.draw()
            g, u, v = self.saddle.gradients(x[:d], x[d:], np.full(K1, 1 / K1), np.zeros(P), rows,
                                            self.saddle.shift(0.0), X)
            gx = max(gx, float(np.linalg.norm(g)))
            gy = max(gy, float(np.sqrt(np.max(np.abs(u)) ** 2 + v @ v)))
        return float(np.sqrt(2 * Dx2 * gx ** 2 + 2 * Dy2 * gy ** 2))

    def track(self, x) -> dict:
        f = self.family.block_values(x[: self.d])
        viol = float(np.max(f[1:] - self.family.bounds[1:])) if f.size > 1 else -np.inf
        return {"track_f0": float(f[0]), "track_violation": viol}

    def _best(self, outputs: list) -> int:
        """The outer iterate returned: the least f0 among those feasible on the training data (or the last)."""
        chosen = len(outputs) - 1
        if self.opts["select"] == "best_feasible":
            feasible = [i for i, o in enumerate(outputs) if o["track_violation"] <= 0]
            if feasible:
                chosen = min(feasible, key=lambda i: outputs[i]["track_f0"])
        return chosen

    def sfls(self, x0=None, rho_hat: float = 0.0, center=None, r0=None, delta=None, stopper=None,
             refine: bool = False) -> dict:
        """One SFLS run. ``stopper``: the judge's checks after outer iterations (see the module docstring);
        ``refine``: double T instead of halting (within ``max_steps``)."""
        o = self.opts
        state = {"x": x0, "y": None, "T": self.T, "steps": 0, "cap": False, "checked": None}
        outputs = []

        def oracle(r, delta_k, k):
            out = smd(self.saddle, r, T=state["T"], eta0=self.eta0, tau0=self.tau0, batch_size=self.batch,
                      rng=self.rng, radius=self.family.w.radius, rho_hat=rho_hat, center=center, x0=state["x"],
                      y0=state["y"], averaging=o["averaging"], stream=self.stream, coordinates=self.coordinates,
                      sampling=o["sampling"])
            state["steps"] += out["steps"]
            if o["warm_start"]:
                state["x"], state["y"] = out["x"], out["y"]
            out.update(self.track(out["x"]))
            out["T"] = state["T"]
            if refine and rho_hat == 0 and out["track_violation"] <= 0:
                out["upper"] = out["track_f0"]     # f0 of a feasible point bounds f*: the level may drop to it
            outputs.append(out)
            return out

        def double(k):
            if state["steps"] + 2 * state["T"] > self.max_steps:
                state["cap"] = True
                return False
            state["T"] *= 2
            return True

        def callback(info):
            if stopper is None:
                return False
            best = self._best(outputs)
            info = {**info, "x": outputs[best]["x"], "y": outputs[best]["y"], "work": state["steps"]}
            if stopper(info):
                return True
            if stopper.enabled and stopper.last is not None and state["checked"] != best:
                # between scheduled checks: the best iterate's exact f0 against the last check's lower bound
                lower = stopper.last[1].certificate.get("f_star_lower", np.nan)
                f0, violation = outputs[best]["track_f0"], outputs[best]["track_violation"]
                if violation <= 0 and f0 - lower <= self.family.accuracy_value(f0):
                    state["checked"] = best
                    stopper.check(stopper.to_variables(info), info["epoch"], state["steps"])
                    if stopper.stop_now:
                        return True
            if stopper.enabled and state["steps"] + state["T"] > self.max_steps:
                state["cap"] = True
                return True
            return False

        if r0 is None:
            r0 = o["r0"] if o["r0"] is not None else self.family.constant_objective
        res = sfls(oracle, r0, theta=o["theta"], delta=o["delta"] if delta is None else delta, eps=o["eps"],
                   eps_opt=o["eps_opt"], max_outer=o["max_outer"], verbose=self.verbose, callback=callback,
                   refine=double if refine else None)
        if state["cap"] and not (stopper is not None and stopper.passed):
            res["status"] = "budget_exhausted"
            res["message"] = (f"SFLS reached max_steps = {self.max_steps} SMD steps after "
                              f"{len(res['history'])} outer iterations")
        chosen = self._best(res["outputs"])
        pick = res["outputs"][chosen]
        res.update(x=pick["x"], y=pick["y"])
        res["metrics"] = {"outer_iterations": len(res["history"]), "chosen_outer_iteration": chosen,
                          "smd_steps": state["steps"], "samples": state["steps"] * self.batch,
                          "eps_opt": res["eps_opt"], "eta0": self.eta0, "tau0": self.tau0,
                          "final_T": state["T"],
                          "iterates": np.array([out["x"][: self.d] for out in res["outputs"]])}
        res["certificate"] = {"final_level": res["level"], "final_U": res["history"][-1]["U"]}
        return res
