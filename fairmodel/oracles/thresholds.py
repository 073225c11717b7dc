"""Group-specific randomized thresholds of a score (Hardt, Price, Srebro 2016, predictors derived from a score):
ROC points, their convex hull, the predictor's probabilities and its expected rates, and the Lagrangian bound that
certifies the LP.

For one group, the rule "predict 1 iff score >= t" at every distinct score t (and the empty rule, t = +inf) has
weighted counts (FP(t), TP(t)): its ROC points. A randomized predictor that mixes these rules with weights
``lambda`` (a point of the simplex) predicts 1 at score s with probability ``q(s) = sum_{j: t_j <= s} lambda_j``,
a nondecreasing step function of s: a monotone randomized threshold. Its expected counts are
``sum_j lambda_j (FP_j, TP_j)``, so the counts reachable are the convex hull of the ROC points: mixing the hull's
vertices alone reaches all of them (the ROC convex hull of Hardt, Price, Srebro 2016), and the LP of
``fairmodel.exact.thresholds`` takes those vertices as its variables.

Every rate a constraint can compare is a linear function of a group's expected counts:

=====================  ===================================
``selection_rate``     (FP + TP) / W_g     (W_g the group's weight)
``true_positive_rate`` TP / P_g            (P_g its positives' weight)
``false_positive_rate`` FP / N_g           (N_g its negatives' weight)
=====================  ===================================

and the expected weighted error is ``c_fp FP + c_fn (P_g - TP)`` summed over the groups, divided by the total
weight (accuracy is one minus it when both costs are 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import DataError

# the rates each constraint compares between groups (Hardt, Price, Srebro 2016 define the first two; demographic
# parity compares the selection rates)
CONSTRAINT_RATES = {"equalized_odds": ("true_positive_rate", "false_positive_rate"),
                    "equal_opportunity": ("true_positive_rate",),
                    "demographic_parity": ("selection_rate",)}


@dataclass
class GroupROC:
    """One group's ROC points: ``thresholds`` (decreasing, ``inf`` first: the empty rule) and the weighted counts
    ``fp``, ``tp`` of "predict 1 iff score >= threshold"; ``P``, ``N``, ``W`` the weights of the group's positives,
    negatives and rows."""

    thresholds: np.ndarray
    fp: np.ndarray
    tp: np.ndarray
    P: float
    N: float
    W: float

    def rate_rows(self, rates) -> np.ndarray:
        """(len(rates), m): each rate of ``rates`` as a linear function of the mixture weights over the points."""
        rows = {"selection_rate": lambda: (self.fp + self.tp) / self.W,
                "true_positive_rate": lambda: self.tp / self.P,
                "false_positive_rate": lambda: self.fp / self.N}
        return np.array([rows[r]() for r in rates])

    def hull(self) -> "GroupROC":
        """The same group restricted to the vertices of the convex hull of its ROC points (both chains): mixtures
        of the vertices reach every mixture of the points."""
        keep = hull_vertices(self.fp, self.tp)
        return GroupROC(self.thresholds[keep], self.fp[keep], self.tp[keep], self.P, self.N, self.W)


def roc_points(scores, positive, weights) -> GroupROC:
    """The ROC points of one group (scores, boolean labels, nonnegative weights); ties of the score form one
    point (a rule cannot separate rows with the same score)."""
    order = np.argsort(-scores, kind="stable")
    s, pos, w = scores[order], positive[order], weights[order]
    last = np.r_[s[1:] != s[:-1], True] if s.size else np.zeros(0, dtype=bool)
    tp, fp = np.cumsum(w * pos)[last], np.cumsum(w * ~pos)[last]
    P, N = float(np.sum(w * pos)), float(np.sum(w * ~pos))
    return GroupROC(np.r_[np.inf, s[last]], np.r_[0.0, fp], np.r_[0.0, tp], P, N, P + N)


def hull_vertices(x, y) -> np.ndarray:
    """Indices of the vertices of the convex hull of points sorted by (x, y) (Andrew's monotone chain), in path
    order; collinear points are dropped (keeping one costs nothing: every ROC point is reachable)."""
    n = x.size
    if n <= 2:
        return np.arange(n)

    def chain(sign):
        out = []
        for i in range(n):
            while len(out) >= 2:
                a, b = out[-2], out[-1]
                cross = (x[b] - x[a]) * (y[i] - y[a]) - (y[b] - y[a]) * (x[i] - x[a])
                if sign * cross >= 0:
                    out.pop()
                else:
                    break
            out.append(i)
        return out

    return np.unique(np.r_[chain(+1), chain(-1)])   # upper chain (clockwise turns) and lower chain


def group_rocs(scores, positive, weights, codes, n_groups: int, rates) -> list[GroupROC]:
    """The ROC points of every group, refusing a group whose compared rate is undefined (no positives for a
    true-positive rate, no negatives for a false-positive rate, no weight at all)."""
    out = []
    for g in range(n_groups):
        rows = codes == g
        roc = roc_points(scores[rows], positive[rows], weights[rows])
        need = {"true_positive_rate": ("P", "positive"), "false_positive_rate": ("N", "negative"),
                "selection_rate": ("W", "")}
        for rate in rates:
            attr, what = need[rate]
            if getattr(roc, attr) <= 0:
                raise DataError(f"group {g} has no {what + ' ' if what else ''}rows with positive weight, so its "
                                f"{rate.replace('_', ' ')} is undefined; drop the group or choose a constraint on "
                                f"rates it has")
        out.append(roc)
    return out


def threshold_probabilities(thresholds, weights, scores) -> np.ndarray:
    """q(s) = sum of the mixture ``weights`` of the thresholds t <= s: the probability of predicting 1 at each
    score (thresholds ``inf`` never fire)."""
    t = np.asarray(thresholds, dtype=float)
    lam = np.asarray(weights, dtype=float)
    finite = np.isfinite(t)
    t, lam = t[finite], lam[finite]
    order = np.argsort(t)
    cum = np.r_[0.0, np.cumsum(lam[order])]
    return np.minimum(cum[np.searchsorted(t[order], scores, side="right")], 1.0)


def expected_rates(q, positive, weights, codes, n_groups: int, costs=(1.0, 1.0)) -> dict:
    """The expected rates of a randomized prediction (``q`` the probability of predicting 1 on each row): per group
    selection, true-positive and false-positive rates (NaN where undefined), the accuracy and the weighted error
    ``(c_fp FP + c_fn FN) / W``, computed row by row."""
    q, w = np.asarray(q, dtype=float), np.asarray(weights, dtype=float)
    pos = np.asarray(positive, dtype=bool)

    def per_group(values):
        return np.bincount(codes, weights=values, minlength=n_groups)

    W, P, N = per_group(w), per_group(w * pos), per_group(w * ~pos)
    tp, fp = per_group(w * q * pos), per_group(w * q * ~pos)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = {"selection_rate": (tp + fp) / W, "true_positive_rate": np.where(P > 0, tp / np.where(P > 0, P, 1),
                                                                                 np.nan),
                 "false_positive_rate": np.where(N > 0, fp / np.where(N > 0, N, 1), np.nan)}
    total = W.sum()
    fn = P - tp
    rates["accuracy"] = float((tp.sum() + (N - fp).sum()) / total)
    rates["error"] = float((costs[0] * fp.sum() + costs[1] * fn.sum()) / total)
    return rates


def largest_pairwise_gap(values) -> float:
    """max_{g, h} |v_g - v_h| = max - min over the groups (0 for one group)."""
    v = np.asarray(values, dtype=float)
    return float(np.max(v) - np.min(v)) if v.size else 0.0


def lagrangian_bound(c_blocks, A_blocks, eps: float, y) -> float:
    """A lower bound on the LP ``min sum_g <c_g, lambda_g>`` over simplices ``lambda_g`` subject to
    ``sum_g A_g lambda_g <= eps`` (every row), from any multipliers ``y`` (clipped at 0): weak duality,
    ``min_lambda L(lambda, y) = -eps sum(y) + sum_g min_j (c_g + A_g^T y)_j`` (the minimum of a linear function on a
    simplex is its smallest coefficient). Valid whatever the solver's accuracy."""
    y = np.maximum(np.asarray(y, dtype=float), 0.0)
    return float(-eps * y.sum() + sum(np.min(c + A.T @ y) for c, A in zip(c_blocks, A_blocks)))
