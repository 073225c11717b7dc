"""scikit-learn estimator for AUC maximization under an AUC-based fairness constraint (linear scores)."""
from __future__ import annotations

import numpy as np

from .. import expressions as dsl
from ..errors import DataError, OptionError
from ..expressions.atoms.auc import auc_gap, auc_loss
from ..metrics.auc import PRESETS
from ..problem import Minimize, Problem
from ..utilities.validate import check_choice, check_number
from ._base import FairLinearClassifier, check_common, check_sample_weight, solve_problem, two_groups


def accuracy_threshold(scores, signed, sample_weight=None) -> float:
    """The threshold t maximizing the (weighted) accuracy of ``score > t`` against labels coded +1/-1.

    Candidates are the midpoints between consecutive distinct scores and one point below the smallest and above
    the largest score; among equally accurate thresholds the smallest wins. Rows of zero weight are left out (as
    if removed). O(n log n).
    """
    scores, signed = np.asarray(scores, dtype=float), np.asarray(signed)
    wts = np.ones(scores.size) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    keep = wts > 0
    scores, signed, wts = scores[keep], signed[keep], wts[keep]
    order = np.argsort(scores, kind="stable")
    s, pos, wts = scores[order], signed[order] > 0, wts[order]
    # k points at or below the threshold: correct = negatives among them + positives above them (their weights)
    neg_below = np.concatenate([[0.0], np.cumsum(np.where(pos, 0.0, wts))])
    pos_above = wts[pos].sum() - np.concatenate([[0.0], np.cumsum(np.where(pos, wts, 0.0))])
    correct = neg_below + pos_above
    valid = np.ones(s.size + 1, dtype=bool)
    valid[1:-1] = s[1:] > s[:-1]            # a threshold can only fall between distinct scores
    k = int(np.argmax(np.where(valid, correct, -1)))
    if k == 0:
        return float(s[0] - 1.0)
    if k == s.size:
        return float(s[-1] + 1.0)
    return float((s[k - 1] + s[k]) / 2)


class FairAUCClassifier(FairLinearClassifier):
    """Linear scorer maximizing the AUC (square surrogate ``auc_loss``) under an AUC-fairness constraint
    ``auc_gap(s, data, kind=kind) <= kappa`` (Yao, Lin, Yang; see ``docs/auc_fairness.md``).

    Parameters
    ----------
    kind : the fairness preset of ``auc_gap``: "intra" (default), "group", "inter", "pos_avg_eq",
        "neg_avg_eq" or "bpsn_bnsp".
    kappa : the budget of the surrogate gap (>= 0); ``None`` for unconstrained AUC maximization.
    radius : radius of the weight ball ``||w|| <= radius``.
    c1, c2 : the square surrogate ell(t) = c1 (t - c2)^2 (defaults as the atoms: 0.5 and 1). The surrogate
        constraint is feasible only when 2 c1 c2^2 < 1 + kappa.
    protected : the group with gamma = +1. ``None``: with exactly two groups, the first in sorted order (the
        library's default for the presets symmetric in the groups: group, inter, intra; for the others the
        choice matters, so name it). Required with more than two groups (all others are gamma = -1).
    backend, method : ``"exact"`` (default: the moment-form QCQP, method "moment"; exact for a linear score and
        the fastest path for a few hundred features at any n, see docs/auc_fairness.md) or ``"stochastic"``
        (method "sfls", the stochastic feasible level-set method).
    random_state : seed of the stochastic backend.
    solver_options : dict of further options for ``Problem.solve`` (e.g. ``{"max_steps": 10**6}``, the cap on the
        SMD steps; the stochastic run stops when the judge's checks pass).

    ``fit(X, y, sensitive_features=None, sample_weight=None)``: without sensitive features (or with
    ``kappa=None``) the model is plain AUC maximization on the ball. Binary labels: ``classes_[1]`` is the
    positive class. ``sample_weight`` weighs every pair (i, j) of the AUC loss and of the fairness gap by
    w_i w_j (integer weights are repeated rows) and the accuracy that chooses ``threshold_``.

    Fitted attributes: ``coef_`` (the AUC score is ``X @ coef_[0]``; no intercept, the AUC ignores shifts),
    ``threshold_`` and ``intercept_ = -threshold_``, ``result_`` (the judged :class:`fairmodel.Result`, with
    the true training AUC and gap in ``result_.metrics``), ``groups_`` (the group names, empty without groups).

    Decisions: an AUC model ranks but has no natural threshold. ``threshold_`` is the threshold of the score
    that maximizes the training accuracy (ties: the smallest), so ``decision_function(X) = X @ coef_[0] -
    threshold_`` (a shift of the score, the same ranking and AUC) and ``predict`` is its sign. There is no
    ``predict_proba``: the square surrogate makes no probability model, and a calibrated probability would
    need another fit (wrap the estimator in ``sklearn.calibration.CalibratedClassifierCV`` if you need one).
    """

    def __init__(self, kind="intra", kappa=0.05, radius=10.0, c1=0.5, c2=1.0, protected=None, backend="exact",
                 method=None, random_state=None, solver_options=None):
        self.kind = kind
        self.kappa = kappa
        self.radius = radius
        self.c1 = c1
        self.c2 = c2
        self.protected = protected
        self.backend = backend
        self.method = method
        self.random_state = random_state
        self.solver_options = solver_options

    def _check_params(self):
        check_choice(self.kind, "kind", tuple(PRESETS))
        check_number(self.kappa, "kappa", low=0.0, allow_none=True)
        check_number(self.radius, "radius", low=0.0, strict=True)
        check_number(self.c1, "c1", low=0.0, strict=True)
        check_number(self.c2, "c2", low=0.0, strict=True)
        check_common(self)

    def _problem(self, data, sw=None):
        w = dsl.Weights(data.n_features, radius=self.radius)
        s = data.score(w)
        constraints = []
        self.groups_ = []
        if data.has_groups:
            self.groups_ = list(data.groups.names)
            if self.kappa is not None:
                two_groups(data, "the AUC-fairness constraint")
                protected = self.protected
                if protected is None and len(self.groups_) > 2:
                    raise OptionError(f"protected must name the protected group when sensitive_features has more "
                                      f"than two groups (every other group is gamma = -1); groups are {self.groups_}")
                protected = self.groups_[0] if protected is None else protected
                if protected not in self.groups_:
                    raise OptionError(f"protected={protected!r} is not a group of sensitive_features; groups are "
                                      f"{self.groups_}")
                gap = auc_gap(s, data, kind=self.kind, protected=protected, c1=self.c1, c2=self.c2, sample_weight=sw)
                constraints.append(gap <= self.kappa)
        return Problem(Minimize(auc_loss(s, data.y, c1=self.c1, c2=self.c2, sample_weight=sw)), constraints), w

    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        self._check_params()
        data = self._validate_fit(X, y, sensitive_features)
        sw = check_sample_weight(sample_weight, data.n_samples)
        if sw is not None and not (sw[data.y > 0].sum() > 0 and sw[data.y < 0].sum() > 0):
            raise ValueError("only one class has a positive total sample_weight; the AUC compares the two classes, "
                             "so the classifier can't train on one class")
        try:
            prob, w = self._problem(data, sw)
        except DataError as exc:          # e.g. a class or a group of zero total weight
            raise ValueError(str(exc)) from None
        result = solve_problem(self, prob, self.backend, self.method)
        self._store(result, w)
        self.threshold_ = accuracy_threshold(data.X @ self.coef_[0], data.y, sw)
        self.intercept_ = np.array([-self.threshold_])
        return self
