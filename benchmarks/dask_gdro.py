"""Group DRO on Dask-backed Parquet data, written into docs/benchmarks.md (section "dask_gdro").

A synthetic logistic task (d = 20 standard normal features, 4 groups of sizes 40/30/20/10 %, labels from a
group-dependent linear rule with 10 % label noise) is written as Parquet files of ``--file-rows`` rows (one
Dask chunk each), then, in a fresh subprocess (so that its peak resident memory is its own):

* the Dataset is opened with ``fm.Dataset.from_parquet`` (validation and group encoding: two passes),
* one Dask pass (``data.matvec``) and one group-risk pass (risks and q-weighted gradient, ALEG's snapshot) are
  timed, as is the judge of a candidate (objective, group risks, accuracy and the certified duality gap:
  the Newton passes of the inner minimum),
* ALEG runs ``--epochs`` epochs (``batch_size`` rows per group per step), its output is judged, and the time
  per epoch is reported with its ratio to one Dask pass,
* peak resident memory (``resource.getrusage``) of the whole process is reported with the size of the data.

    python benchmarks/dask_gdro.py                 # 5e6 rows (about 0.9 GB of Parquet), a few minutes
    python benchmarks/dask_gdro.py --rows 500000   # to check the script
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

D, GROUP_P = 20, (0.4, 0.3, 0.2, 0.1)


def write_parquet(path: Path, rows: int, file_rows: int, seed: int = 0) -> float:
    """Write the synthetic data in files of ``file_rows`` rows; returns the bytes written."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    beta = rng.normal(size=(len(GROUP_P), D)) / np.sqrt(D) + rng.normal(size=D) / np.sqrt(D)
    path.mkdir(parents=True, exist_ok=True)
    for k, start in enumerate(range(0, rows, file_rows)):
        n = min(file_rows, rows - start)
        X = rng.normal(size=(n, D))
        g = rng.choice(len(GROUP_P), size=n, p=GROUP_P)
        z = np.einsum("ij,ij->i", X, beta[g]) * 2.0
        y = np.where(rng.random(n) < 0.9, np.sign(z), -np.sign(z))
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(label=y, group=[f"g{v}" for v in g])
        frame.to_parquet(path / f"part-{k:04d}.parquet", index=False)
    return sum(f.stat().st_size for f in path.glob("*.parquet"))


def _column_sums(batch):
    return batch.X.sum(axis=0)


