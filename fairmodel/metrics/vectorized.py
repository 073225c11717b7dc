"""Vectorized group metrics: every metric of an assessment, for every group and overall, for many weight vectors
at once (the sample weights for the point estimate, the sample weights times bootstrap counts for intervals).

Each built-in metric is a function of statistics that are *linear in the weights*: ``S = A.T @ W`` for a weight
matrix ``W`` (rows x draws, one column per weight vector) and a fixed design ``A`` (rows x statistics): the
weighted confusion counts (decision metrics), the weighted errors (MSE, MAE), the weights per distinct prediction
(KS); the AUC cumulates the negatives' weights in score order. A randomized predictor (a distribution
``pi(. | x_i)`` over output levels per row) is measured exactly, without sampling: its expected errors and its
cumulated probabilities are per-row columns, so the group CDFs and pmfs are weighted means of them. One sparse product per design and group evaluates
a metric on a hundred bootstrap draws; no Python runs per draw. (Sparse products and ``einsum`` rather than BLAS:
single-threaded C loops stay fast on a loaded machine, where a multi-threaded BLAS call on a thin matrix was
measured 100x slower.) A user's callable metric ``f(y_true, y_pred, sample_weight=...)`` is called once per
group and draw instead.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import scipy.sparse as sp

from ..errors import OptionError
from ..utilities.validate import is_real
from .rates import FROM_CONFUSION, mann_whitney, ratio


class Inputs:
    """The columns of an assessment, rows sorted by group (so each group is a slice): labels / decisions as
    booleans, scores, numeric targets and predictions, group codes."""

    def __init__(self, *, n, codes, n_groups, y_true=None, y_pos=None, pred_pos=None, y_pred=None, scores=None,
                 proba=None, levels=None):
        self.n, self.codes, self.n_groups = n, codes, n_groups
        self.y_true, self.y_pos, self.pred_pos, self.y_pred, self.scores = y_true, y_pos, pred_pos, y_pred, scores
        self.proba, self.levels = proba, levels       # a randomized predictor: (n, m) over ascending levels
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=n_groups))])
        if np.any(np.diff(codes) < 0):
            raise ValueError("Inputs needs rows sorted by group code")
        self.rows = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


class Design:
    """Per-row one-hot codes (``codes``, ``k`` statistics) or dense columns (``dense``), over all rows and per
    group (``local``: each group's own codes and count, or None for the global codes restricted to the group)."""

    def __init__(self, inputs: Inputs, *, codes=None, k=None, dense=None, local=None):
        self.inputs, self.codes, self.k, self.dense, self.local = inputs, codes, k, dense, local
        self._mats = {}

    def _matrix(self, key, codes, k):
        if key not in self._mats:
            n = codes.shape[0]
            self._mats[key] = sp.csr_matrix((np.ones(n), (codes, np.arange(n))), shape=(k, n))
        return self._mats[key]

    def stats(self, W, group=None):
        """``(A.T @ W).T`` ``(B, k)`` over all rows (group None) or one group's rows (``W`` over those rows)."""
        rows = slice(None) if group is None else self.inputs.rows[group]
        if self.dense is not None:
            return np.einsum("nk,nb->bk", self.dense[rows], W)
        if group is not None and self.local is not None:
            codes, k = self.local[group]
            m = self._matrix(("local", group), codes, k)
        else:
            m = self._matrix(("global", group), self.codes[rows], self.k)
        return np.asarray(m @ W).T


def _levels(values, inputs: Inputs):
    """Codes of the distinct values over all rows and within each group (with each group's levels)."""
    levels, code = np.unique(values, return_inverse=True)
    local, local_levels = [], []
    for rows in inputs.rows:
        lv, lc = np.unique(values[rows], return_inverse=True)
        local.append((lc, lv.size))
        local_levels.append(lv)
    return levels, code, levels.size, local, local_levels


class GroupMetric(ABC):
    """One metric: ``evaluate(W, cache)`` -> (by group ``(B, G)``, overall ``(B,)``) for weights ``W`` ``(n, B)``."""

    name = ""

    @abstractmethod
    def evaluate(self, W, cache):
        """(by group, overall) values of the metric for the weight columns ``W``."""


class AdditiveMetric(GroupMetric):
    """A metric ``value(S)`` of the statistics ``S`` of one design, additive over groups."""

    def __init__(self, name, design_key, value, inputs):
        self.name, self.design_key, self.value, self.inputs = name, design_key, value, inputs

    def evaluate(self, W, cache):
        per = [cache.group_stats(self.design_key, W, g) for g in range(self.inputs.n_groups)]
        return np.stack([self.value(s) for s in per], axis=1), self.value(sum(per))


class AUCMetric(GroupMetric):
    """AUC of scores per group and overall, directly on the rows: with the negatives' weights cumulated in score
    order, a positive of weight w_i wins w_i (N_{<s_i} + N_{=s_i} / 2), the mean of the cumulated negative
    weight below and up to its score (ties count 1/2)."""

    name = "auc"

    def __init__(self, inputs):
        self.inputs = inputs
        self.sets = [self._prepare(np.arange(r.start, r.stop)) for r in inputs.rows]
        self.all = self._prepare(np.arange(inputs.n))

    def _prepare(self, rows):
        s, pos = self.inputs.scores[rows], self.inputs.y_pos[rows]
        order = np.argsort(s[~pos], kind="stable")
        neg_sorted = s[~pos][order]
        below = np.searchsorted(neg_sorted, s[pos], side="left")
        upto = np.searchsorted(neg_sorted, s[pos], side="right")
        return rows[~pos][order], rows[pos], below, upto, bool(np.array_equal(below, upto))

    @staticmethod
    def _auc(W, prepared):
        neg_rows, pos_rows, below, upto, no_ties = prepared
        Wp = W[pos_rows]
        C = np.zeros((neg_rows.size + 1, W.shape[1]))
        np.cumsum(W[neg_rows], axis=0, out=C[1:])
        tied = 0.0 if no_ties else C[upto] - C[below]
        return mann_whitney(Wp, C[below], tied, C[-1], 0.5, axis=0)

    def evaluate(self, W, cache):
        by = np.stack([self._auc(W, p) for p in self.sets], axis=1)
        return by, self._auc(W, self.all)


class KSMetric(GroupMetric):
    """sup_t |F_g(t) - F(t)| between each group's weighted CDF of the predictions and the overall one (exact:
    the sup is attained at a prediction value). Overall it is 0 by definition."""

    name = "ks"

    def __init__(self, inputs, global_levels, local_levels):
        self.inputs = inputs
        # position in each group's levels of every global level: F_g(t_j) = cum_g[pos_j - 1] (0 when pos_j = 0)
        self.pos = [np.searchsorted(lv, global_levels, side="right") for lv in local_levels]

    def evaluate(self, W, cache):
        tot = cache.overall_stats("pred_levels", W)
        F = ratio(np.cumsum(tot, axis=1), tot.sum(axis=1, keepdims=True))
        by = []
        for g in range(self.inputs.n_groups):
            s = cache.group_stats("pred_levels", W, g)
            cum = ratio(np.cumsum(s, axis=1), s.sum(axis=1, keepdims=True))
            Fg = np.concatenate([np.zeros((cum.shape[0], 1)), cum], axis=1)[:, self.pos[g]]
            by.append(np.max(np.abs(Fg - F), axis=1))
        return np.stack(by, axis=1), np.zeros(W.shape[1])


class DistributionGapMetric(GroupMetric):
    """Gaps between each group's and the overall distribution of a randomized predictor's outputs, from the
    weighted means of per-row columns ``[1, c_i1, ..., c_ik]`` (design ``design_key``): ``ks`` compares the CDFs
    (c = cumulated probabilities; the sup over t of two step functions with jumps at the levels is attained at a
    level), ``pmf`` averages |pmf_g(l) - pmf(l)| over the levels (c = the probabilities; Chzhen, Hebiri, Taturyan
    2024, eq. (2)). Overall it is 0 by definition."""

    def __init__(self, name, design_key, reduce, inputs):
        self.name, self.design_key, self.reduce, self.inputs = name, design_key, reduce, inputs

    def evaluate(self, W, cache):
        per = [cache.group_stats(self.design_key, W, g) for g in range(self.inputs.n_groups)]
        tot = sum(per)
        F = ratio(tot[:, 1:], tot[:, :1])
        by = [self.reduce(np.abs(ratio(s[:, 1:], s[:, :1]) - F), axis=1) for s in per]
        return np.stack(by, axis=1), np.zeros(W.shape[1])


class CallableMetric(GroupMetric):
    """A user's metric ``f(y_true, y_pred, sample_weight=...)``, called per group and per draw (rows of zero
    weight left out, so a draw's call sees the rows drawn, weighted by their multiplicity)."""

    def __init__(self, name, fn, inputs, first, second):
        self.name, self.fn, self.inputs, self.first, self.second = name, fn, inputs, first, second

    def _call(self, rows, w):
        keep = rows[w > 0]
        a = None if self.first is None else self.first[keep]
        protocol = ("a metric is called as f(y_true, y_pred, sample_weight=w) and returns one number (scikit-learn's "
                    "metrics do)")
        try:
            value = self.fn(a, self.second[keep], sample_weight=w[w > 0])
        except TypeError as exc:
            raise OptionError(f"the metric {self.name!r} could not be called: {exc}; {protocol}") from exc
        if not (is_real(value) or isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "biuf"):
            raise OptionError(f"the metric {self.name!r} returned {type(value).__name__} "
                              f"{np.shape(value) if np.ndim(value) else repr(value)}, not one number; {protocol}")
        return float(value)

    def evaluate(self, W, cache):
        B, G = W.shape[1], self.inputs.n_groups
        by = np.empty((B, G))
        overall = np.empty(B)
        everyone = np.arange(self.inputs.n)
        for b in range(B):
            for g, rows in enumerate(self.inputs.rows):
                by[b, g] = self._call(everyone[rows], W[rows, b])
            overall[b] = self._call(everyone, W[:, b])
        return by, overall


class StatsCache:
    """The statistics of each design for the current weight matrix, computed once and shared by the metrics."""

    def __init__(self, designs, inputs):
        self.designs, self.inputs = designs, inputs
        self._group, self._overall = {}, {}

    def group_stats(self, key, W, g):
        if (key, g) not in self._group:
            self._group[key, g] = self.designs[key].stats(W[self.inputs.rows[g]], g)
        return self._group[key, g]

    def overall_stats(self, key, W):
        if key not in self._overall:
            self._overall[key] = self.designs[key].stats(W)
        return self._overall[key]


def build(inputs: Inputs, names, custom: dict):
    """The designs and metrics of the names ``names`` (built-in) and ``custom`` (name -> callable)."""
    designs, metrics = {}, []
    for name in names:
        if name in FROM_CONFUSION:
            if "confusion" not in designs:
                yp = inputs.pred_pos.astype(np.intp)
                yt = inputs.y_pos.astype(np.intp) if inputs.y_pos is not None else np.zeros_like(yp)
                designs["confusion"] = Design(inputs, codes=2 * yt + yp, k=4)
            metrics.append(AdditiveMetric(name, "confusion", FROM_CONFUSION[name], inputs))
        elif name in ("mse", "mae"):
            if "errors" not in designs and inputs.proba is not None:      # expected errors, pi integrated out
                e = inputs.levels[None, :] - inputs.y_true[:, None]
                designs["errors"] = Design(inputs, dense=np.column_stack(
                    [np.ones(inputs.n), np.einsum("il,il->i", inputs.proba, e * e),
                     np.einsum("il,il->i", inputs.proba, np.abs(e))]))
            elif "errors" not in designs:
                e = inputs.y_pred - inputs.y_true
                designs["errors"] = Design(inputs, dense=np.column_stack([np.ones(inputs.n), e * e, np.abs(e)]))
            col = 1 if name == "mse" else 2
            metrics.append(AdditiveMetric(name, "errors", lambda s, c=col: ratio(s[:, c], s[:, 0]), inputs))
        elif name == "auc":
            metrics.append(AUCMetric(inputs))
        elif name == "ks" and inputs.proba is not None:
            cdf = np.cumsum(inputs.proba, axis=1)                   # F(t) at every level
            designs["proba_cdf"] = Design(inputs, dense=np.column_stack([np.ones(inputs.n), cdf]))
            metrics.append(DistributionGapMetric("ks", "proba_cdf", np.max, inputs))
        elif name == "pmf":
            designs["proba"] = Design(inputs, dense=np.column_stack([np.ones(inputs.n), inputs.proba]))
            metrics.append(DistributionGapMetric("pmf", "proba", np.mean, inputs))
        elif name == "ks":
            levels, codes, k, local, local_levels = _levels(inputs.y_pred, inputs)
            designs["pred_levels"] = Design(inputs, codes=codes, k=k, local=local)
            metrics.append(KSMetric(inputs, levels, local_levels))
        else:
            raise KeyError(name)
    for name, (fn, first, second) in custom.items():
        metrics.append(CallableMetric(name, fn, inputs, first, second))
    return designs, metrics


def evaluate(metrics, designs, inputs, W):
    """(by group ``(B, G, M)``, overall ``(B, M)``) of the M metrics for the weight matrix ``W`` ``(n, B)``."""
    cache = StatsCache(designs, inputs)
    out = [k.evaluate(W, cache) for k in metrics]
    return np.stack([o[0] for o in out], axis=2), np.stack([o[1] for o in out], axis=1)


def bootstrap_counts(rng, rows, n, draws):
    """``(n, draws)`` multiplicities of a bootstrap stratified by group (``rows``: one slice per group): each
    group's rows are drawn with replacement, as many as the group has (a multinomial draw, through uniform
    indices and bincount)."""
    C = np.empty((n, draws))
    for r in rows:
        size = r.stop - r.start
        if size == 0:
            continue
        idx = rng.integers(0, size, size=(draws, size)) * draws
        idx += np.arange(draws)[:, None]
        C[r] = np.bincount(idx.ravel(), minlength=size * draws).reshape(size, draws)
    return C
