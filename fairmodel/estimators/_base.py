"""Shared plumbing of the scikit-learn estimators (needs the ``sklearn`` extra).

Conventions: parameters only in ``__init__``; ``fit(X, y, sensitive_features=None)``; fitted attributes
end with ``_``; the judged :class:`fairmodel.Result` of the solve is kept as ``result_`` and its status as
``status_`` (a result the judge does not accept gives a scikit-learn ``ConvergenceWarning``); ``random_state``
seeds the stochastic backend; ``backend=`` and ``method=`` choose the solver; ``solver_options`` are
passed to ``Problem.solve``.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils.multiclass import check_classification_targets, type_of_target
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as exc:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError("fairmodel.estimators needs scikit-learn (the sklearn extra): "
                      "pip install scikit-learn") from exc

from .. import expressions as dsl
from ..data.dataset import Dataset
from ..errors import DataError, OptionError
from ..utilities.validate import as_generator, check_bool, check_choice, non_numeric_columns
from ..utilities.validate import check_sample_weight as validated_sample_weight

MAX_DENSE_BYTES = 2 ** 30      # a sparse X is densified (the solvers use dense NumPy) up to 1 GiB of float64


def densify(X, name: str = "X"):
    """A dense float array from a scipy sparse matrix (e.g. the output of OneHotEncoder in a Pipeline), after a
    memory check: rows x columns x 8 bytes must stay below ``MAX_DENSE_BYTES``; other inputs unchanged."""
    if not hasattr(X, "toarray") or not hasattr(X, "nnz"):
        return X
    need = X.shape[0] * X.shape[1] * 8
    if need > MAX_DENSE_BYTES:
        raise ValueError(f"{name} is a sparse {X.shape[0]} x {X.shape[1]} matrix; the solvers work on dense arrays "
                         f"and densifying it needs {need / 2 ** 30:.1f} GiB (limit "
                         f"fairmodel.estimators._base.MAX_DENSE_BYTES = {MAX_DENSE_BYTES / 2 ** 30:.1f} GiB). Reduce "
                         f"the columns (e.g. OneHotEncoder(max_categories=...) or feature selection) or raise the "
                         f"limit if the memory is there")
    return X.toarray()


def split_sensitive(est, X, sensitive_features, fitting: bool):
    """(X, sensitive_features): a column name (or list of names) of a pandas DataFrame ``X`` is taken out of X
    as the sensitive features (at fit, remembered as ``sensitive_columns_``; at predict the same columns are
    dropped if present)."""
    names = sensitive_features if fitting else getattr(est, "sensitive_columns_", None)
    by_name = isinstance(names, str) or (isinstance(names, (list, tuple)) and names
                                         and all(isinstance(n, str) for n in names))
    if by_name and fitting and not isinstance(names, str) and len(names) == n_rows(X) and not (
            hasattr(X, "columns") and all(n in X.columns for n in names)):
        by_name = False        # one text label per row (e.g. ["a", "b", ...]), not column names
    if fitting and not by_name:
        est.sensitive_columns_ = None
        return X, sensitive_features
    if not by_name:
        return X, sensitive_features
    columns = [names] if isinstance(names, str) else list(names)
    if not hasattr(X, "columns") or not hasattr(X, "drop"):
        if not fitting:
            return X, None
        raise ValueError(f"sensitive_features={sensitive_features!r} names column(s) of X, but X is not a pandas "
                         f"DataFrame; pass the group labels themselves (one per row of X), or X as a DataFrame")
    missing = [c for c in columns if c not in X.columns]
    if missing:
        if not fitting:
            return X, None
        raise ValueError(f"sensitive_features names column(s) {missing} that X does not have; X's columns are "
                         f"{list(X.columns)}")
    groups = X[columns[0]].to_numpy() if len(columns) == 1 else X[columns].to_numpy()
    if fitting:
        est.sensitive_columns_ = columns
    return X.drop(columns=columns), groups


def n_rows(X):
    """The number of rows of X (None when it has neither a shape nor a length)."""
    shape = getattr(X, "shape", None)
    return shape[0] if shape is not None and len(shape) else (len(X) if hasattr(X, "__len__") else None)


def check_features(X, est):
    """Refuse text features before scikit-learn's float conversion ("could not convert string to float"), naming
    the columns of a DataFrame (or saying the array holds text) and how to encode them."""
    text = non_numeric_columns(X)
    if text:
        raise DataError(f"X has non-numeric column(s) {', '.join(map(repr, text))}; {type(est).__name__} needs "
                        f"numbers: encode them first (e.g. a Pipeline with OneHotEncoder on those columns, or "
                        f"fm.Dataset.from_frame), or drop them")
    if isinstance(X, np.ndarray) and X.dtype.kind in "USO" and X.size and any(
            isinstance(v, str) for v in X.ravel()[:1000]):
        raise DataError(f"X holds text (dtype {X.dtype}, e.g. {next(v for v in X.ravel() if isinstance(v, str))!r});"
                        f" {type(est).__name__} needs numbers: encode the text columns first (e.g. OneHotEncoder)")


class FairLinearClassifier(ClassifierMixin, BaseEstimator):
    """Base of the binary linear classifiers: input validation, label mapping, groups, the fitted weights.

    Subclasses implement ``_problem(data, w)`` returning a :class:`fairmodel.Problem` and may override
    ``_weights(n_features)``.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True          # densified with a memory check (densify)
        return tags

    def _validate_fit(self, X, y, sensitive_features):
        X, sensitive_features = split_sensitive(self, X, sensitive_features, fitting=True)
        X = densify(X)
        check_features(X, self)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.size == 1:
            raise ValueError(f"only one class is present in y ({self.classes_[0]!r}); a classifier can't train "
                             f"on one class")
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            raise ValueError(f"Only binary classification is supported. The type of the target is {y_type} "
                             f"({self.classes_.size} classes); {type(self).__name__} is a binary classifier.")
        signed = np.where(y == self.classes_[1], 1.0, -1.0)
        groups = None
        if sensitive_features is not None:
            groups = np.asarray(sensitive_features)
            if groups.ndim == 2 and groups.shape[1] == 1:
                groups = groups[:, 0]
            elif groups.ndim == 2:
                groups = [tuple(row) for row in groups.tolist()]
            if len(groups) != X.shape[0]:
                raise ValueError(f"sensitive_features has {len(groups)} entries but X has {X.shape[0]} rows")
        return Dataset(X, signed, groups)

    def _store(self, result, w):
        self.result_ = result
        self.status_ = result.status
        theta = np.asarray(result.variables[w.name], dtype=float)
        coef, intercept = w.split(theta)
        self.coef_ = coef.reshape(1, -1)
        self.intercept_ = np.atleast_1d(float(intercept))

    def decision_function(self, X):
        check_is_fitted(self, "coef_")
        X, _ = split_sensitive(self, X, None, fitting=False)
        X = densify(X)
        check_features(X, self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_[0] + self.intercept_[0]

    def predict(self, X):
        return np.where(self.decision_function(X) > 0, self.classes_[1], self.classes_[0])


class LogisticProbabilities:
    """``predict_proba`` of a linear classifier fitted with a logistic (or logistic-based) loss: the sigmoid of
    the decision function, as scikit-learn's LogisticRegression (mixed into the estimators whose scores are
    log-odds; the AUC estimator's scores are rankings, not log-odds, so it has none)."""

    def predict_proba(self, X):
        p = expit(self.decision_function(X))
        return np.column_stack([1 - p, p])


def check_sample_weight(sample_weight, n: int):
    """Validated sample weights (:func:`fairmodel.utilities.validate.check_sample_weight`: finite, >= 0, not all zero) as a
    float array, or None when absent or constant (constant weights leave every weighted mean unchanged, so the
    unweighted problem is solved)."""
    if sample_weight is None:
        return None
    sw = validated_sample_weight(sample_weight, n, "X")
    return None if np.all(sw == sw[0]) else sw


def regularized_logistic(est, data, sample_weight):
    """(w, score, objective, weights) of the classifiers fitted by a penalized weighted logistic loss:
    ``weighted mean logistic loss + alpha ||w||^2`` of ``data.score(w)``."""
    sw = check_sample_weight(sample_weight, data.n_samples)
    w = dsl.Weights(data.n_features, intercept=bool(est.fit_intercept))
    s = data.score(w)
    objective = dsl.mean(dsl.logistic_loss(s, data.y, sample_weight=sw))    # sum_i w_i loss_i / sum_i w_i
    if est.alpha > 0:
        objective = objective + float(est.alpha) * dsl.sum_squares(w)
    return w, s, objective, sw


# ---------------------------------------------------------------------------------------------------
# Parameter checks and the solve, shared by the estimators (errors name the parameter)
# ---------------------------------------------------------------------------------------------------
BACKENDS = ("exact", "stochastic")


def check_common(est, backends=BACKENDS) -> None:
    """The options the estimators share, checked at fit whichever backend runs (an option the chosen backend does
    not use is refused when it is invalid, never ignored): backend, fit_intercept, random_state (None, a
    non-negative integer, a numpy Generator or RandomState) and solver_options, where the estimator has them."""
    if hasattr(est, "backend"):
        check_choice(est.backend, "backend", backends)
    if hasattr(est, "fit_intercept"):
        check_bool(est.fit_intercept, "fit_intercept")
    seed = getattr(est, "random_state", None)
    if not isinstance(seed, np.random.RandomState):
        as_generator(seed, "random_state")
    options = getattr(est, "solver_options", None)
    if options is not None and not isinstance(options, dict):
        raise OptionError(f"solver_options must be a dict of options for Problem.solve (e.g. {{'epochs': 40}}) or "
                          f"None; got {type(options).__name__}")


def solve_problem(est, prob, backend: str, method=None, use_options: bool = True, **extra):
    """Solve ``prob`` with the estimator's backend, ``random_state`` and ``solver_options`` (not passed when
    ``use_options`` is False: a fallback program of another family) and the estimator's own ``extra`` options
    (overridden by ``solver_options``); raise when the solve fails."""
    options = est.solver_options if use_options else None   # checked by check_common at fit
    seed = est.random_state if backend == "stochastic" else None
    if isinstance(seed, np.random.RandomState):      # scikit-learn's convention; fairmodel takes an integer
        seed = int(seed.randint(np.iinfo(np.int32).max))
    result = prob.solve(backend=backend, method=method, seed=seed, verbose=False, **{**extra, **(options or {})})
    if result.status in ("diverged", "failed", "interrupted"):
        raise RuntimeError(f"the {backend} solve did not finish: {result.status}: {result.message}")
    warn_if_not_ok(est, result)
    return result


def warn_if_not_ok(est, result) -> None:
    """A ConvergenceWarning (scikit-learn's) with the judge's numbers when a fitted result is not ok."""
    if not result.ok:
        warnings.warn(f"{type(est).__name__}: the {result.backend} solve ended with status {result.status!r}: "
                      f"{result.message}", ConvergenceWarning, stacklevel=3)


def two_groups(data, what: str):
    """The group names of ``data`` for a constraint comparing groups (DataError with fewer than two)."""
    names = list(data.groups.names)
    if len(names) < 2:
        raise DataError(f"sensitive_features has {len(names)} group ({names[0]!r}); {what} compares groups "
                         f"and needs at least two. Pass sensitive_features=None for the unconstrained model")
    return names
