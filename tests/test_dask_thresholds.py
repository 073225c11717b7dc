"""Group-specific thresholds (Hardt, Price, Srebro 2016) on Dask-backed rows: the ROC points from the distinct
(group, score) counts of the chunks, so the LP, its certificate and the judge's rates equal those of the same
rows in memory (thresholds exactly, mixing weights and rates to 1e-12: unit weights give integer counts, hence the
same LP data to the last bit; real weights differ by the order of summation only), and rows replicated k times give
the answer of the original rows. Predictions are Dask arrays drawn from the seed's stream advanced to each chunk, so
they equal the in-memory draws. Refusals, and the per-chunk functions on a ``dask.distributed`` cluster of two
worker processes."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.data.passes import passes_of

pytest.importorskip("dask")
pytest.importorskip("sklearn")
import dask.array as da  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from tests.dask_helpers import as_dask_dataset  # noqa: E402

TOL = 1e-12


def _data(n=3000, seed=0):
    """Three groups, features on a coarse grid (ties of the scores), labels depending on features and group."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, n)
    y = (rng.random(n) < 0.25 + 0.2 * g).astype(float)
    X = np.column_stack([np.round(rng.normal(size=n) + 1.2 * y + 0.3 * g, 1), rng.integers(0, 4, n),
                         rng.normal(size=n)])
    X[:, 2] = np.round(X[:, 2], 0)
    return X, y, g


@pytest.fixture(scope="module")
def model():
    X, y, _ = _data(seed=1)
    return LogisticRegression().fit(X, y)


def _post(model, **kw):
    return fm.GroupThresholdPostProcessor(model, prefit=True, **kw)


def _same(a, b, exact_thresholds=True):
    assert len(a.thresholds_) == len(b.thresholds_)
    for ta, tb, wa, wb in zip(a.thresholds_, b.thresholds_, a.weights_, b.weights_):
        assert np.array_equal(ta, tb) if exact_thresholds else np.allclose(ta, tb, rtol=0, atol=TOL)
        assert np.allclose(wa, wb, rtol=0, atol=TOL)
    ra, rb = a.result_, b.result_
    assert ra.status == rb.status
    for rate in ("selection_rate", "true_positive_rate", "false_positive_rate"):
        for grp in ra.metrics[rate]:
            assert abs(ra.metrics[rate][grp] - rb.metrics[rate][grp]) <= TOL
    assert abs(ra.metrics["accuracy"] - rb.metrics["accuracy"]) <= TOL
    assert abs(ra.objective - rb.objective) <= TOL
    for name, c in ra.constraints.items():
        assert abs(c["value"] - rb.constraints[name]["value"]) <= TOL
    assert abs(ra.certificate["dual_bound"] - rb.certificate["dual_bound"]) <= TOL
    assert ra.metrics["distinct_scores"] == rb.metrics["distinct_scores"]


@pytest.mark.parametrize("constraint,eps", [("equalized_odds", 0.02), ("equal_opportunity", 0.0),
                                            ("demographic_parity", 0.05)])
def test_dask_fit_equals_the_in_memory_fit(model, constraint, eps):
    X, y, g = _data()
    memory = _post(model, constraint=constraint, eps=eps).fit(X, y, sensitive_features=g)
    data = as_dask_dataset(X, y, g, 700)                   # 5 chunks, the last one shorter
    before = passes_of(data)
    chunked = _post(model, constraint=constraint, eps=eps).fit(data)
    assert passes_of(data) - before == 2 and chunked.result_.metrics["data_passes"] == 2   # counts, judge
    assert chunked.result_.ok and memory.result_.ok
    _same(memory, chunked)
    # Dask arrays given directly: the same answer
    arrays = _post(model, constraint=constraint, eps=eps).fit(da.from_array(X, chunks=(1000, 3)),
                                                               da.from_array(y, chunks=1000), sensitive_features=g)
    _same(memory, arrays)


def test_real_sample_weights_agree_to_summation_order(model):
    X, y, g = _data()
    w = np.random.default_rng(5).uniform(0.2, 3.0, y.size)
    memory = _post(model, eps=0.01).fit(X, y, sensitive_features=g, sample_weight=w)
    chunked = _post(model, eps=0.01).fit(as_dask_dataset(X, y, g, 512), sample_weight=w)
    _same(memory, chunked)


