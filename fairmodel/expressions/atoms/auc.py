"""DSL atoms of AUC maximization under AUC-based fairness constraints, and the pairwise square-surrogate risks
they share with the exact programs, the stochastic methods and the judge.

Paper: Yao, Lin, Yang, "Stochastic Methods for AUC Optimization subject to AUC-based Fairness Constraints",
AISTATS 2023 (equation, lemma and appendix numbers below are the paper's).

* ``fm.auc_loss(score, y)`` is the square-surrogate AUC loss L(D+, D-) of eq. (3), ell(t) = c1 (t - c2)^2.
* ``fm.auc_gap(score, data, kind=...) <= kappa`` is the surrogate constraint pair (6):
  L(G1', G1) + L(G2, G2') <= 1 + kappa and L(G2', G2) + L(G1, G1') <= 1 + kappa. The atom's value is
  max(f1, f2) - 1, which approximates |AUC(G1, G1') - AUC(G2, G2')| by (4)-(5).

Closed forms (derived from Lemma 1 on the empirical distribution). For an ordered pair (S, S') with group
means m, m' of the score, population variances v, v' (ddof 0) and Delta = m - m', the reformulated risk
(Lemma 1, eq. (7)) at optimal a, b in I and alpha in I is

    T(S, S') = c1 c2^2 - 2 c1 c2 Delta + c1 [v + (m - a)^2] + c1 [v' + (m' - b)^2] + 2 c1 Delta alpha - q alpha^2
    a = clip(m, I),  b = clip(m', I),  alpha = clip(c1 Delta / q, I).

With the c1-correct coefficient q = c1 (the default; an erratum of the paper: Lemma 1 prints -alpha^2, i.e.
q = 1, which is exact only for c1 = 1; we use q = c1) and a valid interval I, T equals the pairwise mean
(1/(|S||S'|)) sum_{i in S, j in S'} c1 (h_i - h_j - c2)^2, pairs i = j included. ``alpha_quad_coef=
"paper_literal"`` selects q = 1.
"""
from __future__ import annotations

import numpy as np

from ...data.dataset import Dataset
from ...errors import DataError, ExpressionTypeError, ModelError
from ...metrics.auc import AUCSets, auc_sets, signed_labels
from ...oracles.pairs import LinearMoments, PairRisks
from ...utilities import display
from ...utilities.validate import check_number, check_sample_weight
from ..core import Expr, as_expr

Q_MODES = ("c1", "paper_literal")


def _positive(value, name: str) -> float:
    return check_number(value, name, low=0.0, strict=True, error=ModelError)


def check_interval(interval) -> float | None:
    """The half-width I of the symmetric interval [-I, I] (the interval of eq. (9)), or None for automatic.

    Accepts a positive number I or a pair (lo, hi) with lo = -hi < 0; rejects lo > hi, an interval not
    containing 0, and an asymmetric interval (the stochastic method and the App. D pairing need symmetry).
    """
    if interval is None:
        return None
    if isinstance(interval, (tuple, list, np.ndarray)):
        if len(interval) != 2:
            raise ModelError(f"interval must be a number I (for [-I, I]) or a pair (lo, hi); got {interval!r}")
        lo, hi = (float(v) for v in interval)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ModelError(f"interval bounds must be finite; got {interval!r}")
        if lo > hi:
            raise ModelError(f"interval ({lo:g}, {hi:g}) has lo > hi")
        if not lo < 0 < hi:
            raise ModelError(f"interval ({lo:g}, {hi:g}) must contain 0 in its interior (Lemma 1 needs 0 in I)")
        if not np.isclose(lo, -hi, rtol=1e-12, atol=0):
            raise ModelError(f"interval ({lo:g}, {hi:g}) must be symmetric, (-I, I); the stochastic method and the "
                             f"pairing of App. D need it. Use interval={max(-lo, hi):g}")
        return hi
    return _positive(interval, "interval half-width I")


