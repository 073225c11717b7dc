"""FairRateClassifier: the true training gap of its decisions (computed here with NumPy from predict) meets eps for
each rate with 2 groups, 3 groups and an intersection of two attributes; weighted ramp rates equal repeated rows
(the atom, the DC oracles and the fit); the judge checks the weighted true rates; bad inputs are refused.
(check_estimator: tests/test_estimator_defaults.py.)"""
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")

import fairmodel as fm  # noqa: E402
from sklearn.base import clone  # noqa: E402
from fairmodel.families.partial_program import dc_program, hinge_program  # noqa: E402
from .conftest import toy_classification  # noqa: E402

GAPS = {"demographic_parity": fm.selection_rate_gap, "equal_opportunity": fm.equal_opportunity_gap,
        "equalized_odds": fm.equalized_odds_gap}
TOL = 1e-3     # the judge's stated margin on a true-rate bound


def true_gap(constraint, decisions, y, groups, weights=None):
    """The largest pairwise gap over the groups of the (weighted) selection, true-positive or (for equalized odds,
    the larger of it and the) false-positive rate of 0/1 decisions; ``groups`` a 1-D array or rows of labels."""
    w = np.ones(y.size) if weights is None else np.asarray(weights, dtype=float)
    keys = [tuple(r) if np.ndim(r) else r for r in np.asarray(groups, dtype=object)]
    strata = {"demographic_parity": [np.ones(y.size, bool)], "equal_opportunity": [y == 1],
              "equalized_odds": [y == 1, y != 1]}[constraint]
    gaps = []
    for stratum in strata:
        rates = []
        for k in set(keys):
            rows = stratum & np.array([key == k for key in keys])
            rates.append(np.sum(w[rows] * decisions[rows]) / np.sum(w[rows]))
        gaps.append(max(rates) - min(rates))
    return max(gaps)


def unfair(n=300):
    """toy_classification's features and labels (0/1), with three sensitive attributes that shift the first feature
    after the labels were drawn (so that an unconstrained model's rates differ): "two" (its groups a / b), "three"
    (0, 1, 2) and "pair" (two columns: a / b and a second binary attribute; 4 intersections)."""
    data, _ = toy_classification(n)
    rng = np.random.default_rng(1)
    ab = np.asarray(data.groups.names)[data.groups.codes]
    three, other = rng.integers(0, 3, n), rng.integers(0, 2, n)
    X = data.X.copy()
    X[:, 0] += 0.8 * (ab == "b") + 0.5 * three + 0.6 * other
    y = (data.y > 0).astype(int)
    return X, y, {"two": ab, "three": three, "pair": np.column_stack([ab, other])}


@pytest.fixture(scope="module")
def toy():
    return unfair()


@pytest.mark.parametrize("constraint", list(GAPS))
@pytest.mark.parametrize("attribute", ["two", "three", "pair"])
def test_the_true_training_gap_meets_eps(toy, constraint, attribute):
    """Default fit at eps = 0.1: the judge accepts it and the true gap of predict on the training X, computed here,
    is <= eps + 1e-3, while the unconstrained model's exceeds eps (the bound binds)."""
    X, y, attrs = toy
    eps = 0.1
    free = fm.FairRateClassifier().fit(X, y)
    assert true_gap(constraint, free.predict(X), y, attrs[attribute]) > eps + TOL
    est = fm.FairRateClassifier(constraint=constraint, eps=eps).fit(X, y, sensitive_features=attrs[attribute])
    assert est.result_.ok, est.result_.message
    gap = true_gap(constraint, est.predict(X), y, attrs[attribute])
    assert gap <= eps + TOL
    assert est.result_.metrics["gap.true_gap"] == pytest.approx(gap, abs=1e-12)
    assert len(est.groups_) == {"two": 2, "three": 3, "pair": 4}[attribute]
    assert np.allclose(est.predict_proba(X)[:, 1], 1 / (1 + np.exp(-est.decision_function(X))))


