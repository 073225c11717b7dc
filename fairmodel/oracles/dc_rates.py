"""Ramp surrogates of group decision rates and the DC constraints that bound their gaps.

A decision rate of a group (the selection rate, or the true- or false-positive rate on the rows of one label) is the
mean of the indicators 1[s_i > t] over its rows. Its ramp surrogate replaces each indicator by

    sigma((s_i - t) / width),   sigma(u) = clip(u + 1/2, 0, 1) = pos(u + 1/2) - pos(u - 1/2),

the ramp of Example B.3 of He, Huang, Yao, Lin 2025 ("Enforcing Fairness Where It Matters") stretched to ``width``:
a difference of two hinges, so a ramp rate r = A+ - A- is a difference of two convex averages of hinges of a linear
score. The ramp and the indicator differ only for |s_i - t| < width / 2, by at most 1/2, so

    |ramp rate - true rate| <= (1/2) x (share of the group's rows with |s - t| < width / 2)        (the slack).

The gap constraint ``max_k r_k - min_k r_k <= eps`` (the largest pairwise gap of K groups, on every label stratum)
holds iff some centre c has |r_k - c| <= eps / 2 for every group k (take c = the midpoint of the extreme rates); with
one centre c_s per stratum as an auxiliary variable this is 2 K DC constraints per stratum, each with the hinge
average of one group as its convex part f+ (the form of model (13) of the same paper, whose thresholds play the
centre's role):

    upper (s, k):  r_sk - c_s - eps/2 <= 0:   f+ = A+_sk,   f- = A-_sk + c_s + eps/2
    lower (s, k):  c_s - r_sk - eps/2 <= 0:   f+ = A-_sk,   f- = A+_sk - c_s + eps/2

with A+-_sk = (1/n_sk) sum_{i in cell (s, k)} pos(u_i +- 1/2), u_i = (x_i . w - t) / width.
"""
from __future__ import annotations

import numpy as np

from .dc import Block, Layout


def ramp_rate(u: np.ndarray) -> float:
    """The mean of sigma(u) = clip(u + 1/2, 0, 1) (u = (score - threshold) / width)."""
    return float(np.mean(np.clip(u + 0.5, 0.0, 1.0)))


def true_rate(u: np.ndarray) -> float:
    """The mean of the decisions 1[u > 0] (score > threshold)."""
    return float(np.mean(u > 0))


def rate_slack(u: np.ndarray) -> float:
    """(1/2) x the share of rows with |u| < 1/2: a bound on |ramp rate - true rate| of these rows."""
    return 0.5 * float(np.mean(np.abs(u) < 0.5))


class RampRateBlock(Block):
    """The gap constraint ``max_k r_sk - min_k r_sk <= eps`` on every stratum s of a ramp-rate-gap atom, as the
    2 C DC constraints of the module docstring (C = strata x groups cells; all upper (s, k) then all lower (s, k)),
    with the centres c_s in the auxiliary variable ``rate_<name>`` (one per stratum)."""

    def __init__(self, atom, eps: float, name: str, layout: Layout):
        self.atom, self.name, self.eps = atom, name, eps
        self.aux_name = f"rate_{name}"
        self.csl = layout.slices[self.aux_name]
        self.wsl = layout.slices[atom.score.w.name]
        self.D = layout.D
        X = atom.score.design()
        self.cells = atom.cells                                 # (stratum, group, rows)
        self.X = [X[rows] / atom.width for _, _, rows in self.cells]
        self.cut = atom.threshold / atom.width
        self.stratum = np.array([s for s, _, _ in self.cells])
        self.C = len(self.cells)
        self.m = 2 * self.C
        self.scale, self.bound = 2.0, eps                       # bound + 2 max f = the ramp gap at the midpoint c
        self.labels = [f"{name}:{side}[{atom.cell_label(j)}]" for side in ("upper", "lower") for j in range(self.C)]
        self.pieces = 2 * sum(Xc.shape[0] for Xc in self.X)     # hinges of the f+ (one per row and side)

    def _u(self, x) -> list:
        w = x[self.wsl]
        return [Xc @ w - self.cut for Xc in self.X]

    def _grad(self, j, mask, out, sign=1.0) -> None:
        """out[w] += sign (1/n) sum of the rows of cell j where ``mask``."""
        out[self.wsl] += sign * (mask.astype(float) @ self.X[j]) / mask.size

    def rates(self, x) -> np.ndarray:
        """The ramp rates r_sk of every cell (C,)."""
        return np.array([ramp_rate(u) for u in self._u(x)])

    def plus(self, x):
        us = self._u(x)
        a_plus = [float(np.maximum(u + 0.5, 0.0).mean()) for u in us]
        a_minus = [float(np.maximum(u - 0.5, 0.0).mean()) for u in us]
        return np.array(a_plus + a_minus), us

    def plus_grad(self, x, i, cache):
        lower, j = divmod(i, self.C)
        g = np.zeros(self.D)
        self._grad(j, cache[j] > (0.5 if lower else -0.5), g)      # upper: A+ (u > -1/2); lower: A- (u > 1/2)
        return g

    def minus(self, x):
        us = self._u(x)
        c = x[self.csl][self.stratum]
        a_plus = np.array([np.maximum(u + 0.5, 0.0).mean() for u in us])
        a_minus = np.array([np.maximum(u - 0.5, 0.0).mean() for u in us])
        jac = np.zeros((self.m, self.D))
        for j, u in enumerate(us):
            s = self.csl.start + self.stratum[j]
            self._grad(j, u > 0.5, jac[j])                   # upper: f- = A- + c + eps/2
            jac[j, s] += 1.0
            self._grad(j, u > -0.5, jac[self.C + j])         # lower: f- = A+ - c + eps/2
            jac[self.C + j, s] -= 1.0
        half = 0.5 * self.eps
        return np.concatenate([a_minus + c + half, a_plus - c + half]), jac

    def values(self, x):
        r, c = self.rates(x), x[self.csl][self.stratum]
        half = 0.5 * self.eps
        return np.concatenate([r - c - half, c - r - half])

    def centres(self, x) -> np.ndarray:
        """The midpoint of the extreme ramp rates of every stratum (the best centres for this w)."""
        r = self.rates(x)
        return np.array([0.5 * (r[self.stratum == s].max() + r[self.stratum == s].min())
                         for s in range(self.atom.n_strata)])

    def start(self, x) -> None:
        x[self.csl] = self.centres(x)

    def penalty(self, x):
        """(P(x), subgradient) of the penalty of the centred form, the analogue of (78) of He, Huang, Yao, Lin 2025:
        P = 2 max_{s,k} |r_sk - c_s| (>= the largest ramp gap, equal to it at the midpoint centres)."""
        us = self._u(x)
        dev = np.array([ramp_rate(u) for u in us]) - x[self.csl][self.stratum]
        j = int(np.argmax(np.abs(dev)))
        sign = 1.0 if dev[j] >= 0 else -1.0
        grad = np.zeros(self.D)
        # d r / d w: the rows inside the ramp, -1/2 < u <= 1/2 (subgradient 0 at the kinks); d / d c_s = -1
        self._grad(j, (us[j] > -0.5) & (us[j] <= 0.5), grad, 2.0 * sign)
        grad[self.csl.start + self.stratum[j]] -= 2.0 * sign
        return 2.0 * abs(float(dev[j])), grad
