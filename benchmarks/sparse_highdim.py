"""Sparse high-dimensional declarations with the stochastic defaults: time, status and peak memory.

Data: ``fm.datasets.make_sparse_synthetic`` (``--n`` rows, ``--d`` columns, 20 nonzeros a row, 2 groups; CSR) and
Adult by sex with all pairwise products of its one-hot columns (``fm.datasets.with_interactions``; d in the
thousands). Declarations (a ball of radius 5 and an intercept):

* ``cov``: mean logistic loss under Zafar et al.'s covariance bound |mean((z - mean z) s)| <= 0.01;
* ``gdro``: the largest group mean logistic loss (group DRO, ALEG);
* ``auc``: the AUC square surrogate under an intra-group AUC gap <= 0.05 (the generic lowering: the pair risks from
  per-set means of h^2 and the set means).

Each case runs in its own process (its peak resident memory is the process's) with a time limit.

    python benchmarks/sparse_highdim.py --data synthetic --cases cov,gdro --timeout 600
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import fairmodel as fm  # noqa: E402


def data_of(kind: str, n: int, d: int):
    if kind == "synthetic":
        return fm.datasets.make_sparse_synthetic(n=n, d=d, nnz=20, groups=2, seed=0)
    return fm.datasets.with_interactions(fm.datasets.load_adult(sensitive="sex"))


def problem(data, case: str):
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    if case == "cov":
        z = (data.groups.codes == 0).astype(float)
        return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))),
                          [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.01])
    if case == "gdro":
        return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(s, data.y), data.groups))))
    return fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra", protected=data.groups.names[0]) <= 0.05])


def one(kind: str, case: str, n: int, d: int) -> None:
    start = time.perf_counter()
    data = data_of(kind, n, d)
    built = time.perf_counter() - start
    start = time.perf_counter()
    res = problem(data, case).solve(backend="stochastic", seed=0)
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gap = next((res.certificate[k] for k in ("lagrangian_gap", "duality_gap_bound", "gap") if k in res.certificate),
               float("nan"))
    print(f"| {data.name} | {data.n_samples:,} x {data.n_features:,} ({data.X.nnz / data.n_samples:.0f} a row) | "
          f"{case} | {res.method} | {res.status} | {took:.1f} | {built:.1f} | {res.objective:.5f} | {gap:.2e} | "
          f"{peak:,.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="synthetic", choices=("synthetic", "adult"))
    parser.add_argument("--cases", default="cov,gdro,auc")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--d", type=int, default=100_000)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.data, args.cases, args.n, args.d)
        return
    print("| data | n x d | case | method | status | solve s | data s | objective | gap | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for case in args.cases.split(","):
        cmd = [sys.executable, __file__, "--one", "--data", args.data, "--cases", case, "--n", str(args.n),
               "--d", str(args.d)]
        try:
            subprocess.run(cmd, timeout=args.timeout, check=False)
        except subprocess.TimeoutExpired:
            print(f"| {args.data} | | {case} | | stopped at the time limit | > {args.timeout:.0f} | | | | |", flush=True)


if __name__ == "__main__":
    main()
