"""Reading Parquet files in chunks for :meth:`fairmodel.data.dask_dataset.DaskDataset.from_parquet`. Before anything is
read: the path is resolved to its files (a glob or a directory that matches none is an error naming it), every
file's footer is read (a truncated, empty or non-Parquet file is named), the columns are checked in every file
(present, of one numeric type for the features and the target, the target and the sensitive attribute not among
the features) and the row count is not zero. Then X, y and the group labels become Dask arrays over the same
partitions (one chunk per non-empty partition)."""
from __future__ import annotations

import importlib
import inspect
import os

import numpy as np

from ..errors import DataError, OptionError
from .dataset import column_list

PARQUET_EXTENSIONS = (".parq", ".parquet", ".pq")      # what dask.dataframe.read_parquet reads in a directory
EXTRA_READ_OPTIONS = ("dataset", "read", "open_file_options")   # its **kwargs that the engine takes


def parquet_columns(path, target, sensitive, features, read_options: dict, dask, da, step: int):
    """(X, y, groups, feature names) as Dask arrays; ``dask``, ``da``: the dask modules, ``step``: how many
    partition lengths to compute at once."""
    dd = importlib.import_module("dask.dataframe")
    _check_read_options(dd, read_options)
    found = _files(path, read_options)
    schemas = None if found is None else _schemas(*found)
    try:
        df = dd.read_parquet(path, **read_options)
    except FileNotFoundError as exc:
        raise DataError(f"no Parquet data at {path}: {str(exc).splitlines()[-1]}") from None
    except (OSError, ValueError, TypeError) as exc:
        raise DataError(f"the Parquet data at {path} could not be read: {str(exc).splitlines()[-1]}") from None
    columns = list(df.columns)
    for label, col in (("target", target), ("sensitive", sensitive)):
        if col is not None and col not in columns:
            raise DataError(f"{label} column {col!r} is not in {path}; columns are {columns}")
    features = [c for c in columns if c not in (target, sensitive)] if features is None else \
        column_list(features, "features")
    unknown = [c for c in features if c not in columns]
    if unknown:
        raise DataError(f"feature column(s) {unknown} are not in {path}; columns are {columns}")
    for label, col in (("target", target), ("sensitive", sensitive)):
        if col is not None and col in features:
            raise DataError(f"{label} column {col!r} is listed among the features; remove it from features")
    if target is not None and df[target].dtype.kind not in "biuf":
        raise DataError(f"target column {target!r} has dtype {df[target].dtype}; labels must be numeric "
                        f"(map them to numbers first)")
    bad = [c for c in features if df[c].dtype.kind not in "biuf"]
    if bad:
        raise DataError(f"feature column(s) {bad} are not numeric; Parquet input must be encoded already "
                        f"(one-hot or ordinal) before it is read in chunks")
    if schemas is not None:
        _check_columns(schemas, features + [c for c in (target, sensitive) if c is not None],
                       features + [c for c in (target,) if c is not None])
    # X, y and the groups each read only their own columns of a partition (Parquet is columnar): after the opening
    # passes, the labels and group codes are held in the client and every pass reads the features alone
    # partition lengths from one column (the same partitions): about 1/d of a read of every column
    probe = df[[target if target is not None else features[0]]].to_delayed()
    counts = [dask.delayed(len)(p) for p in probe]
    lengths = [n for k in range(0, len(counts), step) for n in dask.compute(*counts[k:k + step])]
    if not any(lengths):
        raise DataError(f"the Parquet data at {path} hold no rows")

    def column(names, fn, *args, shape=(), dtype=float):
        parts = df[list(names)].to_delayed()
        return da.concatenate([da.from_delayed(dask.delayed(_read)(fn, p, n, k, path, *args), shape=(n,) + shape,
                                               dtype=dtype) for k, (p, n) in enumerate(zip(parts, lengths)) if n])
    X = column(features, _frame_values, features, shape=(len(features),))
    y = None if target is None else column([target], _frame_values, target)
    g = None
    if sensitive is not None:
        integer = df[sensitive].dtype.kind in "biu"
        g = column([sensitive], _frame_labels, sensitive, integer, dtype=np.int64 if integer else object)
    return X, y, g, features


def _check_read_options(dd, read_options: dict) -> None:
    """Options of dask.dataframe.read_parquet only (it ignores unknown ones silently); the columns are chosen by
    target=, sensitive= and features=."""
    chosen = [k for k in ("columns", "index") if k in read_options]
    if chosen:
        raise OptionError(f"from_parquet chooses the columns itself: drop {', '.join(chosen)}= and name them with "
                          f"features=, target= and sensitive=")
    allowed = [p for p in inspect.signature(dd.read_parquet).parameters if p not in ("path", "columns", "index",
                                                                                    "kwargs")]
    unknown = sorted(set(read_options) - set(allowed) - set(EXTRA_READ_OPTIONS))
    if unknown:
        raise OptionError(f"unknown option(s) {', '.join(map(repr, unknown))} for from_parquet; it takes target=, "
                          f"sensitive=, features=, name= and the options of dask.dataframe.read_parquet: "
                          f"{', '.join(allowed + list(EXTRA_READ_OPTIONS))}")


