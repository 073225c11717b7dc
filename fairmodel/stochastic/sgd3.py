"""SGD3 refined with AC-SA or AC-SA^2 as inner solver (Algorithm 4 of the DP post-processing paper; Allen-Zhu
2018, Foster et al. 2019), and projected SGD (the "SGD" baseline of Figure 3, App. G). Both are generators with
the protocol of :mod:`fairmodel.stochastic.acsa`.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import OptionError
from .acsa import acsa, acsa2

INNER = {"acsa2": acsa2, "acsa": acsa}


def sgd3_stages(M: float, mu: float, reference: bool = False) -> int:
    """J = floor(log2(M / mu)) (Thm C.2; Alg. 4 prints log, a misprint for log2), or the reference
    code's floor(log2((M + mu) / mu)). Raises unless 0 < mu and J >= 1."""
    if not (np.isfinite(mu) and mu > 0) or mu > M:
        raise OptionError(f"SGD3 needs 0 < mu <= M; got mu = {mu:.4g}, M = {M:.4g}")
    J = math.floor(math.log2((M + mu) / mu if reference else M / mu))
    if J < 1:
        raise OptionError(f"SGD3 needs J = floor(log2(M / mu)) >= 1, i.e. mu <= M / 2; got M / mu = {M / mu:.4g}")
    return J


def sgd3(w0: np.ndarray, mu: float, M: float, T: int, inner: str = "acsa2", reference: bool = False):
    """SGD3-refined (Algorithm 4): J stages of T // J gradients; returns w_hat_J.

    Paper version (default): F^(0) = F + mu/2 ||w - w0||^2 (line 2 of Alg. 4, as the proof of Thm C.2 reads it;
    App. C.2 defines F^(0) = F), stage j starts from w_hat_{j-1} with strong convexity mu_{j-1} and
    smoothness 2(M + mu), then F^(j) = F^(j-1) + mu_j/2 ||w - w_hat_j||^2 with mu_j = 2 mu_{j-1}.
    ``reference=True`` reproduces the reference code: smoothness M + mu, J =
    floor(log2((M + mu)/mu)), every stage restarts from w0, F^(0) = F (its anchor has weight 0), and the
    inner solver runs with the reference schedule. The gradient-mapping parameter of the guarantee is
    alpha = 1 / (2^(J+2) mu) (:func:`sgd3_alpha`).
    """
    if inner not in INNER:
        raise OptionError(f"inner must be one of {', '.join(INNER)}; got {inner!r}")
    solve = INNER[inner]
    J = sgd3_stages(M, mu, reference)
    smooth = M + mu if reference else 2.0 * (M + mu)
    per_stage = T // J
    c, anchor = (0.0, np.zeros_like(w0)) if reference else (mu, mu * w0)
    w_hat, mu_j = w0, mu
    for _ in range(J):
        w_hat = yield from solve(w0 if reference else w_hat, mu_j, smooth, per_stage, (c, anchor), reference)
        mu_j *= 2.0
        c, anchor = c + mu_j, anchor + mu_j * w_hat
    return w_hat


def sgd3_alpha(M: float, mu: float, reference: bool = False) -> float:
    """alpha = 1 / (2^(J+2) mu) = 1 / (4 mu_J), in [1/(4M), 1/(2M)] (Thm C.2)."""
    return 1.0 / (2.0 ** (sgd3_stages(M, mu, reference) + 2) * mu)


def sgd3_gradient_calls(T: int, J: int, inner: str, reference: bool) -> int:
    """The number of stochastic gradients a run actually uses (floors of T/J and T/2)."""
    per = T // J
    if inner == "acsa":
        return J * per
    return J * (2 * per if reference else 2 * (per // 2))


def projected_sgd(w0: np.ndarray, step: float, T: int, tail: float = 1.0):
    """Projected SGD w <- max(w - step g, 0) from w0; returns the mean of the last ceil(tail T) iterates
    (the reference code: step 1/M and the mean of all T iterates)."""
    if not (0.0 < tail <= 1.0):
        raise OptionError(f"tail must lie in (0, 1] (the fraction of iterates averaged); got {tail}")
    w, avg, tmp = w0.copy(), w0.copy(), np.empty_like(w0)
    first = T - max(1, math.ceil(tail * T))
    for t in range(T):
        g = yield w, (avg if t > first else w)
        np.multiply(g, step, out=tmp)
        w -= tmp
        np.maximum(w, 0.0, out=w)
        if t >= first:  # running mean of the averaged iterates
            np.subtract(w, avg, out=tmp)
            avg += tmp / (t - first + 1)
    return avg
