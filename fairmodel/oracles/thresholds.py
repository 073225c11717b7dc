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

Rows in chunks: the ROC points need only the weights of the positives and negatives at every distinct (group, score)
(:class:`ScoreCounts`), which add over disjoint rows, and the judge's rates only per-group sums (:func:`rate_sums`).
Both are therefore sums over chunks (:class:`CountPass`, :class:`RatePass`), exact and of memory O(distinct scores)
and O(groups); in-memory rows are one chunk, so both data sources run the same code.
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


MAX_DISTINCT = 1 << 24    # distinct (group, score) cells a fit keeps by default: 32 bytes each, 0.5 GiB


class ScoreCounts:
    """The cells of some rows, one per distinct (group, score): ``group`` (codes), ``score`` and the
    positives' and negatives' weights ``pos``, ``neg``, sorted by group, then by decreasing score.

    Counts of disjoint rows add (``a + b``: the cells merged, their weights added, ``b``'s after ``a``'s), so the
    counts of chunked rows are an ordered sum over the chunks (:func:`fairmodel.data.passes.row_sums`) whose memory is
    the number of distinct cells, never the rows. Every group's ROC points follow exactly (:func:`group_rocs`). A sum
    with more than ``limit`` cells is refused (:class:`~fairmodel.errors.DataError`).
    """

    def __init__(self, group, score, pos, neg, limit: int | None = MAX_DISTINCT):
        self.group, self.score, self.pos, self.neg, self.limit = group, score, pos, neg, limit

    @classmethod
    def of(cls, scores, positive, weights, codes, limit: int | None = MAX_DISTINCT) -> "ScoreCounts":
        """The cells of rows given by their scores, boolean labels, weights and group codes (``limit`` None: no
        limit)."""
        scores = np.asarray(scores, dtype=float)
        if not np.all(np.isfinite(scores)):
            raise DataError("the scores contain NaN or infinite values; the thresholds need finite scores")
        positive, weights = np.asarray(positive, dtype=bool), np.asarray(weights, dtype=float)
        group = np.asarray(codes, dtype=np.intp)
        return cls(group, scores, np.where(positive, weights, 0.0), np.where(positive, 0.0, weights),
                   limit)._merged()

    def _merged(self) -> "ScoreCounts":
        """The same cells sorted (group up, score down; a stable sort keeps equal cells in order) and merged."""
        order = np.lexsort((-self.score, self.group))
        g, s = self.group[order], self.score[order]
        first = np.r_[True, (g[1:] != g[:-1]) | (s[1:] != s[:-1])] if g.size else np.zeros(0, dtype=bool)
        starts = np.flatnonzero(first)
        if self.limit is not None and starts.size > self.limit:
            raise DataError(
                f"the rows have more than {self.limit:,} distinct (group, score) pairs (the exact ROC "
                f"points of Hardt, Price, Srebro 2016 need one count per distinct score); raise max_distinct= if "
                f"the memory is there (about 32 bytes a distinct score), round the scores (e.g. a model whose "
                f"predict_proba is rounded to 6 decimals has at most 10^6 distinct scores, and its thresholds are "
                f"exact for the rounded scores), or fit on an in-memory sample of the rows")
        pos = np.add.reduceat(self.pos[order], starts) if starts.size else self.pos[:0]
        neg = np.add.reduceat(self.neg[order], starts) if starts.size else self.neg[:0]
        return ScoreCounts(g[starts], s[starts], pos, neg, self.limit)

    def __add__(self, other: "ScoreCounts") -> "ScoreCounts":
        return ScoreCounts(np.r_[self.group, other.group], np.r_[self.score, other.score],
                           np.r_[self.pos, other.pos], np.r_[self.neg, other.neg], self.limit)._merged()

    def __len__(self) -> int:
        return int(self.score.size)

    def roc(self, g: int) -> "GroupROC":
        """Group g's ROC points: "predict 1 iff score >= t" at each of its distinct scores t, ties forming one point
        (a rule cannot separate rows with the same score), and the empty rule."""
        lo, hi = np.searchsorted(self.group, [g, g + 1])
        tp, fp = np.cumsum(self.pos[lo:hi]), np.cumsum(self.neg[lo:hi])
        P, N = (float(tp[-1]), float(fp[-1])) if hi > lo else (0.0, 0.0)
        return GroupROC(np.r_[np.inf, self.score[lo:hi]], np.r_[0.0, fp], np.r_[0.0, tp], P, N, P + N)


