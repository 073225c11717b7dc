"""Shared runner of the defaults benchmarks (``benchmarks/defaults_<family>.py``): problem x data cases the
defaults were not tuned on, each cross-checked with ``fm.crosscheck(prob, seed=0)`` and the library defaults only.

A case is a name, a builder returning the problem (and the keyword arguments of ``fm.crosscheck``, e.g. the exact
method for a network-free problem) and a one-line note of what makes it different from the bundled problems. The
runner prints one row per case: ok, the exact and stochastic solve times, and for a case that is not ok the failed
checks and the results' messages (which say what to try).
"""
from __future__ import annotations

import argparse
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Callable

from _report import table, write_section


@dataclass
class Case:
    name: str
    build: Callable          # () -> problem, or (problem, crosscheck keyword arguments)
    note: str
    tags: tuple = field(default_factory=tuple)   # e.g. ("fast",): the subset the test suite runs


def run_case(case: Case) -> dict:
    """Cross-check one case with the defaults; a dict with ok, times, what failed and the messages."""
    import fairmodel as fm
    start = time.perf_counter()
    try:
        built = case.build()
        prob, kwargs = built if isinstance(built, tuple) else (built, {})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = fm.crosscheck(prob, seed=0, **kwargs)
    except Exception as exc:          # a case that raises is reported, not hidden
        return {"case": case.name, "ok": False, "exact_s": float("nan"), "stochastic_s": float("nan"),
                "failed": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(),
                "total_s": time.perf_counter() - start}
    failed = [f"{c.name} = {c.value:.3g} > {c.tolerance:.3g}" for c in report.failed()]
    notes = [f"{r.backend} {r.status}: {r.message}" for r in (report.exact, report.stochastic) if not r.ok]
    return {"case": case.name, "ok": report.ok, "exact_s": report.exact.timings.get("solve", float("nan")),
            "stochastic_s": report.stochastic.timings.get("solve", float("nan")),
            "failed": "; ".join(failed + notes), "report": report, "total_s": time.perf_counter() - start}


def main(cases: list[Case], section: str, title: str) -> list[dict]:
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--only", nargs="*", help="case names (substrings) to run")
    parser.add_argument("--fast", action="store_true", help="only the cases tagged fast (the test subset)")
    parser.add_argument("--write", action="store_true", help=f"write the table into docs/benchmarks.md ({section})")
    args = parser.parse_args()
    chosen = [c for c in cases if (not args.only or any(s in c.name for s in args.only))
              and (not args.fast or "fast" in c.tags)]
    rows = []
    for case in chosen:
        row = run_case(case)
        rows.append(row)
        print(f"{row['case']}: {'ok' if row['ok'] else 'NOT OK'} (exact {row['exact_s']:.3g} s, stochastic "
              f"{row['stochastic_s']:.3g} s) {row['failed']}", flush=True)
    n_ok = sum(r["ok"] for r in rows)
    body = table(["case", "what differs", "ok", "exact s", "stochastic s", "what failed"],
                 [[r["case"], c.note, "ok" if r["ok"] else "NOT OK", f"{r['exact_s']:.3g}",
                   f"{r['stochastic_s']:.3g}", r["failed"][:300]] for r, c in zip(rows, chosen)])
    summary = f"{n_ok} of {len(rows)} cases ok with the defaults ({100 * n_ok / max(len(rows), 1):.0f} %)."
    print()
    print(body)
    print(summary)
    if args.write:
        write_section(section, f"{title}\n\n{body}\n\n{summary}")
    return rows