def run(path: str, epochs: int, batch_size: int, inner_steps: int | None, compare_prefetch: bool) -> dict:
    """The measurements, in this process (call it in a fresh subprocess)."""
    import fairmodel as fm
    out = {"rss_start_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    start = time.perf_counter()
    data = fm.Dataset.from_parquet(path, target="label", sensitive="group")
    out["open_s"] = time.perf_counter() - start
    peak = {"open": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    passes = {"n": 0}
    inner = data.map_chunks

    def counted(*args, **kwargs):
        passes["n"] += 1
        return inner(*args, **kwargs)
    data.map_chunks = counted
    out.update(n=data.n_samples, d=data.n_features, chunks=data.n_chunks, groups=data.groups.sizes.tolist())
    w = fm.Weights(data.n_features, intercept=True, radius=10.0)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    theta = np.zeros(data.n_features + 1)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        data.map_chunks(_column_sums)      # one read of every chunk, a d-vector back per chunk
        times.append(time.perf_counter() - t)
    out["pass_s"] = float(np.median(times))
    gr = prob.family.risks
    t = time.perf_counter()
    gr.risks_and_grad(theta, np.full(gr.m, 1 / gr.m), keep_scores=False)
    out["risk_pass_s"] = time.perf_counter() - t
    peak["passes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    opts = {"epochs": epochs, "batch_size": batch_size, **({"inner": inner_steps} if inner_steps else {})}
    if compare_prefetch:   # the same run (the same rows drawn) without prefetching first, in this process
        t = time.perf_counter()
        off = prob.solve(backend="stochastic", seed=0, prefetch=False, **opts)
        out["solve_s_no_prefetch"] = time.perf_counter() - t
        out["wait_s_no_prefetch"] = off.metrics["sampler_wait_s"]
        out["epoch_s_no_prefetch"] = [b["time"] - a["time"] for a, b in zip(off.history, off.history[1:])]
        peak["ALEG without prefetch"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    passes["n"] = 0
    start = time.perf_counter()
    result = prob.solve(backend="stochastic", seed=0, **opts)
    out["solve_s"] = time.perf_counter() - start
    out["solve_passes"] = passes["n"]
    out["wait_s"] = result.metrics["sampler_wait_s"]
    if compare_prefetch:
        out["same_w"] = bool(np.array_equal(off.variables["w"], result.variables["w"]))
    peak["ALEG"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    hist = result.history
    out["epoch_s"] = [b["time"] - a["time"] for a, b in zip(hist, hist[1:])]
    passes["n"] = 0
    t = time.perf_counter()
    ev = prob.evaluate(result)
    out["judge_s"] = time.perf_counter() - t
    out["judge_passes"] = passes["n"]
    out.update(status=result.status, ok=result.ok, objective=ev.objective,
               gap=ev.certificate["duality_gap"], gap_bound=ev.certificate["duality_gap_bound"],
               group_risks=list(ev.metrics["group_risks"].values()))
    out["rss_peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak["judge"] = out["rss_peak_mib"]
    out["peak_by_phase"] = peak
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--file-rows", type=int, default=250_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--inner", type=int, default=None, help="ALEG inner steps per epoch (default n_bar / b)")
    parser.add_argument("--default-allocators", action="store_true",
                        help="keep Arrow's mimalloc pool and glibc's dynamic mmap threshold")
    parser.add_argument("--compare-prefetch", action="store_true", help="also run ALEG without prefetching")
    parser.add_argument("--dir", default=None)
    parser.add_argument("--child", default=None)
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run(args.child, args.epochs, args.batch_size, args.inner, args.compare_prefetch)))
        return
    root = Path(args.dir or tempfile.mkdtemp(prefix="fm-dask-"))
    data_dir = root / f"gdro-{args.rows}"
    t = time.perf_counter()
    if not data_dir.exists():
        size = write_parquet(data_dir, args.rows, args.file_rows)
    else:
        size = sum(f.stat().st_size for f in data_dir.glob("*.parquet"))
    write_s = time.perf_counter() - t
    load = os.getloadavg()[0]
    cmd = [sys.executable, __file__, "--child", str(data_dir), "--epochs", str(args.epochs),
           "--batch-size", str(args.batch_size)] + (["--inner", str(args.inner)] if args.inner else []) + \
        (["--compare-prefetch"] if args.compare_prefetch else [])
    env = dict(os.environ)
    if not args.default_allocators:   # the allocator settings docs/large_data.md recommends for bounded memory
        env.update(ARROW_DEFAULT_MEMORY_POOL="system", MALLOC_MMAP_THRESHOLD_="1048576")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(proc.stderr)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    r.update(parquet_mib=size / 2 ** 20, write_s=write_s, load=load, in_memory_mib=r["n"] * (r["d"] + 2) * 8 / 2 ** 20)
    print(json.dumps(r, indent=1))
    epoch = float(np.median(r["epoch_s"])) if r["epoch_s"] else float("nan")
    inner = f"`inner={args.inner}` steps per epoch ({args.inner * args.batch_size * 4:,} rows drawn per epoch)" \
        if args.inner else "the default inner steps (each epoch draws as many rows as the data has)"
    prefetch_rows = ""
    if "wait_s_no_prefetch" in r:
        e0 = float(np.median(r["epoch_s_no_prefetch"])) if r["epoch_s_no_prefetch"] else float("nan")
        prefetch_rows = (f"| ALEG without prefetching: time per epoch (median) / waiting for sampled rows (whole run) | "
                         f"{e0:.1f} s / {r['wait_s_no_prefetch']:.1f} s |\n"
                         f"| ALEG with prefetching: time per epoch (median) / waiting for sampled rows (whole run) | "
                         f"{epoch:.1f} s / {r['wait_s']:.1f} s (same iterates: {r['same_w']}) |\n")
    body = f"""## Group DRO on Dask-backed Parquet data, {r['n']:,} rows (benchmarks/dask_gdro.py)

Synthetic logistic task, {r['n']:,} rows x {r['d']} features, 4 groups {r['groups']}, written as {r['chunks']}
Parquet files ({r['parquet_mib']:.0f} MiB on disk; as NumPy float64 X, y and codes it would take
{r['in_memory_mib']:.0f} MiB), read with `fm.Dataset.from_parquet` on Dask's threaded scheduler (2 cores, load
average {r['load']:.1f} from other jobs at the start; the process runs under `nice -n 10`;
{"default allocators" if args.default_allocators else "`ARROW_DEFAULT_MEMORY_POOL=system MALLOC_MMAP_THRESHOLD_=1048576`, as docs/large_data.md recommends"}). ALEG with
`batch_size={args.batch_size}` rows per group per step, {inner}, {args.epochs} epochs, `output="suffix"`,
prefetching on (the default).

| measurement | value |
|---|---|
| open (validation, group names, codes: 3 reads of the files) | {r['open_s']:.1f} s |
| one Dask pass (column sums of X: every chunk read once; median of 3) | {r['pass_s']:.2f} s |
| one group-risk pass (risks, q-weighted gradient: ALEG's snapshot) | {r['risk_pass_s']:.2f} s ({r['risk_pass_s'] / r['pass_s']:.1f} passes) |
{prefetch_rows}| ALEG: time per epoch (median) | {epoch:.1f} s ({epoch / r['pass_s']:.1f} passes) |
| ALEG: whole run ({args.epochs} epochs, {r['solve_passes']} full passes incl. the judge) | {r['solve_s']:.1f} s |
| judge alone (group risks and accuracy, certified gap: {r['judge_passes']} passes) | {r['judge_s']:.1f} s ({r['judge_s'] / r['pass_s']:.1f} passes) |
| judged max group risk / duality gap (13) / its certified bound | {r['objective']:.5f} / {r['gap']:.2e} / {r['gap_bound']:.2e} |
| status | {r['status']} (ok = {r['ok']}; certified gap <= 1e-2: {r['gap_bound'] <= 1e-2}) |
| peak resident memory of the process (`ru_maxrss`; threads, no worker processes) | {r['rss_peak_mib']:.0f} MiB (after imports: {r['rss_start_mib']:.0f} MiB) |
| peak resident memory after each phase | {', '.join(f"{k} {v:.0f}" for k, v in r['peak_by_phase'].items())} MiB |

An ALEG epoch costs its snapshot pass, the gathers of the sampled rows (a buffer of 64 MiB of features, i.e.
{64 * 2 ** 20 // (8 * r['d'] * 4):,} rows per group, is gathered by reading every chunk that holds a drawn row: with
i.i.d. draws, every chunk) and the Python loop of the inner steps; with prefetching the next buffer is gathered
in a background thread while the steps run (on 2 shared cores the gather and the pass still compete for the
CPU). The judge reads the data once for the group risks and accuracies, then once per accepted projected Newton
step of the inner minimum of (13), started at the candidate; Newton passes compute a d x d Hessian per chunk
and the logistic kernel three times, hence more than a plain pass each. The client holds the labels and group
codes (16 bytes a row) and the sampler's index (4 bytes a row); the rest of the peak is the chunks being read
(about 2.5 times their size while Parquet is converted) and the interpreter with Dask, pandas and Arrow.
"""
    if not args.no_write:
        from _report import write_section
        write_section("dask_gdro" if args.rows == 5_000_000 else f"dask_gdro_{args.rows}", body)
    print(body)


if __name__ == "__main__":
    main()
