"""BLAS/OpenMP threads: single thread vs the process's default threads vs the library's choice, on a quiet and on
a busy machine, written into docs/benchmarks.md (section "threads").

Workloads (the README's): the certified exact dual solve of group DRO on Adult by race
(``prob.solve(backend="exact", method="dual")``, solve and judge), an ALEG run on the same problem, and
``fairmodel demo`` (loading the data, the cross-check of both, the printed table).
Settings, each in a fresh subprocess (the thread pools are sized when NumPy loads):

* single thread: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1``, ``FAIRMODEL_THREADS=inherit``;
* default threads: no thread variable, ``FAIRMODEL_THREADS=inherit`` (what the library did before it chose);
* library's choice: no thread variable, ``FAIRMODEL_THREADS`` unset (the solves and the judge run with one thread
  through threadpoolctl).

The settings are interleaved (one solve of each in turn, ``--repeat`` rounds) so that the load of a shared
machine drifts over all of them alike; the time excludes loading the data and building the problem.

Load: none, or ``--busy`` background processes each multiplying 400 x 400 matrices in a loop with the
process's default BLAS threads (as a competing job would). All settings of one load level run in the same run,
in the same run, so their medians are side by side.

    python benchmarks/threads.py              # repeat 3, loads 0, 1 and 2 busy processes
    python benchmarks/threads.py --quick      # repeat 1, to check the script
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import table, write_section  # noqa: E402

SETTINGS = {
    "single thread (OMP_NUM_THREADS=1)": {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                                          "MKL_NUM_THREADS": "1", "FAIRMODEL_THREADS": "inherit"},
    "default threads (inherited)": {"FAIRMODEL_THREADS": "inherit"},
    "library's choice (default)": {},
}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "FAIRMODEL_THREADS")

BUSY = ("import numpy as np\n"
        "a = np.random.default_rng(0).standard_normal((400, 400))\n"
        "while True:\n    a = np.tanh(a @ a / 400.0)\n")


def child(workload: str, repeat: int) -> None:
    sys.path.insert(0, str(ROOT))
    import fairmodel as fm
    data = fm.datasets.load_adult(sensitive="race")
    w = fm.Weights(data.n_features, radius=5.0)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    if workload == "demo":                 # `fairmodel demo`: load Adult, cross-check (dual + ALEG), print
        import contextlib
        import io
        from fairmodel.frontends import cli

        def run():
            with contextlib.redirect_stdout(io.StringIO()):
                code = cli.main(["demo"])
            return type("R", (), {"status": "ok" if code == 0 else f"exit {code}"})
    elif workload == "dual":
        run = lambda: prob.solve(backend="exact", method="dual")  # noqa: E731
    else:
        run = lambda: prob.solve(backend="stochastic", method="aleg", seed=0)  # noqa: E731
    times, status = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        status = run().status
        times.append(time.perf_counter() - start)
    print(json.dumps({"median": statistics.median(times), "status": status, "threads": fm.threads()}))


def measure(workload: str, env_extra: dict, repeat: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env.update(env_extra)
    out = subprocess.run([sys.executable, __file__, "--child", workload, "--repeat", str(repeat)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.repeat)
    repeat = 1 if args.quick else args.repeat
    load_before = os.getloadavg()[0]
    rows = []
    for busy in args.busy:
        env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
        procs = [subprocess.Popen([sys.executable, "-c", BUSY], env=env) for _ in range(busy)]
        try:
            time.sleep(1.0 if busy else 0.0)
            for workload, label in (("dual", "exact dual solve (README)"), ("aleg", "ALEG run"),
                                    ("demo", "`fairmodel demo`")):
                # interleaved: one solve per setting in turn, so that a change of the machine's load hits all
                runs = {name: [] for name in SETTINGS}
                for _ in range(repeat):
                    for name, extra in SETTINGS.items():
                        runs[name].append(measure(workload, extra, 1))
                res = {name: {"median": statistics.median(r["median"] for r in rs), "status": rs[-1]["status"]}
                       for name, rs in runs.items()}
                single = res["single thread (OMP_NUM_THREADS=1)"]["median"]
                rows.append([label, busy] + [f"{r['median']:.2f} ({r['median'] / single:.2f}x)"
                                             for r in res.values()]
                            + [res["library's choice (default)"]["status"]])
                print(rows[-1], flush=True)
        finally:
            for p in procs:
                p.kill()
                p.wait()
    text = (f"Group DRO on Adult by race (the README's problem), wall time of `prob.solve(...)` including the judge, "
            f"median of {repeat} solves per setting, each in a fresh process, the settings interleaved (seconds, and the ratio to one thread); "
            f"busy = background processes each running a 400 x 400 NumPy matmul loop with default threads. "
            f"The demo's time includes loading the data. The library's choice runs its solves and judge with one BLAS/OpenMP thread (threadpoolctl); "
            f"`FAIRMODEL_THREADS` or `fm.set_threads(n)` override it. 1-minute load average before the run: "
            f"{load_before:.2f} (a machine shared with other jobs).\n\n"
            + table(["workload", "busy", *SETTINGS, "status"], rows))
    print(text)
    if not args.no_write:
        write_section("threads", "## BLAS/OpenMP threads (`benchmarks/threads.py`)\n\n" + text)


if __name__ == "__main__":
    main()
