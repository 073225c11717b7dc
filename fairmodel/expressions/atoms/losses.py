"""Per-sample losses phi(z_i, y_i) of a score z: convex in z, so convex in w for an affine score.

Each atom holds a pointwise *kernel* of :mod:`fairmodel.oracles.losses` (the one copy of the formula, its
derivatives and its label check) and the validated labels.

``sample_weight=`` (survey or frequency weights w_i >= 0, not all zero) leaves the per-sample values unchanged and
changes how the aggregates average them, as scikit-learn's and fairlearn's ``sample_weight`` do:
``fm.mean(loss) = sum_i w_i l_i / sum_i w_i`` (over the rows of ``where=``), ``fm.group_mean`` the same within
each group, ``fm.sum(loss) = sum_i w_i l_i``. Integer weights are repeated rows. The aggregate multiplies the
per-sample expression by the data vector ``u_i = w_i |S| / sum_{j in S} w_j`` (S the rows it averages), so the
exact lowering, the stochastic minibatch estimate (the weight multiplies the row's loss: unbiased) and the judge
all see the weighted mean (:mod:`.aggregates`).
"""
from __future__ import annotations

import numpy as np

from ...errors import DataError, ExpressionTypeError, ModelError
from ...oracles.losses import Exponential, Hinge, Huber, Kernel, Logistic, Softmax, Squared, SquaredHinge
from ...utilities.validate import check_sample_weight
from ..core import Expr
from ..score_forms import PerSample, ScoreForm, Term
from ..variables import LinearScore


class Loss(Expr):
    """A per-sample loss ``kernel.phi(z_i, y_i)`` of a per-sample score z."""

    kind = "samples"
    kernel: type[Kernel] = Kernel

    def __init__(self, score: Expr, y, sample_weight=None):
        if not isinstance(score, Expr) or score.kind != "samples":
            raise ExpressionTypeError(f"{type(self).__name__} needs a per-sample score such as data.score(w); "
                                      f"got {score!r}")
        self.score = score
        self.args = (score,)
        self.size = score.size
        n_outputs = score.w.n_outputs if isinstance(score, LinearScore) else None
        if n_outputs is not None and self.kernel is not Softmax:
            raise ModelError(f"{type(self).__name__} takes the score of a vector of weights; {score.w.name} is a "
                             f"matrix (n_outputs={n_outputs}): for several classes use fm.softmax_loss")
        if y is None:
            raise DataError(f"{type(self).__name__} needs labels y, got None: the data set has no labels (build it "
                            f"with a target: fm.Dataset(X, y, groups), from_frame(..., target=...), or [data] target "
                            f"in a problem file)")
        self.y = self.kernel.check_labels(y, score.size, n_outputs)
        self.sample_weight = None if sample_weight is None else \
            check_sample_weight(sample_weight, score.size, "the score")

    # the kernel's facts, read by the oracles and the lowerings through the atom
    @property
    def symbol(self) -> str:
        return self.kernel.symbol

    @property
    def own_smooth(self) -> bool:
        """Whether the loss has a Lipschitz derivative on every bounded set of scores (``Kernel.smooth``)."""
        return self.kernel.smooth()

    def score_form(self):
        """phi(z_i, y_i) of the linear score z itself (a loss of any other expression is not of the form)."""
        inner = self.score.score_form()
        return ScoreForm(inner.score, PerSample([Term(1.0, self.kernel, self.y)])) if inner is not None and \
            inner.bare else None

    own_curvature = "convex"       # convex in the score, in no direction monotone: the score must be affine
    dcp_rule = "a loss is convex in w only of an affine score"

    @property
    def sign(self):
        return "nonneg" if self.kernel.nonneg else "unknown"

    def get_data(self):
        return (self.kernel, self.y, self.sample_weight)

    def copy(self, args):
        return type(self)(args[0], self.y, self.sample_weight)

    def labels(self, env):
        return self.y if env.rows is None else self.y[env.rows]

    def _numeric(self, env):
        return self.kernel.phi(self.score.numeric(env), self.labels(env))

    def backprop(self, env, upstream, grads):
        d = self.kernel.dphi(self.score.numeric(env), self.labels(env))
        up = upstream[:, None] * d if d.ndim == 2 and np.ndim(upstream) == 1 else upstream * d
        self.score.backprop(env, up, grads)

    definition = ("loss(z, y): a loss", "$\\operatorname{loss}(z, y)$: a loss")   # (text, LaTeX) of the formula

    def render(self, n):
        text, tex = self.definition
        n.define(("loss", text), text, tex)
        return n.call(self.symbol, self.score.render(n), "y_i")


class LogisticLoss(Loss):
    """log(1 + exp(-y z)) with labels in {-1, +1} ({0, 1} is mapped to {-1, +1})."""

    kernel = Logistic
    definition = ("logistic(z, y) = log(1 + exp(-y z)): the logistic loss",
                  "$\\operatorname{logistic}(z, y) = \\log(1 + e^{-yz})$: the logistic loss")


class HingeLoss(Loss):
    """max(0, 1 - y z) with labels in {-1, +1} ({0, 1} is mapped)."""

    kernel = Hinge
    definition = ("hinge(z, y) = max(0, 1 - y z): the hinge loss",
                  "$\\operatorname{hinge}(z, y) = \\max(0, 1 - yz)$: the hinge loss")


