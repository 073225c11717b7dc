"""Benchmarks of the generic stochastic lowering (variance-reduced mirror-prox on the Lagrangian), written into
docs/benchmarks.md (section "generic").

1. One composition as n grows: group DRO under equal opportunity (Donini et al. 2018) on a synthetic logistic
   task (d = 20, three groups of shares 0.6 / 0.3 / 0.1, eps = 0.05), n = 1e3 .. 1e6. The exact CVXPY program
   (Clarabel) against the generic lowering with its defaults (40 epochs); every (method, n) runs in a fresh
   subprocess so that its peak resident memory is its own. The generic result is judged on the full data:
   objective gap to the exact optimum, constraint violation, certified Lagrangian gap.
2. Plain group DRO, where both apply: the generic lowering against ALEG, the paper's specialised method
   (Yu, Cai, Jiang, Zhang 2024), on Adult by race and on the synthetic task at n = 1e5: wall time of the
   default budgets and the max-group-risk gap to the exact optimum; medians of 3 seeds in one process, with
   the default BLAS threads and with one thread.

    python benchmarks/generic.py            # full configuration (about 30 minutes here)
    python benchmarks/generic.py --quick    # small sizes, to check the script
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fairmodel as fm  # noqa: E402

from _report import table, write_section  # noqa: E402


def synthetic(n, d=20, seed=0):
    """Logistic labels with a group shift; group 2 is small and shifted in three features."""
    rng = np.random.default_rng(seed)
    g = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    X = rng.normal(size=(n, d)) + 0.5 * g[:, None] * (np.arange(d) < 3)
    beta = np.random.default_rng(1).normal(size=d) / np.sqrt(d)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-(2 * X @ beta + 0.5 * (g - 1)))), 1.0, -1.0)
    return fm.Dataset(X, y, groups=g, name=f"synthetic(n={n})")


def equal_opportunity(data):
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    m = fm.group_mean(s, data.groups, where=data.y > 0)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.max(m) - fm.min(m) <= 0.05])


def group_dro(data):
    w = fm.Weights(data.n_features, radius=5.0)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))


def child(kind, n):
    """One (method, n) measurement of part 1 in this process; prints JSON."""
    prob = equal_opportunity(synthetic(n))
    start = time.perf_counter()
    if kind == "exact":
        res = prob.solve()
        out = {"objective": res.objective, "seconds": res.timings["solve"], "status": res.status}
    else:
        res = prob.solve(backend="stochastic", seed=0)
        out = {"objective": res.objective, "seconds": res.timings["solve"], "judge": res.timings["judge"],
               "violation": res.max_violation, "gap": res.certificate["lagrangian_gap"],
               "epochs": res.metrics["epochs_run"], "status": res.status}
    out["wall"] = time.perf_counter() - start
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def run_child(kind, n, timeout):
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", kind, str(n)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout} s"}
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return {"error": (lines[-1][:90] if lines else "failed").replace("|", "/")}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_scaling(quick):
    sizes = [1000, 10000] if quick else [1000, 10000, 100000, 1000000]
    rows = []
    for n in sizes:
        ex = run_child("exact", n, timeout=1800)
        gen = run_child("generic", n, timeout=3600)

        def cell(r, key, fmt="{:.3g}"):
            return r.get("error") or fmt.format(r[key])
        gap = f"{gen['objective'] - ex['objective']:.2g}" if "objective" in ex and "objective" in gen else "-"
        rows.append([n, cell(ex, "seconds"), cell(ex, "peak_rss_mib", "{:.0f}"), cell(gen, "seconds"),
                     cell(gen, "peak_rss_mib", "{:.0f}"), gap, cell(gen, "violation", "{:.1g}"),
                     cell(gen, "gap", "{:.1g}"), cell(gen, "judge")])
    return ("**Group DRO under equal opportunity as n grows** (synthetic, d = 20, 3 groups, eps = 0.05, radius 5, "
            "intercept). Exact: the generic CVXPY program (Clarabel). Generic: the stochastic primal-dual lowering "
            "with its defaults (40 epochs, about 32 rows per step, steps from minibatch Lipschitz estimates). The "
            "objective gap, the violation and the Lagrangian gap (a certified bound on the suboptimality, "
            "its inner minimum by accelerated projected gradient with the Frank-Wolfe bound) are the judge's "
            "numbers on the full data. Peak resident memory of a fresh process (includes the ~150 MiB of the "
            "imported libraries and the data).\n\n"
            + table(["n", "exact time (s)", "exact peak RSS (MiB)", "generic time (s)", "generic peak RSS (MiB)",
                     "objective: generic - exact", "violation", "Lagrangian gap", "judge time (s)"], rows))


def bench_vs_aleg(quick):
    cases = [("Adult by race", fm.datasets.load_adult(sensitive="race"))]
    if not quick:
        cases.append(("synthetic, n = 1e5", synthetic(100_000)))
    seeds = [0] if quick else [0, 1, 2]
    rows = []
    for label, data in cases:
        prob = group_dro(data)
        opt = prob.solve(method="dual").objective
        for threads in ("default", 1):
            times = {"aleg": [], "primal_dual": []}
            gaps = {"aleg": [], "primal_dual": []}
            for seed in seeds:
                for method in times:          # side by side in one process, alternating
                    with threadpool_limits(limits=None if threads == "default" else 1):
                        res = prob.solve(backend="stochastic", method=method, seed=seed)
                    times[method].append(res.timings["solve"])
                    gaps[method].append(res.objective - opt)
            t_a, t_g = statistics.median(times["aleg"]), statistics.median(times["primal_dual"])
            rows.append([label, threads, f"{t_a:.2f}", f"{statistics.median(gaps['aleg']):.1e}", f"{t_g:.2f}",
                         f"{statistics.median(gaps['primal_dual']):.1e}", f"{t_g / t_a:.1f}"])
    return ("**Plain group DRO: the generic lowering against ALEG** (logistic loss, radius 5). Default budgets of "
            "both (ALEG: its epochs rule, 4 samples per group per step, suffix average; generic: 40 epochs); "
            "the gap is the judged max group risk minus the exact optimum (certified dual method). Medians of "
            f"{len(seeds)} seed(s), run side by side in one process.\n\n"
            + table(["data", "BLAS threads", "ALEG time (s)", "ALEG gap", "generic time (s)", "generic gap",
                     "time ratio generic / ALEG"], rows))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    parts = ["## The generic stochastic lowering (`benchmarks/generic.py`)", bench_scaling(args.quick),
             bench_vs_aleg(args.quick)]
    body = "\n\n".join(parts)
    if not args.quick:
        write_section("generic", body)
    print(body)


if __name__ == "__main__":
    main()
