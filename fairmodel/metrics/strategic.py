"""Accuracy and margin of ANY linear classifier under strategic shift and worst-case Wasserstein
perturbations (Maheshwari et al., AISTATS 2022, §6.1; the paper's printed "accuracy" is a mean signed
margin, not a 0-1 accuracy, so both are provided).

Every function takes ``theta`` (the weights of a linear score x . theta + intercept), the data (a
``fm.Dataset`` or a matrix ``X`` with labels ``y`` in {-1, +1} / {0, 1}), the agents' strategic power
``zeta`` (a number, or an array for a robustness curve: the result is then an array) and their
``strategic_features`` (names when a Dataset is given, indices or a boolean mask). Agents labelled -1
best-respond by moving their strategic features by ``zeta * theta`` (eq. (9)).

The worst-case variants take the type-1 Wasserstein ball of ``radius`` delta around the shifted
empirical distribution, with transport cost ||x - x'||_2 (+ kappa |y - y'| when ``label_cost`` kappa is
given; as in the problem, only +1 labels may flip, Assumption B.1). For a linear score both have exact
closed forms: the adversary spends its budget greedily on the cheapest (per unit of effect) moves.

A Dask-backed Dataset is read by one pass (the scores X theta; the margins, n numbers, are then in memory).
"""
from __future__ import annotations

import numpy as np

from ..data.dataset import Dataset
from ..errors import DataError, ModelError
from ..oracles.strategic import ChunkedRows, binary_labels, strategic_mask, strategic_scores
from ..utilities.validate import check_matrix
from .rates import weights_of


def _inputs(theta, data, y, strategic_features):
    if isinstance(data, Dataset):       # a Dask-backed Dataset: its features read by passes (ChunkedRows)
        X, names = ChunkedRows(data) if data.is_chunked else data.X, list(data.feature_names)
        y = data.y if y is None else y
    elif isinstance(data, ChunkedRows):
        X, names = data, list(data.data.feature_names)
    else:
        X, names = check_matrix(data), [f"x{j}" for j in range(np.shape(data)[1])]
    if y is None:
        raise DataError("labels are needed: pass y= or a Dataset with labels")
    y = binary_labels(y)
    if y.shape[0] != X.shape[0]:
        raise DataError(f"y has {y.shape[0]} entries but X has {X.shape[0]} rows")
    theta = np.asarray(theta, dtype=float).ravel()
    if theta.shape[0] != X.shape[1] or not np.all(np.isfinite(theta)):
        raise ModelError(f"theta must be a finite vector of length {X.shape[1]} (one weight per feature)")
    return theta, X, y, strategic_mask(strategic_features, names, X.shape[1])


def _margins(theta, X, y, zeta, mask, intercept):
    return y * (strategic_scores(theta, X, y < 0, zeta, mask) + intercept)


def _over_zeta(fn, zeta):
    zetas = np.asarray(zeta, dtype=float)
    if np.any(zetas < 0) or not np.all(np.isfinite(zetas)):
        raise ModelError(f"zeta must be finite and non-negative; got {zeta}")
    if zetas.ndim == 0:
        return float(fn(float(zetas)))
    return np.array([fn(float(z)) for z in zetas.ravel()]).reshape(zetas.shape)


def strategic_accuracy(theta, data, y=None, *, zeta=0.0, strategic_features=None, intercept: float = 0.0,
                       sample_weight=None):
    """0-1 accuracy (1/n) sum 1[y_i (<b_i(theta; zeta), theta> + b) > 0] on the strategically shifted data (a
    weighted mean with ``sample_weight``)."""
    theta, X, y, mask = _inputs(theta, data, y, strategic_features)
    w = weights_of(sample_weight, X.shape[0])
    return _over_zeta(lambda z: np.average(_margins(theta, X, y, z, mask, intercept) > 0, weights=w), zeta)


def strategic_margin(theta, data, y=None, *, zeta=0.0, strategic_features=None, intercept: float = 0.0,
                     sample_weight=None):
    """Mean signed margin (1/n) sum y_i (<b_i(theta; zeta), theta> + b): the paper's "accuracy" (§6.1) (a
    weighted mean with ``sample_weight``).

    Scale-dependent: theta = 0 scores 0 at every zeta.
    """
    theta, X, y, mask = _inputs(theta, data, y, strategic_features)
    w = weights_of(sample_weight, X.shape[0])
    return _over_zeta(lambda z: np.average(_margins(theta, X, y, z, mask, intercept), weights=w), zeta)


