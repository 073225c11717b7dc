"""Benchmark of the assessment and the DP post-processing judge on Dask-backed inputs, side by side with NumPy
in one process.

* ``fm.assess`` on ``--rows`` rows (default 5e6; 3 groups, weighted): the seven decision metrics and the AUC,
  NumPy arrays vs the same columns as Dask arrays in chunks of ``--chunk`` rows (threaded scheduler). The
  largest difference of the sum-type metrics and the AUC sketch's error and reported bound.
* The DP judge (Chzhen, Hebiri, Taturyan 2024: R_beta, U_s, the dual value and KKT residual, one pass) on
  ``--dp-rows`` points (default 1e6; L = 20, so m = 41, K = 2): the in-memory judge (the (n, m) costs and
  policy in memory) vs the judge on a Dask-backed Dataset (base models per chunk, then sums by blocks of
  65,536 rows), with the peak traced allocation of each; and the Dask judge alone on ``--rows`` points.

Run ``python benchmarks/dask_metrics.py`` (writes its section of docs/benchmarks.md); ``--no-write`` only prints.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _report import median_time, peak_memory, table, write_section  # noqa: E402

import numpy as np  # noqa: E402

import fairmodel as fm  # noqa: E402

A = np.array([0.5, -0.3, 0.2, 0.1])
C = np.array([[0.7, -0.4, 0.0, 0.2], [-0.7, 0.4, 0.0, -0.2]])


def eta(X):
    return np.tanh(X @ A)


def tau(X):
    s = X @ C.T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def assess_rows(n, chunk, repeat):
    import dask.array as da
    rng = np.random.default_rng(0)
    g = rng.choice(np.array(["a", "b", "c"]), size=n, p=[0.5, 0.3, 0.2])
    s = rng.normal(size=n) + (g == "c")
    y = (s + rng.normal(size=n) > 0.3).astype(np.int64)
    yp = (s > 0.2).astype(np.int64)
    w = rng.uniform(0.2, 2.0, n)
    cols = [y, yp, s, g, w]
    dcols = [da.from_array(v, chunks=chunk) for v in cols]

    def run(c):
        return fm.assess(c[0], y_pred=c[1], scores=c[2], sensitive_features=c[3], sample_weight=c[4])
    t_np, t_dk = median_time(lambda: run(cols), repeat), median_time(lambda: run(dcols), repeat)
    a, b = run(cols), run(dcols)
    auc = list(a.metrics).index("auc")
    sums = [j for j in range(len(a.metrics)) if j != auc]
    diff = float(np.max(np.abs(a._by[:, sums] - b._by[:, sums])))
    err = float(np.max(np.abs(a._by[:, auc] - b._by[:, auc])))
    bound = max(b.auc_error_bound["by_group"].values())
    return [f"{n:.0e}", n // chunk, t_np, t_dk, t_dk / t_np, f"{diff:.1e}", f"{err:.1e}", f"{bound:.1e}"]


def dp_judge(n, chunk, numpy_too):
    import dask.array as da
    X = np.random.default_rng(1).normal(size=(n, 4))
    post = fm.GridPredictor(eta=eta, tau=tau, L=20, B=1.0)
    prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.02], entropy=1 / 200)
    small = X[:20_000]
    res = prob.solve(backend="stochastic", data=small, seed=0, T=20_000)
    data = fm.Dataset.from_dask(da.from_array(X, chunks=(chunk, 4)))
    row = [f"{n:.0e}"]
    if numpy_too:
        start = time.perf_counter()
        ev_n, peak_n = peak_memory(lambda: prob.evaluate(res, data=X, certify=False))
        row += [time.perf_counter() - start, peak_n]
    else:
        row += ["-", "-"]
    start = time.perf_counter()
    ev_d, peak_d = peak_memory(lambda: prob.evaluate(res, data=data, certify=False))
    row += [time.perf_counter() - start, peak_d]
    row.append(f"{abs(ev_d.objective - ev_n.objective) / abs(ev_n.objective):.1e}" if numpy_too else "-")
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=float, default=5e6)
    parser.add_argument("--dp-rows", type=float, default=1e6)
    parser.add_argument("--chunk", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    n, nd = int(args.rows), int(args.dp_rows)
    load = os.getloadavg()[0]
    t1 = table(["rows", "chunks", "NumPy (s)", "Dask (s)", "Dask / NumPy", "max abs diff, sum metrics",
                "max AUC error", "AUC bound"], [assess_rows(n, args.chunk, args.repeat)])
    t2 = table(["points", "NumPy judge (s)", "NumPy peak (MiB)", "Dask judge (s)", "Dask peak (MiB)",
                "rel. diff R_beta"], [dp_judge(nd, args.chunk, True), dp_judge(n, args.chunk, False)])
    body = (f"## Assessment and DP judge on Dask-backed inputs (`benchmarks/dask_metrics.py`)\n\n"
            f"`fm.assess` (7 decision metrics + AUC, 3 groups, sample weights) on NumPy columns vs the same columns "
            f"as Dask arrays (threaded scheduler, chunks of {args.chunk:,} rows), median of {args.repeat}:\n\n{t1}\n\n"
            f"DP post-processing judge (L = 20, m = 41, K = 2, certify=False), one evaluation each; peak = traced "
            f"Python/NumPy allocations (the in-memory judge holds the (n, m) costs and policy):\n\n{t2}\n\n"
            f"Load average at start: {load:.2f} (2 cores shared with other jobs).")
    print(body)
    if not args.no_write:
        write_section("dask_metrics", body)


if __name__ == "__main__":
    main()
