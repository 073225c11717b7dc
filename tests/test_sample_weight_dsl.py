"""``sample_weight=`` on the DSL's losses: the weighted mean sum w_i l_i / sum w_i (group means within the group,
sums sum w_i l_i) on both backends and in the judge; integer weights are repeated rows; the same as an explicit
``fm.multiply``; the stochastic minibatch estimates are unbiased; bad weights are refused."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel import expressions as E
from fairmodel.families.lagrangian import LagrangianOracle

TIGHT = dict(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, tol_ktratio=1e-10,
             max_iter=500)


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    n, d = 240, 4
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1, -1)
    g = rng.integers(0, 3, n)
    k = rng.integers(0, 4, n).astype(float)          # integer weights, zeros included
    return X, y, g, k


def _problem(data, sw, loss=fm.logistic_loss):
    w = fm.Weights(data.n_features, radius=3.0, intercept=True)
    s = data.score(w)
    ls = loss(s, data.y, sample_weight=sw)
    risks = fm.group_mean(ls, data.groups)
    pos = fm.mean(ls, where=np.asarray(data.y) > 0)
    prob = fm.Problem(fm.Minimize(fm.mean(ls) + 0.1 * fm.max(risks) + 0.05 * pos), [fm.max(risks) <= 0.7])
    return w, prob


def _weight_var(cvx, d):
    return next(v for v in cvx.variables() if v.size == d + 1)


def test_values_and_gradients_against_direct_formulas(toy):
    X, y, g, k = toy
    data = fm.Dataset(X, y, g)
    w = fm.Weights(X.shape[1], intercept=True)
    theta = np.random.default_rng(1).normal(size=X.shape[1] + 1)
    z = X @ theta[:-1] + theta[-1]
    l = np.log1p(np.exp(-y * z))
    ls = fm.logistic_loss(data.score(w), y, sample_weight=k)
    pos = y > 0
    assert E.evaluate(fm.mean(ls), {w: theta}) == pytest.approx(k @ l / k.sum(), rel=1e-13)
    assert E.evaluate(fm.mean(ls, where=pos), {w: theta}) == pytest.approx(
        k[pos] @ l[pos] / k[pos].sum(), rel=1e-13)
    assert E.evaluate(fm.sum(ls), {w: theta}) == pytest.approx(k @ l, rel=1e-13)
    gm = E.evaluate(fm.group_mean(ls, g, where=pos), {w: theta})
    direct = [k[(g == j) & pos] @ l[(g == j) & pos] / k[(g == j) & pos].sum() for j in range(3)]
    np.testing.assert_allclose(gm, direct, rtol=1e-13)
    # the per-sample values are the unweighted losses (weights belong to the averaging)
    np.testing.assert_allclose(E.evaluate(ls, {w: theta}), l, rtol=1e-13)
    # gradient against central finite differences
    f = fm.mean(ls) + fm.max(fm.group_mean(ls, g))
    _, grad = E.value_and_grad(f, {w: theta})
    h = 1e-6
    fd = [(E.evaluate(f, {w: theta + h * e}) - E.evaluate(f, {w: theta - h * e})) / (2 * h)
          for e in np.eye(theta.size)]
    np.testing.assert_allclose(grad[w], fd, atol=1e-7)


def test_integer_weights_equal_repeated_rows_exact_and_judge(toy):
    X, y, g, k = toy
    rep = np.repeat(np.arange(y.size), k.astype(int))
    w, prob = _problem(fm.Dataset(X, y, g), k)
    wr, prob_r = _problem(fm.Dataset(X[rep], y[rep], g[rep]), None)
    cvx, cvx_r = prob.family.to_cvxpy(), prob_r.family.to_cvxpy()
    for c in (cvx, cvx_r):
        c.solve(**TIGHT)
    # two programs with the same optimum: the optimal values and the minimizer (strictly convex) agree
    assert cvx.value == pytest.approx(cvx_r.value, rel=1e-8, abs=1e-8)
    theta = _weight_var(cvx, X.shape[1]).value
    np.testing.assert_allclose(theta, _weight_var(cvx_r, X.shape[1]).value, atol=1e-8)
    # the library's exact backend (default tolerances) reaches the same optimal value
    assert prob.solve(backend="exact").objective == pytest.approx(cvx_r.value, rel=1e-8)
    # the judge: the same numbers at the same point
    a, b = prob.evaluate(**{w.name: theta}), prob_r.evaluate(**{wr.name: theta})
    assert a.objective == pytest.approx(b.objective, rel=1e-12)
    assert a.constraints["c0"]["value"] == pytest.approx(b.constraints["c0"]["value"], rel=1e-12)


def test_zero_weight_is_a_removed_row(toy):
    X, y, g, _ = toy
    sw = np.random.default_rng(2).uniform(0.5, 2.0, y.size)
    sw[::5] = 0.0
    keep = sw > 0
    w, prob = _problem(fm.Dataset(X, y, g), sw)
    wr, prob_r = _problem(fm.Dataset(X[keep], y[keep], g[keep]), sw[keep])
    theta = 0.5 * np.random.default_rng(3).normal(size=X.shape[1] + 1)
    assert prob.evaluate(**{w.name: theta}).objective == pytest.approx(
        prob_r.evaluate(**{wr.name: theta}).objective, rel=1e-12)


def test_sample_weight_equals_explicit_multiply(toy):
    X, y, g, _ = toy
    sw = np.random.default_rng(4).uniform(0.2, 3.0, y.size)
    data = fm.Dataset(X, y, g)
    w = fm.Weights(X.shape[1], radius=3.0, intercept=True)
    s = data.score(w)
    plain = fm.squared_loss(s, y)
    codes = np.asarray(data.groups.codes)
    mean_g = np.bincount(codes, weights=sw) / np.bincount(codes)
    by_hand = fm.mean(fm.multiply(sw / sw.mean(), plain)) + fm.max(fm.group_mean(
        fm.multiply(sw / mean_g[codes], plain), data.groups))
    weighted = fm.squared_loss(s, y, sample_weight=sw)
    declared = fm.mean(weighted) + fm.max(fm.group_mean(weighted, data.groups))
    theta = np.random.default_rng(5).normal(size=X.shape[1] + 1)
    assert E.evaluate(declared, {w: theta}) == pytest.approx(E.evaluate(by_hand, {w: theta}), rel=1e-13)
    r1 = fm.Problem(fm.Minimize(declared)).solve(backend="exact")
    r2 = fm.Problem(fm.Minimize(by_hand)).solve(backend="exact")
    assert r1.objective == pytest.approx(r2.objective, rel=1e-8)


def test_canonical_form_weighs_once(toy):
    X, y, g, k = toy
    w, prob = _problem(fm.Dataset(X, y, g), k + 1.0)
    text = str(prob.canonical.objective)
    assert text.count("u_i·") == 3           # one weighting per aggregate, none applied twice
    theta = np.zeros(X.shape[1] + 1)
    assert E.evaluate(prob.canonical.objective, {w: theta}) == pytest.approx(
        E.evaluate(prob.objective.expr, {w: theta}), rel=1e-14)


def test_stochastic_estimates_are_unbiased(toy):
    """Mean of K minibatch estimates of every sample leaf against its full value: each estimate is a mean of
    independent draws, so by the CLT the average of K estimates is within 5 standard errors (estimated from the
    K estimates) of the full value except with probability < 1e-6 per leaf."""
    X, y, g, _ = toy
    sw = np.exp(1.5 * X[:, 1]) * np.random.default_rng(6).exponential(1.0, y.size)  # unequal, tied to a feature
    w, prob = _problem(fm.Dataset(X, y, g), sw)
    form = prob.family.form()
    oracle = LagrangianOracle(form, w, 1.0)
    theta = np.array([0.5, 1.5, 0.0, 0.0, 0.2])
    zero = np.zeros(len(form.leaves))
    full = oracle._sample_pass(theta, zero)[0][oracle.sample]
    K = 4000
    rows = oracle.draw(np.random.default_rng(8), K)
    est = np.array([oracle._leaf_estimates(theta, r)[oracle.sample] for r in rows])
    se = est.std(axis=0, ddof=1) / np.sqrt(K)
    assert np.all(np.abs(est.mean(axis=0) - full) <= 5 * se + 1e-12)
    # the full values are the weighted means (not the plain ones), so the check above can fail
    plain_w, plain = _problem(fm.Dataset(X, y, g), None)
    plain_form = plain.family.form()
    plain_full = LagrangianOracle(plain_form, plain_w, 1.0)._sample_pass(theta, zero)[0][oracle.sample]
    assert np.all(np.abs(plain_full - full) > 5 * se)     # an estimator ignoring the weights fails


@pytest.mark.parametrize("bad, message", [
    (-np.ones(240), ">= 0"),
    (np.r_[np.ones(239), np.nan], "NaN"),
    (np.ones(239), "239 entries"),
    (np.zeros(240), "zero everywhere"),
    (np.ones((240, 1)), "1-D"),
    (np.array(["a"] * 240), "numeric"),
])
def test_bad_weights_are_refused(toy, bad, message):
    X, y, g, _ = toy
    data = fm.Dataset(X, y, g)
    w = fm.Weights(X.shape[1])
    with pytest.raises(fm.DataError, match=message):
        fm.logistic_loss(data.score(w), y, sample_weight=bad)


def test_weighted_aggregates_refuse_undefined_means(toy):
    X, y, g, _ = toy
    data = fm.Dataset(X, y, g)
    w = fm.Weights(X.shape[1])
    sw = np.where(g == 1, 0.0, 1.0)
    ls = fm.logistic_loss(data.score(w), y, sample_weight=sw)
    with pytest.raises(fm.DataError, match="all zero"):
        fm.group_mean(ls, data.groups)
    with pytest.raises(fm.DataError, match="all zero"):
        fm.mean(ls, where=g == 1)
    other = fm.logistic_loss(data.score(w), y, sample_weight=np.ones(y.size))
    with pytest.raises(fm.ModelError, match="two different sample_weight"):
        fm.mean(ls + other)
    with pytest.raises(fm.ModelError, match="ignore the weights"):
        fm.max(ls)


def test_weighted_and_unweighted_losses_in_one_mean_are_refused(toy):
    """An unweighted loss has weight 1 on every row: in one aggregate with a weighted loss the two weightings
    conflict (as two different weight vectors do). Before, the unweighted loss was silently weighted too, so
    fm.mean(a + b) differed from fm.mean(a) + fm.mean(b)."""
    X, y, g, k = toy
    data = fm.Dataset(X, y, g)
    w = fm.Weights(X.shape[1])
    s = data.score(w)
    weighted = fm.logistic_loss(s, y, sample_weight=k + 1.0)
    plain = fm.squared_loss(s, y)
    for aggregate in (fm.mean, fm.sum, lambda e: fm.group_mean(e, data.groups)):
        with pytest.raises(fm.ModelError, match="weighted and unweighted"):
            aggregate(weighted + 0.5 * plain)
    # separate aggregates are fine, and a weighted loss plus a non-loss term (the row's score) is weighted as one row
    theta = np.random.default_rng(7).normal(size=X.shape[1])
    both = E.evaluate(fm.mean(weighted) + 0.5 * fm.mean(plain), {w: theta})
    z = X @ theta
    direct = (k + 1.0) @ np.log1p(np.exp(-y * z)) / (k + 1.0).sum() + 0.5 * np.mean((z - y) ** 2)
    assert both == pytest.approx(direct, rel=1e-13)
    row = E.evaluate(fm.mean(weighted + 0.1 * s), {w: theta})
    assert row == pytest.approx((k + 1.0) @ (np.log1p(np.exp(-y * z)) + 0.1 * z) / (k + 1.0).sum(), rel=1e-13)
