"""fm.assess against independent computations: scikit-learn's metrics on each group's rows (brute force masks), with
and without sample weights, for K = 2, 5 and intersectional groups; the bootstrap draws against scikit-learn on
the same resampled weights; fairlearn's MetricFrame as an oracle where it is installed."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.metrics import assessment as asm
from fairmodel.metrics import report, vectorized

skm = pytest.importorskip("sklearn.metrics")
pd = pytest.importorskip("pandas")

TOL = 1e-12


def _data(n=1500, k=5, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, k, n)
    y = (rng.random(n) < 0.3 + 0.1 * (g % 3)).astype(int)
    s = rng.normal(size=n) + 1.2 * y + 0.2 * g
    if ties:
        s = np.round(s, 1)
    p = (s > 0.8).astype(int)
    w = rng.uniform(0.2, 3.0, n)
    return y, p, s, g, w


def _sk(name, y, p, s, w):
    if name == "selection_rate":
        return np.average(p, weights=w)
    if name in ("true_positive_rate", "false_positive_rate", "false_negative_rate"):
        tn, fp, fn, tp = skm.confusion_matrix(y, p, labels=[0, 1], sample_weight=w).ravel()
        return {"true_positive_rate": tp / (tp + fn), "false_positive_rate": fp / (fp + tn),
                "false_negative_rate": fn / (fn + tp)}[name]
    return {"accuracy": lambda: skm.accuracy_score(y, p, sample_weight=w),
            "balanced_accuracy": lambda: skm.balanced_accuracy_score(y, p, sample_weight=w),
            "precision": lambda: skm.precision_score(y, p, sample_weight=w),
            "auc": lambda: skm.roc_auc_score(y, s, sample_weight=w)}[name]()


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_by_group_matches_sklearn(k, weighted, ties):
    y, p, s, g, w = _data(k=k, ties=ties)
    w = w if weighted else None
    a = fm.assess(y, y_pred=p, scores=s, sensitive_features=g, sample_weight=w)
    assert a.metrics == asm.DECISION_METRICS + ("auc",)
    ww = np.ones(y.size) if w is None else w
    for j, gname in enumerate(a.groups):
        m = g == gname
        for name in a.metrics:
            assert abs(a.by_group.loc[gname, name] - _sk(name, y[m], p[m], s[m], ww[m])) < TOL, (gname, name)
    for name in a.metrics:
        assert abs(a.overall[name] - _sk(name, y, p, s, ww)) < TOL
        col = a.by_group[name].to_numpy()
        assert abs(a.difference()[name] - (col.max() - col.min())) < TOL
        assert abs(a.difference("to_overall")[name] - np.abs(col - a.overall[name]).max()) < TOL
        assert abs(a.ratio()[name] - col.min() / col.max()) < TOL
        o = a.overall[name]
        assert abs(a.ratio("to_overall")[name] - np.minimum(col / o, o / col).min()) < TOL


def test_standalone_metrics_match_sklearn():
    y, p, s, g, w = _data(ties=True)
    ypm = np.where(y == 1, 1, -1)        # the -1/+1 coding needs no option
    for weights in (None, w):
        ww = np.ones(y.size) if weights is None else weights
        for name in asm.DECISION_METRICS:
            f = getattr(fm.metrics, name)
            assert abs(f(ypm, p, sample_weight=weights) - _sk(name, y, p, s, ww)) < TOL
        assert abs(fm.metrics.roc_auc(y, s, sample_weight=weights) - _sk("auc", y, p, s, ww)) < TOL
        assert abs(fm.metrics.mae(y, s, sample_weight=weights) - skm.mean_absolute_error(y, s, sample_weight=weights)) \
            < TOL
        assert abs(fm.metrics.mean_squared_error(y, s, sample_weight=weights)
                   - skm.mean_squared_error(y, s, sample_weight=weights)) < TOL
        assert abs(fm.metrics.mse(y, s, sample_weight=weights) - skm.mean_squared_error(y, s, sample_weight=weights)) \
            < TOL
    labels = np.where(y == 1, "yes", "no")
    assert abs(fm.metrics.true_positive_rate(labels, np.where(p == 1, "yes", "no"), pos_label="yes")
               - skm.recall_score(y, p)) < TOL
    with pytest.raises(fm.DataError, match="pos_label"):
        fm.metrics.true_positive_rate(labels, p)


def _ks_brute(pred, g, w, gname):
    pts = np.unique(pred)
    F = np.array([w[pred <= t].sum() for t in pts]) / w.sum()
    m = g == gname
    Fg = np.array([w[m & (pred <= t)].sum() for t in pts]) / w[m].sum()
    return np.abs(Fg - F).max()


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_metrics_by_group(weighted):
    rng = np.random.default_rng(1)
    n = 600
    g = rng.integers(0, 5, n)
    y = rng.normal(size=n) + g
    pred = np.round(y + rng.normal(scale=0.5, size=n), 1)     # ties in the predictions
    w = rng.uniform(0.1, 2, n) if weighted else None
    ww = np.ones(n) if w is None else w
    a = fm.assess(y, y_pred=pred, sensitive_features=g, sample_weight=w)
    assert a.metrics == ("mse", "mae", "ks")
    for gname in a.groups:
        m = g == gname
        assert abs(a.by_group.loc[gname, "mse"] - skm.mean_squared_error(y[m], pred[m], sample_weight=ww[m])) < TOL
        assert abs(a.by_group.loc[gname, "mae"] - skm.mean_absolute_error(y[m], pred[m], sample_weight=ww[m])) < TOL
        assert abs(a.by_group.loc[gname, "ks"] - _ks_brute(pred, g, ww, gname)) < TOL
    ks = fm.metrics.ks_unfairness(g, pred=pred, sample_weight=w)
    assert all(abs(ks[str(k)] - a.by_group.loc[k, "ks"]) < TOL for k in a.groups)
    assert a.overall["ks"] == 0.0


def test_intersections_every_form_gives_the_same_table():
    y, p, s, g, w = _data(n=900, k=3)
    h = np.where(np.random.default_rng(2).random(900) < 0.4, "F", "M")
    df = pd.DataFrame({"race": g, "sex": h, "y": y, "p": p, "w": w})
    a = fm.assess(y, y_pred=p, sensitive_features=df[["race", "sex"]], sample_weight=w)
    assert isinstance(a.by_group.index, pd.MultiIndex) and list(a.by_group.index.names) == ["race", "sex"]
    assert len(a.by_group) == 6
    for r, x in a.by_group.index:
        m = (g == r) & (h == x)
        assert abs(a.by_group.loc[(r, x), "accuracy"] - skm.accuracy_score(y[m], p[m], sample_weight=w[m])) < TOL
    same = [fm.assess("y", y_pred="p", sensitive_features=["race", "sex"], sample_weight="w", data=df),
            fm.assess(y, y_pred=p, sensitive_features={"race": g, "sex": h}, sample_weight=w),
            fm.assess(y, y_pred=p, sensitive_features=[pd.Series(g, name="race"), pd.Series(h, name="sex")],
                      sample_weight=w)]
    for b in same:
        pd.testing.assert_frame_equal(b.by_group, a.by_group, rtol=0, atol=TOL)
    c = fm.assess(y, y_pred=p, sensitive_features=list(zip(g.tolist(), h.tolist())), sample_weight=w)
    np.testing.assert_allclose(c.by_group.to_numpy(), a.by_group.to_numpy(), rtol=0, atol=TOL)
    assert isinstance(c.by_group.index, pd.MultiIndex)


def test_plain_tables_without_pandas(monkeypatch):
    y, p, s, g, w = _data(n=400, k=2)
    a = fm.assess(y, y_pred=p, sensitive_features=g)
    expected = a.by_group.to_numpy()
    monkeypatch.setattr(report, "_pd", None)
    t = a.by_group
    assert isinstance(t, report.Table) and t.shape == expected.shape
    np.testing.assert_array_equal(t.values, expected)
    assert t["accuracy"][1] == expected[1, a.metrics.index("accuracy")]
    assert isinstance(a.overall, dict) and isinstance(a.difference(), dict)
    assert "accuracy" in repr(t)


def _brute_draws(a, y, p, s, g, w, n_boot, seed, names):
    """Every bootstrap draw recomputed with scikit-learn from the same resampling counts."""
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, n_boot, asm.CHUNK):
        draws = min(asm.CHUNK, n_boot - start)
        C = vectorized.bootstrap_counts(rng, a._inputs.rows, a.n_samples, draws)
        for b in range(draws):
            cw = np.empty(a.n_samples)
            cw[a.row_order] = C[:, b]
            ww = w * cw
            out.append([[_sk(nm, y[(g == k) & (ww > 0)], p[(g == k) & (ww > 0)], s[(g == k) & (ww > 0)],
                             ww[(g == k) & (ww > 0)]) for nm in names] for k in a.groups])
    return np.array(out)


def test_bootstrap_draws_match_sklearn_on_the_resampled_weights():
    y, p, s, g, w = _data(n=500, k=3, ties=True)
    names = ["selection_rate", "true_positive_rate", "balanced_accuracy", "auc"]
    a = fm.assess(y, y_pred=p, scores=s, sensitive_features=g, sample_weight=w, metrics=names)
    by, overall = a.bootstrap(n_boot=130, seed=7)          # two chunks
    np.testing.assert_allclose(by, _brute_draws(a, y, p, s, g, w, 130, 7, names), rtol=0, atol=TOL)
    # a user's callable is evaluated on the same draws
    b = fm.assess(y, y_pred=p, sensitive_features=g, sample_weight=w,
                  metrics={"recall": skm.recall_score, "true_positive_rate": "true_positive_rate"})
    by_b, _ = b.bootstrap(n_boot=20, seed=3)
    np.testing.assert_allclose(by_b[..., 0], by_b[..., 1], rtol=0, atol=TOL)


def test_bootstrap_is_stratified_seeded_and_reproducible():
    y, p, s, g, w = _data(n=700, k=5)
    a = fm.assess(y, y_pred=p, scores=s, sensitive_features=g)
    C = vectorized.bootstrap_counts(np.random.default_rng(0), a._inputs.rows, a.n_samples, 50)
    for r, size in zip(a._inputs.rows, a.sizes):
        np.testing.assert_array_equal(C[r].sum(axis=0), size)            # every draw keeps every group's size
    c1, c2, c3 = a.ci(n_boot=200, seed=11), a.ci(n_boot=200, seed=11), a.ci(n_boot=200, seed=12)
    pd.testing.assert_frame_equal(c1.by_group, c2.by_group)
    assert not np.allclose(c1.by_group.to_numpy(), c3.by_group.to_numpy())
    lo = c1.by_group.xs("lower", axis=1, level=1).to_numpy()
    hi = c1.by_group.xs("upper", axis=1, level=1).to_numpy()
    assert np.all(lo <= a.by_group.to_numpy() + 1e-9) and np.all(a.by_group.to_numpy() <= hi + 1e-9)
    d = c1.difference()
    expect = np.quantile(c1.draws_by_group.max(axis=1) - c1.draws_by_group.min(axis=1), [0.025, 0.975], axis=0)
    np.testing.assert_allclose(d[["lower", "upper"]].to_numpy().T, expect, rtol=0, atol=TOL)


def test_undefined_metrics_are_nan_and_errors_are_clear():
    y = np.array([0, 0, 1, 1, 0, 0])
    p = np.array([0, 1, 1, 0, 0, 1])
    g = np.array(["a", "a", "a", "a", "b", "b"])        # group b has no positives
    a = fm.assess(y, y_pred=p, sensitive_features=g)
    assert np.isnan(a.by_group.loc["b", "true_positive_rate"]) and a.by_group.loc["b", "false_positive_rate"] == 0.5
    with pytest.raises(fm.OptionError, match="unknown metric"):
        fm.assess(y, y_pred=p, sensitive_features=g, metrics=["recall"])
    with pytest.raises(fm.DataError, match="auc needs scores"):
        fm.assess(y, y_pred=p, sensitive_features=g, metrics="auc")
    with pytest.raises(fm.DataError, match="sample_weight must be >= 0"):
        fm.assess(y, y_pred=p, sensitive_features=g, sample_weight=-np.ones(6))
    with pytest.raises(fm.DataError, match="one label per row"):
        fm.assess(y, y_pred=p, sensitive_features=g[:5])
    with pytest.raises(fm.OptionError, match="method"):
        a.difference("pairwise")
    with pytest.raises(fm.OptionError, match="level must be < 1"):
        a.ci(level=1.0)
    text = np.where(y == 1, "yes", "no")
    with pytest.raises(fm.DataError, match="pos_label"):
        fm.assess(text, y_pred=np.where(p == 1, "yes", "no"), sensitive_features=g)
    b = fm.assess(text, y_pred=np.where(p == 1, "yes", "no"), sensitive_features=g, pos_label="yes")
    np.testing.assert_array_equal(b.by_group.to_numpy(), a.by_group.to_numpy())


def test_renderings():
    y, p, s, g, w = _data(n=300, k=2)
    names = np.where(g == 0, "a|b", "c")
    a = fm.assess(y, y_pred=p, sensitive_features=pd.Series(names, name="grp"))
    md = a.to_markdown()
    assert "a\\|b" in md and "| grp |" in md and md.count("\n") == 2 + 2 + 3 - 1
    assert "<table>" in a._repr_html_() and "a|b" in a._repr_html_()
    assert repr(a).startswith("Assessment(n=300, 2 groups by grp") and "\n" not in repr(a)
    a.ci(n_boot=50)
    assert "stratified bootstrap intervals (50 draws, seed 0)" in a.to_markdown()


def test_plot_draws_the_values_and_intervals():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    y, p, s, g, w = _data(n=400, k=3)
    a = fm.assess(y, y_pred=p, sensitive_features=g, metrics=["selection_rate", "accuracy"])
    ci = a.ci(n_boot=50)
    fig = a.plot()
    for j, name in enumerate(a.metrics):
        heights = [bar.get_width() for bar in fig.axes[j].patches]
        np.testing.assert_allclose(heights, a.by_group[name].to_numpy(), rtol=0, atol=TOL)
    assert ci.level == 0.95
    with pytest.raises(fm.OptionError, match="not in this assessment"):
        a.plot("auc")


def test_auc_presets_for_k_groups():
    y, p, s, g, w = _data(n=400, k=4, ties=True)
    ypm = np.where(y == 1, 1, -1)
    # two groups: both modes equal the two-group metric with the first group protected
    two = np.where(g < 2, "a", "b")
    for kind in ("intra", "inter", "group", "bpsn_bnsp", "pos_avg_eq", "neg_avg_eq"):
        ref = fm.metrics.auc_fairness(s, ypm, two, kind, protected="a")
        one = fm.metrics.auc_fairness_groups(s, ypm, two, kind, mode="one_vs_rest")
        assert abs(one.gaps["a"] - ref) < TOL
        if kind in ("intra", "inter", "group"):
            assert abs(fm.metrics.auc_fairness_groups(s, ypm, two, kind).gap - ref) < TOL
    # K groups, pairwise: each pair is the two-group metric on that pair's rows; the summary is the largest
    res = fm.metrics.auc_fairness_groups(s, ypm, g, "bpsn_bnsp")
    assert len(res.gaps) == 12                          # ordered pairs for a preset not symmetric in gamma
    for a_ in range(4):
        for b_ in range(4):
            if a_ != b_:
                m = (g == a_) | (g == b_)
                ref = fm.metrics.auc_fairness(s[m], ypm[m], g[m], "bpsn_bnsp", protected=a_)
                assert abs(res.gaps[f"{a_}/{b_}"] - ref) < TOL
    assert res.gap == max(res.gaps.values())
    # sample weights: integer weights equal replicated rows; a brute-force double sum for real weights
    k = np.random.default_rng(5).integers(0, 3, s.size)
    rep = np.repeat(np.arange(s.size), k)
    a1 = fm.metrics.auc_fairness_groups(s, ypm, g, "intra", sample_weight=k)
    a2 = fm.metrics.auc_fairness_groups(s[rep], ypm[rep], g[rep], "intra")
    assert all(abs(a1.gaps[key] - a2.gaps[key]) < TOL for key in a2.gaps)
    hi, lo = (ypm > 0) & (g == 1), (ypm < 0) & (g == 1)
    brute = sum(w[i] * w[j] * ((s[i] > s[j]) + 0.5 * (s[i] == s[j])) for i in np.flatnonzero(hi)
                for j in np.flatnonzero(lo)) / (w[hi].sum() * w[lo].sum())
    assert abs(fm.metrics.auc_between(s, hi, lo, sample_weight=w) - brute) < TOL


def test_weighted_dp_and_partial_metrics_equal_replication():
    rng = np.random.default_rng(4)
    n = 300
    g = rng.integers(0, 3, n)
    pred = np.round(rng.normal(size=n), 1)
    P = rng.dirichlet(np.ones(6), n)
    k = rng.integers(0, 3, n)
    rep = np.repeat(np.arange(n), k)
    pairs = [(fm.metrics.ks_unfairness(g, pred=pred, sample_weight=k),
              fm.metrics.ks_unfairness(g[rep], pred=pred[rep])),
             (fm.metrics.ks_unfairness(g, proba=P, sample_weight=k), fm.metrics.ks_unfairness(g[rep], proba=P[rep])),
             (fm.metrics.pmf_unfairness(g, P, sample_weight=k), fm.metrics.pmf_unfairness(g[rep], P[rep]))]
    for a, b in pairs:
        assert all(abs(a[key] - b[key]) < TOL for key in b)
    for f, kw in ((fm.metrics.partial_dp, {}), (fm.metrics.weak_partial_dp, {"threshold": 0.1})):
        a = f(pred, g, (0.2, 0.9), sample_weight=k, **kw)
        b = f(pred[rep], g[rep], (0.2, 0.9), **kw)
        assert abs(a.gap - b.gap) < TOL
    with pytest.raises(fm.ModelError, match="clip"):
        fm.metrics.partial_dp(pred, g, estimator="trimmed", sample_weight=k)
    X, y = rng.normal(size=(n, 3)), np.where(rng.random(n) < 0.5, 1, -1)
    theta = np.array([1.0, -0.5, 0.3])
    for f in (fm.metrics.strategic_accuracy, fm.metrics.strategic_margin):
        a = f(theta, X, y, zeta=[0.0, 0.5], strategic_features=[0, 1], sample_weight=k)
        b = f(theta, X[rep], y[rep], zeta=[0.0, 0.5], strategic_features=[0, 1])
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL)


def test_summaries():
    y, p, s, g, w = _data(k=5)
    a = fm.assess(y, y_pred=p, sensitive_features=g, sample_weight=w)
    assert fm.metrics.demographic_parity_difference(y, p, sensitive_features=g, sample_weight=w) == \
        a.difference()["selection_rate"]
    eod = max(a.difference()["true_positive_rate"], a.difference()["false_positive_rate"])
    assert fm.metrics.equalized_odds_difference(y, p, sensitive_features=g, sample_weight=w) == eod
    eor = min(a.ratio("to_overall")["true_positive_rate"], a.ratio("to_overall")["false_positive_rate"])
    assert fm.metrics.equalized_odds_ratio(y, p, sensitive_features=g, sample_weight=w, method="to_overall") == eor


@pytest.mark.parametrize("weighted", [False, True])
def test_fairlearn_metricframe_oracle(weighted):
    flm = pytest.importorskip("fairlearn.metrics")
    y, p, s, g, w = _data(k=5)
    sw = w if weighted else None
    h = np.where(s > 1.0, "hi", "lo")
    sf = pd.DataFrame({"g": g, "h": h})
    ours = fm.assess(y, y_pred=p, sensitive_features=sf, sample_weight=sw,
                     metrics=["selection_rate", "true_positive_rate", "false_positive_rate", "accuracy"])
    theirs = flm.MetricFrame(metrics={"selection_rate": flm.selection_rate, "true_positive_rate":
                                      flm.true_positive_rate, "false_positive_rate": flm.false_positive_rate,
                                      "accuracy": skm.accuracy_score},
                             y_true=y, y_pred=p, sensitive_features=sf,
                             sample_params={k: {"sample_weight": sw} for k in ours.metrics} if weighted else None)
    np.testing.assert_allclose(ours.by_group.to_numpy(), theirs.by_group.loc[ours.by_group.index].to_numpy(),
                               rtol=0, atol=TOL)
    np.testing.assert_allclose(ours.difference().to_numpy(), theirs.difference().to_numpy(), rtol=0, atol=TOL)
    assert abs(fm.metrics.equalized_odds_difference(y, p, sensitive_features=sf, sample_weight=sw)
               - flm.equalized_odds_difference(y, p, sensitive_features=sf, sample_weight=sw)) < TOL


def _coverage(R, sizes, n_boot, seed=2024, level=0.95):
    """Coverage of the percentile intervals of the stratified bootstrap over R simulated audits of two groups:
    decisions with known selection rates and true-positive rates, Gaussian scores with a known AUC (Phi(mu / sqrt 2)),
    random survey weights independent of everything in every other audit (so the weighted estimators target the same
    values). Returns {metric: coverage per group}."""
    from scipy.stats import norm
    rng = np.random.default_rng(seed)
    q, tpr, fpr, mu = (0.3, 0.5), (0.7, 0.8), (0.2, 0.1), (1.0, 1.5)
    truth = {"selection_rate": [q[k] * tpr[k] + (1 - q[k]) * fpr[k] for k in range(2)],
             "true_positive_rate": list(tpr), "auc": [norm.cdf(m / np.sqrt(2)) for m in mu]}
    hits = {m: np.zeros(2) for m in truth}
    for r in range(R):
        g = np.repeat([0, 1], sizes)
        y = (rng.random(g.size) < np.take(q, g)).astype(int)
        p = (rng.random(g.size) < np.where(y == 1, np.take(tpr, g), np.take(fpr, g))).astype(int)
        s = rng.normal(size=g.size) + y * np.take(mu, g)
        w = rng.uniform(0.5, 1.5, g.size) if r % 2 else None
        a = fm.assess(y, y_pred=p, scores=s, sensitive_features=g, sample_weight=w, metrics=list(truth))
        ci = a.ci(level=level, n_boot=n_boot, seed=r).by_group
        for m in truth:
            lo, hi = ci[(m, "lower")].to_numpy(), ci[(m, "upper")].to_numpy()
            hits[m] += (lo <= truth[m]) & (truth[m] <= hi)
    return {m: h / R for m, h in hits.items()}


@pytest.mark.slow
def test_bootstrap_coverage_in_a_simulation():
    """Percentile intervals of the stratified bootstrap cover the true group values at the stated rate.

    R = 1000 simulated audits of two groups (400 and 600 rows), 400 bootstrap draws each. The coverage of each 95%
    interval is a binomial proportion over R runs: Monte-Carlo standard error sqrt(0.95 * 0.05 / 1000) = 0.0069; we
    accept |coverage - 0.95| <= 3 standard errors + 0.01 (the percentile interval's own O(1/n) coverage error at
    these sizes)."""
    R, level = 1000, 0.95
    se = np.sqrt(level * (1 - level) / R)
    for m, cov in _coverage(R, (400, 600), 400).items():
        assert np.all(np.abs(cov - level) <= 3 * se + 0.01), (m, cov)


def test_bootstrap_coverage_at_a_reduced_size():
    """The simulation above at a size for every run of the suite: R = 250 audits of 150 and 250 rows, 200 draws. The
    Monte-Carlo standard error of a coverage is sqrt(0.95 * 0.05 / 250) = 0.014; we accept 3 standard errors + 0.02
    (the percentile interval's coverage error grows as the groups shrink). A wrong bootstrap (not stratified,
    unweighted, intervals at the wrong level) misses by far more: 80% intervals would cover about 0.80."""
    R, level = 250, 0.95
    se = np.sqrt(level * (1 - level) / R)
    for m, cov in _coverage(R, (150, 250), 200, seed=7).items():
        assert np.all(np.abs(cov - level) <= 3 * se + 0.02), (m, cov)
