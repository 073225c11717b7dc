"""BLAS / OpenMP threads chosen by the library, not inherited.

The solvers' hot loops multiply small matrices (a minibatch of 32 rows, a dual of a few dozen entries, an
L-BFGS step on a model of ~100 weights) or pass once over a moderate table: thread synchronization costs more
than it buys there, and on a busy machine a multi-threaded BLAS that spins waiting for its threads is many times
slower than one thread. So the library runs its solves and its judge with ``threads()`` BLAS/OpenMP threads
(one by default), through threadpoolctl, and restores the caller's setting afterwards.

The user decides: the environment variable ``FAIRMODEL_THREADS`` (an integer, or ``inherit`` to leave the thread
pools as they are) or ``fairmodel.set_threads(n)`` (``None``: back to the environment / default) set the number,
and ``with fairmodel.thread_limit(n):`` sets it for a block.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading

from threadpoolctl import ThreadpoolController

from ..errors import OptionError

ENV = "FAIRMODEL_THREADS"
DEFAULT = 1
INHERIT = "inherit"

_state = threading.local()
_setting = {"value": None}        # set_threads(); None: the environment variable, else DEFAULT
_controller = {"obj": None, "modules": -1}


def _parse(value, where: str):
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in (INHERIT, "none", "default", ""):
            return INHERIT
        try:
            value = int(text)
        except ValueError:
            raise OptionError(f"{where} must be a positive integer or {INHERIT!r} (leave the BLAS/OpenMP thread "
                              f"pools as they are); got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(f"{where} must be a positive integer or {INHERIT!r}; got {value!r}")
    return value


def set_threads(n) -> None:
    """Number of BLAS/OpenMP threads the library's solvers and judge use (``None``: the environment variable
    ``FAIRMODEL_THREADS``, else 1; ``"inherit"``: leave the thread pools as the process has them)."""
    _setting["value"] = _parse(n, "set_threads(n)")


def threads():
    """The number of threads the library uses now (an int), or ``"inherit"``."""
    depth_value = getattr(_state, "override", None)
    if depth_value is not None:
        return depth_value
    if _setting["value"] is not None:
        return _setting["value"]
    env = _parse(os.environ.get(ENV), f"the environment variable {ENV}")
    return DEFAULT if env is None else env


def _get_controller():
    # threadpoolctl scans the loaded libraries (about 2 ms); rescan only when new modules were imported
    if _controller["obj"] is None or _controller["modules"] != len(sys.modules):
        _controller["obj"], _controller["modules"] = ThreadpoolController(), len(sys.modules)
    return _controller["obj"]


@contextlib.contextmanager
def limited_threads():
    """Run the block with the library's number of BLAS/OpenMP threads (nested blocks cost nothing)."""
    with _limited(threads()):
        yield


def one_thread():
    """Run the block with one BLAS/OpenMP thread whatever the library's setting (the small model-space products of
    the interior-point solvers: measured 2.2x faster than two threads on 2 loaded cores); free inside a block that
    already has one, and without rescanning the loaded libraries (about 2 ms a call of threadpoolctl's own
    ``threadpool_limits``)."""
    return _limited(1)


@contextlib.contextmanager
def _limited(n):
    if n == INHERIT or getattr(_state, "active", None) == n:
        yield
        return
    previous = getattr(_state, "active", None)
    _state.active = n
    try:
        with _get_controller().limit(limits=n):
            yield
    finally:
        _state.active = previous


@contextlib.contextmanager
def thread_limit(n):
    """``with fairmodel.thread_limit(n):`` the library's solves and judge in the block use ``n`` threads
    (``"inherit"``: the process's own thread pools)."""
    n = _parse(n, "thread_limit(n)")
    previous = getattr(_state, "override", None)
    _state.override = n
    try:
        yield
    finally:
        _state.override = previous


def few_threads(fn):
    """Decorator: ``fn`` runs inside :func:`limited_threads`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with limited_threads():
            return fn(*args, **kwargs)
    return wrapper
