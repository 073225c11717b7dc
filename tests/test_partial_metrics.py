"""Properties of the empirical partial demographic parity (fm.metrics.partial_dp / weak_partial_dp)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import ks_2samp

import fairmodel as fm
from fairmodel.errors import DataError, ModelError
from fairmodel.metrics.partial import ccdf

BANDS = [(0.0, 1.0), (0.7, 1.0), (0.05, 0.3), (0.2, 0.6)]


def _sample(seed, n0=300, n1=500, shift=0.3):
    rng = np.random.default_rng(seed)
    s = np.concatenate([rng.standard_normal(n0), rng.standard_normal(n1) * 1.3 + shift])
    return s, np.repeat(["a", "b"], [n0, n1])


def test_full_band_is_the_ks_statistic_and_the_rate_difference():
    s, g = _sample(0)
    ks = ks_2samp(s[g == "a"], s[g == "b"]).statistic
    assert fm.metrics.partial_dp(s, g, band=(0, 1)).gap == pytest.approx(ks, abs=1e-12)
    for t in (-0.5, 0.0, 0.7):
        rates = [np.mean(s[g == k] > t) for k in ("a", "b")]
        assert fm.metrics.weak_partial_dp(s, g, band=(0, 1), threshold=t).gap == pytest.approx(abs(rates[0] - rates[1]),
                                                                                              abs=1e-12)


@pytest.mark.parametrize("band", BANDS)
def test_identical_groups_and_ties_give_zero(band):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(200)
    s, g = np.concatenate([x, x]), np.repeat([0, 1], 200)
    assert fm.metrics.partial_dp(s, g, band=band).gap == 0.0
    assert fm.metrics.weak_partial_dp(s, g, band=band).gap == 0.0
    tied = np.zeros(400)
    assert fm.metrics.partial_dp(tied, g, band=band).gap == 0.0
    assert fm.metrics.weak_partial_dp(tied, g, band=band).gap == 0.0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(BANDS), st.floats(-1, 1))
def test_range_symmetry_and_monotone_invariance(seed, band, t):
    s, g = _sample(seed, 40, 60)
    m = fm.metrics.partial_dp(s, g, band=band)
    assert 0.0 <= m.gap <= 1.0 and m.fairness == pytest.approx(1 - m.gap)
    swapped = np.where(g == "a", "b", "a")
    assert fm.metrics.partial_dp(s, swapped, band=band).gap == pytest.approx(m.gap, abs=1e-12)
    # a common strictly increasing transform keeps every within-group rank, hence DP^I
    assert fm.metrics.partial_dp(np.exp(s) + s ** 3, g, band=band).gap == pytest.approx(m.gap, abs=1e-12)
    w = fm.metrics.weak_partial_dp(s, g, band=band, threshold=t)
    assert 0.0 <= w.gap <= 1.0
    assert fm.metrics.weak_partial_dp(s, swapped, band=band, threshold=t).gap == pytest.approx(w.gap, abs=1e-12)


@pytest.mark.parametrize("band", [(0.0, 1.0), (0.7, 1.0), (0.05, 0.3)])
def test_shifting_one_group_far_away_drives_the_gap_to_one(band):
    s, g = _sample(2)
    s = np.where(g == "b", s + 100.0, s)
    assert fm.metrics.partial_dp(s, g, band=band).gap == pytest.approx(1.0, abs=1e-12)


def test_band_rate_is_identity_29_by_brute_force():
    """Pr(s > θ | group, rank in I) computed by brute force on continuous scores equals (29) up to 1/n_k."""
    s, g = _sample(3, 2000, 2000)
    band = (0.2, 0.6)
    a = np.sort(s[g == "a"])
    rank = ccdf(a, a)
    inside = a[(rank >= band[0]) & (rank < band[1])]
    for t in np.quantile(a, [0.1, 0.4, 0.5, 0.7, 0.9]):
        brute = np.mean(inside > t)
        clip = (np.clip(np.mean(a > t), *band) - band[0]) / (band[1] - band[0])
        assert abs(brute - clip) <= 2.0 / inside.size      # discreteness of the trimmed sample only


def test_trimmed_estimator_differs_only_by_discreteness():
    s, g = _sample(4, 3000, 3000)
    for band in BANDS[1:]:
        clip = fm.metrics.partial_dp(s, g, band=band).gap
        trimmed = fm.metrics.partial_dp(s, g, band=band, estimator="trimmed").gap
        # each trimmed sample has >= 3000 * 0.25 points; the two estimators differ by O(1/(n_k (beta - alpha)))
        assert abs(clip - trimmed) <= 4.0 / (3000 * (band[1] - band[0]))


def test_lemma_5_1_common_thresholds_exist():
    """If DP^I <= kappa, for every level p in [alpha, beta - kappa (beta - alpha)) one θ puts every group's
    upper-tail fraction in [p - 1/n_k, p + kappa (beta - alpha) + 1/n_k] (Lemma 5.1 on a sample)."""
    s, g = _sample(5, 400, 600, shift=0.2)
    band = (0.7, 1.0)
    kappa = fm.metrics.partial_dp(s, g, band=band).gap
    top = band[1] - kappa * (band[1] - band[0])
    thetas = np.concatenate([[-np.inf], np.unique(s), [np.inf]])
    groups = [np.sort(s[g == k]) for k in ("a", "b")]
    for p in np.linspace(band[0], top, 12, endpoint=False):
        ok = np.ones(thetas.size, dtype=bool)
        for srt in groups:
            f = ccdf(srt, thetas)
            ok &= (f >= p - 1 / srt.size) & (f <= p + kappa * (band[1] - band[0]) + 1 / srt.size)
        assert ok.any(), f"no common threshold at level p = {p}"


def test_three_groups_report_every_pair():
    rng = np.random.default_rng(6)
    s = rng.standard_normal(600) + np.repeat([0.0, 0.5, 1.0], 200)
    g = np.repeat(["x", "y", "z"], 200)
    m = fm.metrics.partial_dp(s, g, band=(0.5, 1.0))
    assert set(m.pairwise) == {"x/y", "x/z", "y/z"}
    assert m.gap == max(m.pairwise.values())
    assert m.to_dict()["fairness"] == pytest.approx(1 - m.gap)


def test_rank_curve_runs_from_zero_to_one():
    s, g = _sample(7)
    curve = fm.metrics.rank_curve(s, g)
    for k in ("a", "b"):
        assert curve[k][0] == 0.0 and curve[k][-1] == 1.0 and np.all(np.diff(curve[k]) >= 0)


@pytest.mark.parametrize("band, match", [((0.5, 0.5), "alpha < beta"), ((0.6, 0.2), "alpha < beta"),
                                         ((-0.1, 0.5), r"\[0, 1\]"), ((0.2, 1.5), r"\[0, 1\]"),
                                         ((0.1, np.nan), "finite"), ((0.1,), "pair"), ("ab", "finite")])
def test_bad_bands_are_rejected(band, match):
    s, g = _sample(8, 20, 20)
    with pytest.raises(ModelError, match=match):
        fm.metrics.partial_dp(s, g, band=band)


def test_bad_groups_and_scores_are_rejected():
    s, g = _sample(9, 20, 20)
    with pytest.raises(DataError, match="at least 2"):
        fm.metrics.partial_dp(s, np.zeros(40), band=(0, 1))
    with pytest.raises(DataError, match="must match"):
        fm.metrics.partial_dp(s[:-1], g, band=(0, 1))
    with pytest.raises(DataError, match="NaN"):
        fm.metrics.partial_dp(np.where(np.arange(40) == 3, np.nan, s), g, band=(0, 1))
    # 3 points cannot have a rank in [0.9, 1.0): ranks are 0, 1/3, 2/3
    with pytest.raises(DataError, match="too few"):
        fm.metrics.partial_dp(np.arange(23.0), np.repeat([0, 1], [20, 3]), band=(0.9, 1.0))
    with pytest.raises(ModelError, match="estimator"):
        fm.metrics.partial_dp(s, g, band=(0, 1), estimator="ks")
