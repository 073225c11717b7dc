"""Seeded, unbiased minibatches from chunked (Dask-backed) data: :class:`ChunkSampler`, with prefetching.

The sampler reads the data only through the data source's ``rows`` (a gather of the drawn rows from the chunks
they fall in), ``n_samples``, ``n_features``, the row bounds of the chunks and the group codes.

Prefetching: the draws (row indices) are made in the caller's thread, in one fixed order; only the gather of
the next buffer's features runs in a background thread while the solver consumes the current buffer. So the
rows drawn, and their order, are the same with and without prefetching (the random numbers are consumed in the
same sequence), and the solver waits only when a gather takes longer than the steps served by one buffer.
"""
from __future__ import annotations

import numbers
import threading
import time
from fractions import Fraction

import numpy as np

from ..errors import DataError
from ..utilities.validate import as_generator, check_int
from .dataset import Batch, Groups, cumulative_weights_within_groups

DEFAULT_BUFFER_BYTES = 64 << 20   # features of pre-drawn rows per buffer (two buffers while one is prefetched)


class ChunkSampler:
    """Seeded minibatches from chunked data: rows uniform with replacement (``"uniform"``) or ``batch_size``
    rows from every group, uniform within the group (``"per_group"``, eq. (20) of Yu et al. 2024).

    ``weights`` (``"per_group"`` only): a nonnegative weight per row; a group's rows are then drawn with probabilities
    proportional to them, by the inverse of the running sums of the weights in the group's row order (one table of n
    floats in memory, as the row order is) instead of the two stages below: the same i.i.d. law.

    Two-stage draw, exactly the law of i.i.d. uniform draws: for B draws from group g (all rows for
    "uniform"), the counts per chunk are multinomial(B, n_gc / n_g), then each draw in chunk c is a row of g
    in c uniformly (probability 1/n_gc), and the B draws are randomly permuted. A row j of g in chunk c is
    drawn with probability (n_gc / n_g)(1 / n_gc) = 1 / n_g, the draws are independent (multinomial counts
    with exchangeable order are what B i.i.d. chunk choices give), so estimators are unbiased exactly as
    with in-memory sampling. B is large (a buffer of ``buffer_bytes`` of features), gathered in one Dask
    computation that reads only the chunks holding drawn rows; draws are then served from the buffer.

    Buffers: buffer k holds B = ``buffer_rows`` draws per group; a request larger than B extends it by as many
    further i.i.d. draws. The sampler has its own random stream (one integer drawn from ``seed``'s generator at
    construction), so whatever else uses that generator, and whenever the next buffer is drawn, the rows served
    are the same. With ``prefetch=True`` the next buffer's rows are drawn as soon as the current one is served
    from, and gathered in a background thread; :meth:`close` (or the ``with`` block, or garbage collection)
    cancels a gather in flight and joins the thread. ``wait_time`` is the time the caller spent waiting for
    features (the whole gathers without prefetching).
    """

    def __init__(self, data, kind: str, batch_size: int, seed=None, groups=None,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES, prefetch: bool = True, weights=None):
        if kind not in ("uniform", "per_group"):
            raise DataError(f"Dask-backed data support the 'uniform' and 'per_group' samplers; got {kind!r}")
        if not isinstance(batch_size, (numbers.Integral, np.integer)) or batch_size < 1:
            raise DataError(f"batch_size must be a positive integer; got {batch_size!r}")
        check_int(buffer_bytes, "buffer_bytes (the bytes of pre-drawn features per buffer)", error=DataError)
        self.data, self.kind, self.batch_size, self.prefetch = data, kind, int(batch_size), bool(prefetch)
        self.rng = np.random.default_rng(as_generator(seed).integers(0, 2 ** 63))
        if kind == "uniform":
            self.groups = None
            codes, names = None, ("all",)
        else:
            self.groups = data.groups if groups is None else Groups(groups)
            if len(self.groups) != data.n_samples:
                raise DataError(f"the sampler's groups have {len(self.groups)} entries for {data.n_samples} rows")
            self.groups.require_nonempty(f"the {kind!r} sampler")
            codes, names = self.groups.codes, self.groups.names
        m, n = len(names), data.n_samples
        # rows of each group, ascending, group by group (4 bytes a row below 2^31 rows, filled group by group
        # so that the transient memory is one group's indices)
        self._order = np.arange(n, dtype=np.int32 if n < 2 ** 31 else np.intp) if codes is None else \
            np.empty(n, dtype=np.int32 if n < 2 ** 31 else np.intp)
        sizes = np.array([n]) if codes is None else np.bincount(codes, minlength=m)
        self._starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        if codes is not None:
            for g in range(m):
                self._order[self._starts[g]:self._starts[g] + sizes[g]] = np.flatnonzero(codes == g)
        # rows of group g in chunk c: self._order[starts[g] + offsets[g, c] : ... + counts[g, c]]
        self._offsets = np.stack([np.searchsorted(self._order[s:s + k], data._bounds) for s, k in
                                  zip(self._starts, sizes)])
        self.chunk_counts = np.diff(self._offsets, axis=1)     # n_gc
        self.sizes = sizes
        self._cumulative = None if weights is None else cumulative_weights_within_groups(
            weights, self.kind, self.groups, self._order, data.n_samples)
        self.buffer_rows = max(1, min(int(buffer_bytes // (8 * data.n_features * m)), n))
        self._rows = np.empty((m, 0), dtype=np.intp)
        self._X = np.empty((m, 0, data.n_features))
        self._pos = 0
        self._pending = None            # (rows, thread, result box, cancel event) of the buffer being gathered
        self.wait_time, self.gathers = 0.0, 0
        if self.prefetch:
            self._start_next()

    def chunk_probabilities(self, g: int) -> list[Fraction]:
        """P(chunk c) = n_gc / n_g of the first stage for group g (exact fractions)."""
        return [Fraction(int(c), int(self.sizes[g])) for c in self.chunk_counts[g]]

    def row_probabilities(self, g: int) -> dict[int, Fraction]:
        """The exact probability of each row of group g in one draw: sum over chunks of P(c) P(row | c)."""
        out: dict[int, Fraction] = {}
        for c, pc in enumerate(self.chunk_probabilities(g)):
            n_gc = int(self.chunk_counts[g, c])
            for r in self._group_rows(g, c):
                out[int(r)] = out.get(int(r), Fraction(0)) + pc * Fraction(1, n_gc)
        return out

    def _group_rows(self, g: int, c: int) -> np.ndarray:
        s = self._starts[g]
        return self._order[s + self._offsets[g, c]: s + self._offsets[g, c + 1]]

    def _draw_group(self, g: int, B: int) -> np.ndarray:
        if self._cumulative is not None:        # weighted: the inverse of the group's running sums of the weights
            start, k = self._starts[g], int(self.sizes[g])
            cum = self._cumulative[start:start + k]
            below = self._cumulative[start - 1] if start > 0 else 0.0
            at = np.searchsorted(cum, below + self.rng.random(B) * (cum[-1] - below), side="right")
            return self._order[start + np.minimum(at, k - 1)].astype(np.intp)
        counts = self.rng.multinomial(B, self.chunk_counts[g] / self.sizes[g])
        picks = [self._order[self._starts[g] + self._offsets[g, c] + self.rng.integers(0, self.chunk_counts[g, c], k)]
                 for c, k in enumerate(counts) if k]
        return self.rng.permutation(np.concatenate(picks)).astype(np.intp)

    def _draw(self, B: int) -> np.ndarray:
        """(m, B) fresh i.i.d. draws, group by group."""
        return np.stack([self._draw_group(g, B) for g in range(len(self.sizes))])

    # -- gathers, in this thread or in the background ------------------------------------------------------
    def _gather(self, rows: np.ndarray, cancel=None):
        X = self.data.rows(rows.ravel(), cancel=cancel)
        return None if X is None else X.reshape(rows.shape + (-1,))

    def _fetch(self, rows, box, cancel):
        try:
            box["X"] = self._gather(rows, cancel)
        except BaseException as exc:    # handed to the caller's thread by _take_pending
            box["error"] = exc

    def _start_next(self) -> None:
        rows = self._draw(self.buffer_rows)
        box, cancel = {}, threading.Event()
        thread = threading.Thread(target=self._fetch, args=(rows, box, cancel), name="fairmodel-prefetch",
                                  daemon=True)
        thread.start()
        self._pending = (rows, thread, box, cancel)

    def _take_pending(self):
        rows, thread, box, _ = self._pending
        start = time.perf_counter()
        thread.join()
        self.wait_time += time.perf_counter() - start
        self._pending = None
        if "error" in box:
            raise box["error"]
        return rows, box["X"]

    def close(self) -> None:
        """Cancel the gather in flight (it stops after the chunks it is reading) and join its thread."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[3].set()
            pending[1].join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        pending = getattr(self, "_pending", None)
        if pending is not None:
            pending[3].set()            # the thread ends after its current chunks; no join from the collector

    def _refill(self, need: int) -> None:
        """Replace the buffer by the next one (B fresh i.i.d. draws per group, plus need - B more if the request
        is larger). Unused draws of the old buffer are dropped: a choice made by position only, never by value,
        so the draws served stay i.i.d. uniform."""
        m = self._rows.shape[0]
        self._rows, self._X = self._rows[:, :0], self._X[:, :0]      # free the old buffer first
        if self._pending is not None:
            rows, X = self._take_pending()
        else:
            rows = self._draw(self.buffer_rows)
            start = time.perf_counter()
            X = self._gather(rows)
            self.wait_time += time.perf_counter() - start
        self.gathers += 1
        if need > rows.shape[1]:       # the extension: further i.i.d. draws, drawn (and gathered) now
            extra = self._draw(need - rows.shape[1])
            start = time.perf_counter()
            rows, X = np.concatenate([rows, extra], axis=1), np.concatenate([X, self._gather(extra)], axis=1)
            self.wait_time += time.perf_counter() - start
        self._rows, self._X, self._pos = rows, X.reshape(m, rows.shape[1], -1), 0
        if self.prefetch:
            self._start_next()

    def draw_rows(self, batch_size: int | None = None) -> np.ndarray:
        return self._next(batch_size)[0]

    def _next(self, batch_size):
        size = self.batch_size if batch_size is None else int(batch_size)
        if self._pos + size > self._rows.shape[1]:
            self._refill(size)
        sl = slice(self._pos, self._pos + size)
        self._pos += size
        return self._rows[:, sl].ravel(), self._X[:, sl].reshape(-1, self._X.shape[2])

    def draw(self, batch_size: int | None = None) -> Batch:
        """A Batch of ``batch_size`` rows (per group, group by group, for "per_group")."""
        rows, X = self._next(batch_size)
        d = self.data
        groups = (self.groups.codes[rows] if self.groups is not None
                  else None if d._groups is None else d._groups.codes[rows])
        return Batch(X, None if d.y is None else d.y[rows], groups, rows)
