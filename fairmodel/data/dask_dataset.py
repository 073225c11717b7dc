"""Dask-backed data: a :class:`~fairmodel.data.Dataset` whose features live in chunks (a Dask array, or
Parquet files read through dask.dataframe) and are never all in memory.

What is held where
------------------
* The features ``X`` (n x d) stay a Dask array, chunked by rows (one chunk across the columns). Every
  full pass (``map_chunks``) runs one task per chunk on Dask's scheduler (threads by default, the workers
  of a ``dask.distributed.Client`` when one is active) and brings back only each chunk's small result.
* The labels ``y`` and the integer group codes are O(n) vectors held in memory (8 bytes a row each), so
  the declarations validate and encode them exactly as for NumPy data; the tasks of a pass read them per
  chunk. Group names come from a first pass (``unique`` over the chunks), codes from a second.
* Minibatches (:class:`ChunkSampler`) gather only the sampled rows from the chunks they fall in.

Dask is imported when a Dask method is first used (the ``dask`` extra: ``pip install ".[dask]"`` in the source
folder), never by ``import fairmodel``.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import importlib
import itertools
import os
import threading

import numpy as np

from ..errors import DataError
from ..utilities.validate import (check_array_input, check_magnitude, check_rows, check_scaling_stats,
                                  check_unique_names)
from .dask_sampler import DEFAULT_BUFFER_BYTES, ChunkSampler
from .dataset import CHUNKED_SOURCES, Batch, Dataset, Groups, checked_feature_names
from .passes import add_parts, counter, row_parts, row_slice, row_sums
from .parquet import parquet_columns

DEFAULT_CHUNK_ROWS = 1 << 16
_COUNTER = itertools.count()


def dask_modules():
    """(dask, dask.array), or a DataError that says how to install them."""
    try:
        return importlib.import_module("dask"), importlib.import_module("dask.array")
    except ImportError:
        raise DataError("Dask-backed data need the Dask extra, fairmodel[dask]: pip install 'dask[distributed,dataframe]' "
                        "pyarrow") from None


def active_client():
    """The active ``dask.distributed`` client, or None (Dask's threaded scheduler then runs the tasks)."""
    try:
        return importlib.import_module("distributed").get_client()
    except (ImportError, ValueError):
        return None


def chunks_in_flight() -> int:
    """Chunks computed together: the threads of the active scheduler (a distributed client's workers, else this
    machine's cores; at least 2), so that every thread is busy and only a few chunks are in memory at once
    (reading a Parquet chunk takes about 2.5 times its size in floats, measured at 250,000 x 22)."""
    client = active_client()
    threads = sum(client.nthreads().values()) if client is not None else os.cpu_count() or 1
    return max(2, threads)


@contextlib.contextmanager
def reading_chunks():
    """Errors of a Dask computation over the chunks as fairmodel's: a computation cancelled under us (a distributed
    client or cluster closed during the run) or a chunk that cannot be read is a DataError saying so."""
    try:
        yield
    except concurrent.futures.CancelledError as exc:
        raise DataError(f"a Dask computation over the chunks was cancelled ({type(exc).__name__}: {exc}); was the "
                        f"dask.distributed client or cluster closed during the run? Keep it open until the solve or "
                        f"evaluation returns") from exc
    except Exception as exc:    # a chunk that cannot be read (a file changed or damaged since it was opened)
        if not (isinstance(exc, OSError) or type(exc).__module__.startswith("pyarrow")):
            raise
        raise DataError(f"a chunk of the data could not be read ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                        f"were its files changed or damaged after the data set was built? Rebuild it") from exc


def compute_chunks(dask, *tasks):
    """dask.compute of the tasks, with the errors of :func:`reading_chunks`."""
    with reading_chunks():
        return dask.compute(*tasks)


def _cancel(client, futures) -> None:
    """Cancel the futures not yet done (best effort: a closed client has nothing left to cancel)."""
    try:
        client.cancel([f for f in futures if not f.done()])
    except Exception:
        pass


def computed_in_order(dask, tasks: list, lock=None, cancel=None):
    """The results of ``tasks`` (one per chunk) in their order, one group at a time (a list per group), with the
    errors of :func:`reading_chunks`. On a ``dask.distributed`` cluster every task is submitted at once (the
    scheduler runs as many as the workers have threads, and a worker holds only the chunks it is computing) and
    each result is collected in order as it arrives; on the threaded scheduler the tasks run in groups of
    :func:`chunks_in_flight`, which bounds the chunks read at once in this process. ``lock`` is held while a group
    computes; ``cancel`` (a ``threading.Event``) stops between groups."""
    lock = lock if lock is not None else contextlib.nullcontext()
    client = active_client()
    if client is not None and tasks:
        with lock, reading_chunks():
            futures = client.compute(tasks)
            try:
                for future in futures:
                    if cancel is not None and cancel.is_set():
                        return
                    yield [future.result()]
                    future.release()
            finally:
                _cancel(client, futures)
        return
    step = chunks_in_flight()
    for k in range(0, len(tasks), step):
        if cancel is not None and cancel.is_set():
            return
        with lock:
            yield compute_chunks(dask, *tasks[k:k + step])


def is_dask(a) -> bool:
    return hasattr(a, "dask") and hasattr(a, "chunks")


def _apply(fn, X, y, g, start, stop, *extra, local=None):
    if local is not None:   # a row subset: its rows of this chunk (its labels and codes come from the client)
        X = np.asarray(X)[local]
    return fn(Batch(np.ascontiguousarray(X, dtype=float), None if y is None else np.asarray(y, dtype=float), g,
                    np.arange(start, stop)), *extra)


def _chunk_stats(batch):
    """(all finite, column min, max, count, mean, M2, labels, distinct group labels) of one chunk."""
    X = batch.X
    with np.errstate(over="ignore", invalid="ignore"):    # features too large for this are refused after the pass
        mean = X.mean(axis=0)
        m2 = ((X - mean) ** 2).sum(axis=0)
    return (bool(np.isfinite(X).all()), X.min(axis=0), X.max(axis=0), X.shape[0], mean, m2, batch.y,
            None if batch.groups is None else _distinct(batch.groups))


def _distinct(labels):
    """The sorted distinct group labels, or a DataError for labels that do not sort or are missing."""
    try:
        names = np.unique(labels)
    except TypeError:       # object labels: None among strings, or numbers mixed with strings
        names = None
    if names is None or names.dtype == object and any(v is None or v != v for v in names):
        raise DataError("group labels contain missing values (None, NaN) or mix types that do not sort (e.g. "
                        "numbers and strings); drop or fill those rows, or make the labels one type")
    return names


def _pooled_std(counts, means, m2s):
    """Column standard deviations from per-chunk counts, means and sums of squared deviations (Chan et al.)."""
    n, mean, m2 = counts[0], means[0], m2s[0]
    for nb, mb, m2b in zip(counts[1:], means[1:], m2s[1:]):
        delta, total = mb - mean, n + nb
        mean, m2, n = mean + delta * nb / total, m2 + m2b + delta ** 2 * n * nb / total, total
    return np.sqrt(m2 / n)


def _encode_batch(names, batch):
    # the smallest integer type that holds the codes: the client concatenates these (1 byte a row below 256
    # groups) before Groups makes the one intp copy it keeps
    return _encode(batch.groups, names).astype(np.min_scalar_type(max(len(names) - 1, 0)))


def concatenate_rows(parts: list, item=None) -> np.ndarray:
    """np.concatenate of per-chunk arrays (or of entry ``item`` of per-chunk tuples) along the rows, dropping each
    part once copied, so that the peak memory is the result plus one part, not twice the result."""
    def get(p):
        return p if item is None else p[item]
    first = get(parts[0])
    out = np.empty((sum(get(p).shape[0] for p in parts),) + first.shape[1:], dtype=first.dtype)
    start = 0
    for i in range(len(parts)):
        part = get(parts[i])
        out[start:start + part.shape[0]] = part
        start += part.shape[0]
        parts[i] = None if item is None else parts[i][:item] + (None,) + parts[i][item + 1:]
    return out


def _take(X, local):
    return np.asarray(X, dtype=float)[local]


def _matvec(w, batch):
    return batch.X @ w


def _rmatvec(batch, v):
    return batch.X.T @ v


def _encode(block, names):
    """Group labels of one chunk to integer codes (``names`` sorted)."""
    block = np.asarray(block)
    codes = np.searchsorted(names, block.astype(str) if names.dtype.kind == "U" else block)
    return codes.astype(np.intp)


class DaskDataset(Dataset):
    """A Dataset over Dask arrays; build it with :meth:`Dataset.from_dask` or :meth:`Dataset.from_parquet`.

    Same facts and data-source members as :class:`Dataset` (``n_samples``, ``groups``, ``chunks``,
    ``sampler``, ``map_chunks``, ``matvec``, ``rmatvec``, ``rows``); ``take``/``subsample``/``split`` return
    in-memory Datasets of the selected rows (``subsample`` is how to hand a sample to the exact backend).
    """

    is_chunked = True

    def __init__(self, *args, **kwargs):
        raise DataError("build Dask-backed data with fm.Dataset.from_dask(X, y, groups) or "
                        "fm.Dataset.from_parquet(path, target=..., sensitive=...)")

    @classmethod
    def from_arrays(cls, X, y=None, groups=None, *, feature_names=None, name: str = "data",
                    target_name: str | None = None, sensitive_name: str | None = None,
                    chunk_rows: int | None = None) -> "DaskDataset":
        """Validate and wrap Dask (or NumPy) arrays: X (n, d) numeric, y (n,), groups (n,) labels.

        NumPy inputs are cut into chunks of ``chunk_rows`` rows (default 65,536); Dask inputs keep their
        row chunks (``chunk_rows`` rechunks them). Checks (finite numbers, shapes, scaling) and group names
        come from one pass over the chunks, the group codes from a second pass over the group column.
        """
        _, da = dask_modules()
        if chunk_rows is not None and (isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer))
                                       or chunk_rows < 1):
            raise DataError(f"chunk_rows must be a positive integer (rows per chunk); got {chunk_rows!r}")
        rows = chunk_rows or DEFAULT_CHUNK_ROWS
        if not is_dask(X):
            check_array_input(X, "X")
        X = X if is_dask(X) else da.from_array(np.asarray(X), chunks=(rows, -1))
        if X.ndim != 2:
            raise DataError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}")
        if X.dtype.kind not in "biuf":
            raise DataError(f"X has dtype {X.dtype}; features must be numeric (encode categorical columns first)")
        X = X.rechunk({0: chunk_rows or X.chunks[0], 1: -1})
        if any(np.isnan(c) for c in X.chunks[0]):
            raise DataError("X has unknown chunk sizes; call X.compute_chunk_sizes() first")
        n, d = (int(s) for s in X.shape)
        if n == 0 or d == 0:
            raise DataError(f"X must have at least one row and one column; got shape {X.shape}")

        def aligned(v, what):
            if not is_dask(v):
                v = np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v)
            if v.ndim == 1 and np.isnan(v.shape[0]):
                raise DataError(f"{what} has unknown chunk sizes; call .compute_chunk_sizes() on it first")
            if v.ndim != 1:
                raise DataError(f"{what} must be 1-D with one entry per row of X ({n}); got shape {v.shape}")
            if int(v.shape[0]) != n:
                raise DataError(f"the lengths differ: X has {n} rows but {what} has {int(v.shape[0])} entries; "
                                f"{what} needs one entry per row of X")
            v = v if is_dask(v) else da.from_array(v, chunks=(X.chunks[0],))
            return v.rechunk((X.chunks[0],))

        yd = None if y is None else aligned(y, "y")
        gd = None if groups is None else aligned(groups, "groups")
        if yd is not None and yd.dtype.kind not in "biuf":
            raise DataError(f"y has dtype {yd.dtype}; labels must be numeric (map them to numbers first)")
        self = object.__new__(cls)
        self.X, self._yd, self._gd, self.y, self._groups = X, yd, gd, None, None
        self._bounds = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.intp)
        self._origin, self._sel = self._bounds, None   # chunk starts in the Dask arrays; the rows of a subset
        # one group of chunks read at a time by this data (and its subsets): a sampler's prefetch and a pass
        # alternate their groups of chunks instead of holding both in memory
        self._io_lock = threading.Lock()
        # first pass, one task per chunk: finiteness and column statistics of X, the labels, the group names
        parts = self.map_chunks(_chunk_stats)
        if not all(p[0] for p in parts):
            raise DataError("X contains NaN or infinite values; drop or impute them first")
        lo, hi = np.min([p[1] for p in parts], axis=0), np.max([p[2] for p in parts], axis=0)
        check_magnitude(np.where(-lo > hi, lo, hi), "X", "column")
        std = _pooled_std([p[3] for p in parts], [p[4] for p in parts], [p[5] for p in parts])
        if yd is not None:
            self.y = concatenate_rows(parts, 6).astype(float, copy=False)
            if not np.all(np.isfinite(self.y)):
                raise DataError("y contains NaN or infinite values; drop or impute those rows first")
        if gd is not None:
            names = _distinct(np.concatenate([p[7] for p in parts]))
            names = names.astype(str) if names.dtype == object else names
            if names.dtype.kind == "c" or names.dtype.kind == "f" and not np.all(np.isfinite(names)):
                raise DataError(f"group labels contain {'complex' if names.dtype.kind == 'c' else 'NaN or infinite'} "
                                f"values; use integer or text labels, and drop or fill the rows without one")
            del parts
            codes = concatenate_rows(self.map_chunks(functools.partial(_encode_batch, names)))  # second pass
            self._gd = gd.map_blocks(_encode, names, dtype=np.intp)      # the codes, per chunk, in later passes
            self._groups = Groups(codes, names=tuple(names.tolist()))
            check_unique_names(self._groups.names, "distinct group labels read as the same text",
                               "make the labels one type (e.g. strings)")
        self.feature_names = checked_feature_names(feature_names, d)
        check_scaling_stats(np.asarray(std), np.asarray(hi) - np.asarray(lo), self.feature_names, stacklevel=4)
        self.name, self.target_name, self.sensitive_name = name, target_name, sensitive_name
        if self.y is not None:
            self.y.setflags(write=False)
        return self

    @classmethod
    def from_parquet(cls, path, target=None, sensitive=None, features=None, *, name: str = "data",
                     **read_options) -> "DaskDataset":
        """Parquet file(s) through ``dask.dataframe.read_parquet`` (one chunk per partition, numeric features;
        ``features`` defaults to every column except the target and the sensitive column)."""
        dask, da = dask_modules()
        X, y, g, features = parquet_columns(path, target, sensitive, features, read_options, dask, da,
                                            chunks_in_flight())
        return cls.from_arrays(X, y, g, feature_names=features, name=name, target_name=target,
                               sensitive_name=sensitive, chunk_rows=None)

    # -- facts ---------------------------------------------------------------------------------------
    @property
    def n_samples(self) -> int:
        return int(self._bounds[-1])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_chunks(self) -> int:
        return len(self._bounds) - 1

    def __repr__(self) -> str:
        g = "" if self._groups is None else f", groups={dict(zip(self._groups.names, self._groups.sizes.tolist()))}"
        return f"DaskDataset({self.name!r}, n={self.n_samples}, d={self.n_features}, chunks={self.n_chunks}{g})"

    def in_memory_X(self, what: str):
        raise DataError(f"{what} needs the features in memory, but this Dataset is backed by Dask "
                        f"({self.n_samples} rows in {self.n_chunks} chunks). Solve it with the stochastic backend "
                        f"(prob.solve(backend='stochastic')), or build the problem on an in-memory stratified "
                        f"sample: data.subsample(n, seed=0)")

    # -- full passes ---------------------------------------------------------------------------------
    def _blocks(self):
        """Per chunk: the Dask block of X, and the labels and group codes: slices of the validated vectors held
        in the client once they exist (no label column decoded and encoded again in every pass), else the Dask
        blocks (the passes of validation)."""
        k, b = self.n_chunks, self._bounds
        Xb = self.X.to_delayed(optimize_graph=False).ravel()
        if self.y is not None:
            yb = [self.y[b[i]:b[i + 1]] for i in range(k)]
        else:
            yb = [None] * k if self._yd is None else self._yd.to_delayed(optimize_graph=False).ravel()
        if self._groups is not None:
            gb = [self._groups.codes[b[i]:b[i + 1]] for i in range(k)]
        else:
            gb = [None] * k if self._gd is None else self._gd.to_delayed(optimize_graph=False).ravel()
        return Xb, yb, gb

    def _tasks(self, fn, per_row, labels: bool = True) -> list:
        """One Dask task per chunk holding rows: fn(batch, *the chunk's parts of per_row); ``labels=False``: the
        batches carry the features only (the chunk's labels and codes are not shipped with the task)."""
        dask, _ = dask_modules()
        Xb, yb, gb = self._blocks()
        if not labels:
            yb = gb = [None] * len(Xb)
        tag, b = next(_COUNTER), self._bounds
        return [dask.delayed(_apply, pure=False)(fn, Xb[i], yb[i], gb[i], int(b[i]), int(b[i + 1]),
                                                 *(row_slice(a, b[i], b[i + 1]) for a in per_row),
                                                 local=self._local(i), dask_key_name=f"fairmodel-pass-{tag}-{i}")
                for i in range(self.n_chunks) if b[i + 1] > b[i]]     # a subset skips chunks it has no rows in

    def _computed(self, tasks):
        """The tasks' results in chunk order, a group at a time (:func:`computed_in_order`), one pass or gather at a
        time per data set."""
        dask, _ = dask_modules()
        yield from computed_in_order(dask, tasks, self._io_lock)

    def map_chunks(self, fn, size: int | None = None, *per_row, labels: bool = True) -> list:
        """[fn(batch, *per-chunk slices of per_row) for every chunk], in row order, as one Dask computation
        (one task per chunk; ``size`` is ignored: the chunks are the Dask array's)."""
        out = []
        for got in self._computed(self._tasks(fn, per_row, labels)):
            out.extend(got)
        return out

    def reduce_chunks(self, fn, *per_row, size: int | None = None, sparse: bool = False, labels: bool = True):
        """The sum of fn's chunk results in chunk order, added as each is computed (the client holds a few results at
        a time, e.g. one d x d Hessian per worker thread)."""
        total = None
        for got in self._computed(self._tasks(fn, per_row, labels)):
            for part in got:
                total = add_parts(total, part)
        return total

    def chunks(self, size: int | None = None):
        """The chunks one at a time as NumPy Batches (a streaming pass on the client)."""
        dask, _ = dask_modules()
        Xb, yb, gb = self._blocks()
        for i in range(self.n_chunks):
            if self._bounds[i + 1] == self._bounds[i]:
                continue
            with self._io_lock:
                X, y, g = compute_chunks(dask, Xb[i], yb[i], gb[i])
            if self._sel is not None:
                X = np.asarray(X)[self._local(i)]
            yield Batch(np.asarray(X, dtype=float), None if y is None else np.asarray(y, dtype=float), g,
                        np.arange(self._bounds[i], self._bounds[i + 1]))

    def matvec(self, w) -> np.ndarray:
        """X @ w: one pass (the scores of every row, in the client)."""
        return concatenate_rows(row_parts(self, functools.partial(_matvec, np.asarray(w))))

    def rmatvec(self, v) -> np.ndarray:
        """X' v: one pass (``v`` cut at the chunks' rows)."""
        return row_sums(self, _rmatvec, np.asarray(v))

    def rows(self, rows, cancel=None) -> np.ndarray | None:
        """``X[rows]`` gathered from the chunks the rows fall in (only those chunks are read). ``cancel``: a
        ``threading.Event`` checked between groups of chunks; once set, the gather stops and returns None."""
        dask, _ = dask_modules()
        rows = check_rows(rows, self.n_samples)
        counter(self).gathers += 1
        chunk = np.searchsorted(self._bounds, rows, side="right") - 1
        rows = rows if self._sel is None else self._sel[rows]       # rows of the Dask arrays
        order = np.argsort(chunk, kind="stable")
        used, starts = np.unique(chunk[order], return_index=True)
        pieces = np.split(order, starts[1:])
        Xb = self.X.to_delayed(optimize_graph=False).ravel()
        out = np.empty((rows.size, self.n_features))
        tasks = [dask.delayed(_take)(Xb[c], rows[p] - self._origin[c]) for c, p in zip(used, pieces)]
        done = 0
        for got in computed_in_order(dask, tasks, self._io_lock, cancel):
            for p, block in zip(pieces[done:done + len(got)], got):
                out[p] = block
            done += len(got)
        return out if done == len(tasks) else None

    def _local(self, i: int):
        """Positions, within chunk i of the Dask arrays, of this subset's rows (None: all rows)."""
        if self._sel is None:
            return None
        return self._sel[self._bounds[i]:self._bounds[i + 1]] - self._origin[i]

    def subset(self, rows) -> "DaskDataset":
        """A Dask-backed Dataset of the given rows (sorted, duplicates dropped) over the same chunks: passes read
        only the chunks holding some of its rows and compute on those rows; samplers draw among them (e.g. one
        group's rows, for MERO's per-group problems). Labels and groups of the rows are kept in memory."""
        rows = np.unique(check_rows(rows, self.n_samples, "the row indices of a subset"))
        if rows.size == 0:
            raise DataError(f"a subset needs at least one row index, all in [0, {self.n_samples})")
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._sel = rows if self._sel is None else self._sel[rows]
        out._bounds = np.searchsorted(out._sel, self._origin).astype(np.intp)
        out.y = None if self.y is None else self.y[rows]
        if out.y is not None:
            out.y.setflags(write=False)
        out._groups = None if self._groups is None else self._groups.take(rows)
        return out

    def take(self, rows) -> Dataset:
        """An in-memory Dataset of the given rows (integer indices or a boolean mask; group names kept)."""
        rows = check_rows(rows, self.n_samples)
        out = object.__new__(Dataset)
        out.X = self.rows(rows)
        out.y = None if self.y is None else self.y[rows]
        out._groups = None if self._groups is None else self._groups.take(rows)
        out.feature_names, out.name = self.feature_names, self.name
        out.target_name, out.sensitive_name = self.target_name, self.sensitive_name
        return out

    def sampler(self, kind: str = "uniform", batch_size: int = 1, seed=None, groups=None,
                buffer_bytes: int = DEFAULT_BUFFER_BYTES, prefetch: bool = True, weights=None) -> ChunkSampler:
        """A :class:`~fairmodel.data.dask_sampler.ChunkSampler`; ``prefetch`` gathers the next buffer of drawn
        rows in a background thread while the current one is used (the rows drawn are the same either way);
        ``weights``: rows drawn within their group in proportion to them (``"per_group"``)."""
        return ChunkSampler(self, kind, batch_size, seed, groups, buffer_bytes, prefetch, weights)


CHUNKED_SOURCES["dask"] = DaskDataset
