"""IQRC: the inexact quadratically regularized constrained method (Algorithm 3 of the AUC-fairness paper, after
Ma et al. 2020; Yao, Lin, Yang, AISTATS 2023) for weakly convex models such as a neural network.

Each outer iteration s solves the proximal subproblem (32) around the current point x~(s),

    min_x f0(x) + (rho^/2) ||x - x~(s)||^2  s.t.  f_k(x) + (rho^/2) ||x - x~(s)||^2 <= 1 + kappa_k,

which is convex when rho^ exceeds the weak-convexity modulus rho, with the oracle B = SFLS + SMD on the level-set
function H^(r) of (33) (SMD with d_x = (rho^/2) ||x - x~||^2). The output is x~(R) for an index R drawn
uniformly from {0, ..., S} (the paper), or the last point (``output="last"``); every x~(s) is kept for model
selection (App. E.3).

Practical choices (the paper leaves them open): eps^ is not computed from the unknown constants
(rho, G, sigma_eps) but set through the SFLS options of the oracle; each SFLS starts at the level
r(0) = f0(x~(s)) (>= f^* of (32) when x~(s) is feasible), and its SMD starts from x~(s) (the paper starts SMD
at x = 0, which never breaks the symmetry of a network's hidden units), and ``keep_best`` keeps x~(s) when the
oracle's point is worse on the full data.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from ..errors import OptionError
from ..utilities.progress import Progress

OUTPUTS = ("random", "last")


def iqrc(oracle, x0: np.ndarray, *, S: int = 5, rho_hat: float = 1e-5, output: str = "random", rng, evaluate,
         delta: float = 0.05, keep_best: bool = False, verbose=None, callback=None) -> dict:
    """Run Algorithm 3.

    oracle : ``oracle(x0=, rho_hat=, center=, r0=, delta=) -> dict`` (one SFLS run on (33); returns ``x``,
        ``status``, ``history``, ``metrics``). evaluate : x -> {"track_f0": f0(x), "track_violation": ...}
        on the full data. keep_best : keep x~(s) as x~(s+1) when the oracle's point is infeasible or has a
        larger f0 (a safeguard for a stochastic oracle that stopped at its first level). callback :
        ``callback({"epoch": s, "x": x~(s+1), "y": the oracle's y}) -> bool`` at the end of every outer
        iteration (a stage); True stops the run there and returns x~(s+1), whatever ``output``.
    Returns the chosen point ``x``, its ``index`` R, every center, the oracle outputs and a history with one record
    per outer iteration.
    """
    if isinstance(S, bool) or not isinstance(S, (numbers.Integral, np.integer)) or S < 1:
        raise OptionError(f"S (number of IQRC iterations) must be a positive integer; got {S!r}")
    if isinstance(rho_hat, bool) or not isinstance(rho_hat, (numbers.Real, np.floating)) or not np.isfinite(rho_hat) \
            or rho_hat <= 0:
        raise OptionError(f"rho_hat must be > 0 in IQRC (it must exceed the weak-convexity modulus rho >= 0); "
                          f"got {rho_hat!r}")
    if output not in OUTPUTS:
        raise OptionError(f"output must be one of {', '.join(OUTPUTS)}; got {output!r}")
    centers, calls, history = [np.asarray(x0, dtype=float)], [], []
    status, message, early, stopped = "completed", "", 0, False
    with Progress(S, "IQRC", verbose) as bar:
        for s in range(S):
            center = centers[-1]
            start = evaluate(center)
            r0 = start["track_f0"]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                out = oracle(x0=center, rho_hat=rho_hat, center=center, r0=r0, delta=delta / S)
            early += sum("first iteration" in str(w.message) for w in caught)
            calls.append(out)
            history.append({"iqrc": s, "level0": r0, "f0_center": start["track_f0"],
                            "violation_center": start["track_violation"], "outer_iterations": len(out["history"])})
            if out["status"] == "diverged":
                status, message = "diverged", f"IQRC iteration {s}: {out['message']}"
                break
            new = np.asarray(out["x"], dtype=float)
            if keep_best and start["track_violation"] <= 0:
                after = evaluate(new)
                if after["track_violation"] > 0 or after["track_f0"] > start["track_f0"]:
                    new = center
            centers.append(new)
            bar.update(1, f0=start["track_f0"])
            if callback is not None and callback({"epoch": s, "x": new, "y": out.get("y")}):
                stopped = True
                break
            if bar.stopped:
                status = "interrupted"
                break
    index = int(rng.integers(0, len(centers))) if output == "random" and not stopped else len(centers) - 1
    if status not in ("diverged", "interrupted"):
        message = (f"IQRC ran {len(centers) - 1} iterations" + (" (stopped by the callback)" if stopped else "")
                   + f"; output x~({index})"
                   + (f"; {early} subproblem(s) halted at their first SFLS iteration" if early else ""))
    final = evaluate(centers[-1])
    history.append({"iqrc": len(centers) - 1, "f0_center": final["track_f0"],
                    "violation_center": final["track_violation"]})
    return {"x": centers[index], "index": index, "centers": centers, "calls": calls, "history": history,
            "status": status, "message": message, "y": calls[index - 1]["y"] if index else None}