class Surrogate:
    """Settings of the square surrogate ell(t) = c1 (t - c2)^2 (Section 3) and of the reformulation (7)."""

    __slots__ = ("c1", "c2", "alpha_quad_coef", "half_width")

    def __init__(self, c1=0.5, c2=1.0, interval=None, alpha_quad_coef: str = "c1"):
        self.c1 = _positive(c1, "c1")
        self.c2 = _positive(c2, "c2")
        if alpha_quad_coef not in Q_MODES:
            raise ModelError(f"alpha_quad_coef must be 'c1' (exact, the default) or 'paper_literal' (the paper's "
                             f"printed coefficient 1, exact only for c1 = 1); got {alpha_quad_coef!r}")
        self.alpha_quad_coef = alpha_quad_coef
        self.half_width = check_interval(interval)

    @property
    def q(self) -> float:
        """The coefficient of alpha^2 in (7): c1 (exact) or 1 (as printed in the paper)."""
        return self.c1 if self.alpha_quad_coef == "c1" else 1.0

    def __str__(self):
        extra = "" if self.alpha_quad_coef == "c1" else ", q=1"
        return f"c1={self.c1:g}, c2={self.c2:g}{extra}"

    def words(self) -> str:
        return (f"c1 = {self.c1:g}, c2 = {self.c2:g}" + ("" if self.alpha_quad_coef == "c1" else
                                                         "; the paper's literal alpha^2 coefficient q = 1"))


# ---------------------------------------------------------------------------------------------------
# Pairwise risks: the shared numerical object
# ---------------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------------
# Atoms
# ---------------------------------------------------------------------------------------------------
def _check_score(score) -> Expr:
    if not isinstance(score, Expr) or score.kind != "samples":
        raise ExpressionTypeError(f"the AUC atoms need a per-sample score such as data.score(w); got {score!r}")
    return score


def _pair_weights(sample_weight, masks, n: int, what: str):
    """Validated row weights (None when absent); every set of the pairs keeps a positive total weight."""
    if sample_weight is None:
        return None
    w = check_sample_weight(sample_weight, n, "the score")
    totals = np.asarray(masks, dtype=float) @ w
    if np.any(totals <= 0):
        raise DataError(f"{what}: the sample weights of a set of its pairs are all zero (set totals "
                        f"{', '.join(f'{t:g}' for t in totals)}), so its weighted pair risk is undefined")
    return w


class _AUCAtom(Expr):
    """Common parts of the two atoms: a score, surrogate settings and a pair table."""

    kind = "scalar"
    pairs: PairRisks
    surrogate: Surrogate

    @property
    def curvature(self):
        return "convex" if self.score.curvature in ("affine", "constant") else "unknown"

    def _pairs(self, env) -> PairRisks:
        return self.pairs if env.rows is None else self.pairs.take(env.rows)

    def linear_moments(self) -> LinearMoments:
        """The per-set means and covariances of the design rows of the atom's linear score (its pair risks are
        quadratics in them): one pass over the rows of its data, in memory or in chunks, made once per atom."""
        found = self.__dict__.get("_moments")
        if found is None:
            w = self.score.w
            found = self._moments = self.pairs.linear_moments(self.score.data, w.intercept)
        return found

    def _block_values(self, env) -> np.ndarray:
        h = self.score.numeric(env)
        pairs = self._pairs(env)
        return pairs.block_values(pairs.values(h, self.surrogate.half_width))


