"""The stochastic runs of DP post-processing (Chzhen, Hebiri, Taturyan 2024): the points a run and its judge
use, the optimizer set-up (SGD3 + AC-SA^2, AC-SA^2, AC-SA, projected SGD on the smooth dual (5)), the solution of
a run, and runs on a stream of unlabeled chunks (``data=iterator``, ``partial_fit``). Used by
:mod:`fairmodel.families.dp` and the eps sweep; the family object is passed in, never imported.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .._validate import as_generator
from ..errors import DataError, OptionError
from ..expressions.grid import t_values
from ..oracles.dp_dual import canonical, sigma2
from ..progress import Progress
from ..stochastic.dp_postprocessing import DualRun, make_optimizer
from .base import Solution

STREAM_SLICE = 65_536    # rows of a stream chunk handled at once (bounds memory whatever the chunk size)
JUDGE_SIZE = 20_000      # a stream is judged on a uniform reservoir sample of this many points


@dataclass
class Prepared:
    """The base models' values on a finite set of unlabeled points, with p, t_hat and the weights."""

    first: np.ndarray          # eta_hat (n,) or the cost matrix (n, m)
    tau: np.ndarray            # (n, K)
    p: np.ndarray              # (K,)
    T: np.ndarray              # t_hat (n, K)
    weights: np.ndarray | None  # (n,) summing to 1, or None (uniform)
    eps: np.ndarray | None     # (K,) or None (no fairness constraint)
    chunked: bool = False      # the points are Dask-backed: the judge sums by blocks of rows (ChunkedDual)

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


def check_T(T) -> int:
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 1:
        raise OptionError(f"T (the number of stochastic gradients) must be a positive integer; got {T!r}")
    return int(T)


def smoothness_constant(smoothness, beta: float, p: np.ndarray, plugin) -> float:
    """M = 2 beta sigma^2 (Lemma 3.4, Alg. 1 line 2), 2 beta sigma_hat^2 (App. E) or a given number."""
    if smoothness == "sigma2":
        return 2.0 * beta * sigma2(p)
    if smoothness == "plugin":
        return 2.0 * beta * plugin()
    if isinstance(smoothness, bool) or not isinstance(smoothness, (int, float)) or not smoothness > 0:
        raise OptionError(f"smoothness must be 'sigma2', 'plugin' or a positive number; got {smoothness!r}")
    return float(smoothness)


