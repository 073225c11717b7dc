"""The entry point of the ``fairmodel`` command, kept outside the ``fairmodel`` package: importing any module of
that package first runs its ``__init__`` and its heavy imports (NumPy, SciPy, CVXPY), and a Ctrl-C during them
would end in a ``KeyboardInterrupt`` traceback. This module imports only the standard library, installs its
handlers, then loads the command line: Ctrl-C at any moment exits with status 130 and SIGTERM with 143, with one line
on standard error. While a command runs, ``fairmodel.frontends.cli.main`` handles both itself (Ctrl-C: a stochastic
solve returns its judged iterate, a sweep prints and saves the finished values; both: files being written are
removed, earlier outputs kept) and returns 130 or 143."""
import os
import signal
import sys

EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


def _interrupted(signum=None, frame=None):
    """Leave at once with status 130 (Ctrl-C) or 143 (SIGTERM): nothing is loaded yet, or the command has
    finished."""
    terminated = signum == signal.SIGTERM
    try:
        sys.stdout.flush()
        sys.stderr.write("fairmodel: terminated (SIGTERM)\n" if terminated else "fairmodel: interrupted (Ctrl-C)\n")
        sys.stderr.flush()
    finally:
        os._exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)


def main(argv=None) -> int:
    for s in (signal.SIGINT, signal.SIGTERM):                     # before the heavy imports
        signal.signal(s, _interrupted)
    from fairmodel.frontends import cli                           # noqa: E402  (NumPy, SciPy, CVXPY, ...)
    signal.signal(signal.SIGINT, signal.default_int_handler)      # the command's own handling from here on
    try:
        code = cli.main(argv)                                     # (it sets its own SIGTERM handler while it runs)
    except KeyboardInterrupt:                                     # e.g. while argparse or an error line prints
        _interrupted()
    except cli.Terminated:                                        # SIGTERM, e.g. while an error line prints
        _interrupted(signal.SIGTERM)
    for s in (signal.SIGINT, signal.SIGTERM):                     # the command is done: nothing left to save
        signal.signal(s, _interrupted)
    return code
