"""Stochastic mirror descent (SMD) for group DRO: the standard group-DRO training method (Nemirovski et al.
2009) and the baseline of the ALEG paper's experiments (Yu, Cai, Jiang, Zhang 2024, Section 6 and Table 1).

Each iteration draws ``batch_size`` samples per group (as ALEG does, eq. (20)) and takes

    w     <- Proj_W(w - gamma_w sum_i q_i grad l(w; xi_i))
    ln q  <- ln q + gamma_q [l(w; xi_i)]_i - logsumexp(...)      (entropic step on the simplex)

and outputs the step-weighted average of the iterates. Cost: m * batch_size gradients per iteration.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..errors import OptionError
from ..oracles.losses import score_gradient
from ..oracles.protocols import GroupRiskOracle
from ..utilities.progress import Progress
from ..utilities.validate import as_generator
from .aleg import _check_offsets, check_initial, default_steps, normalize_log, start_risk_scale
from .schedules import check_budget


def smd(risks: GroupRiskOracle, *, epochs: int = 50, batch_size: int = 1, step_w=None, step_q=None,
        step_schedule: str = "decreasing", offsets=None, w0=None, q0=None, seed=None, verbose=None,
        callback=None, max_grad_evals: int | None = None, max_time: float | None = None,
        track_output: bool = False) -> dict:
    """Run SMD for ``epochs`` passes' worth of samples (ceil(n_bar / batch_size) iterations per epoch).

    ``step_schedule``: "constant" or "decreasing" (gamma / sqrt(t + 1) over iterations t, the classical
    choice for SMD). Returns the same dict layout as :func:`fairmodel.stochastic.aleg.aleg`.
    """
    if step_schedule not in ("constant", "decreasing"):
        raise OptionError(f"SMD step_schedule must be 'constant' or 'decreasing'; got {step_schedule!r}")
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise OptionError(f"epochs must be a positive integer; got {epochs!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise OptionError(f"batch_size must be a positive integer; got {batch_size!r}")
    rng = as_generator(seed)
    m, n = risks.m, risks.n_samples
    c = np.zeros(m) if offsets is None else _check_offsets(offsets, m)
    w, logq = check_initial(risks, w0, q0)
    auto_w, auto_q = default_steps(risks, batch_size,
                                   start_risk_scale(risks, w, c) if m > 1 and step_q is None else 1.0)
    gw0 = auto_w if step_w is None else float(step_w)
    gq0 = auto_q if step_q is None else float(step_q)
    for name, v in (("step_w", gw0), ("step_q", gq0)):
        if not np.isfinite(v) or v <= 0:
            raise OptionError(f"{name} must be positive and finite; got {v}")
    per_epoch = max(1, math.ceil(n / m / batch_size))
    phi = risks.loss.phi
    sampler = risks.sampler(batch_size, rng)
    batch_group = np.repeat(np.arange(m), batch_size)
    out_w, out_q, out_weight = np.zeros_like(w), np.zeros(m), 0.0
    evals, t, history, status, message = 0, 0, [], "completed", ""
    start = time.perf_counter()
    try:
        with Progress(epochs, "SMD", verbose) as bar:
            for s in range(epochs):
                for _ in range(per_epoch):
                    mult = 1.0 / math.sqrt(t + 1.0) if step_schedule == "decreasing" else 1.0
                    q = np.exp(logq)
                    out_w += mult * w
                    out_q += mult * q
                    out_weight += mult
                    batch = sampler.draw()
                    Xb, yb = risks.batch(batch)
                    z = Xb @ w
                    losses = phi(z, yb).reshape(m, batch_size).mean(axis=1) - c
                    coef = score_gradient(risks.loss, z, yb, q[batch_group] / batch_size)
                    w = risks.project(w - gw0 * mult * (Xb.T @ coef))
                    if m > 1:
                        logq = normalize_log(logq + gq0 * mult * losses)
                    evals += m * batch_size
                    t += 1
                elapsed = time.perf_counter() - start
                if not (np.all(np.isfinite(w)) and np.all(np.isfinite(logq))):
                    status, message = "diverged", f"non-finite iterate in epoch {s}; try smaller step_w/step_q"
                    break
                record = {"epoch": s, "grad_evals": evals, "time": elapsed}
                if track_output:
                    record["output_objective"] = float(np.max(risks.risks(out_w / out_weight) - c))
                history.append(record)
                bar.update(1)
                stop = check_budget(s, evals, elapsed, max_grad_evals, max_time, callback,
                                    lambda: {"epoch": s, "w": out_w / out_weight, "q": out_q / out_q.sum(),
                                             "grad_evals": evals, "time": elapsed})
                if stop:
                    status, message = stop
                    break
    finally:
        close = getattr(sampler, "close", None)       # a chunk sampler's prefetch thread ends here
        if close is not None:
            close()
    return {"w": out_w / out_weight, "q": out_q / out_q.sum(), "status": status, "message": message,
            "history": history, "grad_evals": evals, "epochs_run": len(history),
            "steps": {"step_w": gw0, "step_q": gq0}}
