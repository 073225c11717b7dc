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


def test_duplicated_levels_are_one_output_value():
    """Two columns with the same level are one output value: the pmf compares the probability of each distinct
    value, and the KS distance is between CDFs (a CDF does not stop half-way through a value). Split every
    column of a case into two columns of the same level, in proportions that vary by row: the metrics must not
    change (before the fix the pmf averaged over columns and the KS read a CDF half-way through a level)."""
    P, levels, g, y, sw = _case(11, groups=3)
    a = fm.assess(y, y_proba=P, levels=levels, sensitive_features=g, sample_weight=sw)
    split = np.random.default_rng(12).random(P.shape) ** 3 * (g[:, None] == 0)   # unequal, group-dependent
    P2 = np.hstack([P * split, P * (1 - split)])
    b = fm.assess(y, y_proba=P2, levels=np.r_[levels, levels], sensitive_features=g, sample_weight=sw)
    for m in ("mse", "mae", "ks", "pmf"):
        np.testing.assert_allclose(b.by_group[m].to_numpy(), a.by_group[m].to_numpy(), rtol=0, atol=1e-12)
    # the KS against the expanded deterministic predictions (ties merged by construction there)
    ye, pe, ge, we = _expanded(P2, np.r_[levels, levels], g, y, sw)
    c = fm.assess(ye, y_pred=pe, sensitive_features=ge, sample_weight=we, metrics=["ks"])
    np.testing.assert_allclose(b.by_group["ks"].to_numpy(), c.by_group["ks"].to_numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("make, message", [
    (lambda P, lv: dict(y_proba=P * 0.9, levels=lv), r"row 0 sums to 0\.9"),
    (lambda P, lv: dict(y_proba=np.hstack([P[:, :1] - 0.5, P[:, 1:], np.full((len(P), 1), 0.5)]),
                        levels=np.r_[lv, 9.0]), "negative"),
    (lambda P, lv: dict(y_proba=np.where(P > 0.5, np.nan, P), levels=lv), "NaN"),
    (lambda P, lv: dict(y_proba=P[:, 0], levels=lv[:1]), "2-D"),
    (lambda P, lv: dict(y_proba=P.astype(str), levels=lv), "numeric"),
    (lambda P, lv: dict(y_proba=P, levels=lv[:-1]), "levels has 6 entries but y_proba has 7 columns"),
    (lambda P, lv: dict(y_proba=P, levels=lv.astype(str)), "levels must be numeric"),
])
def test_bad_probabilities_and_levels_say_what_is_wrong(make, message):
    P, levels, g, y, _ = _case(5)
    with pytest.raises(fm.DataError, match=message):
        fm.assess(y, sensitive_features=g, **make(P, levels))


def test_levels_without_y_proba_is_refused_not_ignored():
    P, levels, g, y, _ = _case(6)
    with pytest.raises(fm.DataError, match="levels= without y_proba="):
        fm.assess(y, y_pred=y + 0.1, levels=levels, sensitive_features=g)


def test_y_proba_named_as_a_column_is_refused_clearly():
    P, levels, g, y, _ = _case(6)
    frame = pd.DataFrame({"y": y, "g": g})
    with pytest.raises(fm.DataError, match="y_proba must be a 2-D"):
        fm.assess("y", y_proba="p", levels=levels, sensitive_features="g", data=frame)


def test_single_group_has_zero_gaps():
    P, levels, g, y, sw = _case(8)
    a = fm.assess(y, y_proba=P, levels=levels, sensitive_features=np.zeros(len(y)), sample_weight=sw)
    assert a.by_group["ks"].iloc[0] == 0.0 and a.by_group["pmf"].iloc[0] == 0.0
    assert a.by_group["mse"].iloc[0] == pytest.approx(a.overall["mse"], abs=1e-15)
