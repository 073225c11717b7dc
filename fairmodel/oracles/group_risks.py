"""Group risks of a linear model: the object the group-DRO exact programs, solvers and judge share.

``R_i(theta) = (1/n_i) sum_{j in group i} phi(x_j . theta, y_j)`` for a per-sample loss ``phi`` convex in
the score (eq. (2) of the group-DRO paper), or with sample weights s_j the weighted group means
``R_i(theta) = sum_{j in i} s_j phi_j / sum_{j in i} s_j = (1/n_i) sum_{j in i} u_j phi_j`` with u_j = s_j n_i / S_i
(the weights relative to their group's mean). One full pass gives every group risk and the q-weighted
gradient ``sum_i q_i grad R_i`` with one product ``X @ theta`` and one ``X.T @ v``. The minibatches of the stochastic
methods draw a group's rows with probability u_j / n_i, so the same per-sample estimates stay unbiased.
"""
from __future__ import annotations

import copy
from functools import partial

import numpy as np

from ..data.dask_dataset import concatenate_rows
from ..data.dataset import Groups
from ..data.groups import relative_weights
from ..data.passes import ordered_sum, row_parts, row_squares, row_sums
from ..errors import DataError
from .domains import check_in_ball, project_ball
from .metric import second_moment
from .losses import Kernel, LinearModelLoss, score_gradient, with_intercept


def _times(u, values):
    """``values`` times the rows' relative weights ``u`` (None: unweighted rows)."""
    return values if u is None else u * values


class _RiskPass:
    """One chunk's part of the operator (16): (sum of losses per group, its q-weighted gradient, the scores or
    None when ``keep_scores`` is false); ``u``: the chunk's relative sample weights (None: unweighted)."""

    def __init__(self, kernel, intercept, theta, weight, m, keep_scores=True):
        self.kernel, self.intercept, self.theta, self.weight, self.m = kernel, intercept, theta, weight, m
        self.keep_scores = keep_scores

    def __call__(self, batch, y, codes, u=None):
        model = LinearModelLoss(self.kernel, batch.X, y, self.intercept, drop_zero_weights=False)
        z = model.scores(self.theta)
        totals = np.bincount(codes, weights=_times(u, np.atleast_1d(self.kernel.phi(z, y))), minlength=self.m)
        grad = model.pullback(score_gradient(self.kernel, z, y, _times(u, self.weight[codes])))
        return totals, grad, z if self.keep_scores else None


class _NewtonPass:
    """One chunk's part of (f, grad f, Hessian f) for f = sum_j s_j phi(x_j . theta, y_j) (``value_only``: f)."""

    def __init__(self, kernel, intercept, theta, weight, value_only):
        self.kernel, self.intercept, self.theta, self.weight = kernel, intercept, theta, weight
        self.value_only = value_only

    def __call__(self, batch, y, codes, u=None):
        model = LinearModelLoss(self.kernel, batch.X, y, self.intercept, sample_weight=_times(u, self.weight[codes]))
        return model.value(self.theta) if self.value_only else model.value_gradient_hessian(self.theta)


class _GroupNewtonPass:
    """One chunk's part of (f_g, grad f_g, Hessian f_g) (or f_g alone) for several groups g at once, each at its own
    theta, f_g = R_g = (1/n_g) sum_{j in g} phi(x_j . theta_g, y_j): one read serves every group's Newton step."""

    def __init__(self, kernel, intercept, requests, sizes):
        self.kernel, self.intercept, self.requests, self.sizes = kernel, intercept, requests, sizes

    def __call__(self, batch, y, codes, u=None):
        out = {}
        for g, (theta, value_only) in self.requests.items():
            mask = codes == g
            model = LinearModelLoss(self.kernel, batch.X[mask], y[mask], self.intercept,
                                    sample_weight=_times(None if u is None else u[mask],
                                                         np.full(int(mask.sum()), 1.0 / self.sizes[g])))
            out[g] = model.value(theta) if value_only else model.value_gradient_hessian(theta)
        return out


