"""Benchmark of the partial-fairness family: IDCA with exact (CVXPY) vs SSG subproblems as n grows.

Problem: Law School features with the paper's interactions (1, ξ, γ, γξ), logistic loss +
1e-3 ||w||^2, fm.partial_dp(s, race, band=(0.70, 1.00)) <= 0.1 (model (13), 10 levels, 40 DC constraints).
Rows are drawn with replacement from Law School (20,800 rows) to reach n; groups keep their proportions.

Tables (written to docs/benchmarks.md, section ``partial_fairness``):
1. time per IDCA outer iteration: exact = one subproblem (25) solved by CVXPY (Newton steps on the
   compiled program, first outer iteration from w = 0); SSG = T inner iterations (median of the first 3);
2. time to a feasible point whose objective is within 1e-3 of the exact-inner IDCA result (same start).

    python benchmarks/partial_fairness.py            # the documented run (n up to 1e6 for SSG, 3e3 for exact)
    python benchmarks/partial_fairness.py --full     # exact inner up to n = 1e4 (about an hour, see docs)
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
from fairmodel.exact.partial import Subproblem  # noqa: E402
from fairmodel.families.partial_runs import IDCA_DEFAULTS, MU  # noqa: E402
from fairmodel.stochastic.idca import exact_inner, idca, ssg_inner  # noqa: E402
from _report import table, write_section  # noqa: E402

BASE = fm.with_group_interactions(fm.datasets.load_lawschool(target="bar1", sensitive="race"))
T, EPS, DECAY = IDCA_DEFAULTS["inner"], IDCA_DEFAULTS["eps"], IDCA_DEFAULTS["eps_decay"]


def make_problem(n: int, seed: int = 0):
    rows = np.random.default_rng(seed).integers(0, BASE.n_samples, size=n)
    data = BASE.take(rows) if n != BASE.n_samples else BASE
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.partial_dp(s, data.groups, band=(0.70, 1.00)) <= 0.1])


def ssg_outer_time(prog, outer: int) -> float:
    """Median time of one IDCA outer iteration with T SSG steps (the first ``outer`` ones from w = 0)."""
    out = idca(prog, prog.start(), ssg_inner(prog, MU, lambda k: max(1e-5, EPS * DECAY ** k), T), outer=outer, mu=MU)
    times = np.diff([rec["time"] for rec in out["history"]], prepend=0.0)[1:]
    return float(statistics.median(times))


def exact_outer_time(prog) -> tuple[float, float, int]:
    """(first outer iteration incl. CVXPY compilation, second outer iteration, Newton QPs of the second)."""
    steps = []

    def inner(anchor, k, solve=exact_inner(Subproblem(prog, MU))):
        x, info = solve(anchor, k)
        steps.append(info)
        return x, info
    out = idca(prog, prog.start(), inner, outer=2, mu=MU)
    first, second = np.diff([rec["time"] for rec in out["history"]], prepend=0.0)[1:]
    return float(first), float(second), steps[-1]["newton_steps"]


def time_to_target(prob, outer_exact: int, outer_ssg: int) -> dict:
    """Exact-inner IDCA to convergence gives f_E; the first time each path is feasible with f <= f_E + 1e-3."""
    prog = prob.family.program
    start = time.perf_counter()
    exact = prob.solve(backend="exact", outer=outer_exact, tol=1e-5, certificate=False)
    exact_total = time.perf_counter() - start
    f_exact = exact.objective
    target = f_exact + 1e-3
    hit_exact = next((r["time"] for r in exact.history if r["objective"] <= target and r["max_f"] <= 0), None)
    out = idca(prog, prog.start(), ssg_inner(prog, MU, lambda k: max(1e-5, EPS * DECAY ** k), T),
               outer=outer_ssg, mu=MU)
    hit_ssg = next((r["time"] for r in out["history"] if r["objective"] <= target and r["max_f"] <= 0), None)
    return {"f_exact": f_exact, "exact_total": exact_total, "exact_outer": len(exact.history) - 1,
            "hit_exact": hit_exact, "hit_ssg": hit_ssg, "f_ssg": out["history"][-1]["objective"],
            "ssg_total": out["time"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true", help="exact inner solver up to n = 1e4")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--exact-max", type=int, default=3000, help="largest n for the exact inner solver")
    parser.add_argument("--target-n", type=int, default=1000, help="n of the time-to-target table")
    parser.add_argument("--dry", action="store_true", help="print the tables, do not write docs")
    args = parser.parse_args()
    if args.full:
        args.exact_max = 10_000
    rows, ratios = [], {}
    for n in args.sizes:
        prob = make_problem(n)
        prog = prob.family.program
        ssg_t = ssg_outer_time(prog, 3 if n <= 100_000 else 1)
        if n <= args.exact_max:
            first, exact_t, newton = exact_outer_time(prog)
            ratios[n] = exact_t / ssg_t
            rows.append([n, f"{ssg_t:.3g}", f"{exact_t:.3g} ({newton} Newton QPs; first incl. compile {first:.3g})",
                         f"{exact_t / ssg_t:.3g}"])
        else:
            rows.append([n, f"{ssg_t:.3g}", "not run", "-"])
        print(rows[-1], flush=True)
    # extrapolate the exact time per outer iteration with a power law through the measured sizes
    measured = sorted(ratios)
    note = ""
    if len(measured) >= 2:
        ex = {r[0]: float(r[2].split()[0]) for r in rows if r[2] != "not run"}
        slope = np.polyfit(np.log(measured), np.log([ex[n] for n in measured]), 1)[0]
        ssg_1e5 = next((float(r[1]) for r in rows if r[0] == 100_000), None)
        if ssg_1e5:
            exact_1e5 = ex[measured[-1]] * (100_000 / measured[-1]) ** slope
            note = (f"Extrapolation (power law through the measured exact sizes, exponent {slope:.2f}): an exact "
                    f"outer iteration at n = 1e5 would take about {exact_1e5:.3g} s, i.e. "
                    f"{exact_1e5 / ssg_1e5:.3g} times the SSG outer iteration ({ssg_1e5:.3g} s). Target (SSG-inner "
                    f"IDCA >= 10x faster than exact-inner at n = 1e5): met by this extrapolation, not by a "
                    f"measurement (the exact path is not run at n = 1e5).")
    target = time_to_target(make_problem(args.target_n), 60, 300)
    print(target, flush=True)
    trow = [[args.target_n, f"{target['f_exact']:.6f}", f"{target['f_ssg']:.6f}",
             f"{target['hit_exact']:.3g}" if target["hit_exact"] is not None else "never",
             f"{target['hit_ssg']:.3g}" if target["hit_ssg"] is not None else
             f"not reached in {target['ssg_total']:.3g} s (gap {target['f_ssg'] - target['f_exact']:.2g})",
             f"{target['exact_total']:.3g} ({target['exact_outer']} outer)"]]
    body = "\n".join([
        "Problem: Law School with the paper's interaction features, logistic loss + 1e-3 ||w||^2, "
        "partial_dp(band=(0.70, 1.00)) <= 0.1 (model (13), 10 levels, 40 DC constraints); rows drawn with "
        f"replacement to reach n. IDCA mu = {MU}; SSG inner T = {T}, eps_k = max(1e-5, {EPS} * {DECAY}^k) with the "
        "feasibility margin; exact inner = Newton steps on the compiled CVXPY program (Clarabel); the exact time "
        "is the second outer iteration (the first includes CVXPY's compilation).", "",
        "**Time per IDCA outer iteration (s)**", "",
        table(["n", "SSG inner (T = 300)", "exact inner (CVXPY)", "exact / SSG"], rows), "",
        note, "",
        "**Time to a feasible point within 1e-3 of the exact-inner IDCA objective (s)**", "",
        table(["n", "exact-inner IDCA objective", "SSG-inner IDCA objective (300 outer)", "exact: time to target",
               "SSG: time to target", "exact: total time"], trow),
    ])
    print(body)
    if not args.dry:
        write_section("partial_fairness", body)


if __name__ == "__main__":
    main()
