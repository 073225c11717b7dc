"""Evaluation metrics of DP post-processing (Chzhen, Hebiri, Taturyan, NeurIPS 2024, App. G), usable on
any model's predictions: randomized predictions given as probabilities over a grid (ours, or a randomized
classifier such as ADW's), or deterministic predictions.

* :func:`randomized_risk`: R_hat(pi) = (1/n) sum_i sum_l (y_l - y_i)^2 pi(l | x_i), the randomization
  integrated out (no sampling);
Every unfairness here compares each group **vs the population** (the overall distribution), as eq. (2) does:

* :func:`ks_unfairness`: per group s, sup_t |F_s(t) - F(t)| between the group's and the overall CDF of the
  predictions, computed exactly: for grid probabilities the sup is attained at a grid point (max of the
  cumulative sums); for deterministic predictions at a data point (no histogram, unlike the reference code);
* :func:`pmf_unfairness`: per group, the mean (or max) over grid points of |pmf_s(l) - pmf(l)|, the empirical
  U_s(pi, l) of eq. (2) (the reference code's ``avg_prob_unf``);
* :func:`mse`: the base model's mean squared error.

Groups are given as labels (any hashable values) with the true sensitive attribute of the evaluation set;
``labels=`` fixes the groups to report, and a group without points raises an error (its metric is undefined).
"""
from __future__ import annotations

import numpy as np

from ..data.dataset import Groups
from ..errors import DataError
from ..utilities.validate import check_finite, check_vector
from .rates import weights_of


def _groups(groups, n: int, labels) -> tuple[np.ndarray, list]:
    g = Groups(groups)
    if len(g) != n:
        raise DataError(f"groups has {len(g)} entries but there are {n} predictions")
    names = list(g.names) if labels is None else list(labels)
    index = {name: k for k, name in enumerate(g.names)}
    codes = np.asarray(g.codes)
    masks = []
    for name in names:
        mask = codes == index[name] if name in index else np.zeros(n, dtype=bool)
        if not mask.any():
            raise DataError(f"group {name!r} has no points in this evaluation set: its unfairness is undefined. "
                            f"Evaluate on a larger set, or leave the group out of labels=")
        masks.append(mask)
    return np.array(masks), names


def _proba(proba, grid=None, name: str = "proba") -> np.ndarray:
    """``proba`` as an (n, m) float array of probability rows (entries >= 0 up to 1e-9, rows summing to 1 up to
    1e-6), columns sorted by ``grid`` when given; a :class:`DataError` saying which rule failed otherwise."""
    what = f"{name} must be a 2-D (n, m) array of probability rows (predict_proba over the grid)"
    P = np.asarray(proba)
    if P.ndim != 2:
        raise DataError(f"{what}; got {'a string' if P.dtype.kind in 'US' and P.ndim == 0 else f'shape {P.shape}'}")
    if P.dtype.kind not in "iufb":
        raise DataError(f"{what}; it must be numeric, got dtype {P.dtype}")
    P = P.astype(float)
    if P.shape[0] == 0 or P.shape[1] == 0:
        raise DataError(f"{what}; got shape {P.shape} (no rows or no columns)")
    check_finite(P, name)
    if P.min() < -1e-9:
        i, j = np.unravel_index(np.argmin(P), P.shape)
        raise DataError(f"{what}; entry ({i}, {j}) is negative ({P[i, j]:g})")
    off = np.abs(P.sum(axis=1) - 1)
    if off.max() > 1e-6:
        i = int(np.argmax(off))
        raise DataError(f"{what}; row {i} sums to {P[i].sum():.6g}, not 1")
    if grid is not None:
        P, _ = merge_levels(P, grid, name)
    return P


def merge_levels(P: np.ndarray, grid, name: str = "proba", grid_name: str = "grid"):
    """(the probabilities of the distinct grid values in ascending order, those values): columns of equal grid
    values are one output value, so their probabilities add up (a CDF or a pmf is over values, not columns)."""
    g = np.asarray(grid)
    if g.ndim != 1 or g.shape[0] != P.shape[1]:
        raise DataError(f"{grid_name} has {g.shape[0] if g.ndim == 1 else f'shape {g.shape} and'} entries but "
                        f"{name} has {P.shape[1]} columns; give one value per column")
    values, column = np.unique(check_vector(g, P.shape[1], grid_name), return_inverse=True)
    merged = np.zeros((P.shape[0], values.size))
    np.add.at(merged.T, column, np.clip(P, 0.0, None).T)
    return merged, values