class _JudgePass:
    """One chunk's (sum of losses per group, number of rows per group with sign(score) == label or None), each
    row counted with its relative sample weight ``u`` when there are weights."""

    def __init__(self, kernel, intercept, theta, m, accuracy):
        self.kernel, self.intercept, self.theta, self.m, self.accuracy = kernel, intercept, theta, m, accuracy

    def __call__(self, batch, y, codes, u=None):
        z = _scores(self.intercept, self.theta, batch)
        totals = np.bincount(codes, weights=_times(u, np.atleast_1d(self.kernel.phi(z, y))), minlength=self.m)
        if not self.accuracy:
            return totals, None
        return totals, np.bincount(codes, weights=_times(u, (np.sign(z) == y).astype(float)), minlength=self.m)


def _scores(intercept, theta, batch):
    return batch.X @ theta[:-1] + theta[-1] if intercept else batch.X @ theta


def _row_norms(intercept, batch):
    """||x_j||^2 of the design rows (plus 1 for the intercept's column of ones)."""
    return row_squares(batch.X) + (1.0 if intercept else 0.0)


def _row_norm_summary(intercept, batch):
    r = _row_norms(intercept, batch)
    return float(r.sum()), float(r.max()), r.size


class GroupRisks:
    """Per-group empirical risks of a pointwise loss ``kernel`` of the linear score x . theta on a data source;
    m = 1 for a plain mean (ERM).

    The parameters are plain numbers: ``shape`` of theta ((d,) or (d, C) for a matrix of weights), ``intercept``
    (the design has a ones column), ``radius`` of the ball ||theta|| <= radius (None: R^shape) and the ``name``
    results store theta under. ``data`` is a data source (``X``, ``chunks()``, ``sampler()``, ``take()``), ``y``
    the validated labels aligned with its rows, ``groups`` a :class:`~fairmodel.data.Groups`, ``sample_weight``
    nonnegative weights of the rows (None: every row weighs 1), each group's risk then their weighted mean.
    """

    def __init__(self, kernel: type[Kernel], data, y: np.ndarray, groups: Groups, shape: tuple, intercept: bool,
                 radius: float | None, name: str = "w", sample_weight=None):
        self.loss = kernel
        self.shape, self.intercept, self.radius, self.name = tuple(shape), bool(intercept), radius, name
        self.data = data                                     # the data source: chunks() and sampler()
        self.y = y                                           # validated labels of the loss, aligned with rows
        self.groups = groups
        self.codes = groups.codes
        self.names = tuple(groups.names)
        self.m = len(self.names)
        self.sizes = groups.sizes.astype(float)
        self.u, self.weight_totals = None, self.sizes      # relative weights u_j of the rows; S_i of every group
        if sample_weight is not None:
            self.u, _, self.weight_totals = relative_weights(sample_weight, self.codes)
            if np.any((self.sizes > 0) & (self.weight_totals <= 0)):
                raise DataError("a group's sample weights are all zero, so its weighted risk is undefined")
        self._index = None
        self._X = None

    def _per_row(self) -> tuple:
        """The per-row arrays every pass reads with the features: labels, group codes and the relative weights."""
        return (self.y, self.codes) if self.u is None else (self.y, self.codes, self.u)

    @property
    def X(self) -> np.ndarray:
        """The in-memory design matrix (X with a ones column for an intercept): for exact solvers and constants.
        Chunked (Dask-backed) data refuse, naming the stochastic backend and ``subsample``."""
        if self._X is None:
            self._X = self.design(self.data.in_memory_X("the exact group-DRO programs"))
        return self._X

    @property
    def index(self) -> list[np.ndarray]:
        """Row indices of each group (computed on first use: n integers)."""
        if self._index is None:
            self._index = self.groups.indices()
        return self._index

    @property
    def n_samples(self) -> int:
        return self.data.n_samples

    def design(self, X: np.ndarray) -> np.ndarray:
        return with_intercept(X, self.intercept)

    def sampler(self, batch_size: int, rng, prefetch: bool = True) -> "object":
        """Per-group minibatches (eq. (20) of the group-DRO paper): ``batch_size`` rows from every group,
        uniform within the group (in proportion to the sample weights when there are), with replacement, group by
        group, through the data source's sampler (on chunked data, ``prefetch`` gathers the next buffer of draws in
        the background)."""
        if self.data.is_chunked:
            return self.data.sampler("per_group", batch_size, seed=rng, groups=self.groups, prefetch=prefetch,
                                     weights=self.u)
        return self.data.sampler("per_group", batch_size, seed=rng, groups=self.groups, weights=self.u)

    def batch(self, batch) -> tuple[np.ndarray, np.ndarray]:
        """(design, labels) of a :class:`fairmodel.data.Batch`."""
        return self.design(batch.X), self.y[batch.rows]

    def single_group(self, i: int) -> "GroupRisks":
        """The risk of group i alone, as a one-group problem (MERO stage 1): its rows in memory, or, on chunked
        data, a chunked subset of the same chunks (passes and draws read only the group's rows)."""
        rows = self.index[i]
        out = object.__new__(GroupRisks)
        out.__dict__.update(self.__dict__)
        out.data = self.data.subset(rows) if self.data.is_chunked else self.data.take(rows)
        out.y = self.y[rows]
        out.u = None if self.u is None else self.u[rows]
        out.weight_totals = self.weight_totals[i:i + 1]
        out.groups = Groups(np.zeros(rows.size, dtype=np.intp), names=(self.names[i],))
        out.codes, out.names, out.m = out.groups.codes, out.groups.names, 1
        out.sizes, out._index = out.groups.sizes.astype(float), None
        out._X = None if self._X is None else self._X[rows]
        return out

    def with_loss(self, kernel) -> "GroupRisks":
        """The same group risks of another pointwise loss ``kernel`` (e.g. a smoothed hinge)."""
        out = copy.copy(self)
        out.loss = kernel
        return out

    def project(self, theta):
        """Euclidean projection onto the ball ||theta|| <= radius (the identity without a radius)."""
        return project_ball(theta, self.radius)

    def check_start(self, theta, what: str) -> np.ndarray:
        """``theta`` as a finite array of the parameters' shape inside the ball (a start given by the user)."""
        return check_in_ball(theta, self.shape, self.radius, f"{what} for {self.name!r}")

    # -- full passes -------------------------------------------------------------------------------------
    def scores(self, theta, rows=None) -> np.ndarray:
        if self.data.is_chunked:  # one pass over the chunks, or a gather of the rows
            if rows is None:
                return concatenate_rows(row_parts(self.data, partial(_scores, self.intercept, theta)))
            return self.design(self.data.rows(rows)) @ theta
        return (self.X if rows is None else self.X[rows]) @ theta

    def risks(self, theta) -> np.ndarray:
        """The vector of group risks R_i(theta) (eq. (2)), by one pass over the data source."""
        return self.risks_and_grad(theta, np.zeros(self.m), keep_scores=False)[0]

    def risks_and_accuracy(self, theta) -> tuple[np.ndarray, np.ndarray | None]:
        """(R(theta), the group accuracies of sign(score) for binary losses, else None) in one pass over the
        data source (counts of correct rows are integers: their chunk sums are exact)."""
        binary = bool(self.loss.binary)
        totals, correct = row_sums(self.data, _JudgePass(self.loss, self.intercept, theta, self.m, binary),
                                   *self._per_row())
        with np.errstate(invalid="ignore", divide="ignore"):     # a group without rows (a subset): NaN, no warning
            return totals / self.sizes, correct / self.sizes if binary else None

    def risks_and_grad(self, theta, q, chunk: int = 1 << 16,
                       keep_scores: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(R(theta), sum_i q_i grad R_i(theta), scores) in one pass over the data source's chunks (the
        operator (16) at (theta, q)); the scores of every row are returned for the variance-reduced steps
        (None with ``keep_scores=False``: on chunked data, 8 bytes a row less in memory)."""
        weight = np.asarray(q, dtype=float) / self.sizes
        kernel = _RiskPass(self.loss, self.intercept, theta, weight, self.m, keep_scores)
        if not keep_scores:
            totals, grad, _ = row_sums(self.data, kernel, *self._per_row(), size=chunk)
            return totals / self.sizes, grad, None
        parts = row_parts(self.data, kernel, *self._per_row(), size=chunk)
        totals, grad = ordered_sum([p[:2] for p in parts])
        return totals / self.sizes, grad, concatenate_rows([p[2] for p in parts])

    def weighted_value_and_grad(self, theta, q) -> tuple[float, np.ndarray]:
        """f(theta) = sum_i q_i R_i(theta) and its gradient."""
        r, g, _ = self.risks_and_grad(theta, q, keep_scores=False)
        return float(np.dot(q, r)), g

    def sample_weights(self, q) -> np.ndarray:
        """s_j = u_j q_i / n_i for every row j of group i: sum_i q_i R_i = sum_j s_j phi_j."""
        return _times(self.u, (np.asarray(q, dtype=float) / self.sizes)[self.codes])

    def weighted_loss(self, q) -> LinearModelLoss:
        """f = sum_i q_i R_i as a :class:`LinearModelLoss` on the in-memory design (for Newton solves)."""
        return LinearModelLoss(self.loss, self.X, self.y, sample_weight=self.sample_weights(q))

    def weighted_oracle(self, q):
        """theta -> (f, grad f, Hessian of f) for f = sum_i q_i R_i (binary losses with d2phi), for Newton;
        on chunked data every call is one pass over the chunks (a d x d Hessian per chunk, summed)."""
        if not self.data.is_chunked:
            return self.weighted_loss(q).newton_oracle()
        weight = np.asarray(q, dtype=float) / self.sizes

        def fun(theta, value_only=False):
            out = row_sums(self.data, _NewtonPass(self.loss, self.intercept, theta, weight, value_only),
                           *self._per_row())
            return float(out) if value_only else out
        return fun

    def group_newton_oracle(self):
        """{g: (theta_g, value_only)} -> {g: R_g(theta_g) or (R_g, grad R_g, Hessian R_g)} for binary losses with
        d2phi, every request answered by one pass over the data source (the lockstep Newton solves of the group
        optima R*_g of MERO, eq. (4))."""
        def fun(requests):
            return row_sums(self.data, _GroupNewtonPass(self.loss, self.intercept, dict(requests), self.sizes),
                            *self._per_row())
        return fun

    @property
    def has_hessian(self) -> bool:
        return self.loss.d2phi is not None and len(self.shape) == 1

    def second_moment(self, full: bool = False) -> np.ndarray:
        """The design's second moment (:func:`~fairmodel.oracles.metric.second_moment`): the D x D matrix of the rows
        (x, 1) with ``full``, else E[x_j^2] of every column (1 for the intercept's) by one pass."""
        return second_moment(self.data, self.intercept, full)

    def row_norms_squared(self) -> np.ndarray:
        """||x_j||^2 of every design row (one pass over the data source)."""
        return np.concatenate(row_parts(self.data, partial(_row_norms, self.intercept)))

    def row_norm_stats(self) -> tuple[float, float]:
        """(mean, max) of ||x_j||^2 over the design rows, by one pass; on chunked data from per-chunk sums and
        maxima (no O(n) vector in memory)."""
        if not self.data.is_chunked:
            r = self.row_norms_squared()
            return float(r.mean()), float(r.max())
        parts = row_parts(self.data, partial(_row_norm_summary, self.intercept))
        return sum(p[0] for p in parts) / sum(p[2] for p in parts), max(p[1] for p in parts)

    # -- constants of the theory --------------------------------------------------------------------------
    def lipschitz_constants(self) -> tuple[float, float]:
        """(G, L): per-sample Lipschitz and smoothness bounds (Assumption 3.4 of the group-DRO paper) from the data:
        G = max ||x|| times the loss's bound on |phi'| over the scores the domain allows (|z| <= max ||x|| radius),
        L = the loss's bound on phi'' times max ||x||^2 (e.g. logistic: G = max ||x||, L = max ||x||^2 / 4)."""
        xmax = float(np.sqrt(self.row_norm_stats()[1]))
        z_bound = xmax * (self.radius if self.radius is not None else np.inf)
        y_bound = float(np.max(np.abs(self.y)))
        G = xmax * self.loss.dphi_bound(z_bound, y_bound)
        return G, float(self.loss.smoothness(z_bound, y_bound) * xmax ** 2)
