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

``surrogate="ramp"`` (with ``width=`` and ``threshold=``) replaces the linear surrogate by the ramp surrogate of the
true rates of the decisions ``score > threshold`` (:mod:`.rates`): the largest pairwise gap of the groups' ramp
rates, a difference-of-convex constraint that the partial-fairness family solves by IDCA (He, Huang, Yao, Lin
2025); ``gap <= eps`` declares the true rate gap <= eps, which the judge checks (the ramp gap bounds it only up to a
stated slack, so the exact backend lowers the ramp bound until the true gap meets eps); with ``sample_weight`` its
rates are the weighted shares of each group's rows. ``selection_rate_gap`` is the same pair of surrogates
for demographic parity of decisions (the selection rates on all rows). The linear surrogates bound the spread of the
groups' mean scores, not the rates of the decisions: a small bound need not give a small true rate gap.
"""
from __future__ import annotations

import numpy as np

from ...data.dataset import Groups
from ...errors import DataError
from ...utilities.validate import check_sample_weight
from ..core import multiply
from .aggregates import group_mean, max, min  # noqa: A004  (the language's max and min)
from .rates import RampRateGap, check_surrogate


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


def _ramp(score, groups, strata, sample_weight, threshold, width):
    return RampRateGap(score, groups, strata, threshold=threshold, width=width, sample_weight=sample_weight)


def equal_opportunity_gap(score, data=None, *, y=None, groups=None, positive=None, sample_weight=None,
                          surrogate="linear", width=1.0, threshold=0.0):
    """Equal opportunity, largest pairwise gap between the groups.

    ``surrogate="linear"`` (default): max_g - min_g of the groups' mean scores on the positives (the linear-loss
    surrogate of the true-positive-rate gap, Donini et al. 2018); a convex expression of a linear score that bounds
    the mean-score gap, not the rate gap. ``surrogate="ramp"``: the largest pairwise gap of the groups' ramp
    true-positive rates of the decisions ``score > threshold`` (ramp ``width``; a DC constraint solved by IDCA); a
    bound on it declares the true-positive-rate gap <= eps, which the judge checks (the ramp gap is within the share
    of positives near the threshold of it).
    For the true rates of a fitted classifier's decisions without retraining, post-process with
    ``fm.GroupThresholdPostProcessor``."""
    pos, groups = _labels_groups(data, y, groups, positive)
    if check_surrogate(surrogate) == "ramp":
        return _ramp(score, groups, [("true-positive rate", pos)], sample_weight, threshold, width)
    return _spread(score, groups, pos, "a positive label", _weights(sample_weight, pos.size))


def equalized_odds_gap(score, data=None, *, y=None, groups=None, positive=None, sample_weight=None,
                       surrogate="linear", width=1.0, threshold=0.0):
    """Equalized odds, largest pairwise gap between the groups, the larger of the gaps on the positives and on the
    negatives.

    ``surrogate="linear"`` (default): the larger of the mean-score spreads on the positives and on the negatives
    (the linear-loss surrogate of the true- and false-positive-rate gaps, Donini et al. 2018); convex; bounds the
    mean-score gaps, not the rate gaps. ``surrogate="ramp"``: the larger of the largest pairwise gaps of the groups'
    ramp true-positive and false-positive rates of the decisions ``score > threshold`` (a DC constraint solved by
    IDCA); a bound on it declares the true equalized-odds gap <= eps, which the judge checks."""
    pos, groups = _labels_groups(data, y, groups, positive)
    if check_surrogate(surrogate) == "ramp":
        return _ramp(score, groups, [("true-positive rate", pos), ("false-positive rate", ~pos)], sample_weight,
                     threshold, width)
    w = _weights(sample_weight, pos.size)
    return max(_spread(score, groups, pos, "a positive label", w),
               _spread(score, groups, ~pos, "a negative label", w))


def selection_rate_gap(score, data=None, *, groups=None, sample_weight=None, surrogate="linear", width=1.0,
                       threshold=0.0):
    """Demographic parity of decisions, largest pairwise gap between the groups (every row counts; no labels).

    ``surrogate="linear"`` (default): max_g - min_g of the groups' mean scores (convex; bounds the mean-score gap,
    not the gap in selection rates). ``surrogate="ramp"``: the largest pairwise gap of the groups' ramp selection
    rates of the decisions ``score > threshold`` (a DC constraint solved by IDCA); a bound on it declares the true
    selection-rate gap <= eps, which the judge checks. ``groups`` may be a :class:`Groups` or labels,
    tuples of labels for intersections."""
    if data is not None and groups is None:
        groups = data.groups
    if groups is None:
        raise DataError("give data= (a Dataset with groups) or groups=")
    n = len(Groups(groups))
    everyone = np.ones(n, dtype=bool)
    if check_surrogate(surrogate) == "ramp":
        return _ramp(score, groups, [("selection rate", everyone)], sample_weight, threshold, width)
    return _spread(score, groups, everyone, "a row", _weights(sample_weight, n))
