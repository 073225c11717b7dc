"""FairLogisticRegression: sample weights equal repeated rows, the fit equals the
direct DSL solve, the weighted surrogate constraint holds on the training data, and the audited error-rate gaps
shrink on data built to be unfair (check_estimator: tests/test_estimator_defaults.py)."""
import numpy as np
import pytest

pytest.importorskip("sklearn")

import fairmodel as fm  # noqa: E402


@pytest.fixture(scope="module")
def unfair():
    """Two groups; group 1's positives score lower on the features, so a plain model's TPR differs by group."""
    rng = np.random.default_rng(0)
    n = 600
    g = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.4, 1, 0)
    X = rng.normal(size=(n, 3)) + np.outer(y * (1.5 - 1.0 * g), [1.0, 0.5, 0.0]) + np.outer(g, [0.0, 0.0, 1.0])
    w = rng.uniform(0.2, 3.0, n)
    return X, y, g, w


@pytest.mark.parametrize("constraint", ["none", "equalized_odds", "equal_opportunity"])
def test_integer_weights_equal_repeated_rows(unfair, constraint):
    X, y, g, _ = unfair
    k = np.random.default_rng(1).integers(0, 3, y.size)
    rep = np.repeat(np.arange(y.size), k)
    a = fm.FairLogisticRegression(constraint=constraint, bound=0.1).fit(X, y, g, sample_weight=k)
    b = fm.FairLogisticRegression(constraint=constraint, bound=0.1).fit(X[rep], y[rep], g[rep])
    # the two programs have the same optimum; the conic solver reaches it to about 1e-6 in the weights
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-4)


def test_equals_the_direct_dsl_solve_and_meets_the_weighted_constraint(unfair):
    X, y, g, w = unfair
    est = fm.FairLogisticRegression(bound=0.05, alpha=1e-3).fit(X, y, g, sample_weight=w)
    data = fm.Dataset(X, np.where(y == 1, 1.0, -1.0), g)
    v = fm.Weights(3, intercept=True)
    s = data.score(v)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.multiply(w / w.mean(), fm.logistic_loss(s, data.y)))
                                  + 1e-3 * fm.sum_squares(v)),
                      [fm.equalized_odds_gap(s, data, sample_weight=w) <= 0.05])
    theta = prob.solve(backend="exact").variables[v.name]
    np.testing.assert_allclose(np.append(est.coef_[0], est.intercept_), theta, rtol=0, atol=1e-6)
    h = est.decision_function(X)
    for label in (0, 1):
        m = [np.average(h[(g == k) & (y == label)], weights=w[(g == k) & (y == label)]) for k in (0, 1)]
        assert abs(m[0] - m[1]) <= 0.05 + 1e-6


def test_the_audited_error_rate_gaps_shrink(unfair):
    X, y, g, w = unfair
    plain = fm.FairLogisticRegression(constraint="none").fit(X, y, g)
    fair = fm.FairLogisticRegression(constraint="equalized_odds", bound=0.0).fit(X, y, g)
    before = fm.assess(y, y_pred=plain.predict(X), sensitive_features=g).difference()
    after = fm.assess(y, y_pred=fair.predict(X), sensitive_features=g).difference()
    assert before["true_positive_rate"] > 0.2
    assert after["true_positive_rate"] < before["true_positive_rate"] / 2


@pytest.mark.parametrize("params, groups, match", [
    ({"constraint": "dp"}, True, "constraint"),
    ({"bound": -1.0}, True, "bound"),
    ({}, "one", "at least two"),
])
def test_bad_parameters(unfair, params, groups, match):
    X, y, g, _ = unfair
    sf = g if groups is True else np.zeros_like(g)
    with pytest.raises(ValueError, match=match):
        fm.FairLogisticRegression(**params).fit(X, y, sf)
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        fm.FairLogisticRegression().fit(X, y, g, sample_weight=-np.ones(y.size))


def test_group_dro_and_partial_fairness_take_sample_weights(unfair):
    X, y, g, _ = unfair
    k = np.random.default_rng(2).integers(0, 3, y.size)
    rep = np.repeat(np.arange(y.size), k)
    # group DRO and MERO: the weighted group risks equal the family's program on repeated rows
    for objective in ("gdro", "mero"):
        a = fm.GroupDROClassifier(objective, backend="exact").fit(X, y, g, sample_weight=k)
        b = fm.GroupDROClassifier(objective, backend="exact").fit(X[rep], y[rep], g[rep])
        assert a.result_.family == b.result_.family == "gdro"
        np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-4)
    # constant weights are no weights
    c = fm.GroupDROClassifier(backend="exact").fit(X, y, g, sample_weight=np.full(y.size, 2.0))
    np.testing.assert_allclose(c.predict_proba(X), fm.GroupDROClassifier(backend="exact").fit(X, y, g)
                               .predict_proba(X), rtol=0, atol=1e-6)
    # partial fairness: the loss is weighted (without groups: one CVXPY program)
    a = fm.PartialFairnessClassifier().fit(X, y, sample_weight=k)
    b = fm.PartialFairnessClassifier().fit(X[rep], y[rep])
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=0, atol=1e-4)

