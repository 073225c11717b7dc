"""Reading Parquet files in chunks for :meth:`fairmodel.data_dask.DaskDataset.from_parquet`: the columns are
checked from the schema before anything is read (present, numeric, target not among the features), then X, y
and the group labels become Dask arrays over the same partitions (one chunk per non-empty partition)."""
from __future__ import annotations

import importlib

import numpy as np

from .errors import DataError


def parquet_columns(path, target, sensitive, features, read_options: dict, dask, da, step: int):
    """(X, y, groups, feature names) as Dask arrays; ``dask``, ``da``: the dask modules, ``step``: how many
    partition lengths to compute at once."""
    dd = importlib.import_module("dask.dataframe")
    try:
        df = dd.read_parquet(path, **read_options)
    except FileNotFoundError as exc:
        raise DataError(f"no Parquet data at {path}: {str(exc).splitlines()[-1]}") from None
    columns = list(df.columns)
    for label, col in (("target", target), ("sensitive", sensitive)):
        if col is not None and col not in columns:
            raise DataError(f"{label} column {col!r} is not in {path}; columns are {columns}")
    features = [c for c in columns if c not in (target, sensitive)] if features is None else list(features)
    unknown = [c for c in features if c not in columns]
    if unknown:
        raise DataError(f"feature column(s) {unknown} are not in {path}; columns are {columns}")
    if target is not None and target in features:
        raise DataError(f"target column {target!r} is listed among the features; remove it from features")
    if target is not None and df[target].dtype.kind not in "biuf":
        raise DataError(f"target column {target!r} has dtype {df[target].dtype}; labels must be numeric "
                        f"(map them to numbers first)")
    bad = [c for c in features if df[c].dtype.kind not in "biuf"]
    if bad:
        raise DataError(f"feature column(s) {bad} are not numeric; Parquet input must be encoded already "
                        f"(one-hot or ordinal) before it is read in chunks")
    # one collection of the needed columns, cut into pandas partitions once: X, y and the groups of a
    # chunk are three views of the same partition read (computed once per pass)
    parts = df[list(dict.fromkeys(features + [c for c in (target, sensitive) if c is not None]))].to_delayed()
    # partition lengths from one column (the same partitions): about 1/d of a read of every column
    probe = df[[target if target is not None else features[0]]].to_delayed()
    counts = [dask.delayed(len)(p) for p in probe]
    lengths = [n for k in range(0, len(counts), step) for n in dask.compute(*counts[k:k + step])]

    def column(fn, *args, shape=(), dtype=float):
        return da.concatenate([da.from_delayed(dask.delayed(fn)(p, *args), shape=(n,) + shape, dtype=dtype)
                               for p, n in zip(parts, lengths) if n])
    X = column(_frame_values, features, shape=(len(features),))
    y = None if target is None else column(_frame_values, target)
    g = None
    if sensitive is not None:
        integer = df[sensitive].dtype.kind in "biu"
        g = column(_frame_labels, sensitive, integer, dtype=np.int64 if integer else object)
    return X, y, g, features


def _frame_values(frame, columns):
    # a copy, row-major as NumPy data: a view would keep the partition's whole pandas block alive in any
    # result that holds it (e.g. the labels of a chunk)
    return np.array(frame[columns].to_numpy(dtype=float), order="C", copy=True)


def _frame_labels(frame, column, integer):
    col = frame[column]
    if col.isna().any():
        raise DataError(f"the sensitive column {column!r} has missing values; drop or fill those rows first")
    return col.to_numpy(dtype=np.int64) if integer else col.astype(str).to_numpy(dtype=object)
