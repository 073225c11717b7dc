"""scikit-learn estimator for logistic regression under partial (weak) demographic parity in a rank band."""
from __future__ import annotations

from ..expressions.atoms.partial import partial_dp, weak_partial_dp
from ..errors import OptionError
from ..metrics.partial import check_band
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

CONSTRAINTS = ("pdp", "weak_pdp")


class PartialFairnessClassifier(LogisticProbabilities, FairLinearClassifier):
    """Linear logistic classifier, ``mean(logistic_loss) + alpha ||w||^2``, under partial demographic parity
    ``partial_dp(s, groups, band=band) <= kappa`` or weak partial parity ``weak_partial_dp(s, groups,
    band=band, threshold=threshold) <= kappa`` (He, Huang, Yao, Lin; see ``docs/partial_fairness.md``).

    Parameters
    ----------
    constraint : "pdp" (partial demographic parity (6): the groups' score distributions agree inside the rank
        band; model (13)) or "weak_pdp" (weak partial parity (9) at the decision ``threshold``; model (17)).
    band : (alpha, beta), 0 <= alpha < beta <= 1, the band of within-group ranks (top fractions: the rank of a
        score is the share of its group scoring above it, so (0.7, 1.0) is the bottom 30% of every group).
    kappa : the parity budget in [0, 1] (< 1 for "pdp").
    threshold : the decision threshold of "weak_pdp" on the score (ignored by "pdp"); ``predict`` uses 0.
    alpha : weight of the squared norm of the weights w (the intercept b is not penalized).
    fit_intercept : learn an intercept b.
    backend, method : ``"stochastic"`` (default: IDCA with the switching-subgradient inner solver, method
        "idca"; also "ssg" and "penalty") or ``"exact"`` (IDCA whose subproblems are solved by CVXPY).
    random_state : seed of the random starting points (``solver_options={"starts": k}``); IDCA itself is
        deterministic and full batch.
    solver_options : dict of further options for ``Problem.solve`` (e.g. ``{"outer": 50, "inner": 100}``: a cap
        of 50 outer iterations of 100 SSG iterations; by default the run stops when the judge's checks pass).

    ``fit(X, y, sensitive_features=None, sample_weight=None)``: ``sample_weight`` weighs the loss (the parity
    constraint counts every row once: the partial-parity atoms have no weights). With two or more groups the
    constrained model is solved; without sensitive features the model is the unconstrained regularized logistic
    regression, a convex program that is solved exactly by CVXPY whatever the backend (no stochastic method exists
    for it in fairmodel).

    The constraint is enforced on the ramp surrogate of model (13) / (17) on the training data (the judge's
    level ``result_.constraints["c0"]["value"] <= kappa``); the true empirical parity gap of the fitted scores
    is ``result_.metrics["c0.gap"]`` and can exceed kappa (the surrogate is not the step function).

    Fitted attributes: ``coef_``, ``intercept_``, ``classes_``, ``groups_`` (group names, empty without groups),
    ``result_``. ``predict_proba`` is the logistic link of ``decision_function``.
    """

    def __init__(self, constraint="pdp", band=(0.7, 1.0), kappa=0.1, threshold=0.0, alpha=1e-3, fit_intercept=True,
                 backend="stochastic", method=None, random_state=None, solver_options=None):
        self.constraint = constraint
        self.band = band
        self.kappa = kappa
        self.threshold = threshold
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.backend = backend
        self.method = method
        self.random_state = random_state
        self.solver_options = solver_options

    def _check_params(self):
        check_choice(self.constraint, "constraint", CONSTRAINTS)
        check_band(self.band)
        check_number(self.kappa, "kappa", low=0.0, high=1.0)
        if self.constraint == "pdp" and self.kappa == 1:
            raise OptionError("kappa must be < 1 for constraint='pdp' (partial_dp <= 1 holds for every model); use "
                             "sensitive_features=None for the unconstrained model")
        check_number(self.threshold, "threshold")
        check_number(self.alpha, "alpha", low=0.0)
        check_common(self)

    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        self._check_params()
        data = self._validate_fit(X, y, sensitive_features)
        w, s, objective, sw = regularized_logistic(self, data, sample_weight)
        band = tuple(float(v) for v in self.band)
        self.groups_ = []
        if data.has_groups:
            self.groups_ = two_groups(data, f"the {self.constraint} constraint")
            if self.constraint == "pdp":
                atom = partial_dp(s, data.groups, band=band)
            else:
                atom = weak_partial_dp(s, data.groups, band=band, threshold=float(self.threshold))
            prob = Problem(Minimize(objective), [atom <= float(self.kappa)])
            result = solve_problem(self, prob, self.backend, self.method)
        else:
            result = solve_problem(self, Problem(Minimize(objective)), "exact", use_options=False)
        self._store(result, w)
        return self

