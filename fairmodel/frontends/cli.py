"""The ``fairmodel`` command line.

Exit codes: 0 success, 1 a cross-check that is not ok, 2 bad input (with the message), 3 solver failure or a
result that is not ok, 130 interrupted by Ctrl-C (what was finished is printed, and saved where that replaces no
earlier result), 143 terminated by SIGTERM (what it was writing is removed). Every --out is saved as one unit
(:func:`fairmodel.utilities.outputs.save_files`): an interrupt leaves the earlier files or the new ones, never a mix
and never a temporary file, and of several runs saving the same files at once without --force one saves and the
others fail (exit 2, "already exist(s)").
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

from .. import expressions as dsl
from .._version import __version__
from ..crosscheck import crosscheck
from ..data import datasets
from ..errors import FairmodelError, OptionError, ResultFileError, SolverError
from ..families.base import DESCRIBE_FORMATS
from ..problem import Minimize, Problem
from ..results.plotting import default_frontier_y, plot_results
from ..results.result import _jsonable
from ..sweeps.frontier import sweep
from ..utilities import display
from ..utilities.outputs import STAGE_PREFIX, Terminated, check_free, save_files
from . import problemfile

EXIT_OK, EXIT_NOT_OK, EXIT_BAD_INPUT, EXIT_SOLVER, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 3, 130, 143


def _demo(args) -> int:
    start = time.perf_counter()
    data = datasets.load_adult(sensitive=args.groups)
    w = dsl.Weights(data.n_features, radius=args.radius)
    risks = dsl.group_mean(dsl.logistic_loss(data.score(w), data.y), data.groups)
    if args.problem == "mero":
        prob = Problem(Minimize(dsl.max(risks - dsl.group_optimal(risks))))
    else:
        prob = Problem(Minimize(dsl.max(risks)))
    print(f"fairmodel demo: {args.problem.upper()} on Adult ({data.n_samples} rows, {data.n_features} features), "
          f"groups = {args.groups} {dict(zip(data.groups.names, data.group_sizes.tolist()))}, logistic loss, "
          f"||w|| <= {args.radius:g}\n")
    report = crosscheck(prob, seed=args.seed, exact_options={"method": args.exact_method},
                           verbose=args.verbose)
    print(report.to_markdown())
    print("\nGroup risks (judge, full data):")
    for label, res in (("exact", report.exact), ("stochastic", report.stochastic)):
        risks_txt = ", ".join(f"{k}: {v:.4f}" for k, v in res.metrics["group_risks"].items())
        print(f"  {label:<10} {risks_txt}")
    print(f"\n{'OK' if report.ok else 'NOT OK'}: {time.perf_counter() - start:.1f} s in all")
    return EXIT_OK if report.ok else EXIT_NOT_OK


JSON_SCHEMA = 1


def _emit_json(kind: str, payload: dict) -> None:
    print(json.dumps(_jsonable({"schema": JSON_SCHEMA, "kind": kind, **payload}, None), indent=1))


def _load(args):
    return problemfile.load(args.problem_file)


def _solve_args(args, spec, backend: str) -> dict:
    """The file's options of ``backend`` with the command line's --method and --seed on top."""
    options = problemfile.solve_options(spec, backend)
    if args.method:
        options["method"] = args.method
    if backend == "stochastic" and args.seed is not None:
        options["seed"] = args.seed
    return options


def _backend(args, spec) -> str:
    return args.backend or problemfile.file_backend(spec)


def _verbose(args):
    """Progress bars: --verbose forces them, --json silences them, else shown on a terminal."""
    return False if getattr(args, "json", False) else getattr(args, "verbose", None)


def _check_out(args, names) -> None:
    """--out checked before any solving: a directory, or a path where one can be created, that can be written to;
    without --force, none of ``names`` in it (checked again, in one step with the writing, when the files are
    saved: another run may save there meanwhile). The directory itself is created only when the files are saved."""
    if not getattr(args, "out", None):
        return
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise OptionError(f"--out {out} is a file; --out names a directory to save the results in")
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise OptionError(f"--out {out}: cannot create the directory ({existing} is a file); choose a directory you "
                          f"can write to")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OptionError(f"--out {out}: {'the directory' if existing == out else f'its parent {existing}'} is not "
                          f"writable; choose another one")
    if not getattr(args, "force", False):
        check_free(out, names)


def _save(args, writers: dict, interrupted: bool = False, stale=None) -> list[str] | None:
    """Save the command's files into --out as one unit; with --force they replace the earlier ones, unless the run
    was interrupted: an interrupted run replaces nothing (it saves only where no file of that name exists, and
    otherwise says that the earlier files are kept)."""
    if not getattr(args, "out", None):
        return None
    out = Path(args.out)
    try:
        paths = save_files(out, writers, replace=bool(args.force) and not interrupted, stale=stale)
    except ResultFileError:
        if not (interrupted and any(os.path.lexists(out / name) for name in writers)):
            raise
        print(f"fairmodel: the interrupted run saved nothing: {out} holds earlier results of these names, which "
              f"are kept (an interrupted run replaces nothing)", file=sys.stderr)
        return None
    return [str(p) for p in paths]


RESULT_FILES = ("json", "npz")


def _result_names(*names) -> list[str]:
    return [f"{n}.{ext}" for n in names for ext in RESULT_FILES]


def _text(text: str):
    return lambda f: f.write(text.encode())


def _solve(args) -> int:
    prob, data, spec = _load(args)
    backend = _backend(args, spec)
    _check_out(args, _result_names("result"))
    result = prob.solve(backend=backend, verbose=_verbose(args), **_solve_args(args, spec, backend))
    interrupted = result.status == "interrupted"
    saved = _save(args, result.writers("result"), interrupted)
    if args.json:
        _emit_json("result", {"file": str(spec.path), "title": spec.doc.get("title", ""), "result": result.to_dict(),
                              "saved": saved})
    else:
        print(result.summary())
        if saved:
            print(f"saved: {', '.join(saved)}")
    _plot(args, {backend: result})   # after the output: a figure that cannot be drawn loses no result
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if result.ok else EXIT_SOLVER


def _crosscheck(args) -> int:
    prob, data, spec = _load(args)
    exact = _solve_args(args, spec, "exact")
    stochastic = _solve_args(args, spec, "stochastic")
    seed = stochastic.pop("seed")
    _check_out(args, _result_names("exact", "stochastic") + ["crosscheck.md"])
    report = crosscheck(prob, seed=seed, exact_options=exact, stochastic_options=stochastic,
                        verbose=_verbose(args))
    interrupted = "interrupted" in (report.exact.status, report.stochastic.status)
    saved = _save(args, {**report.exact.writers("exact"), **report.stochastic.writers("stochastic"),
                         "crosscheck.md": _text(report.to_markdown() + "\n")}, interrupted)
    if args.json:
        _emit_json("crosscheck", {"file": str(spec.path), "title": spec.doc.get("title", ""),
                                  "report": report.to_dict(), "saved": saved})
    else:
        print(report.to_markdown())
        if saved:
            print(f"saved: {', '.join(saved)}")
    _plot(args, {"exact": report.exact, "stochastic": report.stochastic}, optimum=report.exact.objective)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if report.ok else EXIT_NOT_OK


def _plot(args, results: dict, optimum=None) -> None:
    """Save the default figure; one that cannot be drawn is a warning on stderr, never the command's verdict."""
    if not args.plot:
        return
    try:
        _save_figure(plot_results(results, optimum=optimum), args.plot)
    except (FairmodelError, ValueError, OSError) as exc:
        print(f"fairmodel: warning: no figure saved: {exc}", file=sys.stderr)
        return
    print(f"saved: {args.plot}", file=sys.stderr if getattr(args, "json", False) else sys.stdout)


