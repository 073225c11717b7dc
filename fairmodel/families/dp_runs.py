"""The stochastic runs of DP post-processing (Chzhen, Hebiri, Taturyan 2024): the points a run and its judge
use, the optimizer set-up (SGD3 + AC-SA^2, AC-SA^2, AC-SA, projected SGD on the smooth dual (5)), the solution of
a run, and runs on a stream of unlabeled chunks (``data=iterator``, ``partial_fit``). Used by
:mod:`fairmodel.families.dp` and the eps sweep; the family object is passed in, never imported.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError, OptionError
from ..oracles.dp_dual import canonical
from ..stochastic.dp_postprocessing import FIRST_BATCH, FIRST_STEPS, Restarts, Schedule, doubling
from ..stochastic.sgd3 import sgd3_stages
from ..utilities.progress import Progress
from ..utilities.validate import as_generator, check_choice, check_int
from .base import Solution
from .stopping import STOP_RULES, CertifiedStop

STREAM_SLICE = 65_536    # rows of a stream chunk handled at once (bounds memory whatever the chunk size)
JUDGE_SIZE = 20_000      # a stream is judged on a uniform reservoir sample of this many points
DEFAULT_T = 20_000       # stop="budget": the stochastic gradients of the one run when T is not given
DEFAULT_CAP = 100_000_000  # stop="checks": the cap on the points sampled by all rounds when T is not given


@dataclass
class Prepared:
    """The base models' values on a finite set of unlabeled points, with p, t_hat and the weights."""

    first: np.ndarray          # eta_hat (n,) or the cost matrix (n, m)
    tau: np.ndarray            # (n, K)
    p: np.ndarray              # (K,)
    T: np.ndarray              # the dual's columns: t_hat (n, K), or its pair differences (pairwise)
    weights: np.ndarray | None  # (n,) summing to 1, or None (uniform)
    eps: np.ndarray | None     # one bound per column of T, or None (no fairness constraint)
    chunked: bool = False      # the points are Dask-backed: the judge sums by blocks of rows (ChunkedDual)
    cache: dict = field(default_factory=dict, repr=False, compare=False)   # the judge's exact F* per problem

    @property
    def n(self) -> int:
        return self.T.shape[0]


def is_chunked(data) -> bool:
    return getattr(data, "is_chunked", False) or (hasattr(data, "dask") and hasattr(data, "chunks"))


def refuse_chunked(data, what: str) -> None:
    """Dask-backed points are refused by the exact programs, as for group DRO (the message names the ways out)."""
    if getattr(data, "is_chunked", False):
        data.in_memory_X(what)
    if is_chunked(data):
        raise DataError(f"{what} needs the points in memory, but data= is a Dask array. Solve with the stochastic "
                        f"backend (prob.solve(backend='stochastic', data=...)), or pass an in-memory sample: "
                        f"fm.Dataset.from_dask(X).subsample(n, seed=0)")


VARIANTS = ("paper", "reference")


def stop_rule(stop, variant: str) -> str:
    """The stopping rule of a stochastic run, with ``variant`` checked: ``stop`` when given; else ``"budget"`` for
    ``variant="reference"``, which reproduces the authors' code, one run of a fixed T (its length, not a cap on
    the rounds of ``"checks"``); else ``"checks"``."""
    if variant not in VARIANTS:
        raise OptionError(f"variant must be 'paper' or 'reference' (the authors' code's deviations from "
                          f"Algorithms 2-4); got {variant!r}")
    if stop is None:
        return "budget" if variant == "reference" else "checks"
    return check_choice(stop, "stop", STOP_RULES)


def check_T(T) -> int:
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise OptionError(f"T (the number of stochastic gradients) must be a positive integer; got {T!r}")
    return int(T)


def smoothness_constant(smoothness, beta: float, sigma2: float, plugin) -> float:
    """M = 2 beta sigma^2 (Lemma 3.4, Alg. 1 line 2; ``sigma2`` the population constant), 2 beta sigma_hat^2
    (App. E) or a given number."""
    if smoothness == "sigma2":
        return 2.0 * beta * sigma2
    if smoothness == "plugin":
        return 2.0 * beta * plugin()
    if isinstance(smoothness, bool) or not isinstance(smoothness, (int, float)) or not smoothness > 0:
        raise OptionError(f"smoothness must be 'sigma2', 'plugin' or a positive number; got {smoothness!r}")
    return float(smoothness)


