"""One-number fairness summaries of decisions (the names and arguments of fairlearn's where they coincide):

* demographic parity: the difference (or ratio) of the groups' selection rates;
* equal opportunity (Hardt, Price, Srebro 2016): the difference (or ratio) of the groups' true-positive rates;
* equalized odds (Hardt, Price, Srebro 2016): the larger of the true-positive-rate and the false-positive-rate
  differences (the smaller of the two ratios).

``method="between_groups"`` (the default) is the **largest pairwise** gap: the groups compared with each other
(max - min, or min / max); ``method="to_overall"`` compares every group **vs the population** (the largest
|group - overall|, or the smallest group / overall ratio). For two groups of shares p and 1 - p, the gap vs the
population of a group is (1 - its share) times the pairwise gap. All take ``sample_weight``.
"""
from __future__ import annotations

import numpy as np

from .assessment import assess


def _summary(metrics, how, y_true, y_pred, sensitive_features, method, sample_weight, pos_label):
    a = assess(y_true, y_pred=y_pred, sensitive_features=sensitive_features, metrics=list(metrics),
               sample_weight=sample_weight, pos_label=pos_label)
    values = a.difference(method) if how == "difference" else a.ratio(method)
    values = np.array([values[m] for m in metrics], dtype=float)
    return float(np.max(values) if how == "difference" else np.min(values))


def demographic_parity_difference(y_true, y_pred, *, sensitive_features, method="between_groups",
                                  sample_weight=None, pos_label=None) -> float:
    """Largest difference of selection rates (0 = parity); ``method``: ``between_groups`` (the largest pairwise gap) or
    ``to_overall`` (vs the population)."""
    return _summary(("selection_rate",), "difference", y_true, y_pred, sensitive_features, method, sample_weight,
                    pos_label)


def demographic_parity_ratio(y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None,
                             pos_label=None) -> float:
    """Smallest ratio of selection rates (1 = parity)."""
    return _summary(("selection_rate",), "ratio", y_true, y_pred, sensitive_features, method, sample_weight,
                    pos_label)


def equal_opportunity_difference(y_true, y_pred, *, sensitive_features, method="between_groups",
                                 sample_weight=None, pos_label=None) -> float:
    """Largest difference of true-positive rates (0 = equal opportunity); ``method``: ``between_groups`` (the
    largest pairwise gap) or ``to_overall`` (vs the population)."""
    return _summary(("true_positive_rate",), "difference", y_true, y_pred, sensitive_features, method,
                    sample_weight, pos_label)


def equalized_odds_difference(y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None,
                              pos_label=None) -> float:
    """The larger of the true-positive-rate and false-positive-rate differences (0 = equalized odds)."""
    return _summary(("true_positive_rate", "false_positive_rate"), "difference", y_true, y_pred,
                    sensitive_features, method, sample_weight, pos_label)


def equalized_odds_ratio(y_true, y_pred, *, sensitive_features, method="between_groups", sample_weight=None,
                         pos_label=None) -> float:
    """The smaller of the true-positive-rate and false-positive-rate ratios (1 = equalized odds)."""
    return _summary(("true_positive_rate", "false_positive_rate"), "ratio", y_true, y_pred, sensitive_features,
                    method, sample_weight, pos_label)