def _save_figure(figure, path) -> None:
    """A figure saved as one file (replacing an earlier one, never left half written)."""
    path = Path(path)
    save_files(path.parent, {path.name: lambda f: figure.savefig(f, format=path.suffix[1:] or None)}, replace=True)


def _parse_values(text: str) -> list:
    values = []
    for k, item in enumerate(text.split(",")):
        item = item.strip()
        if not item:
            raise OptionError(f"--values {text!r}: item {k + 1} is empty; give comma-separated values, e.g. "
                              f"0.01,0.05,0.1")
        try:
            values.append(int(item) if item.lstrip("-").isdigit() else float(item))
        except ValueError:
            values.append(item)
    return values


def _sweep(args) -> int:
    spec = problemfile.read(args.problem_file)
    backend = _backend(args, spec)
    problemfile.check_sweepable(spec, args.param, backend)
    overridden = {"solve.seed": args.seed is not None,
                  "solve.method": bool(args.method), f"solve.{backend}.method": bool(args.method)}
    if overridden.get(args.param):
        raise OptionError(f"{args.param} is swept, but the command line's --{args.param.split('.')[-1]} would "
                          f"override it in every solve; drop the flag")
    values = _parse_values(args.values)
    _check_out(args, ["frontier.md", "frontier.json"] + _result_names(*(f"value{i}" for i in range(len(values)))))
    if getattr(args, "out", None) and args.force and Path(args.out).is_dir():
        _check_replaceable(Path(args.out))

    def spec_of(value):
        return problemfile.Spec(problemfile.set_value(spec.doc, args.param, value), spec.path)

    def build(value):
        return problemfile.load_spec(spec_of(value))[0]
    frontier = sweep(build, values, param=args.param, backend=backend, verbose=_verbose(args),
                     options_for=lambda value: _solve_args(args, spec_of(value), backend))
    writers = {"frontier.md": _text(frontier.to_markdown() + "\n"),
               "frontier.json": _text(json.dumps(_jsonable(frontier.to_dict(), None), indent=1))}
    for i, result in enumerate(frontier.results):
        if result is not None:
            writers.update(result.writers(f"value{i}"))
    saved = _save(args, writers, frontier.interrupted, stale=SWEEP_FILE)
    if args.json:
        _emit_json("sweep", {"file": str(spec.path), "frontier": frontier.to_dict(), "plot": args.plot,
                             "saved": saved})
    else:
        print(frontier.to_markdown())
        if saved:
            print(f"saved: {', '.join(saved)}")
        if frontier.errors:
            print(f"\n{len(frontier.errors)} value(s) failed; the others are kept", file=sys.stderr)
        if frontier.interrupted:
            print(f"\ninterrupted (Ctrl-C) after {len(frontier.values)} of {len(values)} values; the finished "
                  f"ones are above", file=sys.stderr)
    if args.plot:      # an unknown --y: OptionError
        _save_figure(frontier.plot(y=args.y or default_frontier_y(frontier)), args.plot)
    if frontier.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if not frontier.errors else EXIT_SOLVER