def start_run(method, z0, M, mu, T, batch_size, inner, variant, step, tail, beta, eps, history_every, callback,
              stop: str = "budget", check=None, max_batch: int | None = None) -> Restarts:
    """The run of ``method`` on the dual (5): one run of T gradients (``stop="budget"``, Algorithm 1 as printed), or
    rounds warm-started at the previous output with doubling steps and batch, judged between rounds by ``check``
    and capped at T sampled points (``stop="checks"``; :class:`~fairmodel.stochastic.dp_postprocessing.Restarts`)."""
    schedule = Schedule(method, M, beta, mu, inner, variant == "reference", step, tail)
    if stop == "budget":
        T = DEFAULT_T if T is None else check_T(T)
        batch = 1 if batch_size is None else batch_size
        check_cap(schedule, T, batch, "the number of stochastic gradients")
        steps = T // batch
        if method == "sgd3" and mu == "theory":
            warn_theory_condition(M, schedule.mu_for(steps), steps, sgd3_stages(M, schedule.mu_for(steps)), inner)
        return Restarts(schedule, z0, eps, iter([(steps, batch)]), history_every=history_every, callback=callback)
    cap = DEFAULT_CAP if T is None else check_T(T)
    first = batch_size if batch_size is not None else min(FIRST_BATCH, max(1, cap // FIRST_STEPS))
    check_cap(schedule, cap, first, "the cap on sampled points")
    plan = doubling(batch=batch_size, first_batch=first, max_batch=max_batch)
    return Restarts(schedule, z0, eps, plan, cap=cap, check=check, history_every=history_every, callback=callback)


def check_cap(schedule: Schedule, T: int, batch: int, what: str) -> None:
    """Refuse a T too small for one complete run of the method, naming T and its minimum."""
    need = schedule.minimum_steps()
    if T // batch >= need:
        return
    why = {"sgd3": "SGD3 (Algorithm 4) runs J = floor(log2(M / mu)) >= 1 stages of its inner solver"
                   + (", and with mu = M / steps (the default) J >= 1 needs 2 steps" if schedule.mu is None else ""),
           "acsa2": "AC-SA^2 (Algorithm 3) runs two halves of at least one step"}.get(schedule.method, "")
    raise OptionError(f"T = {T} ({what}) is too small for one run of {schedule.method!r}: it needs at least {need} "
                      f"gradient steps of {batch} point(s), i.e. T >= {need * batch}" + (f" ({why})" if why else "")
                      + "; raise T or leave it unset (the default)")


def warn_theory_condition(M, mu, T, J, inner):
    """Thm C.2 (AC-SA^2) needs T > 2^(11/4) sqrt(M/mu) J, Thm C.3 (AC-SA) T > 4 sqrt(M/mu) J. App. D checks
    only C.3's constant 4: with the theory preset, C.2's condition fails for some T from about 2e5 on."""
    const = 2 ** 2.75 if inner == "acsa2" else 4.0
    need = const * math.sqrt(M / mu) * J
    if T <= need:
        warnings.warn(f"T = {T} steps does not satisfy the condition T > {const:.3g} sqrt(M/mu) J = {need:.4g} of "
                      f"Theorem {'C.2' if inner == 'acsa2' else 'C.3'} of Chzhen, Hebiri, Taturyan 2024; the "
                      f"guarantee does not apply (the run proceeds)",
                      UserWarning, stacklevel=5)


class RoundJudge:
    """The judge's checks between the rounds of a run, for one dual: first without the exact dual (one pass over the
    points: the constraint violations and the duality gap of (pi_z, z)), and with the dual suboptimality F(z) - F*
    only when those pass, so that the exact dual is solved once, from a start near the solution (at n = 100,000 the
    solve from the first round's duals took about as long as the exact backend)."""

    def __init__(self, family, context: dict, enabled: bool, verbose: bool | None = None):
        self.stop = CertifiedStop(family, duals, context=context, enabled=enabled, unit="points sampled",
                                  verbose=verbose)
        self.full = True            # the last check's evaluation has every certificate the final judge computes

    def __call__(self, z: np.ndarray, k: int, samples: int | None = None) -> bool:
        """Judge the duals ``z`` after round ``k`` (``samples`` points sampled so far); True when the run of this dual
        ends: its checks passed, or the fail-fast rule gave up (``self.stop.gave_up``)."""
        variables, asked = duals(z), self.stop.context.get("certify")
        if asked is False:
            self.stop.check(variables, k, samples)
            return self.stop.stop_now
        self.stop.context["certify"] = False
        try:
            cheap = self.stop.check(variables, k, samples)
        finally:
            self.stop.context["certify"] = asked
        self.full = cheap
        if not cheap:
            return self.stop.stop_now
        self.stop.check(variables, k, samples)
        return self.stop.stop_now

    def finish(self, solution, cap: str) -> None:
        self.stop.finish(solution, cap=cap)
        if not self.full:           # the judge computes the whole evaluation (with F*) of the final duals
            solution.evaluation = None


def round_check(judges: list):
    """The ``check(z, index, round)`` of :class:`Restarts` from the :class:`RoundJudge` of each dual of the run (one
    for a single problem, one per eps for a stacked sweep); the canonical duals are judged."""
    def check(z, index, k, samples=None):
        if index is None:
            return judges[0](z, k, samples)
        return [judges[i](zi, k, samples) for i, zi in zip(index, z)]
    return check


def duals(z: np.ndarray) -> dict:
    """The variables of a candidate: (Lambda, V) in canonical form (same policy, never a larger F)."""
    z = canonical(z)
    return {"Lambda": z[0], "V": z[1]}


def with_progress(batches, bar: Progress, every: int):
    for k, batch in enumerate(batches, 1):
        if k % every == 0:
            bar.update(every)
            if bar.stopped:
                return
        yield batch


def run_solution(family, run: Restarts, info: dict, method: str, judge: Prepared, oracle: str,
                 certify=None, message: str = "", index: int | None = None) -> Solution:
    status, msg = run.status()
    z = run.output if index is None else run.output[index]
    variables = duals(z)
    rounds, steps, samples = run.usage(index)
    last = run.rounds[rounds - 1] if rounds else run.info     # the last round this dual ran
    metrics = {**info, "samples_used": samples, "gradient_steps": steps, "rounds": rounds,
               "stages": last.get("stages"), "alpha": last["alpha"], "mu": last["mu"], "batch_size": last["batch_size"],
               # a fixed budget: the steps T // batch_size of its one run (its schedule uses floors of them)
               "steps": last.get("planned_steps", last.get("steps")) if len(run.rounds) <= 1 else steps}
    metrics = {k: v for k, v in metrics.items() if v is not None}
    solver = {"name": method, "oracle": oracle, "grid_predictor": family.post.key,
              "options": {k: v for k, v in metrics.items() if isinstance(v, (int, float, str))}}
    return Solution(variables=variables, status=status, message=" ".join(filter(None, (msg, message))),
                    history=run.history, solver=solver, metrics=metrics,
                    judge_context={"prepared": judge, "certify": certify})


class StreamFit:
    """A stochastic run on a stream of unlabeled chunks (``push``), for ``data=iterator`` and ``partial_fit``.

    The group marginals must be given (a stream cannot be calibrated in advance); M = 2 beta sigma^2 from p.
    Each chunk is cut into slices of at most 65,536 rows, the base models run per slice, and the rows feed
    the run in order, so memory does not grow with the stream. The judge sees a uniform reservoir sample of
    ``judge_size`` points of the stream (Algorithm R).
    """

    def __init__(self, family, T, *, batch_size=None, method="sgd3", mu=None, inner="acsa2",
                 variant="paper", smoothness="sigma2", step=None, tail=1.0, z0=None, history_every=0, callback=None,
                 judge_size=JUDGE_SIZE, seed=None, stop="budget", certify=None):
        post = family.post
        if not post.callable:
            raise OptionError("a stream needs base models as callables (reg.predict, clf.predict_proba)")
        if isinstance(post.p_spec, str):
            raise OptionError("a stream needs the group marginals up front: give p= to fm.GridPredictor (e.g. the "
                              "training frequencies, ordered like tau's columns); it cannot be calibrated on data "
                              "that have not arrived yet")
        if T is None and stop == "budget":
            raise OptionError("a stream run with stop='budget' needs T= (the number of samples to use): SGD3 and "
                              "AC-SA^2 plan their stages by it")
        if smoothness == "plugin":
            raise OptionError("smoothness='plugin' needs the whole sample; a stream uses 'sigma2' or a number")
        if family.constraint is None:
            raise OptionError("without a fairness constraint the optimum is pi_(0,0) of Remark 3.2 (z = 0): there is "
                              "nothing to learn from a stream; solve on a sample of the points (data=array) instead")
        self.family, self.p = family, post.p_spec
        self.eps = family.constraint.eps(self.p.shape[0])
        M = smoothness_constant("sigma2" if smoothness is None else smoothness, family.beta, family.sigma2(self.p),
                                None)
        # stop="checks": the judge's checks run between rounds on the reservoir sample of the points seen so far
        self.judge = RoundJudge(family, {"certify": certify}, enabled=stop == "checks")
        self.run = start_run(method, family._z0(z0, self.eps.shape[0]), M, mu, T, batch_size, inner, variant, step, tail,
                             family.beta, self.eps, history_every, callback, stop=stop,
                             check=self._check if stop == "checks" else None)
        self.judge.stop.cap = self.run.cap
        self.info = {"M": M, "T": T if T is not None else DEFAULT_CAP, "stop": stop}
        self.method = method
        self.rng = as_generator(seed)
        self.k = int(judge_size)
        self.seen = 0
        self.res_first = self.res_tau = None

    def _check(self, z, index, k, samples=None) -> bool:
        self.judge.stop.context["prepared"] = self.judge_points()
        return self.judge(z, k, samples)

    def push(self, chunk) -> None:
        """Feed the rows of one chunk (an array or DataFrame of unlabeled points) in order."""
        post = self.family.post
        for start in range(0, len(chunk), STREAM_SLICE):
            if self.run.done:
                return
            first, tau = post.values(chunk[start:start + STREAM_SLICE])
            self._reservoir(first, tau)      # first, so that a check between rounds sees these rows
            self.run.feed(self.family.columns(tau, self.p), post.costs(first))

    def _reservoir(self, first, tau) -> None:
        """Algorithm R, vectorized: keep a uniform sample of k rows of everything seen so far."""
        c = first.shape[0]
        if self.res_first is None:
            self.res_first = np.empty((self.k,) + first.shape[1:])
            self.res_tau = np.empty((self.k, tau.shape[1]))
        fill = max(0, min(self.k - self.seen, c))
        self.res_first[self.seen:self.seen + fill], self.res_tau[self.seen:self.seen + fill] = first[:fill], tau[:fill]
        if fill < c:
            idx = self.seen + np.arange(fill, c)
            j = (self.rng.random(c - fill) * (idx + 1)).astype(np.int64)
            keep = np.flatnonzero(j < self.k)
            # later rows overwrite earlier ones that drew the same slot (keep the last occurrence)
            slots, last = np.unique(j[keep][::-1], return_index=True)
            rows = fill + keep[::-1][last]
            self.res_first[slots], self.res_tau[slots] = first[rows], tau[rows]
        self.seen += c

    def judge_points(self) -> Prepared:
        if self.seen == 0:
            raise DataError("the stream gave no points")
        n = min(self.seen, self.k)
        first, tau = self.res_first[:n], self.res_tau[:n]
        return Prepared(first, tau, self.p, self.family.columns(tau, self.p), None, self.eps)

    def solution(self, certify=None) -> Solution:
        judge = self.judge_points()
        message = ""
        margin = float((self.family.post.m * self.eps - np.abs(judge.T.mean(axis=0))).min())
        if margin < 0:
            message = (f"on the judge's sample of the stream the constraints are infeasible (margin {margin:.3g}): "
                       f"the given p does not match the mean of tau_hat; the duals may drift")
        self.run.end_of_data()
        self.info.update(stream_points=self.seen, judge_points=judge.n)
        solution = run_solution(self.family, self.run, self.info, self.method, judge, "stream", certify, message)
        self.judge.finish(solution, cap=f"T={self.info['T']}")
        return solution


def dp_parameters(preset: str = "reference", *, n: int | None = None, T: int | None = None) -> dict:
    """(L, beta, entropy) of the paper's parameter rules (Thm 5.1, App. D and App. G).

    ``"reference"`` (the experiments): L = floor(sqrt(N)), beta = 0.5 sqrt(N) log2(N) with N = ``n`` unlabeled
    points (App. G prints beta = sqrt(N) log sqrt(N), the same number with log2; for Adult it prints
    sqrt(T) / log sqrt(T), a misprint: the authors' code uses 0.5 sqrt(N) log2(N) for every data set).
    ``"theory"`` (Thm 5.1): beta = T / (8 log2 T), L = round(sqrt(T)) for T stochastic gradients.
    """
    check_choice(preset, "preset", ("reference", "theory"))
    reference = preset == "reference"
    name, what, other = ("n", "the number of unlabeled points", "T") if reference else \
        ("T", "the number of stochastic gradients", "n")
    if (T if reference else n) is not None:
        raise OptionError(f"the {preset!r} preset takes {name}= ({what}), not {other}=: drop {other}= or use the "
                          f"other preset")
    check_int(n if reference else T, f"{name} ({what}) of the {preset!r} preset", minimum=2 if reference else 3)
    if reference:
        beta = 0.5 * math.sqrt(n) * math.log2(n)
        L = math.floor(math.sqrt(n))
    else:
        beta = T / (8.0 * math.log2(T))
        L = max(1, round(math.sqrt(T)))
    return {"L": int(L), "beta": float(beta), "entropy": 1.0 / beta}
