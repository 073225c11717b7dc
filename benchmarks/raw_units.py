"""Exact methods on data in raw units: Adult's CSV file read as a new user reads it (numeric columns in their own units,
fnlwgt about 1e5 beside indicators; categories one-hot) and a census-like synthetic design, each under a bound on a
rate gap (selection rate, equal opportunity, equalized odds at 0.05; logistic loss, radius 5, intercept), solved by the
model-space method (the interior-point core) with defaults. Each row: the status, the judge's Lagrangian gap, the
time, and the objective's difference from Clarabel's objective on the CVXPY program (an independent formulation;
Clarabel calls these answers inaccurate on raw units, but its value is reported).

    python benchmarks/raw_units.py                        # this code; prints the table
    python benchmarks/raw_units.py --baseline DIR --doc   # also the code in DIR (a checkout), each case in a fresh
                                                          # process per version; writes docs/benchmarks.md
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import time
import warnings
from importlib import resources
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
GAPS = ("selection_rate_gap", "equal_opportunity_gap", "equalized_odds_gap")
CASES = [(source, sensitive, n, gap) for source, sensitive, n in
         (("adult", "sex", 4000), ("adult", "race", 4000), ("adult", "race", 8000), ("census-like", "", 2000),
          ("census-like", "", 4000)) for gap in GAPS]


def load(fm, source: str, sensitive: str, n: int):
    if source == "census-like":       # the design of the tests of the version run (its tests/ beside its package)
        sys.path.insert(0, str(Path(fm.__file__).resolve().parent.parent / "tests"))
        from test_raw_units import raw_design
        return raw_design(n, seed=0)
    import pandas as pd
    raw = resources.files("fairmodel").joinpath("_data").joinpath("adult.csv.gz").read_bytes()
    df = pd.read_csv(io.BytesIO(gzip.decompress(raw))).replace("?", np.nan).dropna().reset_index(drop=True)
    df["income"] = np.where(df["income"] == ">50K", 1.0, -1.0)
    with warnings.catch_warnings():          # the Dataset warns that the columns are badly scaled: the point here
        warnings.simplefilter("ignore")
        data = fm.Dataset.from_frame(df, target="income", sensitive=sensitive, name=f"adult-raw({sensitive})")
    return data.subsample(n, seed=0) if n else data


def run_case(index: int) -> dict:
    import fairmodel as fm
    source, sensitive, n, gap = CASES[index]
    data = load(fm, source, sensitive, n)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))), [getattr(fm, gap)(s, data) <= 0.05])
    start = time.perf_counter()
    try:
        result = prob.solve(backend="exact", method="model_space")
        record = {"status": result.status, "objective": result.objective,
                  "lagrangian_gap": result.certificate.get("lagrangian_gap")}
    except Exception as exc:            # a stall raises: recorded, the table goes on
        record = {"status": f"error: {type(exc).__name__}", "objective": None, "lagrangian_gap": None}
    record["seconds"] = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record["clarabel"] = prob.solve(backend="exact", method="cvxpy", solver="CLARABEL").objective
    return {"case": index, "rows": data.n_samples, **record}


def in_subprocess(tree: str, index: int) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, __file__, "--child", str(index)], env=env, capture_output=True, text=True,
                         timeout=1800)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"status": "crashed: " + out.stderr[-200:], "seconds": None}


def cell(record: dict) -> str:
    if record.get("objective") is None:
        return f"{record['status']} ({record['seconds']:.2f} s)" if record.get("seconds") else record["status"]
    diff = abs(record["objective"] - record["clarabel"]) if record.get("clarabel") is not None else float("nan")
    return (f"{record['status']}, gap {record['lagrangian_gap']:.1e}, {record['seconds']:.2f} s, "
            f"vs Clarabel {diff:.0e}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", help="a directory holding an earlier version of the code")
    parser.add_argument("--doc", action="store_true", help="write the docs/benchmarks.md section")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(run_case(args.child)))
        return 0
    trees = [("this code", str(HERE.parent))] + ([("before", args.baseline)] if args.baseline else [])
    rows = []
    for index, (source, sensitive, n, gap) in enumerate(CASES):
        records = [in_subprocess(tree, index) for _, tree in trees]
        label = f"{source}{' by ' + sensitive if sensitive else ''}, {records[0].get('rows', n):,} rows"
        rows.append([label, gap.replace("_", " ")] + [cell(r) for r in reversed(records)])
        print(" | ".join(rows[-1]), flush=True)
    header = ["data", "bound (<= 0.05)"] + [label for label, _ in reversed(trees)]
    sys.path.insert(0, str(HERE))
    from _report import table, write_section
    text = table(header, rows)
    print(text)
    if args.doc:
        ok = [sum(r[2 + k].split(",")[0] == "optimal" for r in rows) for k in range(len(trees))]   # table's order
        write_section("raw_units", "## Exact methods on raw units (`benchmarks/raw_units.py`)\n\n"
                      "Logistic loss, radius 5, intercept, a rate-gap bound of 0.05; the model-space method with "
                      "defaults, one BLAS thread, each case in a fresh process per version (the versions one after "
                      "the other per row). Cells: status, the judge's Lagrangian gap, the solve time, and the "
                      "objective's distance to Clarabel's on the CVXPY program. Optimal: "
                      + ", ".join(f"{label} {k} / {len(rows)}" for (label, _), k in zip(reversed(trees), ok))
                      + ".\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
