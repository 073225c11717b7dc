"""The partial-parity constraints of the DC program (21) (He, Huang, Yao, Lin 2025): the ramp surrogate and its
convex split (Example B.3), model (13) as :class:`RampBandBlock` and model (17) rewritten with identity (51) as
:class:`WeakBandBlock`. Each block gives the values of f_i+ and f_i- and their subgradients on the flat variable
of :class:`fairmodel.oracles.dc.Layout`; subgradients at kinks are 0 (strict inequalities in the active sets).
"""
from __future__ import annotations

import numpy as np

from .dc import Block, Layout
from .dc_hinges import HingeAverages, score_vector


# ---------------------------------------------------------------------------------------------------
# The ramp surrogate (Example B.3): sigma(x) = clip(x + 1/2, 0, 1) = sigma_plus(x) - sigma_minus(x)
# ---------------------------------------------------------------------------------------------------
def ramp(x):
    """sigma(x) = clip(x + 1/2, 0, 1), the surrogate of 1[x > 0] used in all experiments of the paper."""
    return np.clip(np.asarray(x, dtype=float) + 0.5, 0.0, 1.0)


def ramp_plus(x):
    """sigma+(x) = max(x + 1/2, 0), convex, 1-Lipschitz; subgradient 1[x > -1/2] (0 at the kink)."""
    return np.maximum(np.asarray(x, dtype=float) + 0.5, 0.0)


def ramp_minus(x):
    """sigma-(x) = max(x - 1/2, 0), convex, 1-Lipschitz; subgradient 1[x > 1/2] (0 at the kink)."""
    return np.maximum(np.asarray(x, dtype=float) - 0.5, 0.0)


def min_identity(s_plus, s_minus, c):
    """Right-hand side of identity (51), min{S, c} = S+ + c - max{S- + c, S+} with S = S+ - S-.

    Erratum: the paper prints the second argument of the max as a sum of sigma+ without the 1/n_k; the
    correct argument is the average S+.
    """
    return s_plus + c - np.maximum(s_minus + c, s_plus)


def band_averages(atom, cell, j, cut, layout: Layout) -> HingeAverages:
    """The hinge averages over the groups of a partial-parity atom's linear score, family f over the group
    ``cell[f]`` with threshold variable ``j[f]`` (-1: none) and cut ``cut[f]``."""
    score, groups = atom.score, atom.groups
    return HingeAverages(score.data, groups.codes, groups.sizes, layout.slices[score.w.name], score.w.intercept,
                         layout.D, cell, j, cut)


class _Sorted:
    """The scores of one group, sorted, with suffix sums: every (1/n_k) sum_i pos(z_i - c) for many cuts c at
    O(log n_k) each."""

    __slots__ = ("n", "zs", "suffix")

    def __init__(self, z):
        self.n = z.shape[0]
        self.zs = np.sort(z)
        self.suffix = np.concatenate([np.cumsum(self.zs[::-1])[::-1], [0.0]])

    def pos_mean(self, c):
        """(1/n) sum_i max(z_i - c, 0) for a number or an array of cuts c."""
        idx = np.searchsorted(self.zs, c, side="right")
        return (self.suffix[idx] - (self.n - idx) * c) / self.n

    def ramp_mean(self, theta):
        """(1/n) sum_i sigma(z_i - θ) = A+ - A- (identity of Example B.3), for an array of θ."""
        return self.pos_mean(theta - 0.5) - self.pos_mean(theta + 0.5)


