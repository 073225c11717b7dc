"""Algorithm 1 of the DP post-processing paper (Chzhen, Hebiri, Taturyan, NeurIPS 2024): a black-box optimizer on
the smooth dual (5), started at z0 = 0 (Remark 3.2) and fed with the stochastic gradients (11) that need
unlabeled points only; the output duals give the prediction (7).

* :func:`batch_gradient`: the minibatch version of (11), g = (E_b + eps, -E_b + eps) with
  E_b = mean_i pi_z(.|x_i) t_hat(x_i)^T over the batch (a weighted mean for the exact-gradient oracle);
* :class:`Pool`: a stored unlabeled sample, read by the oracles ``"resample"`` (uniformly with replacement,
  as the reference code; by the weights if any), ``"epochs"`` (shuffled passes), ``"stream"`` (in order,
  each point once) and ``"exact"`` (the full deterministic gradient, for testing);
* :class:`DualRun`: one optimizer run that consumes batches from any of those, or rows pushed by a stream
  (``feed``, used by ``partial_fit``: rows are consumed in order and a partial batch waits for the next call,
  so feeding chunks gives the same run as feeding their concatenation).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import OptionError
from ..oracles.dp_dual import policy_in_place
from ..oracles.protocols import DualBatchSource
from .sgd3 import projected_sgd, sgd3, sgd3_alpha, sgd3_gradient_calls, sgd3_stages
from .acsa import acsa, acsa2

METHODS = {
    "sgd3": "SGD3 refined with AC-SA^2 (inner='acsa2', default) or AC-SA (inner='acsa') on the dual (5), "
            "Algorithm 4 (the experiments of the paper)",
    "acsa2": "AC-SA^2 on the dual (5), Algorithm 3",
    "acsa": "AC-SA on the dual (5), Algorithm 2",
    "sgd": "projected SGD on the dual (5), step 1/M, averaged iterates (the 'SGD' baseline of Figure 3)",
}
ORACLES = ("resample", "epochs", "stream", "exact")
BLOCK = 4096  # indices drawn per RNG call (one call per step costs ~2 us, a tenth of a step)
_max, _sum = np.maximum.reduce, np.add.reduce  # the ufunc reductions without ndarray.max's Python wrapper (~1 us)


def batch_gradient(z: np.ndarray, t: np.ndarray, r: np.ndarray, beta: float, eps: np.ndarray, out: np.ndarray,
                   weights: np.ndarray | None = None) -> np.ndarray:
    """The stochastic gradient (11) at z from one point (t: (K,), r: (m,)) or a batch (t: (b, K), r: (b, m)).

    z may carry leading axes (a stack of duals, shape (..., 2, m, K), with ``eps`` broadcastable to
    (..., m, K)): every stacked problem sees the same points (one run for a whole grid of eps). The policy is
    :func:`~fairmodel.oracles.dp_dual.policy_in_place` on the scores, computed in place (this runs once per step).
    """
    if z.ndim == 3 and t.ndim == 1:  # the common case (one dual, one point), kept to a few NumPy calls
        a = (z[0] - z[1]) @ t
        a -= r
        E = np.multiply.outer(policy_in_place(a, beta), t)
        np.add(E, eps, out=out[0])
        np.subtract(eps, E, out=out[1])
        return out
    D = z[..., 0, :, :] - z[..., 1, :, :]
    if t.ndim == 1:
        a = D @ t
        a -= r
        E = policy_in_place(a, beta)[..., :, None] * t
    else:
        a = t @ np.swapaxes(D, -1, -2)
        a -= r
        E = np.swapaxes(policy_in_place(a, beta), -1, -2) @ (t / t.shape[0] if weights is None else weights[:, None] * t)
    np.add(E, eps, out=out[..., 0, :, :])
    np.subtract(eps, E, out=out[..., 1, :, :])
    return out


@dataclass
class Pool:
    """A stored unlabeled sample: t_hat (n, K) and the costs, as an (n, m) array ``R`` or from ``eta`` and
    ``grid`` (computed per batch when n m is large); optional weights (n,) summing to 1."""

    T: np.ndarray
    R: np.ndarray | None = None
    eta: np.ndarray | None = None
    grid: np.ndarray | None = None
    weights: np.ndarray | None = None

    @property
    def n(self) -> int:
        return self.T.shape[0]

    def costs(self, rows) -> np.ndarray:
        if self.R is not None:
            return self.R[rows]
        e = self.eta[rows]
        return (np.subtract.outer(e, self.grid)) ** 2

    def batches(self, oracle: str, batch_size: int, steps: int, rng: np.random.Generator):
        """``steps`` batches (t, r, weights) from the pool according to ``oracle``; ``self.seen`` marks the rows
        served (reusing points breaks the i.i.d. assumption of the theory: count them). Successive calls (the
        rounds of a restarted run) continue: ``"stream"`` reads on from the first row not yet read."""
        n, b = self.n, batch_size
        if getattr(self, "seen", None) is None:
            self.seen, self.cursor = np.zeros(n, dtype=bool), 0
        if oracle == "exact":
            self.seen[:] = True
            R = self.costs(slice(None))
            w = np.full(n, 1.0 / n) if self.weights is None else self.weights
            for _ in range(steps):
                yield self.T, R, w
            return
        if oracle == "stream":
            start = self.cursor
            if start + steps * b > n:
                raise OptionError(f"oracle='stream' reads each point once: {steps} steps of {b} points need "
                                  f"{steps * b} points but the pool has {n - start} left (of {n}); lower T or use "
                                  f"oracle='resample'")
            order = iter(start + np.arange(steps * b).reshape(steps, b))
            self.seen[start:start + steps * b] = True
            self.cursor = start + steps * b
        elif oracle == "epochs":
            order = _epoch_rows(n, b, steps, rng, self.seen)
        else:
            order = _resample_rows(n, b, steps, rng, self.weights, self.seen)
        T, R = self.T, self.R
        for rows in order:
            if b == 1:
                i = rows[0]
                yield T[i], (R[i] if R is not None else self.costs(i)), None
            else:
                yield T[rows], self.costs(rows), None


def _resample_rows(n, b, steps, rng, weights, seen):
    done = 0
    while done < steps:
        k = min(BLOCK, steps - done)
        idx = rng.integers(0, n, size=(k, b)) if weights is None else rng.choice(n, size=(k, b), p=weights)
        seen[idx.ravel()] = True
        yield from idx
        done += k


def _epoch_rows(n, b, steps, rng, seen):
    """Shuffled passes, one permutation drawn when the previous one is used up (a batch may span two)."""
    left = np.empty(0, dtype=np.int64)
    for _ in range(steps):
        while left.size < b:
            left = np.concatenate([left, rng.permutation(n)])
        rows, left = left[:b], left[b:]
        seen[rows] = True
        yield rows


def make_optimizer(method: str, z0: np.ndarray, *, M: float, mu: float, steps: int, inner: str = "acsa2",
                   reference: bool = False, step: float | None = None, tail: float = 1.0):
    """(generator, info) for ``method`` on ``steps`` gradient steps; info has the gradient steps the schedule
    uses (floors of T/J and T/2) and the gradient-mapping parameter alpha of the method's guarantee."""
    if method == "sgd3":
        J = sgd3_stages(M, mu, reference)
        info = {"stages": J, "alpha": sgd3_alpha(M, mu, reference),
                "gradient_steps": sgd3_gradient_calls(steps, J, inner, reference)}
        return sgd3(z0, mu, M, steps, inner, reference), info
    if method in ("acsa", "acsa2"):
        if not (np.isfinite(mu) and 0 < mu <= M):
            raise OptionError(f"AC-SA needs 0 < mu <= M; got mu = {mu:.4g}, M = {M:.4g}")
        used = steps if method == "acsa" else (2 * steps if reference else 2 * (steps // 2))
        solver = acsa if method == "acsa" else acsa2
        return solver(z0, mu, M, steps, reference=reference), {"alpha": 1.0 / M, "gradient_steps": used}
    if method == "sgd":
        step = 1.0 / M if step is None else step
        if not (np.isfinite(step) and step > 0):
            raise OptionError(f"step must be a positive number; got {step}")
        return projected_sgd(z0, step, steps, tail), {"alpha": 1.0 / M, "gradient_steps": steps}
    raise OptionError(f"unknown method {method!r}; valid methods are {', '.join(METHODS)}")


class DualRun:
    """One run of an optimizer generator on the dual, fed by batches (``run``) or by stream rows (``feed``).

    ``history_every`` > 0 records {step, samples, time} every that many steps, merged with the dict that
    ``callback(z)`` returns (z: a copy of the current output). A non-finite iterate stops the run with
    status ``"diverged"``.
    """

    def __init__(self, optimizer, beta: float, eps: np.ndarray, batch_size: int, history_every: int = 0,
                 callback=None, origin: tuple = (0, 0, None)):
        self.opt, self.beta, self.eps, self.batch_size = optimizer, float(beta), eps, int(batch_size)
        self.query, self.current = next(optimizer)
        self.grad = np.empty_like(self.query)
        self.final, self.done, self.diverged = None, False, False
        self.steps = self.samples = 0
        self.history, self.history_every, self.callback = [], int(history_every), callback
        # the history of a round of a restarted run counts steps, samples and time from the start of the run
        self.origin = origin[:2]
        self.start = time.perf_counter() if origin[2] is None else origin[2]
        self._carry = None

    def step(self, t, r, weights=None) -> None:
        self.run(((t, r, weights),))

    def _record(self) -> None:
        z = self.output
        if not np.all(np.isfinite(z)):
            self.diverged = self.done = True
            return
        rec = {"step": self.origin[0] + self.steps, "samples": self.origin[1] + self.samples,
               "time": time.perf_counter() - self.start}
        if self.callback is not None:
            rec.update(self.callback(z) or {})
        self.history.append(rec)

    def run(self, batches) -> "DualRun":
        """Consume batches (t, r, weights) until the optimizer's schedule ends or the batches run out.

        The loop keeps its state in local variables (this is the hot loop of Algorithm 1: one gradient (11)
        and one optimizer step per batch)."""
        if self.done:
            return self
        send, beta, eps, grad, every = self.opt.send, self.beta, self.eps, self.grad, self.history_every
        query, steps, samples = self.query, self.steps, self.samples
        try:
            for t, r, w in batches:
                batch_gradient(query, t, r, beta, eps, grad, w)
                steps += 1
                samples += 1 if t.ndim == 1 else t.shape[0]
                query, self.current = send(grad)
                if every and steps % every == 0:
                    self.steps, self.samples = steps, samples
                    self._record()
                    if self.done:
                        break
        except StopIteration as stop:
            self.final, self.done = stop.value, True
        self.query, self.steps, self.samples = query, steps, samples
        if self.done and every and steps % every:
            self._record()
        return self

    def feed(self, t: np.ndarray, r: np.ndarray) -> int:
        """Consume stream rows in order in batches of ``batch_size``; returns the rows used (a partial batch
        is kept for the next call; only that partial batch is copied, not the rows fed)."""
        b, used = self.batch_size, 0
        if self._carry is not None and not self.done:
            need = b - self._carry[0].shape[0]
            head_t, head_r = np.concatenate([self._carry[0], t[:need]]), np.concatenate([self._carry[1], r[:need]])
            self._carry = None
            if head_t.shape[0] < b:
                self._carry = (head_t, head_r)
                return t.shape[0]
            self.step(head_t, head_r)
            used = need
        while not self.done and used + b <= t.shape[0]:
            if b == 1:
                self.step(t[used], r[used])
            else:
                self.step(t[used:used + b], r[used:used + b])
            used += b
        if not self.done and used < t.shape[0]:
            self._carry = (t[used:].copy(), r[used:].copy())
        return used

    @property
    def output(self) -> np.ndarray:
        """The optimizer's output: its return value when the schedule is complete, else its current output."""
        return (self.final if self.done and self.final is not None else self.current).copy()

    def status(self) -> tuple[str, str]:
        z = self.output
        if self.diverged or not np.all(np.isfinite(z)):
            return "diverged", f"the dual iterate became non-finite after {self.steps} steps"
        if not self.done:
            return "budget_exhausted", (f"the data ended after {self.samples} samples, before the optimizer's "
                                        f"schedule finished; the output is its current iterate")
        return "completed", ""


FIRST_STEPS, FIRST_BATCH = 1000, 4   # the first round of a restarted run: 1,000 steps of 4 points (then both double)


@dataclass
class Schedule:
    """How one round runs: the method and its constants. ``M`` is the smoothness (Lemma 3.4); ``mu`` the
    regularization of SGD3 (Algorithm 4) and the strong-convexity parameter given to AC-SA / AC-SA^2
    (Algorithms 2, 3): ``None`` is M / steps of the round (the authors' code's mu = M/T), ``"theory"`` is
    2 sigma^2 / beta = M / beta^2 (Thm 5.1, App. D), or a number."""

    method: str
    M: float
    beta: float
    mu: object = None
    inner: str = "acsa2"
    reference: bool = False
    step: float | None = None
    tail: float = 1.0

    def __post_init__(self):
        if self.method not in METHODS:
            raise OptionError(f"unknown method {self.method!r}; valid methods are {', '.join(METHODS)}")
        if not (self.mu is None or self.mu == "theory" or (isinstance(self.mu, (int, float))
                                                           and not isinstance(self.mu, bool))):
            raise OptionError(f"mu must be None (M / T), 'theory' (2 sigma^2 / beta) or a positive number; got "
                              f"{self.mu!r}")

    def mu_for(self, steps: int) -> float:
        if self.mu is None:
            return self.M / max(1, steps)
        return self.M / self.beta ** 2 if self.mu == "theory" else float(self.mu)

    def minimum_steps(self) -> int:
        """The fewest gradient steps of one complete run: SGD3 needs J = floor(log2(M / mu)) >= 1 stages
        (Thm C.2; with mu = M / steps, J = floor(log2 steps)) of at least one step of its inner solver, AC-SA^2
        (Algorithm 3) two halves of at least one step."""
        inner_min = 1 if (self.reference or self.method == "acsa" or self.inner == "acsa") else 2
        if self.method == "sgd3":
            if self.mu is None:
                return 1 if self.reference else 2
            return sgd3_stages(self.M, self.mu_for(1), self.reference) * inner_min
        return inner_min if self.method == "acsa2" else 1

    def optimizer(self, z0: np.ndarray, steps: int):
        return make_optimizer(self.method, z0, M=self.M, mu=self.mu_for(steps), steps=steps, inner=self.inner,
                              reference=self.reference, step=self.step, tail=self.tail)


def doubling(steps: int = FIRST_STEPS, batch: int | None = None, first_batch: int = FIRST_BATCH,
             max_batch: int | None = None):
    """The rounds of a restarted run: (steps, batch) with both doubling from (``steps``, ``first_batch``) (the
    batch at most ``max_batch``, e.g. the pool size), or the steps only when ``batch`` is given."""
    size = first_batch if batch is None else int(batch)
    while True:
        yield steps, size
        steps *= 2
        if batch is None:
            size = size * 2 if max_batch is None else max(size, min(size * 2, max_batch))


class Restarts:
    """Rounds of a method, each warm-started at the output of the previous round, with checks between rounds.

    Every round is a complete run of the method as printed (SGD3 refined, Algorithm 4; AC-SA^2, Algorithm 3;
    AC-SA, Algorithm 2; projected SGD) on ``steps`` minibatch gradients (11) of ``batch`` points, started at the
    previous round's output, so the guarantee of the method holds for each round with the distance of its start to
    the solution (Thm C.2, C.3, C.1: ||w0 - w*||) and the minibatch variance 2 sigma^2 / batch (Lemma 4.1 with the
    constant 2, see the errata). For SGD3 the restart anchors F^(0) = F + mu/2 ||w - w0||^2 at the warm start, so
    the bias O(mu ||w0 - w*||) of the regularization shrinks from round to round (a proximal-point outer loop).

    ``plan`` yields (steps, batch) per round (:func:`doubling`, or a single round: a fixed budget); ``cap`` bounds
    the sampled points of all rounds (a round is shortened to fit; a later round shortened below a quarter of its
    plan, or below the method's minimum, is not run); ``check(z, index, round, samples)`` judges the output of a
    round (``index``: the positions in a stack of duals, else None; ``samples``: the points sampled so far) and
    returns True (or one bool per stacked dual) when that dual's run ends (it passed, or its checks cannot pass
    within the cap): a dual whose run ended is frozen with that output, and the run ends when every dual's has. Fed by a pool
    (:meth:`run_pool`) or by stream rows in order (:meth:`feed`).
    """

    def __init__(self, schedule: Schedule, z0: np.ndarray, eps: np.ndarray, plan, *, cap: int | None = None,
                 check=None, history_every: int = 0, callback=None):
        self.schedule, self.eps, self.plan, self.cap, self.check = schedule, eps, plan, cap, check
        self.history_every, self.callback = history_every, callback
        self.z = z0.copy()
        self.stacked = z0.ndim == 4
        self.active = np.arange(z0.shape[0]) if self.stacked else None
        self.passed = np.zeros(z0.shape[0], dtype=bool) if self.stacked else False
        self.ended = np.full(z0.shape[0], -1) if self.stacked else None   # the round at which a stacked dual passed
        self.steps = self.samples = 0
        self.rounds: list[dict] = []
        self.history: list[dict] = []
        self.done = self.diverged = self.exhausted = False
        self.start = time.perf_counter()
        self.run = None
        if not self._start_round():
            raise OptionError("the first round does not fit in the cap")   # the caller checks the cap first

    # -- rounds ---------------------------------------------------------------------------------------------------
    def _start_round(self) -> bool:
        try:
            steps, batch = next(self.plan)
        except StopIteration:
            return False
        minimum, planned = self.schedule.minimum_steps(), steps
        z0 = self.z if not self.stacked else self.z[self.active]
        while steps >= minimum:
            optimizer, info = self.schedule.optimizer(z0, steps)
            room = math.inf if self.cap is None else self.cap - self.samples
            if info["gradient_steps"] * batch <= room:
                break
            optimizer.close()
            steps = min(steps - 1, int(steps * room / (info["gradient_steps"] * batch)))
        if steps < minimum or (self.rounds and steps < planned // 4):   # a last round cut below a quarter: not run
            return False
        eps = self.eps if not self.stacked else self.eps[self.active]
        self.run = DualRun(optimizer, self.schedule.beta, eps, batch, self.history_every, self.callback,
                           origin=(self.steps, self.samples, self.start))
        self.info = dict(info, steps=steps, batch_size=batch, mu=self.schedule.mu_for(steps))
        return True

    def _end_round(self) -> None:
        run = self.run
        self.steps += run.steps
        self.samples += run.samples
        self.history += run.history
        out = run.output
        self.rounds.append({"steps": run.steps, "batch_size": run.batch_size, "samples": run.samples,
                            "complete": run.done, "planned_steps": self.info["steps"], "mu": self.info["mu"],
                            "alpha": self.info["alpha"], **({"stages": self.info["stages"]} if "stages" in self.info
                                                            else {})})
        if self.stacked:
            self.z[self.active] = out
        else:
            self.z = out
        if run.diverged or not np.all(np.isfinite(out)):
            self.diverged = self.done = True
            return
        if not run.done:            # the data ended (or Ctrl-C) inside the round: its current output is kept
            self.exhausted = self.done = True
            return
        if self.check is not None:
            k = len(self.rounds) - 1
            if self.stacked:
                ok = np.asarray(self.check(self.z[self.active], self.active, k, self.samples), dtype=bool)
                self.passed[self.active[ok]] = True
                self.ended[self.active[ok]] = k
                self.active = self.active[~ok]
                if not self.active.size:
                    self.done = True
                    return
            elif self.check(self.z, None, k, self.samples):
                self.passed = self.done = True
                return
        if not self._start_round():
            self.done = True

    # -- feeding ----------------------------------------------------------------------------------------------------
    def run_pool(self, pool: DualBatchSource, oracle: str, rng: np.random.Generator, wrap=None) -> "Restarts":
        """Run the rounds on a stored pool (``wrap(batches)`` may wrap each round's batches, e.g. a progress bar)."""
        while not self.done:
            batches = pool.batches(oracle, self.run.batch_size, self.info["gradient_steps"], rng)
            self.run.run(batches if wrap is None else wrap(batches))
            self._end_round()
        return self

    def feed(self, t: np.ndarray, r: np.ndarray) -> int:
        """Consume stream rows in order (the current round's batches); returns the rows used."""
        used = 0
        while not self.done and used < t.shape[0]:
            n = self.run.feed(t[used:], r[used:])
            if not self.run.done:       # the round took every row (a partial batch waits in its carry)
                return t.shape[0]
            used += n
            self._end_round()
        return used

    def end_of_data(self) -> None:
        """The stream ended: keep the current round's output (its current iterate) if the round is unfinished."""
        if not self.done:
            self._end_round()

    @property
    def output(self) -> np.ndarray:
        """The duals: the last round's output (a round in progress: its current output); frozen duals of a stack
        keep the output of the round at which they passed."""
        if self.done or self.run is None:
            return self.z.copy()
        z = self.z.copy()
        if self.stacked:
            z[self.active] = self.run.output
            return z
        return self.run.output

    def usage(self, index: int | None = None) -> tuple[int, int, int]:
        """(rounds, steps, samples) used for the dual at ``index`` of a stack (up to the round at which it passed),
        or by the whole run."""
        last = len(self.rounds) if index is None or self.ended[index] < 0 else int(self.ended[index]) + 1
        done = self.rounds[:last]
        if index is None or self.ended[index] < 0:
            return last, self.steps, self.samples
        return last, sum(r["steps"] for r in done), sum(r["samples"] for r in done)

    def status(self) -> tuple[str, str]:
        z = self.output
        if self.diverged or not np.all(np.isfinite(z)):
            return "diverged", f"the dual iterate became non-finite after {self.steps} steps"
        if self.exhausted or not self.done:
            return "budget_exhausted", (f"the data ended after {self.samples} samples, before the optimizer's "
                                        f"schedule finished; the output is its current iterate")
        return "completed", ""
