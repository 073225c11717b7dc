"""The one set of input checks: numbers, integers, choices, option names, arrays, seeds, problems (where a function
or another object is given instead), and for data: missing values, group labels, names that read the same as text,
features too large for the solvers' sums, column scaling.

Every check returns the cleaned value (or nothing) or raises an error that names the argument, says what is
allowed and what was given; ``check_scaling`` only warns. ``error`` selects the class:
:class:`~fairmodel.errors.OptionError` for solver and method options (the default),
:class:`~fairmodel.errors.ModelError` for declarations, :class:`DataError` for data.
"""
from __future__ import annotations

import inspect
import math
import numbers
import stat
import warnings
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.sparse import diags as scipy_diags

from ..errors import DataError, ExpressionTypeError, OptionError


def is_real(value) -> bool:
    """A real number that is not a bool (NumPy scalars included)."""
    return isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, bool)


def is_int(value) -> bool:
    """An integer that is not a bool (NumPy integers included)."""
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool)


def _bounds_text(low, high, strict: bool) -> str:
    if low == 0 and high is None:
        return "positive" if strict else "non-negative"
    parts = []
    if low is not None:
        parts.append(f"{'>' if strict else '>='} {low:g}")
    if high is not None:
        parts.append(f"<= {high:g}")
    return " and ".join(parts)


def check_number(value, name: str, *, low=None, high=None, strict: bool = False, allow_none: bool = False,
                 error=OptionError) -> float | None:
    """A finite real number in [low, high] (``strict``: ``> low``); ``None`` passes when ``allow_none``."""
    if value is None and allow_none:
        return None
    ok = is_real(value) and math.isfinite(float(value))
    if ok:
        v = float(value)
        ok = (low is None or v > low or (not strict and v == low)) and (high is None or v <= high)
    if not ok:
        bounds = _bounds_text(low, high, strict)
        what = f"{bounds} and finite" if bounds in ("positive", "non-negative") else \
            f"a finite number{' ' + bounds if bounds else ''}"
        raise error(f"{name} must be {what}{' or None' if allow_none else ''}; got {value!r}")
    return float(value)


def check_int(value, name: str, *, minimum: int = 1, error=OptionError) -> int:
    """An integer >= ``minimum`` (bools refused)."""
    if not is_int(value) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise error(f"{name} must be {what}; got {value!r}")
    return int(value)


def check_choice(value, name: str, choices: Sequence[str], error=OptionError) -> str:
    """One of the strings ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise error(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}")
    return value


def check_options(options: dict, allowed: Sequence[str], where: str) -> None:
    """Raise an :class:`OptionError` naming unknown option keys and listing the valid ones."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise OptionError(f"unknown option(s) {', '.join(map(repr, unknown))} for {where}; valid options are "
                          f"{', '.join(sorted(allowed)) or '(none)'}")


def keyword_names(fn, exclude: Sequence[str] = ()) -> list[str]:
    """The names of ``fn``'s parameters that a caller can pass by keyword (not ``*args`` / ``**kwargs``), but
    ``exclude``: the valid options of a method that forwards its options to ``fn``."""
    return [name for name, p in inspect.signature(fn).parameters.items()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name not in exclude]


