"""The AUC-fairness presets of Yao, Lin, Yang (AISTATS 2023, Definition 2 and Appendix A) for K >= 2 groups.

Definition 2 compares a protected group (gamma = +1) with the rest (gamma = -1). With K groups there are two
natural extensions, both returned with every comparison they are made of:

* ``mode="pairwise"``: for every pair of groups (a, b), the preset on the rows of a and b only, a protected
  (gamma = +1) and b not (gamma = -1); the summary is the largest gap over pairs. For the presets symmetric in
  gamma (group, inter, intra) each unordered pair is computed once; for the others (pos_avg_eq, neg_avg_eq,
  bpsn_bnsp) both orders are.
* ``mode="one_vs_rest"``: for every group a, the preset on all rows with a protected and every other group
  gamma = -1; the summary is the largest gap over groups.

With two groups, ``pairwise`` and ``one_vs_rest`` both give :func:`fairmodel.metrics.auc_fairness` with the first
group protected. Sample weights weigh every pair (i, j) of an AUC by w_i w_j.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations, permutations

import numpy as np

from ..data.dataset import Groups
from ..errors import DataError
from ..utilities.validate import check_choice
from .auc import SYMMETRIC, auc_sets, canonical_kind, sets_terms
from .rates import weights_of

MODES = ("pairwise", "one_vs_rest")
CHUNKED: dict = {}     # the Dask-input path ("applies", "auc_fairness_groups"), from fairmodel.metrics.chunked


@dataclass(frozen=True)
class GroupAUCFairness:
    """The largest AUC-fairness gap over the comparisons of ``mode`` (``gap``), the comparison that attains it
    (``worst``), and every comparison's gap (``gaps``: ``"a/b"`` for pairs, the group name for one-vs-rest)."""

    gap: float
    worst: str
    gaps: dict = field(default_factory=dict)
    kind: str = "intra"
    mode: str = "pairwise"

    def __float__(self) -> float:
        return float(self.gap)

    def to_dict(self) -> dict:
        return {"gap": self.gap, "worst": self.worst, "gaps": dict(self.gaps), "kind": self.kind, "mode": self.mode}


def auc_fairness_groups(scores, y, groups, kind: str = "intra", *, mode: str = "pairwise", positive=None,
                        sample_weight=None, ties: float = 0.5) -> GroupAUCFairness:
    """The AUC-fairness metric (1) of ``kind`` extended to K groups by ``mode`` (see the module docstring).

    ``groups``: any labels (K >= 2 distinct values); ``y``: labels +1/-1 (``positive=`` maps other codings).
    A comparison whose sets are not all non-empty raises a :class:`DataError` naming it.
    """
    if CHUNKED and CHUNKED["applies"](scores, y, groups, sample_weight):     # Dask inputs: histogram sketch
        return CHUNKED["auc_fairness_groups"](scores, y, groups, kind, mode=mode, positive=positive,
                                              sample_weight=sample_weight, ties=ties)
    kind = canonical_kind(kind)
    mode = check_choice(mode, "mode", MODES, error=DataError)
    h = np.asarray(scores, dtype=float)
    if h.ndim != 1:
        raise DataError(f"scores must be 1-D; got shape {h.shape}")
    g = Groups(groups)
    if len(g) != h.size:
        raise DataError(f"groups has {len(g)} entries but there are {h.size} scores; they must match")
    if g.n_groups < 2:
        raise DataError(f"AUC fairness compares groups; got {g.n_groups} group")
    w = None if sample_weight is None else weights_of(sample_weight, h.size)
    y = np.asarray(y)
    codes = np.asarray(g.codes)
    gaps = {}
    if mode == "pairwise":
        pairs = combinations(range(g.n_groups), 2) if kind in SYMMETRIC else permutations(range(g.n_groups), 2)
        for a, b in pairs:
            rows = np.flatnonzero((codes == a) | (codes == b))
            gamma = np.where(codes[rows] == a, 1.0, -1.0)
            gaps[f"{g.names[a]}/{g.names[b]}"] = _gap(h[rows], y[rows], gamma, kind, positive,
                                                      None if w is None else w[rows], ties, f"{g.names[a]} vs "
                                                      f"{g.names[b]}")
    else:
        for a in range(g.n_groups):
            gamma = np.where(codes == a, 1.0, -1.0)
            gaps[str(g.names[a])] = _gap(h, y, gamma, kind, positive, w, ties, f"{g.names[a]} vs the rest")
    worst = max(gaps, key=lambda k: gaps[k])
    return GroupAUCFairness(gaps[worst], worst, gaps, kind, mode)


def _gap(h, y, gamma, kind, positive, w, ties, what) -> float:
    s = auc_sets(y, gamma, kind, positive=positive, n=h.size)
    try:
        return float(sets_terms(h, s, ties, w)["gap"])
    except DataError as exc:
        raise DataError(f"{what}: {exc}") from None
