"""The one set of input checks: numbers, integers, choices, option names, arrays, seeds.

Every check returns the cleaned value or raises an error that names the argument, says what is allowed and
what was given. ``error`` selects the class: :class:`~fairmodel.errors.OptionError` for solver and method
options (the default), :class:`~fairmodel.errors.ModelError` for declarations, :class:`DataError` for data.
"""
from __future__ import annotations

import math
import numbers
from typing import Sequence

import numpy as np

from .errors import DataError, ExpressionTypeError, OptionError


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


def as_generator(seed) -> np.random.Generator:
    """A ``numpy.random.Generator`` from ``None``, an integer seed, or a generator (returned as is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or is_int(seed):
        return np.random.default_rng(seed)
    raise ExpressionTypeError(f"seed must be an integer, None or a numpy Generator, not {type(seed).__name__}")


def check_finite(arr: np.ndarray, name: str) -> None:
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.argwhere(bad)[0]
        raise DataError(f"{name} contains {int(bad.sum())} NaN or infinite value(s), the first at index "
                        f"{tuple(int(i) for i in where)}; drop or impute them first")


def _numeric(arr: np.ndarray, name: str, hint: str = "") -> None:
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"{name} must be numeric; got dtype {arr.dtype}{hint}")


def check_matrix(X, name: str = "X") -> np.ndarray:
    """``X`` as a finite float64 2-D array, or a :class:`DataError` that says what is wrong."""
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
    return arr


def check_vector(v, n: int | None, name: str) -> np.ndarray:
    """``v`` as a finite float64 1-D array of length ``n`` (if given)."""
    arr = np.asarray(v)
    if arr.ndim != 1:
        raise DataError(f"{name} must be 1-D; got shape {arr.shape}")
    _numeric(arr, name)
    arr = arr.astype(float)
    if n is not None and arr.shape[0] != n:
        raise DataError(f"{name} has {arr.shape[0]} entries but X has {n} rows; they must match")
    check_finite(arr, name)
    return arr
