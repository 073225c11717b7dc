"""Shared helpers of the benchmarks: timing medians, peak memory, and writing a section of docs/benchmarks.md.

Each benchmark owns one section of ``docs/benchmarks.md`` between the markers
``<!-- BEGIN name -->`` and ``<!-- END name -->`` and rewrites only that section, stamped with the machine,
the date and the library versions, so that tables written by different runs never overwrite each other.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def machine() -> str:
    import cvxpy
    import numpy
    import scipy
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, numpy {numpy.__version__}, "
            f"scipy {scipy.__version__}, cvxpy {cvxpy.__version__}; {datetime.date.today().isoformat()}")


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the section ``name`` of docs/benchmarks.md (or of ``doc``) with ``body`` and a
    machine stamp."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    block = f"<!-- BEGIN {name} -->\n{body.rstrip()}\n\n_Measured on: {machine()}._\n<!-- END {name} -->"
    pattern = re.compile(rf"<!-- BEGIN {re.escape(name)} -->.*?<!-- END {re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text)


def median_time(fn, repeat: int = 5) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_memory(fn):
    """(result, peak traced Python/NumPy allocation in MiB) of ``fn()``; CVXPY's C solvers are not traced."""
    tracemalloc.start()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak / 2 ** 20


def table(header: list[str], rows: list[list]) -> str:
    """A Markdown table."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.3g}"
        return str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def printed_rows(paths) -> list:
    """The rows printed (one JSON object per line) by earlier runs into the files ``paths`` (None: no rows)."""
    return [json.loads(line) for path in paths or [] for line in path.read_text().splitlines() if line.startswith("{")]


def add_report_options(parser) -> None:
    """``--no-write`` and ``--rows``: the options of a benchmark that prints one JSON row per case and writes its
    section of docs/benchmarks.md from the rows (its own, or those printed by earlier runs)."""
    parser.add_argument("--no-write", action="store_true", help="print only; do not write docs/benchmarks.md")
    parser.add_argument("--rows", type=Path, nargs="+",
                        help="report the rows printed (one JSON object per line) by earlier runs instead of running")


def run_in_tree(script: str, tree: Path, *args: str, timeout: float = 1800) -> dict:
    """Run ``script`` (Python source whose first argument is a checkout: it imports that checkout's fairmodel) in a
    fresh process with one BLAS thread, and return the JSON object its last printed line holds ({"error": ...} when
    it fails): so that a baseline checkout and this one are measured the same way."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", script, str(tree), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def baseline_benchmark(description: str, section: str, cases: list, script: str, report, root: Path,
                       argv=None) -> list:
    """The main of a benchmark that runs ``script`` (:func:`run_in_tree`; its arguments: the case as JSON, then
    "exact" to solve the exact side too, else "-") on every case with the checkout ``root`` and, with ``--baseline
    DIR``, with the checkout in DIR, one after the other per case; prints one JSON row per case ({"case", "this",
    "baseline"}) and writes the section ``section`` of docs/benchmarks.md from ``report(rows)`` and ``--note``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--baseline", type=Path, help="another checkout: the stochastic side also runs with its code")
    ap.add_argument("--note", default="", help="a sentence added under the table (how the rows were measured)")
    add_report_options(ap)
    args = ap.parse_args(argv)
    rows = printed_rows(args.rows) if args.rows else []
    for case in ([] if args.rows else cases):
        row = {"case": case, "this": run_in_tree(script, root, json.dumps(case), "exact")}
        if args.baseline is not None:
            row["baseline"] = run_in_tree(script, args.baseline.resolve(), json.dumps(case), "-")
        print(json.dumps(row), flush=True)
        rows.append(row)
    text = report(rows).rstrip("\n") + (f"\n\n{args.note}\n" if args.note else "\n")
    print(text)
    if not args.no_write:
        write_section(section, text)
    return rows
