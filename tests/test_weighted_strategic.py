"""Sample weights in strategic Wasserstein DRO (Maheshwari, Chiu, Mazumdar, Sastry, Ratliff 2022, Theorem 5.3):
the ball is centered at the weighted empirical distribution (mass w_i / sum w on row i). Integer weights equal
repeated rows (judge, exact program, estimator), a zero weight removes the row, the stochastic oracle's
components average to the weighted saddle function, and the weighted worst-case accuracy is the repeated-row one."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.exact.strategic_dro import inner_min, wdrsc_program
from fairmodel.metrics.strategic import worst_case_accuracy
from fairmodel.oracles.strategic import WDRSC, WDRSCOracle

TIGHT = dict(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, tol_ktratio=1e-10,
             max_iter=500)


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    n = 90
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, -1)
    k = rng.integers(0, 4, n)
    mask = np.array([True, False, True])
    return X, y, k, mask


def _models(X, y, k, mask, variant="corrected", delta=0.1):
    rep = np.repeat(np.arange(y.size), k)
    a = WDRSC(X, y, mask, 0.1, delta, 0.5, variant, sample_weight=k.astype(float))
    b = WDRSC(X[rep], y[rep], mask, 0.1, delta, 0.5, variant)
    return a, b


@pytest.mark.parametrize("variant", ["corrected", "paper"])
def test_judge_numbers_equal_repeated_rows(toy, variant):
    X, y, k, mask = toy
    a, b = _models(X, y, k, mask, variant, delta=0.1 if variant == "corrected" else 0.6)   # paper: delta > kappa n_-/n
    assert a.paper_shift == pytest.approx(b.paper_shift, rel=1e-12)
    rng = np.random.default_rng(1)
    rep = np.repeat(np.arange(y.size), k)
    for _ in range(5):
        theta = 0.5 * rng.normal(size=3)
        alpha = float(np.linalg.norm(theta)) / a.slope + rng.uniform(0, 0.5)
        gamma = rng.uniform(-1, 1, y.size)
        assert a.worst_case_risk(theta)[0] == pytest.approx(b.worst_case_risk(theta)[0], rel=1e-12)
        assert a.worst_case_risk(theta)[1] == pytest.approx(b.worst_case_risk(theta)[1], rel=1e-12)
        assert a.value(theta, alpha, gamma) == pytest.approx(b.value(theta, alpha, gamma[rep]), rel=1e-12)
        assert a.primal(theta, alpha) == pytest.approx(b.primal(theta, alpha), rel=1e-12)
        assert a.alpha_coefficient(gamma) == pytest.approx(b.alpha_coefficient(gamma[rep]), rel=1e-12)


def test_worst_case_risk_is_the_minimum_of_the_primal(toy):
    """The closed form (sorting and weighted prefix sums) against a brute-force minimum over a fine alpha grid."""
    X, y, k, mask = toy
    a, _ = _models(X, y, k, mask)
    theta = np.array([0.4, -0.2, 0.3])
    value, alpha = a.worst_case_risk(theta)
    grid = np.linspace(np.linalg.norm(theta) / a.slope, 20.0, 200001)
    brute = min(a.primal(theta, t) for t in grid[::50])
    assert value <= brute + 1e-12
    assert a.primal(theta, alpha) == pytest.approx(value, rel=1e-12)


def test_exact_program_equals_repeated_rows(toy):
    X, y, k, mask = toy
    a, b = _models(X, y, k, mask)
    sols = []
    for m in (a, b):
        prob, theta, alpha, _ = wdrsc_program(m)
        prob.solve(**TIGHT)
        sols.append((prob.value, theta.value))
    assert sols[0][0] == pytest.approx(sols[1][0], rel=1e-9)
    np.testing.assert_allclose(sols[0][1], sols[1][1], atol=1e-7)
    # the inner minimum (E3) of the judge's duality gap, at the same gamma (repeated for the repeated rows)
    gamma = np.random.default_rng(2).uniform(-1, 1, y.size)
    rep = np.repeat(np.arange(y.size), k)
    assert inner_min(a, gamma)[0] == pytest.approx(inner_min(b, gamma[rep])[0], rel=1e-6, abs=1e-7)


def test_zero_weight_removes_the_row(toy):
    X, y, _, mask = toy
    sw = np.random.default_rng(3).uniform(0.5, 2.0, y.size)
    sw[::4] = 0.0
    keep = sw > 0
    a = WDRSC(X, y, mask, 0.1, 0.1, 0.5, sample_weight=sw)
    b = WDRSC(X[keep], y[keep], mask, 0.1, 0.1, 0.5, sample_weight=sw[keep])
    theta = np.array([0.3, 0.1, -0.2])
    assert a.worst_case_risk(theta)[0] == pytest.approx(b.worst_case_risk(theta)[0], rel=1e-12)
    kw = dict(radius=0.1, label_cost=0.5, zeta=0.1, strategic_features=mask)
    assert worst_case_accuracy(theta, X, y, sample_weight=sw, **kw) == pytest.approx(
        worst_case_accuracy(theta, X[keep], y[keep], sample_weight=sw[keep], **kw), rel=1e-12)


def test_weighted_worst_case_accuracy_equals_repeated_rows(toy):
    X, y, k, mask = toy
    rep = np.repeat(np.arange(y.size), k)
    kw = dict(label_cost=0.5, zeta=0.1, strategic_features=mask)
    theta = np.array([0.8, 0.1, -0.3])
    for radius in (0.0, 0.01, 0.05, 0.2, 1.0):
        assert worst_case_accuracy(theta, X, y, radius=radius, sample_weight=k, **kw) == pytest.approx(
            worst_case_accuracy(theta, X[rep], y[rep], radius=radius, **kw), abs=1e-12)


def test_oracle_components_average_to_the_weighted_saddle_function(toy):
    """A component drawn uniformly is an unbiased estimate: (1/n) sum_i L_i = L (exact identity), and the same for
    the gradients (against central differences of L)."""
    X, y, k, mask = toy
    a, _ = _models(X, y, k, mask)
    oracle = WDRSCOracle(a)
    rng = np.random.default_rng(4)
    theta = 0.3 * rng.normal(size=3)
    alpha = float(np.linalg.norm(theta)) / a.slope + 0.2
    gamma = rng.uniform(-1, 1, y.size)
    u = np.concatenate([theta, [alpha], gamma])
    zero = np.zeros_like(u)
    mean_value = np.mean([oracle.value(i, u, zero) for i in range(y.size)])
    assert mean_value == pytest.approx(a.value(theta, alpha, gamma), rel=1e-12)
    g = np.mean([oracle.gradient(i, u, False)[0] for i in range(y.size)], axis=0)
    h = 1e-6
    fd = [(a.value(theta + h * e, alpha, gamma) - a.value(theta - h * e, alpha, gamma)) / (2 * h) for e in np.eye(3)]
    fd.append((a.value(theta, alpha + h, gamma) - a.value(theta, alpha - h, gamma)) / (2 * h))
    np.testing.assert_allclose(g, fd, atol=1e-7)


def test_estimator_weights_equal_repeated_rows_and_judge(toy):
    pytest.importorskip("sklearn")
    X, y, k, _ = toy
    rep = np.repeat(np.arange(y.size), k)
    a = fm.StrategicRobustClassifier(strategic_features=[0, 2]).fit(X, y, sample_weight=k)
    b = fm.StrategicRobustClassifier(strategic_features=[0, 2]).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.center_, b.center_, rtol=1e-12)
    # the same program: optimal values to the solver's accuracy, weights to about 1e-6
    assert a.result_.objective == pytest.approx(b.result_.objective, rel=1e-8)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-5)
    assert a.result_.ok and b.result_.ok
    for name in ("strategic_accuracy", "worst_case_accuracy", "nominal_risk"):
        assert a.result_.metrics[name] == pytest.approx(b.result_.metrics[name], abs=1e-5)


def test_estimator_refuses_bad_weights(toy):
    pytest.importorskip("sklearn")
    X, y, _, _ = toy
    with pytest.raises(ValueError, match="must be >= 0"):
        fm.StrategicRobustClassifier().fit(X, y, sample_weight=-np.ones(y.size))
    with pytest.raises(ValueError, match="zero everywhere"):
        fm.StrategicRobustClassifier().fit(X, y, sample_weight=np.zeros(y.size))
