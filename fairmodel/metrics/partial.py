"""Partial demographic parity inside a rank band, on any model's scores (partial-fairness paper,
He, Huang, Yao, Lin, 2025, Section 4).

For a band ``I = [alpha, beta)`` of within-group *ranks* (top fractions) and scores ``s`` of groups
``k = 1..G``:

* the rank of a score θ in group k is the CCDF ``Fbar_k(θ) = Pr(s > θ | group k)`` (Def 4.1);
* identity (29): ``Pr(s > θ | group k, Fbar_k(s) in I) = (clip(Fbar_k(θ), alpha, beta) - alpha) / (beta - alpha)``;
* ``DP^I_{k,k'} = max_θ |G_k(θ) - G_k'(θ)|`` with ``G_k`` the right-hand side of (29) (eq. (6));
* ``WDP^I_{k,k'} = |G_k(θ̂) - G_k'(θ̂)|`` at a decision threshold θ̂ (eq. (9)).

The empirical versions (the paper does not spell out its estimator) use
``Fbar_k(θ) = (1/n_k) #{i in k : s_i > θ}`` (strict, as in the definition); ``G_k`` is a step function constant
between consecutive distinct pooled scores, so the maximum over θ is attained on the pooled distinct scores
(θ = -inf gives G = 1 for every group). The paper reports ``1 - max_{k,k'} DP^I`` (its ``max_{k,k}`` is a typo
for ``max_{k,k'}``); both numbers are returned here.

``estimator="trimmed"`` is the literal alternative: keep the points whose within-group
empirical rank lies in I and compare the trimmed samples (KS distance, or the above-θ̂ rates).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from ..data.dataset import Groups
from ..errors import DataError, ModelError
from ..utilities.validate import check_vector
from .rates import weights_of

ESTIMATORS = ("clip", "trimmed")


def check_band(band) -> tuple[float, float]:
    """Validated rank band ``(alpha, beta)`` with ``0 <= alpha < beta <= 1``."""
    try:
        alpha, beta = band
    except (TypeError, ValueError):
        raise ModelError(f"band must be a pair (alpha, beta) of rank levels in [0, 1]; got {band!r}") from None
    for name, v in (("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.floating, np.integer)) or not math.isfinite(v):
            raise ModelError(f"band {name} must be a finite number; got {v!r}")
    alpha, beta = float(alpha), float(beta)
    if alpha < 0 or beta > 1:
        raise ModelError(f"band ({alpha:g}, {beta:g}) must lie in [0, 1]: the band is a range of within-group "
                         f"ranks (top fractions), e.g. (0.7, 1.0) for the bottom 30% of every group")
    if alpha >= beta:
        raise ModelError(f"band ({alpha:g}, {beta:g}) needs alpha < beta")
    return alpha, beta


def check_band_groups(sizes, names, band, what: str = "the rank band") -> None:
    """Every group must hold at least one rank j/n_k (j = 0..n_k-1) inside [alpha, beta)."""
    alpha, beta = band
    for n_k, name in zip(np.asarray(sizes, dtype=int), names):
        first = math.ceil(alpha * n_k - 1e-12)            # smallest j with j / n_k >= alpha
        if n_k < 1 or first >= beta * n_k - 1e-12 or first > n_k - 1:
            raise DataError(f"group {name!r} has {n_k} point(s), too few to have a point in {what} "
                            f"[{alpha:g}, {beta:g}); widen the band or drop the group")


def _groups(scores, groups, min_groups: int = 2):
    s = check_vector(scores, None, "scores")
    g = Groups(groups)
    if len(g) != s.shape[0]:
        raise DataError(f"groups has {len(g)} entries but scores has {s.shape[0]}; they must match")
    g.require_nonempty("a partial-parity metric")
    if g.n_groups < min_groups:
        raise DataError(f"partial parity compares groups; got {g.n_groups} group (need at least {min_groups})")
    return s, g


def ccdf(sorted_scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Empirical ``Fbar(θ) = (1/n) #{s > θ}`` of one sorted sample at each threshold (the count divided by n, so that
    a rank k/n compares exactly with a band edge: 1 - 8/10 < 0.2 in floating point)."""
    n = sorted_scores.shape[0]
    return (n - np.searchsorted(sorted_scores, thresholds, side="right")) / n


