"""scikit-learn estimator for group DRO and MERO (logistic loss, linear model)."""
from __future__ import annotations

import numpy as np
from scipy.special import expit

import fairmodel as fm

from ._base import BACKENDS, FairLinearClassifier, check_choice, solve_problem


class GroupDROClassifier(FairLinearClassifier):
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

    ``fit(X, y, sensitive_features=None)``: without sensitive features every row is one group and the
    model is plain logistic regression on the ball (ERM).
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

    def fit(self, X, y, sensitive_features=None):
        check_choice("objective", self.objective, ("gdro", "mero"))
        check_choice("backend", self.backend, BACKENDS)
        data = self._validate_fit(X, y, sensitive_features)
        w = fm.Weights(data.n_features, radius=self.radius, intercept=self.fit_intercept)
        loss = fm.logistic_loss(data.score(w), data.y)
        if data.has_groups and data.n_groups >= 2:
            risks = fm.group_mean(loss, data.groups)
            offsets = fm.group_optimal(risks) if self.objective == "mero" else 0.0
            objective = fm.max(risks - offsets) if self.objective == "mero" else fm.max(risks)
            self.groups_ = list(data.groups.names)
        else:
            objective = fm.mean(loss)
            self.groups_ = []
        prob = fm.Problem(fm.Minimize(objective))
        self._store(solve_problem(self, prob, self.backend, self.method), w)
        return self

    def predict_proba(self, X):
        p = expit(self.decision_function(X))
        return np.column_stack([1 - p, p])