class RampBandBlock(Block):
    """Model (13): for p in Î and every group k, with avg sigma_{k,p} = A+_{k,p} - A-_{k,p} (Example B.3)

    lower  p <= avg sigma:            f+ = A-_{k,p},  f- = A+_{k,p} - p
    upper  avg sigma <= p + kappa':   f+ = A+_{k,p},  f- = A-_{k,p} + p + kappa'      (kappa' = kappa (beta - alpha))

    A+-_{k,p}(w, θ) = (1/n_k) sum_i sigma+-(h_w(ξ_i^k) - θ_p) = (1/n_k) sum_i pos(z_i - (θ_p -+ 1/2));
    rho = 0 for the linear model. Constraint order: all lower (k, p) then all upper (k, p), k major. The hinge
    averages (one family per constraint, its f+) are passes over the score's data (:mod:`fairmodel.oracles.dc_hinges`).
    """

    def __init__(self, atom, kappa: float, levels: np.ndarray, name: str, layout: Layout):
        self.atom, self.name = atom, name
        self.kappa = kappa
        self.alpha, self.beta = atom.band
        self.kp = kappa * (self.beta - self.alpha)
        self.levels = levels
        self.P = self.levels.size
        self.G = atom.groups.n_groups
        self.tsl = layout.slices[f"theta_{name}"]
        self.wsl = layout.slices[atom.score.w.name]
        self.D = layout.D
        self.m = 2 * self.G * self.P
        # family i = constraint i (its f+): lower (k, p) cut θ_p + 1/2, upper (k, p) cut θ_p - 1/2
        side, k, p = (a.ravel() for a in np.meshgrid(np.arange(2), np.arange(self.G), np.arange(self.P),
                                                     indexing="ij"))
        self.avg = band_averages(atom, k, self.tsl.start + p, np.where(side == 0, 0.5, -0.5), layout)
        self.swap = np.concatenate([np.arange(self.G * self.P, self.m), np.arange(self.G * self.P)])  # other side
        self.pieces = self.avg.pieces
        self.scale, self.bound = 1.0 / (self.beta - self.alpha), kappa
        names = atom.groups.names
        self.labels = [f"{name}:{side}[{names[k]},p={p:.4g}]" for side in ("lower", "upper")
                       for k in range(self.G) for p in self.levels]

    def plus(self, x):
        return self.avg.values(x), x

    def plus_grad(self, x, i, cache):
        return self.avg.gradients(x, [i])[0]

    def plus_jacobian(self, x) -> np.ndarray:
        return self.avg.values_and_gradients(x)[1]

    def _offsets(self):
        """f- = (the other side's average) + offset: -p (lower), p + kappa' (upper)."""
        return np.concatenate([np.tile(-self.levels, self.G), np.tile(self.levels + self.kp, self.G)])

    def minus(self, x):
        A, dA = self.avg.values_and_gradients(x)
        return A[self.swap] + self._offsets(), dA[self.swap]

    def linearize(self, x):
        L, dL = self.avg.linearization(x)
        return L[self.swap] + self._offsets(), dL[self.swap]

    def averages(self, x) -> np.ndarray:
        """avg sigma_{k,p} = (1/n_k) sum_i sigma(h_w(ξ_i^k) - θ_p), shape (G, P)."""
        A = self.avg.values(x)
        half = self.G * self.P
        return (A[half:] - A[:half]).reshape(self.G, self.P)

    def values(self, x):
        avg = self.averages(x)
        return np.concatenate([(self.levels - avg).ravel(), (avg - self.levels - self.kp).ravel()])

    def initial_thresholds(self) -> np.ndarray:
        """θ_p^(0) = 1/2 - p - kappa'/2: at w = 0 every constraint of (13) equals -kappa'/2 ."""
        return 0.5 - self.levels - self.kp / 2.0

    def best_thresholds(self, x, iterations: int = 100) -> np.ndarray:
        """θ minimizing max_k max(p - avg sigma_k(θ_p), avg sigma_k(θ_p) - p - kappa') for every level p.

        The first term increases and the second decreases in θ_p (avg sigma is nonincreasing), so the
        minimum is at their crossing: bisection, all levels at once, on the scores (one pass; 8 bytes a row held
        while it runs). Used to judge a candidate given without θ and to complete starting points.
        """
        z = score_vector(self.avg.data, x[self.wsl], self.avg.intercept)
        srt = [_Sorted(z[ix]) for ix in self.atom.groups.indices()]
        lo = np.full(self.P, min(s.zs[0] for s in srt) - 1.0)
        hi = np.full(self.P, max(s.zs[-1] for s in srt) + 1.0)
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            avg = np.array([s.ramp_mean(mid) for s in srt])
            low_side = np.max(self.levels - avg, axis=0) < np.max(avg - self.levels - self.kp, axis=0)
            lo, hi = np.where(low_side, mid, lo), np.where(low_side, hi, mid)
        return 0.5 * (lo + hi)

    def start(self, x):
        w_zero = not np.any(x[self.wsl])
        x[self.tsl] = self.initial_thresholds() if w_zero else self.best_thresholds(x)

    def penalty(self, x):
        """(P(x), subgradient) of the penalty of (78): (2/(beta-alpha)) max_{p,k} |avg sigma_{k,p} - p|."""
        dev = self.averages(x) - self.levels
        k, p = np.unravel_index(int(np.argmax(np.abs(dev))), dev.shape)
        c = 2.0 / (self.beta - self.alpha)
        lower = k * self.P + p
        # sigma = A+ - A-: its subgradient is that of A+ (the upper family) minus that of A- (the lower family)
        g = self.avg.gradients(x, [lower + self.G * self.P, lower])
        return c * abs(float(dev[k, p])), c * np.sign(dev[k, p]) * (g[0] - g[1])


