"""Files written as one unit: the one way fairmodel writes its outputs (a saved result's ``.json`` + ``.npz``, the
command line's ``--out`` directory of a solve, a cross-check or a sweep, a figure).

:func:`save_files` writes every file of a unit into a new hidden directory inside the destination
(``.fairmodel-stage-XXXXXXXX``), then moves them into place in one step: with the destination directory locked
(``flock``, so that two runs saving there at the same moment take turns) and Ctrl-C and SIGTERM deferred until the
moves are done. So

* an interrupt at any moment leaves the earlier files or the new ones, never a mix, and never a temporary (the
  staging directory is removed on every way out; only a killed process, SIGKILL or a power cut, can leave one);
* "already exists" is decided in that same step: each file is hard-linked to its name (``os.link`` fails when the
  name exists: an exclusive create), so of several runs saving the same names at once, one saves and the others fail
  with a :class:`~fairmodel.errors.ResultFileError` saying the files already exist; with ``replace=True`` the files
  replace the earlier ones (``os.replace``) and the runs take turns, each leaving a whole unit.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from ..errors import ResultFileError

try:
    import fcntl
except ImportError:        # pragma: no cover - Windows: no flock; os.link alone keeps "already exists" exclusive
    fcntl = None

STAGE_PREFIX = ".fairmodel-stage-"
SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s is not None)


class Terminated(BaseException):
    """SIGTERM, raised by the command line's handler so that the command ends like an interrupt (its temporaries
    removed, earlier outputs kept) instead of at once. A ``BaseException``, as ``KeyboardInterrupt``: no
    ``except Exception`` catches it."""


@contextlib.contextmanager
def signals_deferred():
    """Ctrl-C and SIGTERM that arrive inside the block take effect when it ends (main thread only: Python runs
    signal handlers there). The handlers are swapped, not the thread's signal mask: the kernel may deliver a signal
    to any thread (e.g. a BLAS worker), and Python still runs its handler in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    previous = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(pending):
            signal.raise_signal(s)       # the restored handler runs now (KeyboardInterrupt, Terminated, ...)


@contextlib.contextmanager
def _locked(directory: Path):
    """An exclusive lock on the directory (released when its descriptor closes, also if the process dies)."""
    if fcntl is None:
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def make_directory(directory: Path) -> None:
    """Create ``directory`` (and its parents), or a :class:`ResultFileError` saying why not."""
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ResultFileError(f"cannot save into {directory}: it (or a parent) is a file, not a directory; choose "
                              f"another path") from None
    except OSError as exc:
        raise ResultFileError(f"cannot create the directory {directory}: {exc.strerror or exc}; choose a path you "
                              f"can write to") from None


def exists_message(paths, meanwhile: bool = False) -> str:
    """``... already exist(s)`` and what to do; ``meanwhile``: another run saved them while this one was running."""
    return (f"{' and '.join(map(str, paths))} already exist(s)"
            + (" (another run saved them while this one was running)" if meanwhile else "")
            + "; choose another name, or overwrite with overwrite=True (command line: --force)")


def check_free(directory, names) -> None:
    """Raise :class:`ResultFileError` if any of ``names`` exists in ``directory`` (a check before long work; the
    decisive one is :func:`save_files`'s own)."""
    existing = [Path(directory) / n for n in names if os.path.lexists(Path(directory) / n)]
    if existing:
        raise ResultFileError(exists_message(existing))


def save_files(directory, writers: dict[str, Callable], *, replace: bool = False,
               stale: re.Pattern | None = None) -> list[Path]:
    """Write the files ``{name: write(binary file)}`` into ``directory`` as one unit; returns their paths.

    ``replace=False``: if any name exists, nothing is written and a :class:`ResultFileError` names it.
    ``replace=True``: the files replace earlier ones, and the files of ``directory`` whose names match ``stale``
    and that the unit does not write are removed in the same step (e.g. ``value5`` of a longer sweep). New files get
    the mode of any new file (the umask)."""
    directory = Path(directory)
    names = list(writers)
    make_directory(directory)
    stage = None
    try:
        with signals_deferred():
            stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=directory))
        for name, write in writers.items():
            with open(stage / name, "wb") as f:
                write(f)
        with signals_deferred(), _locked(directory):
            _publish(stage, directory, names, replace, stale)
    except OSError as exc:      # a read-only directory, a full disk, a name taken by a directory
        raise ResultFileError(f"cannot write {' and '.join(names)} in {directory}: {exc.strerror or exc}; choose a "
                              f"directory you can write to (with free space)") from None
    finally:
        if stage is not None:
            with signals_deferred():
                shutil.rmtree(stage, ignore_errors=True)
    return [directory / n for n in names]


def _publish(stage: Path, directory: Path, names: list, replace: bool, stale) -> None:
    if replace:
        for n in names:
            os.replace(stage / n, directory / n)
        for p in directory.iterdir() if stale is not None else ():
            if stale.fullmatch(p.name) and p.name not in names:
                p.unlink(missing_ok=True)
        return
    linked = []
    try:
        for n in names:
            _link(stage / n, directory / n)
            linked.append(n)
    except FileExistsError:
        for n in linked:
            (directory / n).unlink(missing_ok=True)
        raise ResultFileError(exists_message([directory / n for n in names if n not in linked
                                              and os.path.lexists(directory / n)], meanwhile=True)) from None


def _link(source: Path, target: Path) -> None:
    """``target`` made to name ``source``'s file, failing with FileExistsError if it exists."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise
    except OSError:         # a file system without hard links: under the lock, the check and the move are one step
        if os.path.lexists(target):
            raise FileExistsError(target) from None
        os.replace(source, target)
