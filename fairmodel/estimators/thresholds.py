"""Group-specific randomized thresholds of any fitted classifier's scores (Hardt, Price, Srebro, "Equality of
Opportunity in Supervised Learning", NeurIPS 2016: predictors derived from a score), solved exactly as an LP and judged.

    post = fm.GroupThresholdPostProcessor(clf, constraint="equalized_odds", eps=0.02, prefit=True)
    post.fit(X, y, sensitive_features=sex)
    post.predict(X_test, sensitive_features=sex_test, random_state=0)
    post.result_.ok, post.result_.constraints, post.result_.certificate

It needs the sensitive feature when predicting: the thresholds are one per group. (The unaware post-processor
``fm.DemographicParityPostProcessor`` predicts from X alone.)
"""
from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..utilities.validate import as_generator, check_bool, check_choice, check_number
from ..data import Groups
from ..errors import DataError, OptionError
from ..exact.thresholds import solve_thresholds
from ..families.base import Check, Evaluation, Solution, constraint_record
from ..results.judge import verdict
from ..oracles.thresholds import (CONSTRAINT_RATES, expected_rates, group_rocs, largest_pairwise_gap,
                                  threshold_probabilities)
from ..results import Result
from ._base import check_common, check_sample_weight, split_sensitive, warn_if_not_ok

CONSTRAINT_TOL = 1e-9    # the judged largest pairwise gap may exceed eps by this much
CERTIFICATE_TOL = 1e-8   # the judged error may exceed the Lagrangian lower bound by this much
_REASON_CONSTRAINT = ("the rates are recomputed row by row from the fitted probabilities; the LP is solved by the "
                      "simplex method (HiGHS, feasibility tolerance 1e-10) on O(1) rates, so only rounding remains")
_REASON_CERTIFICATE = ("weak duality: the Lagrangian bound of the solver's multipliers is a lower bound on the best "
                       "error under the constraint; HiGHS's optimality tolerance is 1e-10 on O(1) costs")


PREDICT_METHODS = ("auto", "predict_proba", "decision_function", "predict")

