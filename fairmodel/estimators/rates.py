"""scikit-learn estimator: logistic regression whose decisions meet a bound on the gap of the groups' true decision
rates (demographic parity, equal opportunity or equalized odds), with K groups, intersections and sample weights."""
from __future__ import annotations

from ..errors import OptionError
from ..expressions.atoms.fairness import equal_opportunity_gap, equalized_odds_gap, selection_rate_gap
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

GAPS = {"demographic_parity": selection_rate_gap, "equal_opportunity": equal_opportunity_gap,
        "equalized_odds": equalized_odds_gap}


class FairRateClassifier(LogisticProbabilities, FairLinearClassifier):
    """Weighted logistic regression ``sum_i w_i logistic(y_i s_i) / sum_i w_i + alpha ||coef||^2`` whose
    decisions ``s > 0`` have true (0/1) training rates that differ between the groups by at most ``eps``:

    * ``"demographic_parity"``: the selection rates P(s > 0 | group);
    * ``"equal_opportunity"``: the true-positive rates P(s > 0 | y = 1, group) (Hardt, Price, Srebro 2016);
    * ``"equalized_odds"``: the true- and the false-positive rates, each.

    The gap is the largest pairwise difference over the groups (fairlearn's ``*_difference`` metrics), for any
    number of groups; a 2-D ``sensitive_features`` (several columns) makes each distinct row of values a group (the
    intersections). The rates are those of the ramp surrogate of Example B.3 of He, Huang, Yao, Lin 2025 (ramp
    ``width``), a difference-of-convex constraint solved by IDCA on the exact backend, which then lowers the
    surrogate's bound until the true training rates meet ``eps``, and when that stalls (small groups) shifts the
    intercept to decisions that meet it (``fm.selection_rate_gap`` / ``fm.equal_opportunity_gap`` /
    ``fm.equalized_odds_gap`` with ``surrogate="ramp"``). The judge checks the true gap <= eps + 1e-3 on the
    training data and the IDCA certificate; a fit it does not accept (a shifted intercept that meets eps but is not
    certified: ``inaccurate``; a true gap above eps: more ``solver_options={"rate_steps": ...}``, a smaller
    ``width``, or a larger eps) gives a ConvergenceWarning with the numbers and ``status_`` says so.

    Parameters
    ----------
    constraint : "demographic_parity" (default), "equal_opportunity" or "equalized_odds".
    eps : the bound on the true training gap, 0 < eps <= 1.
    alpha : weight of the squared norm of the coefficients (the intercept is not penalized, as in scikit-learn's
        ``LogisticRegression``).
    width : the width of the ramp around the threshold 0 (on the score's scale; standardize X).
    fit_intercept : learn an intercept.
    solver_options : dict of further options for ``Problem.solve`` (e.g. ``{"rate_steps": 12}``).

    ``fit(X, y, sensitive_features=None, sample_weight=None)``: ``sample_weight`` weighs the loss and the rates (a
    group's rate is sum_i w_i 1[s_i > 0] / sum_i w_i over its rows). Without sensitive features the model is plain
    regularized logistic regression. Fitted attributes: ``coef_``, ``intercept_``, ``classes_``, ``groups_`` (the
    group names, tuples for intersections), ``result_`` (its metrics hold the true and ramp rates of every group),
    ``status_``.
    """

    def __init__(self, constraint="demographic_parity", eps=0.05, alpha=1e-4, width=0.5, fit_intercept=True,
                 solver_options=None):
        self.constraint = constraint
        self.eps = eps
        self.alpha = alpha
        self.width = width
        self.fit_intercept = fit_intercept
        self.solver_options = solver_options

    def _check_params(self):
        check_choice(self.constraint, "constraint", tuple(GAPS))
        eps = check_number(self.eps, "eps", low=0.0, high=1.0)
        if eps == 0:
            raise OptionError("eps must be > 0: IDCA needs a strictly feasible start; use a small bound such as "
                              "eps=0.005 (or a constant classifier, whose gap is 0)")
        check_number(self.alpha, "alpha", low=0.0)
        check_number(self.width, "width", low=0.0, strict=True)
        check_common(self)

    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        self._check_params()
        data = self._validate_fit(X, y, sensitive_features)
        w, s, objective, sw = regularized_logistic(self, data, sample_weight)
        self.groups_ = []
        constraints = []
        if data.has_groups:
            self.groups_ = two_groups(data, f"the {self.constraint} constraint")
            gap = GAPS[self.constraint](s, data, sample_weight=sw, surrogate="ramp", width=float(self.width))
            constraints.append((gap <= float(self.eps)).named("gap"))
        result = solve_problem(self, Problem(Minimize(objective), constraints), "exact",
                               use_options=bool(constraints))
        self._store(result, w)
        return self
