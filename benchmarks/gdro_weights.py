"""Benchmark: sample-weighted group DRO with the default stochastic method, this code against a baseline checkout.

Cases: synthetic data (the generator of the held-out hunts: normal features, three of them shifted by group, labels from
a logistic model) of 1,000 rows with 150 features in three groups (shares 0.5 / 0.3 / 0.2), hinge loss, radius 3,
lognormal(0, 0.75) weights, and of 500 rows with 200 features in two groups (0.6 / 0.4), logistic loss, radius 10,
uniform(0.2, 5) weights, three data seeds each; 10,000 Adult rows by race (hinge and logistic, radius 5, lognormal(0,
0.5) weights). Every case declares ``fm.max(fm.group_mean(loss(s, y, sample_weight=sw), groups))`` with an intercept
and solves it with ``backend="exact"`` and with the default stochastic method (``seed=0``) in a fresh process with one
BLAS thread; ``--baseline DIR`` runs the stochastic side with the code in DIR too, one after the other per case.

    python benchmarks/gdro_weights.py --baseline ../old-checkout     # writes its section of docs/benchmarks.md
    python benchmarks/gdro_weights.py --rows run.jsonl               # the table from printed rows
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import baseline_benchmark, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = ([{"data": "synthetic", "n": 1000, "d": 150, "shares": [0.5, 0.3, 0.2], "loss": "hinge", "radius": 3.0,
           "weights": "lognormal", "seed": seed} for seed in (1404, 1450, 1451)]
         + [{"data": "synthetic", "n": 500, "d": 200, "shares": [0.6, 0.4], "loss": "logistic", "radius": 10.0,
             "weights": "uniform", "seed": seed} for seed in (1408, 1450, 1451)]
         + [{"data": "adult", "loss": loss, "radius": 5.0, "weights": "lognormal", "seed": 7}
            for loss in ("hinge", "logistic")])

# one case in a fresh process of the tree given as its first argument (so that a baseline imports its own code)
RUN = r'''
import json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import numpy as np
import fairmodel as fm
c = json.loads(sys.argv[2])
rng = np.random.default_rng(c["seed"])
if c["data"] == "synthetic":
    n, d = c["n"], c["d"]
    g = rng.choice(len(c["shares"]), size=n, p=c["shares"])
    X = rng.normal(size=(n, d)) + 0.5 * g[:, None] * (np.arange(d) < 3)
    signal = 2 * X @ (rng.normal(size=d) / np.sqrt(d)) + 0.5 * (g - g.mean())
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-signal)), 1.0, -1.0)
    data = fm.Dataset(X, y, np.array([f"g{k}" for k in g]))
else:
    data = fm.datasets.load_adult(sensitive="race").subsample(10000, seed=c["seed"])
sw = rng.lognormal(0.0, 0.75 if c["data"] == "synthetic" else 0.5, data.n_samples) if c["weights"] == "lognormal" \
    else rng.uniform(0.2, 5.0, data.n_samples)
w = fm.Weights(data.n_features, radius=c["radius"], intercept=True)
loss = getattr(fm, c["loss"] + "_loss")(data.score(w), data.y, sample_weight=sw)
prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(loss, data.groups))))
out = {}
if sys.argv[3] == "exact":
    out["exact"] = prob.solve(backend="exact").objective
start = time.perf_counter()
res = prob.solve(backend="stochastic", seed=0)
worst = max(res.checks, key=lambda ch: ch["value"] / ch["tolerance"] if ch["tolerance"] > 0 else 0.0)
out.update(ok=bool(res.ok), status=res.status, seconds=time.perf_counter() - start, objective=res.objective,
           family=res.family, epochs=res.metrics.get("epochs_run"), ratio=worst["value"] / worst["tolerance"])
print(json.dumps(out))
'''


def main(argv=None):
    return baseline_benchmark(__doc__.split("\n\n")[0], "gdro_weights", CASES, RUN, report, ROOT, argv)


def _name(case: dict) -> str:
    if case["data"] == "adult":
        return f"Adult by race, 10,000 rows, {case['loss']}"
    return f"synthetic {case['n']:,} x {case['d']}, {case['loss']}, seed {case['seed']}"


def _cells(r: dict, exact: float) -> list:
    if "error" in r:
        return ["error: " + r["error"][:60], "-", "-", "-", "-", "-"]
    return [r["family"], ("ok" if r["ok"] else "NOT ok") + f" ({r['status']})", f"{r['ratio']:.2f}", r["epochs"],
            f"{r['seconds']:.1f}", f"{r['objective'] - exact:.2e}"]


def report(rows) -> str:
    base = any("baseline" in r for r in rows)
    columns = ["reduction", "status", "worst check / tol", "epochs", "time (s)", "- exact"]
    header = ["case", *columns] + ([f"baseline: {c}" for c in columns] if base else [])
    body = []
    for r in rows:
        exact = r["this"].get("exact", float("nan"))
        body.append([_name(r["case"]), *_cells(r["this"], exact), *(_cells(r["baseline"], exact) if base else [])])
    ok = sum(r["this"].get("ok", False) for r in rows)
    return ("## Sample-weighted group DRO (`benchmarks/gdro_weights.py`)\n\n"
            "`python benchmarks/gdro_weights.py`: `fm.max(fm.group_mean(loss(s, y, sample_weight=sw), groups))`, the "
            "default stochastic method (`seed=0`, one BLAS thread, a fresh process per case). `reduction`: the family "
            "that solved it (this code: the group-DRO family, ALEG drawing each group's rows in proportion to their "
            "weights; the baseline: the generic convex lowering, its primal-dual method); `worst check / tol`: the "
            "check farthest from passing over its tolerance (at most 1 when ok); `- exact`: the objective minus the "
            "exact optimum.\n\n"
            + table(header, body) + f"\n\nThis code: {ok} of {len(rows)} ok"
            + (f"; the baseline: {sum(r['baseline'].get('ok', False) for r in rows)} of {len(rows)}." if base
               else "."))


if __name__ == "__main__":
    main()