def randomized_risk(y, proba, grid, *, sample_weight=None) -> float:
    """(1/n) sum_i sum_l (y_l - y_i)^2 pi(l | x_i): the squared error of a randomized prediction, integrated
    (a weighted mean with ``sample_weight``)."""
    P = _proba(proba)
    grid = check_vector(grid, P.shape[1], "grid")
    y = check_vector(y, P.shape[0], "y")
    w = weights_of(sample_weight, P.shape[0])
    return float(np.average(np.einsum("il,il->i", (grid[None, :] - y[:, None]) ** 2, P), weights=w))


def mse(y, pred, *, sample_weight=None) -> float:
    """(1/n) sum_i (pred_i - y_i)^2 of deterministic predictions (a weighted mean with ``sample_weight``)."""
    y = check_vector(y, None, "y")
    w = weights_of(sample_weight, y.shape[0])
    return float(np.average((check_vector(pred, y.shape[0], "pred") - y) ** 2, weights=w))


def _wmean(P, w, mask=None):
    if mask is None:
        return w @ P / w.sum()
    return w[mask] @ P[mask] / w[mask].sum()


def _ecdf(values, weights, points):
    """The weighted empirical CDF sum_{v_i <= t} w_i / sum w_i at each point t."""
    order = np.argsort(values, kind="stable")
    cum = np.concatenate([[0.0], np.cumsum(weights[order])])
    return cum[np.searchsorted(values[order], points, side="right")] / cum[-1]


def ks_unfairness(groups, *, proba=None, grid=None, pred=None, labels=None, sample_weight=None) -> dict:
    """Kolmogorov-Smirnov unfairness per group: sup_t |P(Y_hat <= t | S = s) - P(Y_hat <= t)| (App. G).

    Give ``proba`` (n, m) over a grid (columns sorted by ``grid`` when given, columns of equal grid values added
    up; else taken as ascending) or deterministic predictions ``pred`` (n,). Both are exact; ``sample_weight``
    gives weighted CDFs. Returns ``{group: value}``.
    """
    if (proba is None) == (pred is None):
        raise DataError("give either proba= (randomized predictions over a grid) or pred= (deterministic ones)")
    if proba is not None:
        P = _proba(proba, grid)
        masks, names = _groups(groups, P.shape[0], labels)
        w = weights_of(sample_weight, P.shape[0])
        cdf = np.cumsum(P, axis=1)
        overall = _wmean(cdf, w)
        return {str(name): float(np.abs(_wmean(cdf, w, mask) - overall).max()) for mask, name in zip(masks, names)}
    pred = check_vector(pred, None, "pred")
    masks, names = _groups(groups, pred.shape[0], labels)
    w = weights_of(sample_weight, pred.shape[0])
    points = np.unique(pred)
    overall = _ecdf(pred, w, points)
    return {str(name): float(np.abs(_ecdf(pred[mask], w[mask], points) - overall).max())
            for mask, name in zip(masks, names)}


def pmf_unfairness(groups, proba, *, reduce: str = "mean", labels=None, sample_weight=None) -> dict:
    """Per group, the mean (``reduce="mean"``) or max over grid points of |pmf_s(l) - pmf(l)|, where pmf_s is
    the group's average predicted distribution: the empirical U_s(pi, l) of eq. (2) (weighted averages with
    ``sample_weight``). Returns ``{group: value}``."""
    if reduce not in ("mean", "max"):
        raise DataError(f"reduce must be 'mean' or 'max'; got {reduce!r}")
    P = _proba(proba)
    masks, names = _groups(groups, P.shape[0], labels)
    w = weights_of(sample_weight, P.shape[0])
    overall = _wmean(P, w)
    op = np.mean if reduce == "mean" else np.max
    return {str(name): float(op(np.abs(_wmean(P, w, mask) - overall))) for mask, name in zip(masks, names)}