def _files(path, read_options: dict):
    """(filesystem, the Parquet files of ``path``) through fsspec, as dask.dataframe.read_parquet resolves them; a
    DataError when there is none. None when the files are read through another filesystem layer."""
    if isinstance(path, (list, tuple)):
        if not path:
            raise DataError("path is an empty list: give at least one Parquet file, a directory or a glob pattern")
        paths = list(path)
    else:
        paths = [path]
    if not all(isinstance(p, (str, os.PathLike)) for p in paths):
        raise DataError(f"path must be a Parquet file, a directory, a glob pattern (e.g. 'data/*.parquet') or a list "
                        f"of files; got {path!r}")
    if read_options.get("filesystem", "fsspec") not in ("fsspec", None):
        return None
    fsspec = importlib.import_module("fsspec")
    names = [os.fspath(p) for p in paths]
    fs, _, resolved = fsspec.core.get_fs_token_paths(names if len(names) > 1 else names[0],
                                                     storage_options=read_options.get("storage_options"))
    extensions = read_options.get("parquet_file_extension", PARQUET_EXTENSIONS)
    extensions = (extensions,) if isinstance(extensions, str) else tuple(extensions or ()) or None
    files = []
    for p in resolved:
        if fs.isdir(p):
            base = p.rstrip("/")
            files += sorted(f for f in fs.find(p) if (extensions is None or f.endswith(extensions))
                            and not any(part.startswith(("_", ".")) for part in f[len(base):].split("/") if part))
        elif fs.exists(p):
            files.append(p)
        else:
            raise DataError(f"no Parquet data at {p}: no such file or directory")
    if not files:
        kinds = f" (in a directory, files ending with {', '.join(extensions)})" if extensions else ""
        raise DataError(f"no Parquet file matched {path!r}{kinds}; check the path or the glob pattern")
    return fs, files


def _schemas(fs, files: list) -> dict:
    """file -> its Arrow schema, from every file's footer (a few kilobytes each): a file that is not Parquet (a
    truncated or empty one) is named here, not in a task of a later pass."""
    pa = importlib.import_module("pyarrow")
    pq = importlib.import_module("pyarrow.parquet")
    schemas = {}
    for f in files:
        try:
            with fs.open(f, "rb") as handle:
                schemas[f] = pq.read_metadata(handle).schema.to_arrow_schema()
        except (OSError, ValueError, pa.lib.ArrowException) as exc:
            raise DataError(f"{f} is not a readable Parquet file ({str(exc).splitlines()[0]}): it may be truncated, "
                            f"empty or in another format; write it again or remove it") from None
    return schemas


def _check_columns(schemas: dict, needed: list, numeric: list) -> None:
    """Name a file that lacks a needed column the others have, or holds a non-numeric feature or target (dask
    takes the schema of the first file only)."""
    pa = importlib.import_module("pyarrow")
    files = list(schemas)
    for col in needed:
        having = [f for f, s in schemas.items() if col in s.names]
        if having and len(having) < len(files):     # (a column of no file comes from the directory names: hive)
            lacking = next(f for f in files if f not in having)
            raise DataError(f"column {col!r} is in {having[0]} but not in {lacking}: every file must hold the same "
                            f"columns")
    for col in numeric:
        for f, s in schemas.items():
            if col in s.names:
                t = s.field(col).type
                if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                        or pa.types.is_decimal(t) or pa.types.is_null(t)):
                    raise DataError(f"column {col!r} has type {t} in {f}; features and labels must be numeric in "
                                    f"every file")


def _read(fn, frame, rows: int, part: int, path, *args):
    """``fn(frame, *args)`` of a partition read by a pass, refused if its rows are not those counted when the data
    were opened: the files were rewritten since (a pass would otherwise combine rows of two versions)."""
    if len(frame) != rows:
        raise DataError(f"the Parquet data at {path} changed after the data set was built: partition {part} has "
                        f"{len(frame)} rows, {rows} when it was opened; build the data set again "
                        f"(fm.Dataset.from_parquet) after rewriting its files")
    return fn(frame, *args)


def _frame_values(frame, columns):
    # a copy, row-major as NumPy data: a view would keep the partition's whole pandas block alive in any
    # result that holds it (e.g. the labels of a chunk)
    return np.array(frame[columns].to_numpy(dtype=float), order="C", copy=True)


def _frame_labels(frame, column, integer):
    col = frame[column]
    if col.isna().any():
        raise DataError(f"the sensitive column {column!r} has missing values; drop or fill those rows first")
    return col.to_numpy(dtype=np.int64) if integer else col.astype(str).to_numpy(dtype=object)
