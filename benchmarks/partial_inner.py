"""Benchmark of the inner solvers of IDCA for partial fairness: time per outer iteration (one subproblem (25)).

Problem: Law School with the paper's interactions (1, ξ, γ, γξ), logistic loss + 1e-3 ||w||^2,
fm.partial_dp(s, race, band=(0.70, 1.00)) <= 0.1 (model (13), 10 levels, 40 DC constraints), mu = 0.1.
n = 1e3, 1e4, 2e4 rows drawn with replacement; "full" is the 20,800 rows of Law School as they are.

Inner solvers (each from the same start, w = 0):
* certified interior point with its working set (the default, :mod:`fairmodel.oracles.dc_working_set`): median
  of outer iterations 2..K and of the last half (short steps, small working sets), the first (from w = 0 where
  every score ties, all hinges) apart, the working set's share, IPM iterations and the largest duality gap;
* the same solver on every hinge (``working_set=False``): median of outer iterations 2-4;
* CVXPY (Newton steps on the vectorized program, Clarabel): the first outer iteration (with compilation) and the
  second, where it runs within the budget (``--cvxpy-max``);
* SSG (Algorithm 2, T = 300): median of the first 3 outer iterations.

    python benchmarks/partial_inner.py                     # the documented run
    python benchmarks/partial_inner.py --cvxpy-max 1000    # CVXPY only at n = 1e3
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fairmodel as fm  # noqa: E402
from fairmodel.exact.partial import Subproblem  # noqa: E402
from fairmodel.families.partial import CLARABEL_OPTIONS, MU  # noqa: E402
from fairmodel.families.partial_program import hinge_program  # noqa: E402
from fairmodel.stochastic.idca import certified_inner, exact_inner, idca  # noqa: E402
from _report import table, write_section  # noqa: E402
from partial_fairness import BASE, ssg_outer_time  # noqa: E402


def make_problem(n):
    if n == "full":
        data = BASE
    else:
        data = BASE.take(np.random.default_rng(0).integers(0, BASE.n_samples, size=n))
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.partial_dp(s, data.groups, band=(0.70, 1.00)) <= 0.1])


def outer_times(prog, inner, outer):
    infos = []

    def wrapped(anchor, k):
        x, info = inner(anchor, k)
        infos.append(info)
        return x, info
    out = idca(prog, prog.start(), wrapped, outer=outer, mu=MU)
    times = list(np.diff([rec["time"] for rec in out["history"]], prepend=0.0)[1:])
    return times, infos


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,20000,full,100000")
    parser.add_argument("--outer", type=int, default=30, help="outer iterations of the interior-point path")
    parser.add_argument("--cvxpy-max", type=int, default=1000, help="largest n for the CVXPY inner solver")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = []
    start_all = time.perf_counter()
    for size in args.sizes.split(","):
        n = size if size == "full" else int(float(size))
        prob = make_problem(n)
        prog = prob.family.program
        nrows = prog.blocks[0].gs.X.shape[0]
        hinge = hinge_program(prog)
        times, infos = outer_times(prog, certified_inner(prog, hinge, MU), args.outer)
        ipm, late = statistics.median(times[1:]), statistics.median(times[args.outer // 2:])
        its = [i["ipm_iterations"] for i in infos]
        gap = max(i["subproblem_gap"] for i in infos)
        share = statistics.median(i["working_set"] for i in infos[args.outer // 2:])
        plain = statistics.median(outer_times(prog, certified_inner(prog, hinge, MU, working_set=False), 4)[0][1:])
        ssg = ssg_outer_time(prog, 3)
        if n != "full" and n <= args.cvxpy_max:
            t0 = time.perf_counter()
            sub = Subproblem(prog, MU)
            ctimes, cinfos = outer_times(prog, exact_inner(sub, **CLARABEL_OPTIONS), 2 if n <= 3000 else 1)
            ctimes[0] += time.perf_counter() - t0 - sum(ctimes)     # count the program's construction
            cvx = (f"{ctimes[1]:.3g} ({cinfos[1]['newton_steps']} Newton QPs); first {ctimes[0]:.3g}"
                   if len(ctimes) > 1 else f"first {ctimes[0]:.3g} ({cinfos[0]['newton_steps']} Newton QPs)")
            ratio = f"{(ctimes[1] if len(ctimes) > 1 else ctimes[0]) / late:.0f}"
        else:
            cvx, ratio = ("not run: > 5 min per outer iteration (at n = 1e4 one Clarabel QP took 118 s after an 8.8 s "
                          "compilation, and a subproblem needs 2-4 Newton QPs; killed after 7 min)"), "-"
        rows.append([f"{nrows}" + (" (all of Law School)" if n == "full" else ""),
                     f"{ipm:.3g}; last half {late:.3g} (working set {share:.1%}); first {times[0]:.3g}; "
                     f"{min(its)}-{max(its)} IPM iterations; gap <= {gap:.1e}", f"{plain:.3g}",
                     cvx, f"{ssg:.3g}", ratio])
        print(rows[-1], flush=True)
    load = os.getloadavg()
    body = "\n".join([
        "Problem: Law School with the paper's interaction features, logistic loss + 1e-3 ||w||^2, "
        "partial_dp(band=(0.70, 1.00)) <= 0.1 (model (13), 10 levels, 40 DC constraints, D = 30); rows drawn with "
        "replacement to reach n (the last row: the data as they are). IDCA mu = 0.1, from w = 0. Time of one "
        "outer iteration = one subproblem (25). Certified interior point (`inner='ipm'`, the default) with its "
        f"working set of hinges: median of outer iterations 2-{args.outer} and of the last half (the working set's "
        "median share of the hinges in brackets), the first (from w = 0 where all scores tie: every hinge), its "
        "iteration counts and the largest duality gap of (25) it certified; the same solver on every hinge: "
        "median of outer iterations 2-4. CVXPY (`inner='cvxpy'`): Newton steps on the "
        "vectorized program with Clarabel (max_step_fraction 0.9); the second outer iteration, the first with "
        "the compilation. SSG: T = 300 inner iterations (median of the first 3 outer iterations; not exact).",
        "",
        "**Time per IDCA outer iteration (s)**",
        "",
        table(["n", "certified interior point (working set)", "interior point, every hinge", "CVXPY",
               "SSG (T = 300)", "CVXPY / IPM (last half)"], rows),
        "",
        f"Run: `python benchmarks/partial_inner.py` ({time.perf_counter() - start_all:.0f} s; load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on 2 cores shared with other jobs).",
    ])
    print(body)
    if not args.no_write:
        write_section("partial_inner", body)


if __name__ == "__main__":
    main()
