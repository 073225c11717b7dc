"""Passes: sums over the rows of a data source, chunk by chunk, whatever holds the rows.

Every model-space method (the interior-point core, the group-DRO dual, the AUC moment form) and every certificate of
the judge asks the data for sums over rows: values, gradients, d x d Hessians X' D X, constraint values, group sums.
A *pass* computes such a sum: a per-chunk function (a picklable callable, so that it can run in a worker process)
is applied to every chunk of rows with the per-row arrays it needs cut at the same rows, and the chunks' parts are
added in chunk order. The sum is therefore the same arithmetic whoever ran the chunks (a loop over NumPy row blocks,
Dask's threaded scheduler, the workers of a ``dask.distributed`` cluster), and a method never sees the storage.

A pass hands ``fn`` the chunk's features only (``batch.y`` and ``batch.groups`` are None): the labels, group codes
and other per-row arrays a function needs are passed to it explicitly, so that only those are shipped with its task.
Per-row arguments are NumPy arrays (cut with ``a[start:stop]``) or objects with a ``row_slice(start, stop)`` method
returning their part for those rows (e.g. a compiled per-sample expression with its data vectors).
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np

from ..utilities.progress import Progress


def row_slice(a, start: int, stop: int):
    """The part of the per-row argument ``a`` for the rows [start, stop)."""
    return a.row_slice(start, stop) if hasattr(a, "row_slice") else a[start:stop]


def add_parts(total, part):
    """total + part for the results of a per-chunk function: arrays, numbers, tuples / lists of them (added entry by
    entry, None entries kept), dicts (added key by key); ``total`` None starts the sum."""
    if total is None:
        return part
    if isinstance(part, dict):
        return {k: add_parts(total.get(k), v) for k, v in part.items()} | \
            {k: v for k, v in total.items() if k not in part}
    if isinstance(part, (tuple, list)):
        return type(part)(add_parts(a, b) for a, b in zip(total, part))
    if part is None:
        return total
    return total + part


def ordered_sum(parts) -> object:
    """The sum of per-chunk results in chunk order (the same arithmetic whatever ran the chunks)."""
    total = None
    for p in parts:
        total = add_parts(total, p)
    return total


class PassCounter:
    """The reads of a data source's rows (shared by a data set and its row subsets), for progress reports and
    benchmarks: ``count`` full passes, ``gathers`` gathers of drawn rows from chunked data (each reads the chunks
    holding a drawn row: for random rows, about every chunk)."""

    def __init__(self):
        self.count = 0
        self.gathers = 0
        self.bar = None          # a Progress shown while a method runs by passes (showing_passes)

    def passed(self, seconds: float) -> None:
        self.count += 1
        if self.bar is not None:
            self.bar.update(1, last_pass_s=seconds, gathers=self.gathers)


def counter(data) -> PassCounter:
    """The pass counter of ``data`` (created on first use)."""
    found = getattr(data, "_passes", None)
    if found is None:
        found = PassCounter()
        data._passes = found
    return found


def row_sums(data, fn, *per_row, sparse: bool = False, size: int | None = None):
    """sum over the chunks of ``data`` of ``fn(batch, *parts of per_row)``, in chunk order: one pass.

    ``data`` is a data source (:class:`~fairmodel.data.Dataset` or a Dask-backed one); ``fn`` returns an array, a
    number, or a tuple / dict of them. Only one group of chunks' results is held at a time. ``sparse``: in-memory
    data hand ``fn`` its rows as blocks of a CSR copy of the features (made once; chunked data ignore it); ``size``:
    rows per chunk of in-memory data (chunked data keep their own chunks)."""
    start = time.perf_counter()
    out = data.reduce_chunks(fn, *per_row, sparse=sparse, size=size, labels=False)
    counter(data).passed(time.perf_counter() - start)
    return out


def row_parts(data, fn, *per_row, size: int | None = None) -> list:
    """[fn(batch, *parts of per_row) for every chunk of ``data``], in row order: one pass whose results are per row
    (e.g. scores), to be concatenated or reduced by the caller."""
    start = time.perf_counter()
    out = data.map_chunks(fn, size, *per_row, labels=False)
    counter(data).passed(time.perf_counter() - start)
    return out


@contextmanager
def showing_passes(data, desc: str, verbose=None):
    """A progress bar of the passes over chunked ``data`` while the block runs (an exact method's oracles, the
    judge's certificate): one tick per pass with its duration; in-memory data show nothing (a pass takes
    milliseconds). ``verbose`` as everywhere: None draws on a terminal only."""
    c = counter(data)
    if not getattr(data, "is_chunked", False) or c.bar is not None:
        yield
        return
    with Progress(None, f"{desc}: passes", verbose) as bar:
        c.bar = bar
        try:
            yield
        finally:
            c.bar = None


def passes_of(data) -> int:
    """The number of full passes made so far over ``data``'s rows (:func:`row_sums`, :func:`row_parts`)."""
    return counter(data).count


def gathers_of(data) -> int:
    """The number of gathers of drawn rows made so far from ``data``'s chunks."""
    return counter(data).gathers


# On chunked data a variance-reduced epoch (one snapshot pass, then inner steps on drawn rows) takes at most this
# many inner steps: the rows they draw are gathered in one or a few reads of the chunks (a read costs about a pass),
# so an epoch costs about two passes whatever n is; in memory an epoch is one pass's worth of minibatches.
CHUNKED_EPOCH_STEPS = 2048


def epoch_steps(data, full_steps: int) -> int | None:
    """The inner steps of an epoch of a variance-reduced method on ``data``: None (the method's own default,
    ``full_steps``: one pass's worth of minibatches) in memory, at most :data:`CHUNKED_EPOCH_STEPS` on chunked data."""
    if not getattr(data, "is_chunked", False):
        return None
    return int(min(full_steps, CHUNKED_EPOCH_STEPS))


def sparse_enough(nonzeros: int, size: int, density: float) -> bool:
    """Whether a design with ``nonzeros`` of ``size`` entries is kept sparse (at most ``density`` of them)."""
    return bool(size) and nonzeros <= density * size


def count_nonzeros(batch) -> int:
    """The nonzero features of a chunk (a per-chunk function; the stored values of CSR rows)."""
    X = batch.X
    return int(X.count_nonzero() if hasattr(X, "count_nonzero") and hasattr(X, "nnz") else np.count_nonzero(X))


def column_squares(batch) -> np.ndarray:
    """sum_i x_ij^2 of every column over a chunk's rows (a per-chunk function; dense or CSR rows)."""
    X = batch.X
    if hasattr(X, "multiply") and hasattr(X, "nnz"):
        return np.bincount(X.indices, weights=X.data * X.data, minlength=X.shape[1])
    return np.einsum("ij,ij->j", X, X)


def row_squares(X) -> np.ndarray:
    """||x_i||^2 of every row of X (dense or CSR)."""
    if hasattr(X, "multiply") and hasattr(X, "nnz"):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)
