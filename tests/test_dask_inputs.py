"""Bad inputs to Dask-backed data give a fairmodel DataError naming the problem, never a raw Dask, pandas or
NumPy traceback nor a silently wrong data set (review of the Dask paths)."""
import threading

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.errors import DataError

da = pytest.importorskip("dask.array")

N, D = 600, 3


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, D))
    g = rng.choice(["a", "b", "c"], size=N)
    y = np.sign(X.sum(axis=1) + rng.normal(size=N))
    return X, y, g


@pytest.fixture(scope="module")
def parquet(arrays, tmp_path_factory):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    X, y, g = arrays
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(label=y, group=g)
    path = tmp_path_factory.mktemp("pq")
    frame.to_parquet(path / "ok.parquet")
    frame.assign(label=np.where(y > 0, "yes", "no")).to_parquet(path / "text_label.parquet")
    return path


def test_parquet_path_that_does_not_exist(parquet):
    with pytest.raises(DataError, match="no Parquet data at .*missing.parquet"):
        fm.Dataset.from_parquet(str(parquet / "missing.parquet"), target="label", sensitive="group")
    with pytest.raises(DataError, match="no Parquet data"):
        fm.Dataset.from_parquet([str(parquet / "ok.parquet"), str(parquet / "missing.parquet")], target="label")


def test_parquet_text_target_is_refused_before_reading(parquet):
    with pytest.raises(DataError, match="target column 'label' .* labels must be numeric"):
        fm.Dataset.from_parquet(str(parquet / "text_label.parquet"), target="label", sensitive="group")


def test_parquet_target_listed_among_features_is_refused(parquet):
    # as for fm.Dataset.from_frame: the label as a feature would leak it into the model silently
    with pytest.raises(DataError, match="target column 'label' is listed among the features"):
        fm.Dataset.from_parquet(str(parquet / "ok.parquet"), target="label", sensitive="group",
                                features=["x0", "label"])


@pytest.mark.parametrize("which", ["y", "groups"])
def test_labels_or_groups_with_unknown_chunk_sizes(arrays, which):
    X, y, g = arrays
    v = {"y": y, "groups": g}[which]
    unknown = da.from_array(v, chunks=200)[da.from_array(np.ones(N, bool), chunks=200)]   # chunks (nan, ...)
    assert np.isnan(unknown.shape[0])
    args = {"y": y, "groups": g, which: unknown}
    with pytest.raises(DataError, match=f"{which} has unknown chunk sizes; call .compute_chunk_sizes"):
        fm.Dataset.from_dask(da.from_array(X, chunks=(200, D)), args["y"], args["groups"])


@pytest.mark.parametrize("bad", [None, 7])
def test_group_labels_missing_or_of_mixed_types(arrays, bad):
    X, y, g = arrays
    labels = g.astype(object)
    labels[N - 3] = bad                    # None among strings, or a number among strings
    with pytest.raises(DataError, match="group labels contain missing values .* or mix types"):
        fm.Dataset.from_dask(da.from_array(X, chunks=(200, D)), y, da.from_array(labels, chunks=200))


def test_group_label_nan_among_object_numbers(arrays):
    X, y, _ = arrays
    labels = np.where(np.arange(N) % 2 == 0, 1.0, 2.0).astype(object)
    labels[5] = float("nan")               # would otherwise become a group named 'nan'
    with pytest.raises(DataError, match="missing values"):
        fm.Dataset.from_dask(da.from_array(X, chunks=(200, D)), y, da.from_array(labels, chunks=200))


@pytest.mark.parametrize("rows", [0, -5, 1.5, True])
def test_chunk_rows_must_be_a_positive_integer(arrays, rows):
    X, y, g = arrays
    with pytest.raises(DataError, match="chunk_rows must be a positive integer"):
        fm.Dataset.from_dask(X, y, g, chunk_rows=rows)


# -- fm.assess on Dask columns -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def columns():
    rng = np.random.default_rng(2)
    y = rng.choice([-1.0, 1.0], N)
    s = rng.normal(size=N) + y
    return y, np.sign(s), s, rng.choice(["a", "b"], N)


def chunked(v, rows=200):
    return da.from_array(v, chunks=rows)


@pytest.mark.parametrize("which", ["y_true", "y_pred"])
def test_assess_nan_labels_or_decisions_are_named(columns, which):
    # before: NaN labels read as non-binary, and the error spoke of the ks metric
    y, yp, _, g = columns
    v = {"y_true": y.copy(), "y_pred": yp.copy()}
    v[which][N - 1] = np.nan
    with pytest.raises(DataError, match=f"{which} contains NaN or infinite values"):
        fm.assess(chunked(v["y_true"]), y_pred=chunked(v["y_pred"]), sensitive_features=chunked(g))


