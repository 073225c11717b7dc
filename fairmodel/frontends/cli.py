"""The ``fairmodel`` command line.

Exit codes: 0 success, 1 a cross-check that is not ok, 2 bad input (with the message), 3 solver failure or a
result that is not ok, 130 interrupted by Ctrl-C (what was finished is printed and saved first).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from fairmodel_cli import arguments

from .. import expressions as dsl
from .._version import __version__
from ..crosscheck import crosscheck
from ..data import datasets
from ..errors import FairmodelError, OptionError, SolverError
from ..problem import Minimize, Problem
from ..results.plotting import default_frontier_y, plot_results
from ..results.result import _jsonable, check_free, umask
from ..sweeps.frontier import sweep
from ..utilities import display
from . import problemfile

EXIT_OK, EXIT_NOT_OK, EXIT_BAD_INPUT, EXIT_SOLVER, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


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


def _outputs(args, names) -> list[Path]:
    """The result paths under --out, checked before any solving: the directory can be created and written to,
    and existing results need --force."""
    if not getattr(args, "out", None):
        return []
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise OptionError(f"--out {out} is a file; --out names a directory to save the results in")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OptionError(f"--out {out}: cannot create the directory ({exc.strerror or exc}); choose a directory "
                          f"you can write to") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise OptionError(f"--out {out}: the directory is not writable; choose another one")
    paths = [out / name for name in names]
    if not getattr(args, "force", False):
        for p in paths:
            if p.suffix != ".md":
                check_free(p)
            elif p.exists():
                raise OptionError(f"{p} already exists; choose another --out directory or pass --force")
    return paths


def _solve(args) -> int:
    prob, data, spec = _load(args)
    backend = _backend(args, spec)
    targets = _outputs(args, ["result"])
    result = prob.solve(backend=backend, verbose=_verbose(args), **_solve_args(args, spec, backend))
    saved = None
    if targets:
        saved = [str(p) for p in result.save(targets[0], overwrite=True)]
    if args.json:
        _emit_json("result", {"file": str(spec.path), "title": spec.doc.get("title", ""), "result": result.to_dict(),
                              "saved": saved})
    else:
        print(result.summary())
        if saved:
            print(f"saved: {', '.join(saved)}")
    _plot(args, {backend: result})   # after the output: a figure that cannot be drawn loses no result
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_OK if result.ok else EXIT_SOLVER


def _crosscheck(args) -> int:
    prob, data, spec = _load(args)
    exact = _solve_args(args, spec, "exact")
    stochastic = _solve_args(args, spec, "stochastic")
    seed = stochastic.pop("seed")
    targets = _outputs(args, ["exact", "stochastic", "crosscheck.md"])
    report = crosscheck(prob, seed=seed, exact_options=exact, stochastic_options=stochastic,
                        verbose=_verbose(args))
    saved = None
    if targets:
        saved = [str(p) for r, target in zip((report.exact, report.stochastic), targets)
                 for p in r.save(target, overwrite=True)]
        targets[2].write_text(report.to_markdown() + "\n")
        saved.append(str(targets[2]))
    if args.json:
        _emit_json("crosscheck", {"file": str(spec.path), "title": spec.doc.get("title", ""),
                                  "report": report.to_dict(), "saved": saved})
    else:
        print(report.to_markdown())
        if saved:
            print(f"saved: {', '.join(saved)}")
    _plot(args, {"exact": report.exact, "stochastic": report.stochastic}, optimum=report.exact.objective)
    return EXIT_OK if report.ok else EXIT_NOT_OK


def _plot(args, results: dict, optimum=None) -> None:
    """Save the default figure; one that cannot be drawn is a warning on stderr, never the command's verdict."""
    if not args.plot:
        return
    try:
        plot_results(results, optimum=optimum).savefig(args.plot)
    except (FairmodelError, ValueError, OSError) as exc:
        print(f"fairmodel: warning: no figure saved: {exc}", file=sys.stderr)
        return
    print(f"saved: {args.plot}", file=sys.stderr if getattr(args, "json", False) else sys.stdout)


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
    targets = _outputs(args, ["frontier.md", "frontier.json"] + [f"value{i}" for i in range(len(values))])
    if targets and args.force:
        _check_replaceable(Path(args.out))

    def spec_of(value):
        return problemfile.Spec(problemfile.set_value(spec.doc, args.param, value), spec.path)

    def build(value):
        return problemfile.load_spec(spec_of(value))[0]
    frontier = sweep(build, values, param=args.param, backend=backend, verbose=_verbose(args),
                     options_for=lambda value: _solve_args(args, spec_of(value), backend))
    saved = _save_frontier(frontier, targets, replace=bool(args.force))
    if args.json:
        _emit_json("sweep", {"file": str(spec.path), "frontier": frontier.to_dict(), "plot": args.plot,
                             "saved": saved})
    else:
        print(frontier.to_text(full="--json, or --out DIR (frontier.md, frontier.json)"))
        if saved:
            print(f"saved: {', '.join(saved)}")
        if frontier.errors:
            print(f"\n{len(frontier.errors)} value(s) failed; the others are kept", file=sys.stderr)
        if frontier.interrupted:
            print(f"\ninterrupted (Ctrl-C) after {len(frontier.values)} of {len(values)} values; the finished "
                  f"ones are above", file=sys.stderr)
    if args.plot:
        frontier.plot(y=args.y or default_frontier_y(frontier)).savefig(args.plot)   # an unknown --y: OptionError
    if frontier.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if not frontier.errors else EXIT_SOLVER


