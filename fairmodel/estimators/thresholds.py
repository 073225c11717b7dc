"""Group-specific randomized thresholds of any fitted classifier's scores (Hardt, Price, Srebro, "Equality of
Opportunity in Supervised Learning", NeurIPS 2016: predictors derived from a score), solved exactly as an LP and judged.

    post = fm.GroupThresholdPostProcessor(clf, constraint="equalized_odds", eps=0.02, prefit=True)
    post.fit(X, y, sensitive_features=sex)
    post.predict(X_test, sensitive_features=sex_test, random_state=0)
    post.result_.ok, post.result_.constraints, post.result_.certificate

It needs the sensitive feature when predicting: the thresholds are one per group. (The unaware post-processor
``fm.DemographicParityPostProcessor`` predicts from X alone.)

Chunked rows (a Dask-backed ``fm.Dataset``, or Dask arrays): the fitted model runs chunk by chunk; one pass
counts the positives' and negatives' weights at every distinct (group, score), from which the ROC points are exact,
and one pass gives the judge's rates (``oracles/thresholds.py``); ``predict`` and ``predict_proba`` return Dask arrays.
"""
from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..utilities.validate import as_generator, check_bool, check_choice, check_complete, check_int, check_number
from ..data import Dataset, Groups
from ..data.dask_dataset import dask_modules, is_dask
from ..data.passes import passes_of, row_sums
from ..errors import DataError, FairmodelError, OptionError
from ..exact.thresholds import solve_thresholds
from ..families.base import Check, Evaluation, Solution, constraint_record
from ..results.judge import verdict
from ..oracles.thresholds import (CONSTRAINT_RATES, MAX_DISTINCT, CountPass, RatePass, ScoreCounts,
                                  expected_rates, group_probabilities, group_rocs, largest_pairwise_gap, rate_sums)
