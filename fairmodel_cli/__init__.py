"""The entry point of the ``fairmodel`` command, kept outside the ``fairmodel`` package: importing any module of
that package first runs its ``__init__`` and its heavy imports (NumPy, SciPy, CVXPY), and a Ctrl-C during them
would end in a ``KeyboardInterrupt`` traceback, and ``fairmodel --version`` would take seconds. This module
imports only the standard library, installs its handler and parses the arguments with the parser of
``fairmodel_cli.arguments`` (``--version``, ``--help`` and a mistyped option are answered there, in a fraction of a
second), then loads the command line: Ctrl-C at any moment exits with status 130 and one line on standard error.
While a command runs, ``fairmodel.frontends.cli.main`` handles Ctrl-C itself (a stochastic solve returns its judged
iterate, a sweep prints and saves the finished values) and returns 130."""
import os
import signal
import sys

from . import arguments

EXIT_INTERRUPTED = 130


def _interrupted(signum=None, frame=None):
    """Leave at once with status 130: nothing is loaded yet, or the command has finished."""
    try:
        sys.stdout.flush()
        sys.stderr.write("fairmodel: interrupted (Ctrl-C)\n")
        sys.stderr.flush()
    finally:
        os._exit(EXIT_INTERRUPTED)


def main(argv=None) -> int:
    signal.signal(signal.SIGINT, _interrupted)                    # before the heavy imports
    argv = sys.argv[1:] if argv is None else list(argv)
    arguments.build_parser().parse_args(argv)                     # --version, --help, a bad option: answered here
    from fairmodel.frontends import cli                           # noqa: E402  (NumPy, SciPy, CVXPY, ...)
    signal.signal(signal.SIGINT, signal.default_int_handler)      # the command's own handling from here on
    try:
        code = cli.main(argv)
    except KeyboardInterrupt:                                     # e.g. while argparse or an error line prints
        _interrupted()
    signal.signal(signal.SIGINT, _interrupted)                    # the command is done: nothing left to save
    return code