class GroupThresholdPostProcessor(ClassifierMixin, BaseEstimator):
    """Post-process a classifier's scores by one randomized threshold per group: the accuracy-maximizing (or
    weighted-error-minimizing) predictor whose largest pairwise gap of the compared rates is at most ``eps``
    (Hardt, Price, Srebro 2016: their LP over the groups' ROC convex hulls, with a tolerance).

    **It needs the sensitive feature when predicting**: ``predict(X, sensitive_features=...)``. The thresholds are
    group-specific, so a row without its group cannot be classified. (``fm.DemographicParityPostProcessor``, the
    unaware post-processor of Chzhen, Hebiri, Taturyan 2024, does not need it; it post-processes regressors.)

    The exact LP: for every group, mixture weights over the vertices of the convex hull of the group's ROC points
    (the rules "predict 1 iff score >= t"); every rate is linear in them. Equalized odds bounds the largest pairwise
    gap of the true-positive rates and of the false-positive rates, equal opportunity that of the true-positive
    rates, demographic parity that of the selection rates: ``max_g r_g - min_g r_g <= eps`` (the two-group
    difference fairlearn reports, never a comparison with the whole population). The fitted predictor is a
    monotone randomized threshold per group: at score s it predicts 1 with probability ``q_g(s)``, a
    nondecreasing step function.

    Parameters
    ----------
    estimator : a scikit-learn classifier (default ``LogisticRegression()``); cloned and fitted in ``fit`` unless
        ``prefit=True``, in which case it must already be fitted and is used as is.
    constraint : ``"equalized_odds"`` (default), ``"equal_opportunity"`` or ``"demographic_parity"``.
    eps : the bound on the largest pairwise gap of each compared rate, in [0, 1] (default 0: equal rates).
    prefit : whether ``estimator`` is already fitted.
    predict_method : ``"auto"`` (``predict_proba``'s positive column, else ``decision_function``, else
        ``predict``), or one of those names: the score that is thresholded.
    costs : ``(c_fp, c_fn)``, the costs of a false positive and a false negative (default (1, 1): accuracy).
    solver : the LP solver (default ``"HIGHS"``, the simplex method; ``"CLARABEL"`` also solves it).
    random_state : seed of ``predict``'s draws (the randomized thresholds) when ``predict`` gets none.

    Attributes
    ----------
    estimator_ : the fitted classifier whose scores are thresholded.
    classes_ : the two classes; ``classes_[1]`` is the positive one.
    groups_ : the group labels seen in ``fit``.
    thresholds_, weights_ : per group, the thresholds of the hull vertices and their mixture weights (only the
        vertices with positive weight).
    result_ : the judged :class:`fairmodel.Result`: ``constraints`` (each rate's largest pairwise gap <= eps, on the
        training rows, computed from the fitted probabilities row by row), ``metrics`` (accuracy, the groups'
        rates), ``certificate`` (the LP's duality gap) and ``checks``; ``status_`` its status.
    """

    def __init__(self, estimator=None, *, constraint="equalized_odds", eps=0.0, prefit=False,
                 predict_method="auto", costs=(1.0, 1.0), solver=None, random_state=None):
        self.estimator = estimator
        self.constraint = constraint
        self.eps = eps
        self.prefit = prefit
        self.predict_method = predict_method
        self.costs = costs
        self.solver = solver
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True       # X goes to the estimator only
        tags.non_deterministic = False      # predict draws from random_state: the same seed gives the same labels
        return tags

    # -- fitting -----------------------------------------------------------------------------------------------------
    def fit(self, X, y, sensitive_features=None, sample_weight=None):
        """Fit (or take, with ``prefit=True``) the estimator, then solve the LP on its scores of ``X`` and judge
        the result on the same rows."""
        check_choice(self.constraint, "constraint", tuple(CONSTRAINT_RATES))
        eps = check_number(self.eps, "eps", low=0.0, high=1.0)
        costs = self._costs()
        check_common(self)
        check_bool(self.prefit, "prefit")
        check_choice(self.predict_method, "predict_method", PREDICT_METHODS)
        est, fitting = self.estimator, () if self.prefit else ("fit", "get_params")
        if est is not None and (isinstance(est, type) or not all(callable(getattr(est, m, None)) for m in fitting)
                                or not any(callable(getattr(est, m, None)) for m in PREDICT_METHODS[1:])):
            raise OptionError(f"estimator must be a {'fitted ' if self.prefit else 'scikit-learn '}classifier with "
                              f"predict_proba, decision_function or predict, or None (LogisticRegression()); got "
                              f"{type(est).__name__}")
        X, sensitive_features = split_sensitive(self, X, sensitive_features, fitting=True)
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.size != 2 or type_of_target(y, input_name="y") != "binary":
            raise ValueError(f"Only binary classification is supported. The type of the target is "
                             f"{type_of_target(y, input_name='y')} ({self.classes_.size} classes); "
                             f"{type(self).__name__} post-processes a binary classifier.")
        n = y.shape[0]
        sw = check_sample_weight(sample_weight, n)
        weights = np.ones(n) if sw is None else sw
        base = LogisticRegression() if self.estimator is None else self.estimator
        if self.prefit:
            if isinstance(base, BaseEstimator):     # any object with a score method is accepted as fitted
                check_is_fitted(base)
            self.estimator_ = base
        else:
            self.estimator_ = clone(base).fit(X, y) if sw is None else clone(base).fit(X, y, sample_weight=sw)
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_
        scores = self._scores(X)
        if scores.shape[0] != n:
            raise DataError(f"the estimator gave {scores.shape[0]} scores for {n} labels")
        labels = _labels(sensitive_features, n)
        self.groups_ = Groups(labels if labels is not None else np.zeros(n, dtype=int))
        self._sensitive = labels is not None
        positive = y == self.classes_[1]
        codes, K = np.asarray(self.groups_.codes), self.groups_.n_groups
        rates = CONSTRAINT_RATES[self.constraint]
        start = time.perf_counter()
        rates = rates if K > 1 else ()        # one group: no comparison, the best mixture of thresholds
        hulls = [roc.hull() for roc in group_rocs(scores, positive, weights, codes, K, rates)]
        lp = solve_thresholds(hulls, rates, eps, costs, solver=self.solver)
        solve_time = time.perf_counter() - start
        self.thresholds_ = [h.thresholds[w > 0] for h, w in zip(hulls, lp["weights"])]
        self.weights_ = [w[w > 0] for w in lp["weights"]]
        start = time.perf_counter()
        self.result_ = self._judge(scores, positive, weights, codes, lp, hulls, eps, costs, solve_time)
        self.result_.timings["judge"] = time.perf_counter() - start
        self.status_ = self.result_.status
        warn_if_not_ok(self, self.result_)
        return self

    def _costs(self):
        costs = self.costs
        if not isinstance(costs, (tuple, list)) or len(costs) != 2:
            raise OptionError(f"costs must be a pair (cost of a false positive, cost of a false negative); got "
                              f"{costs!r}")
        return tuple(check_number(c, name, low=0.0) for c, name in zip(costs, ("costs[0]", "costs[1]")))

    def _judge(self, scores, positive, weights, codes, lp, hulls, eps, costs, solve_time) -> Result:
        """The judge: the expected rates of the fitted randomized predictor on the rows (from its probabilities,
        row by row), each rate's largest pairwise gap against eps, and the LP's duality gap (the judged error minus
        the Lagrangian bound of the solver's multipliers)."""
        K = self.groups_.n_groups
        q = self._probabilities(scores, codes)
        judged = expected_rates(q, positive, weights, codes, K, costs)
        rates = CONSTRAINT_RATES[self.constraint] if K > 1 else ()
        constraints, checks = {}, []
        for rate in rates:
            name = f"{rate.replace('_', ' ')} gap (largest pairwise)"
            record = constraint_record(largest_pairwise_gap(judged[rate]), eps)
            constraints[name] = record
            checks.append(Check(f"{name} - eps", record["value"] - eps, CONSTRAINT_TOL, _REASON_CONSTRAINT,
                                kind="constraint"))
        bound = lp["dual_bound"]
        gap = judged["error"] - bound
        checks.append(Check("LP duality gap", gap, CERTIFICATE_TOL, _REASON_CERTIFICATE, kind="certificate"))
        names = [str(g) for g in self.groups_.names]
        metrics = {"accuracy": judged["accuracy"], "error": judged["error"], "constraint": self.constraint,
                   "comparison": "largest pairwise", "eps": eps,
                   "binding": bool(np.any(lp["multipliers"] > 1e-9)),
                   "hull_vertices": {g: int(h.fp.size) for g, h in zip(names, hulls)}}
        for rate in ("selection_rate", "true_positive_rate", "false_positive_rate"):
            metrics[rate] = dict(zip(names, map(float, judged[rate])))
            metrics[f"{rate}_gap_largest_pairwise"] = largest_pairwise_gap(judged[rate][np.isfinite(judged[rate])])
        variables = {f"weights[{g}]": w for g, w in zip(names, lp["weights"])}
        variables.update({f"thresholds[{g}]": h.thresholds for g, h in zip(names, hulls)})
        status, message = verdict(lp["record"]["status"], checks)
        solution = Solution(variables=variables, status=status, message=message, solver=lp["record"],
                            timings={"solve": solve_time})
        evaluation = Evaluation(objective=judged["error"], constraints=constraints, metrics=metrics,
                                certificate={"duality_gap": gap, "dual_bound": bound,
                                             "lp_duality_gap": lp["duality_gap"]})
        problem = (f"minimize the expected weighted error ({costs[0]:g} FP + {costs[1]:g} FN) / W of group-specific "
                   f"randomized thresholds subject to the largest pairwise gap of "
                   f"{' and '.join(r.replace('_', ' ') + 's' for r in rates) or 'no rate (one group)'} <= {eps:g} "
                   f"(Hardt, Price, Srebro 2016)")
        return Result.from_parts(backend="exact", method="lp", family="group_thresholds", seed=None,
                                 solution=solution, evaluation=evaluation, timings={"solve": solve_time},
                                 problem_text=problem, checks=[c.to_dict() for c in checks],
                                 name=f"group thresholds under {self.constraint.replace('_', ' ')}")

    # -- prediction --------------------------------------------------------------------------------------------------
    def _scores(self, X) -> np.ndarray:
        method = check_choice(self.predict_method, "predict_method", PREDICT_METHODS)
        est = self.estimator_
        if method == "auto":
            method = next(m for m in ("predict_proba", "decision_function", "predict") if hasattr(est, m))
        if not hasattr(est, method):
            raise OptionError(f"predict_method={method!r}, but {type(est).__name__} has no {method}")
        s = np.asarray(getattr(est, method)(X))
        if method == "predict_proba":
            s = s[:, 1]
        elif method == "predict":
            s = (s == self.classes_[1]).astype(float)
        s = np.asarray(s, dtype=float).ravel()
        if not np.all(np.isfinite(s)):
            raise DataError(f"the estimator's {method} gave non-finite scores")
        return s

    def _probabilities(self, scores, codes) -> np.ndarray:
        q = np.zeros(scores.shape[0])
        for g, (t, w) in enumerate(zip(self.thresholds_, self.weights_)):
            rows = codes == g
            q[rows] = threshold_probabilities(t, w, scores[rows])
        return q

    def _codes(self, sensitive_features, n: int) -> np.ndarray:
        labels = _labels(sensitive_features, n)
        if not self._sensitive:
            return np.zeros(n, dtype=np.intp)
        if labels is None:
            raise DataError(f"{type(self).__name__} needs the sensitive feature when predicting: its thresholds are "
                            f"one per group (Hardt, Price, Srebro 2016). Pass predict(X, sensitive_features=...) "
                            f"with each row's group. fm.DemographicParityPostProcessor predicts without it")
        index = {name: code for code, name in enumerate(self.groups_.names)}
        keys = labels.tolist() if isinstance(labels, np.ndarray) else labels
        unknown = sorted({repr(k) for k in keys if k not in index})
        if unknown:
            raise DataError(f"sensitive_features has group(s) {', '.join(unknown[:5])} not seen in fit (groups: "
                            f"{list(self.groups_.names)}); thresholds exist only for the groups fitted")
        return np.fromiter((index[k] for k in keys), dtype=np.intp, count=n)

    def predict_proba(self, X, sensitive_features=None) -> np.ndarray:
        """(n, 2): the probabilities with which the randomized predictor outputs ``classes_[0]`` and ``classes_[1]``
        (not calibrated probabilities of the label). Needs the sensitive feature (see the class docstring)."""
        check_is_fitted(self, "result_")
        X, sensitive_features = _split_predict(self, X, sensitive_features)
        scores = self._scores(X)
        q = self._probabilities(scores, self._codes(sensitive_features, scores.shape[0]))
        return np.column_stack([1.0 - q, q])

    def predict(self, X, sensitive_features=None, random_state=None) -> np.ndarray:
        """Labels drawn from the randomized thresholds (seeded by ``random_state``, else the estimator's
        ``random_state``). Needs the sensitive feature (see the class docstring)."""
        q = self.predict_proba(X, sensitive_features)[:, 1]
        seed = self.random_state if random_state is None else random_state
        draws = as_generator(seed).random(q.shape[0])
        return np.where(draws < q, self.classes_[1], self.classes_[0])


def _labels(sensitive_features, n: int):
    """The group label of every row (tuples for several columns), or None."""
    if sensitive_features is None:
        return None
    labels = np.asarray(sensitive_features)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    elif labels.ndim == 2:
        labels = np.empty(labels.shape[0], dtype=object)
        labels[:] = [tuple(row) for row in np.asarray(sensitive_features).tolist()]
    if labels.shape[0] != n:
        raise DataError(f"sensitive_features has {labels.shape[0]} entries but X has {n} rows")
    return labels


def _split_predict(est, X, sensitive_features):
    """Take the sensitive column(s) named in ``fit`` out of a DataFrame X (when no labels are passed)."""
    X_out, found = split_sensitive(est, X, None, fitting=False)
    return X_out, (found if sensitive_features is None else sensitive_features)
