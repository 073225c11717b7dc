"""Seeded, unbiased minibatches from chunked (Dask-backed) data: :class:`ChunkSampler`.

The sampler reads the data only through the data source's ``rows`` (a gather of the drawn rows from the chunks
they fall in), ``n_samples``, ``n_features``, the row bounds of the chunks and the group codes.
"""
from __future__ import annotations

import numbers
from fractions import Fraction

import numpy as np

from ._validate import as_generator
from .data import Batch, Groups
from .errors import DataError

DEFAULT_BUFFER_BYTES = 128 << 20       # features of pre-drawn minibatch rows kept by a ChunkSampler


class ChunkSampler:
    """Seeded minibatches from chunked data: rows uniform with replacement (``"uniform"``) or ``batch_size``
    rows from every group, uniform within the group (``"per_group"``, eq. (20) of Yu et al. 2024).

    Two-stage draw, exactly the law of i.i.d. uniform draws: for B draws from group g (all rows for
    "uniform"), the counts per chunk are multinomial(B, n_gc / n_g), then each draw in chunk c is a row of g
    in c uniformly (probability 1/n_gc), and the B draws are randomly permuted. A row j of g in chunk c is
    drawn with probability (n_gc / n_g)(1 / n_gc) = 1 / n_g, the draws are independent (multinomial counts
    with exchangeable order are what B i.i.d. chunk choices give), so estimators are unbiased exactly as
    with in-memory sampling. B is large (a buffer of ``buffer_bytes`` of features), gathered in one Dask
    computation that reads only the chunks holding drawn rows; draws are then served from the buffer.
    """

    def __init__(self, data, kind: str, batch_size: int, seed=None, groups=None,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES):
        if kind not in ("uniform", "per_group"):
            raise DataError(f"Dask-backed data support the 'uniform' and 'per_group' samplers; got {kind!r}")
        if not isinstance(batch_size, (numbers.Integral, np.integer)) or batch_size < 1:
            raise DataError(f"batch_size must be a positive integer; got {batch_size!r}")
        self.data, self.kind, self.batch_size = data, kind, int(batch_size)
        self.rng = as_generator(seed)
        if kind == "uniform":
            self.groups = None
            codes, names = np.zeros(data.n_samples, dtype=np.intp), ("all",)
        else:
            self.groups = data.groups if groups is None else Groups(groups)
            if len(self.groups) != data.n_samples:
                raise DataError(f"the sampler's groups have {len(self.groups)} entries for {data.n_samples} rows")
            self.groups.require_nonempty(f"the {kind!r} sampler")
            codes, names = self.groups.codes, self.groups.names
        m = len(names)
        self._order = np.argsort(codes, kind="stable")      # rows of each group, ascending, group by group
        sizes = np.bincount(codes, minlength=m)
        self._starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        # rows of group g in chunk c: self._order[starts[g] + offsets[g, c] : ... + counts[g, c]]
        self._offsets = np.stack([np.searchsorted(self._order[s:s + n], data._bounds) for s, n in
                                  zip(self._starts, sizes)])
        self.chunk_counts = np.diff(self._offsets, axis=1)     # n_gc
        self.sizes = sizes
        self.buffer_rows = max(1, int(buffer_bytes // (8 * data.n_features * m)))
        self._rows = np.empty((m, 0), dtype=np.intp)
        self._X = np.empty((m, 0, data.n_features))
        self._pos = 0

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
        counts = self.rng.multinomial(B, self.chunk_counts[g] / self.sizes[g])
        picks = [self._order[self._starts[g] + self._offsets[g, c] + self.rng.integers(0, self.chunk_counts[g, c], k)]
                 for c, k in enumerate(counts) if k]
        return self.rng.permutation(np.concatenate(picks))

    def _refill(self, need: int) -> None:
        """Replace the buffer by B fresh i.i.d. draws per group. Unused draws of the old buffer are dropped:
        a choice made by position only, never by value, so the draws served stay i.i.d. uniform."""
        B = max(need, min(self.buffer_rows, self.data.n_samples))
        m = self._rows.shape[0]
        self._rows, self._X = self._rows[:, :0], self._X[:, :0]      # free the old buffer first
        self._rows = np.stack([self._draw_group(g, B) for g in range(m)])
        self._X = self.data.rows(self._rows.ravel()).reshape(m, B, -1)
        self._pos = 0

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
