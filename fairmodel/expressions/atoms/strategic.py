"""The atoms of strategic classification robust to Wasserstein shifts (Maheshwari, Chiu, Mazumdar, Sastry,
Ratliff, AISTATS 2022, §5): ``fm.strategic_score`` (the score after the agents' best response, Lemma 5.2) and
``fm.wasserstein_worst_case`` (the worst-case risk over a type-1 Wasserstein ball, Theorem 5.3, corrected). The
model, the saddle function and their corrections are documented with their numerics in
:mod:`fairmodel.oracles.strategic`.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...data.dataset import Dataset
from ...errors import DataError, ExpressionTypeError, ModelError
from ...oracles.strategic import (
    WDRSC,
    ChunkedRows,
    _check_nonneg,
    binary_labels,
    strategic_mask,
    strategic_scores,
    strategic_scores_vjp,
)
from ...utilities import display
from ..core import Expr
from ..variables import LinearScore, Weights, define_rows
from .losses import LogisticLoss, Loss


# ---------------------------------------------------------------------------------------------------
# DSL atoms
# ---------------------------------------------------------------------------------------------------
class StrategicScore(Expr):
    """Per-sample score <b_i(w), w> on the data shifted by the agents' best response (Lemma 5.2).

    Convex in w: ``x_i . w + zeta ||M w||^2`` for y_i = -1 (M = diag of the strategic-feature mask),
    ``x_i . w`` for y_i = +1.
    """

    kind = "samples"
    own_smooth = True          # x_i . w + zeta ||M w||^2: a quadratic of w

    def __init__(self, data: Dataset, w: Weights, mask: np.ndarray, zeta: float):
        self.data, self.w, self.mask, self.zeta = data, w, mask, zeta
        self.y = binary_labels(data.y)
        self.args = (w,)
        self.size = data.n_samples

    @property
    def curvature(self):
        return "convex" if self.zeta > 0 and self.mask.any() else "affine"

    def _rows(self, env):
        data = self.data
        if env.rows is None:      # chunked data: X theta by a pass
            return (ChunkedRows(data) if data.is_chunked else data.X), self.y < 0
        return (data.rows(env.rows) if data.is_chunked else data.X[env.rows]), self.y[env.rows] < 0

    def _numeric(self, env):
        X, negative = self._rows(env)
        return strategic_scores(env[self.w], X, negative, self.zeta, self.mask)

    def backprop(self, env, upstream, grads):
        X, negative = self._rows(env)
        self.w.backprop(env, strategic_scores_vjp(env[self.w], X, negative, self.zeta, self.mask, upstream), grads)

    def render(self, n):
        define_rows(n, self.data)
        w = self.w.render(n)
        n.define("b_i", f"b_i({self.w.name}) = x_i + zeta M {self.w.name} for y_i = -1, x_i for y_i = +1: the "
                        f"agent's best response (Lemma 5.2 of Maheshwari et al. 2022), zeta = {self.zeta:g}, M the "
                        f"diagonal mask of the {int(self.mask.sum())} strategic features",
                 f"$b_i({w}) = x_i + \\zeta M {w}$ for $y_i = -1$, $x_i$ for $y_i = +1$: the agent's best response "
                 f"(Lemma~5.2 of Maheshwari et al. 2022), $\\zeta = {n.number(self.zeta)}$, $M$ the diagonal mask of "
                 f"the {int(self.mask.sum())} strategic features")
        return n.pick(f"<b_i({w}), {w}>", f"\\langle b_i({w}), {w}\\rangle")


def strategic_score(data: Dataset, w: Weights, strategic_features=None, zeta: float = 0.05) -> StrategicScore:
    """The score of ``w`` on the data after the agents' best response (Lemma 5.2).

    Agents with label -1 move their ``strategic_features`` (names, indices or a boolean mask of length
    ``data.n_features``; none means non-strategic) by ``zeta * w`` restricted to those features, the best
    response to a quadratic cost ||x - x_i||^2 / (2 zeta) (eq. (8)-(9)). Labels come from ``data.y``
    ({-1, +1} or {0, 1}).
    """
    if not isinstance(data, Dataset):
        raise ExpressionTypeError(f"strategic_score needs a fairmodel.Dataset; got {type(data).__name__}")
    if not isinstance(w, Weights) or w.n_outputs is not None:
        raise ExpressionTypeError("strategic_score needs a vector of weights fm.Weights(data.n_features)")
    if w.n_features != data.n_features:
        raise ModelError(f"Weights has {w.n_features} features but the data has {data.n_features}")
    if w.intercept:
        raise ModelError("strategic_score does not support an intercept (the Wasserstein transport moves "
                         "features only); center the features or add a constant column instead")
    if data.y is None:
        raise DataError("strategic_score needs labels (data.y): only agents labelled -1 move")
    mask = strategic_mask(strategic_features, list(data.feature_names), data.n_features)
    zeta = _check_nonneg(zeta, "zeta (the strategic power)", strict=False)
    return StrategicScore(data, w, mask, zeta)


class WassersteinWorstCase(Expr):
    """sup over P in the Wasserstein ball of radius delta of E_P[loss] (Theorem 5.3, corrected).

    The value is computed exactly at any w: min over alpha of the closed form E2
    (:meth:`WDRSC.worst_case_risk`). Built by :func:`wasserstein_worst_case`.
    """

    def __init__(self, loss: LogisticLoss, radius: float, label_cost: float, variant: str,
                 alpha_max: float | None):
        score = loss.score
        self.loss, self.args = loss, (loss,)
        self.w = score.w
        self.data = score.data
        if isinstance(score, StrategicScore):
            mask, zeta = score.mask, score.zeta
        else:
            mask, zeta = np.zeros(self.data.n_features, dtype=bool), 0.0
        if not np.array_equal(loss.y, binary_labels(self.data.y)):
            raise ModelError("the labels of the loss must be the data's labels (data.y): the strategic response "
                             "and the label flips of the ambiguity set depend on them")
        self.model = WDRSC(self.data if self.data.is_chunked else self.data.X, loss.y, mask, zeta, radius,
                           label_cost, variant, alpha_max,
                           theta_radius=self.w.radius, sample_weight=loss.sample_weight)
        self.radius, self.label_cost, self.variant = self.model.delta, self.model.kappa, variant

    @property
    def curvature(self):
        return "convex"

    def _numeric(self, env):
        if env.rows is not None:
            raise ModelError("the worst-case risk is defined on the full data only (no minibatch value)")
        return self.model.worst_case_risk(env[self.w])[0]

    def render(self, n):
        w = self.w.render(n)
        variant = " (the paper's literal eq. (7))" if self.variant == "paper" else " (Theorem 5.3, corrected)"
        n.define("W(P, Q)", f"W(P, Q): the type-1 Wasserstein distance with the transport cost ||x - x'|| + 2 kappa "
                            f"1[y != y'] (a label flip costs 2 kappa = {2 * self.label_cost:g}); "
                            f"P_n({self.w.name}) the empirical distribution after the agents' response{variant}",
                 f"$W(P, Q)$: the type-1 Wasserstein distance with the transport cost $\\|x - x'\\| + 2\\kappa\\, "
                 f"1[y \\ne y']$ (a label flip costs $2\\kappa = {n.number(2 * self.label_cost)}$); $\\hat P_n({w})$ "
                 f"the empirical distribution after the agents' response{display.latex_text(variant)}")
        radius = n.number(self.radius)
        body = self.loss.render(n)
        return n.pick(f"sup_(P: W(P, P_n({w})) <= {radius}) E_P[{body}]",
                      f"\\sup_{{P:\\, W(P, \\hat P_n({w})) \\le {radius}}} \\mathbb{{E}}_{{P}}\\left[{body}\\right]")


def wasserstein_worst_case(loss, radius: float = 0.1, label_cost: float = 0.5, *, variant: str = "corrected",
                           alpha_max: float | None = None) -> WassersteinWorstCase:
    """The worst-case expected ``loss`` over a type-1 Wasserstein ball around the (strategically shifted)
    empirical distribution (Theorem 5.3, corrected).

    loss : ``fm.logistic_loss(score, data.y)`` with ``score = fm.strategic_score(...)`` or ``data.score(w)``
        (non-strategic DRO). With ``fm.logistic_loss(..., sample_weight=sw)`` the ball is centered at the
        weighted empirical distribution (mass sw_i / sum sw on row i). Only the logistic loss has the GLM form phi(z) - c y z with phi + c id
        non-decreasing that Theorem 5.3 needs.
    radius : delta > 0, the transport budget. label_cost : kappa > 0 (flipping a +1 label costs 2 kappa).
    variant : ``"corrected"`` (default) or ``"paper"``, the literal eq. (7), which is unbounded below when
        radius < kappa n_-/n (refused) and warns otherwise.
    alpha_max : the bound on the dual variable alpha (the cone of Theorem 5.3 is unbounded, Theorem 4.1 needs
        compact sets); default log(2)/delta, provably above
        the optimum (see :class:`WDRSC`).
    """
    if not isinstance(loss, Loss):
        raise ExpressionTypeError(f"wasserstein_worst_case needs a per-sample loss such as fm.logistic_loss(...); "
                                  f"got {loss!r}")
    if not isinstance(loss, LogisticLoss):
        raise ModelError(f"wasserstein_worst_case supports the logistic loss only: Theorem 5.3 needs a loss "
                         f"phi(z) - c y z with phi convex, smooth, Lipschitz and phi + c id non-decreasing; "
                         f"{loss.symbol} is not of that form (e.g. the squared loss has psi(z) = z^2/2 + z, not "
                         f"monotone)")
    if not isinstance(loss.score, (StrategicScore, LinearScore)):
        raise ModelError(f"the loss must be of fm.strategic_score(...) or data.score(w); got {loss.score}")
    if isinstance(loss.score, LinearScore) and loss.score.w.intercept:
        raise ModelError("wasserstein_worst_case does not support an intercept; center the features instead")
    if variant == "paper":
        warnings.warn("variant='paper' implements the paper's literal eq. (7), which subtracts kappa*alpha for "
                      "every sample: it is unbounded below when radius < kappa n_-/n and can fall below the "
                      "nominal risk; the corrected variant is the default", stacklevel=2)
    return WassersteinWorstCase(loss, radius, label_cost, variant, alpha_max)
