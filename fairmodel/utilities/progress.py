"""One progress-bar mechanism for every long solve (stochastic epochs, sweeps, outer iterations).

The bar is drawn on standard error only when it is a terminal and ``verbose`` is not ``False``;
``verbose=True`` forces it on, ``verbose=False`` (or a non-terminal stream) keeps it silent.
Messages that are not progress go through the ``logging`` module (logger ``"fairmodel"``).
:class:`Notes` are whole lines about a long run (a stochastic method's checkpoints: the work done, the certificate
against its tolerance, the time left), at most one every ``NOTE_INTERVAL`` seconds: on standard error where the bar
is drawn, else as INFO records of the logger (silent unless the application configures logging).

Interrupts: inside :func:`interruptible` (a stochastic solve), the first Ctrl-C does not raise; it asks the
running method to stop at its next progress point (an epoch or outer iteration: every loop checks
``bar.stopped`` after ``bar.update``), so that the current iterate can be returned and judged. A second Ctrl-C
raises ``KeyboardInterrupt`` at once.
"""
from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from contextlib import contextmanager

logger = logging.getLogger("fairmodel")


def progress_enabled(verbose: bool | None, stream=None) -> bool:
    """Whether a progress bar should be drawn: ``verbose`` if given, else "is the stream a terminal"."""
    if verbose is not None:
        return bool(verbose)
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class _StopRequest:
    """Whether Ctrl-C asked the running solve to stop (set by the handler of :func:`interruptible`)."""

    def __init__(self):
        self.requested = False
        self.depth = 0


STOP = _StopRequest()


def stop_requested() -> bool:
    return STOP.requested


def _on_sigint(signum, frame):
    if STOP.requested:
        raise KeyboardInterrupt
    STOP.requested = True
    logger.warning("interrupt: stopping at the end of the current step to return the current iterate "
                   "(press Ctrl-C again to abort at once)")


@contextmanager
def interruptible():
    """Within this block the first Ctrl-C sets :data:`STOP` instead of raising (main thread only; nested blocks
    share the outermost handler). Yields :data:`STOP`; read ``STOP.requested`` before the block ends: the outermost
    block clears it as it ends, so that a request never outlives its solve (a method run directly afterwards,
    outside any block, would otherwise stop after its first epoch as if interrupted)."""
    install = STOP.depth == 0 and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _on_sigint) if install else None
    if STOP.depth == 0:
        STOP.requested = False
    STOP.depth += 1
    try:
        yield STOP
    finally:
        STOP.depth -= 1
        if STOP.depth == 0:
            STOP.requested = False
        if install:
            signal.signal(signal.SIGINT, previous)


NOTE_INTERVAL = 5.0    # seconds between two lines of Notes (the first one is written at once)


class Notes:
    """Lines about a long run written between the redraws of a :class:`Progress` bar, at most one every
    ``min_interval`` seconds (``note(text)`` returns whether it was written)."""

    def __init__(self, verbose: bool | None = None, stream=None, min_interval: float | None = None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = progress_enabled(verbose, self.stream)
        self.min_interval = NOTE_INTERVAL if min_interval is None else min_interval
        self._last = -float("inf")

    def note(self, text: str) -> bool:
        now = time.perf_counter()
        if now - self._last < self.min_interval:
            return False
        self._last = now
        if not self.enabled:
            logger.info(text)
            return True
        # the line replaces the bar's, as the bar redraws itself (the bar redraws below it at its next update)
        self.stream.write(f"\r{text}\033[K\n")
        self.stream.flush()
        return True


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

    @property
    def stopped(self) -> bool:
        """True once Ctrl-C asked the solve to stop (see :func:`interruptible`): the loop should end."""
        return STOP.requested

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