class SquaredLoss(Loss):
    """(z - y)^2 for real-valued targets."""

    kernel = Squared
    definition = ("squared(z, y) = (z - y)^2: the squared loss",
                  "$\\operatorname{squared}(z, y) = (z - y)^2$: the squared loss")


class HuberLoss(Loss):
    """(z - y)^2 for |z - y| <= delta, 2 delta |z - y| - delta^2 beyond, for real-valued targets."""

    def __init__(self, score, y, sample_weight=None, delta: float = 1.0):
        self.kernel = Huber.with_delta(delta)
        super().__init__(score, y, sample_weight)

    def copy(self, args):
        return HuberLoss(args[0], self.y, self.sample_weight, self.kernel.delta)

    @property
    def definition(self):
        d = f"{self.kernel.delta:g}"
        return (f"{self.symbol}(z, y) = (z - y)^2 if |z - y| <= {d}, else 2 {d} |z - y| - {d}^2: the Huber loss",
                f"$\\operatorname{{huber}}(z, y) = (z - y)^2$ if $|z - y| \\le {d}$, "
                f"else $2 \\cdot {d}\\,|z - y| - {d}^2$: the Huber loss")


class SquaredHingeLoss(Loss):
    """max(0, 1 - y z)^2 with labels in {-1, +1} ({0, 1} is mapped)."""

    kernel = SquaredHinge
    definition = ("squared_hinge(z, y) = max(0, 1 - y z)^2: the squared hinge loss",
                  "$\\operatorname{squared\\_hinge}(z, y) = \\max(0, 1 - yz)^2$: the squared hinge loss")


class ExponentialLoss(Loss):
    """exp(-y z) with labels in {-1, +1} ({0, 1} is mapped)."""

    kernel = Exponential
    definition = ("exponential(z, y) = exp(-y z): the exponential loss",
                  "$\\operatorname{exponential}(z, y) = e^{-y z}$: the exponential loss")


class SoftmaxLoss(Loss):
    """Multiclass cross-entropy logsumexp(z) - z[y] of a matrix score (n x C); labels are integers 0..C-1."""

    kernel = Softmax
    definition = ("softmax_ce(z, y) = log sum_c exp(z_c) - z_y: the multiclass cross-entropy of the scores z in R^C",
                  "$\\operatorname{softmax\\_ce}(z, y) = \\log \\sum_c e^{z_c} - z_y$: the multiclass "
                  "cross-entropy of the scores $z \\in \\mathbb{R}^C$")

    def __init__(self, score, y, sample_weight=None):
        if isinstance(score, LinearScore) and score.w.n_outputs is None:
            raise ModelError("softmax_loss needs a matrix of weights: fm.Weights(d, n_outputs=C)")
        super().__init__(score, y, sample_weight)


def logistic_loss(score: Expr, y, *, sample_weight=None) -> LogisticLoss:
    """Per-sample logistic loss log(1 + exp(-y s)); labels in {-1, +1} or {0, 1}. ``sample_weight``:
    weights of the rows in every mean, group mean and sum of the loss (see the module docstring)."""
    return LogisticLoss(score, y, sample_weight)


def hinge_loss(score: Expr, y, *, sample_weight=None) -> HingeLoss:
    """Per-sample hinge loss max(0, 1 - y s); labels in {-1, +1} or {0, 1}."""
    return HingeLoss(score, y, sample_weight)


def squared_loss(score: Expr, y, *, sample_weight=None) -> SquaredLoss:
    """Per-sample squared loss (s - y)^2."""
    return SquaredLoss(score, y, sample_weight)


def huber_loss(score: Expr, y, *, delta: float = 1.0, sample_weight=None) -> HuberLoss:
    """Per-sample Huber loss of the residual s - y: quadratic up to ``delta``, linear beyond (robust regression)."""
    return HuberLoss(score, y, sample_weight, delta)


def squared_hinge_loss(score: Expr, y, *, sample_weight=None) -> SquaredHingeLoss:
    """Per-sample squared hinge loss max(0, 1 - y s)^2 (smooth); labels in {-1, +1} or {0, 1}."""
    return SquaredHingeLoss(score, y, sample_weight)


def exponential_loss(score: Expr, y, *, sample_weight=None) -> ExponentialLoss:
    """Per-sample exponential loss exp(-y s) (the loss of AdaBoost; smooth on bounded scores); labels in {-1, +1} or
    {0, 1}."""
    return ExponentialLoss(score, y, sample_weight)


def softmax_loss(score: Expr, y, *, sample_weight=None) -> SoftmaxLoss:
    """Per-sample multiclass cross-entropy of a matrix score (Weights with n_outputs=C); labels 0..C-1."""
    return SoftmaxLoss(score, y, sample_weight)


# the public constructors, by the loss's name (``fm.<name>_loss``; problem files' ``loss = "<name>"``)
LOSSES = {f.__name__[: -len("_loss")]: f for f in (logistic_loss, hinge_loss, squared_loss, huber_loss, squared_hinge_loss,
                                                      exponential_loss, softmax_loss)}
__all__ = [f.__name__ for f in LOSSES.values()]
