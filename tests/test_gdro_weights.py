"""Sample-weighted group DRO, MERO and ERM in the group-DRO family: weighted group risks
R_g = sum_{j in g} s_j loss_j / sum_{j in g} s_j, solved exactly and by ALEG with per-group draws proportional to
the weights. Oracles: the same problem on rows repeated s_j times (integer weights, zeros included), and an own CVXPY
epigraph program of the weighted means."""
import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.data.dataset import Dataset
from fairmodel.errors import DataError

from .dask_helpers import as_dask_dataset


@pytest.fixture(scope="module")
def weighted():
    rng = np.random.default_rng(7)
    n, d = 500, 4
    X = rng.standard_normal((n, d))
    g = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    y = np.where(X[:, 0] - 0.8 * X[:, 1] + 0.6 * g + rng.standard_normal(n) > 0.4, 1, -1)
    k = rng.integers(0, 4, n).astype(float)           # integer weights, zeros included
    rep = np.repeat(np.arange(n), k.astype(int))
    return X, y, g, k, rep


def _problem(X, y, g, loss="logistic", sample_weight=None, mero=False, radius=3.0):
    data = fm.Dataset(X, y, groups=g)
    w = fm.Weights(X.shape[1], radius=radius, intercept=True)
    risks = fm.group_mean(getattr(fm, f"{loss}_loss")(data.score(w), data.y, sample_weight=sample_weight),
                          data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks)) if mero else fm.max(risks)))


def _own_weighted_optimum(X, y, g, k, radius=3.0, hinge=False):
    """min_{||(w, b)|| <= radius} max_g sum_{j in g} k_j loss_j / sum_{j in g} k_j: an own CVXPY epigraph program."""
    theta, t = cp.Variable(X.shape[1] + 1), cp.Variable()
    z = cp.multiply(y, X @ theta[:-1] + theta[-1])
    loss = cp.pos(1 - z) if hinge else cp.logistic(-z)
    cons = [cp.sum(cp.multiply(k[g == c], loss[np.flatnonzero(g == c)])) / k[g == c].sum() <= t for c in range(3)]
    cp.Problem(cp.Minimize(t), cons + [cp.norm(theta) <= radius]).solve(solver="CLARABEL")
    return float(t.value)


@pytest.mark.parametrize("loss, method", [("logistic", "dual"), ("logistic", "epigraph"), ("hinge", "epigraph")])
def test_weighted_group_dro_equals_repeated_rows(weighted, loss, method):
    X, y, g, k, rep = weighted
    prob = _problem(X, y, g, loss, sample_weight=k)
    assert prob.family.name == "gdro"
    res = prob.solve(method=method)
    repeated = _problem(X[rep], y[rep], g[rep], loss).solve(method=method)
    assert res.ok and repeated.ok
    assert res.objective == pytest.approx(repeated.objective, abs=1e-7)
    assert res.objective == pytest.approx(_own_weighted_optimum(X, y, g, k, hinge=loss == "hinge"), abs=1e-6)
    np.testing.assert_allclose(res.variables["q"], repeated.variables["q"], atol=1e-4)
    # the unweighted optimum differs: the weights are used
    assert abs(_problem(X, y, g, loss).solve(method=method).objective - res.objective) > 1e-3


