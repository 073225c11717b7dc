"""The metrics against references written here: scikit-learn with sample weights, brute-force double sums over
pairs, weighted empirical CDFs evaluated on a fine grid of thresholds, and the stratified bootstrap's multiplicities
against their distribution (each row of a group of n rows is drawn Binomial(n, 1/n) times: mean 1).

Identities hold to rounding (1e-12); the bootstrap check is statistical (K_SE = 5 standard errors, computed from the
draws)."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.metrics import vectorized
from fairmodel.metrics.auc import auc_between, auc_fairness_terms
from fairmodel.metrics.rates import (accuracy, balanced_accuracy, false_negative_rate, false_positive_rate, precision,
                                     roc_auc, selection_rate, true_positive_rate)

skm = pytest.importorskip("sklearn.metrics")
TOL = 1e-12
K_SE = 5.0


def _data(n=400, seed=0, k=3):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, k, n)
    y = (rng.random(n) < 0.35 + 0.1 * g).astype(int)
    s = np.round(rng.normal(size=n) + y + 0.3 * g, 1)            # rounded: ties
    p = (s > 0.7).astype(int)
    w = rng.uniform(0.1, 3.0, n)
    return y, p, s, g, w


def _weighted_confusion(y, p, w):
    return [w[(y == a) & (p == b)].sum() for a, b in ((0, 0), (0, 1), (1, 0), (1, 1))]


def test_decision_rates_with_weights_against_sklearn_and_the_confusion_matrix():
    y, p, s, g, w = _data()
    tn, fp, fn, tp = skm.confusion_matrix(y, p, sample_weight=w).ravel()
    assert np.allclose([tn, fp, fn, tp], _weighted_confusion(y, p, w), rtol=1e-12)
    expected = {selection_rate: (fp + tp) / (tn + fp + fn + tp), true_positive_rate: tp / (tp + fn),
                false_positive_rate: fp / (fp + tn), false_negative_rate: fn / (fn + tp),
                accuracy: skm.accuracy_score(y, p, sample_weight=w),
                balanced_accuracy: skm.balanced_accuracy_score(y, p, sample_weight=w),
                precision: skm.precision_score(y, p, sample_weight=w)}
    for fn_, value in expected.items():
        assert fn_(y, p, sample_weight=w) == pytest.approx(value, abs=TOL), fn_.__name__
    assert roc_auc(y, s, sample_weight=w) == pytest.approx(skm.roc_auc_score(y, s, sample_weight=w), abs=TOL)
    # the same on -1/+1 codings
    assert false_positive_rate(2 * y - 1, 2 * p - 1, sample_weight=w) == pytest.approx(fp / (fp + tn), abs=TOL)


def _pair_auc(a, b, wa, wb, t):
    """(sum_ij wa_i wb_j [1(a_i > b_j) + t 1(a_i = b_j)]) / (sum wa sum wb): the weighted Definition 1."""
    wins = (a[:, None] > b[None, :]) + t * (a[:, None] == b[None, :])
    return float(wa @ wins @ wb / (wa.sum() * wb.sum()))


@pytest.mark.parametrize("t", [0.0, 0.5, 1.0])
def test_auc_between_sets_with_weights_and_ties_against_the_double_sum(t):
    y, p, s, g, w = _data(seed=1)
    S, T = g == 0, (g > 0) & (y == 0)
    assert auc_between(s, S, T, ties=t) == pytest.approx(_pair_auc(s[S], s[T], np.ones(S.sum()),
                                                                   np.ones(T.sum()), t), abs=TOL)
    assert auc_between(s, S, T, ties=t, sample_weight=w) == pytest.approx(_pair_auc(s[S], s[T], w[S], w[T], t),
                                                                          abs=TOL)
    terms = auc_fairness_terms(s, 2 * y - 1, np.where(g == 0, 1, -1), kind="intra", sample_weight=w, ties=t)
    G1, G1p = (y == 1) & (g == 0), (y == 0) & (g == 0)
    G2, G2p = (y == 1) & (g > 0), (y == 0) & (g > 0)
    a1 = _pair_auc(s[G1], s[G1p], w[G1], w[G1p], t)
    a2 = _pair_auc(s[G2], s[G2p], w[G2], w[G2p], t)
    assert terms["auc_1"] == pytest.approx(a1, abs=TOL) and terms["auc_2"] == pytest.approx(a2, abs=TOL)
    assert terms["gap"] == pytest.approx(abs(a1 - a2), abs=TOL)


def _weighted_cdf(values, w, t):
    return np.array([w[values <= x].sum() for x in t]) / w.sum()


def test_dp_metrics_with_weights_against_brute_force():
    """KS unfairness sup_t |F_s(t) - F(t)| (weighted CDFs evaluated at every level), the pmf unfairness mean / max
    over levels of |pmf_s - pmf|, the randomized risk and the MSE, on randomized and deterministic predictions."""
    rng = np.random.default_rng(2)
    n, levels = 300, np.array([-1.0, -0.5, 0.0, 0.5, 0.5, 1.0])      # a repeated level: its columns add up
    P = rng.dirichlet(np.ones(levels.size) * 0.7, size=n)
    g = rng.integers(0, 3, n)
    y = rng.uniform(-1, 1, n)
    w = rng.uniform(0.2, 2.0, n)
    values = np.unique(levels)
    merged = np.stack([P[:, levels == v].sum(axis=1) for v in values], axis=1)
    cdf = np.cumsum(merged, axis=1)
    overall = w @ cdf / w.sum()
    ks = fm.metrics.ks_unfairness(g, proba=P, grid=levels, sample_weight=w)
    pmf_mean = fm.metrics.pmf_unfairness(g, merged, sample_weight=w)
    pmf_max = fm.metrics.pmf_unfairness(g, merged, reduce="max", sample_weight=w)
    for k in range(3):
        m = g == k
        assert ks[str(k)] == pytest.approx(np.abs(w[m] @ cdf[m] / w[m].sum() - overall).max(), abs=TOL)
        gap = np.abs(w[m] @ merged[m] / w[m].sum() - w @ merged / w.sum())
        assert pmf_mean[str(k)] == pytest.approx(gap.mean(), abs=TOL)
        assert pmf_max[str(k)] == pytest.approx(gap.max(), abs=TOL)
    risk = np.sum(w * np.sum(P * (levels[None, :] - y[:, None]) ** 2, axis=1)) / w.sum()
    assert fm.metrics.randomized_risk(y, P, levels, sample_weight=w) == pytest.approx(risk, abs=TOL)
    pred = np.round(rng.normal(size=n), 1)
    assert fm.metrics.mse(y, pred, sample_weight=w) == pytest.approx(np.average((pred - y) ** 2, weights=w), abs=TOL)
    grid = np.unique(pred)
    ks_pred = fm.metrics.ks_unfairness(g, pred=pred, sample_weight=w)
    for k in range(3):
        m = g == k
        expected = np.abs(_weighted_cdf(pred[m], w[m], grid) - _weighted_cdf(pred, w, grid)).max()
        assert ks_pred[str(k)] == pytest.approx(expected, abs=TOL)


def _band_rate_brute(s, w, theta, band):
    """(clip(Fbar(theta), a, b) - a) / (b - a) with the weighted Fbar(theta) = sum_{s_i > theta} w_i / sum w_i."""
    a, b = band
    fbar = np.array([w[s > t].sum() for t in theta]) / w.sum()
    return (np.clip(fbar, a, b) - a) / (b - a)


@pytest.mark.parametrize("band", [(0.0, 1.0), (0.2, 0.6), (0.7, 1.0)])
@pytest.mark.parametrize("weighted", [False, True])
def test_partial_parity_against_brute_force_over_thresholds(band, weighted):
    """DP^I = max over theta of |G_k(theta) - G_k'(theta)| (eq. (6) with identity (29)), over every pooled score and
    the midpoints between them (where the step functions are constant), and WDP^I at a threshold (eq. (9))."""
    rng = np.random.default_rng(3)
    n = 240
    g = np.repeat([0, 1, 2], [70, 80, 90])
    s = np.round(rng.normal(size=n) + 0.4 * g, 1)
    w = rng.uniform(0.2, 2.0, n) if weighted else np.ones(n)
    u = np.unique(s)
    theta = np.concatenate([u, (u[1:] + u[:-1]) / 2, [u[0] - 1, u[-1] + 1]])
    rates = [_band_rate_brute(s[g == k], w[g == k], theta, band) for k in range(3)]
    sw = w if weighted else None
    out = fm.metrics.partial_dp(s, g, band=band, sample_weight=sw)
    for (a, b) in ((0, 1), (0, 2), (1, 2)):
        assert out.pairwise[f"{a}/{b}"] == pytest.approx(np.abs(rates[a] - rates[b]).max(), abs=TOL)
    assert np.any(s == 0.3)                        # a threshold equal to scores: strict > matters (Def 4.1)
    weak = fm.metrics.weak_partial_dp(s, g, band=band, threshold=0.3, sample_weight=sw)
    r = [_band_rate_brute(s[g == k], w[g == k], [0.3], band)[0] for k in range(3)]
    assert weak.gap == pytest.approx(max(abs(r[a] - r[b]) for a, b in ((0, 1), (0, 2), (1, 2))), abs=TOL)


def test_assess_numeric_and_randomized_predictions_against_brute_force():
    """fm.assess on numeric predictions (weighted MSE, MAE, KS) and on a randomized predictor (expected errors, the
    KS of the mixture CDFs, the pmf gap), by group and overall."""
    rng = np.random.default_rng(4)
    n = 300
    g = rng.integers(0, 2, n)
    y = rng.normal(size=n)
    pred = np.round(y + rng.normal(size=n) + 0.3 * g, 1)
    w = rng.uniform(0.2, 2.0, n)
    a = fm.assess(y, y_pred=pred, sensitive_features=g, sample_weight=w, metrics=["mse", "mae", "ks"])
    grid = np.unique(pred)
    for k in (0, 1):
        m = g == k
        assert a.by_group.loc[k, "mse"] == pytest.approx(np.average((pred[m] - y[m]) ** 2, weights=w[m]), abs=TOL)
        assert a.by_group.loc[k, "mae"] == pytest.approx(np.average(np.abs(pred[m] - y[m]), weights=w[m]), abs=TOL)
        ks = np.abs(_weighted_cdf(pred[m], w[m], grid) - _weighted_cdf(pred, w, grid)).max()
        assert a.by_group.loc[k, "ks"] == pytest.approx(ks, abs=TOL)
    levels = np.array([-1.0, 0.0, 0.5, 2.0])
    P = rng.dirichlet(np.ones(4), size=n)
    r = fm.assess(y, y_proba=P, levels=levels, sensitive_features=g, sample_weight=w)
    err = levels[None, :] - y[:, None]
    cdf, overall = np.cumsum(P, axis=1), w @ np.cumsum(P, axis=1) / w.sum()
    for k in (0, 1):
        m = g == k
        assert r.by_group.loc[k, "mse"] == pytest.approx(np.average(np.sum(P[m] * err[m] ** 2, 1), weights=w[m]),
                                                         abs=TOL)
        assert r.by_group.loc[k, "mae"] == pytest.approx(np.average(np.sum(P[m] * np.abs(err[m]), 1),
                                                                    weights=w[m]), abs=TOL)
        assert r.by_group.loc[k, "ks"] == pytest.approx(np.abs(w[m] @ cdf[m] / w[m].sum() - overall).max(), abs=TOL)
        pmf = np.abs(w[m] @ P[m] / w[m].sum() - w @ P / w.sum()).mean()
        assert r.by_group.loc[k, "pmf"] == pytest.approx(pmf, abs=TOL)


def test_assess_ratio_and_difference_to_overall_by_hand():
    y, p, s, g, w = _data(seed=5)
    a = fm.assess(y, y_pred=p, scores=s, sensitive_features=g, sample_weight=w)
    by, overall = a.by_group.to_numpy(), a.overall.to_numpy()
    np.testing.assert_allclose(a.ratio("to_overall").to_numpy(), np.min(np.minimum(by / overall, overall / by), axis=0),
                               atol=TOL)
    np.testing.assert_allclose(a.difference("to_overall").to_numpy(), np.max(np.abs(by - overall), axis=0), atol=TOL)


def test_stratified_bootstrap_multiplicities_are_unbiased():
    """Each group's rows are resampled with replacement, as many as the group has: every draw's counts sum to the
    group size, and each row's multiplicity (Binomial(n_g, 1/n_g)) has mean 1 over 4000 draws (K_SE standard
    errors), so no row is left out or favoured."""
    rows = [slice(0, 7), slice(7, 10), slice(10, 30)]
    C = vectorized.bootstrap_counts(np.random.default_rng(0), rows, 30, 4000)
    for r in rows:
        assert np.all(C[r].sum(axis=0) == r.stop - r.start)
    se = C.std(axis=1, ddof=1) / np.sqrt(C.shape[1])
    assert np.all(np.abs(C.mean(axis=1) - 1.0) <= K_SE * se)
    assert np.all(C.max(axis=1) >= 2)


@pytest.mark.parametrize("method", ["between_groups", "to_overall"])
def test_fairness_summaries_against_fairlearn(method):
    """The one-number summaries against fairlearn's functions of the same names, with sample weights."""
    flm = pytest.importorskip("fairlearn.metrics")
    y, p, s, g, w = _data(seed=6)
    for name in ("demographic_parity_difference", "demographic_parity_ratio", "equalized_odds_difference",
                 "equalized_odds_ratio", "equal_opportunity_difference"):
        if not hasattr(flm, name):
            continue
        ours = getattr(fm.metrics, name)(y, p, sensitive_features=g, method=method, sample_weight=w)
        theirs = getattr(flm, name)(y, p, sensitive_features=g, method=method, sample_weight=w)
        assert ours == pytest.approx(theirs, abs=TOL), name