def band_rate(fbar, band) -> np.ndarray:
    """Identity (29): ``(clip(Fbar, alpha, beta) - alpha) / (beta - alpha)``."""
    alpha, beta = band
    return (np.clip(fbar, alpha, beta) - alpha) / (beta - alpha)


@dataclass(frozen=True)
class PartialParity:
    """A partial-parity measurement: the raw gap ``max_{k,k'}`` and the paper's ``fairness = 1 - gap``."""

    gap: float
    pairwise: dict = field(default_factory=dict)   # "k/k'" -> gap of that pair
    kind: str = "partial_dp"
    band: tuple = (0.0, 1.0)
    estimator: str = "clip"
    threshold: float | None = None

    @property
    def fairness(self) -> float:
        """``1 - max_{k,k'} gap`` (the x-axis of Fig. 1 of the paper)."""
        return 1.0 - self.gap

    def to_dict(self) -> dict:
        return {"gap": self.gap, "fairness": self.fairness, "pairwise": dict(self.pairwise), "kind": self.kind,
                "band": list(self.band), "estimator": self.estimator, "threshold": self.threshold}

    def __float__(self) -> float:
        return float(self.gap)


def _pairs(g: Groups):
    return list(combinations(range(g.n_groups), 2))


def _trimmed(s: np.ndarray, band) -> np.ndarray:
    """The points of one group whose empirical rank (fraction strictly above) lies in [alpha, beta)."""
    alpha, beta = band
    srt = np.sort(s)
    rank = ccdf(srt, srt)
    return srt[(rank >= alpha) & (rank < beta)]


