"""Classification and regression metrics of one set of predictions, each usable alone, all with sample weights.

Decision metrics are functions of the weighted confusion matrix of binary labels and binary decisions
(``tn, fp, fn, tp`` = sums of the sample weights in each cell):

==========================  ===========================================
``selection_rate``          (fp + tp) / (tn + fp + fn + tp)
``true_positive_rate``      tp / (tp + fn)          (recall, sensitivity)
``false_positive_rate``     fp / (fp + tn)
``false_negative_rate``     fn / (fn + tp)
``accuracy``                (tp + tn) / (tn + fp + fn + tp)
``balanced_accuracy``       (tp / (tp + fn) + tn / (tn + fp)) / 2
``precision``               tp / (tp + fp)
==========================  ===========================================

A ratio whose denominator is zero (e.g. the true-positive rate of a group without positives) is NaN: the
metric is undefined there, not 0 as scikit-learn's ``zero_division`` default reports.

``roc_auc`` is the weighted Mann-Whitney statistic (ties count 1/2), equal to scikit-learn's
``roc_auc_score`` with ``sample_weight``; ``mse`` and ``mae`` are weighted means of squared and absolute errors.

Coding: labels and decisions in {0, 1}, {-1, +1} or {False, True} need no option (1 / True is positive);
any other binary coding names its positive value with ``pos_label=``.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError
from ..utilities.validate import check_sample_weight, check_vector

CELLS = ("tn", "fp", "fn", "tp")      # code 2 * label + decision


def weights_of(sample_weight, n: int) -> np.ndarray:
    """Validated sample weights (finite, >= 0, not all zero) as a float array; ones when None."""
    return np.ones(n) if sample_weight is None else check_sample_weight(sample_weight, n, "the labels")


def binary(values, pos_label=None, name: str = "y_true", n: int | None = None) -> np.ndarray:
    """A boolean array (True = positive) from binary labels or decisions (see the module docstring)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise DataError(f"{name} must be 1-D; got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise DataError(f"{name} has {arr.shape[0]} entries but there are {n} rows; they must match")
    if arr.dtype.kind == "c":
        raise DataError(f"{name} must not be complex")
    uniques = np.unique(arr) if arr.size else arr
    if pos_label is None:
        if arr.dtype == bool:
            return arr.copy()
        numeric = arr.dtype.kind in "iuf"
        if numeric and (set(uniques.tolist()) <= {0, 1} or set(uniques.tolist()) <= {-1, 1}):
            return arr == 1
        raise DataError(f"{name} must be binary, coded 0/1, -1/+1 or False/True; found values "
                        f"{uniques[:6].tolist()}{' ...' if uniques.size > 6 else ''}. Name the positive value with "
                        f"pos_label=<value>" + (" (or give scores= for continuous scores)" if numeric else ""))
    if uniques.size > 2:
        raise DataError(f"{name} must be binary for decision metrics; found {uniques.size} distinct values "
                        f"{uniques[:6].tolist()}{' ...' if uniques.size > 6 else ''}")
    if uniques.size == 2:
        check_pos_label(pos_label, {name: uniques})
    return arr == pos_label


def check_pos_label(pos_label, columns: dict) -> None:
    """Refuse a ``pos_label`` that is none of the values of the given columns (name -> distinct values): every row
    would count as negative, with no error (a selection rate of 0, an undefined precision)."""
    if pos_label is None:
        return
    values = [v for u in columns.values() if u is not None for v in np.asarray(u).tolist()]
    if not values or any(_same(v, pos_label) for v in values):
        return
    shown = sorted(set(map(repr, values)))
    raise DataError(f"pos_label={pos_label!r} is not among the values of {' and '.join(columns)} "
                    f"({', '.join(shown[:6])}{' ...' if len(shown) > 6 else ''}); name one of them (the type matters: "
                    f"1 and '1' differ)")


def _same(value, pos_label) -> bool:
    try:
        return bool(value == pos_label)
    except (TypeError, ValueError):
        return False


def confusion(y_true, y_pred, *, pos_label=None, sample_weight=None) -> np.ndarray:
    """The weighted confusion counts ``[tn, fp, fn, tp]`` of binary labels and decisions."""
    yt = binary(y_true, pos_label, "y_true")
    yp = binary(y_pred, pos_label, "y_pred", yt.shape[0])
    w = weights_of(sample_weight, yt.shape[0])
    return np.bincount(2 * yt.astype(np.intp) + yp, weights=w, minlength=4)


def ratio(num, den):
    """num / den with NaN where den == 0 (elementwise, no warning)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    ok = np.broadcast_to(den != 0, out.shape)
    np.divide(num, den, out=out, where=ok)
    return out


# Values of each decision metric from confusion counts c[..., 4] = (tn, fp, fn, tp).
def _sel(c):
    return ratio(c[..., 1] + c[..., 3], c.sum(axis=-1))


def _tpr(c):
    return ratio(c[..., 3], c[..., 3] + c[..., 2])


def _fpr(c):
    return ratio(c[..., 1], c[..., 1] + c[..., 0])


def _fnr(c):
    return ratio(c[..., 2], c[..., 2] + c[..., 3])


def _acc(c):
    return ratio(c[..., 0] + c[..., 3], c.sum(axis=-1))


def _bacc(c):
    return (_tpr(c) + ratio(c[..., 0], c[..., 0] + c[..., 1])) / 2


def _prec(c):
    return ratio(c[..., 3], c[..., 3] + c[..., 1])


FROM_CONFUSION = {"selection_rate": _sel, "true_positive_rate": _tpr, "false_positive_rate": _fpr,
                  "false_negative_rate": _fnr, "accuracy": _acc, "balanced_accuracy": _bacc, "precision": _prec}
NEEDS_LABELS = ("true_positive_rate", "false_positive_rate", "false_negative_rate", "accuracy",
                "balanced_accuracy", "precision")


def _decision(name, y_true, y_pred, pos_label, sample_weight) -> float:
    return float(FROM_CONFUSION[name](confusion(y_true, y_pred, pos_label=pos_label, sample_weight=sample_weight)))


def selection_rate(y_true, y_pred, *, pos_label=None, sample_weight=None) -> float:
    """Weighted fraction of positive decisions (``y_true`` is ignored and may be None)."""
    yp = binary(y_pred, pos_label, "y_pred")
    w = weights_of(sample_weight, yp.shape[0])
    return float(ratio(w[yp].sum(), w.sum()))


def true_positive_rate(y_true, y_pred, *, pos_label=None, sample_weight=None) -> float:
    """tp / (tp + fn): the weighted fraction of positives decided positive (recall)."""
    return _decision("true_positive_rate", y_true, y_pred, pos_label, sample_weight)


def false_positive_rate(y_true, y_pred, *, pos_label=None, sample_weight=None) -> float:
    """fp / (fp + tn): the weighted fraction of negatives decided positive."""
    return _decision("false_positive_rate", y_true, y_pred, pos_label, sample_weight)


def false_negative_rate(y_true, y_pred, *, pos_label=None, sample_weight=None) -> float:
    """fn / (fn + tp) = 1 - true_positive_rate."""
    return _decision("false_negative_rate", y_true, y_pred, pos_label, sample_weight)


def accuracy(y_true, y_pred, *, pos_label=None, sample_weight=None) -> float:
    """(tp + tn) / total: the weighted fraction of correct binary decisions."""
    return _decision("accuracy", y_true, y_pred, pos_label, sample_weight)


def balanced_accuracy(y_true, y_pred, *, pos_label=None, sample_weight=None) -> float:
    """The mean of the true-positive and true-negative rates."""
    return _decision("balanced_accuracy", y_true, y_pred, pos_label, sample_weight)


def precision(y_true, y_pred, *, pos_label=None, sample_weight=None) -> float:
    """tp / (tp + fp): the weighted fraction of positive decisions that are right."""
    return _decision("precision", y_true, y_pred, pos_label, sample_weight)


# ---------------------------------------------------------------------------------------------------
# Scores and regression
# ---------------------------------------------------------------------------------------------------
def mann_whitney(pos, below, tied, negatives, ties: float = 0.5, axis: int = -1):
    """The weighted Mann-Whitney statistic sum_k pos_k (below_k + t tied_k) / (P N): ``pos`` the weights of the
    positives (or of the positive rows of each score level), ``below`` and ``tied`` the negative weight with a lower
    and with the same score, ``negatives`` the total negative weight N (broadcast against the sums over ``axis``),
    P = sum pos. NaN when P N = 0. The one copy of the formula behind every AUC of fairmodel (the per-level form,
    the bootstrap's, the histogram sketch's and the pairwise AUC of two sets)."""
    wins = np.sum(pos * (below + ties * tied), axis=axis)
    return ratio(wins, np.sum(pos, axis=axis) * negatives)


def auc_from_levels(neg, pos, ties: float = 0.5):
    """AUC from weights per distinct score level (ascending) of negatives ``neg`` and positives ``pos``
    (arrays ``(..., m)``): sum_l pos_l (N_{<l} + t neg_l) / (P N), the weighted Mann-Whitney statistic."""
    return mann_whitney(pos, np.cumsum(neg, axis=-1) - neg, neg, neg.sum(axis=-1), ties)


def roc_auc(y_true, scores, *, pos_label=None, sample_weight=None) -> float:
    """Weighted area under the ROC curve: Pr(score of a positive > score of a negative), ties 1/2, each pair
    weighted by the product of its sample weights. NaN when one class has no weight."""
    yt = binary(y_true, pos_label, "y_true")
    s = check_vector(scores, yt.shape[0], "scores")
    w = weights_of(sample_weight, yt.shape[0])
    levels, code = np.unique(s, return_inverse=True)
    stats = np.bincount(2 * code + yt, weights=w, minlength=2 * levels.size).reshape(-1, 2)
    return float(auc_from_levels(stats[:, 0], stats[:, 1]))


def _errors(y_true, y_pred, sample_weight):
    y = check_vector(y_true, None, "y_true")
    p = check_vector(y_pred, y.shape[0], "y_pred")
    return p - y, weights_of(sample_weight, y.shape[0])


def mae(y_true, y_pred, *, sample_weight=None) -> float:
    """Weighted mean absolute error sum_i w_i |pred_i - y_i| / sum_i w_i."""
    e, w = _errors(y_true, y_pred, sample_weight)
    return float(np.dot(w, np.abs(e)) / w.sum())


def mean_squared_error(y_true, y_pred, *, sample_weight=None) -> float:
    """Weighted mean squared error sum_i w_i (pred_i - y_i)^2 / sum_i w_i."""
    e, w = _errors(y_true, y_pred, sample_weight)
    return float(np.dot(w, e * e) / w.sum())
