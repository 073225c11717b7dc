"""Default fits of the scikit-learn estimators are judged ok on reasonable data, a fit the judge does not accept warns
(scikit-learn's ConvergenceWarning, with the judge's numbers), and scikit-learn's check_estimator fails when a
default fit on its data is not ok (ConvergenceWarning turned into an error)."""
import warnings

import numpy as np
import pytest

import fairmodel as fm

pytest.importorskip("sklearn")
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

from fairmodel.estimators import CHECK_EXEMPTIONS  # noqa: E402
from fairmodel.results.result import Result  # noqa: E402

CLASSIFIERS = ["GroupDROClassifier", "FairAUCClassifier", "FairLogisticRegression", "PartialFairnessClassifier",
               "StrategicRobustClassifier", "FairRateClassifier"]
GROUPLESS = ("StrategicRobustClassifier",)     # takes no sensitive attribute


def reasonable(n=400, seed=0):
    """Standardized features, two groups of different base rates, labels from a noisy linear rule per group."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4))
    X[:, 2] += 0.5 * g
    y = np.where(X[:, 0] + (1 + g) * X[:, 1] + 0.3 * g + 0.5 * rng.normal(size=n) > 0, 1, 0)
    w = rng.uniform(0.5, 2.0, n)
    return X, y, g, w


def _fit(est, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(*args, **kwargs)
    return [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


@pytest.mark.parametrize("name", CLASSIFIERS)
@pytest.mark.parametrize("grouped", [True, False])
def test_default_fit_on_reasonable_data_is_ok(name, grouped):
    """Default parameters, 400 standardized rows: the judge accepts the fit (result_.ok) and nothing warns; with
    sensitive features the fairness problem, without them the documented unconstrained model."""
    if grouped and name in GROUPLESS:
        pytest.skip("the estimator has no sensitive attribute")
    X, y, g, _ = reasonable()
    est = getattr(fm, name)()
    warned = _fit(est, X, y, sensitive_features=g) if grouped else _fit(est, X, y)
    assert est.result_.ok, (est.result_.status, est.result_.failed_checks())
    assert not warned
    assert any(c["kind"] == "certificate" for c in est.result_.checks) or est.result_.constraints


@pytest.mark.parametrize("name", ["GroupDROClassifier", "FairLogisticRegression", "StrategicRobustClassifier",
                                  "FairRateClassifier"])
def test_default_fit_with_sample_weights_is_ok(name):
    X, y, g, w = reasonable(seed=1)
    est = getattr(fm, name)()
    kwargs = {} if name in GROUPLESS else {"sensitive_features": g}
    assert not _fit(est, X, y, sample_weight=w, **kwargs)
    assert est.result_.ok, (est.result_.status, est.result_.failed_checks())


def test_default_dp_post_processor_fit_is_ok():
    from sklearn.linear_model import LinearRegression, LogisticRegression
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1500, 3))
    s = (X[:, 0] + 0.5 * rng.normal(size=1500) > 0.3).astype(int)
    y = np.tanh(0.4 * X.sum(axis=1) + 0.3 * s)
    reg, clf = LinearRegression().fit(X[:500], y[:500]), LogisticRegression().fit(X[:500], s[:500])
    est = fm.DemographicParityPostProcessor(reg, clf)
    assert not _fit(est, X[500:])
    assert est.result_.ok, (est.result_.status, est.result_.failed_checks())


def test_a_fit_the_judge_does_not_accept_warns_with_its_numbers():
    """A stochastic group-DRO fit stopped after 2 epochs (a fixed budget) fails the duality-gap check: the fit warns,
    naming the check, its value and its tolerance."""
    X, y, g, _ = reasonable(seed=3)
    est = fm.GroupDROClassifier(random_state=0, solver_options={"epochs": 2, "stop": "budget", "step_w": 50.0})
    warned = _fit(est, X, y, sensitive_features=g)
    assert not est.result_.ok
    assert warned and "duality gap, eq. (13)" in warned[0] and "tolerance" in warned[0]


@pytest.mark.parametrize("name", CLASSIFIERS + ["DemographicParityPostProcessor"])
def test_every_estimator_warns_when_its_result_is_not_ok(name, monkeypatch):
    """Whatever the estimator, a result the judge does not accept (Result.ok forced False here) gives a
    ConvergenceWarning from fit."""
    monkeypatch.setattr(Result, "ok", property(lambda self: False))
    X, y, g, _ = reasonable(n=120, seed=4)
    if name == "DemographicParityPostProcessor":
        from sklearn.linear_model import LinearRegression, LogisticRegression
        est = fm.DemographicParityPostProcessor(LinearRegression().fit(X, X[:, 0]), LogisticRegression().fit(X, g))
        warned = _fit(est, X)
    else:           # the partial-fairness fit with groups takes seconds: its unconstrained fit goes the same way
        est = getattr(fm, name)()
        grouped = name not in GROUPLESS + ("PartialFairnessClassifier",)
        warned = _fit(est, X, y, sensitive_features=g) if grouped else _fit(est, X, y)
    assert warned and name in warned[0]


# check_estimator's checks on data where the default stochastic group-DRO fit does not reach the judge's accuracy
# (skipped through expected_failed_checks):
# X ~ N(100, 1) unscaled (with the intercept, a condition number ~1e4), 100 rows of random labels; ALEG stops at its
# cap (2,000 epochs) with the duality gap 1.7-9.5x the tolerance (measured), and says so (status 'inaccurate')
ILL_CONDITIONED = {check: "unscaled X ~ N(100, 1): the default stochastic fit stops at its cap above the judge's "
                          "accuracy (status 'inaccurate', a ConvergenceWarning); standardize X or use backend='exact'"
                   for check in ("check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in")}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "GroupDROClassifier" else n
                                  for n in CLASSIFIERS])    # GroupDROClassifier's checks take 14 s: opt-in
def test_check_estimator_fails_when_a_default_fit_is_not_ok(name):
    """scikit-learn's checks on default estimators, every ConvergenceWarning (a fit the judge does not accept) an
    error: a check whose fit is not ok fails."""
    expected = dict(CHECK_EXEMPTIONS[name])
    if name == "GroupDROClassifier":
        expected.update(ILL_CONDITIONED)
    est = getattr(fm, name)()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        check_estimator(est, expected_failed_checks=expected)
