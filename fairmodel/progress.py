"""One progress-bar mechanism for every long solve (stochastic epochs, sweeps, outer iterations).

The bar is drawn on standard error only when it is a terminal and ``verbose`` is not ``False``;
``verbose=True`` forces it on, ``verbose=False`` (or a non-terminal stream) keeps it silent.
Messages that are not progress go through the ``logging`` module (logger ``"fairmodel"``).
"""
from __future__ import annotations

import logging
import sys
import time

logger = logging.getLogger("fairmodel")


def progress_enabled(verbose: bool | None, stream=None) -> bool:
    """Whether a progress bar should be drawn: ``verbose`` if given, else "is the stream a terminal"."""
    if verbose is not None:
        return bool(verbose)
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """A minimal text progress bar.

    >>> with Progress(10, "epochs", verbose=False) as bar:
    ...     for _ in range(10):
    ...         bar.update(1, max_risk=0.5)
    """

    def __init__(self, total: int | None, desc: str = "", verbose: bool | None = None,
                 stream=None, min_interval: float = 0.2):
        self.total = total
        self.desc = desc
        self.stream = sys.stderr if stream is None else stream
        self.enabled = progress_enabled(verbose, self.stream)
        self.count = 0
        self.min_interval = min_interval
        self._start = time.perf_counter()
        self._last_draw = -float("inf")
        self._postfix = ""

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: int = 1, **postfix) -> None:
        self.count += n
        if postfix:
            self._postfix = " ".join(f"{k}={_fmt(v)}" for k, v in postfix.items())
        now = time.perf_counter()
        if self.enabled and (now - self._last_draw >= self.min_interval or self.count == self.total):
            self._draw(now)

    def _draw(self, now: float) -> None:
        self._last_draw = now
        elapsed = now - self._start
        if self.total:
            frac = min(1.0, self.count / self.total)
            filled = int(24 * frac)
            bar = f"[{'#' * filled}{'.' * (24 - filled)}] {self.count}/{self.total}"
        else:
            bar = f"{self.count}"
        self.stream.write(f"\r{self.desc} {bar} {elapsed:6.1f}s {self._postfix}\033[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
