"""Time to an ok result on the bundled problems of AUC fairness (Yao, Lin, Yang 2023) and partial fairness (He,
Huang, Yao, Lin 2025): the old fixed budgets (``stop="budget"``) against stopping on the judge's checks (the
default), in one process, side by side.

Problems: ``examples/problems/auc_fairness.toml`` (Adult, 5,000 rows; also the problem of
``examples/auc_fairness_crosscheck.py``), ``examples/problems/partial_fairness.toml`` (Law School, 1,000 rows) and
the 500-row problem of ``examples/partial_fairness_crosscheck.py``. Each (problem, backend, method) is solved with
the old rule and the new one, alternately, ``--repeat`` times (median wall time of ``prob.solve``, the judge
included). The ratio new / old is the speed-up (< 1: faster); "ok" is the judge's verdict.

Run ``python benchmarks/stopping_auc_partial.py`` (``--write`` puts the table into docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _report import table, write_section  # noqa: E402

from fairmodel.frontends import problemfile  # noqa: E402

PROBLEMS = HERE.parent / "examples" / "problems"


def from_file(name: str, rows: int | None = None):
    spec = problemfile.read(PROBLEMS / name)
    if rows is not None:
        spec.doc["data"]["subsample"] = rows
    return problemfile.build_problem(spec, problemfile.load_data(spec))


CASES = [  # (problem label, builder, backend, method, options of both rules)
    ("auc_fairness.toml (Adult 5,000)", lambda: from_file("auc_fairness.toml"), "stochastic", "sfls", {}),
    ("auc_fairness.toml (Adult 5,000)", lambda: from_file("auc_fairness.toml"), "stochastic", "iqrc", {}),
    ("partial_fairness.toml (Law School 1,000)", lambda: from_file("partial_fairness.toml"), "exact", "idca", {}),
    ("partial_fairness.toml (Law School 1,000)", lambda: from_file("partial_fairness.toml"), "stochastic", "idca", {}),
    ("partial_fairness.toml (Law School 1,000)", lambda: from_file("partial_fairness.toml"), "stochastic", "ssg", {}),
    ("partial_fairness.toml (Law School 1,000)", lambda: from_file("partial_fairness.toml"), "stochastic", "penalty",
     {"lam": 1.0}),
    ("partial_fairness_crosscheck.py (Law School 500)", lambda: from_file("partial_fairness.toml", 500), "exact",
     "idca", {}),
    ("partial_fairness_crosscheck.py (Law School 500)", lambda: from_file("partial_fairness.toml", 500),
     "stochastic", "idca", {}),
]


def solve(prob, backend, method, rule, options):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"seed": 0} if backend == "stochastic" else {}
        res = prob.solve(backend, method=method, stop=rule, **kw, **options)
    return time.perf_counter() - start, res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows, ratios = [], []
    for label, build, backend, method, options in CASES:
        prob = build()
        times = {"budget": [], "checks": []}
        results = {}
        for _ in range(args.repeat):
            for rule in ("budget", "checks"):
                elapsed, res = solve(prob, backend, method, rule, options)
                times[rule].append(elapsed)
                results[rule] = res
        old, new = (statistics.median(times[r]) for r in ("budget", "checks"))
        o, n = results["budget"], results["checks"]
        ratio = new / old
        if o.ok and n.ok:
            ratios.append(ratio)
        rows.append([label, f"{backend} {method}", f"{old:.3g}", "ok" if o.ok else o.status, f"{o.objective:.6g}",
                     f"{new:.3g}", "ok" if n.ok else n.status, f"{n.objective:.6g}", f"{ratio:.2f}",
                     f"{n.metrics.get('checks_run', '-')} / {n.metrics.get('check_time_s', 0.0):.2g} s"])
        print(" | ".join(rows[-1]), flush=True)
    body = table(["problem", "method", "old budget s", "old verdict", "old objective", "new s", "new verdict",
                  "new objective", "new / old", "checks (count / time)"], rows)
    median = statistics.median(ratios) if ratios else float("nan")
    summary = (f"Median new / old over the methods where both are ok: {median:.2f} ({len(ratios)} of {len(rows)}); "
               f"{args.repeat} run(s) each, alternating old and new.")
    print(body)
    print(summary)
    if args.write:
        write_section("stopping_auc_partial", "Time to an ok result, old fixed budget vs stopping on the judge's "
                      "checks (AUC fairness, partial fairness)\n\n" + body + "\n\n" + summary)


if __name__ == "__main__":
    main()
