"""Datasets: validation, group encoding, seeded subsampling and splits, minibatch samplers.

A :class:`Dataset` holds a numeric feature matrix ``X`` (n x d: a NumPy array, or a SciPy sparse matrix kept as
CSR, e.g. one-hot categories and their interactions with d in the thousands to millions), optional labels ``y``
(n,) and optional group labels (n,) of any hashable type, encoded to integer codes with the names kept. A sparse
design is read only through ``matvec``, ``rmatvec``, ``rows`` (CSR rows) and passes (CSR row blocks), so the
methods that run by them take it as they take a dense one; the per-row programs that need a dense matrix refuse it.

Minibatch sampling interface
----------------------------
Stochastic solvers never index a ``Dataset`` directly; they ask a *data source* for

* ``n_features``, ``n_groups``, ``group_sizes`` (counts per group code, ``int`` array),
* full passes: ``chunks(size)`` yielding :class:`Batch` objects that cover every row exactly once,
* minibatches: ``sampler(kind, batch_size=..., seed=...)`` returning an object whose ``draw()`` gives a
  :class:`Batch`, with ``kind`` one of ``"uniform"`` (rows uniformly with replacement),
  ``"per_group"`` (``batch_size`` rows from every group, uniformly within the group, independently
  across groups: the sampling of eq. (20) of the group-DRO paper) and ``"stratified"`` (rows
  allocated to groups in proportion to their sizes).

An out-of-core or distributed source (a memory-mapped file, a database cursor, shards on several
machines) implements these four members and can be handed to the same solvers unchanged. Full passes go
through ``map_chunks(fn, size, *per_row)`` (``fn`` applied to every chunk, results in row order: a local loop
here, Dask tasks for :class:`fairmodel.data.dask_dataset.DaskDataset`), and the declarations read the features only
through ``matvec``, ``rmatvec`` and ``rows``, so ``X`` need not be in memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
from scipy import sparse as scipy_sparse

from ..errors import DataError, ExpressionTypeError
from ..utilities.validate import (
    as_generator,
    check_bool,
    check_complete,
    check_int,
    check_matrix,
    check_sparse_matrix,
    check_rows,
    check_scaling,
    check_unique_names,
    check_vector,
    is_real,
    is_sparse,
)
from .groups import Groups
from .passes import add_parts, row_slice

SAMPLER_KINDS = ("uniform", "per_group", "stratified")
CHUNK_ROWS = 65_536     # rows per chunk of a pass over in-memory data
CHUNKED_SOURCES: dict = {}  # "dask" -> the Dask-backed Dataset class (registered by fairmodel.data.dask_dataset)


def checked_feature_names(feature_names, d: int) -> tuple[str, ...]:
    """The ``d`` column names as text (default ``x0, x1, ...``), refused when their count is wrong or one repeats."""
    if feature_names is None:
        feature_names = [f"x{j}" for j in range(d)]
    if isinstance(feature_names, (str, bytes)) or not hasattr(feature_names, "__len__"):
        raise DataError(f"feature_names must be a list of {d} column names; got {feature_names!r}")
    if len(feature_names) != d:
        raise DataError(f"feature_names has {len(feature_names)} names for {d} columns")
    names = tuple(str(f) for f in feature_names)
    check_unique_names(names, "duplicated feature name(s)", "give every column its own name")
    return names


@dataclass(frozen=True)
class Batch:
    """Rows of a data source: features, labels (or None) and group codes (or None), with their row ids."""

    X: np.ndarray
    y: np.ndarray | None
    groups: np.ndarray | None
    rows: np.ndarray | None = None


class Dataset:
    """A validated data set: features ``X``, optional labels ``y`` and optional ``groups``.

    Parameters
    ----------
    X : array-like (n, d), numeric and finite; or a SciPy sparse matrix (stored as CSR float64, its stored values
        finite).
    y : array-like (n,), numeric and finite, optional.
    groups : array-like (n,) of hashable labels (strings, ints, tuples, ...), optional.
    feature_names : names of the d columns (default ``x0..x{d-1}``).
    name : a label used in reports.
    """

    def __init__(self, X, y=None, groups=None, *, feature_names: Sequence[str] | None = None,
                 name: str = "data", target_name: str | None = None, sensitive_name: str | None = None):
        self.X = check_sparse_matrix(X) if is_sparse(X) else check_matrix(X)
        n, d = self.X.shape
        if n == 0 or d == 0:
            raise DataError(f"X must have at least one row and one column; got shape {self.X.shape}")
        self.y = None if y is None else check_vector(y, n, "y")
        if groups is None:
            self._groups = None
        else:
            g = Groups(groups)
            if len(g) != n:
                raise DataError(f"groups has {len(g)} entries but X has {n} rows; they must match")
            self._groups = g
        self.feature_names = checked_feature_names(feature_names, d)
        check_scaling(self.X, self.feature_names)
        self.name = name
        self.target_name = target_name
        self.sensitive_name = sensitive_name
        for part in (self.X.data, self.X.indices, self.X.indptr) if self.is_sparse else (self.X,):
            part.setflags(write=False)
        if self.y is not None:
            self.y.setflags(write=False)

    # -- chunked sources (Dask) ------------------------------------------------------------------------
    is_chunked = False  # True for data whose features are read chunk by chunk (never all in memory)

    @classmethod
    def from_dask(cls, X, y=None, groups=None, **kwargs) -> "Dataset":
        """A Dataset over Dask arrays (rows in chunks, never all in memory): see :mod:`fairmodel.data.dask_dataset`."""
        return _chunked_source().from_arrays(X, y, groups, **kwargs)

    @classmethod
    def from_parquet(cls, path, target: str | None = None, sensitive: str | None = None,
                     features: Sequence[str] | None = None, **kwargs) -> "Dataset":
        """A Dask-backed Dataset read from Parquet file(s) through dask.dataframe (numeric features)."""
        return _chunked_source().from_parquet(path, target, sensitive, features, **kwargs)

    @property
    def is_sparse(self) -> bool:
        """Whether the features are a sparse (CSR) matrix."""
        return is_sparse(self.X)

    def in_memory_X(self, what: str) -> np.ndarray:
        """The feature matrix in memory, for ``what`` (an exact program); chunked data refuse (see DaskDataset)."""
        return self.X

    def dense_X(self, what: str) -> np.ndarray:
        """The feature matrix as a dense array, for ``what`` (a method that needs one); a sparse design is refused
        with its size (a dense copy of a high-dimensional design would not fit)."""
        if self.is_sparse:
            n, d = self.X.shape
            raise DataError(f"{what} needs the features as a dense array, but this Dataset holds a sparse {n:,} x "
                            f"{d:,} design ({n * d * 8 / 2 ** 30:.2g} GiB dense). Use a method that reads the rows by "
                            f"passes (the generic stochastic lowering, group DRO's ALEG), or "
                            f"fm.Dataset(X.toarray(), y, groups) when it fits")
        return self.X

    def map_chunks(self, fn, size: int | None = None, *per_row, labels: bool = True) -> list:
        """[fn(batch, *slices of per_row) for every chunk of ``size`` rows (default 65,536)] in row order (a full
        pass); ``labels=False``: the batches carry the features only (y and groups None)."""
        return [fn(b, *(row_slice(a, b.rows[0], b.rows[-1] + 1) for a in per_row))
                for b in self._batches(size, labels)]

    def reduce_chunks(self, fn, *per_row, size: int = None, sparse: bool = False, labels: bool = True):
        """The sum of ``fn(batch, *slices of per_row)`` over the chunks, in chunk order, added as they come (one
        part in memory at a time); ``sparse``: the batches' features are row blocks of a CSR copy of X (made once
        and kept); see :func:`fairmodel.data.passes.row_sums`."""
        total = None
        for b in self._batches(size, labels):
            if sparse:
                b = Batch(self.sparse_X()[b.rows[0]:b.rows[-1] + 1], b.y, b.groups, b.rows)
            total = add_parts(total, fn(b, *(row_slice(a, b.rows[0], b.rows[-1] + 1) for a in per_row)))
        return total

    def _batches(self, size, labels: bool):
        for b in self.chunks(size or CHUNK_ROWS):
            yield b if labels else Batch(b.X, None, None, b.rows)

    def sparse_X(self):
        """The features as a SciPy CSR matrix (made on first use and kept: 12 bytes a nonzero)."""
        if self.is_sparse:
            return self.X
        found = self.__dict__.get("_csr")
        if found is None:
            found = self._csr = scipy_sparse.csr_matrix(self.X)
        return found

    def matvec(self, w) -> np.ndarray:
        """X @ w (one pass)."""
        return self.X @ w

    def rmatvec(self, v) -> np.ndarray:
        """X.T @ v (one pass)."""
        return self.X.T @ v

    def rows(self, rows) -> np.ndarray:
        """The feature rows ``X[rows]`` (a NumPy array; CSR rows of a sparse design)."""
        return self.X[rows]

    # -- basic facts ------------------------------------------------------------------------------
    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def groups(self) -> Groups:
        if self._groups is None:
            raise DataError(f"dataset {self.name!r} has no groups; pass groups=... (the sensitive attribute)")
        return self._groups

    @property
    def has_groups(self) -> bool:
        return self._groups is not None

    @property
    def n_groups(self) -> int:
        return self.groups.n_groups

    @property
    def group_sizes(self) -> np.ndarray:
        return self.groups.sizes

    def __len__(self) -> int:
        return self.n_samples

    def __repr__(self) -> str:
        g = "" if self._groups is None else f", groups={dict(zip(self._groups.names, self._groups.sizes.tolist()))}"
        kind = f", sparse: {self.X.nnz / self.n_samples:.1f} nonzeros per row" if self.is_sparse else ""
        return f"Dataset({self.name!r}, n={self.n_samples}, d={self.n_features}{kind}{g})"

    # -- DSL entry point ------------------------------------------------------------------------------
    def score(self, w):
        """The per-sample score of a model on this data (an expression): ``X @ w (+ b)`` for a
        :class:`fairmodel.Weights`, the network's output for a :class:`fairmodel.SigmoidMLP`.

        The model builds its own score (``w.score_on(data)``), so the data layer needs no declaration."""
        if not hasattr(w, "score_on"):
            raise ExpressionTypeError(f"data.score needs model parameters such as fairmodel.Weights or "
                                      f"fairmodel.SigmoidMLP; got {type(w).__name__}")
        return w.score_on(self)

    # -- construction from a data frame ---------------------------------------------------------------
    @classmethod
    def from_frame(cls, df, target: str | None = None, sensitive: str | None = None,
                   features: Sequence[str] | None = None, *, drop_sensitive: bool = True,
                   name: str = "data") -> "Dataset":
        """Build a dataset from a pandas DataFrame.

        Numeric and boolean columns are kept as they are; other columns are one-hot encoded (one column
        per category, named ``column=value``; a column with too many distinct values, such as an ID, is an
        error). ``features`` defaults to every column except the target (and the sensitive column when
        ``drop_sensitive``); listing the target, or the sensitive column while ``drop_sensitive``, is an error.
        Rows with missing values raise an error that names the column: drop or impute them first.
        """
        if not (hasattr(df, "columns") and hasattr(df, "dtypes") and hasattr(df, "iloc")):
            raise DataError(f"from_frame expects a pandas DataFrame; got a {type(df).__name__}. Build one first "
                            f"(pd.DataFrame(columns)), or pass arrays: fm.Dataset(X, y, groups)")
        drop_sensitive = check_bool(drop_sensitive, "drop_sensitive", error=DataError)
        columns = list(df.columns)
        check_unique_names(columns, "duplicated column name(s) in the frame", "rename or drop the duplicates")
        for label, col in (("target", target), ("sensitive", sensitive)):
            if col is not None and col not in columns:
                raise DataError(f"{label} column {col!r} is not in the frame; columns are {columns}")
        if features is None:
            skip = {target} | ({sensitive} if drop_sensitive else set())
            features = [c for c in columns if c not in skip]
        features = column_list(features, "features")
        unknown = [c for c in features if c not in columns]
        if unknown:
            raise DataError(f"feature column(s) {unknown} are not in the frame; columns are {columns}")
        if target is not None and target in features:
            raise DataError(f"target column {target!r} is listed among the features; remove it from features")
        if sensitive is not None and sensitive in features and drop_sensitive:
            raise DataError(f"sensitive column {sensitive!r} is listed among the features; pass "
                            f"drop_sensitive=False to use it as a feature, or remove it from features")
        for c in dict.fromkeys(list(features) + [c for c in (target, sensitive) if c is not None]):
            check_complete(df[c].to_numpy(), f"column {c!r}")
        table = {c: df[c].to_numpy() for c in features}
        X, names = encode_columns(table, list(features))
        y = None
        if target is not None:
            y = df[target].to_numpy()
            if y.dtype == object or y.dtype.kind in "USb":
                if y.dtype.kind == "b":
                    y = y.astype(float)
                else:
                    raise DataError(f"target column {target!r} is not numeric; map it to numbers first")
        groups = None if sensitive is None else df[sensitive].to_numpy()
        return cls(X, y, groups, feature_names=names, name=name, target_name=target, sensitive_name=sensitive)

    # -- row selection -------------------------------------------------------------------------------
    def take(self, rows) -> "Dataset":
        """A new dataset holding the given rows (integer indices or a boolean mask; group names are kept)."""
        rows = check_rows(rows, self.n_samples)
        out = object.__new__(Dataset)
        out.X = self.X[rows]
        out.y = None if self.y is None else self.y[rows]
        out._groups = None if self._groups is None else self._groups.take(rows)
        out.feature_names, out.name = self.feature_names, self.name
        out.target_name, out.sensitive_name = self.target_name, self.sensitive_name
        return out

    def _strata(self) -> list[np.ndarray]:
        if self._groups is None:
            return [np.arange(self.n_samples)]
        return [ix for ix in self._groups.indices() if ix.size]

    def subsample(self, n: int, seed=None) -> "Dataset":
        """A seeded, group-stratified subsample of ``n`` rows without replacement.

        Each group gets ``n * n_g / N`` rows (largest remainders rounding) and at least one row.
        """
        check_int(n, "n (the subsample size)", error=DataError)
        if n >= self.n_samples:
            return self
        rng = as_generator(seed)
        strata = self._strata()
        if n < len(strata):
            raise DataError(f"subsample of {n} rows cannot keep all {len(strata)} groups; ask for at least "
                            f"{len(strata)} rows")
        counts = _allocate(n, np.array([s.size for s in strata]))
        rows = np.concatenate([rng.choice(s, size=c, replace=False) for s, c in zip(strata, counts)])
        return self.take(np.sort(rows))

    def split(self, fractions: Sequence[float], seed=None) -> tuple["Dataset", ...]:
        """Seeded, group-stratified split into parts with the given fractions (they must sum to 1)."""
        if isinstance(fractions, (str, bytes)) or not hasattr(fractions, "__len__") or \
                not all(is_real(f) for f in fractions):
            raise DataError(f"fractions must be a list of at least two positive numbers summing to 1, e.g. [0.7, "
                            f"0.3]; got {fractions!r}")
        fr = np.asarray(fractions, dtype=float)
        if fr.ndim != 1 or fr.size < 2 or np.any(fr <= 0) or not np.isclose(fr.sum(), 1.0):
            raise DataError(f"fractions must be at least two positive numbers summing to 1; got {list(fractions)}")
        rng = as_generator(seed)
        parts: list[list[np.ndarray]] = [[] for _ in fr]
        for stratum in self._strata():
            perm = rng.permutation(stratum)
            counts = _allocate(stratum.size, fr * stratum.size / fr.sum(), exact=True)
            for part, chunk in zip(parts, np.split(perm, np.cumsum(counts)[:-1])):
                part.append(chunk)
        out = []
        for i, part in enumerate(parts):
            rows = np.sort(np.concatenate(part))
            if rows.size == 0:
                raise DataError(f"split part {i} (fraction {fr[i]}) is empty; use larger fractions")
            out.append(self.take(rows))
        return tuple(out)

    # -- data-source interface for stochastic solvers --------------------------------------------------
    def chunks(self, size: int = 65536) -> Iterator[Batch]:
        """Consecutive batches covering every row once (a full pass)."""
        g = None if self._groups is None else self._groups.codes
        for start in range(0, self.n_samples, size):
            sl = slice(start, start + size)
            yield Batch(self.X[sl], None if self.y is None else self.y[sl],
                        None if g is None else g[sl], np.arange(start, min(start + size, self.n_samples)))

    def sampler(self, kind: str = "uniform", batch_size: int = 1, seed=None, groups=None, weights=None) -> "Sampler":
        """A minibatch sampler of the given ``kind`` (see the module docstring); ``groups`` overrides the
        data set's own groups for the ``per_group`` and ``stratified`` kinds; ``weights`` (``per_group`` only): a
        nonnegative weight per row, rows drawn within their group with probability proportional to it."""
        return Sampler(self, kind, batch_size, seed, groups, weights)


def _chunked_source():
    if "dask" not in CHUNKED_SOURCES:
        raise DataError("Dask-backed data need the Dask extra, fairmodel[dask]: pip install 'dask[distributed,dataframe]' "
                        "pyarrow, then import fairmodel")
    return CHUNKED_SOURCES["dask"]


def cumulative_weights_within_groups(weights, kind: str, groups, order: np.ndarray, n_samples: int) -> np.ndarray:
    """The running sum of the rows' sampling ``weights`` in group-by-group row ``order``: the inverse-CDF table
    of weighted per-group draws (a draw of group g is the first row whose running sum passes a uniform number
    between the group's sums before and at its end)."""
    if kind != "per_group":
        raise DataError(f"sampling weights are for the 'per_group' sampler; got kind {kind!r}")
    w = np.asarray(weights, dtype=float)
    if w.shape != (n_samples,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise DataError(f"sampling weights must be {n_samples} nonnegative finite numbers (one per row)")
    totals = np.bincount(groups.codes, weights=w, minlength=len(groups.names))
    if np.any(totals <= 0):
        empty = [str(n) for n, t in zip(groups.names, totals) if t <= 0]
        raise DataError(f"the sampling weights of group(s) {', '.join(empty)} are all zero: no row can be drawn")
    return np.cumsum(w[order])


class Sampler:
    """Draws :class:`Batch` objects from a :class:`Dataset` (with replacement, seeded).

    ``kind="uniform"``: ``batch_size`` rows uniformly over all rows.
    ``kind="per_group"``: ``batch_size`` rows from each group (rows come group by group), uniformly within the
    group, or with probability proportional to ``weights`` when given (then the mean of a function over a group's
    draws estimates its ``weights``-weighted mean over the group).
    ``kind="stratified"``: ``batch_size`` rows split across groups in proportion to group sizes.
    """

    def __init__(self, data: Dataset, kind: str, batch_size: int, seed=None, groups=None, weights=None):
        if kind not in SAMPLER_KINDS:
            raise DataError(f"unknown sampler kind {kind!r}; valid kinds are {', '.join(SAMPLER_KINDS)}")
        check_int(batch_size, "batch_size", error=DataError)
        self.data, self.kind, self.batch_size = data, kind, int(batch_size)
        self.rng = as_generator(seed)
        self.groups, self._order = None, None
        if kind != "uniform":
            self.groups = data.groups if groups is None else Groups(groups)
            if len(self.groups) != data.n_samples:
                raise DataError(f"the sampler's groups have {len(self.groups)} entries for {data.n_samples} rows")
            self.groups.require_nonempty(f"the {kind!r} sampler")
            self._sizes = self.groups.sizes
            self._order = np.argsort(self.groups.codes, kind="stable")
            self._starts = np.concatenate([[0], np.cumsum(self._sizes)[:-1]])
            if kind == "stratified":
                self._counts = _allocate(self.batch_size, self._sizes, at_least_one=False)
        self._cumulative = None if weights is None else cumulative_weights_within_groups(
            weights, self.kind, self.groups, self._order, data.n_samples)

    def draw_rows(self, batch_size: int | None = None) -> np.ndarray:
        rng, size = self.rng, self.batch_size if batch_size is None else int(batch_size)
        if self.kind == "uniform":
            return rng.integers(0, self.data.n_samples, size=size)
        if self.kind == "per_group" and self._cumulative is not None:   # inverse CDF of the weights, per group
            cum, first, last = self._cumulative, self._starts, self._starts + self._sizes - 1
            below = np.where(first > 0, cum[np.maximum(first - 1, 0)], 0.0)
            targets = below[:, None] + rng.random((self._sizes.size, size)) * (cum[last] - below)[:, None]
            at = np.searchsorted(cum, targets, side="right")
            return self._order[np.clip(at, first[:, None], last[:, None]).ravel()]
        if self.kind == "per_group":  # one vectorized draw for all groups
            local = (rng.random((self._sizes.size, size)) * self._sizes[:, None]).astype(np.intp)
            return self._order[(self._starts[:, None] + local).ravel()]
        picks = [self._order[s + rng.integers(0, n, size=c)]
                 for s, n, c in zip(self._starts, self._sizes, self._counts) if c]
        return np.concatenate(picks)

    def draw(self, batch_size: int | None = None) -> Batch:
        """A Batch of ``batch_size`` rows (per group for "per_group"; default: the sampler's batch size)."""
        rows = self.draw_rows(batch_size)
        d = self.data
        groups = (self.groups.codes[rows] if self.groups is not None
                  else None if d._groups is None else d._groups.codes[rows])
        return Batch(d.X[rows], None if d.y is None else d.y[rows], groups, rows)


def _allocate(total: int, weights: np.ndarray, exact: bool = False, at_least_one: bool = True) -> np.ndarray:
    """Integer counts summing to ``total`` proportional to ``weights`` (largest remainders)."""
    w = np.asarray(weights, dtype=float)
    share = w / w.sum() * total if not exact else w
    counts = np.floor(share).astype(int)
    if at_least_one and not exact:
        counts = np.maximum(counts, 1)
    rest = total - counts.sum()
    if rest > 0:
        order = np.argsort(-(share - np.floor(share)), kind="stable")
        counts[order[:rest]] += 1
    elif rest < 0:
        order = np.argsort(-counts, kind="stable")
        for i in order:
            if rest == 0:
                break
            take = min(counts[i] - 1, -rest)
            counts[i] -= take
            rest += take
    return counts


MAX_CATEGORIES = 1000


def column_list(names, what: str) -> list:
    """Column names as a list: one name (a string) or a sequence of names."""
    if isinstance(names, str):
        return [names]
    if not hasattr(names, "__iter__"):
        raise DataError(f"{what} must be a column name or a list of column names; got {names!r}")
    return list(names)


def encode_columns(table: dict, columns: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Numeric columns as they are, other columns one-hot (``name=value``); returns (X, names).

    A column with more than ``MAX_CATEGORIES`` distinct values, or (over 100 rows) more distinct values than
    half the rows, is refused: it is an ID or free text, and its one-hot matrix would be huge."""
    if not columns:
        raise DataError("no feature column: the features would be an empty matrix; give features=[...] (columns "
                        "other than the target and the sensitive attribute)")
    blocks, names = [], []
    for col in columns:
        values = np.asarray(table[col])
        if values.dtype.kind in "biufc":
            blocks.append(check_vector(values, None, f"column {col!r}")[:, None])
            names.append(col)
            continue
        if values.dtype.kind in "mM" or (values.dtype == object and values.size > 0 and
                                         (hasattr(values[0], "total_seconds") or hasattr(values[0], "year"))):
            raise DataError(f"column {col!r} holds dates or times; features must be numbers or categories: convert "
                            f"it first (e.g. df[{col!r}].dt.year, or the days since a reference date)")
        if values.dtype == object and any(isinstance(v, (list, tuple, dict, set, np.ndarray)) for v in values):
            raise DataError(f"column {col!r} holds lists or arrays in its cells; each cell must be one number or one "
                            f"category (expand the lists into columns first)")
        cats, codes = np.unique(values.astype(str), return_inverse=True)
        n = values.shape[0]
        if cats.size > MAX_CATEGORIES or (n > 100 and cats.size > n / 2):
            raise DataError(f"column {col!r} has {cats.size} distinct values in {n} rows (an ID or free text?); "
                            f"one-hot encoding would add {cats.size} columns: drop it or bin it into fewer categories")
        block = np.zeros((n, cats.size))
        block[np.arange(n), codes.ravel()] = 1.0
        blocks.append(block)
        names.extend(f"{col}={c}" for c in cats.tolist())
    return np.hstack(blocks), names


def standardize_columns(X: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A copy of ``X`` whose columns selected by ``mask`` have zero mean and unit variance (constant ones: zero)."""
    X = X.copy()
    cols = X[:, mask]
    std = cols.std(axis=0)
    std[np.ptp(cols, axis=0) == 0] = 1.0  # a constant column can have a rounding-error std
    X[:, mask] = (cols - cols.mean(axis=0)) / std
    return X
