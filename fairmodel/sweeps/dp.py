"""The eps sweep of DP post-processing: one problem per budget, sequential with warm starts or all budgets at
once in one vectorized stochastic run (Chzhen, Hebiri, Taturyan 2024)."""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from ..errors import OptionError, UnsupportedProblemError
from ..expressions.atoms.dp import dp_gap
from ..families.dp import METHODS, DPPostProcessing
from ..families.dp_runs import RoundJudge, run_solution, stop_rule
from ..results.judge import judge_solution
from ..results.result import Result
from ..utilities.validate import as_generator, check_options, check_problem
from .frontier import Frontier, sweep


def dp_sweep(problem, eps_values, backend: str = "stochastic", *, parallel: bool = False, warm_start: bool = True,
             verbose=None, **options) -> Frontier:
    """Solve ``problem`` for every eps in ``eps_values`` (numbers or per-group vectors); a :class:`fairmodel.Frontier`.

    Sequential (default): :func:`fairmodel.sweeps.frontier` over the eps in the given order (give them from the loosest
    to the tightest), each stochastic solve warm-started from the previous duals. ``parallel=True``
    (stochastic backend, pools): one vectorized run solves every eps at once on the same sampled points (a
    stack of duals; the cost of a step hardly grows with the number of eps), with the same results as one
    run per eps with the same seed: the rounds of the run stop on the judge's checks of each eps (an eps whose
    checks pass keeps that round's duals, the others go on; ``stop="budget"``, the default with
    ``variant="reference"``, runs ``T`` for all). Every result, on either path, is judged by the checks that decide
    ``ok`` (constraint violations and certificates). Each
    parallel result's ``timings['solve']`` is the run's time divided by the number of eps
    (``timings['grid_solve']`` the whole run). For a scalar budget declared with ``fm.parameter``,
    ``prob.sweep(name, values)`` does the sequential sweep too. ``options`` go to ``problem.solve``
    (``data=``, ``method=``, ``T=``, ``seed=``, ...).

    Seeds: a stochastic sweep without ``seed=`` draws one seed from the operating system, uses it for every eps and
    records it in every result (``result.seed``): ``dp_sweep(..., seed=frontier.results[0].seed)`` repeats the
    sweep exactly.
    """
    check_problem(problem, "dp_sweep", what="a DP post-processing fm.Problem")
    family = problem.family
    if not isinstance(family, DPPostProcessing) or family.constraint is None:
        raise OptionError("dp_sweep needs a DP post-processing problem with a constraint fm.dp_gap(post) <= eps")
    values = list(eps_values)
    if not values:
        raise OptionError("eps_values is empty")
    if backend == "stochastic" and options.get("seed") is None:
        options["seed"] = fresh_seed()

    def build(eps):
        return problem.replace(constraints=[(dp_gap(family.post, pairwise=family.pairwise) <= eps)
                                            .named(family.constraint.name)])
    if not parallel:
        return sweep(build, values, param="eps", backend=backend, warm_start=warm_start, verbose=verbose, **options)
    if backend != "stochastic":
        raise OptionError("parallel=True runs the stochastic backend on a stack of duals; use backend='stochastic'")
    return Frontier(param="eps", values=values, results=_parallel_sweep([build(e) for e in values], options),
                    backend=backend)


def fresh_seed() -> int:
    """A seed drawn from the operating system's entropy (recorded in the results, so the run can be repeated)."""
    return int(np.random.SeedSequence().generate_state(1)[0])


def _parallel_sweep(problems, options) -> list:
    """One stochastic run on the stacked duals of every problem (same data, same points), judged one by one."""
    opts = dict(options)
    data, weights, seed = opts.pop("data", None), opts.pop("sample_weight", None), opts.pop("seed", None)
    method, certify, verbose = opts.pop("method", "sgd3"), opts.pop("certify", None), opts.pop("verbose", None)
    stop = stop_rule(opts.pop("stop", None), opts.get("variant", "paper"))
    if method not in METHODS:
        raise OptionError(f"unknown stochastic method {method!r}; valid methods are {', '.join(METHODS)}")
    names = ("T", "batch_size", "oracle", "mu", "inner", "variant", "smoothness", "step", "tail", "history_every",
             "callback")
    check_options(opts, names, "dp_sweep(parallel=True)")
    args = {"T": None, "batch_size": None, "oracle": "resample", "mu": None, "inner": "acsa2", "variant": "paper",
            "smoothness": None, "step": None, "tail": 1.0, "history_every": 0, "callback": None, **opts}
    families = [p.family for p in problems]
    head = families[0]
    if math.isinf(head.beta):
        raise UnsupportedProblemError("the stochastic backend needs entropy > 0")
    base = head._prepare(data, weights)
    preps = [replace(base, eps=f.constraint.eps(base.p.shape[0])) for f in families]
    for f, prep in zip(families, preps):
        f.check_feasible(f._dual(prep), prep.tau.shape[1])
    eps = np.stack([prep.eps for prep in preps])[:, None, :]
    z0 = np.zeros((len(preps), 2, head.post.m, base.T.shape[1]))
    judges = [RoundJudge(f, {"prepared": prep, "certify": certify}, enabled=stop == "checks", verbose=verbose)
              for f, prep in zip(families, preps)]
    oracle = args.pop("oracle")
    start = time.perf_counter()
    run, info = head._pool_run(base, eps, z0, as_generator(seed), oracle, args.pop("T"), args.pop("batch_size"),
                               method, verbose=verbose, stop=stop, judges=judges, **args)
    elapsed = time.perf_counter() - start
    results = []
    for k, (prob, fam, prep) in enumerate(zip(problems, families, preps)):
        solution = run_solution(fam, run, dict(info, grid_size=len(preps)), method, prep, oracle, certify, index=k)
        judges[k].finish(solution, cap=f"T={info['T']}")
        judged = time.perf_counter()
        evaluation, checks = judge_solution(fam, solution, "stochastic")
        timings = {"total": elapsed / len(preps) + time.perf_counter() - judged, "solve": elapsed / len(preps),
                   "grid_solve": elapsed, "judge": time.perf_counter() - judged}
        results.append(Result.from_parts(backend="stochastic", method=method, family=fam.name, seed=seed,
                                         solution=solution, evaluation=evaluation, timings=timings,
                                         problem_text=str(prob), name=prob.label,
                                         checks=[c.to_dict() for c in checks]))
    return results