class AUCLoss(_AUCAtom):
    """The square-surrogate AUC loss L(D+, D-) (eq. (3)), minimized for AUC maximization."""

    def __init__(self, score, y, *, c1=0.5, c2=1.0, interval=None, alpha_quad_coef="c1", positive=None,
                 sample_weight=None):
        self.score = _check_score(score)
        self.args = (score,)
        self.surrogate = Surrogate(c1, c2, interval, alpha_quad_coef)
        zeta = signed_labels(y, score.size, positive)
        self.y = zeta
        masks = np.vstack([zeta > 0, zeta < 0])
        sizes = masks.sum(axis=1)
        if np.any(sizes == 0):
            raise DataError(f"the AUC loss needs positive and negative samples; D+ has {sizes[0]} and D- has "
                            f"{sizes[1]} points")
        s = self.surrogate
        self.sample_weight = _pair_weights(sample_weight, masks, score.size, "auc_loss")
        self.pairs = PairRisks(masks, [0], [1], [0], s.c1, s.c2, s.q, self.sample_weight)

    def _numeric(self, env):
        return float(self._block_values(env)[0])

    def backprop(self, env, upstream, grads):
        h = self.score.numeric(env)
        g = self._pairs(env).grad_h(h, np.ones(1), self.surrogate.half_width)
        self.score.backprop(env, upstream * g, grads)

    def render(self, n):
        words = self.surrogate.words()
        n.define(("auc_loss", words),
                 f"auc_loss(h) = mean over the pairs (i, j) with y_i = +1, y_j = -1 of c1 (h_i - h_j - c2)^2, {words}: "
                 f"the square-surrogate AUC loss (eq. (3) of Yao, Lin, Yang 2023)",
                 "$\\operatorname{auc\\_loss}(h) = \\frac{1}{|I^{+}|\\,|I^{-}|}\\sum_{i \\in I^{+},\\, j \\in I^{-}} "
                 "c_1 (h_i - h_j - c_2)^2$ over the rows $I^{\\pm}$ labelled $\\pm 1$, "
                 + display.latex_prose(words) + ": the square-surrogate AUC loss (eq.~(3) of Yao, Lin, Yang 2023)")
        return n.call("auc_loss", self.score.render(n))


# pairs of a constraint (reformulation (10)-(17), App. D pairing), as indices into (G1, G1', G2, G2'), and their block
_GAP_FIRST, _GAP_SECOND, _GAP_BLOCK = (1, 2, 3, 0), (0, 3, 2, 1), (0, 0, 1, 1)


class AUCGap(_AUCAtom):
    """The surrogate AUC-fairness gap max(f1, f2) - 1 of a preset (Appendix A); ``<= kappa`` is the pair (6).

    f1 = L(G1', G1) + L(G2, G2') approximates 1 + AUC(G1, G1') - AUC(G2, G2') (eq. (4)) and
    f2 = L(G2', G2) + L(G1, G1') approximates 1 + AUC(G2, G2') - AUC(G1, G1') (eq. (5)).
    """

    def __init__(self, score, data: Dataset, kind="intra", *, protected=None, sets=None, positive=None,
                 c1=0.5, c2=1.0, interval=None, alpha_quad_coef="c1", sample_weight=None):
        self.score = _check_score(score)
        if not isinstance(data, Dataset):
            raise ExpressionTypeError(f"auc_gap needs the fairmodel.Dataset of the score (labels and groups); "
                                      f"got {type(data).__name__}")
        if getattr(score, "data", data) is not data:
            raise ModelError("auc_gap: the score was built on another dataset; use data.score(w) of this data")
        if data.y is None:
            raise DataError(f"dataset {data.name!r} has no labels; auc_gap needs y coded +1/-1")
        self.args = (score,)
        self.data = data
        self.surrogate = Surrogate(c1, c2, interval, alpha_quad_coef)
        groups = data.groups if data.has_groups else None
        self.sets: AUCSets = auc_sets(data.y, groups, kind, protected=protected, positive=positive, sets=sets)
        self.sets.require_nonempty("auc_gap")
        self.y = signed_labels(data.y, None, positive)
        self.preset = self.sets.kind
        s = self.surrogate
        self.sample_weight = _pair_weights(sample_weight, self.sets.masks[2:], score.size, "auc_gap")
        self.pairs = PairRisks(self.sets.masks[2:], _GAP_FIRST, _GAP_SECOND, _GAP_BLOCK, s.c1, s.c2, s.q,
                               self.sample_weight)

    def _numeric(self, env):
        return float(np.max(self._block_values(env)) - 1.0)

    def backprop(self, env, upstream, grads):
        f = self._block_values(env)
        weights = (self.pairs.block == int(np.argmax(f))).astype(float)
        h = self.score.numeric(env)
        g = self._pairs(env).grad_h(h, weights, self.surrogate.half_width)
        self.score.backprop(env, upstream * g, grads)

    def __le__(self, other):
        kappa = as_expr(other)
        if kappa.curvature == "constant" and kappa.kind == "scalar" and float(kappa.constant_value()) < 0:
            raise ModelError(f"the fairness budget kappa must be >= 0; got {float(kappa.constant_value()):g}")
        return super().__le__(other)

    def render(self, n):
        name = f"auc_gap_{self.preset}"
        sets = ", ".join(f"{k} ({v:,} rows)" for k, v in self.sets.sizes.items() if k not in ("D+", "D-"))
        n.define(("auc_gap", self.preset, self.surrogate.words()),
                 f"{name}(h) = max(f1, f2) - 1 with f1 = L(G1', G1) + L(G2, G2'), f2 = L(G2', G2) + L(G1, G1'), "
                 f"L(S, S') the mean of c1 (h_i - h_j - c2)^2 over the pairs (i in S, j in S'), "
                 f"{self.surrogate.words()}; the sets of the preset {self.preset} (protected group "
                 f"{self.sets.protected}, compared with the rest): {sets}: the surrogate AUC-fairness gap between "
                 f"two groups (constraint pair (6) of Yao, Lin, "
                 f"Yang 2023)")
        return n.call(name, self.score.render(n))