from ..results import Result
from ._base import n_rows, check_common, check_sample_weight, split_sensitive, warn_if_not_ok

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
        ``prefit=True``, in which case it must already be fitted and is used as is (or, with ``prefit=True``, any
        function of the features returning the scores, e.g. a model's ``decision_function``).
    constraint : ``"equalized_odds"`` (default), ``"equal_opportunity"`` or ``"demographic_parity"``.
    eps : the bound on the largest pairwise gap of each compared rate, in [0, 1] (default 0: equal rates).
    prefit : whether ``estimator`` is already fitted.
    predict_method : ``"auto"`` (``predict_proba``'s column of the positive class, else ``decision_function``, else
        ``predict``), or one of those names: the score that is thresholded.
    costs : ``(c_fp, c_fn)``, the costs of a false positive and a false negative (default (1, 1): accuracy).
    solver : the LP solver (default ``"HIGHS"``, the simplex method; ``"CLARABEL"`` also solves it).
    random_state : seed of ``predict``'s draws (the randomized thresholds) when ``predict`` gets none.
    max_distinct : on chunked rows, the most distinct (group, score) cells kept (default 2^24, about 0.5 GiB);
        more are refused with a message (in memory the scores are there already, and no limit applies).

    Chunked rows: ``fit(data)`` with a Dask-backed ``fm.Dataset`` (labels and groups from it), or ``fit(X, y,
    sensitive_features=...)`` with a Dask array ``X`` (labels and groups as Dask or NumPy vectors), with
    ``prefit=True``: the model's scores are computed chunk by chunk (it must pickle to run on a
    ``dask.distributed`` cluster). The LP and its certificate are those of the same rows in memory.

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
                 predict_method="auto", costs=(1.0, 1.0), solver=None, random_state=None, max_distinct=MAX_DISTINCT):
        self.estimator = estimator
        self.constraint = constraint
        self.eps = eps
        self.prefit = prefit
        self.predict_method = predict_method
        self.costs = costs
        self.solver = solver
        self.random_state = random_state
        self.max_distinct = max_distinct

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True       # X goes to the estimator only
        tags.non_deterministic = False      # predict draws from random_state: the same seed gives the same labels
        return tags

    # -- fitting -----------------------------------------------------------------------------------------------------
    def fit(self, X, y=None, sensitive_features=None, sample_weight=None):
        """Fit (or take, with ``prefit=True``) the estimator, then solve the LP on its scores of ``X`` and judge
        the result on the same rows. ``X`` may be a Dask-backed ``fm.Dataset`` or a Dask array (see the class
        docstring)."""
        check_choice(self.constraint, "constraint", tuple(CONSTRAINT_RATES))
        eps = check_number(self.eps, "eps", low=0.0, high=1.0)
        costs = self._costs()
        check_common(self)
        check_bool(self.prefit, "prefit")
        check_choice(self.predict_method, "predict_method", PREDICT_METHODS)
        est, fitting = self.estimator, () if self.prefit else ("fit", "get_params")
        scoring = any(callable(getattr(est, m, None)) for m in PREDICT_METHODS[1:]) or (self.prefit and callable(est))
        if est is not None and (isinstance(est, type) or not all(callable(getattr(est, m, None)) for m in fitting)
                                or not scoring):
            raise OptionError(f"estimator must be a {'fitted ' if self.prefit else 'scikit-learn '}classifier with "
                              f"predict_proba, decision_function or predict"
                              f"{', a function of the features returning scores' if self.prefit else ''}, or None "
                              f"(LogisticRegression()); got {type(est).__name__}"
                              f"{' (not callable, and none of those methods)' if self.prefit else ''}")
        if getattr(X, "is_chunked", False) or is_dask(X):
            rows = self._chunked_rows(X, y, sensitive_features, sample_weight)
        else:
            rows = self._rows(X, y, sensitive_features, sample_weight)
        K = self.groups_.n_groups
        rates = CONSTRAINT_RATES[self.constraint] if K > 1 else ()   # one group: the best mixture of thresholds
        start = time.perf_counter()
        counts = rows.counts()
        hulls = [roc.hull() for roc in group_rocs(counts, self.groups_.names, rates)]
        lp = solve_thresholds(hulls, rates, eps, costs, solver=self.solver)
        solve_time = time.perf_counter() - start
        self.thresholds_ = [h.thresholds[w > 0] for h, w in zip(hulls, lp["weights"])]
        self.weights_ = [w[w > 0] for w in lp["weights"]]
        start = time.perf_counter()
        self.result_ = self._judge(rows, lp, hulls, eps, costs, solve_time, len(counts))
        self.result_.timings["judge"] = time.perf_counter() - start
        self.status_ = self.result_.status
        warn_if_not_ok(self, self.result_)
        return self

    def _labels_of(self, y):
        """The two classes of the labels ``y`` (``classes_``), refusing anything but binary labels."""
        try:
            y = column_or_1d(y, warn=True)
            check_complete(y, "y")
            check_classification_targets(y)
        except FairmodelError:
            raise
        except ValueError as exc:        # scikit-learn's words (its estimator checks match them)
            raise DataError(f"y: {exc}") from None
        self.classes_ = np.unique(y)
        if self.classes_.size != 2 or type_of_target(y, input_name="y") != "binary":
            raise DataError(f"Only binary classification is supported. The type of the target is "
                            f"{type_of_target(y, input_name='y')}: y has {self.classes_.size} class(es) "
                            f"{_listed(self.classes_[:5])}; {type(self).__name__} post-processes a binary classifier.")
        return y

    def _take_estimator(self, X, y, sw) -> None:
        base = LogisticRegression() if self.estimator is None else self.estimator
        if self.prefit:
            if isinstance(base, BaseEstimator):     # any object with a score method is accepted as fitted
                try:
                    check_is_fitted(base)
                except NotFittedError:
                    raise OptionError(f"prefit=True, but the {type(base).__name__} given is not fitted: fit it "
                                      f"first, or pass prefit=False to fit it here") from None
            self.estimator_ = base
        else:
            try:
                self.estimator_ = clone(base).fit(X, y) if sw is None else clone(base).fit(X, y, sample_weight=sw)
            except (FairmodelError, MemoryError, TypeError):    # TypeError: scikit-learn's contract for bad X
                raise
            except Exception as exc:        # the model's own error (missing values, a 1-D X, ...), named
                raise DataError(f"fitting the estimator {type(base).__name__} failed ({type(exc).__name__}: {exc}); "
                                f"give features it can fit, or a fitted model with prefit=True") from exc
        if hasattr(self.estimator_, "n_features_in_"):
            self.n_features_in_ = self.estimator_.n_features_in_

    def _rows(self, X, y, sensitive_features, sample_weight) -> "_InMemoryRows":
        X, sensitive_features = split_sensitive(self, X, sensitive_features, fitting=True)
        if y is None:
            raise DataError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        y = self._labels_of(y)
        n = y.shape[0]
        if n_rows(X) not in (None, n):
            raise DataError(f"y has {n} labels but X has {n_rows(X)} rows; give one label per row")
        sw = check_sample_weight(sample_weight, n)
        self._take_estimator(X, y, sw)
        scores = self._score_function()(X)
        labels = _labels(sensitive_features, n)
        self.groups_ = Groups(labels if labels is not None else np.zeros(n, dtype=int))
        self._sensitive = labels is not None
        return _InMemoryRows(scores, y == self.classes_[1], np.ones(n) if sw is None else sw,
                             np.asarray(self.groups_.codes), self.groups_.n_groups)

    def _chunked_rows(self, X, y, sensitive_features, sample_weight) -> "_ChunkedRows":
        if not self.prefit:
            raise OptionError(f"{type(self).__name__} fits its estimator in memory; on chunked (Dask-backed) rows "
                              f"give a fitted model with prefit=True (e.g. fitted on an in-memory sample, "
                              f"data.subsample(n, seed=0)): only its scores are computed, chunk by chunk")
        if getattr(X, "is_chunked", False):
            if y is not None or sensitive_features is not None:
                raise DataError("a Dask-backed fm.Dataset brings its own labels and groups: call fit(data) without "
                                "y and sensitive_features")
            data = X
        else:
            if y is None:
                raise DataError(f"{type(self).__name__} requires y to be passed, but the target y is None")
            data = Dataset.from_dask(X, y, sensitive_features)
        if data.y is None:
            raise DataError("the Dask-backed fm.Dataset has no labels; build it with y (or target= for Parquet)")
        self._labels_of(data.y)
        n = data.n_samples
        sw = check_sample_weight(sample_weight.compute() if is_dask(sample_weight) else sample_weight, n)
        self._take_estimator(None, None, None)
        self.groups_ = data.groups if data.has_groups else Groups(np.zeros(n, dtype=int))
        self._sensitive = data.has_groups
        limit = check_int(self.max_distinct, "max_distinct")
        return _ChunkedRows(data, self._score_function(), self.classes_[1], sw, self.groups_, limit)

    def _costs(self):
        costs = self.costs
        if not isinstance(costs, (tuple, list)) or len(costs) != 2:
            raise OptionError(f"costs must be a pair (cost of a false positive, cost of a false negative); got "
                              f"{costs!r}")
        return tuple(check_number(c, name, low=0.0) for c, name in zip(costs, ("costs[0]", "costs[1]")))

    def _judge(self, rows, lp, hulls, eps, costs, solve_time, distinct: int) -> Result:
        """The judge: the expected rates of the fitted randomized predictor on the rows (from its probabilities,
        row by row; on chunked rows one pass), each rate's largest pairwise gap against eps, and the LP's duality gap
        (the judged error minus the Lagrangian bound of the solver's multipliers)."""
        K = self.groups_.n_groups
        judged = expected_rates(rows.rate_sums(self.thresholds_, self.weights_), costs)
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
                   "hull_vertices": {g: int(h.fp.size) for g, h in zip(names, hulls)}, "distinct_scores": distinct}
        if rows.passes is not None:
            metrics["data_passes"] = rows.passes()
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
    def _score_function(self) -> "_ModelScores":
        """The score that is thresholded, as a picklable function of the features (it runs per chunk on Dask)."""
        method = self.predict_method
        check_choice(method, "predict_method", PREDICT_METHODS)
        est = self.estimator_
        if method == "auto":
            method = next((m for m in ("predict_proba", "decision_function", "predict") if hasattr(est, m)), None)
            if method is None and callable(est):        # a plain function of the features: its values are the scores
                return _ModelScores(est, None, self.classes_)
            if method is None:
                raise OptionError(f"{type(est).__name__} has no predict_proba, decision_function or predict and is "
                                  f"not callable: give a fitted classifier, or a function of the features returning "
                                  f"the scores")
        if not hasattr(est, method):
            raise OptionError(f"predict_method={method!r}, but {type(est).__name__} has no {method}")
        return _ModelScores(est, method, self.classes_, _positive_column(est, self.classes_))

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
        (not calibrated probabilities of the label). Needs the sensitive feature (see the class docstring). On a
        Dask array or Dask-backed ``fm.Dataset``: a Dask array, computed chunk by chunk."""
        check_is_fitted(self, "result_")
        if getattr(X, "is_chunked", False) or is_dask(X):
            return self._chunked_predictions(X, sensitive_features, None)
        X, sensitive_features = _split_predict(self, X, sensitive_features)
        scores = self._score_function()(X)
        q = group_probabilities(self.thresholds_, self.weights_, scores, self._codes(sensitive_features,
                                                                                     scores.shape[0]))
        return np.column_stack([1.0 - q, q])

    def predict(self, X, sensitive_features=None, random_state=None) -> np.ndarray:
        """Labels drawn from the randomized thresholds (seeded by ``random_state``, else the estimator's
        ``random_state``). Needs the sensitive feature (see the class docstring).

        On a Dask array or Dask-backed ``fm.Dataset``: a Dask array, each chunk drawn from the seed's stream
        advanced to the chunk's first row, so an integer seed (or a Generator on PCG64, NumPy's default) gives the
        same labels as in memory on the same rows, however the rows are cut; other generators give a draw of the
        same law."""
        seed = self.random_state if random_state is None else random_state
        if getattr(X, "is_chunked", False) or is_dask(X):
            check_is_fitted(self, "result_")
            n = X.n_samples if getattr(X, "is_chunked", False) else int(X.shape[0])
            return self._chunked_predictions(X, sensitive_features, _draw_state(seed, n))
        q = self.predict_proba(X, sensitive_features)[:, 1]
        draws = as_generator(seed).random(q.shape[0])
        return np.where(draws < q, self.classes_[1], self.classes_[0])

    def _chunked_predictions(self, X, sensitive_features, state):
        """Per chunk of a Dask array (or a Dask-backed Dataset): the probabilities (``state`` None) or the drawn
        labels, as one Dask array."""
        dask, da = dask_modules()
        data = X if getattr(X, "is_chunked", False) else None
        X = X.X if data is not None else X
        n = int(X.shape[0])
        index = {name: code for code, name in enumerate(self.groups_.names)}   # labels -> codes, in each chunk
        if not self._sensitive:
            labels, index = np.zeros(n, dtype=np.intp), None
        elif sensitive_features is not None:
            labels = sensitive_features
        elif data is not None and data.groups is not None:      # the data's codes, as codes of the fitted groups
            names = np.empty(len(data.groups.names), dtype=object)
            names[:] = list(data.groups.names)
            labels, index = self._codes(names, names.size)[data.groups.codes], None
        else:
            self._codes(None, n)                                  # raises: the groups are needed
        labels = labels if is_dask(labels) else da.from_array(np.asarray(labels), chunks=(X.chunks[0],))
        if labels.ndim != 1 or int(labels.shape[0]) != n:
            raise DataError(f"sensitive_features must be one label per row ({n}); got shape {labels.shape}")
        X, labels = X.rechunk({1: -1}), labels.rechunk((X.chunks[0],))
        block = _Predictions(self._score_function(), self.thresholds_, self.weights_, index, self.classes_, state,
                             list(self.groups_.names))
        starts = np.concatenate([[0], np.cumsum(X.chunks[0])])
        dtype = float if state is None else self.classes_.dtype
        parts = [da.from_delayed(dask.delayed(block)(xb, lb, int(start)), dtype=dtype,
                                 shape=(int(rows), 2) if state is None else (int(rows),))
                 for xb, lb, start, rows in zip(X.to_delayed().ravel(), labels.to_delayed().ravel(), starts,
                                                X.chunks[0])]
        return da.concatenate(parts)


class _ModelScores:
    """A fitted model's scores of some features (picklable: it runs per chunk, possibly in a worker process):
    ``predict_proba``'s column of the positive class, ``decision_function`` (its column of the positive class for a
    multiclass model, negated when the positive class is the model's first of two), ``predict`` == the positive
    class, or (``method`` None) the values of the model itself, a function of the features. ``classes`` are the two
    classes of the labels; ``column`` the positive class's index in the model's ``classes_`` (None: the model has
    none). Every score is checked: one finite number per row, and predictions among the labels' classes."""

    def __init__(self, estimator, method: str | None, classes, column: int | None = None):
        self.estimator, self.method, self.classes, self.column = estimator, method, classes, column

    def __call__(self, X) -> np.ndarray:
        what = f"the estimator's {self.method}" if self.method else "the function of the features"
        try:
            s = np.asarray(self.estimator(X) if self.method is None else getattr(self.estimator, self.method)(X))
        except (FairmodelError, MemoryError, TypeError):    # TypeError: scikit-learn's contract for bad X
            raise
        except Exception as exc:            # the model's own error (e.g. features of another width), named
            raise DataError(f"{what} failed on the features given ({type(exc).__name__}: {exc}); the thresholded "
                            f"model must score these rows (the same columns as when it was fitted)") from exc
        if self.method == "predict":
            return self._predicted(s, what, n_rows(X))
        if self.method is not None:
            s = self._positive_score(s, what)
        return _one_score_per_row(s, what, n_rows(X))

    def _positive_score(self, s, what: str) -> np.ndarray:
        """The positive class's score among ``predict_proba``'s or ``decision_function``'s columns: the column of the
        positive class in the model's ``classes_`` (without them, predict_proba's second of two columns); a binary
        model's one decision value scores its second class, so it is negated when the positive class is its first."""
        model_classes = getattr(self.estimator, "classes_", None)
        columns = s.shape[1] if s.ndim == 2 else 1
        if self.method == "decision_function" and columns == 1 and (model_classes is None or len(model_classes) == 2):
            return -s.ravel() if self.column == 0 else s.ravel()
        if self.column is not None and columns == len(model_classes):
            return s[:, self.column]
        if self.column is None and self.method == "predict_proba" and columns == 2:
            return s[:, 1]
        known = f"the model's classes {_listed(model_classes)}" if model_classes is not None else "no classes_"
        other = "predict_method='decision_function', " if self.method == "predict_proba" else ""
        raise DataError(f"{what} gave shape {s.shape} and the model has {known}: which column scores the positive "
                        f"class {_label(self.classes[1])} is unknown (one column per class of classes_ is needed); "
                        f"give a binary classifier fitted on y's labels, {other}or prefit=True with a function of "
                        f"the features returning the positive class's score")

    def _predicted(self, s, what: str, n: int) -> np.ndarray:
        """Predicted labels as 0/1 scores (1 at the positive class), refusing labels that are not the labels'
        classes (e.g. 'yes'/'no' predicted for labels 0/1: no prediction would ever be positive)."""
        if s.ndim != 1 or s.shape[0] != (s.shape[0] if n is None else n):
            raise DataError(f"{what} gave shape {s.shape}; one predicted label per row ({n}) is needed")
        known = set(self.classes.tolist())
        values = set(s.tolist()) if s.dtype == object else np.unique(s).tolist()
        foreign = sorted(_label(v) for v in values if v not in known)
        if foreign:
            regressor = " (a regressor's values: prefit=True with its predict as the function of the features)"
            raise DataError(f"{what} predicts label(s) {', '.join(foreign[:5])}, which are not labels of y "
                            f"({_listed(self.classes)}); fit the model on the same labels as y or map its "
                            f"predictions to them{regressor if s.dtype.kind == 'f' else ''}")
        return (s == self.classes[1]).astype(float)


