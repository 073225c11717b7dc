"""Stopping on the judge's checks against the former fixed budgets, on every bundled problem file.

For each problem file of ``examples/problems`` (the bundled problems the defaults were tuned on), the stochastic
backend runs twice in this process, side by side and alternating the order: ``stop="budget"`` (the former fixed
budget of the family's default method) and the default (stop on the judge's checks at checkpoints, the budget a
cap of ten times it). Each row: the median wall time of ``repeat`` runs of each, whether the judged result is ok,
the epochs / outer iterations run, and the ratio new / old. Writes the section "stopping" of docs/benchmarks.md.

    python benchmarks/stopping.py [--repeat 3] [--files a.toml,b.toml] [--threads 1] [--baseline DIR]

``--baseline DIR`` (a checkout of an earlier version, e.g. ``git archive <commit> | tar -x -C DIR``) also runs each
problem with that version's benchmark in a child process, just before or after this one's (alternating), and the
table shows both versions' "stop on the checks" side by side.
"""
from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import fairmodel as fm
from fairmodel.errors import OptionError
from fairmodel.frontends import problemfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section  # noqa: E402

PROBLEMS = Path(__file__).resolve().parent.parent / "examples" / "problems"


def _run(prob, options: dict, stop: str | None):
    extra = {} if stop is None else {"stop": stop}
    start = time.perf_counter()
    result = prob.solve(backend="stochastic", **options, **extra)
    return time.perf_counter() - start, result


def _length(result) -> str:
    m = result.metrics
    for key in ("epochs_run", "outer_iterations", "rounds", "T_run", "iterations"):
        if key in m:
            return f"{m[key]:g}" if isinstance(m[key], (int, float)) else str(m[key])
    return "-"


def measure(path: Path, repeat: int) -> dict:
    prob, _, spec = problemfile.load(path)
    options = problemfile.solve_options(spec, "stochastic")
    options.setdefault("seed", 0)
    row = {"problem": path.stem, "family": getattr(getattr(prob, "family", None), "name", "minmax")}
    times = {"budget": [], "checks": []}
    last = {}
    try:
        for k in range(repeat):
            order = ("budget", None) if k % 2 == 0 else (None, "budget")
            for stop in order:
                seconds, result = _run(prob, options, stop)
                times[stop or "checks"].append(seconds)
                last[stop or "checks"] = result
    except OptionError as exc:       # a problem kind without stop= (nothing to compare)
        row["note"] = f"not compared: {exc}"
        return row
    for key in ("budget", "checks"):
        row[f"{key}_s"] = statistics.median(times[key])
        row[f"{key}_ok"] = last[key].ok
        row[f"{key}_length"] = _length(last[key])
    row["ratio"] = row["checks_s"] / row["budget_s"]
    return row


def measure_baseline(baseline: Path, path: Path, repeat: int) -> dict:
    """The row of ``path`` measured by the benchmark of the code in ``baseline`` (a child process)."""
    env = {**os.environ, "PYTHONPATH": str(baseline)}       # that version's fairmodel, not this one's
    out = subprocess.run([sys.executable, str(baseline / "benchmarks" / "stopping.py"), "--files", path.name,
                          "--repeat", str(repeat), "--no-write"], capture_output=True, text=True, env=env)
    rows = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not rows:
        return {"note": f"the baseline failed: {(out.stderr.strip().splitlines() or ['no output'])[-1]}"}
    return ast.literal_eval(rows[-1])


def _cell(r: dict, key: str) -> str:
    return f"{r[f'{key}_s']:.2f} ({'ok' if r[f'{key}_ok'] else 'NOT ok'}, {r[f'{key}_length']})"


def table(rows: list) -> str:
    before = any("before" in r for r in rows)
    lines = ["| problem | family | fixed budget: s (ok, length) | stop on the checks: s (ok, length) | new / old |",
             "|---|---|---|---|---|"]
    if before:
        lines = ["| problem | family | fixed budget: s (ok, length) | stop on the checks, before: s (ok, length) | "
                 "stop on the checks, after: s (ok, length) | new / old | after / before |",
                 "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "note" in r:
            lines.append(f"| {r['problem']} | {r['family']} | {r['note']} | | |" + (" | |" if before else ""))
            continue
        if before:
            b = r.get("before", {})
            earlier = _cell(b, "checks") if "checks_s" in b else b.get("note", "-")
            versus = f"{r['checks_s'] / b['checks_s']:.2f}" if "checks_s" in b else "-"
            lines.append(f"| {r['problem']} | {r['family']} | {_cell(r, 'budget')} | {earlier} | "
                         f"{_cell(r, 'checks')} | {r['ratio']:.2f} | {versus} |")
            continue
        lines.append(f"| {r['problem']} | {r['family']} | {_cell(r, 'budget')} | {_cell(r, 'checks')} | "
                     f"{r['ratio']:.2f} |")
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    if ratios:
        lines += ["", f"Median ratio new / old over {len(ratios)} problems: **{statistics.median(ratios):.2f}** "
                      f"(min {min(ratios):.2f}, max {max(ratios):.2f}); ok with the fixed budget "
                      f"{sum(r['budget_ok'] for r in rows if 'ratio' in r)}/{len(ratios)}, stopping on the checks "
                      f"{sum(r['checks_ok'] for r in rows if 'ratio' in r)}/{len(ratios)}"
                      + (f" (before: {sum(r['before'].get('checks_ok', False) for r in rows if 'ratio' in r)}"
                         f"/{len(ratios)})" if before else "") + "."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each variant (median; default 3)")
    parser.add_argument("--files", default="", help="comma-separated problem files of examples/problems (default all)")
    parser.add_argument("--threads", type=int, default=None, help="BLAS threads (default: the library's choice)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--baseline", help="a directory holding an earlier version of the code (before / after)")
    parser.add_argument("--baseline-label", default="the baseline", help="how the section names the baseline")
    args = parser.parse_args(argv)
    names = [n for n in args.files.split(",") if n] or sorted(p.name for p in PROBLEMS.glob("*.toml"))
    rows = []
    with fm.thread_limit(args.threads) if args.threads else _nothing():
        for k, name in enumerate(names):
            if args.baseline and k % 2 == 0:
                earlier = measure_baseline(Path(args.baseline).resolve(), PROBLEMS / name, args.repeat)
            row = measure(PROBLEMS / name, args.repeat)
            if args.baseline and k % 2 == 1:
                earlier = measure_baseline(Path(args.baseline).resolve(), PROBLEMS / name, args.repeat)
            if args.baseline:
                row["before"] = earlier
            rows.append(row)
            print(row, flush=True)
    body = ("### Stopping on the judge's checks vs the former fixed budgets\n\n"
            "Each bundled problem file, stochastic backend, seed 0, median of "
            f"{args.repeat} runs of each variant in one process (alternating order). `length`: epochs or outer "
            "iterations run. The machine is shared: compare the two columns of a row, measured side by side.\n\n"
            + (f"'before' is {args.baseline_label}, measured in a child process just before or after each row "
               "(alternating), with the same protocol.\n\n" if args.baseline else "")
            + table(rows))
    print(body)
    if not args.no_write:
        write_section("stopping", body)
    return 0


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    raise SystemExit(main())