SWEEP_FILE = re.compile(r"(frontier\.(md|json)|value\d+\.(json|npz))")


def _check_replaceable(out: Path) -> None:
    """--force replaces a sweep's files as a whole (no value of an earlier, longer sweep stays): refuse (before
    solving) a directory that holds other files."""
    other = sorted(p.name for p in out.iterdir() if not SWEEP_FILE.fullmatch(p.name)
                   and not p.name.startswith(STAGE_PREFIX))        # (another run's files being saved)
    if other:
        raise OptionError(f"--out {out} holds files a sweep did not write ({', '.join(other[:5])}"
                          f"{', ...' if len(other) > 5 else ''}); --force replaces the directory's sweep as a whole, "
                          f"so give a sweep's directory or a new one")


def _describe(args) -> int:
    prob, data, spec = _load(args)
    title = spec.doc.get("title", spec.path.name)
    body = prob.describe(format=args.format)   # the math, the methods, the exact program's structure
    shown = repr(data) if data is not None else "none (the game is given in [problem])"
    if args.format == "latex":                 # a whole document: pdflatex compiles it as printed
        print(display.latex_document(f"\\paragraph{{Data}} {display.latex_text(shown)}\n\n{body}", title))
    else:
        print(f"# {title}\n\nData: {shown}\n\n{body}")
    return EXIT_OK


def _datasets(args) -> int:
    print("| name | rows | features | target | sensitive attribute (groups) | description |")
    print("|---|---|---|---|---|---|")
    for name, (loader, text) in datasets.BUNDLED.items():
        data = loader()
        groups = ", ".join(f"{g} ({s})" for g, s in zip(data.groups.names, data.group_sizes))
        print(f"| {name} | {data.n_samples} | {data.n_features} | {data.target_name} | "
              f"{data.sensitive_name}: {groups} | {text} |")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairmodel", description="Fair and robust learning: exact and stochastic "
                                     "solvers with a shared judge.")
    parser.add_argument("--version", action="version", version=f"fairmodel {__version__}")
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
    demo.set_defaults(func=_demo)
    ds = sub.add_parser("datasets", help="list the bundled data sets", description="List the bundled data sets "
                        "with their shapes, targets and sensitive attributes.")
    ds.set_defaults(func=_datasets)

    def problem_command(name, func, help_text, backend=True, json_out=True, out=True):
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
        p.set_defaults(func=func)
        return p

    problem_command("solve", _solve, "solve a problem file with one backend")
    problem_command("crosscheck", _crosscheck, "solve a problem file with both backends and compare them",
                    backend=False)
    sw = problem_command("sweep", _sweep, "solve a problem file for several values of one of its keys", out=False)
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
    desc = problem_command("describe", _describe, "print the math, the CVXPY program and the stochastic method of a "
                           "problem file", backend=False, json_out=False, out=False)
    desc.add_argument("--format", choices=DESCRIBE_FORMATS, default="text",
                      help="text (default), markdown (math as $$...$$) or latex (a whole document for pdflatex)")
    return parser


def _terminate(signum, frame):
    raise Terminated


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main_thread else None
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("fairmodel: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("fairmodel: terminated (SIGTERM)", file=sys.stderr)
        return EXIT_TERMINATED
    except SolverError as exc:
        print(f"fairmodel: solver failure: {exc}", file=sys.stderr)
        return EXIT_SOLVER
    except (FairmodelError, ValueError, TypeError, OSError) as exc:
        print(f"fairmodel: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
