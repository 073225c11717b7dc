"""The stochastic methods of AUC fairness (Yao, Lin, Yang, AISTATS 2023): SFLS (Algorithm 1) with the Bregman SMD
oracle (Algorithm 2) and IQRC (Algorithm 3) for weakly convex scores, run for :class:`fairmodel.families.auc.AUCFairness`."""
from __future__ import annotations

import numpy as np

from .._validate import as_generator, check_int, check_options
from ..errors import OptionError
from ..stochastic.bregman_smd import AVERAGING, StepRule, smd
from ..stochastic.iqrc import iqrc
from ..stochastic.sfls import sfls
from .base import Solution

SFLS_DEFAULTS = {"T": 4000, "batch_size": 100, "eta": "auto", "tau_scale": 0.5, "steps": "practical", "M": None,
                 "theta": 1.5, "delta": 0.05, "eps": 0.02, "eps_opt": None, "r0": None, "max_outer": 60,
                 "averaging": "uniform", "warm_start": True, "select": "best_feasible"}
IQRC_DEFAULTS = {"S": 5, "rho_hat": 1e-5, "output": "random"}


def solve_sfls(family, method, seed, verbose, options: dict) -> Solution:
    """SFLS (Algorithm 1) or IQRC (Algorithm 3) for ``family``, its result as a Solution."""
    allowed = list(SFLS_DEFAULTS) + ["x0"] + (list(IQRC_DEFAULTS) if method == "iqrc" else [])
    check_options(options, allowed, f"the stochastic method {method!r}")
    family.check_kappas()
    opts = {**SFLS_DEFAULTS, **(IQRC_DEFAULTS if method == "iqrc" else {}), **options}
    rng = as_generator(seed)
    runner = Runner(family, opts, rng, verbose)
    if method == "sfls":
        out = runner.sfls(x0=runner.start_point(opts.get("x0")))
        history, metrics = out["history"], out["metrics"]
    else:
        out = iqrc(runner.sfls, runner.start_point(opts.get("x0")), S=opts["S"], rho_hat=opts["rho_hat"],
                   output=opts["output"], rng=rng, evaluate=runner.track, delta=opts["delta"],
                   keep_best=opts["select"] == "best_feasible", verbose=verbose)
        history = out["history"]
        metrics = {"iqrc_outer": len(out["centers"]) - 1, "output_index": out["index"],
                   "iterates": np.array([c[: runner.d] for c in out["centers"]]),
                   "smd_steps": sum(o["metrics"]["smd_steps"] for o in out["calls"]),
                   "outer_iterations": sum(o["metrics"]["outer_iterations"] for o in out["calls"])}
    x = out["x"]
    d = runner.d
    P = family.pairs.n_pairs
    variables = {family.w.name: family.w.project(x[:d]), "a": x[d:d + P], "b": x[d + P:]}
    if out.get("y") is not None:
        variables["y_tilde"], variables["alpha"] = out["y"]
        if out["y"][0][0] > 1e-12 and len(family.gaps):
            variables["lambda"] = out["y"][0][1:] / out["y"][0][0]
    metrics.update({"interval_half_width": family.half_width, "bregman_C": runner.saddle.C})
    solver = {"name": method, "options": {k: v for k, v in opts.items() if isinstance(v, (int, float, str, bool))
                                          or v is None}, "seed": seed if isinstance(seed, int) else None}
    return Solution(variables=variables, status=out["status"], message=out["message"], history=history,
                    metrics=metrics, solver=solver, certificate=out.get("certificate", {}))


