"""Pointwise losses phi(z, y), convex in the score z, and the loss of a linear model built on them.

A *kernel* (``Logistic``, ``Hinge``, ``Squared``, ``Exponential``, ``Softmax``, ...) gives ``phi(z, y)``, its
derivative ``dphi`` in z, its second derivative ``d2phi`` (``None`` when the loss has none, e.g. the hinge), and two
facts about the scores |z| <= z_bound and labels |y| <= y_bound a domain allows: ``smoothness(z_bound, y_bound)``, a
bound on d^2 phi / dz^2 there (``inf`` when phi is not smooth; finite on every bounded set of scores for the
exponential loss, whose curvature grows like e^|z|), and ``dphi_bound(z_bound, y_bound)``, a bound on |d phi / dz|
(the Lipschitz constant in the score); its sign and the check of its labels. Every subclass is registered in
``KERNELS`` by its ``name``. :class:`LinearModelLoss` composes a kernel
with a design matrix (an intercept column appended when asked) and sample weights, as scikit-learn's
``LinearModelLoss`` does: value, gradient and Hessian of ``sum_i s_i phi(x_i . theta, y_i)``. Every exact
solver, stochastic method and judge that needs the loss of a linear model calls these.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import sparse
from scipy.special import expit, log_expit, logsumexp, softmax

from ..data.passes import row_parts, row_sums
from ..errors import DataError
from ..utilities.validate import check_vector


def softplus(t):
    """log(1 + e^t), vectorized and overflow-safe."""
    return np.logaddexp(0.0, t)


def binary_labels(y, n: int | None, who: str) -> np.ndarray:
    """Labels as a {-1, +1} float vector ({0, 1} is mapped to {-1, +1}); else a DataError naming ``who``."""
    y = check_vector(y, n, "y")
    if np.all((y == 1.0) | (y == -1.0)):      # elementwise tests: no sorted copy of a large label vector
        return y
    if np.all((y == 0.0) | (y == 1.0)):
        return 2.0 * y - 1.0
    values = np.unique(y)
    raise DataError(f"{who} needs binary labels in {{-1, +1}} (or {{0, 1}}); found values "
                    f"{values[:6].tolist()}{' ...' if values.size > 6 else ''}")


class Kernel:
    """A pointwise loss; subclasses define ``phi``, ``dphi`` and optionally ``d2phi``."""

    name = "loss"
    symbol = "loss"
    d2phi = None
    binary = False
    nonneg = True          # phi >= 0 (every loss here): the sign fact of the loss atoms
    curvature_log_lipschitz = None   # sup |d log phi'' / dz| (None: unknown or unbounded): phi'' changes by at most
                                     # the factor exp(that x |dz|) when the score moves by dz

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        KERNELS.setdefault(cls.name, cls)     # the first class of a name (parametrized variants share it)

    @classmethod
    def check_labels(cls, y, n, n_outputs=None) -> np.ndarray:
        return check_vector(y, n, "y")

    @classmethod
    def dphi_bound(cls, z_bound: float, y_bound: float) -> float:
        """sup |d phi / dz| over scores |z| <= z_bound and labels |y| <= y_bound (the Lipschitz constant in z)."""
        return 1.0

    @classmethod
    def smoothness(cls, z_bound: float, y_bound: float) -> float:
        """sup d^2 phi / dz^2 over scores |z| <= z_bound and labels |y| <= y_bound (the Lipschitz constant of
        d phi / dz); ``inf`` for a loss that is not smooth (a kink: the hinge)."""
        return np.inf

    @classmethod
    def smooth(cls) -> bool:
        """Whether d phi / dz is Lipschitz on every bounded set of scores (a finite ``smoothness`` on a ball)."""
        return bool(np.isfinite(cls.smoothness(1.0, 1.0)))


def constant_smoothness(value: float):
    """The ``smoothness`` of a loss whose curvature is bounded on all scores: ``value`` whatever the bounds."""
    return classmethod(lambda cls, z_bound, y_bound: value)


KERNELS: dict = {}


class Logistic(Kernel):
    """log(1 + exp(-y z)) with labels in {-1, +1} ({0, 1} is mapped to {-1, +1})."""

    name, symbol, binary = "logistic", "logistic", True
    smoothness = constant_smoothness(0.25)
    curvature_log_lipschitz = 1.0    # the third derivative is y p (1 - p)(1 - 2p) with p = expit(y z), at most phi''
                                     # in size for |y| = 1 (logistic regression is self-concordant: Bach 2010)

    @classmethod
    def check_labels(cls, y, n, n_outputs=None):
        return binary_labels(y, n, "logistic_loss")

    @staticmethod
    def phi(z, y):
        return -log_expit(y * z)

    @staticmethod
    def dphi(z, y):
        return -y * expit(-y * z)

    @staticmethod
    def d2phi(z, y):
        p = expit(y * z)
        return p * (1.0 - p)


class Hinge(Kernel):
    """max(0, 1 - y z) with labels in {-1, +1} ({0, 1} is mapped)."""

    name, symbol, binary = "hinge", "hinge", True

    @classmethod
    def check_labels(cls, y, n, n_outputs=None):
        return binary_labels(y, n, "hinge_loss")

    @staticmethod
    def phi(z, y):
        return np.maximum(0.0, 1.0 - y * z)

    @staticmethod
    def dphi(z, y):
        return np.where(y * z < 1.0, -y, 0.0)


class Squared(Kernel):
    """(z - y)^2 for real-valued targets."""

    name, symbol = "squared", "squared"
    smoothness = constant_smoothness(2.0)

    @classmethod
    def dphi_bound(cls, z_bound, y_bound):
        return 2.0 * (z_bound + y_bound)

    @staticmethod
    def phi(z, y):
        return (z - y) ** 2

    @staticmethod
    def dphi(z, y):
        return 2.0 * (z - y)

    @staticmethod
    def d2phi(z, y):
        return np.full_like(z, 2.0)


class Huber(Kernel):
    """(z - y)^2 for |z - y| <= delta and 2 delta |z - y| - delta^2 beyond: the squared loss made robust to
    outliers (Huber 1964; CVXPY's ``huber``). ``Huber.with_delta(delta)`` is the kernel of another delta."""

    name, symbol = "huber", "huber"
    smoothness = constant_smoothness(2.0)
    delta = 1.0

    @classmethod
    def with_delta(cls, delta: float) -> type:
        delta = float(delta)
        if not np.isfinite(delta) or delta <= 0:
            raise DataError(f"the Huber loss needs a positive finite delta; got {delta}")
        if delta == Huber.delta:
            return Huber
        return _HUBER_VARIANTS.setdefault(delta, type(f"Huber_{delta:g}", (Huber,), {"delta": delta}))

    @classmethod
    def dphi_bound(cls, z_bound, y_bound):
        return 2.0 * cls.delta

    @classmethod
    def phi(cls, z, y):
        r = np.abs(z - y)
        return np.where(r <= cls.delta, r * r, 2.0 * cls.delta * r - cls.delta ** 2)

    @classmethod
    def dphi(cls, z, y):
        return 2.0 * np.clip(z - y, -cls.delta, cls.delta)

    @classmethod
    def d2phi(cls, z, y):
        return np.where(np.abs(z - y) <= cls.delta, 2.0, 0.0)


_HUBER_VARIANTS: dict = {}


class SquaredHinge(Kernel):
    """max(0, 1 - y z)^2 with labels in {-1, +1} ({0, 1} is mapped): the smooth hinge of L2-SVMs."""

    name, symbol, binary = "squared_hinge", "squared_hinge", True
    smoothness = constant_smoothness(2.0)

    @classmethod
    def check_labels(cls, y, n, n_outputs=None):
        return binary_labels(y, n, "squared_hinge_loss")

    @classmethod
    def dphi_bound(cls, z_bound, y_bound):
        return 2.0 * (1.0 + z_bound)

    @staticmethod
    def phi(z, y):
        return np.maximum(0.0, 1.0 - y * z) ** 2

    @staticmethod
    def dphi(z, y):
        return -2.0 * y * np.maximum(0.0, 1.0 - y * z)

    @staticmethod
    def d2phi(z, y):
        return np.where(y * z < 1.0, 2.0, 0.0)


def _exp(t: float) -> float:
    """e^t as a float, inf beyond the largest double (no overflow warning)."""
    return math.exp(t) if t < 709.0 else math.inf


class Exponential(Kernel):
    """exp(-y z) with labels in {-1, +1} ({0, 1} is mapped): the loss AdaBoost minimizes (Freund, Schapire 1997;
    Friedman, Hastie, Tibshirani 2000, eq. (10)). Its curvature exp(-y z) is unbounded on the line, bounded by
    exp(z_bound) on scores |z| <= z_bound."""

    name, symbol, binary = "exponential", "exponential", True

    @classmethod
    def check_labels(cls, y, n, n_outputs=None):
        return binary_labels(y, n, "exponential_loss")

    @classmethod
    def dphi_bound(cls, z_bound, y_bound):
        return _exp(z_bound)

    @classmethod
    def smoothness(cls, z_bound, y_bound):
        return _exp(z_bound)

    @staticmethod
    def phi(z, y):
        return np.exp(-y * z)

    @staticmethod
    def dphi(z, y):
        return -y * np.exp(-y * z)

    @staticmethod
    def d2phi(z, y):
        return np.exp(-y * z)


class Softmax(Kernel):
    """Multiclass cross-entropy logsumexp(z) - z[y] of a matrix score (n x C); labels are integers 0..C-1."""

    name, symbol = "softmax", "softmax_ce"
    smoothness = constant_smoothness(0.5)

    @classmethod
    def dphi_bound(cls, z_bound, y_bound):
        return float(np.sqrt(2.0))       # || softmax(z) - e_y ||_2 <= sqrt(2)

    @classmethod
    def check_labels(cls, y, n, n_outputs=None):
        y = check_vector(y, n, "y")
        C = n_outputs
        if np.any(y != np.round(y)) or y.min() < 0 or (C is not None and y.max() >= C):
            raise DataError(f"softmax_loss needs integer class labels in [0, {C}); found range "
                            f"[{y.min():g}, {y.max():g}]")
        return y.astype(np.intp)

    @staticmethod
    def phi(z, y):
        return logsumexp(z, axis=1) - z[np.arange(z.shape[0]), y]

    @staticmethod
    def dphi(z, y):
        p = softmax(z, axis=1)
        p[np.arange(z.shape[0]), y] -= 1.0
        return p


def score_gradient(kernel, z, y, weights) -> np.ndarray:
    """weights_i * phi'(z_i, y_i): the chain-rule coefficients of sum_i weights_i phi(z_i, y_i) with respect to
    the scores (rows of an (n, C) matrix for the softmax loss); the gradient in theta is X' times them."""
    coef = kernel.dphi(z, y)
    return coef * (weights[:, None] if coef.ndim == 2 else weights)


def with_intercept(X: np.ndarray, intercept: bool) -> np.ndarray:
    """The design matrix: X with a column of ones appended when the model has an intercept (stored last)."""
    if not intercept:
        return X
    if sparse.issparse(X):
        return sparse.hstack([X, np.ones((X.shape[0], 1))], format="csr")
    return np.hstack([X, np.ones((X.shape[0], 1))])


class LinearModelLoss:
    """f(theta) = sum_i s_i phi(x_i . w + b, y_i) of a linear model: the one copy of the loss of a linear model, its
    gradient and Hessian, used by every exact solver, stochastic pass and judge (as scikit-learn's
    ``LinearModelLoss``).

    ``kernel`` is a pointwise loss, ``X`` the features, ``intercept`` whether theta ends with an intercept b (added
    to the scores, never appended to X: no copy of the data), ``sample_weight`` the weights s_i (default 1/n: the
    mean loss). Rows with zero weight are dropped once unless ``drop_zero_weights=False`` (chunk passes that keep
    every row's score). Value, gradient and Hessian cost one product with X each.
    """

    def __init__(self, kernel, X: np.ndarray, y: np.ndarray, intercept: bool = False, sample_weight=None,
                 drop_zero_weights: bool = True):
        n = X.shape[0]
        s = np.full(n, 1.0 / n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        if drop_zero_weights:
            keep = np.flatnonzero(s != 0)
            if keep.size < n:
                X, y, s = X[keep], y[keep], s[keep]
        self.kernel, self.X, self.y, self.s, self.intercept = kernel, X, y, s, bool(intercept)

    def scores(self, theta) -> np.ndarray:
        """x_i . w + b for every row (a matrix of scores for a matrix theta)."""
        return self.X @ theta[:-1] + theta[-1] if self.intercept else self.X @ theta

    def pullback(self, coef) -> np.ndarray:
        """design' coef: the gradient in theta of sum_i coef_i . z_i (the chain rule through the scores)."""
        g = self.X.T @ coef
        return np.concatenate([g, np.sum(coef, axis=0, keepdims=True)]) if self.intercept else g

    def curvature(self, d) -> np.ndarray:
        """design' diag(d) design: the Hessian in theta of sum_i phi_i when d_i = s_i phi''(z_i, y_i). A sparse X
        (scipy.sparse, e.g. one-hot features) costs O(sum_i nnz_i^2) instead of O(n d^2)."""
        if sparse.issparse(self.X):
            XtD = sparse.csr_matrix(self.X.multiply(d[:, None])).T
            H = np.asarray((XtD @ self.X).todense())
            b = np.asarray(XtD.sum(axis=1)).ravel()
        elif np.all(d >= 0):        # (D^1/2 X)' (D^1/2 X): BLAS's symmetric rank-k update, half the products
            root = np.sqrt(d)
            XtR = (self.X * root[:, None]).T
            H, b = XtR @ XtR.T, XtR @ root
        else:
            XtD = (self.X * d[:, None]).T
            H, b = XtD @ self.X, XtD.sum(axis=1)
        if not self.intercept:
            return H
        return np.block([[H, b[:, None]], [b[None, :], np.array([[d.sum()]])]])

    def value(self, theta) -> float:
        return float(self.s @ self.kernel.phi(self.scores(theta), self.y))

    def value_and_gradient(self, theta):
        z = self.scores(theta)
        return float(self.s @ self.kernel.phi(z, self.y)), self.pullback(score_gradient(self.kernel, z, self.y, self.s))

    def value_gradient_hessian(self, theta):
        """(f, grad f, Hessian of f): binary and squared losses of a vector of weights (``d2phi``)."""
        z = self.scores(theta)
        value = float(self.s @ self.kernel.phi(z, self.y))
        grad = self.pullback(score_gradient(self.kernel, z, self.y, self.s))
        return value, grad, self.curvature(self.s * self.kernel.d2phi(z, self.y))

    def newton_oracle(self):
        """theta -> (f, grad, Hessian), or f alone with ``value_only=True`` (the projected Newton protocol)."""
        def fun(theta, value_only=False):
            return self.value(theta) if value_only else self.value_gradient_hessian(theta)
        return fun


class _LossPass:
    """One chunk's part of :class:`LossSums`: the chunk's :class:`LinearModelLoss` value (``order`` 0), with its
    gradient (1) and Hessian (2)."""

    def __init__(self, kernel, intercept, theta, weight, order):
        self.kernel, self.intercept, self.theta, self.weight, self.order = kernel, intercept, theta, weight, order

    def __call__(self, batch, y, *weights):
        s = weights[0] if weights else np.full(batch.X.shape[0], self.weight)
        model = LinearModelLoss(self.kernel, batch.X, y, self.intercept, sample_weight=s)
        if self.order < 0:                                  # sum_i s_i (x_i, 1)(x_i, 1)'
            return model.curvature(model.s)
        if self.order == 0:
            return model.value(self.theta)
        return model.value_and_gradient(self.theta) if self.order == 1 else model.value_gradient_hessian(self.theta)


class _ScoreChange:
    """A chunk's largest |x_i . dw + db|."""

    def __init__(self, dw, db):
        self.dw, self.db = dw, db

    def __call__(self, batch) -> float:
        return float(np.max(np.abs(batch.X @ self.dw + self.db), initial=0.0))


def _largest_row_norm(batch) -> float:
    X = batch.X
    squares = np.asarray(X.multiply(X).sum(axis=1)).ravel() if sparse.issparse(X) else np.einsum("ij,ij->i", X, X)
    return float(np.sqrt(squares.max(initial=0.0)))


class LossSums:
    """The :class:`LinearModelLoss` f(theta) = sum_i s_i phi(x_i . w + b, y_i) on a data source's rows, by passes
    (:func:`fairmodel.data.passes.row_sums`: row blocks of NumPy data, the chunks of Dask-backed data): one pass per
    value, gradient or Hessian. Uniform weights are kept as one number, not a vector."""

    def __init__(self, kernel, data, y, intercept: bool, sample_weight):
        s = np.asarray(sample_weight, dtype=float)
        self.kernel, self.data, self.y, self.intercept = kernel, data, y, bool(intercept)
        uniform = s.size > 0 and bool(np.all(s == s[0]))
        self.weight, self.weights = (float(s[0]), ()) if uniform else (None, (s,))
        self._row_norm = None

    def _pass(self, theta, order):
        return row_sums(self.data, _LossPass(self.kernel, self.intercept, np.asarray(theta, dtype=float),
                                             self.weight, order), self.y, *self.weights)

    def value(self, theta) -> float:
        return float(self._pass(theta, 0))

    def value_and_gradient(self, theta):
        return self._pass(theta, 1)

    def value_gradient_hessian(self, theta):
        return self._pass(theta, 2)

    def curvature_drift(self, theta, centre, within: float = 0.0) -> float:
        """A bound D on max_i |log phi''(z_i(theta)) - log phi''(z_i(centre))|, so that the Hessian at ``theta`` lies
        between exp(-D) and exp(D) times the Hessian at ``centre`` (the weights are >= 0): the kernel's
        ``curvature_log_lipschitz`` times the largest change of a score, bounded by max_i ||x_i|| ||dw|| + |db|
        (the largest row norm: one pass, the first time) and, where that bound exceeds ``within`` and the rows are in
        memory, measured (one pass of n d products; on chunked rows a pass costs a read of every chunk, as much as the
        Hessian's pass it would save). ``inf`` for a kernel without that fact."""
        rate = self.kernel.curvature_log_lipschitz
        if rate is None:
            return math.inf
        if self._row_norm is None:
            self._row_norm = max(row_parts(self.data, _largest_row_norm), default=0.0)
        d = np.asarray(theta, dtype=float) - np.asarray(centre, dtype=float)
        dw, db = (d[:-1], float(d[-1])) if self.intercept else (d, 0.0)
        bound = rate * (self._row_norm * float(np.linalg.norm(dw)) + abs(db))
        if bound <= within or self.data.is_chunked:
            return bound
        return rate * max(row_parts(self.data, _ScoreChange(dw, db)), default=0.0)

    def curvature_bound(self, size: int) -> np.ndarray:
        """L = (sup phi'') sum_i s_i (x_i, 1)(x_i, 1)' >= every Hessian of f (one pass; ``size`` the length of
        theta): the kernel's ``smoothness`` bound on phi'' over every score and label (inf for a loss whose
        curvature is unbounded, the exponential loss)."""
        return self.kernel.smoothness(math.inf, math.inf) * self._pass(np.zeros(size), -1)

