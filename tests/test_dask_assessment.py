"""fm.assess on Dask-backed inputs: the sum-type metrics equal the in-memory assessment up to summation order,
the AUC is exact on few distinct scores and within its reported bound otherwise, intervals are refused."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.errors import DataError
from fairmodel.metrics.chunked import hist_auc

da = pytest.importorskip("dask.array")

N, CHUNK = 5000, 900
DECISIONS = ["selection_rate", "accuracy", "balanced_accuracy", "true_positive_rate", "false_positive_rate",
             "false_negative_rate", "precision"]


@pytest.fixture(scope="module")
def cols():
    rng = np.random.default_rng(0)
    g = rng.choice(["a", "b", "c"], size=N, p=[0.5, 0.3, 0.2])
    r = rng.choice([1, 2], size=N)
    s = rng.normal(size=N) + (g == "c")
    y = (s + rng.normal(size=N) > 0.3).astype(int)
    yp = (s > 0.2).astype(int)
    w = rng.uniform(0.2, 2.0, N)
    return {"g": g, "r": r, "s": s, "y": y, "yp": yp, "w": w, "pred": s + 0.1 * rng.normal(size=N),
            "target": s + rng.normal(size=N)}


def dk(v):
    return da.from_array(v, chunks=CHUNK)


def _same(a, b, rtol):
    assert a.groups == b.groups and a.metrics == b.metrics and a.level_names == b.level_names
    np.testing.assert_array_equal(a.sizes, b.sizes)
    np.testing.assert_allclose(a._by, b._by, rtol=rtol, atol=1e-15)
    np.testing.assert_allclose(a._overall, b._overall, rtol=rtol, atol=1e-15)
    for m in ("difference", "ratio"):
        np.testing.assert_allclose(np.asarray(list(getattr(a, m)().to_dict().values()) if hasattr(
            getattr(a, m)(), "to_dict") else getattr(a, m)()), np.asarray(list(getattr(b, m)().to_dict().values())
            if hasattr(getattr(b, m)(), "to_dict") else getattr(b, m)()), rtol=rtol, atol=1e-14)


def test_sum_metrics_equal_numpy_up_to_summation_order(cols):
    c = cols
    for w in (None, c["w"]):
        ref = fm.assess(c["y"], y_pred=c["yp"], sensitive_features=c["g"], sample_weight=w, metrics=DECISIONS)
        got = fm.assess(dk(c["y"]), y_pred=dk(c["yp"]), sensitive_features=dk(c["g"]),
                        sample_weight=None if w is None else dk(w), metrics=DECISIONS)
        _same(got, ref, 1e-12)
    # regression metrics, two sensitive columns (their intersections), one column in memory
    ref = fm.assess(c["target"], y_pred=c["pred"], sensitive_features={"g": c["g"], "r": c["r"]},
                    metrics=["mse", "mae"], sample_weight=c["w"])
    got = fm.assess(dk(c["target"]), y_pred=dk(c["pred"]), sensitive_features={"g": dk(c["g"]), "r": c["r"]},
                    metrics=["mse", "mae"], sample_weight=dk(c["w"]))
    _same(got, ref, 1e-12)
    assert "Assessment(n=5000" in repr(got) and "|" in got.to_markdown()


def test_auc_exact_on_few_levels_and_within_the_bound_otherwise(cols):
    c = cols
    coarse = np.round(c["s"], 1)             # ~80 distinct values: exact levels, ties count 1/2
    ref = fm.assess(c["y"], scores=coarse, sensitive_features=c["g"], sample_weight=c["w"], metrics=["auc"])
    got = fm.assess(dk(c["y"]), scores=dk(coarse), sensitive_features=dk(c["g"]), sample_weight=dk(c["w"]),
                    metrics=["auc"])
    _same(got, ref, 1e-12)
    assert got.auc_error_bound["overall"] == 0 and got.auc_error_bound["method"].startswith("exact")
    ref = fm.assess(c["y"], scores=c["s"], sensitive_features=c["g"], metrics=["auc"])
    for bins in (64, 4096):
        got = fm.assess(dk(c["y"]), scores=dk(c["s"]), sensitive_features=dk(c["g"]), metrics=["auc"],
                        auc_bins=bins)
        bound = got.auc_error_bound
        err_by = np.abs(got._by[:, 0] - ref._by[:, 0])
        assert np.all(err_by <= np.array(list(bound["by_group"].values())) + 1e-12)
        assert abs(got._overall[0] - ref._overall[0]) <= bound["overall"] + 1e-12
        assert 0 < bound["overall"] < (0.02 if bins == 64 else 2e-4)      # finer bins, smaller bound
    with pytest.raises(fm.OptionError, match="auc_bins"):
        fm.assess(c["y"], scores=c["s"], sensitive_features=c["g"], auc_bins=10)


def test_hist_auc_bound_is_attained_by_within_bin_order():
    # one bin holding a positive above a negative: the sketch says 1/2, the truth 1, the bound 1/2
    auc, bound = hist_auc(np.array([1.0]), np.array([1.0]))
    assert auc == 0.5 and bound == 0.5
    auc, bound = hist_auc(np.array([0.0, 2.0]), np.array([1.0, 0.0]), exact=True)
    assert auc == 1.0 and bound == 0.0


def test_dask_dataset_with_a_model_and_a_local_cluster(cols):
    distributed = pytest.importorskip("dask.distributed")
    c = cols
    rng = np.random.default_rng(1)
    X = np.column_stack([c["s"], rng.normal(size=N)])
    data = fm.Dataset.from_dask(da.from_array(X, chunks=(CHUNK, 2)), dk(c["y"].astype(float)), dk(c["g"]),
                                sensitive_name="g")
    coef = np.array([1.0, 0.3])

    def predict(Z):
        return (Z @ coef > 0.2).astype(float)

    ref = fm.assess(c["y"], y_pred=predict(X), sensitive_features={"g": c["g"]}, metrics=DECISIONS)
    runs = [fm.assess(data=data, y_pred=predict, metrics=DECISIONS)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) \
            as cluster, distributed.Client(cluster):
        runs.append(fm.assess(data=data, y_pred=predict, metrics=DECISIONS))
    for got in runs:
        _same(got, ref, 1e-12)


def test_intervals_and_row_metrics_are_refused(cols):
    c = cols
    a = fm.assess(dk(c["y"]), y_pred=dk(c["yp"]), sensitive_features=dk(c["g"]))
    for call in (a.ci, a.bootstrap):
        with pytest.raises(DataError, match="chunks is not a row bootstrap"):
            call()
    with pytest.raises(DataError, match="ks"):
        fm.assess(dk(c["target"]), y_pred=dk(c["pred"]), sensitive_features=dk(c["g"]), metrics=["ks"])
    with pytest.raises(DataError, match="one entry per row"):
        fm.assess(dk(c["y"]), y_pred=dk(c["yp"][:-1]), sensitive_features=dk(c["g"]))


def test_k_group_auc_fairness_presets_on_dask(cols):
    c = cols
    y = np.where(c["y"] == 1, 1, -1)
    coarse = np.round(c["s"], 1)
    for kind, mode in (("intra", "pairwise"), ("bpsn_bnsp", "pairwise"), ("inter", "one_vs_rest")):
        ref = fm.metrics.auc_fairness_groups(coarse, y, c["g"], kind, mode=mode, sample_weight=c["w"])
        got = fm.metrics.auc_fairness_groups(dk(coarse), dk(y), dk(c["g"]), kind, mode=mode,
                                             sample_weight=dk(c["w"]))
        assert got.worst == ref.worst and set(got.gaps) == set(ref.gaps)      # exact levels: same comparisons
        for k in ref.gaps:
            np.testing.assert_allclose(got.gaps[k], ref.gaps[k], rtol=1e-10, atol=1e-13)
            assert got.error_bounds[k] == 0
        ref = fm.metrics.auc_fairness_groups(c["s"], c["y"], c["g"], kind, mode=mode, positive=1)
        got = fm.metrics.auc_fairness_groups(dk(c["s"]), dk(c["y"]), dk(c["g"]), kind, mode=mode, positive=1)
        for k in ref.gaps:     # the sketch: within the reported bound (sum of the two AUCs' bounds)
            assert abs(got.gaps[k] - ref.gaps[k]) <= got.error_bounds[k] + 1e-12
            assert 0 < got.error_bounds[k] < 1e-3