def _listed(values) -> str:
    return "none" if values is None else repr(list(np.asarray(values).tolist()))


def _label(value) -> str:
    return repr(np.asarray(value).tolist())


def _one_score_per_row(s, what: str, n: int) -> np.ndarray:
    """``s`` as one finite float per row (a column vector is accepted), or a DataError naming what is wrong."""
    s = np.asarray(s)
    if s.ndim == 2 and s.shape[1] == 1:
        s = s[:, 0]
    if s.ndim != 1 or s.shape[0] != (s.shape[0] if n is None else n):
        raise DataError(f"{what} gave shape {s.shape}; one score per row ({n}) is needed")
    try:
        numbers = s.astype(float) if s.dtype.kind in "biufO" else None
    except (TypeError, ValueError):
        numbers = None
    if numbers is None:
        raise DataError(f"{what} gave scores of dtype {s.dtype} (e.g. {_label(s[0]) if n else ''}); the "
                        f"thresholds need numbers")
    s = numbers
    if not np.all(np.isfinite(s)):
        raise DataError(f"{what} gave {int(np.sum(~np.isfinite(s)))} non-finite score(s) (NaN or infinite) of {n}; "
                        f"the thresholds need finite scores")
    return s


def _positive_column(estimator, classes) -> int | None:
    """The index of the positive class ``classes[1]`` in the model's ``classes_`` (None when it has none), refusing a
    model that never saw it: its scores would be those of another class (a multiclass model thresholded on
    P(class 1) for a positive class 2)."""
    model_classes = getattr(estimator, "classes_", None)
    if model_classes is None:
        return None
    found = np.flatnonzero(np.asarray(model_classes) == classes[1]) if np.ndim(model_classes) == 1 else []
    if len(found) != 1:
        raise DataError(f"the estimator's classes {_listed(model_classes)} do not include the positive label "
                        f"{_label(classes[1])} of y (labels {_listed(classes)}); fit the model on the same labels as y")
    return int(found[0])