def test_rows_replicated_k_times_give_the_answer_of_the_original_rows(model):
    X, y, g = _data(n=1500)
    once = _post(model, eps=0.01).fit(as_dask_dataset(X, y, g, 400))
    k = 3
    thrice = _post(model, eps=0.01).fit(as_dask_dataset(np.tile(X, (k, 1)), np.tile(y, k), np.tile(g, k), 1000))
    _same(once, thrice)


def test_predictions_on_dask_equal_the_in_memory_predictions(model):
    X, y, g = _data()
    post = _post(model, eps=0.02).fit(as_dask_dataset(X, y, g, 700))
    proba = post.predict_proba(X, sensitive_features=g)
    labels = post.predict(X, sensitive_features=g, random_state=7)
    for chunk in (256, 1000):
        data = as_dask_dataset(X, y, g, chunk)
        out = post.predict_proba(data)
        assert isinstance(out, da.Array)
        assert np.allclose(out.compute(), proba, rtol=0, atol=0)
        assert np.array_equal(post.predict(data, random_state=7).compute(), labels)
        Xd, gd = da.from_array(X, chunks=(chunk, 3)), da.from_array(g, chunks=chunk)
        assert np.array_equal(post.predict(Xd, sensitive_features=gd, random_state=7).compute(), labels)
    # a Generator on PCG64 is advanced past the draws, as in memory
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    assert np.array_equal(post.predict(X, sensitive_features=g, random_state=r1),
                          post.predict(as_dask_dataset(X, y, g, 333), random_state=r2).compute())
    assert r1.bit_generator.state == r2.bit_generator.state
    assert not np.array_equal(labels, post.predict(X, sensitive_features=g, random_state=8))


def test_refusals_name_the_way_out(model):
    X, y, g = _data(n=1200)
    data = as_dask_dataset(X, y, g, 400)
    with pytest.raises(fm.DataError, match=r"more than 10 distinct \(group, score\) pairs.*max_distinct=.*round the "
                                           r"scores"):
        _post(model, max_distinct=10).fit(data)
    with pytest.raises(fm.OptionError, match="prefit=True"):
        fm.GroupThresholdPostProcessor(LogisticRegression()).fit(data)
    with pytest.raises(fm.DataError, match="without y and sensitive_features"):
        _post(model).fit(data, y)
    post = _post(model, eps=0.05).fit(data)
    with pytest.raises(fm.DataError, match="needs the sensitive feature"):
        post.predict(da.from_array(X, chunks=(400, 3)))
    with pytest.raises(fm.DataError, match="not seen in fit"):
        post.predict(da.from_array(X, chunks=(400, 3)), sensitive_features=da.from_array(g + 5, chunks=400)).compute()


@pytest.mark.slow
def test_the_per_chunk_functions_run_in_worker_processes(model):
    """The same fit and draws under a dask.distributed cluster of two worker processes (the per-chunk functions and
    the model are pickled to the workers; about 20 s, most of it starting the cluster)."""
    distributed = pytest.importorskip("distributed")
    X, y, g = _data(n=2000)
    threaded = _post(model, eps=0.02).fit(as_dask_dataset(X, y, g, 500))
    labels = threaded.predict(X, sensitive_features=g, random_state=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        data = as_dask_dataset(X, y, g, 500)
        remote = _post(model, eps=0.02).fit(data)
        remote_labels = remote.predict(data, random_state=1).compute()
    _same(threaded, remote)
    assert np.array_equal(remote_labels, labels)


def first_column(X):
    """A "model" given as a plain function of the features: its scores are the first column."""
    return np.asarray(X)[:, 0]


def test_a_function_of_the_features_as_the_model():
    X, y, g = _data()
    memory = fm.GroupThresholdPostProcessor(first_column, prefit=True, eps=0.01).fit(X, y, sensitive_features=g)
    chunked = fm.GroupThresholdPostProcessor(first_column, prefit=True, eps=0.01).fit(as_dask_dataset(X, y, g, 600))
    _same(memory, chunked)
    assert chunked.result_.metrics["distinct_scores"] == len(set(zip(g, X[:, 0])))
    with pytest.raises(fm.OptionError, match="not callable"):
        fm.GroupThresholdPostProcessor(object(), prefit=True).fit(X, y, sensitive_features=g)