def start_run(method, z0, M, mu, T, batch_size, inner, variant, step, tail, beta, eps, history_every, callback):
    steps = max(1, T // batch_size)
    if mu is None:
        mu_v = M / steps  # the authors' code's mu = M/T: the bias of SGD3 is O(mu ||z*||)
    elif mu == "theory":
        mu_v = M / beta ** 2  # = 2 sigma^2 / beta (Thm 5.1, App. D)
    elif isinstance(mu, (int, float)) and not isinstance(mu, bool):
        mu_v = float(mu)
    else:
        raise OptionError(f"mu must be None (M / T), 'theory' (2 sigma^2 / beta) or a positive number; got {mu!r}")
    if method == "sgd3" and mu is None and steps < (1 if variant == "reference" else 2):
        need = (1 if variant == "reference" else 2) * batch_size
        raise OptionError(f"T = {T} is too small for SGD3: with batch_size = {batch_size} it makes {steps} gradient "
                          f"step(s), and SGD3's J = floor(log2(T / batch_size)) stages (mu = M / T) need at least one; "
                          f"pass T >= {need} (the default is 20,000), or method='acsa2'")
    optimizer, info = make_optimizer(method, z0, M=M, mu=mu_v, steps=steps, inner=inner,
                                     reference=variant == "reference", step=step, tail=tail)
    if method == "sgd3" and mu == "theory":
        warn_theory_condition(M, mu_v, steps, info["stages"], inner)
    eps = np.zeros(z0.shape[-1]) if eps is None else eps
    run = DualRun(optimizer, beta, eps, batch_size, history_every, callback)
    info.update(steps=steps, M=M, mu=mu_v, batch_size=batch_size, T=T)
    return run, info


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


def with_progress(batches, bar: Progress, every: int):
    for k, batch in enumerate(batches, 1):
        if k % every == 0:
            bar.update(every)
            if bar.stopped:
                return
        yield batch


def run_solution(family, run: DualRun, info: dict, method: str, judge: Prepared, oracle: str,
              certify=None, message: str = "", index: int | None = None) -> Solution:
    status, msg = run.status()
    z = run.output if index is None else run.output[index]
    z = canonical(z)  # same policy, better dual value (only lambda - nu enters the policy)
    metrics = {"samples_used": run.samples, "gradient_steps": run.steps, **info}
    solver = {"name": method, "oracle": oracle, "grid_predictor": family.post.key,
              "options": {k: v for k, v in info.items() if isinstance(v, (int, float, str))}}
    return Solution(variables={"Lambda": z[0], "V": z[1]}, status=status,
                    message=" ".join(filter(None, (msg, message))), history=run.history, solver=solver, metrics=metrics,
                    judge_context={"prepared": judge, "certify": certify})


class StreamFit:
    """A stochastic run on a stream of unlabeled chunks (``push``), for ``data=iterator`` and ``partial_fit``.

    The group marginals must be given (a stream cannot be calibrated in advance); M = 2 beta sigma^2 from p.
    Each chunk is cut into slices of at most 65,536 rows, the base models run per slice, and the rows feed
    the run in order, so memory does not grow with the stream. The judge sees a uniform reservoir sample of
    ``judge_size`` points of the stream (Algorithm R).
    """

    def __init__(self, family, T, *, batch_size=1, method="sgd3", mu=None, inner="acsa2",
                 variant="paper", smoothness="sigma2", step=None, tail=1.0, z0=None, history_every=0, callback=None,
                 judge_size=JUDGE_SIZE, seed=None):
        post = family.post
        if not post.callable:
            raise OptionError("a stream needs base models as callables (reg.predict, clf.predict_proba)")
        if isinstance(post.p_spec, str):
            raise OptionError("a stream needs the group marginals up front: give p= to fm.GridPredictor (e.g. the "
                              "training frequencies, ordered like tau's columns); it cannot be calibrated on data "
                              "that have not arrived yet")
        if T is None:
            raise OptionError("a stream needs T= (the number of samples to use): SGD3 and AC-SA^2 plan their stages "
                              "by it")
        if smoothness == "plugin":
            raise OptionError("smoothness='plugin' needs the whole sample; a stream uses 'sigma2' or a number")
        self.family, self.p = family, post.p_spec
        K = self.p.shape[0]
        self.eps = None if family.constraint is None else family.constraint.eps(K)
        M = smoothness_constant(smoothness, family.beta, self.p, None)
        self.run, self.info = start_run(method, family._z0(z0, K), M, mu, check_T(T), batch_size, inner, variant,
                                         step, tail, family.beta, self.eps, history_every, callback)
        self.method = method
        self.rng = as_generator(seed)
        self.k = int(judge_size)
        self.seen = 0
        self.res_first = self.res_tau = None

    def push(self, chunk) -> None:
        """Feed the rows of one chunk (an array or DataFrame of unlabeled points) in order."""
        post = self.family.post
        for start in range(0, len(chunk), STREAM_SLICE):
            if self.run.done:
                return
            first, tau = post.values(chunk[start:start + STREAM_SLICE])
            self.run.feed(t_values(tau, self.p), post.costs(first))
            self._reservoir(first, tau)

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
        return Prepared(first, tau, self.p, t_values(tau, self.p), None, self.eps)

    def solution(self, certify=None) -> Solution:
        judge = self.judge_points()
        message = ""
        if self.eps is not None:
            margin = float((self.family.post.m * self.eps - np.abs(judge.T.mean(axis=0))).min())
            if margin < 0:
                message = (f"on the judge's sample of the stream the constraints are infeasible (margin {margin:.3g}): "
                           f"the given p does not match the mean of tau_hat; the duals may drift")
        self.info.update(stream_points=self.seen, judge_points=judge.n)
        return run_solution(self.family, self.run, self.info, self.method, judge, "stream", certify, message)


def dp_parameters(preset: str = "reference", *, n: int | None = None, T: int | None = None) -> dict:
    """(L, beta, entropy) of the paper's parameter rules (Thm 5.1, App. D and App. G).

    ``"reference"`` (the experiments): L = floor(sqrt(N)), beta = 0.5 sqrt(N) log2(N) with N = ``n`` unlabeled
    points (App. G prints beta = sqrt(N) log sqrt(N), the same number with log2; for Adult it prints
    sqrt(T) / log sqrt(T), a misprint: the authors' code uses 0.5 sqrt(N) log2(N) for every data set).
    ``"theory"`` (Thm 5.1): beta = T / (8 log2 T), L = round(sqrt(T)) for T stochastic gradients.
    """
    if preset == "reference":
        if n is None or n < 2:
            raise OptionError("the 'reference' preset needs n >= 2, the number of unlabeled points")
        beta = 0.5 * math.sqrt(n) * math.log2(n)
        L = math.floor(math.sqrt(n))
    elif preset == "theory":
        if T is None or T < 3:
            raise OptionError("the 'theory' preset needs T >= 3, the number of stochastic gradients")
        beta = T / (8.0 * math.log2(T))
        L = max(1, round(math.sqrt(T)))
    else:
        raise OptionError(f"preset must be 'reference' or 'theory'; got {preset!r}")
    return {"L": int(L), "beta": float(beta), "entropy": 1.0 / beta}
