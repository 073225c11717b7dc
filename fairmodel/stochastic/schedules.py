"""Step-size and weight schedules: a number, per-epoch or per-(epoch, step) arrays, or a callable.

Every schedule is turned into a function ``(s, k) -> value`` and validated: arrays up front (shape and
values), callables at each use (the first bad value stops the run with a clear message).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import OptionError
from ..utilities.progress import stop_requested
from ..utilities.validate import check_int, check_number


def _check_value(v, name: str, low: float, high: float, where: str = "") -> float:
    return check_number(v, f"{name}{where}", low=low, strict=True, high=None if high == np.inf else high)


def epoch_lengths(inner, epochs: int, name: str = "inner") -> np.ndarray:
    """K_s for s = 0..S-1 from an integer, a length-S sequence, or a callable s -> K_s (each >= 1)."""
    check_int(epochs, "epochs")
    if callable(inner):
        values = [inner(s) for s in range(epochs)]
    elif np.ndim(inner) == 0:
        values = [inner] * epochs
    else:
        values = list(np.asarray(inner).ravel())
        if len(values) != epochs:
            raise OptionError(f"{name} has {len(values)} entries; it needs one per epoch ({epochs})")
    out = np.empty(epochs, dtype=int)
    for s, v in enumerate(values):
        if isinstance(v, bool) or not float(v).is_integer() or v < 1:
            raise OptionError(f"{name} (inner iterations K_s) must be positive integers; got {v!r} at epoch {s}")
        out[s] = int(v)
    return out


def schedule(value, name: str, lengths: np.ndarray, high: float = np.inf):
    """A validated function ``(s, k) -> value`` in (0, high] from a number, an array or a callable.

    Arrays: shape (S,) (one value per epoch) or (S, max K_s) (one per step).
    """
    S = lengths.shape[0]
    if callable(value):
        def f(s, k):
            return _check_value(value(s, k), name, 0.0, high, f" at epoch {s}, step {k}")
        return f
    arr = np.asarray(value, dtype=float) if not isinstance(value, (numbers.Real, np.number)) else None
    if arr is None or arr.ndim == 0:
        v = _check_value(value if arr is None else float(arr), name, 0.0, high)
        return lambda s, k: v
    if arr.ndim == 1 and arr.shape[0] == S:
        for s, v in enumerate(arr):
            _check_value(v, name, 0.0, high, f" at epoch {s}")
        return lambda s, k: float(arr[s])
    if arr.ndim == 2 and arr.shape == (S, int(lengths.max())):
        for s in range(S):
            for v in arr[s, : lengths[s]]:
                _check_value(v, name, 0.0, high, f" at epoch {s}")
        return lambda s, k: float(arr[s, k])
    raise OptionError(f"{name} array has shape {arr.shape}; use a number, shape ({S},) (per epoch) or "
                      f"({S}, {int(lengths.max())}) (per epoch and step)")


def multiplier(kind, lengths: np.ndarray):
    """A step multiplier ``(s, k) -> m``: "constant" (1), "decreasing" (1/sqrt(s+1)), or any schedule."""
    if kind is None or isinstance(kind, str):
        if kind == "constant":
            return lambda s, k: 1.0
        if kind == "decreasing":
            return lambda s, k: 1.0 / np.sqrt(s + 1.0)
        raise OptionError(f"unknown step schedule {kind!r}; use 'constant', 'decreasing', a number, an array "
                          f"or a callable (s, k) -> multiplier")
    return schedule(kind, "step schedule", lengths)


def check_budget(epoch: int, evals: int, elapsed: float, max_grad_evals=None, max_time=None, callback=None,
                 info=None):
    """After an epoch: ``(status, message)`` when the run must stop, else ``None``.

    A callback returning True stops the run normally ("completed"); an exhausted gradient or time budget
    gives "budget_exhausted". ``info`` is a function returning the callback's dict (built only if needed).
    """
    if stop_requested():
        return "interrupted", f"interrupted (Ctrl-C) after epoch {epoch}"
    if callback is not None and callback(info()):
        return "completed", f"stopped by the callback after epoch {epoch}"
    if max_grad_evals is not None and evals >= max_grad_evals:
        return "budget_exhausted", f"gradient-evaluation budget {max_grad_evals} reached at epoch {epoch}"
    if max_time is not None and elapsed >= max_time:
        return "budget_exhausted", f"time budget {max_time} s reached at epoch {epoch}"
    return None
