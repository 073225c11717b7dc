"""AUC between subsets and AUC-based fairness metrics, on any model's scores (Yao, Lin, Yang,
AISTATS 2023, Section 3).

Definition 1 of the AUC-fairness paper (Yao, Lin, Yang): for subsets S, S' of the samples,

    AUC(S, S') = (1 / (|S| |S'|)) sum_{i in S} sum_{j in S'} [ 1(h_i > h_j) + t 1(h_i = h_j) ],

with ties counted ``t = 1/2`` by default (Mann-Whitney) and the pairs i = j included when S and S'
overlap, so that AUC(all, all) = 1/2 exactly (the paper defines only the population
version, with a strict >). It is computed in O(n log n) by sorting.

Definition 2 (eq. (1)): the AUC-based fairness metric |AUC(G1, G1') - AUC(G2, G2')| for four subsets
defined by the label zeta in {+1, -1} and the sensitive attribute gamma in {+1 (protected), -1}. The
presets of Appendix A:

============  ======================  =================  ==============  ==============
kind          G1                      G1'                G2              G2'
============  ======================  =================  ==============  ==============
group         gamma=+1                gamma=-1           all             all
inter (xAUC)  zeta=+1, gamma=+1       zeta=-1, gamma=-1  zeta=+1, g=-1   zeta=-1, g=+1
intra         zeta=+1, gamma=+1       zeta=-1, gamma=+1  zeta=+1, g=-1   zeta=-1, g=-1
pos_avg_eq    zeta=+1, gamma=+1       zeta=+1            all             all
neg_avg_eq    zeta=-1, gamma=+1       zeta=-1            all             all
bpsn_bnsp     zeta=+1                 zeta=-1, gamma=+1  zeta=+1, g=+1   zeta=-1
============  ======================  =================  ==============  ==============

A custom quadruple of subsets is given with ``sets=(G1, G1', G2, G2')``: boolean masks, or callables
``(labels, gamma) -> mask`` on the +1/-1 codings.

Coding: labels and the sensitive attribute must be coded +1/-1. Other codings are accepted
only through an explicit mapping: ``positive=`` names the positive label and ``protected=`` the
protected group (gamma = +1; every other group is gamma = -1). For the presets that are symmetric in
gamma (group, inter, intra: swapping the two groups leaves the metric and the surrogate constraints
unchanged) and two groups named by strings, the protected group defaults to the first name in sorted
order (for the bundled Adult data, ``"Female"``, as in the paper).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..data.dataset import Groups
from ..errors import DataError, ModelError
from ..utilities.validate import check_vector
from .rates import mann_whitney, weights_of

# (zeta, gamma) of each of the four sets G1, G1', G2, G2'; None means "any".
PRESETS = {
    "group": ((None, 1), (None, -1), (None, None), (None, None)),
    "inter": ((1, 1), (-1, -1), (1, -1), (-1, 1)),
    "intra": ((1, 1), (-1, 1), (1, -1), (-1, -1)),
    "pos_avg_eq": ((1, 1), (1, None), (None, None), (None, None)),
    "neg_avg_eq": ((-1, 1), (-1, None), (None, None), (None, None)),
    "bpsn_bnsp": ((1, None), (-1, 1), (1, 1), (-1, None)),
}
ALIASES = {"group_auc": "group", "xauc": "inter", "inter_group": "inter", "intra_group": "intra",
           "bpsn": "bpsn_bnsp"}
SYMMETRIC = ("group", "inter", "intra")   # metric and surrogate unchanged when gamma -> -gamma
SET_NAMES = ("D+", "D-", "G1", "G1'", "G2", "G2'")


def _check_ties(ties) -> float:
    if isinstance(ties, bool) or not isinstance(ties, (numbers.Real, np.floating)) or not 0.0 <= ties <= 1.0:
        raise ModelError(f"ties must be a number in [0, 1] (1/2 counts a tie as half a win); got {ties!r}")
    return float(ties)


def _scores(scores, n=None) -> np.ndarray:
    return check_vector(scores, n, "scores")


def auc_between(scores, first, second, *, ties: float = 0.5, sample_weight=None) -> float:
    """AUC(S, S') of Definition 1 for boolean masks (or index arrays) ``first`` = S and ``second`` = S'.

    O(n log n): the scores of S' are sorted once and every score of S is located by binary search.
    Pairs i = j are included when the sets overlap (a tie, counted ``ties``).
    """
    h = _scores(scores)
    ra, rb = _rows(first, h.size, "first"), _rows(second, h.size, "second")
    a, b = h[ra], h[rb]
    if a.size == 0 or b.size == 0:
        raise DataError(f"AUC between subsets needs two non-empty subsets; got sizes {a.size} and {b.size}")
    if sample_weight is None:
        return _auc_values(a, b, _check_ties(ties))
    w = weights_of(sample_weight, h.size)
    return _auc_values(a, b, _check_ties(ties), w[ra], w[rb])


def _auc_values(a: np.ndarray, b: np.ndarray, t: float, wa=None, wb=None) -> float:
    """AUC(S, S') of the scores ``a`` of S and ``b`` of S'; with weights, each pair counts w_i w_j and the sum
    is divided by W_S W_S' (the weighted Definition 1): the Mann-Whitney statistic with S as the positives."""
    wa = np.ones(a.size) if wa is None else wa
    wb = np.ones(b.size) if wb is None else wb
    order = np.argsort(b, kind="stable")
    b, cum = b[order], np.concatenate([[0.0], np.cumsum(wb[order])])
    below = cum[np.searchsorted(b, a, side="left")]
    tied = cum[np.searchsorted(b, a, side="right")] - below
    return float(mann_whitney(wa, below, tied, cum[-1], t))


def _rows(mask, n: int, name: str) -> np.ndarray:
    m = np.asarray(mask)
    if m.dtype == bool:
        if m.shape != (n,):
            raise DataError(f"mask {name!r} has shape {m.shape}; it must have one entry per score ({n})")
        return m
    if m.ndim == 1 and np.issubdtype(m.dtype, np.integer):
        if m.size and (m.min() < -n or m.max() >= n):
            raise DataError(f"index array {name!r} has entries outside [0, {n})")
        return m
    raise DataError(f"{name!r} must be a boolean mask or an integer index array; got dtype {m.dtype}")


def auc_score(scores, y, *, positive=None, ties: float = 0.5, sample_weight=None) -> float:
    """The usual AUC = AUC(D+, D-) of scores for labels +1/-1 (``positive=`` maps other codings)."""
    h = _scores(scores)
    zeta = signed_labels(y, h.size, positive)
    return auc_between(h, zeta > 0, zeta < 0, ties=ties, sample_weight=sample_weight)


# ---------------------------------------------------------------------------------------------------
# Codings
# ---------------------------------------------------------------------------------------------------
def signed_labels(y, n: int | None = None, positive=None) -> np.ndarray:
    """Labels as a float array of +1/-1; other codings only through ``positive=`` (the +1 label)."""
    if positive is None:
        arr = check_vector(y, n, "y")
        values = np.unique(arr)
        if not np.all(np.isin(values, (-1.0, 1.0))):
            raise DataError(f"labels must be coded +1 (positive) / -1 (negative); found values "
                            f"{values[:6].tolist()}{' ...' if values.size > 6 else ''}. Map them explicitly with "
                            f"positive=<the positive label> (e.g. positive=1 for 0/1 labels)")
        return arr
    arr = np.asarray(y)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        raise DataError(f"y must be 1-D with {n} entries; got shape {arr.shape}")
    if not np.any(arr == positive):
        raise DataError(f"positive={positive!r} does not occur among the labels")
    return np.where(arr == positive, 1.0, -1.0)


def signed_groups(groups, n: int | None = None, protected=None, kind: str | None = None) -> tuple[np.ndarray, str]:
    """(gamma in {+1, -1}^n, name of the protected group) from group labels (see the module docstring)."""
    if isinstance(groups, Groups):
        names, codes = groups.names, groups.codes
        table = np.empty(len(names), dtype=object)   # one entry per name, also for tuple names (intersections)
        table[:] = list(names)
        values = table[codes]
    else:
        values = np.asarray(groups)
        if values.ndim != 1:
            raise DataError(f"groups must be 1-D; got shape {values.shape}")
        names = tuple(sorted(set(values.tolist()), key=lambda v: (str(type(v)), v)))
    if n is not None and values.shape[0] != n:
        raise DataError(f"groups has {values.shape[0]} entries but there are {n} scores; they must match")
    if protected is not None:
        if protected not in set(names):
            raise DataError(f"protected={protected!r} is not a group; groups are {list(names)}")
        is_protected = codes == names.index(protected) if isinstance(groups, Groups) else values == protected
        return np.where(is_protected, 1.0, -1.0), str(protected)
    numeric = all(isinstance(v, (numbers.Real, np.number)) and not isinstance(v, bool) for v in names)
    if numeric and set(float(v) for v in names) <= {-1.0, 1.0}:
        return np.asarray(values, dtype=float), "+1"
    if len(names) == 2 and kind in SYMMETRIC and not numeric:
        return np.where(values == names[0], 1.0, -1.0), str(names[0])
    why = ("the sensitive attribute must be coded +1 (protected) / -1" if len(names) == 2 else
           f"the sensitive attribute must have two values; found {len(names)}: {list(names)[:6]}")
    raise DataError(f"{why}. Say which group is protected (gamma = +1) with protected=<group name>"
                    f" (e.g. protected={names[0]!r}); every other group becomes gamma = -1")


# ---------------------------------------------------------------------------------------------------
# The six sets of a fairness metric
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AUCSets:
    """Boolean masks of D+, D-, G1, G1', G2, G2' (Appendix A), with the preset name and the protected group."""

    masks: np.ndarray          # (6, n) bool, rows in the order of SET_NAMES
    kind: str
    protected: str

    @property
    def sizes(self) -> dict:
        return dict(zip(SET_NAMES, self.masks.sum(axis=1).astype(int).tolist()))

    def require_nonempty(self, what: str = "the AUC fairness metric") -> None:
        """Raise a :class:`DataError` naming every empty set and the size of each (Definitions 1, 2)."""
        empty = [name for name, size in self.sizes.items() if size == 0]
        if empty:
            sizes = ", ".join(f"{k} {v}" for k, v in self.sizes.items())
            raise DataError(f"{what} needs every set to be non-empty (probabilities p_G > 0); empty: "
                            f"{', '.join(empty)} (sizes: {sizes}). Use more data, another preset, or check "
                            f"the label and group coding (kind={self.kind!r}, protected group {self.protected!r})")

    def take(self, rows) -> "AUCSets":
        return AUCSets(self.masks[:, rows], self.kind, self.protected)


def canonical_kind(kind: str) -> str:
    if not isinstance(kind, str):
        raise ModelError(f"kind must be a preset name; got {type(kind).__name__}")
    k = ALIASES.get(kind, kind)
    if k not in PRESETS:
        raise ModelError(f"unknown AUC fairness preset {kind!r}; valid presets are {', '.join(PRESETS)} "
                         f"(aliases {', '.join(ALIASES)}), or give sets=(G1, G1', G2, G2')")
    return k


def auc_sets(y, groups=None, kind: str = "intra", *, protected=None, positive=None, sets=None,
             n: int | None = None) -> AUCSets:
    """The masks of D+, D-, G1, G1', G2, G2' for a preset ``kind`` or a custom ``sets`` quadruple."""
    zeta = signed_labels(y, n, positive)
    n = zeta.shape[0]
    if sets is not None:
        if groups is not None:
            gamma, prot = signed_groups(groups, n, protected, "custom")
        else:
            gamma, prot = np.zeros(n), "-"
        quad = _custom_sets(sets, zeta, gamma, n)
        kind = "custom"
    else:
        kind = canonical_kind(kind)
        if groups is None:
            raise DataError(f"the {kind!r} preset needs the sensitive attribute (groups)")
        gamma, prot = signed_groups(groups, n, protected, kind)
        quad = [_select(zeta, gamma, lab, grp) for lab, grp in PRESETS[kind]]
    masks = np.vstack([zeta > 0, zeta < 0] + quad)
    return AUCSets(masks, kind, prot)


def _select(zeta, gamma, lab, grp) -> np.ndarray:
    mask = np.ones(zeta.shape[0], dtype=bool)
    if lab is not None:
        mask &= zeta == lab
    if grp is not None:
        mask &= gamma == grp
    return mask


def _custom_sets(sets, zeta, gamma, n) -> list:
    if not isinstance(sets, (tuple, list)) or len(sets) != 4:
        raise ModelError("sets must be a quadruple (G1, G1', G2, G2') of boolean masks or callables "
                         "(labels, gamma) -> mask")
    out = []
    for name, s in zip(SET_NAMES[2:], sets):
        m = s(zeta, gamma) if callable(s) else s
        m = np.asarray(m)
        if m.dtype != bool or m.shape != (n,):
            raise ModelError(f"set {name} must be a boolean mask with one entry per sample ({n}); got dtype "
                             f"{m.dtype} and shape {m.shape}" + (" from the predicate" if callable(s) else ""))
        out.append(m)
    return out


# ---------------------------------------------------------------------------------------------------
# Fairness metrics
# ---------------------------------------------------------------------------------------------------
def auc_fairness_terms(scores, y, groups=None, kind: str = "intra", *, protected=None, positive=None, sets=None,
                       ties: float = 0.5, sample_weight=None) -> dict:
    """AUC(G1, G1'), AUC(G2, G2'), their signed difference and the metric (1), plus the AUC and set sizes.
    With ``sample_weight``, every AUC weighs the pair (i, j) by w_i w_j."""
    h = _scores(scores)
    s = auc_sets(y, groups, kind, protected=protected, positive=positive, sets=sets, n=h.size)
    return sets_terms(h, s, ties, sample_weight)


def sets_terms(h: np.ndarray, s: AUCSets, ties: float = 0.5, sample_weight=None) -> dict:
    """The terms of :func:`auc_fairness_terms` for precomputed :class:`AUCSets`."""
    s.require_nonempty()
    t = _check_ties(ties)
    m = s.masks
    w = None if sample_weight is None else weights_of(sample_weight, h.size)

    def auc(i, j):
        return _auc_values(h[m[i]], h[m[j]], t, None if w is None else w[m[i]], None if w is None else w[m[j]])

    auc1, auc2 = auc(2, 3), auc(4, 5)
    return {"auc": auc(0, 1), "auc_1": auc1, "auc_2": auc2, "signed_gap": auc1 - auc2,
            "gap": abs(auc1 - auc2), "kind": s.kind, "protected": s.protected, "sizes": s.sizes}


def auc_fairness(scores, y, groups=None, kind: str = "intra", *, protected=None, positive=None, sets=None,
                 ties: float = 0.5, sample_weight=None) -> float:
    """The AUC-based fairness metric (1) |AUC(G1, G1') - AUC(G2, G2')| in [0, 1] (0 = fair) of any scores.

    >>> import numpy as np
    >>> h = np.array([0.9, 0.2, 0.7, 0.4]); y = np.array([1, -1, 1, -1]); g = np.array([1, 1, -1, -1])
    >>> auc_fairness(h, y, g, kind="intra")
    0.0
    """
    return auc_fairness_terms(scores, y, groups, kind, protected=protected, positive=positive, sets=sets,
                              ties=ties, sample_weight=sample_weight)["gap"]


def select_by_validation(scores, y, groups=None, kind: str = "intra", kappa: float = 0.0, *, protected=None,
                         positive=None, sets=None, ties: float = 0.5) -> dict:
    """Model selection of the paper's experiments (App. E.3) on validation data.

    ``scores`` is a sequence of score vectors (one per candidate model, on the same validation rows). Returns
    the index of the candidate with the best validation AUC among those feasible for the original
    constraint (2), i.e. with validation fairness gap <= ``kappa``; when none is feasible, the candidate with
    the smallest gap (``feasible`` is then False). Also returns every candidate's AUC and gap.
    """
    cand = [np.asarray(s, dtype=float) for s in scores]
    if not cand:
        raise DataError("select_by_validation needs at least one candidate score vector")
    s = auc_sets(y, groups, kind, protected=protected, positive=positive, sets=sets, n=cand[0].size)
    terms = [sets_terms(_scores(h, cand[0].size), s, ties) for h in cand]
    aucs = np.array([t["auc"] for t in terms])
    gaps = np.array([t["gap"] for t in terms])
    feasible = gaps <= kappa
    if feasible.any():
        index = int(np.flatnonzero(feasible)[np.argmax(aucs[feasible])])
    else:
        index = int(np.argmin(gaps))
    return {"index": index, "feasible": bool(feasible.any()), "auc": aucs, "gap": gaps}
