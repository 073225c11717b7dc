"""Benchmark: the cost of zeroth-order runs (OGDA-RR at order 0, Maheshwari et al., AISTATS 2022, Algorithm 1), this
code against a baseline checkout, one after the other per case.

Zeroth-order OGDA takes one step per sample: each step asks the value oracle for L_i at a few points near the iterate
(the sphere estimator of Section 4.1) and moves x and y. Its time is Python's overhead on small arrays and the drawing
of the random directions more than arithmetic, so the cost of a run is the cost of a step. Cases: strategic Wasserstein
DRO with strategic features (the default order is 0 there) on the paper's synthetic setup, on bundled data (Communities
with all its columns: 118 directions of 118 coordinates a step) and on Law School's raw columns, and the (30, 4, 3)
stochastic matrix game at order 0. Each is solved with the defaults (``seed=0``) in a fresh process with one BLAS
thread; ``same`` says whether both trees returned the same objective after the same number of epochs.

    python benchmarks/zeroth_order.py --baseline ../old-checkout     # writes its section of docs/benchmarks.md
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import baseline_benchmark, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = [{"name": n} for n in ("wdrsc synthetic n=1000 seed 1", "wdrsc radius 0.2", "wdrsc p=25, 12 strategic",
                               "wdrsc adult balanced 2000, radius 0.05", "raw law school 800, radius 0.02",
                               "matrix game (30, 4, 3), order 0", "wdrsc communities, 118 features, radius 0.01")]

RUN = r'''
import json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import numpy as np
import fairmodel as fm
sys.path.insert(1, "BENCHMARKS")
sys.path.insert(2, "ROOTDIR")
import defaults_minmax as dm
name = json.loads(sys.argv[2])["name"]
if name in dm.STRATEGIC_CASES:
    solve = dm.STRATEGIC_CASES[name]().solve
    kw = {"backend": "stochastic", "seed": 0}
elif name.startswith("wdrsc communities"):
    data = fm.datasets.load_communities()
    y = np.where(data.y > np.median(data.y), -1.0, 1.0)            # +1: a low crime rate
    communities = fm.Dataset(data.X, y, feature_names=data.feature_names, name="communities-binary")
    solve = dm._wdrsc(communities, radius=0.01, features=[8, 9]).solve
    kw = {"backend": "stochastic", "seed": 0}
elif name.startswith("raw law school"):
    from tests.test_minmax_strategic import _raw_law_school
    data = _raw_law_school(800, seed=547)
    w = fm.Weights(data.n_features)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=["lsat", "ugpa"], zeta=0.05), data.y)
    solve = fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=0.02, label_cost=0.5))).solve
    kw = {"backend": "stochastic", "seed": 0}
else:
    game = fm.SaddleProblem.matrix_game(np.random.default_rng(0).standard_normal((30, 4, 3)))
    solve, kw = game.solve, {"method": "ogda-rr", "order": 0, "seed": 0}
start = time.perf_counter()
res = solve(**kw)
print(json.dumps({"seconds": time.perf_counter() - start, "ok": bool(res.ok), "status": res.status,
                  "objective": float(res.objective), "epochs": res.metrics.get("epochs_run")}))
'''.replace("BENCHMARKS", str(Path(__file__).resolve().parent)).replace("ROOTDIR", str(ROOT))


def main(argv=None):
    return baseline_benchmark(__doc__.split("\n\n")[0], "zeroth_order", CASES, RUN, report, ROOT, argv)


def report(rows) -> str:
    base = all("baseline" in r for r in rows)
    header = ["case", "status", "epochs", "time (s)"] + (["baseline (s)", "baseline / this", "same"] if base else [])
    lines, ratios = [], []
    for r in rows:
        this = r["this"]
        line = [r["case"]["name"], this.get("status", this.get("error")), this.get("epochs"),
                f"{this.get('seconds', float('nan')):.1f}"]
        if base:
            other = r["baseline"]
            ratio = other["seconds"] / this["seconds"]
            ratios.append(ratio)
            same = other.get("objective") == this.get("objective") and other.get("epochs") == this.get("epochs")
            line += [f"{other['seconds']:.1f}", f"{ratio:.2f}x", "yes" if same else "no"]
        lines.append(line)
    head = "## The cost of zeroth-order runs (`benchmarks/zeroth_order.py`)\n\n" + __doc__.split("\n\n")[1].replace(
        "\n", " ") + "\n\n"
    summary = "\n"
    if ratios:
        summary = f"\n\nThe baseline's time over this code's: median {statistics.median(ratios):.2f}x.\n"
    return head + table(header, lines) + summary


if __name__ == "__main__":
    main()