def _check_budget(radius, label_cost):
    radius = float(radius)
    if not (np.isfinite(radius) and radius >= 0):
        raise ModelError(f"radius must be finite and non-negative; got {radius}")
    if label_cost is not None and not (np.isfinite(label_cost) and label_cost > 0):
        raise ModelError(f"label_cost must be positive (or None for no label flips); got {label_cost}")
    return radius


def _worst_case_inputs(theta, data, y, strategic_features, radius, label_cost):
    """The validated inputs of the worst-case metrics, with the radius checked and ||theta||."""
    theta, X, y, mask = _inputs(theta, data, y, strategic_features)
    return theta, X, y, mask, _check_budget(radius, label_cost), float(np.linalg.norm(theta))


def worst_case_accuracy(theta, data, y=None, *, radius: float, label_cost: float | None = None, zeta=0.0,
                        strategic_features=None, intercept: float = 0.0, sample_weight=None):
    """The smallest 0-1 accuracy over the Wasserstein ball of ``radius`` around the shifted data.

    Misclassifying a correctly classified point costs min(margin_i / ||theta||, 2 kappa) per unit of its mass
    (1/n, or w_i / sum w with ``sample_weight``: the weighted empirical distribution) (moving it to the decision
    boundary, or flipping a +1 label); the adversary buys the cheapest ones first, the last one fractionally
    (fractional knapsack with unit values: exact).
    """
    theta, X, y, mask, radius, norm = _worst_case_inputs(theta, data, y, strategic_features, radius, label_cost)
    n = X.shape[0]
    w = weights_of(sample_weight, n)
    mass = np.full(n, 1.0 / n) if w is None else w / w.sum()

    def one(z):
        m = _margins(theta, X, y, z, mask, intercept)
        correct = m > 0
        cost = m[correct] / norm if norm > 0 else np.full(int(correct.sum()), np.inf)
        if label_cost is not None:
            cost = np.where(y[correct] > 0, np.minimum(cost, 2.0 * label_cost), cost)
        order = np.argsort(cost, kind="stable")
        cost, p = cost[order], mass[correct][order]
        with np.errstate(invalid="ignore"):
            spent = np.cumsum(np.where(p > 0, p * cost, 0.0))
        k = int(np.searchsorted(spent, radius, side="right"))       # points fully misclassified
        lost = float(p[:k].sum())
        if k < cost.size and np.isfinite(cost[k]) and cost[k] > 0:
            lost += p[k] * min(1.0, (radius - (spent[k - 1] if k else 0.0)) / (p[k] * cost[k]))
        return float(p.sum()) - lost

    return _over_zeta(one, zeta)


def worst_case_margin(theta, data, y=None, *, radius: float, label_cost: float | None = None, zeta=0.0,
                      strategic_features=None, intercept: float = 0.0):
    """The smallest mean signed margin over the Wasserstein ball of ``radius`` around the shifted data.

    Moving mass lowers the margin at rate ||theta|| per unit of transport; flipping a +1 point of margin
    m_i > 0 lowers it by 2 m_i at cost 2 kappa (rate m_i / kappa). The adversary flips while that rate
    beats ||theta|| (largest margins first, mass 1/n each) and moves mass with the rest of the budget.
    """
    theta, X, y, mask, radius, norm = _worst_case_inputs(theta, data, y, strategic_features, radius, label_cost)
    n = X.shape[0]

    def one(z):
        m = _margins(theta, X, y, z, mask, intercept)
        budget, drop = radius, 0.0
        if label_cost is not None:
            flips = np.sort(m[(y > 0) & (m / label_cost > norm)])[::-1]
            cost = 2.0 * label_cost / n
            k = min(flips.size, int(budget // cost))
            drop += 2.0 * float(np.sum(flips[:k])) / n
            budget -= k * cost
            if k < flips.size and budget > 0:
                drop += 2.0 * flips[k] / n * (budget / cost)
                budget = 0.0
        return float(np.mean(m)) - drop - budget * norm

    return _over_zeta(one, zeta)