def as_generator(seed, name: str = "seed") -> np.random.Generator:
    """A ``numpy.random.Generator`` from ``None``, a non-negative integer seed, or a generator (returned as is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if is_int(seed) and seed < 0:
        raise OptionError(f"{name} must be a non-negative integer, None or a numpy Generator; got {seed}")
    if seed is None or is_int(seed):
        return np.random.default_rng(seed)
    raise ExpressionTypeError(f"{name} must be an integer, None or a numpy Generator, not {type(seed).__name__}")


def check_problem(problem, where: str, needs: Sequence[str] = ("solve", "family"),
                  what: str = "a fm.Problem") -> None:
    """Refuse anything but a declared problem (read by the attributes ``where`` uses: ``needs``) with an
    :class:`OptionError` naming what was given; a function (e.g. the ``build`` of a sweep) gets the hint to pass the
    problem it builds."""
    if isinstance(problem, type) or not all(hasattr(problem, a) for a in needs):
        hint = (": pass the problem itself (e.g. build(value)), not a function that builds it" if callable(problem)
                else "")
        raise OptionError(f"{where} needs {what}; got {type(problem).__name__}{hint}")


def check_finite(arr: np.ndarray, name: str) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[0]
        raise DataError(f"{name} contains {int(bad.sum())} NaN or infinite value(s), the first at index "
                        f"{tuple(int(i) for i in where)}; drop or impute them first")


# The largest feature magnitude the solvers can use: they form sums of squares of the features over the rows
# (Hessians X^T D X, second moments, Lipschitz constants), which overflow float64 (largest 1.8e308) once a feature
# exceeds sqrt(1.8e308) = 1.3e154 divided by the square root of the rows; 1e150 leaves room for 1e8 rows.
MAX_FEATURE = 1e150


def check_magnitude(arr: np.ndarray, name: str, what: str = "index") -> None:
    """Refuse values beyond :data:`MAX_FEATURE` in ``arr`` (their squares overflow the solvers' sums), naming the
    first one's ``what`` (its index)."""
    if arr.size and max(float(arr.max()), -float(arr.min())) > MAX_FEATURE:
        big = np.abs(arr) > MAX_FEATURE
        where = tuple(int(i) for i in np.argwhere(big)[0])
        raise DataError(f"{name} has {int(big.sum())} value(s) beyond {MAX_FEATURE:.0e} in magnitude, the first "
                        f"{float(arr[where]):.3g} at {what} {where[0] if len(where) == 1 else where}; the solvers sum "
                        f"squares of the features, which overflow float64 (largest 1.8e308): rescale the columns "
                        f"(standardize: (X - X.mean(0)) / X.std(0), or standardize = true in a problem file's [data])")


def nesting_depth(doc, limit: int) -> int:
    """How deep lists and dicts nest in ``doc`` (a number or a text is depth 0), counted without recursion and
    stopping once past ``limit`` (a file read from disk may nest thousands deep)."""
    deepest, stack = 0, [(doc, 1)]
    while stack and deepest <= limit:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((c, depth + 1) for c in children)
    return deepest


def _numeric(arr: np.ndarray, name: str, hint: str = "") -> None:
    if arr.dtype.kind == "c":
        raise DataError(f"{name} must be real; got complex values (dtype {arr.dtype}). Pass the real part "
                        f"(.real) if the imaginary parts are zero, or give real and imaginary parts as two columns")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"{name} must be numeric; got dtype {arr.dtype}{hint}")