class _InMemoryRows:
    """The rows of an in-memory fit: their scores, labels, weights and group codes (one chunk)."""

    passes = None

    def __init__(self, scores, positive, weights, codes, n_groups):
        self.scores, self.positive, self.weights, self.codes, self.K = scores, positive, weights, codes, n_groups

    def counts(self) -> ScoreCounts:
        return ScoreCounts.of(self.scores, self.positive, self.weights, self.codes, limit=None)

    def rate_sums(self, thresholds, weights) -> np.ndarray:
        q = group_probabilities(thresholds, weights, self.scores, self.codes)
        return rate_sums(q, self.positive, self.weights, self.codes, self.K)


class _ChunkedRows:
    """The rows of a Dask-backed Dataset: the counts and the judge's sums are one pass each (the model runs per
    chunk; the client holds the labels, group codes and weights, and the distinct cells)."""

    def __init__(self, data, scores, positive_label, weights, groups, limit):
        self.data, self.scores, self.positive_label, self.K, self.limit = \
            data, scores, positive_label, groups.n_groups, limit
        self.per_row = (data.y, groups.codes) + (() if weights is None else (weights,))
        self._start = passes_of(data)

    def counts(self) -> ScoreCounts:
        return row_sums(self.data, CountPass(self.scores, self.positive_label, self.limit), *self.per_row)

    def rate_sums(self, thresholds, weights) -> np.ndarray:
        return row_sums(self.data, RatePass(self.scores, self.positive_label, thresholds, weights), *self.per_row)

    def passes(self) -> int:
        return passes_of(self.data) - self._start


