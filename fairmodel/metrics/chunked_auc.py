"""The K-group AUC-fairness presets (Yao, Lin, Yang 2023, Definition 2 and Appendix A) on Dask inputs: one pass
of per-(group, label) weighted score histograms (:mod:`fairmodel.metrics.chunked`), then every comparison's sets
G1, G1', G2, G2' are unions of those cells. Exact when the scores take few distinct values; otherwise each AUC is
within (1/2) sum_b P_b N_b / (P N) of the exact one, and a gap within the sum of its two AUCs' bounds (reported).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations, permutations

import numpy as np

from ..errors import DataError
from .auc import PRESETS, SYMMETRIC, canonical_kind
from .auc_groups import MODES, GroupAUCFairness
from .chunked import DEFAULT_BINS, _add, _aligned, _array, _Levels, _merge_levels, _pass, _sensitive, \
    _sorted_levels, _Spec, dask_input, hist_auc


@dataclass(frozen=True)
class SketchedGroupAUCFairness(GroupAUCFairness):
    """:class:`GroupAUCFairness` from per-(group, label) score histograms: ``error_bounds`` bounds
    |gap_sketch - gap| per comparison (the two AUCs' bounds added; 0 when the scores take few values)."""

    error_bounds: dict = field(default_factory=dict)
    method: str = ""


def auc_fairness_groups_chunked(scores, y, groups, kind: str = "intra", *, mode: str = "pairwise", positive=None,
                                sample_weight=None, ties: float = 0.5, bins=None) -> SketchedGroupAUCFairness:
    """:func:`fairmodel.metrics.auc_fairness_groups` on Dask inputs: one pass of per-(group, label) weighted
    histograms of the scores, then every comparison's sets G1, G1', G2, G2' are unions of those cells."""
    kind = canonical_kind(kind)
    if mode not in MODES:
        raise DataError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    sens, _ = _sensitive(groups, None)
    if len(sens) != 1:
        raise DataError("auc_fairness_groups takes one column of group labels")
    cols, _ = _aligned({"y_true": _array(y), "scores": _array(scores), "s0": sens[0][0],
                        "w": None if sample_weight is None else _array(sample_weight)})
    cols = {k: v for k, v in cols.items() if v is not None}
    lev = _pass(_Levels(), cols, _merge_levels)
    labels = lev["y_true"]
    if positive is None and not np.all(np.isin(labels, (-1.0, 1.0))):
        raise DataError(f"labels must be coded +1 / -1; found values {labels.tolist()}... Map them with "
                        f"positive=<the positive label>")
    names = sens[0][1] if sens[0][1] is not None else _sorted_levels(lev["s0"])
    if len(names) < 2:
        raise DataError(f"AUC fairness compares groups; got {len(names)} group")
    levels, lo, hi, finite = lev["scores"]
    if not finite:
        raise DataError("scores contain NaN or infinite values")
    spec = _Spec([None if sens[0][1] is not None else names], [len(names)], len(names), positive=positive,
                 levels=levels, lo=lo, hi=hi, bins=levels.size if levels is not None else int(bins or DEFAULT_BINS))
    H = _pass(spec, cols, _add)["hist"]                          # (G, 2 labels (-, +), bins)
    exact = levels is not None
    comparisons = []
    if mode == "pairwise":
        pairs = combinations(range(len(names)), 2) if kind in SYMMETRIC else permutations(range(len(names)), 2)
        for a, b in pairs:
            gamma = np.zeros(len(names))
            gamma[a], gamma[b] = 1, -1
            comparisons.append((f"{_item(names[a])}/{_item(names[b])}", gamma))
    else:
        for a in range(len(names)):
            gamma = -np.ones(len(names))
            gamma[a] = 1
            comparisons.append((str(_item(names[a])), gamma))
    gaps, bounds = {}, {}
    for key, gamma in comparisons:
        cells = []
        for lab, grp in PRESETS[kind]:
            rows = (gamma != 0) if grp is None else (gamma == grp)
            h = H[rows].sum(axis=0)
            cells.append(h.sum(axis=0) if lab is None else h[1 if lab == 1 else 0])
        empty = [nm for nm, c in zip(("G1", "G1'", "G2", "G2'"), cells) if c.sum() <= 0]
        if empty:
            raise DataError(f"{key}: the AUC fairness metric needs every set non-empty; empty: {', '.join(empty)}")
        (a1, e1), (a2, e2) = hist_auc(cells[0], cells[1], ties, exact), hist_auc(cells[2], cells[3], ties, exact)
        gaps[key], bounds[key] = abs(a1 - a2), e1 + e2
    worst = max(gaps, key=lambda k: gaps[k])
    method = "exact (distinct score levels)" if exact else f"histogram sketch, {spec.bins} equal-width bins"
    return SketchedGroupAUCFairness(gaps[worst], worst, gaps, kind, mode, bounds, method)


def _item(v):
    return v.item() if hasattr(v, "item") else v


CHUNKED_AUC_GROUPS = {"applies": dask_input, "auc_fairness_groups": auc_fairness_groups_chunked}
