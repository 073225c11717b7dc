"""Sample weights in AUC maximization under AUC-fairness constraints (Yao, Lin, Yang 2023): the pair (i, j) of
S x S' weighs w_i w_j / (W_S W_S'). Pair risks against a brute-force weighted double sum; integer weights equal
repeated rows in the pair numerics, the three exact forms, the stochastic method's minibatch quantities and the
judge; a zero weight removes the row; the estimator."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.oracles.pairs import LinearMoments, PairRisks

# tight solver settings: Clarabel stops "inaccurate" at such tolerances on the pairwise form, ECOS on the others
TIGHT = {"moment": dict(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12),
         # the lifted form of the repeated rows (n auxiliary variables) stops "optimal_inaccurate" at 1e-12, its
         # answer 3e-6 away; at 1e-11 both programs end "optimal" and agree to 1e-10 (Clarabel 0.11)
         "lifted": dict(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11),
         "pairwise": dict(solver="ECOS", abstol=1e-12, reltol=1e-12, feastol=1e-12, max_iters=500)}


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    n = 120
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 2, n)
    y = np.where(X[:, 0] + 0.3 * g + 0.7 * rng.normal(size=n) > 0, 1, -1)
    k = rng.integers(0, 3, n)
    return X, y, g, k


def _problem(data, sw, kappa=0.05):
    w = fm.Weights(3, radius=3.0)
    s = data.score(w)
    gap = fm.auc_gap(s, data, kind="intra", protected=0, sample_weight=sw)
    return w, fm.Problem(fm.Minimize(fm.auc_loss(s, data.y, sample_weight=sw)), [gap <= kappa])


def test_pair_risks_against_the_weighted_double_sum(toy):
    X, y, g, _ = toy
    rng = np.random.default_rng(1)
    sw = rng.uniform(0.1, 3.0, y.size)
    h = X @ np.array([0.5, -0.3, 0.2])
    masks = np.vstack([(y > 0) & (g == 0), (y < 0) & (g == 1), y > 0, y < 0])
    pr = PairRisks(masks, [0, 2], [1, 3], [0, 1], 0.5, 1.0, 0.5, sw)
    T = pr.values(h)
    for t, (a, b) in zip(T, [(0, 1), (2, 3)]):
        S, R = np.flatnonzero(masks[a]), np.flatnonzero(masks[b])
        W = np.outer(sw[S], sw[R])
        brute = np.sum(W * 0.5 * (h[S][:, None] - h[R][None, :] - 1.0) ** 2) / W.sum()
        assert t == pytest.approx(brute, rel=1e-12)
    # gradient in h against central differences
    grad = pr.grad_h(h, np.array([1.0, 0.7]))
    e = np.zeros(h.size)
    for i in (0, 5, 17):
        e[:] = 0.0
        e[i] = 1e-6
        fd = (np.array([1.0, 0.7]) @ (pr.values(h + e) - pr.values(h - e))) / 2e-6
        assert grad[i] == pytest.approx(fd, abs=1e-8)


def test_moments_equal_repeated_rows(toy):
    X, y, g, k = toy
    rep = np.repeat(np.arange(y.size), k)
    masks = np.vstack([y > 0, y < 0, g == 1])
    a = LinearMoments.of(fm.Dataset(X), PairRisks(masks, [0], [1], [0], 0.5, 1.0, 0.5, k.astype(float)))
    b = LinearMoments.of(fm.Dataset(X[rep]), PairRisks(masks[:, rep], [0], [1], [0], 0.5, 1.0, 0.5))
    np.testing.assert_allclose(a.means, b.means, rtol=1e-12)
    np.testing.assert_allclose(a.covs, b.covs, rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("form", ["moment", "pairwise", "lifted"])
def test_exact_forms_equal_repeated_rows(toy, form):
    X, y, g, k = toy
    rep = np.repeat(np.arange(y.size), k)
    _, p = _problem(fm.Dataset(X, y, g), k)
    _, pr = _problem(fm.Dataset(X[rep], y[rep], g[rep]), None)
    a = p.family.programs().solve(form, **TIGHT[form])
    b = pr.family.programs().solve(form, **TIGHT[form])
    assert a["record"]["value"] == pytest.approx(b["record"]["value"], rel=1e-8)
    np.testing.assert_allclose(a["theta"], b["theta"], atol=1e-7)


def test_judge_equals_repeated_rows_and_zero_weight_removes(toy):
    X, y, g, k = toy
    rep = np.repeat(np.arange(y.size), k)
    w, p = _problem(fm.Dataset(X, y, g), k)
    _, pr = _problem(fm.Dataset(X[rep], y[rep], g[rep]), None)
    keep = k > 0
    _, pk = _problem(fm.Dataset(X[keep], y[keep], g[keep]), k[keep])
    theta = p.solve(backend="exact").variables[w.name]
    e = [q.evaluate(**{w.name: theta}) for q in (p, pr, pk)]
    for other in e[1:]:
        assert e[0].objective == pytest.approx(other.objective, rel=1e-12)
        assert e[0].metrics["auc"] == pytest.approx(other.metrics["auc"], rel=1e-12)
        key = next(m for m in e[0].metrics if m.startswith("c0:"))
        for name in ("true_gap", "f1", "f2"):
            assert e[0].metrics[key][name] == pytest.approx(other.metrics[key][name], rel=1e-12, abs=1e-15)
    # the certificate: the level-set bracket closes at the exact weighted optimum
    assert e[0].certificate["suboptimality_bound"] <= 1e-5
    # the weights matter: the unweighted judge differs
    _, pu = _problem(fm.Dataset(X, y, g), None)
    assert abs(pu.evaluate(**{w.name: theta}).objective - e[0].objective) > 1e-3


def test_stochastic_minibatch_quantities_equal_repeated_rows(toy):
    """The SMD oracle's per-row weights w_j / (W_S / n): a batch of all rows gives the weighted expectations,
    the same as a batch of all repeated rows (a row drawn uniformly is then an unbiased estimate)."""
    X, y, g, k = toy
    rep = np.repeat(np.arange(y.size), k)
    _, p = _problem(fm.Dataset(X, y, g), k)
    _, pr = _problem(fm.Dataset(X[rep], y[rep], g[rep]), None)
    sa, sb = p.family.saddle(), pr.family.saddle()
    rng = np.random.default_rng(2)
    theta, ab = 0.4 * rng.normal(size=3), 0.3 * rng.normal(size=2 * sa.P)
    ytil, alpha = np.full(sa.K1, 1.0 / sa.K1), 0.2 * rng.normal(size=sa.P)
    ga, ua, va = sa.gradients(theta, ab, ytil, alpha, np.arange(y.size), sa.shift(0.4))
    gb, ub, vb = sb.gradients(theta, ab, ytil, alpha, np.arange(rep.size), sb.shift(0.4))
    np.testing.assert_allclose(ua, ub, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(va, vb, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ga, gb, rtol=1e-11, atol=1e-13)


def test_estimator_weights_equal_repeated_rows(toy):
    pytest.importorskip("sklearn")
    X, y, g, k = toy
    rep = np.repeat(np.arange(y.size), k)
    a = fm.FairAUCClassifier(kappa=0.05, protected=0).fit(X, y, g, sample_weight=k)
    b = fm.FairAUCClassifier(kappa=0.05, protected=0).fit(X[rep], y[rep], g[rep])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    assert a.threshold_ == pytest.approx(b.threshold_, abs=1e-6)
    assert a.result_.ok
    with pytest.raises(ValueError, match="class"):
        fm.FairAUCClassifier().fit(X, y, g, sample_weight=(y > 0).astype(float))


def test_bad_weights_are_refused(toy):
    X, y, g, _ = toy
    data = fm.Dataset(X, y, g)
    s = data.score(fm.Weights(3, radius=1.0))
    with pytest.raises(fm.DataError, match=">= 0"):
        fm.auc_loss(s, y, sample_weight=-np.ones(y.size))
    with pytest.raises(fm.DataError, match="all zero"):
        fm.auc_gap(s, data, kind="intra", protected=0, sample_weight=(g == 0).astype(float))
    w = fm.Weights(3, radius=1.0)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, y, sample_weight=np.ones(y.size))),
                      [fm.auc_gap(s, data, kind="intra", protected=0) <= 0.1])
    assert "same sample_weight" in prob.describe()


def test_stochastic_method_reaches_the_weighted_optimum(toy):
    """SFLS on the weighted problem against the exact weighted optimum: within the family's cross-check
    tolerance (1e-2 relative to max(1, |optimum|)), and feasible on the full data."""
    X, y, g, k = toy
    _, p = _problem(fm.Dataset(X, y, g), k)
    exact = p.solve(backend="exact")
    stoch = p.solve(backend="stochastic", seed=0)
    assert stoch.objective - exact.objective <= 1e-2 * max(1.0, abs(exact.objective))
    assert stoch.objective >= exact.objective - 1e-6
    assert p.evaluate(stoch).max_violation <= 1e-9


def test_weighted_gap_in_a_generic_composition_equals_repeated_rows(toy):
    """The weighted AUC gap as a constraint of a group-DRO objective (the generic convex reduction: the atom's
    CVXPY lowering and its quadratic leaves): the same optimum as with repeated rows."""
    X, y, g, k = toy
    rep = np.repeat(np.arange(y.size), k)

    def build(data, sw):
        w = fm.Weights(3, radius=3.0, intercept=True)
        s = data.score(w)
        risks = fm.group_mean(fm.logistic_loss(s, data.y, sample_weight=sw), data.groups)
        return fm.Problem(fm.Minimize(fm.max(risks)), [fm.auc_gap(s, data, kind="intra", protected=0,
                                                                    sample_weight=sw) <= 0.3])
    a = build(fm.Dataset(X, y, g), k).solve(backend="exact")
    b = build(fm.Dataset(X[rep], y[rep], g[rep]), None).solve(backend="exact")
    assert a.objective == pytest.approx(b.objective, rel=1e-7)


def test_covariance_factors_keep_every_direction_of_raw_scale_columns():
    """Columns on the scales of raw data (an income's variance 1e10 beside indicators' 1e-2): the factors R_S of the
    moment form satisfy R_S' R_S = Sigma_S entry by entry relative to the columns' scales. A cut at 1e-12 of Sigma_S's
    largest eigenvalue dropped the indicators' directions, and the exact AUC program's optimum violated its
    constraint by 0.18 on Adult's CSV file."""
    rng = np.random.default_rng(3)
    n = 400
    X = np.column_stack([rng.normal(2e5, 1e5, n), rng.normal(40, 12, n), (rng.random(n) < 0.02).astype(float),
                         (rng.random(n) < 0.5).astype(float)])
    masks = np.vstack([np.arange(n) < n // 2, np.arange(n) >= n // 2])
    with pytest.warns(UserWarning, match="badly scaled"):
        data = fm.Dataset(X)
    moments = LinearMoments.of(data, PairRisks(masks, [0], [1], [0], 0.5, 1.0, 0.5))
    for R, C in zip(moments.factors(), moments.covs):
        sd = np.sqrt(np.diag(C))
        np.testing.assert_allclose((R.T @ R) / np.outer(sd, sd), C / np.outer(sd, sd), atol=1e-10)