def check_bool(value, name: str, error=OptionError) -> bool:
    """A bool (``True`` / ``False``; strings such as ``"false"`` and numbers are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{name} must be True or False; got {value!r}")
    return bool(value)


def non_numeric_columns(frame) -> list:
    """The names of the columns of a data frame (pandas or Dask) whose dtype is not numeric or boolean; ``[]`` for
    anything that is not a frame."""
    if not (hasattr(frame, "columns") and hasattr(frame, "dtypes")):
        return []
    return [c for c, t in zip(frame.columns, frame.dtypes) if getattr(t, "kind", "O") not in "biuf"]


def check_array_input(X, name: str = "X") -> None:
    """Refuse, with what to do, the inputs that are not arrays of numbers: None, text, mappings, scalars, scipy
    sparse matrices (fairmodel's data sets are dense) and data frames with non-numeric columns (named)."""
    if X is None or isinstance(X, (str, bytes, dict, set)) or is_real(X):
        raise DataError(f"{name} must be a 2-D array (n_samples, n_features); got a {type(X).__name__}"
                        + (". For a table of columns use fm.Dataset.from_frame(pd.DataFrame(...), target=...)"
                           if isinstance(X, dict) else ""))
    if hasattr(X, "toarray") and hasattr(X, "nnz"):
        rows, cols = X.shape
        raise DataError(f"{name} is a scipy sparse {rows} x {cols} matrix; this input must be dense. Pass "
                        f"{name}.toarray() (it needs {rows * cols * 8 / 2 ** 20:.1f} MiB), or reduce the columns first "
                        f"(fm.Dataset(X, y, groups) keeps a sparse design in memory; the scikit-learn estimators "
                        f"densify sparse input after a memory check)")
    text = non_numeric_columns(X)
    if text:
        raise DataError(f"{name} has non-numeric column(s) {', '.join(map(repr, text))}; encode them first: "
                        f"fm.Dataset.from_frame(frame, target=..., sensitive=...) one-hot encodes text columns, or "
                        f"use scikit-learn's OneHotEncoder")


def check_rows(rows, n: int, what: str = "row indices") -> np.ndarray:
    """Row indices as an intp array: integers in [0, n), or a boolean mask of length n (its True rows)."""
    arr = np.asarray(rows)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise DataError(f"a boolean row mask needs one entry per row ({n}); got shape {arr.shape}")
        return np.flatnonzero(arr)
    if arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind != "f" or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise DataError(f"rows must be integer row indices (or a boolean mask over the {n} rows); got dtype "
                            f"{arr.dtype}{', e.g. ' + repr(arr.ravel()[0].item()) if arr.size else ''}")
    arr = arr.astype(np.intp).ravel()
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        bad = arr[(arr < 0) | (arr >= n)][0]
        raise DataError(f"{what} must lie in [0, {n}); got {int(bad)}")
    return arr


def check_matrix(X, name: str = "X") -> np.ndarray:
    """``X`` as a finite float64 2-D array, or a :class:`DataError` that says what is wrong."""
    check_array_input(X, name)
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise DataError(f"{name} could not be read as an array: {exc}") from None
    if arr.ndim != 2:
        raise DataError(f"{name} must be 2-D (n_samples, n_features); got an array of shape {arr.shape}. "
                        f"Use X.reshape(-1, 1) for a single feature.")
    _numeric(arr, name, ". Encode categorical columns first (Dataset.from_frame one-hot encodes them).")
    arr = np.asarray(arr, dtype=float)
    check_finite(arr, name)
    check_magnitude(arr, name)
    return arr


def is_sparse(X) -> bool:
    """Whether ``X`` is a SciPy sparse matrix or array."""
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def check_sparse_matrix(X, name: str = "X"):
    """A SciPy sparse ``X`` as a finite float64 CSR matrix with sorted, summed indices (a copy: the caller's matrix
    is never changed), or a :class:`DataError` that says what is wrong."""
    if X.ndim != 2:
        raise DataError(f"{name} must be 2-D (n_samples, n_features); got a sparse array of shape {X.shape}")
    data = np.asarray(X.data)
    _numeric(data, name)
    out = X.tocsr().astype(float, copy=True)
    out.sum_duplicates()
    out.sort_indices()
    bad = ~np.isfinite(out.data)
    if bad.any():
        row = int(np.searchsorted(out.indptr, int(np.flatnonzero(bad)[0]), side="right") - 1)
        raise DataError(f"{name} contains {int(bad.sum())} NaN or infinite stored value(s), the first in row {row}; "
                        f"drop or impute them first")
    big = np.abs(out.data) > MAX_FEATURE
    if big.any():
        at = int(np.flatnonzero(big)[0])
        row = int(np.searchsorted(out.indptr, at, side="right") - 1)
        raise DataError(f"{name} has {int(big.sum())} value(s) beyond {MAX_FEATURE:.0e} in magnitude, the first "
                        f"{float(out.data[at]):.3g} at (row, column) ({row}, {int(out.indices[at])}); the solvers sum "
                        f"squares of the features, which overflow float64 (largest 1.8e308): rescale the columns "
                        f"(divide each by its largest magnitude: a sparse design stays sparse)")
    return out


def check_vector(v, n: int | None, name: str) -> np.ndarray:
    """``v`` as a finite float64 1-D array of length ``n`` (if given)."""
    arr = np.asarray(v)
    if arr.ndim != 1:
        raise DataError(f"{name} must be 1-D; got shape {arr.shape}")
    _numeric(arr, name)
    # a copy, unless v is already a read-only float vector (e.g. the labels of a Dataset): nothing can change it
    # through this reference, and large data are not held twice
    arr = arr.astype(float, copy=arr.dtype != np.float64 or arr.flags.writeable)
    if n is not None and arr.shape[0] != n:
        raise DataError(f"{name} has {arr.shape[0]} entries but X has {n} rows; they must match")
    check_finite(arr, name)
    return arr


def check_sample_weight(sample_weight, n: int, what: str = "the data") -> np.ndarray:
    """Sample weights as a read-only float64 array: 1-D, ``n`` entries (one per row of ``what``), finite,
    non-negative and not all zero; a :class:`DataError` saying which rule failed otherwise."""
    arr = np.asarray(sample_weight)
    if arr.ndim != 1:
        raise DataError(f"sample_weight must be a 1-D array with one weight per row; got shape {arr.shape}")
    _numeric(arr, "sample_weight")
    arr = arr.astype(float)
    if arr.shape[0] != n:
        raise DataError(f"sample_weight has {arr.shape[0]} entries but {what} has {n} rows; they must match")
    check_finite(arr, "sample_weight")
    if arr.size and arr.min() < 0:
        raise DataError(f"sample_weight must be >= 0; entry {int(np.argmin(arr))} is {arr.min():g}")
    if not arr.any():
        raise DataError("sample_weight is zero everywhere: no row would count")
    arr.setflags(write=False)
    return arr


def _is_missing(value, tokens) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        text = value.strip()
        return not text or text in tokens
    try:
        return bool(value != value)  # NaN and NaT differ from themselves
    except TypeError:  # pandas.NA: a comparison gives NA again, whose truth value is undefined
        return True


def missing_mask(values: np.ndarray, tokens: Sequence[str] = ()) -> np.ndarray:
    """True where an entry is missing: ``None``, NaN, NaT, ``pandas.NA``, blank text, or text in ``tokens``."""
    kind = values.dtype.kind
    if kind in "fc":
        return np.isnan(values)
    if kind in "mM":
        return np.isnat(values)
    if kind in "US":
        stripped = np.char.strip(values)
        return (np.char.str_len(stripped) == 0) | np.isin(stripped, list(tokens))
    if kind != "O":
        return np.zeros(values.shape, dtype=bool)
    return np.fromiter((_is_missing(v, tokens) for v in values), dtype=bool, count=values.shape[0])


def check_complete(values: np.ndarray, name: str, *, tokens: Sequence[str] = (), file: str | None = None) -> None:
    """Raise a :class:`DataError` giving the count and the first row of the missing entries of a 1-D array
    (see :func:`missing_mask`); ``file`` names the CSV file whose line numbers are added (header on line 1)."""
    missing = missing_mask(values, tokens)
    if missing.any():
        first = int(np.argmax(missing))
        kinds = "None, NaN or blank" if not tokens else "blank or " + ", ".join(tokens)
        line = f" (line {first + 2} of {file})" if file else ""
        raise DataError(f"missing values in {name}: {int(missing.sum())} ({kinds}), the first at row {first}{line}; "
                        f"drop those rows or impute the values first")


def check_labels(labels: np.ndarray, name: str = "group labels") -> None:
    """1-D group labels: not complex, none missing (:func:`check_complete`), none infinite."""
    if labels.dtype.kind == "c":
        raise DataError(f"{name} must not be complex; got dtype {labels.dtype}. Use integer or text labels")
    check_complete(labels, name)
    if labels.dtype.kind == "f" and np.isinf(labels).any():
        raise DataError(f"{name} contain infinite values, the first at row {int(np.argmax(np.isinf(labels)))}")


def check_unique_names(names, what: str, hint: str) -> None:
    """Raise a :class:`DataError` when entries of ``names`` read the same as text: a duplicated column name, or
    distinct labels such as ``1`` and ``'1'`` that reports (keyed by ``str(name)``, e.g. in JSON) would merge."""
    by_text: dict[str, list] = {}
    for n in names:
        by_text.setdefault(str(n), []).append(n)
    clashes = [same for same in by_text.values() if len(same) > 1]
    if clashes:
        parts = []
        for same in clashes[:5]:
            counts = Counter(map(repr, same))  # repr tells 1 from '1'
            parts.append(" and ".join(r if c == 1 else f"{r} ({c} times)" for r, c in counts.items()))
        raise DataError(f"{what}: {', '.join(parts)}; {hint}")


def check_printable_names(names, what: str) -> None:
    """Raise a :class:`DataError` when a text name (or a text part of a tuple name) holds a line break, a tab or
    another control character: names are printed in tables, reports and file keys, where they would break lines
    (e.g. a quoted newline inside a CSV cell)."""
    for name in names:
        for part in name if isinstance(name, tuple) else (name,):
            if isinstance(part, str) and any(ord(c) < 32 or ord(c) == 127 for c in part):
                raise DataError(f"{what} {part!r} holds a control character (a line break, tab or similar); names "
                                f"are printed in tables and reports, where it would break the lines: replace it "
                                f"(e.g. by a space) in the data")


def check_regular_file(path, what: str, max_bytes: int | None = None, hint: str = "", error=DataError):
    """The ``path`` of a regular file to read (a ``Path``), refusing a missing path, a directory, a device, a pipe
    or a socket (/dev/zero would be read until the memory runs out, a pipe without a writer blocks forever) and,
    with ``max_bytes``, a file larger than that (``hint``: what to do instead); the errors name ``what``."""
    path = Path(path)
    try:
        mode, size = path.stat().st_mode, path.stat().st_size
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise error(f"cannot read {what} {path}: it is a directory; give the path of a file")
    if not stat.S_ISREG(mode):
        raise error(f"cannot read {what} {path}: it is not a regular file (a device, a pipe or a socket); fairmodel "
                    f"reads files of known size: save the contents to a file and give its path")
    if max_bytes is not None and size > max_bytes:
        raise error(f"cannot read {what} {path}: it has {size:,} bytes, more than the {max_bytes:,} read at "
                    f"most{hint}")
    return path


SCALE_RATIO = 1e3


def check_scaling(X: np.ndarray, names: Sequence[str]) -> None:
    """Warn (``UserWarning``) when the standard deviations of the non-constant columns of ``X`` differ by more
    than a factor :data:`SCALE_RATIO`, naming the (at most 5) columns furthest from the median scale. A sparse ``X``
    (CSR) is read through its stored values only (no dense copy)."""
    if is_sparse(X):
        n = X.shape[0]
        size = np.asarray(abs(X).max(axis=0).todense()).ravel()
        size[size == 0] = 1.0
        scaled = X @ scipy_diags(1.0 / size)
        mean = np.asarray(scaled.mean(axis=0)).ravel()
        square = np.asarray(scaled.multiply(scaled).sum(axis=0)).ravel() / n
        std = np.sqrt(np.maximum(square - mean * mean, 0.0)) * size
        ptp = np.asarray(X.max(axis=0).todense() - X.min(axis=0).todense()).ravel()
        check_scaling_stats(std, ptp, names)
        return
    size = np.abs(X).max(axis=0)
    size[size == 0] = 1.0
    std = (X / size).std(axis=0) * size  # scaled first: no overflow for entries near the float limit
    check_scaling_stats(std, np.ptp(X, axis=0), names)


def check_scaling_stats(std: np.ndarray, ptp: np.ndarray, names: Sequence[str], stacklevel: int = 4) -> None:
    """:func:`check_scaling` from the column standard deviations and ranges (for data read in chunks)."""
    varying = np.flatnonzero(ptp > 0)  # constant columns can have a rounding-error std
    s = std[varying]
    if s.size < 2 or s.max() <= SCALE_RATIO * s.min():
        return
    median = float(np.median(s))
    worst = varying[np.argsort(-np.abs(np.log(s / median)), kind="stable")[:5]]
    listed = ", ".join(f"{names[j]} (std {std[j]:.2g})" for j in worst)
    warnings.warn(f"features are badly scaled: column standard deviations range from {s.min():.2g} to {s.max():.2g} "
                  f"(ratio {s.max() / s.min():.2g} > {SCALE_RATIO:g}); furthest from the typical {median:.2g}: "
                  f"{listed}. Solvers may converge slowly or inaccurately: standardize the columns "
                  f"((X - X.mean(0)) / X.std(0)), load bundled data with standardize=True, or set standardize = true "
                  f"in a problem file's [data]", UserWarning, stacklevel=stacklevel)