def test_assess_regression_with_nan_prediction_is_refused(columns):
    y, _, s, g = columns
    pred = s.copy()
    pred[7] = np.nan                       # before: mse and mae silently NaN
    with pytest.raises(DataError, match="y_pred contains NaN"):
        fm.assess(chunked(s + 1.0), y_pred=chunked(pred), sensitive_features=chunked(g), metrics=["mse"])


def test_assess_column_with_unknown_chunk_sizes(columns):
    y, yp, _, g = columns
    unknown = chunked(yp)[chunked(np.ones(N, bool))]
    with pytest.raises(DataError, match="y_pred has unknown chunk sizes"):
        fm.assess(chunked(y), y_pred=unknown, sensitive_features=chunked(g))


@pytest.mark.parametrize("bad", [None, float("nan"), 3])
def test_assess_missing_or_mixed_sensitive_labels(columns, bad):
    y, yp, _, g = columns
    labels = g.astype(object)
    labels[11] = bad
    with pytest.raises(DataError, match="sensitive_features has missing values"):
        fm.assess(chunked(y), y_pred=chunked(yp), sensitive_features=chunked(labels))


def test_cluster_closed_mid_run_is_a_data_error_and_leaves_no_prefetch_thread(arrays):
    distributed = pytest.importorskip("distributed")
    X, y, g = arrays
    data = fm.Dataset.from_dask(da.from_array(X, chunks=(200, D)), y, g)
    w = fm.Weights(D, intercept=True, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        def close_after_first_epoch(info):
            cluster.close()          # the client stays the default scheduler: its next computation is cancelled
            return False
        with pytest.raises(DataError, match="cancelled .* client or cluster closed during the run"):
            prob.solve(backend="stochastic", seed=0, epochs=4, callback=close_after_first_epoch)
    finally:
        client.close()
        cluster.close()
    assert not [t for t in threading.enumerate() if t.name == "fairmodel-prefetch" and t.is_alive()]


def test_seeded_draw_contract_same_chunking_same_rows(arrays):
    # the documented contract (docs/large_data.md): same seed and chunk bounds -> same rows; other bounds -> other
    # rows of the same law (so this test pins that the chunking is part of the contract, as documented)
    X, y, g = arrays

    def rows(chunks, prefetch):
        d = fm.Dataset.from_dask(da.from_array(X, chunks=(chunks, (D,))), y, g)
        with d.sampler("per_group", 8, seed=5, prefetch=prefetch) as s:
            return np.concatenate([s.draw_rows() for _ in range(3)])
    same = rows((300, 300), False)
    np.testing.assert_array_equal(same, rows((300, 300), True))
    np.testing.assert_array_equal(same, rows((300, 300), False))
    assert not np.array_equal(same, rows((100, 500), False))


# -- Parquet: what the files hold, not only the happy path ------------------------------------------------------------
@pytest.fixture(scope="module")
def files(arrays, tmp_path_factory):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    X, y, g = arrays
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(label=y, group=g)
    root = tmp_path_factory.mktemp("pqfiles")
    frame.to_parquet(root / "ok.parquet")
    good = (root / "ok.parquet").read_bytes()
    (root / "truncated.parquet").write_bytes(good[:len(good) // 2])
    (root / "empty_file.parquet").write_bytes(b"")
    (root / "text.parquet").write_text("x0,label\n1,2\n")
    for name, second in (("mixed", None), ("schemas", frame.iloc[300:].rename(columns={"x0": "X0"})),
                         ("types", frame.iloc[300:].assign(x0=lambda d: d.x0.astype(str)))):
        (root / name).mkdir()
        frame.iloc[:300].to_parquet(root / name / "part0.parquet")
        if second is None:
            (root / name / "part1.parquet").write_bytes(good[:len(good) // 3])
        else:
            second.to_parquet(root / name / "part1.parquet")
    (root / "nothing").mkdir()
    frame.iloc[:0].to_parquet(root / "no_rows.parquet")
    return root


@pytest.mark.parametrize("path, message", [
    ([], "path is an empty list"), ("nothing/*.parquet", "no Parquet file matched .*nothing"),
    ("nothing", "no Parquet file matched .*nothing.* files ending with .parq"),
    ("truncated.parquet", "truncated.parquet is not a readable Parquet file"),
    ("empty_file.parquet", "empty_file.parquet is not a readable Parquet file .*0 bytes"),
    ("text.parquet", "text.parquet is not a readable Parquet file"),
    ("mixed", "part1.parquet is not a readable Parquet file"),
    ("schemas", "column 'x0' is in .*part0.parquet but not in .*part1.parquet"),
    ("types", "column 'x0' has type .*string in .*part1.parquet; features and labels must be numeric"),
    ("no_rows.parquet", "hold no rows"), (3, "path must be a Parquet file"), (None, "path must be a Parquet file"),
])
def test_parquet_files_are_checked_before_reading(files, path, message):
    full = [str(files / p) for p in path] if isinstance(path, list) else \
        str(files / path) if isinstance(path, str) else path
    with pytest.raises(DataError, match=message):
        fm.Dataset.from_parquet(full, target="label", sensitive="group")


def test_parquet_columns_and_read_options(files):
    path = str(files / "ok.parquet")
    with pytest.raises(DataError, match="sensitive column 'group' is listed among the features"):
        fm.Dataset.from_parquet(path, target="label", sensitive="group", features=["x0", "group"])
    with pytest.raises(fm.OptionError, match="unknown option.*'foo'"):
        fm.Dataset.from_parquet(path, target="label", foo=1)          # dask would ignore it silently
    with pytest.raises(fm.OptionError, match="drop columns="):
        fm.Dataset.from_parquet(path, target="label", columns=["x0"])
    one = fm.Dataset.from_parquet(path, target="label", features="x1")    # one feature named by a string
    assert one.feature_names == ("x1",)


def test_a_file_damaged_after_reading_is_a_data_error(files, tmp_path):
    import shutil
    target = tmp_path / "later.parquet"
    shutil.copy(files / "ok.parquet", target)
    data = fm.Dataset.from_parquet(str(target), target="label", sensitive="group")
    target.write_bytes(b"not parquet any more")
    with pytest.raises(DataError, match="could not be read"):
        data.matvec(np.ones(D))


# -- Dask arrays: lengths, shapes and labels as the in-memory rules ---------------------------------------------------
@pytest.mark.parametrize("which, dask_input", [("y", False), ("groups", False), ("y", True), ("groups", True)])
def test_lengths_that_differ_are_named(arrays, which, dask_input):
    X, y, g = arrays
    short = {"y": y, "groups": g}[which][:450]
    short = da.from_array(short, chunks=150) if dask_input else short
    args = {"y": y, "groups": g, which: short}
    with pytest.raises(DataError, match=f"the lengths differ: X has {N} rows but {which} has 450"):
        fm.Dataset.from_dask(da.from_array(X, chunks=(200, D)), args["y"], args["groups"])


@pytest.mark.parametrize("labels, message", [("complex", "complex"), ("inf", "infinite"),
                                             ("2d", "must be 1-D")])
def test_group_labels_refused_as_in_memory(arrays, labels, message):
    X, y, g = arrays
    bad = {"complex": np.arange(N) % 2 + 0j, "inf": np.where(np.arange(N) % 2, np.inf, 1.0),
           "2d": np.column_stack([g, g])}[labels]
    with pytest.raises(DataError, match=message):
        fm.Dataset.from_dask(da.from_array(X, chunks=(200, D)), y, bad)
    if labels != "2d":
        with pytest.raises(DataError, match=message):
            fm.Dataset(X, y, bad)


@pytest.mark.parametrize("X, message", [(None, "2-D array"), ("sparse", "sparse"), ("frame", r"column\(s\) 'job'")])
def test_non_array_X_is_named(X, message):
    if X == "sparse":
        X = pytest.importorskip("scipy.sparse").csr_matrix(np.eye(4))
    elif X == "frame":
        pd = pytest.importorskip("pandas")
        X = pd.DataFrame({"a": [1.0, 2.0], "job": ["p", "q"]})
    with pytest.raises(DataError, match=message):
        fm.Dataset.from_dask(X)


def test_rows_and_sampler_options(arrays):
    X, y, g = arrays
    data = fm.Dataset.from_dask(da.from_array(X, chunks=(200, D)), y, g)
    with pytest.raises(DataError, match="integer row indices"):
        data.rows([0.5])
    mask = np.zeros(N, bool)
    mask[[5, 250]] = True
    assert np.array_equal(data.take(mask).X, X[[5, 250]])
    for bad in (0, "a", 1.5):
        with pytest.raises(DataError, match="buffer_bytes .* must be a positive integer"):
            data.sampler("uniform", 2, buffer_bytes=bad)


def test_assess_chunked_pos_label_not_among_the_labels(columns):
    y, yp, _, g = columns
    with pytest.raises(DataError, match=r"pos_label=7 is not among the values of y_true and y_pred"):
        fm.assess(chunked(y), y_pred=chunked(yp), sensitive_features=chunked(g), pos_label=7)
    ok = fm.assess(chunked(y), y_pred=chunked(yp), sensitive_features=chunked(g), pos_label=1.0)
    mem = fm.assess(y, y_pred=yp, sensitive_features=g, pos_label=1.0)
    assert np.allclose(ok.overall.to_numpy(), mem.overall.to_numpy())