class Runner:
    """Builds the SMD oracle and runs SFLS for the family (shared by the 'sfls' and 'iqrc' methods)."""

    def __init__(self, family, opts: dict, rng, verbose):
        self.family, self.opts, self.rng, self.verbose = family, opts, rng, verbose
        self.saddle = family.saddle()
        self.d = int(np.prod(family.w.shape))
        self.P = family.pairs.n_pairs
        self.T = check_int(opts["T"], "T (SMD steps per oracle call)")
        self.batch = check_int(opts["batch_size"], "batch_size")
        if opts["averaging"] not in AVERAGING:
            raise OptionError(f"averaging must be one of {', '.join(AVERAGING)}; got {opts['averaging']!r}")
        if opts["select"] not in ("last", "best_feasible"):
            raise OptionError(f"select must be 'last' (the halting iterate, as the paper) or 'best_feasible'; "
                              f"got {opts['select']!r}")
        rule = StepRule(opts["steps"], opts["eta"], opts["tau_scale"], opts["M"])
        radius = family.w.radius
        if opts["steps"] == "theory" and radius is None:
            raise OptionError("steps='theory' needs the diameter of W: give the weights a radius")
        self.eta0, self.tau0 = rule.bases(self.saddle, radius, self._estimate_M)

    def start_point(self, x0) -> np.ndarray:
        """x(0) = (theta, a = 0, b = 0): the given theta, or a constant score (w = 0, the paper's start; a
        network with a random hidden layer and zero output weights)."""
        P = self.P
        theta = self.family.model.initial(self.rng) if x0 is None else self.family.w.check_value(x0, "x0")
        return np.concatenate([np.ravel(theta), np.zeros(2 * P)])

    def _estimate_M(self, Dx2, Dy2) -> float:
        """M of (55) from the largest stochastic gradient norms at the start point (plug-in for M_x, M_y)."""
        x = self.start_point(None)
        d, P, K1 = self.d, self.P, self.saddle.K1
        gx, gy = 0.0, 0.0
        for _ in range(20):
            rows = self.rng.integers(0, self.saddle.n, size=self.batch)
            g, u, v = self.saddle.gradients(x[:d], x[d:], np.full(K1, 1 / K1), np.zeros(P), rows,
                                            self.saddle.shift(0.0))
            gx = max(gx, float(np.linalg.norm(g)))
            gy = max(gy, float(np.sqrt(np.max(np.abs(u)) ** 2 + v @ v)))
        return float(np.sqrt(2 * Dx2 * gx ** 2 + 2 * Dy2 * gy ** 2))

    def track(self, x) -> dict:
        f = self.family.block_values(x[: self.d])
        viol = float(np.max(f[1:] - self.family.bounds[1:])) if f.size > 1 else -np.inf
        return {"track_f0": float(f[0]), "track_violation": viol}

    def sfls(self, x0=None, rho_hat: float = 0.0, center=None, r0=None, delta=None) -> dict:
        o = self.opts
        state = {"x": x0, "y": None}
        steps = [0]

        def oracle(r, delta_k, k):
            out = smd(self.saddle, r, T=self.T, eta0=self.eta0, tau0=self.tau0, batch_size=self.batch, rng=self.rng,
                      radius=self.family.w.radius, rho_hat=rho_hat, center=center, x0=state["x"], y0=state["y"],
                      averaging=o["averaging"])
            steps[0] += out["steps"]
            if o["warm_start"]:
                state["x"], state["y"] = out["x"], out["y"]
            out.update(self.track(out["x"]))
            return out

        if r0 is None:
            r0 = o["r0"] if o["r0"] is not None else float(self.family.pairs.c1[0] * self.family.pairs.c2[0] ** 2)
        res = sfls(oracle, r0, theta=o["theta"], delta=o["delta"] if delta is None else delta, eps=o["eps"],
                   eps_opt=o["eps_opt"], max_outer=o["max_outer"], verbose=self.verbose)
        chosen = len(res["outputs"]) - 1
        if o["select"] == "best_feasible":
            feas = [i for i, h in enumerate(res["history"]) if h["track_violation"] <= 0]
            if feas:
                chosen = min(feas, key=lambda i: res["history"][i]["track_f0"])
        pick = res["outputs"][chosen]
        res.update(x=pick["x"], y=pick["y"])
        res["metrics"] = {"outer_iterations": len(res["history"]), "chosen_outer_iteration": chosen,
                          "smd_steps": steps[0], "samples": steps[0] * self.batch, "eps_opt": res["eps_opt"],
                          "eta0": self.eta0, "tau0": self.tau0,
                          "iterates": np.array([out["x"][: self.d] for out in res["outputs"]])}
        res["certificate"] = {"final_level": res["level"], "final_U": res["history"][-1]["U"]}
        return res
