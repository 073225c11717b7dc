"""``fm.assess`` of a randomized predictor (a distribution over output levels per row, e.g. DP post-processing):
the by-group and summary metrics computed exactly from the distributions, against brute force (every row expanded
into one row per level, weighted by its probability, then the deterministic metrics) and direct loops."""
import numpy as np
import pytest

import fairmodel as fm

pd = pytest.importorskip("pandas")


def _case(seed, n=150, m=7, groups=3, weighted=True):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(m, 0.6), size=n)
    P[rng.random((n, m)) < 0.3] = 0.0                  # exact zeros: point masses and gaps
    P[P.sum(axis=1) == 0, 0] = 1.0
    P /= P.sum(axis=1, keepdims=True)
    levels = rng.permutation(np.linspace(-1.0, 2.0, m))  # columns not in ascending order
    g = rng.integers(0, groups, n)
    y = rng.normal(size=n)
    sw = rng.uniform(0.2, 3.0, n) if weighted else None
    return P, levels, g, y, sw


def _expanded(P, levels, g, y, sw):
    n, m = P.shape
    w = (np.ones(n) if sw is None else sw)[:, None] * P
    keep = w.ravel() > 0
    return (np.repeat(y, m)[keep], np.tile(levels, n)[keep], np.repeat(g, m)[keep], w.ravel()[keep])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("groups", [2, 5])
def test_randomized_metrics_equal_the_expanded_deterministic_ones(weighted, groups):
    P, levels, g, y, sw = _case(groups, groups=groups, weighted=weighted)
    a = fm.assess(y, y_proba=P, levels=levels, sensitive_features=g, sample_weight=sw)
    assert list(a.metrics) == ["mse", "mae", "ks", "pmf"]
    ye, pe, ge, we = _expanded(P, levels, g, y, sw)
    b = fm.assess(ye, y_pred=pe, sensitive_features=ge, sample_weight=we, metrics=["mse", "mae", "ks"])
    for m in ("mse", "mae", "ks"):
        np.testing.assert_allclose(a.by_group[m].to_numpy(), b.by_group[m].to_numpy(), rtol=0, atol=1e-12)
        assert a.overall[m] == pytest.approx(b.overall[m], abs=1e-12)
        assert a.difference()[m] == pytest.approx(b.difference()[m], abs=1e-12)


def test_pmf_and_ks_against_loops_and_the_standalone_metrics():
    P, levels, g, y, sw = _case(7, groups=4)
    a = fm.assess(y_proba=P, levels=levels, sensitive_features=g, sample_weight=sw)
    assert list(a.metrics) == ["ks", "pmf"]
    order = np.argsort(levels)
    for k in range(4):
        s = g == k
        pmf_g = [sum(sw[i] * P[i, l] for i in np.flatnonzero(s)) / sw[s].sum() for l in range(P.shape[1])]
        pmf = [sum(sw[i] * P[i, l] for i in range(len(y))) / sw.sum() for l in range(P.shape[1])]
        assert a.by_group["pmf"].iloc[k] == pytest.approx(np.mean(np.abs(np.subtract(pmf_g, pmf))), abs=1e-12)
        ks = max(abs(sum(pmf_g[j] for j in order if levels[j] <= t) - sum(pmf[j] for j in order if levels[j] <= t))
                 for t in levels)
        assert a.by_group["ks"].iloc[k] == pytest.approx(ks, abs=1e-12)
    direct = fm.metrics.ks_unfairness(g, proba=P, grid=levels, sample_weight=sw)
    np.testing.assert_allclose(a.by_group["ks"].to_numpy(), [direct[str(k)] for k in range(4)], atol=1e-12)
    direct = fm.metrics.pmf_unfairness(g, P[:, order], sample_weight=sw)
    np.testing.assert_allclose(a.by_group["pmf"].to_numpy(), [direct[str(k)] for k in range(4)], atol=1e-12)
    assert a.overall["ks"] == 0.0 and a.overall["pmf"] == 0.0


def test_intersections_and_intervals():
    P, levels, g, y, sw = _case(3, n=200, groups=2)
    h = np.random.default_rng(9).integers(0, 2, len(y))
    a = fm.assess(y, y_proba=P, levels=levels, sensitive_features={"a": g, "b": h}, sample_weight=sw)
    assert a.by_group.index.names == ["a", "b"] and len(a.by_group) == 4
    ci1, ci2 = a.ci(n_boot=50, seed=1), a.ci(n_boot=50, seed=1)
    np.testing.assert_array_equal(ci1.draws_by_group, ci2.draws_by_group)
    ye, pe, ge, we = _expanded(P, levels, g * 2 + h, y, sw)
    b = fm.assess(ye, y_pred=pe, sensitive_features=ge, sample_weight=we, metrics=["mse", "ks"])
    np.testing.assert_allclose(a.by_group["mse"].to_numpy(), b.by_group["mse"].to_numpy(), atol=1e-12)
    np.testing.assert_allclose(a.by_group["ks"].to_numpy(), b.by_group["ks"].to_numpy(), atol=1e-12)


def test_bad_randomized_inputs_are_refused():
    P, levels, g, y, _ = _case(4)
    with pytest.raises(fm.DataError, match="levels="):
        fm.assess(y, y_proba=P, sensitive_features=g)
    with pytest.raises(fm.DataError, match="once"):
        fm.assess(y, y_pred=y, y_proba=P, levels=levels, sensitive_features=g)
    with pytest.raises(fm.DataError, match="probability rows"):
        fm.assess(y, y_proba=2 * P, levels=levels, sensitive_features=g)
    with pytest.raises(fm.DataError, match="cannot be computed from y_proba"):
        fm.assess(y, y_proba=P, levels=levels, sensitive_features=g, metrics=["accuracy"])
    with pytest.raises(fm.DataError, match="need numeric y_true"):
        fm.assess(y_proba=P, levels=levels, sensitive_features=g, metrics=["mse"])
    with pytest.raises(fm.DataError, match="pmf needs a randomized"):
        fm.assess(y, y_pred=y + 0.1, sensitive_features=g, metrics=["pmf"])