def weighted_ccdf(scores: np.ndarray, weights: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Weighted ``Fbar(θ) = sum_{s_i > θ} w_i / sum_i w_i`` of one sample at each threshold."""
    order = np.argsort(scores, kind="stable")
    cum = np.concatenate([[0.0], np.cumsum(weights[order])])
    return 1.0 - cum[np.searchsorted(scores[order], thresholds, side="right")] / cum[-1]


def _check_weighted(sample_weight, estimator, n):
    if sample_weight is None:
        return None
    if estimator != "clip":
        raise ModelError("sample_weight is supported by the 'clip' estimator (identity (29) on the weighted rank); "
                         "the 'trimmed' estimator keeps points by their unweighted rank")
    return weights_of(sample_weight, n)


def partial_dp(scores, groups, band=(0.0, 1.0), *, estimator: str = "clip", sample_weight=None) -> PartialParity:
    """Partial demographic parity ``max_{k,k'} DP^I_{k,k'}`` of eq. (6) on scores (identity (29) on the
    empirical rank; with ``sample_weight``, on the weighted rank ``sum_{i in k, s_i > θ} w_i / sum_{i in k} w_i``).

    With ``band=(0, 1)`` this is the two-sample Kolmogorov-Smirnov statistic (strong DP, eq. (2)).
    """
    band = check_band(band)
    s, g = _groups(scores, groups)
    if estimator not in ESTIMATORS:
        raise ModelError(f"estimator must be one of {', '.join(ESTIMATORS)}; got {estimator!r}")
    w = _check_weighted(sample_weight, estimator, s.shape[0])
    check_band_groups(g.sizes, g.names, band)
    per_group = [np.sort(s[ix]) for ix in g.indices()]
    pairwise = {}
    if estimator == "clip":
        thresholds = np.unique(s)
        rates = ([band_rate(ccdf(srt, thresholds), band) for srt in per_group] if w is None else
                 [band_rate(weighted_ccdf(s[ix], w[ix], thresholds), band) for ix in g.indices()])
        for a, b in _pairs(g):
            pairwise[_key(g, a, b)] = float(np.max(np.abs(rates[a] - rates[b]), initial=0.0))
    else:
        kept = [_trimmed(srt, band) for srt in per_group]
        for a, b in _pairs(g):
            grid = np.unique(np.concatenate([kept[a], kept[b]]))
            gap = np.max(np.abs(ccdf(kept[a], grid) - ccdf(kept[b], grid)), initial=0.0)
            pairwise[_key(g, a, b)] = float(gap)
    return PartialParity(max(pairwise.values()), pairwise, "partial_dp", band, estimator)


def weak_partial_dp(scores, groups, band=(0.0, 1.0), *, threshold: float = 0.0,
                    estimator: str = "clip", sample_weight=None) -> PartialParity:
    """Weak partial demographic parity ``max_{k,k'} WDP^I_{k,k'}`` of eq. (9) at ``threshold`` θ̂ (on the
    weighted rank with ``sample_weight``, as :func:`partial_dp`).

    With ``band=(0, 1)`` this is the difference of positive rates ``|Fbar_k(θ̂) - Fbar_k'(θ̂)|`` (eq. (3)).
    """
    band = check_band(band)
    s, g = _groups(scores, groups)
    if estimator not in ESTIMATORS:
        raise ModelError(f"estimator must be one of {', '.join(ESTIMATORS)}; got {estimator!r}")
    w = _check_weighted(sample_weight, estimator, s.shape[0])
    if isinstance(threshold, bool) or not isinstance(threshold, (numbers.Real, np.floating, np.integer)) \
            or not math.isfinite(threshold):
        raise ModelError(f"threshold must be a finite number; got {threshold!r}")
    check_band_groups(g.sizes, g.names, band)
    t = np.array([float(threshold)])
    per_group = [np.sort(s[ix]) for ix in g.indices()]
    if estimator == "clip" and w is not None:
        rates = [float(band_rate(weighted_ccdf(s[ix], w[ix], t), band)[0]) for ix in g.indices()]
    elif estimator == "clip":
        above = np.array([srt.size - np.searchsorted(srt, t, side="right")[0] for srt in per_group])
        return weak_partial_dp_counts(above, g.sizes, g.names, band, float(threshold))
    else:
        rates = [float(ccdf(kept, t)[0]) if kept.size else 0.0 for kept in (_trimmed(srt, band) for srt in per_group)]
    pairwise = {_key(g, a, b): abs(rates[a] - rates[b]) for a, b in _pairs(g)}
    return PartialParity(max(pairwise.values()), pairwise, "weak_partial_dp", band, estimator, float(threshold))


def weak_partial_dp_counts(above, sizes, names, band, threshold: float) -> PartialParity:
    """:func:`weak_partial_dp` (the ``clip`` estimator, unweighted) from each group's count of scores above the
    threshold and its size: ``Fbar_k(θ̂) = above_k / n_k`` (sums of indicators, e.g. added over the chunks of a data
    source)."""
    g = Groups(np.arange(len(names)), names=tuple(names))
    rates = [float(band_rate(np.array([a / n]), band)[0]) for a, n in zip(np.asarray(above), np.asarray(sizes))]
    pairwise = {_key(g, a, b): abs(rates[a] - rates[b]) for a, b in _pairs(g)}
    return PartialParity(max(pairwise.values()), pairwise, "weak_partial_dp", band, "clip", float(threshold))


def rank_curve(scores, groups) -> dict:
    """Data of Fig. 2 of the paper: ``Fbar_k(θ)`` of every group as θ runs from +inf to -inf.

    Returns ``{"thresholds": θ (decreasing, pooled distinct scores), group name: Fbar_k(θ)}``; plotting
    one group's column against another's gives the rank-rank curve (45° inside the band means parity).
    """
    s, g = _groups(scores, groups)
    thresholds = np.concatenate([[np.inf], np.unique(s)[::-1], [-np.inf]])
    out = {"thresholds": thresholds}
    for name, ix in zip(g.names, g.indices()):
        out[str(name)] = ccdf(np.sort(s[ix]), thresholds)
    return out


def _key(g: Groups, a: int, b: int) -> str:
    return f"{g.names[a]}/{g.names[b]}"