class CountPass:
    """One chunk's :class:`ScoreCounts` (a per-chunk function of :func:`fairmodel.data.passes.row_sums`): the
    ``scores`` callable (features -> scores, e.g. a fitted model's decision function) runs on the chunk's features;
    the chunk's labels ``y`` are positive where they equal ``positive_label``; its group ``codes``; ``weights`` (per
    row) default to 1."""

    def __init__(self, scores, positive_label, limit: int = MAX_DISTINCT):
        self.scores, self.positive_label, self.limit = scores, positive_label, limit

    def __call__(self, batch, y, codes, weights=None):
        w = np.ones(batch.X.shape[0]) if weights is None else weights
        return ScoreCounts.of(self.scores(batch.X), y == self.positive_label, w, codes, self.limit)


def hull_vertices(x, y) -> np.ndarray:
    """Indices of the vertices of the convex hull of points sorted by (x, y) (Andrew's monotone chain), in path
    order; collinear points are dropped (keeping one costs nothing: every ROC point is reachable)."""
    n = x.size
    if n <= 2:
        return np.arange(n)
    x, y = np.asarray(x, dtype=float).tolist(), np.asarray(y, dtype=float).tolist()   # Python floats: ~10x faster

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


def group_rocs(counts: ScoreCounts, names, rates) -> list[GroupROC]:
    """The ROC points of every group (``names``: the groups' labels, in code order) from the rows'
    :class:`ScoreCounts`, refusing a group whose compared rate is undefined (no positives for a true-positive rate,
    no negatives for a false-positive rate, no weight at all), named by its label."""
    out = []
    for g, name in enumerate(names):
        roc = counts.roc(g)
        need = {"true_positive_rate": ("P", "positive"), "false_positive_rate": ("N", "negative"),
                "selection_rate": ("W", "")}
        for rate in rates:
            attr, what = need[rate]
            if getattr(roc, attr) <= 0:
                raise DataError(f"group {name!r} has no {what + ' ' if what else ''}rows with positive weight, so its "
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


def group_probabilities(thresholds, weights, scores, codes) -> np.ndarray:
    """q_g(s_i) of every row: the probability of predicting 1 under its group's randomized threshold (``thresholds``
    and mixture ``weights``: one array per group)."""
    q = np.zeros(scores.shape[0])
    for g, (t, w) in enumerate(zip(thresholds, weights)):
        rows = codes == g
        q[rows] = threshold_probabilities(t, w, scores[rows])
    return q


def rate_sums(q, positive, weights, codes, n_groups: int) -> np.ndarray:
    """(5, n_groups): per group the weights W, P, N of its rows, positives and negatives, and the expected weighted
    counts TP, FP of a randomized prediction (``q`` the probability of predicting 1 on each row); sums over rows, so
    the sums of chunks add."""
    q, w = np.asarray(q, dtype=float), np.asarray(weights, dtype=float)
    pos = np.asarray(positive, dtype=bool)

    def per_group(values):
        return np.bincount(codes, weights=values, minlength=n_groups)

    return np.stack([per_group(w), per_group(w * pos), per_group(w * ~pos), per_group(w * q * pos),
                     per_group(w * q * ~pos)])


class RatePass:
    """One chunk's :func:`rate_sums` of the fitted randomized thresholds (a per-chunk function of
    :func:`fairmodel.data.passes.row_sums`): the scores from the chunk's features, the probabilities row by row."""

    def __init__(self, scores, positive_label, thresholds, weights):
        self.scores, self.positive_label, self.thresholds, self.weights = scores, positive_label, thresholds, weights

    def __call__(self, batch, y, codes, weights=None):
        w = np.ones(batch.X.shape[0]) if weights is None else weights
        q = group_probabilities(self.thresholds, self.weights, self.scores(batch.X), codes)
        return rate_sums(q, y == self.positive_label, w, codes, len(self.thresholds))


def expected_rates(sums, costs=(1.0, 1.0)) -> dict:
    """The expected rates from the :func:`rate_sums` of the rows: per group selection, true-positive and
    false-positive rates (NaN where undefined), the accuracy and the weighted error ``(c_fp FP + c_fn FN) / W``."""
    W, P, N, tp, fp = sums
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
