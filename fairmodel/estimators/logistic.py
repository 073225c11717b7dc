"""scikit-learn estimator: logistic regression under an error-rate fairness constraint (equal opportunity or
equalized odds, the linear-loss surrogate of Donini et al. 2018), with sample weights."""
from __future__ import annotations

from .. import expressions as dsl
from ..problem import Minimize, Problem
from ..utilities.validate import check_choice, check_number
from ._base import (
    FairLinearClassifier,
    LogisticProbabilities,
    check_common,
    regularized_logistic,
    solve_problem,
    two_groups,
)

CONSTRAINTS = ("equalized_odds", "equal_opportunity", "none")


class FairLogisticRegression(LogisticProbabilities, FairLinearClassifier):
    """Weighted logistic regression ``sum_i w_i logistic(y_i s_i) / sum_i w_i + alpha ||coef||^2`` under the
    equal-opportunity or equalized-odds surrogate of Donini, Oneto, Ben-David, Shawe-Taylor, Pontil (2018):
    the groups' (weighted) mean scores on the positives (and, for equalized odds, on the negatives) differ by at
    most ``bound`` (see ``fm.equal_opportunity_gap`` / ``fm.equalized_odds_gap`` and ``docs/assessment.md``).

    Parameters
    ----------
    constraint : "equalized_odds" (default), "equal_opportunity" or "none".
    bound : the largest allowed spread of the groups' mean scores on each constrained label stratum (>= 0).
    alpha : weight of the squared norm of the coefficients (the intercept is not penalized, as in scikit-learn's
        ``LogisticRegression``).
    fit_intercept : learn an intercept.
    backend, method : ``"exact"`` (default: one CVXPY program) or ``"stochastic"`` (the generic primal-dual
        method of the convex reduction).
    random_state : seed of the stochastic backend.
    solver_options : dict of further options for ``Problem.solve``.

    ``fit(X, y, sensitive_features=None, sample_weight=None)``: without sensitive features (or with
    ``constraint="none"``) the model is plain regularized logistic regression. ``sample_weight`` (e.g. survey
    weights) weighs the loss and the groups' mean scores of the constraint. The constraint holds on the
    surrogate (mean scores), not on the rates themselves: measure the rates with ``fm.assess``.
    """

    def __init__(self, constraint="equalized_odds", bound=0.05, alpha=1e-4, fit_intercept=True, backend="exact",
                 method=None, random_state=None, solver_options=None):
        self.constraint = constraint
        self.bound = bound
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.backend = backend
        self.method = method
        self.random_state = random_state
        self.solver_options = solver_options

    def _check_params(self):
        check_choice(self.constraint, "constraint", CONSTRAINTS)
        check_number(self.bound, "bound", low=0.0)
        check_number(self.alpha, "alpha", low=0.0)
        check_common(self)

    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        self._check_params()
        data = self._validate_fit(X, y, sensitive_features)
        w, s, objective, sw = regularized_logistic(self, data, sample_weight)
        constraints = []
        self.groups_ = list(data.groups.names) if data.has_groups else []
        if data.has_groups and self.constraint != "none":
            two_groups(data, f"the {self.constraint} constraint")
            gap = (dsl.equalized_odds_gap if self.constraint == "equalized_odds" else dsl.equal_opportunity_gap)
            constraints.append(gap(s, data, sample_weight=sw) <= float(self.bound))
        result = solve_problem(self, Problem(Minimize(objective), constraints), self.backend, self.method)
        self._store(result, w)
        return self