def test_weighted_ramp_rates_equal_repeated_rows():
    """Integer weights and rows repeated that many times give the same atom measure (true and ramp rates, slack) and
    the same DC oracles (f+ and f- with their subgradients, the interior-point hinges, the CVXPY lowering) at random
    points: exact identities of weighted shares."""
    import cvxpy as cp
    from fairmodel.exact.lower import LoweringContext
    from fairmodel.exact.partial import BLOCK_LOWERING
    X, y, attrs = unfair(120)
    counts = np.random.default_rng(5).integers(1, 4, y.size)
    rep = np.repeat(np.arange(y.size), counts)
    yy = np.where(y == 1, 1, -1)
    weighted, repeated = fm.Dataset(X, yy, attrs["three"]), fm.Dataset(X[rep], yy[rep], attrs["three"][rep])
    for kind in GAPS.values():
        programs = []
        for data, sw in ((weighted, counts), (repeated, None)):
            w = fm.Weights(3, intercept=True)
            atom = kind(data.score(w), data, surrogate="ramp", width=0.6, threshold=0.1, sample_weight=sw)
            prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(w), data.y))), [atom <= 0.05])
            programs.append((atom, dc_program(prob, prob.family._kinds), w))
        (a1, p1, w1), (a2, p2, _) = programs
        theta = np.array([0.7, -0.3, 0.2, -0.1])
        m1, m2 = a1.measure(X @ theta[:3] + theta[3]), a2.measure(X[rep] @ theta[:3] + theta[3])
        for key in ("true_rates", "ramp_rates", "cell_slack"):
            assert np.allclose(m1[key], m2[key], atol=1e-12), key
        for x in np.random.default_rng(6).standard_normal((3, p1.D)):
            (f1, c1), (f2, c2) = p1.plus(x), p2.plus(x)
            assert np.allclose(f1, f2, atol=1e-12)
            assert np.allclose(p1.minus(x)[1], p2.minus(x)[1], atol=1e-12)
            assert all(np.allclose(p1.plus_grad(x, i, c1), p2.plus_grad(x, i, c2), atol=1e-12) for i in range(p1.m))
            assert np.allclose(hinge_program(p1).in_memory().plus(x), f1, atol=1e-12)
            block = p1.blocks[0]
            ctx = LoweringContext()
            expr = BLOCK_LOWERING[type(block)](block, ctx, {block.aux_name: cp.Variable(a1.n_strata)})
            ctx.variable(w1).value = x[block.wsl]
            assert np.allclose(expr.value, f1, atol=1e-10)


def test_integer_sample_weights_equal_repeated_rows():
    """A fit with integer weights and a fit on the rows repeated that many times (the same DC program up to rounding:
    weighted shares equal repeated rows' shares): from w = 0, the same weights, the same decisions on every row and
    the same true (weighted) training gap, <= eps + 1e-3, below the unconstrained model's. (The default penalty start
    is found by L-BFGS, whose last digits depend on the rounding of the sums: there both fits meet eps, each its own
    IDCA answer.)"""
    X, y, attrs = unfair(150)
    g = attrs["two"]
    counts = np.random.default_rng(7).integers(1, 4, y.size)
    rep = np.repeat(np.arange(y.size), counts)
    for default in (clone(fm.FairRateClassifier(eps=0.1)).fit(X, y, sensitive_features=g, sample_weight=counts),
                    clone(fm.FairRateClassifier(eps=0.1)).fit(X[rep], y[rep], sensitive_features=g[rep])):
        assert default.result_.ok and "quadratic penalty's minimizer" in default.result_.metrics["start_notes"][0]
        assert true_gap("demographic_parity", default.predict(X), y, g, counts) <= 0.1 + TOL
    est = fm.FairRateClassifier(eps=0.1, solver_options={"start": "zero"})
    weighted = clone(est).fit(X, y, sensitive_features=g, sample_weight=counts)
    repeated = clone(est).fit(X[rep], y[rep], sensitive_features=g[rep])
    assert weighted.result_.ok and repeated.result_.ok
    assert np.array_equal(weighted.predict(X), repeated.predict(X))
    assert np.allclose(weighted.coef_, repeated.coef_, rtol=0, atol=1e-8)
    gap = true_gap("demographic_parity", weighted.predict(X), y, g, counts)
    assert gap == pytest.approx(true_gap("demographic_parity", repeated.predict(X[rep]), y[rep], g[rep]), abs=1e-12)
    assert gap <= 0.1 + TOL and weighted.result_.metrics["gap.true_gap"] == pytest.approx(gap, abs=1e-12)
    free = clone(est).fit(X, y, sample_weight=counts)
    assert true_gap("demographic_parity", free.predict(X), y, g, counts) > 0.1 + TOL


