"""scikit-learn estimator for group DRO and MERO (logistic loss, linear model)."""
from __future__ import annotations

from .. import expressions as dsl
from ..problem import Minimize, Problem
from ..utilities.validate import check_choice
from ._base import (
    FairLinearClassifier,
    LogisticProbabilities,
    check_common,
    check_sample_weight,
    solve_problem,
)


class GroupDROClassifier(LogisticProbabilities, FairLinearClassifier):
    """Linear logistic classifier minimizing the largest group risk (group DRO) or the largest excess risk
    over each group's own optimum (``objective="mero"``).

    Parameters
    ----------
    objective : "gdro" or "mero".
    radius : radius of the weight ball (the domain of group DRO must be bounded for ALEG's theory).
    fit_intercept : learn an intercept (inside the same ball).
    backend, method : ``"stochastic"`` (ALEG, default) or ``"exact"`` (method "epigraph" or "dual").
    random_state : seed of the stochastic backend.
    solver_options : dict of further options for ``Problem.solve`` (e.g. ``{"epochs": 40}``).

    ``fit(X, y, sensitive_features=None, sample_weight=None)``: without sensitive features every row is one group
    and the model is plain logistic regression on the ball (ERM). ``sample_weight`` makes every group risk a
    weighted mean (``sum_{i in g} w_i loss_i / sum_{i in g} w_i``), for either objective; ALEG then draws a group's
    rows with probabilities proportional to their weights.
    """

    def __init__(self, objective="gdro", radius=5.0, fit_intercept=True, backend="stochastic", method=None,
                 random_state=None, solver_options=None):
        self.objective = objective
        self.radius = radius
        self.fit_intercept = fit_intercept
        self.backend = backend
        self.method = method
        self.random_state = random_state
        self.solver_options = solver_options

    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        check_choice(self.objective, "objective", ("gdro", "mero"))
        check_common(self)
        data = self._validate_fit(X, y, sensitive_features)
        sw = check_sample_weight(sample_weight, data.n_samples)
        w = dsl.Weights(data.n_features, radius=self.radius, intercept=self.fit_intercept)
        loss = dsl.logistic_loss(data.score(w), data.y, sample_weight=sw)     # means weigh the rows by sw
        grouped = data.has_groups and data.n_groups >= 2
        if grouped:
            risks = dsl.group_mean(loss, data.groups)
            offsets = dsl.group_optimal(risks) if self.objective == "mero" else 0.0
            objective = dsl.max(risks - offsets) if self.objective == "mero" else dsl.max(risks)
            self.groups_ = list(data.groups.names)
        else:
            objective = dsl.mean(loss)
            self.groups_ = []
        prob = Problem(Minimize(objective))
        self._store(solve_problem(self, prob, self.backend, self.method), w)
        return self

