"""Bad inputs to Dask-backed data give a fairmodel DataError naming the problem, never a raw Dask, pandas or
NumPy traceback nor a silently wrong data set (review of the Dask paths)."""
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
