"""The options of the ``fairmodel`` command (standard library only). The entry point (``fairmodel_cli.main``)
parses with this parser before any heavy import, so ``--version``, ``--help`` and a mistyped option are answered in
a fraction of a second; ``fairmodel.frontends.cli`` parses with the same parser and runs the command."""
from __future__ import annotations

import argparse
import ast
from importlib.util import find_spec
from pathlib import Path

DESCRIBE_FORMATS = ("text", "markdown", "latex")   # the same tuple as fairmodel.families.base.DESCRIBE_FORMATS


def package_version() -> str:
    """``fairmodel._version.__version__`` read from the file without importing the package (whose ``__init__`` loads
    NumPy, SciPy and CVXPY); the same static read as setuptools' ``attr:`` in pyproject.toml."""
    spec = find_spec("fairmodel")              # a top-level package: found, not executed
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "_version.py"
        if path.is_file():
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
                    return ast.literal_eval(node.value)
    raise RuntimeError("fairmodel/_version.py not found next to the fairmodel package")


def build_parser(version: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; each command's name is ``args.command``."""
    parser = argparse.ArgumentParser(prog="fairmodel", description="Fair and robust learning: exact and stochastic "
                                     "solvers with a shared judge.")
    parser.add_argument("--version", action="version", version=f"fairmodel {version or package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="cross-check group DRO on the bundled Adult data (exact dual method vs ALEG)",
                          description="Solve group DRO (or MERO) on the bundled Adult data with the exact backend "
                                      "and with ALEG, judge both on the full data and print the cross-check.")
    demo.add_argument("--problem", choices=("gdro", "mero"), default="gdro", help="group DRO (default) or MERO")
    demo.add_argument("--groups", choices=("sex", "race", "sex_race"), default="sex", help="sensitive attribute")
    demo.add_argument("--radius", type=float, default=5.0, help="radius of the weight ball (default 5)")
    demo.add_argument("--exact-method", choices=("dual", "epigraph"), default="dual",
                      help="exact method: the certified dual method (default) or the CVXPY epigraph program")
    demo.add_argument("--seed", type=int, default=0, help="seed of the stochastic solver")
    demo.add_argument("--verbose", action="store_true", default=None, help="show progress bars")
    sub.add_parser("datasets", help="list the bundled data sets", description="List the bundled data sets "
                   "with their shapes, targets and sensitive attributes.")

    def problem_command(name, help_text, backend=True, json_out=True, out=True):
        p = sub.add_parser(name, help=help_text, description=help_text + " (problem files: see the 'Command line' "
                           "page of the documentation, or docs/cli.md in the source)")
        p.add_argument("problem_file", metavar="PROBLEM.toml", help="the problem file")
        if backend:
            p.add_argument("--backend", choices=("exact", "stochastic"), help="backend (default: [solve] backend, "
                                                                              "else exact)")
        p.add_argument("--method", help="method of the backend (default: the file's, else the family's default)")
        p.add_argument("--seed", type=int, help="seed of the stochastic solver (default: [solve] seed, else 0)")
        p.add_argument("--verbose", action="store_true", default=None, help="show progress bars (default: on a "
                       "terminal)")
        if json_out:
            p.add_argument("--json", action="store_true", help="print one JSON document (schema 1: see the 'JSON "
                           "output' page of the documentation, or docs/json.md in the source)")
        if out:
            p.add_argument("--out", metavar="DIR", help="save results (JSON + NPZ) into this directory")
            p.add_argument("--force", action="store_true", help="overwrite results already saved in --out")
            p.add_argument("--plot", metavar="FILE", help="save a figure (needs matplotlib): the group risks, or "
                           "the convergence of the history against the exact optimum")
        return p

    problem_command("solve", "solve a problem file with one backend")
    problem_command("crosscheck", "solve a problem file with both backends and compare them", backend=False)
    sw = problem_command("sweep", "solve a problem file for several values of one of its keys", out=False)
    sw.add_argument("--out", metavar="DIR", help="save the frontier (frontier.md, frontier.json) and every "
                    "value's result (value<i>.json + .npz) into this directory")
    sw.add_argument("--force", action="store_true", help="overwrite results already saved in --out")
    sw.add_argument("--param", required=True, help="dotted key of the file to vary, e.g. problem.kappa, "
                    "data.subsample, solve.seed, solve.stochastic.epochs (others are refused with the list)")
    sw.add_argument("--values", required=True, help="comma-separated values, e.g. 0.01,0.02,0.05")
    sw.add_argument("--plot", metavar="FILE", help="save a plot of the frontier (needs matplotlib)")
    sw.add_argument("--y", default=None, help="column to plot against the parameter (default: the judged risk "
                    "when the objective adds a regularizer to it, as DP post-processing's entropy term; else the "
                    "objective); an unknown column is refused with the list of columns")
    desc = problem_command("describe", "print the math, the CVXPY program and the stochastic method of a "
                           "problem file", backend=False, json_out=False, out=False)
    desc.add_argument("--format", choices=DESCRIBE_FORMATS, default="text",
                      help="text (default), markdown (math as $$...$$) or latex (a whole document for pdflatex)")
    return parser