class _Predictions:
    """One chunk's probabilities (``state`` None) or labels drawn with the PCG64 stream of ``state`` advanced to
    the chunk's first row (so that the draws are those of the same rows in memory)."""

    def __init__(self, scores, thresholds, weights, index, classes, state, names):
        self.scores, self.thresholds, self.weights, self.index = scores, thresholds, weights, index
        self.classes, self.state, self.names = classes, state, names

    def __call__(self, X, labels, start: int):
        labels = np.asarray(labels)
        if self.index is None:
            codes = labels.astype(np.intp)
        else:
            unknown = sorted({repr(k) for k in labels.tolist() if k not in self.index})
            if unknown:
                raise DataError(f"sensitive_features has group(s) {', '.join(unknown[:5])} not seen in fit (groups: "
                                f"{self.names}); thresholds exist only for the groups fitted")
            codes = np.fromiter((self.index[k] for k in labels.tolist()), dtype=np.intp, count=labels.shape[0])
        q = group_probabilities(self.thresholds, self.weights, self.scores(np.asarray(X, dtype=float)), codes)
        if self.state is None:
            return np.column_stack([1.0 - q, q])
        bits = np.random.PCG64()
        bits.state = self.state
        bits.advance(start)
        draws = np.random.Generator(bits).random(q.shape[0])
        return np.where(draws < q, self.classes[1], self.classes[0])


def _draw_state(seed, n: int) -> dict:
    """The PCG64 state whose stream the chunked draws of n rows follow: the seed's own generator when it is a PCG64
    (then advanced past the n draws, as ``random(n)`` in memory would), else a PCG64 seeded from it."""
    rng = as_generator(seed)
    if isinstance(rng.bit_generator, np.random.PCG64):
        state = dict(rng.bit_generator.state)
        rng.bit_generator.advance(n)
        return state
    return dict(np.random.PCG64(int(rng.integers(0, 2 ** 63))).state)


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