def test_group_dro_judge_metrics_by_hand():
    """The group-DRO judge's metrics at a point: each group's mean logistic loss, its accuracy of sign(score), the
    worst group and the row-weighted mean risk, from the rows directly."""
    from .conftest import make_instance
    data, w, risks = make_instance(seed=8)
    theta = np.array([0.5, -1.0, 0.2, 0.0, 0.7])
    ev = fm.Problem(fm.Minimize(fm.max(risks))).evaluate(w=theta)
    z, y, codes = data.X @ theta, data.y, data.groups.codes
    loss = np.logaddexp(0, -y * z)
    r = np.array([loss[codes == k].mean() for k in range(3)])
    acc = np.array([np.mean(np.sign(z[codes == k]) == y[codes == k]) for k in range(3)])
    np.testing.assert_allclose(list(ev.metrics["group_risks"].values()), r, rtol=1e-12)
    np.testing.assert_allclose(list(ev.metrics["group_accuracy"].values()), acc, rtol=1e-12)
    assert ev.metrics["worst_group"] == str(data.groups.names[int(np.argmax(r))])
    assert ev.metrics["mean_risk"] == pytest.approx(loss.mean(), rel=1e-12)
    assert ev.objective == pytest.approx(r.max(), rel=1e-12)


def test_trimmed_partial_parity_against_brute_force():
    """estimator='trimmed': keep each group's points whose rank (the fraction of the group strictly above, Def 4.1)
    lies in [alpha, beta), then the KS distance of the kept samples (partial DP) or the gap of their rates above the
    threshold (weak partial DP), all by direct counts. Groups of 10 and 20 distinct scores with alpha = 0.2: some
    ranks equal alpha exactly."""
    rng = np.random.default_rng(9)
    s = rng.permutation(30) / 7.0
    g = np.repeat([0, 1], [10, 20])
    band = (0.2, 0.9)

    def kept(k):
        x = s[g == k]
        rank = np.array([np.mean(x > v) for v in x])
        assert np.any(rank == band[0])
        return x[(rank >= band[0]) & (rank < band[1])]
    a, b = kept(0), kept(1)
    grid = np.unique(np.concatenate([a, b]))
    ks = max(abs(np.mean(a > t) - np.mean(b > t)) for t in grid)
    assert fm.metrics.partial_dp(s, g, band=band, estimator="trimmed").gap == pytest.approx(ks, abs=TOL)
    t = float(np.median(s))
    weak = fm.metrics.weak_partial_dp(s, g, band=band, threshold=t, estimator="trimmed").gap
    assert weak == pytest.approx(abs(np.mean(a > t) - np.mean(b > t)), abs=TOL)
