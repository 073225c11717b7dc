"""Benchmark: the runs of the true-rate continuation started from the quadratic penalty's point near the previous
answer, this code against a baseline checkout.

Cases: the full-size rows of ``benchmarks/rates.py`` (all rows of the 70 % training split, ramp width 0.5, logistic
loss + 1e-4 ||w||^2, ``prob.solve(backend="exact")``) that ran more than one IDCA run when last measured: Adult by
race (five groups) at every bound, Adult by sex under equalized odds at 0.02 and 0.01, Communities and Crime under
demographic parity at 0.05 and 0.02. Each case runs in a fresh process with one BLAS thread; ``--baseline DIR`` runs
it with the code in DIR too, one after the other per case.

    python benchmarks/rate_restarts.py --baseline ../old-checkout     # writes its section of docs/benchmarks.md
    python benchmarks/rate_restarts.py --rows run.jsonl               # the table from printed rows
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import baseline_benchmark, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = ([{"data": "adult_race", "kind": k, "eps": e} for k in ("dp", "eo", "eodds") for e in (0.1, 0.05, 0.02, 0.01)]
         + [{"data": "adult", "kind": "eodds", "eps": e} for e in (0.02, 0.01)]
         + [{"data": "communities", "kind": "dp", "eps": e} for e in (0.05, 0.02)])

# one case in a fresh process of the tree given as its first argument (so that a baseline imports its own code);
# the data and the declaration are those of benchmarks/rates.py, read from this checkout
RUN = r'''
import json, sys, time, warnings
from pathlib import Path
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import numpy as np
import fairmodel as fm
sys.path.insert(1, "BENCHMARKS")
import rates
c = json.loads(sys.argv[2])
train, test = rates.DATASETS[c["data"]]().split([0.7, 0.3], seed=0)
w = fm.Weights(train.n_features, intercept=True)
s = train.score(w)
gap = rates.CONSTRAINTS[c["kind"]][1](s, train, surrogate="ramp", width=0.5)
prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, train.y)) + rates.L2 * fm.sum_squares(w)),
                  [(gap <= c["eps"]).named("gap")])
start = time.perf_counter()
res = prob.solve(backend="exact")
seconds = time.perf_counter() - start
theta = np.asarray(res.variables[w.name]).ravel()
steps = res.metrics.get("rate_steps", [])
print(json.dumps({"ok": bool(res.ok), "status": res.status, "seconds": seconds, "objective": res.objective,
                  "true_gap": rates.true_gap(c["kind"], train.X @ theta[:-1] + theta[-1] > 0, train.y,
                                             train.groups.codes),
                  "runs": max(1, len(steps)), "outer": sum(st["outer_iterations"] for st in steps)
                  or res.metrics["outer_iterations"],
                  "accuracy": float(np.mean(np.where(test.X @ theta[:-1] + theta[-1] > 0, 1, -1) == test.y))}))
'''.replace("BENCHMARKS", str(Path(__file__).resolve().parent))


def main(argv=None):
    return baseline_benchmark(__doc__.split("\n\n")[0], "rate_restarts", CASES, RUN, report, ROOT, argv)


def _cells(r: dict, eps: float) -> list:
    if "error" in r:
        return ["error: " + r["error"][:60], "-", "-", "-", "-", "-", "-"]
    return [("ok" if r["ok"] else "NOT ok") + f" ({r['status']})", f"{r['true_gap']:.4f}", r["runs"], r["outer"],
            f"{r['objective']:.5f}", f"{r['accuracy']:.3f}", f"{r['seconds']:.1f}"]


def report(rows) -> str:
    base = any("baseline" in r for r in rows)
    header = ["data", "rate", "bound", "this code", "true gap", "runs", "outer", "objective", "test acc", "time (s)"]
    if base:
        header += ["baseline", "true gap", "runs", "outer", "objective", "test acc", "time (s)", "time ratio"]
    body, ratios = [], []
    for r in rows:
        c = r["case"]
        line = [c["data"], c["kind"], c["eps"], *_cells(r["this"], c["eps"])]
        if base:
            line += _cells(r["baseline"], c["eps"])
            if "seconds" in r["this"] and "seconds" in r["baseline"]:
                ratios.append(r["baseline"]["seconds"] / r["this"]["seconds"])
                line.append(f"{ratios[-1]:.1f}x")
            else:
                line.append("-")
        body.append(line)
    met = sum(r["this"].get("true_gap", 1.0) <= r["case"]["eps"] + 1e-3 for r in rows)
    total = sum(r["this"].get("seconds", 0.0) for r in rows)
    text = ("## True-rate continuation: runs started near the previous answer (`benchmarks/rate_restarts.py`)\n\n"
            "`python benchmarks/rate_restarts.py --baseline DIR`: the full-size rows of the true-rate table that "
            "needed more than one IDCA run (ramp width 0.5, logistic loss + 1e-4 ||w||^2, exact IDCA with its "
            "defaults; one BLAS thread, a fresh process per case, the two codes one after the other per case). "
            "`runs`: IDCA runs (the first and the continuation's); `outer`: their outer iterations in all; `true "
            "gap`: the training decisions' largest pairwise gap, which the judge checks against the bound + 1e-3; "
            "`test acc`: accuracy on the 30 % test split. This code starts each continuation run at the quadratic "
            "penalty's point from the previous answer (at the new ramp bounds); the baseline pulls the previous "
            "answer back toward w = 0 until it meets them.\n\n"
            + table(header, body)
            + f"\n\nThis code: the true gap within the bound + 1e-3 in {met} of {len(rows)} rows, {total:.0f} s in all"
            + (f"; the baseline: {sum(r['baseline'].get('true_gap', 1.0) <= r['case']['eps'] + 1e-3 for r in rows)}"
               f" of {len(rows)}, {sum(r['baseline'].get('seconds', 0.0) for r in rows):.0f} s in all; baseline time "
               f"over this code's time: median {statistics.median(ratios):.1f}x, {min(ratios):.1f}x to "
               f"{max(ratios):.1f}x." if base and ratios else "."))
    return text


if __name__ == "__main__":
    main()
