"""Benchmark: group DRO with the hinge loss where the stochastic default needs its second run, this code against a
baseline checkout.

Cases: synthetic data of 1,000 rows in three groups (shares 0.5 / 0.3 / 0.2) with 100, 150 and 200 features (the
generator of the held-out hunts: normal features, three of them shifted by group, labels from a logistic model),
radius 5, two data seeds each; 5,000 rows of Adult by race and by sex at radius 5 (seed 1). Every case declares
``fm.max(fm.group_mean(fm.hinge_loss(s, y), groups))`` with an intercept, and solves with ``backend="exact"`` and
with the default stochastic method (``prob.solve(backend="stochastic", seed=0)``) in a fresh process with one BLAS
thread; ``--baseline DIR`` runs the stochastic side with the code in DIR too, one after the other per case.

    python benchmarks/gdro_hinge_restarts.py --baseline ../old-checkout     # writes its section of docs/benchmarks.md
    python benchmarks/gdro_hinge_restarts.py --rows run.jsonl               # the table from printed rows
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import baseline_benchmark, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = ([{"data": "synthetic", "d": d, "seed": seed} for d in (100, 150, 200) for seed in (607, 608)]
         + [{"data": "adult", "sensitive": s} for s in ("race", "sex")])

# one case in a fresh process of the tree given as its first argument (so that a baseline imports its own code)
RUN = r'''
import json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import numpy as np
import fairmodel as fm
c = json.loads(sys.argv[2])
if c["data"] == "synthetic":
    rng = np.random.default_rng(c["seed"])
    g = rng.choice(3, size=1000, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(1000, c["d"])) + 0.5 * g[:, None] * (np.arange(c["d"]) < 3)
    signal = 2 * X @ (rng.normal(size=c["d"]) / np.sqrt(c["d"])) + 0.5 * (g - g.mean())
    y = np.where(rng.random(1000) < 1 / (1 + np.exp(-signal)), 1.0, -1.0)
    data = fm.Dataset(X, y, np.array([f"g{k}" for k in g]))
else:
    data = fm.datasets.load_adult(sensitive=c["sensitive"]).subsample(5000, seed=1)
w = fm.Weights(data.n_features, radius=5.0, intercept=True)
prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))))
out = {}
if sys.argv[3] == "exact":
    out["exact"] = prob.solve(backend="exact").objective
start = time.perf_counter()
res = prob.solve(backend="stochastic", seed=0)
gap = res.certificate.get("duality_gap", float("nan"))
tolerance = next((ch["tolerance"] for ch in res.checks if ch["name"].startswith("duality gap")), float("nan"))
out.update(ok=bool(res.ok), status=res.status, seconds=time.perf_counter() - start, objective=res.objective,
           epochs=res.metrics.get("epochs_run"), first=res.metrics.get("first_run", {}).get("epochs_run"),
           stages=res.metrics.get("stages"), ratio=gap / tolerance)
print(json.dumps(out))
'''


def main(argv=None):
    return baseline_benchmark(__doc__.split("\n\n")[0], "gdro_hinge_restarts", CASES, RUN, report, ROOT, argv)


def _name(case: dict) -> str:
    return (f"synthetic, d = {case['d']}, seed {case['seed']}" if case["data"] == "synthetic"
            else f"Adult by {case['sensitive']}, 5,000 rows")


def _cells(r: dict, exact: float) -> list:
    if "error" in r:
        return ["error", "-", "-", "-", "-", "-"]
    return [("ok" if r["ok"] else "NOT ok") + f" ({r['status']})", f"{r['ratio']:.2f}", r["epochs"],
            r.get("stages") or "-", f"{r['seconds']:.1f}", f"{r['objective'] - exact:.2e}"]


def report(rows) -> str:
    base = any("baseline" in r for r in rows)
    header = ["case", "first run (epochs)", "this code", "gap / tol", "epochs", "stages", "time (s)", "- exact"]
    if base:
        header += ["baseline", "gap / tol", "epochs", "time (s)", "- exact"]
    body = []
    for r in rows:
        exact = r["this"].get("exact", float("nan"))
        line = [_name(r["case"]), r["this"].get("first") or "-", *_cells(r["this"], exact)]
        if base:
            cells = _cells(r["baseline"], exact)
            line += [cells[0], cells[1], cells[2], cells[4], cells[5]]
        body.append(line)
    ok = sum(r["this"].get("ok", False) for r in rows)
    text = ("## Group DRO with the hinge loss: restarted stages (`benchmarks/gdro_hinge_restarts.py`)\n\n"
            "`python benchmarks/gdro_hinge_restarts.py`: group DRO with the hinge loss at radius 5, the default "
            "stochastic method (`seed=0`, one BLAS thread, a fresh process per case). `first run`: the epochs of the "
            "first run (the curvature step) before the second; `epochs`: the second run's (all stages); `gap / tol`: the "
            "duality gap over its tolerance; "
            "`- exact`: the objective minus the exact optimum. This code runs the second run (the radius step) in "
            "restarted stages with the step halved at each; the baseline runs it once with falling steps.\n\n"
            + table(header, body) + f"\n\nThis code: {ok} of {len(rows)} ok"
            + (f"; the baseline: {sum(r['baseline'].get('ok', False) for r in rows)} of {len(rows)}." if base
               else "."))
    return text


if __name__ == "__main__":
    main()