def test_weighted_mero_and_erm_equal_repeated_rows(weighted):
    X, y, g, k, rep = weighted
    mero = _problem(X, y, g, sample_weight=k, mero=True).solve(method="dual")
    assert mero.ok and mero.objective == pytest.approx(
        _problem(X[rep], y[rep], g[rep], mero=True).solve(method="dual").objective, abs=1e-7)
    # ERM: one weighted mean; the metrics by sensitive group are the weighted group risks, mean_risk the weighted mean
    results = []
    for Xs, ys, gs, sw in ((X, y, g, k), (X[rep], y[rep], g[rep], None)):
        data = fm.Dataset(Xs, ys, groups=gs)
        w = fm.Weights(X.shape[1], radius=3.0, intercept=True)
        prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(w), data.y, sample_weight=sw))))
        assert prob.family.name == "gdro"
        results.append(prob.solve())
    a, b = results
    assert a.objective == pytest.approx(b.objective, abs=1e-8)
    assert a.metrics["mean_risk"] == pytest.approx(b.metrics["mean_risk"], abs=1e-8)
    assert a.metrics["mean_risk"] == pytest.approx(a.objective, abs=1e-8)
    for name in b.metrics["group_risks"]:
        assert a.metrics["group_risks"][name] == pytest.approx(b.metrics["group_risks"][name], abs=1e-8)
        assert a.metrics["group_accuracy"][name] == pytest.approx(b.metrics["group_accuracy"][name], abs=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_aleg_on_weighted_risks_meets_the_repeated_optimum(weighted, loss):
    """ALEG draws each group's rows in proportion to their weights: an ok result is within its gap tolerance of the
    exact optimum of the repeated rows (the weighted problem's optimum by the identity above)."""
    X, y, g, k, rep = weighted
    res = _problem(X, y, g, loss, sample_weight=k).solve(backend="stochastic", seed=0)
    exact = _problem(X[rep], y[rep], g[rep], loss).solve()
    tolerance = next(c["tolerance"] for c in res.checks if c["name"].startswith("duality gap"))
    assert res.ok, res.message
    assert -1e-7 <= res.objective - exact.objective <= tolerance


def test_weighted_per_group_draws_follow_the_weights():
    """Within each group a row is drawn with probability w_j / W_g: the counts of 200,000 draws per group are within
    5 standard deviations of the binomial expectation (a false alarm has probability below 1e-5 per row), and a row of
    weight zero is never drawn."""
    rng = np.random.default_rng(3)
    g = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    w = np.array([1.0, 0.0, 3.0, 2.0, 2.0, 0.5, 4.0, 0.0, 1.5])
    data = Dataset(rng.standard_normal((g.size, 2)), np.ones(g.size), groups=g)
    draws = 200_000
    rows = data.sampler("per_group", draws, seed=1, weights=w).draw_rows()
    counts = np.bincount(rows, minlength=g.size)
    p = w / np.bincount(g, weights=w)[g]
    assert np.all(np.abs(counts - draws * p) <= 5 * np.sqrt(draws * p * (1 - p)) + 1e-9)
    assert counts[w == 0].sum() == 0
    with pytest.raises(DataError, match="all zero"):
        data.sampler("per_group", 4, seed=1, weights=np.where(g == 1, 0.0, 1.0))
    with pytest.raises(DataError, match="per_group"):
        data.sampler("uniform", 4, seed=1, weights=w)
    with pytest.raises(DataError, match="nonnegative"):
        data.sampler("per_group", 4, seed=1, weights=-w)


def test_alegs_minibatches_of_weighted_risks_follow_the_weights(weighted):
    """The group risks' sampler (ALEG's and SMD's minibatches) draws rows in proportion to their weights within each
    group: rows of weight zero never, a row of weight 3 about three times as often as a row of weight 1 (200,000 draws
    per group, each group's weight-1 and weight-3 rows about 60 each: the ratio's standard deviation is below 0.03, and
    0.25 is 8 of them)."""
    from fairmodel.families.gdro import group_risks_of
    X, y, g, k, _ = weighted
    data = fm.Dataset(X, y, groups=g)
    w = fm.Weights(X.shape[1], radius=3.0, intercept=True)
    risks = group_risks_of(fm.group_mean(fm.logistic_loss(data.score(w), data.y, sample_weight=k), data.groups))
    rows = risks.sampler(200_000, np.random.default_rng(0)).draw_rows()
    counts = np.bincount(rows, minlength=k.size)
    assert counts[k == 0].sum() == 0
    for group in range(3):
        per_row = [counts[(k == v) & (g == group)].mean() for v in (1.0, 3.0)]
        assert per_row[1] / per_row[0] == pytest.approx(3.0, abs=0.25)


def test_weighted_group_dro_on_dask_data_equals_the_in_memory_solve(weighted):
    """Dask-backed rows (chunks of 200): the exact dual method by passes equals the in-memory weighted optimum, and
    ALEG's chunked minibatches draw in proportion to the weights: ok, within its gap of the optimum."""
    pytest.importorskip("dask.array")
    X, y, g, k, rep = weighted
    data = as_dask_dataset(X, y, g, chunk=200)
    w = fm.Weights(X.shape[1], radius=3.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y, sample_weight=k),
                                                       data.groups))))
    assert prob.family.name == "gdro"
    in_memory = _problem(X, y, g, sample_weight=k).solve(method="dual")
    exact = prob.solve(method="dual")
    assert exact.ok and exact.objective == pytest.approx(in_memory.objective, abs=1e-8)
    res = prob.solve(backend="stochastic", seed=0)
    tolerance = next(c["tolerance"] for c in res.checks if c["name"].startswith("duality gap"))
    assert res.ok, res.message
    assert -1e-7 <= res.objective - in_memory.objective <= tolerance


def test_weighted_draws_of_chunked_rows_follow_the_weights():
    """The chunk sampler with weights: within each group a row is drawn with probability w_j / W_g (counts of 200,000
    draws per group within 5 binomial standard deviations), rows of weight zero never, whatever chunk they are in."""
    pytest.importorskip("dask.array")
    rng = np.random.default_rng(4)
    g = np.array([0, 1, 0, 0, 1, 2, 2, 1, 2, 0, 2, 1])
    w = np.array([1.0, 2.0, 0.0, 3.0, 1.0, 0.5, 4.0, 0.0, 1.5, 2.0, 1.0, 3.0])
    data = as_dask_dataset(rng.standard_normal((g.size, 2)), np.ones(g.size), g, chunk=5)
    draws = 200_000
    sampler = data.sampler("per_group", draws, seed=1, weights=w, prefetch=False)
    counts = np.bincount(sampler.draw_rows(), minlength=g.size)
    p = w / np.bincount(g, weights=w)[g]
    assert np.all(np.abs(counts - draws * p) <= 5 * np.sqrt(draws * p * (1 - p)) + 1e-9)
    assert counts[w == 0].sum() == 0
    with pytest.raises(DataError, match="all zero"):
        data.sampler("per_group", 4, seed=1, weights=np.where(g == 1, 0.0, 1.0), prefetch=False)