SWEEP_FILE = re.compile(r"(frontier\.(md|json)|value\d+\.(json|npz))")


def _check_replaceable(out: Path) -> None:
    """--force replaces a sweep's directory as a whole: refuse (before solving) one that holds other files."""
    other = sorted(p.name for p in out.iterdir() if not SWEEP_FILE.fullmatch(p.name))
    if other:
        raise OptionError(f"--out {out} holds files a sweep did not write ({', '.join(other[:5])}"
                          f"{', ...' if len(other) > 5 else ''}); --force replaces the directory's sweep as a whole, "
                          f"so give a sweep's directory or a new one")


@contextlib.contextmanager
def _ctrl_c_held():
    """Ctrl-C is delivered after the block, not inside it (the two renames of a swap happen both or neither)."""
    block = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if block else None
    try:
        yield
    finally:
        if block:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _save_frontier(frontier, targets, replace: bool = False) -> list[str] | None:
    """Write the frontier and the results; with ``replace`` (--force) into a new directory beside --out that then
    takes its place, so no file of an earlier sweep (e.g. value5 of a longer one) stays next to the new ones."""
    if not targets:
        return None
    out = targets[0].parent
    real = out.resolve()
    where = Path(tempfile.mkdtemp(prefix=f".{real.name}.", dir=real.parent)) if replace else out
    try:
        md, js = where / targets[0].name, where / targets[1].name
        md.write_text(frontier.to_markdown() + "\n")
        js.write_text(json.dumps(_jsonable(frontier.to_dict(), None), indent=1))
        for result, target in zip(frontier.results, targets[2:]):
            if result is not None:
                result.save(where / target.name, overwrite=True)
        if replace:
            os.chmod(where, 0o777 & ~umask())
            old = Path(tempfile.mkdtemp(prefix=f".{real.name}.old.", dir=real.parent))
            with _ctrl_c_held():
                os.replace(real, old / real.name)    # the swap: the old sweep aside, the new one in its place
                os.replace(where, real)
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        if replace:
            shutil.rmtree(where, ignore_errors=True)
        raise
    return [str(out / p.name) for p in targets[:2]] + [
        str(out / name) for result, target in zip(frontier.results, targets[2:]) if result is not None
        for name in (target.name + ".json", target.name + ".npz")]


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


COMMANDS = {"demo": _demo, "datasets": _datasets, "solve": _solve, "crosscheck": _crosscheck, "sweep": _sweep,
            "describe": _describe}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``fairmodel_cli.arguments`` (standard library only, so that the entry point answers
    ``--version`` and ``--help`` before the heavy imports), with this package's version."""
    return arguments.build_parser(__version__)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("fairmodel: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SolverError as exc:
        print(f"fairmodel: solver failure: {exc}", file=sys.stderr)
        return EXIT_SOLVER
    except (FairmodelError, ValueError, TypeError, OSError) as exc:
        print(f"fairmodel: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