def auc_loss(score, y, *, c1=0.5, c2=1.0, interval=None, alpha_quad_coef="c1", positive=None,
             sample_weight=None) -> AUCLoss:
    """Square-surrogate AUC loss L(D+, D-) = mean over (positive, negative) pairs of c1 (h+ - h- - c2)^2.

    score : a per-sample score, ``data.score(w)`` (linear) or ``data.score(net)`` (a network).
    y : labels coded +1/-1 (``positive=`` maps another coding explicitly).
    c1, c2 : the surrogate ell(t) = c1 (t - c2)^2 (the paper uses c2 = 1, c1 in {0.5, 1}).
    interval : the half-width I of the interval [-I, I] of a, b, alpha in Lemma 1 (None: automatic).
    alpha_quad_coef : "c1" (exact, default) or "paper_literal" (the printed -alpha^2, exact only for c1 = 1).
    sample_weight : row weights w_i >= 0; the pair (i, j) then weighs w_i w_j / (W_+ W_-) (integer weights are
        repeated rows).
    """
    return AUCLoss(score, y, c1=c1, c2=c2, interval=interval, alpha_quad_coef=alpha_quad_coef, positive=positive,
                   sample_weight=sample_weight)


def auc_gap(score, data, kind="intra", *, protected=None, sets=None, positive=None, c1=0.5, c2=1.0,
            interval=None, alpha_quad_coef="c1", sample_weight=None) -> AUCGap:
    """Surrogate AUC-fairness gap of a preset; ``fm.auc_gap(...) <= kappa`` is the constraint pair (6).

    Its comparison is **between two groups**: the protected group and the rest (with two groups, the pairwise
    gap). For K groups, ``fm.metrics.auc_fairness_groups`` measures the true AUC gaps ``mode="pairwise"`` (the
    largest pairwise gap) or ``mode="one_vs_rest"`` (each group vs the rest of the population).

    kind : "group", "inter" (xAUC), "intra", "pos_avg_eq", "neg_avg_eq", "bpsn_bnsp" (Appendix A), or give
        ``sets=(G1, G1', G2, G2')`` (boolean masks or callables (labels, gamma) -> mask).
    protected : the group with gamma = +1 (see :mod:`fairmodel.metrics.auc` for the default).
    Other parameters as in :func:`auc_loss` (give the loss and every gap of a problem the same ``sample_weight``).
    """
    return AUCGap(score, data, kind, protected=protected, sets=sets, positive=positive, c1=c1, c2=c2,
                  interval=interval, alpha_quad_coef=alpha_quad_coef, sample_weight=sample_weight)
