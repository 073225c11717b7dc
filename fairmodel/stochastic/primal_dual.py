"""Variance-reduced stochastic mirror-prox for min_w max_{y in Y} Phi(w, y) with Y a product of simplices: the
generic stochastic lowering of convex declarations.

Phi(w, y) = a(w) + sum_b <y_b, v_b(w)> is convex in w and linear in each y_b (the weights of one max, or the
scaled multipliers of the constraint pieces). The method is ALEG's (Yu, Cai, Jiang, Zhang 2024, Algorithm 1)
with the one simplex of group DRO replaced by several: every epoch takes a full pass at a snapshot, every inner
step a half step with the snapshot operator and a full step with the variance-reduced estimate
g = F(z_half; xi) - F(z_snap; xi) + F(z_snap) (Alacaoglu and Malitsky 2022), both from the anchor
alpha z_snap + (1 - alpha) z_k (Euclidean in w, in log space for every simplex). The output is the average of
the half iterates over the second half of the epochs (``output="suffix"``) or, for a run that stops when the
judge's checks pass, over the tail of the epochs run so far (``output="tail"``,
:class:`~fairmodel.stochastic.averaging.TailAverage`). A run can start from any (w0, y0): the reduction restarts it
from its averaged output (restarted averaging, which converges linearly on sharp saddle problems: Applegate,
Hinder, Lu, Lubin 2023) with steps measured again at the restart point.

The oracle protocol (:class:`~fairmodel.oracles.protocols.PrimalDualOracle`; the generic reduction's
``LagrangianOracle`` implements it):

* ``shape``, ``blocks`` (the sizes of the simplices), ``project(w)``, ``n_samples``;
* ``snapshot(w, ys)``: an exact full pass, with ``values`` (v_b(w) per block), ``grad`` (grad_w Phi(w, ys)),
  ``objective`` (max_y Phi(w, y), for the history) and whatever the estimates need;
* ``draw(rng, n_steps)``: the minibatches of ``n_steps`` inner steps; ``rows_per_step``;
* ``prepare(batches, snap)``: those minibatches made ready for the estimates at the snapshot (e.g. their rows
  gathered and the snapshot's side of the estimates computed for the whole block at once), indexable by step;
* ``estimate(batch, w, ys, snap)``: the variance-reduced (grad_w Phi, [v_b]) at (w, ys);
* ``default_steps(w0, y0)``: (step_w, [step_y per block]) measured from the data at (w0, y0); with
  ``primal_weight=r`` (asked for only when r != 1) w's step times r and the y-steps what the coupling bound then
  leaves, within their caps, the factor that went through in ``applied_weight``.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..errors import OptionError
from ..oracles.protocols import PrimalDualOracle
from ..utilities.progress import Progress
from ..utilities.validate import as_generator, check_int, check_number
from .aleg import normalize_log
from .averaging import TailAverage
from .schedules import check_budget

BLOCK_STEPS = 256   # inner steps whose minibatches are drawn at once
MIN_INNER = 50      # inner steps per epoch at least (small data sets: one pass is only a few steps)
# The default steps (the oracle's 1 / (2 L)) are kept for epochs of up to this many inner steps and shrink as
# 1 / sqrt(inner) beyond: the drift of the inner iterates from their snapshot, which the variance-reduced estimate's
# error grows with, accumulates over the epoch; Alacaoglu and Malitsky 2022 take the step gamma sqrt(p) / L
# (gamma < 1) for a snapshot every 1 / p steps. Their constant is conservative for the short epochs of small data sets
# (Communities, 62 steps: stable at 1 / (2 L)); on the same rows replicated 26 times (1,612 steps an epoch) the
# covariance and equal-opportunity compositions stalled at 4-6x their gap tolerance with 1 / (2 L) and certified
# with these steps.
STEADY_INNER = 256
OUTPUTS = ("suffix", "tail")
# The primal weight: a restart moves the split of the coupling bound between w and the simplices toward the one under
# which the last run's movements are balanced, halfway in log scale (PDLP's primal weight update, Applegate, Diaz,
# Hinder, Lu, Lubin, O'Donoghue, Schudy 2021, Section 3.3, with theta = 1/2), within [1 / WEIGHT_RANGE, WEIGHT_RANGE].
WEIGHT_RANGE = 64.0


def balanced_weight(weight: float, w_start, w_end, y_start: list, y_end: list, step_w: float, step_y: list,
                    coupled=None) -> float:
    """The factor on w's default step (the y-steps divided by it, within their caps) for the run after a restart.

    A run from (w_start, y_start) to its averaged output (w_end, y_end) with steps (step_w, [step_y]) under the
    factor ``weight``: each block's distance in its own geometry over its step, ||w_end - w_start||^2 / (2 step_w)
    for w and KL(y_end || y_start) / step_y_b for every simplex, is the share of the run's progress that block
    needed. Only the simplices ``coupled`` with w count (those whose step the coupling bound with w's step set; by
    default all): one at its own cap keeps its step whatever the split, so its movement is no reason to slow w
    (group DRO's weights over the groups, on 5,000 synthetic rows, moved most, took the factor down to 0.02 and the
    run stalled). Where w's share is q times the simplices' together, the split that balances them multiplies w's
    step by sqrt(q) and divides the y-steps by it; the new factor goes halfway there in log scale, weight * q^(1/4)
    (Applegate et al. 2021, Section 3.3, in the Bregman distances of the steps). Measured: group DRO under an
    equal-opportunity bound on 20,000 four-group synthetic rows (seed 3), where the default w-step (0.01-0.02) was
    10-30x smaller than the steps that certify: the run stalled 0.027 above the optimum and now certifies after six
    restarts, with the factor at 2-35."""
    primal = float(np.sum((np.asarray(w_end) - np.asarray(w_start)) ** 2)) / (2.0 * step_w)
    coupled = [True] * len(step_y) if coupled is None else coupled
    dual = sum(float(np.sum(y * (np.log(np.maximum(y, 1e-300)) - np.log(np.maximum(y0, 1e-300))))) / g
               for y, y0, g, tied in zip(y_end, y_start, step_y, coupled) if g > 0 and tied)
    if not (primal > 0 and dual > 0 and np.isfinite(primal) and np.isfinite(dual)):
        return float(weight)            # one side did not move: nothing to balance
    return float(np.clip(weight * (primal / dual) ** 0.25, 1.0 / WEIGHT_RANGE, WEIGHT_RANGE))


class Simplices:
    """A product of simplices stored as one vector (block after block): the mirror steps of all of them in a
    few vectorized operations, whatever their number."""

    def __init__(self, sizes):
        self.sizes = [int(m) for m in sizes]
        ends = np.cumsum(self.sizes)
        self.starts = ends - self.sizes
        self.slices = [slice(int(a), int(b)) for a, b in zip(self.starts, ends)]

    def join(self, parts) -> np.ndarray:
        if len(parts) == 1:
            return np.asarray(parts[0], dtype=float)
        return np.concatenate(parts) if parts else np.zeros(0)

    def split(self, v) -> list:
        return [v[s] for s in self.slices]

    def expand(self, per_block) -> np.ndarray:
        """One value per simplex repeated over its entries."""
        return np.repeat(np.asarray(per_block, dtype=float), self.sizes)

    def _per_block(self, ufunc, v):
        if len(self.sizes) == 1:
            return ufunc.reduce(v)
        return np.repeat(ufunc.reduceat(v, self.starts), self.sizes)

    def normalize_log(self, logy) -> np.ndarray:
        """ln y - logsumexp(ln y) per simplex (as :func:`fairmodel.stochastic.aleg.normalize_log`)."""
        if not self.sizes:
            return logy
        shifted = logy - self._per_block(np.maximum, logy)
        return shifted - np.log(self._per_block(np.add, np.exp(shifted)))

    def weights(self, logy) -> np.ndarray:
        """exp(ln y) normalized per simplex: the points of the simplices whose unnormalized logs are ``logy``."""
        if not self.sizes:
            return logy
        e = np.exp(logy - self._per_block(np.maximum, logy))
        return e / self._per_block(np.add, e)


def primal_dual(oracle: PrimalDualOracle, *, epochs: int = 40, inner: int | None = None, step_w=None, step_y=None, w0=None,
                y0=None, output: str = "suffix", seed=None, verbose=None, callback=None,
                max_time: float | None = None, step_scale: float = 1.0, primal_weight: float = 1.0) -> dict:
    """Run the method; returns w, ys (the averaged output), status, message, history and counters.

    epochs : number of snapshots S. inner : steps per epoch (default: one pass over the data in minibatches,
        and at least 50 steps).
    step_w, step_y : effective steps of the Euclidean w-block and of every simplex block (default: the
        oracle's, from the data's smoothness and coupling constants at w0).
    w0, y0 : the starting point (default: the projection of 0 and the uniform weights); y0 a list of positive
        vectors, one per block (normalized here).
    output : "suffix" (the average over the second half of the epochs) or "tail" (over the tail of the epochs run
        so far: for runs stopped by the callback).
    step_scale : a factor on the default steps (a caller's restarts halve them when its certificate stalls).
    primal_weight : a factor on w's default step, the y-steps divided by it within their own caps (a caller's
        restarts set it by :func:`balanced_weight`); the steps record the factor the caps let through.
    callback : called after every epoch with a dict (epoch, w, ys: the output the run would return now,
        grad_evals, time); return True to stop.
    """
    epochs = check_int(epochs, "epochs")
    if output not in OUTPUTS:
        raise OptionError(f"output must be one of {', '.join(OUTPUTS)}; got {output!r}")
    rng = as_generator(seed)
    w = oracle.project(np.zeros(oracle.shape) if w0 is None else np.asarray(w0, dtype=float))
    logy = [np.full(m, -math.log(m)) for m in oracle.blocks] if y0 is None else \
        [normalize_log(np.log(np.maximum(np.asarray(y, dtype=float), 1e-300))) for y in y0]
    K = check_int(inner, "inner") if inner is not None else getattr(oracle, "epoch_steps", None) or \
        max(MIN_INNER, math.ceil(oracle.n_samples / max(oracle.rows_per_step, 1)))   # no sample leaf: 0 rows
    auto_w, auto_y = oracle.default_steps(w, [np.exp(lv) for lv in logy], **(
        {} if primal_weight == 1.0 else {"primal_weight": primal_weight})) if step_w is None or step_y is None \
        else (None, [None] * len(logy))
    shrink = step_scale * min(1.0, math.sqrt(STEADY_INNER / K))      # long epochs: see STEADY_INNER
    gw = auto_w * shrink if step_w is None else check_number(step_w, "step_w", low=0.0, strict=True)
    gy = [g * shrink for g in auto_y] if step_y is None else \
        [check_number(step_y, "step_y", low=0.0, strict=True)] * len(auto_y)

    simplices = Simplices(oracle.blocks)
    block = int(getattr(oracle, "block_steps", BLOCK_STEPS))     # inner steps drawn and prepared at once
    lam = simplices.join(logy)                  # the log-weights of every simplex, one after the other
    gy_rows = simplices.expand(gy)
    snap_w, snap_lam = w.copy(), lam.copy()
    snap_y = [np.exp(lv) for lv in logy]
    average = TailAverage()
    history, status, message, evals = [], "completed", "", 0
    start = time.perf_counter()
    alpha = 1.0 / K
    suffix_from = epochs // 2 if output == "suffix" else 0

    def current_output():
        """(w, ys): the output the run returns if it stops now (the snapshot before any average)."""
        value = average.value()
        if value is None:
            return snap_w, snap_y
        return oracle.project(value[0]), [y / y.sum() for y in value[1:]]

    with Progress(epochs, "primal-dual", verbose) as bar:
        for s in range(epochs):
            snap = oracle.snapshot(snap_w, snap_y)
            evals += oracle.n_samples
            if not (np.isfinite(snap.objective) and np.all(np.isfinite(snap.grad))):
                status, message = "diverged", (f"non-finite values or gradient at the snapshot of epoch {s}; the "
                                               f"steps are too large for this problem (try smaller step_w)")
                break
            history.append({"epoch": s, "objective": snap.objective, "grad_evals": evals,
                            "time": time.perf_counter() - start})
            acc_w, acc_lam = np.zeros_like(w), np.zeros_like(lam)
            sum_w, sum_y = np.zeros_like(w), np.zeros_like(lam)       # the half iterates of the epoch
            if output == "tail":
                average.start_epoch(s)
            # the snapshot's parts of the anchors and of the half steps, fixed within the epoch
            snap_part_w, snap_part_lam, keep = alpha * snap_w, alpha * snap_lam, 1.0 - alpha
            half_w, half_y = gw * snap.grad, gy_rows * simplices.join(snap.values)
            for k in range(K):
                if k % block == 0:
                    batches = oracle.prepare(oracle.draw(rng, min(block, K - k)), snap)
                anchor_w = snap_part_w + keep * w
                anchor = snap_part_lam + keep * lam
                w_half = oracle.project(anchor_w - half_w)
                y_half = simplices.weights(anchor + half_y)
                v_w, v_y = oracle.estimate(batches[k % block], w_half, simplices.split(y_half), snap)
                w = oracle.project(anchor_w - gw * v_w)
                lam = simplices.normalize_log(anchor + gy_rows * simplices.join(v_y))
                acc_w += w
                acc_lam += lam
                sum_w += w_half
                sum_y += y_half
            evals += 2 * oracle.rows_per_step * K
            if s >= suffix_from:
                average.add(float(K), sum_w / K, *simplices.split(sum_y / K))
            snap_w, snap_lam = acc_w / K, acc_lam / K
            snap_y = simplices.split(simplices.weights(snap_lam))
            elapsed = time.perf_counter() - start
            bar.update(1, objective=history[-1]["objective"])
            stop = check_budget(s, evals, elapsed, None, max_time, callback,
                                lambda: dict(zip(("w", "ys"), current_output()), epoch=s, grad_evals=evals,
                                             time=elapsed))
            if stop:
                status, message = stop
                break
    w_out, y_out = current_output()
    if not np.all(np.isfinite(w_out)):
        status, message = "diverged", message or "the output contains non-finite values"
    return {"w": w_out, "ys": y_out, "status": status, "message": message, "history": history,
            "grad_evals": evals, "epochs_run": len(history),
            "steps": {"step_w": gw, "step_y": gy, "inner": K, "primal_weight": getattr(oracle, "applied_weight", 1.0),
                      "coupled": getattr(oracle, "coupled", [True] * len(gy))}}

