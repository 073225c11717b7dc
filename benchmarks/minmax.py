"""Benchmark of the zeroth-order min-max family (Maheshwari et al., AISTATS 2022): strategic Wasserstein DRO on
the paper's synthetic setup (p = 10, 5 strategic features, zeta = 0.05, kappa = 0.5; radius delta = 0.1, where
the corrected solution is non-trivial: ||w*|| ~ 1.2).

Table 1: duality gap of the output against the number of queries (value queries for zeroth order,
gradient evaluations for first order), for OGDA-RR, OGDA-WR, SGDA-RR, SGDA-WR, with the log-log slope.
Each checkpoint T is the output of a run of T epochs (the tail average of the family's default steps; the
theory-schedule row uses the paper's full average), certified during one run per seed by a callback (the
iterates of a run do not depend on its length).

Table 2: wall time of the exact program (E1, Clarabel) against OGDA-RR to a duality gap of 2e-2 and
1e-2 as n grows (the time of the gap checks, one every ``check`` epochs, is excluded).

Table 3: ablation of the non-paper devices of the fixed budget (stop="budget": gamma-step scaling, suffix
average) and of the two-point estimator, at n = 1000.

    python benchmarks/minmax.py            # full configuration
    python benchmarks/minmax.py --quick    # smaller sizes, fewer seeds (a few minutes)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fairmodel as fm  # noqa: E402
from _report import median_time, table, write_section  # noqa: E402
from fairmodel.exact import strategic_dro as exact_sdro  # noqa: E402
from fairmodel.families.strategic_dro import anytime_defaults, saddle_certificate  # noqa: E402
from fairmodel.oracles.strategic import WDRSCOracle  # noqa: E402
from fairmodel.stochastic.ogda import METHODS  # noqa: E402

DELTA = 0.1


def problem_for(n: int, seed: int = 0) -> fm.Problem:
    data = fm.datasets.make_strategic_synthetic(n=n, seed=seed)
    w = fm.Weights(data.n_features)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=range(5), zeta=0.05), data.y)
    return fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=DELTA, label_cost=0.5)))


class GapRecorder:
    """A callback that certifies, at the epochs T of ``marks``, the output a run of T epochs returns (the tail
    average: it does not depend on the run's length) and records (epochs, queries, gap, algorithm time without
    the checks); it stops the run once the gap is <= ``stop_below``."""

    def __init__(self, prob, marks, order, stop_below=None):
        self.model, self.marks, self.key, self.stop_below = prob.family.model, set(marks), \
            ("queries" if order == 0 else "gradients"), stop_below
        self.records, self.spent = [], 0.0

    def __call__(self, info):
        if info["epoch"] + 1 not in self.marks:
            return None
        start = time.perf_counter()
        gap = float(saddle_certificate(self.model, info["u"])["duality_gap"])
        self.spent += time.perf_counter() - start
        self.records.append((info["epoch"] + 1, info[self.key], gap, info["time"] - self.spent))
        return self.stop_below is not None and gap <= self.stop_below


def run(prob, method, order, seed, epochs, recorder, **extra):
    """A run of ``epochs`` epochs with the family's default steps (those of a run that stops on its certificate,
    without the stop: stop="budget" with the same options), certified by ``recorder``."""
    options = anytime_defaults(WDRSCOracle(prob.family.model), order, method, seed,
                               extra.get("estimator", "one-point"))[0]
    options.update(extra, epochs=epochs)
    prob.solve(backend="stochastic", method=method, order=order, seed=seed, stop="budget", callback=recorder,
               **options)
    return recorder.records


def slope(queries, gaps) -> float:
    return float(np.polyfit(np.log(queries), np.log(gaps), 1)[0])


def gap_vs_queries(n: int, seeds: int, epochs: int):
    prob = problem_for(n)
    checkpoints = [e for e in (2, 4, 8, 16, 32, 64, 128, 256) if e <= epochs]
    runs = [(m, 0, {}) for m in METHODS] + [(m, 1, {}) for m in METHODS] + \
        [("ogda-rr", 0, {"schedule": "theory", "eta0": 0.01, "chi": 0.05, "output": "average", "noise": None})]
    rows = []
    for method, order, extra in runs:
        per_seed = [run(prob, method, order, seed, epochs, GapRecorder(prob, checkpoints, order), **extra)
                    for seed in range(seeds)]
        queries = [c[1] for c in per_seed[0]]
        gaps = [statistics.median(run[j][2] for run in per_seed) for j in range(len(checkpoints))]
        tail = len(checkpoints) // 2
        rows.append([method, order, "theory (paper)" if extra else "defaults"] + [f"{g:.3g}" for g in gaps]
                    + [f"{slope(queries[tail:], gaps[tail:]):.2f}"])
        print(rows[-1], flush=True)
    header = ["method", "order", "schedule"] + [f"T={c}" for c in checkpoints] + ["slope"]
    note = (f"n = {n}, delta = {DELTA}; median duality gap over {seeds} seed(s) of the output of a T-epoch run "
            f"(about {2 * n - 1}·T value queries for OGDA, {n}·T for SGDA; gradient evaluations for order 1). "
            f"Defaults: the steps of a run that stops on its certificate (families/strategic_dro.anytime_defaults: "
            f"min(eta_max, eta0/sqrt(t+1)) from the measured noise, R = 1/rms(x), gamma step 0.25 eta_t/eta_max), "
            f"tail average; theory row: the paper's "
            f"eta0 (t+1)^(-3/4-chi), R0 (t+1)^(-1/4) with eta0 = 0.01, R0 = 1, chi = 0.05 and the full average. "
            f"slope: least-squares slope of log gap against log queries over T >= {checkpoints[tail]} "
            f"(Theorem 4.1 bounds the expected gap by O(T^(-1/4+chi)) for the theory schedule).")
    return table(header, rows), note


def time_to_gap(sizes, epochs: int, check: int):
    rows = []
    configs = [("ZO one-point (paper)", 0, {}), ("ZO two-point (ext.)", 0, {"estimator": "two-point"}),
               ("first order", 1, {})]
    for n in sizes:
        prob = problem_for(n)
        model = prob.family.model
        exact_time = median_time(lambda: exact_sdro.solve_wdrsc(model), repeat=3)
        row = [n, f"{exact_time:.3g}"]
        for name, order, extra in configs:
            recs = run(prob, "ogda-rr", order, 0, epochs,
                       GapRecorder(prob, range(check, epochs + 1, check), order, stop_below=1e-2), **extra)
            for target in ((2e-2, 1e-2) if order == 0 and not extra else (1e-2,)):
                hit = next((r for r in recs if r[2] <= target), None)
                row.append(f"{hit[3]:.3g} ({hit[0]} ep.)" if hit else
                           f"> {recs[-1][3]:.3g} (gap {min(r[2] for r in recs):.3g} at {epochs} ep.)")
        print(row, flush=True)
        rows.append(row)
    header = ["n", "exact E1 (s)", "ZO OGDA-RR to 2e-2 (s)", "ZO OGDA-RR to 1e-2 (s)",
              "ZO two-point to 1e-2 (s)", "first-order to 1e-2 (s)"]
    note = (f"delta = {DELTA}; exact: median of 3 Clarabel solves of (E1), CVXPY compilation included; OGDA-RR: "
            f"seed 0, family defaults, the output certified every {check} epochs (time of the checks excluded), "
            f"at most {epochs} epochs.")
    return table(header, rows), note


def ablation(n: int, epochs: int):
    """The non-paper devices of the fixed budget (stop="budget"), one at a time (seed 0)."""
    prob = problem_for(n)
    eta = 0.045 / np.sqrt(n)
    configs = [("paper geometry: y_step_scale = 1, full average", {"y_step_scale": 1.0, "output": "average"}),
               ("gamma-step scale 0.25/eta, full average", {"output": "average"}),
               ("fixed budget: gamma-step scale, suffix average", {}),
               ("fixed budget + two-point estimator", {"estimator": "two-point"}),
               ("fixed budget, first order", {"order": 1})]
    rows, optimum = [], prob.solve().objective
    for name, extra in configs:
        res = prob.solve(backend="stochastic", method="ogda-rr", seed=0, epochs=epochs, stop="budget", **extra)
        rows.append([name, f"{res.certificate['duality_gap']:.3g}", f"{res.objective - optimum:.3g}",
                     res.metrics["queries"] or res.metrics["gradients"]])
        print(rows[-1], flush=True)
    note = (f"n = {n}, delta = {DELTA}, OGDA-RR, {epochs} epochs, seed 0, eta = 0.045/sqrt(n) = {eta:.3g}, R = 1; "
            f"objective gap = worst-case risk of the output minus the exact optimum.")
    return table(["configuration", "duality gap", "objective gap", "queries"], rows), note


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer seeds")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.quick:
        t1, n1 = gap_vs_queries(500, seeds=1, epochs=128)
        t2, n2 = time_to_gap([500, 1000, 2000, 4000], epochs=200, check=20)
        t3, n3 = ablation(1000, epochs=200)
    else:
        t1, n1 = gap_vs_queries(500, seeds=3, epochs=256)
        t2, n2 = time_to_gap([500, 1000, 2000, 4000, 8000], epochs=300, check=10)
        t3, n3 = ablation(1000, epochs=200)
    total = time.perf_counter() - start
    body = "\n\n".join([
        "### Duality gap against queries (strategic DRO, synthetic)", n1, t1,
        "### Exact program against OGDA-RR as n grows", n2, t2,
        "### What the non-paper devices of the fixed budget do", n3, t3,
        f"_Configuration: {'--quick' if args.quick else 'full'}; total run time {total:.0f} s._"])
    write_section("minmax", body)
    print(body)


if __name__ == "__main__":
    main()
