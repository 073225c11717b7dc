"""Error-rate fairness in any convex declaration: equal opportunity and equalized odds through the linear-loss
surrogate of Donini, Oneto, Ben-David, Shawe-Taylor, Pontil (NeurIPS 2018, "Empirical risk minimization under
fairness constraints").

Equal opportunity (Hardt, Price, Srebro 2016) asks the groups' true-positive rates to be equal; Donini et al.
replace the 0-1 loss on each label stratum by the linear loss ``1 - y s``, whose group mean on the positives is
``1 - (mean score of the group's positives)``. The gap between groups is then the spread of the groups' mean
scores on the stratum, an affine function of the score on each stratum:

    EO gap(s)    = max_g mean_{i in g, y_i = +1} s_i  -  min_g mean_{i in g, y_i = +1} s_i
    EOdds gap(s) = max(EO gap(s), the same spread on the stratum y = -1)

Both are convex in a linear score (a max of affine functions minus a min of affine functions), so
``equal_opportunity_gap(s, data) <= eps`` is a convex constraint that the exact backend lowers to CVXPY and the
generic stochastic method samples (they are built from ``group_mean(..., where=)``, ``max`` and ``min``: no new
atom, every backend and the judge already know them). With two groups the gap is ``|m_a - m_b|``.

With ``sample_weight``, the group means are weighted: the score is multiplied by the data vector
``u_i = w_i / (mean of w over the rows of i's group and stratum)``, so that the plain mean of ``u s`` over a cell
is the weighted mean of ``s`` there (``multiply`` by a non-negative data vector keeps the curvature).
"""
from __future__ import annotations

import numpy as np

from ...data.dataset import Groups
from ...errors import DataError
from ...utilities.validate import check_sample_weight
from ..core import multiply
from .aggregates import group_mean, max, min  # noqa: A004  (the language's max and min)


def _labels_groups(data, y, groups, positive):
    if data is not None:
        y = data.y if y is None else y
        groups = data.groups if groups is None else groups
    if y is None or groups is None:
        raise DataError("give data= (a Dataset with labels and groups) or both y= and groups=")
    y = np.asarray(y)
    pos = y == (1 if positive is None else positive)
    if positive is None and not set(np.unique(y).tolist()) <= {-1, 0, 1}:
        raise DataError("labels must be coded +1 / -1 (or 0 / 1); name the positive label with positive=")
    return pos, groups


def _spread(score, groups, where, what, weights):
    if not where.any():
        raise DataError(f"no row has {what}: the constraint on that stratum is undefined")
    g = Groups(groups)
    if g.n_groups < 2:
        raise DataError(f"the gap compares groups, but the sensitive attribute has {g.n_groups} group "
                        f"({g.names[0]!r}); with one group the constraint always holds. Give two or more groups")
    empty = [n for n, c in zip(g.names, np.bincount(np.asarray(g.codes)[where], minlength=g.n_groups)) if c == 0]
    if empty:
        raise DataError(f"group(s) {', '.join(map(repr, empty))} have no row with {what}: the gap compares the "
                        f"groups' mean scores on the rows with {what}, so every group needs some; merge or drop "
                        f"those groups, or use more data")
    if weights is not None:
        codes = np.asarray(Groups(groups).codes)
        cell = codes[where]
        total = np.bincount(cell, weights=weights[where])
        count = np.bincount(cell)
        if np.any((count > 0) & (total <= 0)):
            raise DataError(f"a group has zero total sample weight among the rows with {what}")
        u = np.ones(weights.size)
        u[where] = weights[where] * count[cell] / total[cell]
        score = multiply(u, score)
    m = group_mean(score, groups, where=where)
    return max(m) - min(m)


def _weights(sample_weight, n):
    return None if sample_weight is None else check_sample_weight(sample_weight, n, "the score")


def equal_opportunity_gap(score, data=None, *, y=None, groups=None, positive=None, sample_weight=None):
    """max_g - min_g of the groups' mean scores on the positives: the **largest pairwise** gap (never a comparison
    with the population) of the linear-loss surrogate of the true-positive rates (Donini et al. 2018); a convex
    expression of a linear score. It bounds the surrogate, not the true rates: for the true rates of a fitted
    classifier's decisions, post-process with ``fm.GroupThresholdPostProcessor``."""
    pos, groups = _labels_groups(data, y, groups, positive)
    return _spread(score, groups, pos, "a positive label", _weights(sample_weight, pos.size))


def equalized_odds_gap(score, data=None, *, y=None, groups=None, positive=None, sample_weight=None):
    """The larger of the mean-score spreads (max_g - min_g, the **largest pairwise** gap) on the positives and on
    the negatives: the linear-loss surrogate of the equalized-odds gap of the true-positive and false-positive
    rates (Donini et al. 2018); convex."""
    pos, groups = _labels_groups(data, y, groups, positive)
    w = _weights(sample_weight, pos.size)
    return max(_spread(score, groups, pos, "a positive label", w),
               _spread(score, groups, ~pos, "a negative label", w))