def test_the_judge_checks_the_weighted_true_rates():
    """A planted model whose unweighted selection-rate gap is below eps but whose weighted gap (weights 4 on group
    a's selected rows) exceeds it: judged with the weights it is infeasible by the weighted excess, judged without
    them the rate constraint passes."""
    from fairmodel.families.base import Solution
    from fairmodel.results.judge import judge_solution
    data, _ = toy_classification(400)
    theta = np.array([1.0, 0.0, 0.0, 0.0])
    decisions = data.X[:, 0] > 0
    labels = np.asarray(data.groups.names)[data.groups.codes]
    weights = np.where((labels == "a") & decisions, 4.0, 1.0)
    eps = 0.1
    plain, weighted = (true_gap("demographic_parity", decisions, data.y, labels, w) for w in (None, weights))
    assert plain <= eps and weighted > eps + TOL
    for sw, gap, ok in ((None, plain, True), (weights, weighted, False)):
        w = fm.Weights(3, intercept=True)
        s = data.score(w)
        prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))),
                          [(fm.selection_rate_gap(s, data, surrogate="ramp", sample_weight=sw) <= eps).named("gap")])
        planted = Solution(variables={w.name: theta}, status="converged", message="planted")
        evaluation, checks = judge_solution(prob.family, planted, "exact")
        assert evaluation.constraints["gap"]["value"] == pytest.approx(gap, abs=1e-12)
        rate_check = [c for c in checks if c.name.startswith("true (0/1) gap of gap")]
        assert rate_check and rate_check[0].passed is ok
        if not ok:
            assert planted.status == "infeasible" and f"= {gap - eps:.3g} > 0.001" in planted.message


@pytest.mark.parametrize("params, groups, error, match", [
    ({"constraint": "parity"}, "two", fm.OptionError, "constraint must be one of 'demographic_parity'"),
    ({"eps": -0.1}, "two", fm.OptionError, "eps must be"),
    ({"eps": 1.5}, "two", fm.OptionError, "eps must be"),
    ({"eps": 0.0}, "two", fm.OptionError, "eps=0.005"),
    ({"width": 0.0}, "two", fm.OptionError, "width must be"),
    ({}, "one", fm.DataError, "needs at least two. Pass sensitive_features=None"),
])
def test_bad_inputs_are_refused_naming_the_fix(toy, params, groups, error, match):
    X, y, attrs = toy
    g = np.zeros(y.size) if groups == "one" else attrs[groups]
    with pytest.raises(error, match=match):
        fm.FairRateClassifier(**params).fit(X, y, sensitive_features=g)


def test_an_unmet_bound_warns_with_the_numbers(toy):
    """Without the true-rate continuation (rate_steps=0) a wide ramp leaves the true gap of three groups above a
    tight eps (IDCA from w = 0; from the default penalty start it meets eps here): the fit warns (ConvergenceWarning)
    with the excess and what to try, and status_ is not ok."""
    from sklearn.exceptions import ConvergenceWarning
    X, y, attrs = toy
    eps = 0.01
    est = fm.FairRateClassifier(eps=eps, width=1.0, solver_options={"rate_steps": 0, "start": "zero"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, sensitive_features=attrs["three"])
    gap = true_gap("demographic_parity", est.predict(X), y, attrs["three"])
    assert gap > eps + TOL and est.status_ == "infeasible" and not est.result_.ok
    text = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert text and f"= {gap - eps:.3g} > 0.001" in text[0] and "rate_steps=" in text[0]