class WeakBandBlock(Block):
    """Model (17) with identity (51), for every ordered pair (k, k'), k != k' :

    f = M_alpha(k) + M_beta(k') - M_beta(k) - M_alpha(k') - kappa',   M_c(k) = max{S-_k + c, S+_k}
    minimal split: f+ = M_alpha(k) + M_beta(k'),  f- = M_beta(k) + M_alpha(k') + kappa'
    paper split (Example B.5): both parts also carry S+_k + S+_k' (they cancel in f).

    S+-_k(w) = (1/n_k) sum_i sigma+-(h_w(ξ_i^k) - θ̂): the hinge averages of two families per group (S+ with cut
    θ̂ - 1/2, S- with θ̂ + 1/2), passes over the score's data. Erratum fixed: (51) uses the average S+_k, not the
    sum. Subgradient of M_c: the active piece, ties to the first (S- + c).
    """

    def __init__(self, atom, kappa: float, name: str, layout: Layout):
        self.atom, self.name = atom, name
        self.kappa = kappa
        self.alpha, self.beta = atom.band
        self.kp = kappa * (self.beta - self.alpha)
        self.G = atom.groups.n_groups
        self.wsl, self.D = layout.slices[atom.score.w.name], layout.D
        t, G = atom.threshold, self.G          # families: S+ of every group (cut θ̂ - 1/2), then S- (θ̂ + 1/2)
        self.avg = band_averages(atom, np.tile(np.arange(G), 2), np.full(2 * G, -1),
                                 np.repeat([t - 0.5, t + 0.5], G), layout)
        self.pieces = self.avg.pieces
        self.pairs = [(k, l) for k in range(self.G) for l in range(self.G) if k != l]
        self.m = len(self.pairs)
        self.paper = atom.decomposition == "paper"
        self.scale, self.bound = 1.0 / (self.beta - self.alpha), kappa
        names = atom.groups.names
        self.labels = [f"{name}:pair[{names[k]},{names[l]}]" for k, l in self.pairs]

    def _parts(self, x, grads: bool, linear: bool = False):
        """S+, S- (G,), and if asked their gradients (G, D) (``linear``: their minorants' values and slopes,
        :meth:`HingeAverages.linearization`, and the exact values to choose the active pieces)."""
        G = self.G
        if not grads:
            A = self.avg.values(x)
            return A[:G], A[G:], None, None, None
        A, dA = self.avg.linearization(x) if linear else self.avg.values_and_gradients(x)
        exact = self.avg.values(x) if linear else A
        return A[:G], A[G:], dA[:G], dA[G:], (exact[:G], exact[G:])

    def _M(self, sp, sm, dsp, dsm, c, exact=None):
        ep, em = (sp, sm) if exact is None else exact
        first = em + c >= ep                       # the active piece, by the exact values
        val = np.where(first, sm + c, sp)
        grad = None if dsp is None else np.where(first[:, None], dsm, dsp)
        return val, grad

    def _split(self, x, grads: bool, linear: bool = False):
        """(f+, f-, df+, df-) over the ordered pairs (``linear``: of the minorants of the linearization)."""
        sp, sm, dsp, dsm, exact = self._parts(x, grads, linear)
        ma, dma = self._M(sp, sm, dsp, dsm, self.alpha, exact)
        mb, dmb = self._M(sp, sm, dsp, dsm, self.beta, exact)
        k, l = np.array(self.pairs).T
        fp, fm = ma[k] + mb[l], mb[k] + ma[l] + self.kp
        dfp = dfm = None
        if grads:
            dfp, dfm = dma[k] + dmb[l], dmb[k] + dma[l]
        if self.paper:
            fp, fm = fp + sp[k] + sp[l], fm + sp[k] + sp[l]
            if grads:
                dfp, dfm = dfp + dsp[k] + dsp[l], dfm + dsp[k] + dsp[l]
        return fp, fm, dfp, dfm

    def plus(self, x):
        return self._split(x, False)[0], None

    def plus_grad(self, x, i, cache):
        return self._split(x, True)[2][i]

    def plus_jacobian(self, x) -> np.ndarray:
        return self._split(x, True)[2]

    def minus(self, x):
        _, fm, _, dfm = self._split(x, True)
        return fm, dfm

    def linearize(self, x):
        """The active piece of each M_c linearized by its minorant (a minorant of the max), S+ terms likewise."""
        _, fm, _, dfm = self._split(x, True, linear=True)
        return fm, dfm

    def rates(self, x) -> np.ndarray:
        """S_k = (1/n_k) sum_i sigma(h_w(ξ_i^k) - θ̂) = S+_k - S-_k (G,)."""
        sp, sm = self._parts(x, False)[:2]
        return sp - sm

    def values(self, x):
        """The original (17): min{S_k,beta} - min{S_k,alpha} - min{S_k',beta} + min{S_k',alpha} - kappa'."""
        s = self.rates(x)
        band = np.minimum(s, self.beta) - np.minimum(s, self.alpha)
        k, l = np.array(self.pairs).T
        return band[k] - band[l] - self.kp

    def penalty(self, x):
        """(P(x), subgradient) of the penalty of (83) (max over pairs): (1/(beta-alpha)) max |d_kk'|."""
        sp, sm, dsp, dsm, _ = self._parts(x, True)
        s = sp - sm
        band = np.minimum(s, self.beta) - np.minimum(s, self.alpha)
        k, l = np.array(self.pairs).T
        d = band[k] - band[l]
        i = int(np.argmax(np.abs(d)))
        c = 1.0 / (self.beta - self.alpha)
        slope = (s < self.beta).astype(float) - (s < self.alpha)
        g = np.zeros(self.D)
        for grp, sign in ((k[i], 1.0), (l[i], -1.0)):       # d sigma-mean: the rows inside the ramp
            g += sign * slope[grp] * (dsp[grp] - dsm[grp])
        return c * abs(float(d[i])), c * np.sign(d[i]) * g
