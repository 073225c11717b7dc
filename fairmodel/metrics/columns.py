"""The columns of an assessment: a column given directly or by name in a data frame, and the sensitive features
in any of their forms (one column, several columns, a dict, a DataFrame, names in ``data``, tuple labels,
:class:`fairmodel.Groups`), encoded as groups (the intersections when there are several columns)."""
from __future__ import annotations

import numpy as np

from ..data.dataset import Groups
from ..errors import DataError
from ..utilities.validate import check_labels


def column(value, data, name):
    """A column given directly, or by name in ``data`` (a DataFrame or a mapping of columns)."""
    if isinstance(value, str):
        if data is None:
            raise DataError(f"{name}={value!r} names a column, but no data= frame was given to look it up in")
        if value not in _keys(data):
            raise DataError(f"{name}={value!r} is not a column of data; columns are {list(_keys(data))}")
        value = data[value]
    return None if value is None else (value.to_numpy() if hasattr(value, "to_numpy") else np.asarray(value))


def _keys(data):
    return list(data.columns) if hasattr(data, "columns") else list(data.keys())


def sensitive_columns(sf, data, n: int | None) -> tuple[list[np.ndarray], list[str]]:
    """The sensitive feature columns and their names, from any of the accepted forms (see :func:`assess`)."""
    if sf is None:
        raise DataError("sensitive_features is required: the group labels of every row (one or several columns)")
    if isinstance(sf, str) or (isinstance(sf, (list, tuple)) and sf and all(isinstance(c, str) for c in sf)
                               and data is not None and all(c in _keys(data) for c in sf)):
        names = [sf] if isinstance(sf, str) else list(sf)
        return [column(c, data, "sensitive_features") for c in names], names
    if isinstance(sf, Groups):
        values = np.empty(len(sf), dtype=object)
        values[:] = [sf.names[c] for c in sf.codes]
        sf = values
    if (isinstance(sf, dict) or hasattr(sf, "columns")) and len(sf.keys() if isinstance(sf, dict) else sf.columns) == 0:
        raise DataError("sensitive_features has no column (an empty dict or DataFrame); give at least one column of "
                        "group labels")
    if hasattr(sf, "columns"):                       # a DataFrame
        return [sf[c].to_numpy() for c in sf.columns], [str(c) for c in sf.columns]
    if isinstance(sf, dict):
        return [np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v) for v in sf.values()], [str(k) for k in sf]
    if hasattr(sf, "to_numpy"):                      # a Series
        return [sf.to_numpy()], [str(sf.name) if sf.name is not None else "sensitive_feature_0"]
    if isinstance(sf, (list, tuple)) and sf and all(np.ndim(c) == 1 for c in sf) and not all(
            isinstance(c, tuple) for c in sf):
        cols = [np.asarray(c.to_numpy() if hasattr(c, "to_numpy") else c) for c in sf]
        return cols, [str(getattr(c, "name", None) or f"sensitive_feature_{j}") for j, c in enumerate(sf)]
    arr = label_array(sf)
    if arr.ndim == 2:
        return [arr[:, j] for j in range(arr.shape[1])], [f"sensitive_feature_{j}" for j in range(arr.shape[1])]
    if arr.ndim == 1 and arr.size and isinstance(arr[0], tuple):     # tuple labels (e.g. Adult's sex_race)
        k = len(arr[0])
        if any(not isinstance(v, tuple) or len(v) != k for v in arr):
            raise DataError("sensitive_features mixes tuple labels of different lengths")
        return [np.array([v[j] for v in arr], dtype=object) for j in range(k)], \
            [f"sensitive_feature_{j}" for j in range(k)]
    if arr.ndim != 1:
        raise DataError(f"sensitive_features must be one column, several columns or a DataFrame; got an array of "
                        f"shape {arr.shape}")
    return [arr], ["sensitive_feature_0"]


def label_array(values) -> np.ndarray:
    if isinstance(values, np.ndarray):
        return values
    items = list(values)
    if items and isinstance(items[0], tuple):
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    return np.asarray(items)


def group_labels(columns, names, n):
    for c, name in zip(columns, names):
        if c.ndim != 1 or c.shape[0] != n:
            raise DataError(f"sensitive feature {name!r} has shape {c.shape}; it needs one label per row ({n})")
        check_labels(c, f"sensitive feature {name!r}")
    if len(columns) == 1:
        return Groups(columns[0])
    keys = np.empty(n, dtype=object)
    keys[:] = list(zip(*(c.tolist() for c in columns)))
    return Groups(keys)


def dataset_groups(data) -> dict:
    """The groups of a :class:`fairmodel.Dataset` as named columns: one column named after the sensitive attribute,
    or, for tuple labels (e.g. Adult's ``sex_race``), one column per entry, named by splitting the attribute's
    name on ``_`` when the parts match (``sex``, ``race``)."""
    g = data.groups
    labels = np.empty(len(g), dtype=object)
    labels[:] = [g.names[c] for c in g.codes]
    name = data.sensitive_name or "group"
    if g.names and isinstance(g.names[0], tuple):
        k = len(g.names[0])
        parts = name.split("_")
        names = parts if len(parts) == k else [f"{name}_{j}" for j in range(k)]
        return {names[j]: np.array([v[j] for v in labels], dtype=object) for j in range(k)}
    return {name: labels}
