"""Benchmark of the exact methods of the generic convex reduction on compositions, written into docs/benchmarks.md
(section "compositions").

1. Logistic regression under the decision-boundary covariance constraint of Zafar et al. 2017
   (``fm.abs(fm.mean((z - z.mean()) * s)) <= c``, z = 1 for women), Adult by sex, radius 49.6, intercept, with c a
   share of the covariance of the unconstrained optimum. Per row, in one run: the model-space interior-point method
   (the default exact method), the CVXPY program (Clarabel), the generic stochastic lowering run until the judge's
   checks pass (its default), and a re-implementation of the paper's reference approach: scipy's SLSQP on the same
   formulation (loss, the two one-sided covariance constraints, the ball), with finite-difference gradients as the
   paper's code, and with exact gradients. n = 1,000 (a stratified subsample), all 30,162 rows, and rows drawn
   with replacement for larger n.
2. The four compositions of examples/compositions.py: ``fm.crosscheck`` of each (the model-space method against
   the generic stochastic lowering), and the CVXPY program's time for comparison.

3. With ``--stochastic``: the default stochastic method against the model-space method on all of Adult at
   c = 1, 0.5, 0.1 and 0.01 x the unconstrained covariance, side by side in one process (times, statuses, the
   ratio of the times, objective differences), written into its own section "compositions_stochastic" with
   ``--write``.

    python benchmarks/compositions.py                # n up to 1e6 (about 20 minutes here under load)
    python benchmarks/compositions.py --max-n 100000
    python benchmarks/compositions.py --stochastic --write
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fairmodel as fm  # noqa: E402

from _report import peak_memory, table, write_section  # noqa: E402

EXAMPLES_FILE = Path(__file__).resolve().parent.parent / "examples" / "compositions.py"
RADIUS = 49.6          # the radius that makes the constraint bite on Adult (without it the formulation is degenerate)
CVXPY_MAX_N = 30_162   # the CVXPY program and the stochastic lowering beyond this take minutes: not run
SLSQP_FD_MAX_N = 1_000  # finite-difference SLSQP (D + 1 loss passes per gradient) beyond this: over 10 minutes


def adult(n: int, seed: int = 0):
    data = fm.datasets.load_adult(sensitive="sex")
    if n < data.n_samples:
        return data.subsample(n, seed=seed)
    if n == data.n_samples:
        return data
    rows = np.random.default_rng(seed).integers(0, data.n_samples, size=n)
    X = data.in_memory_X("the benchmark")
    return fm.Dataset(X[rows], data.y[rows], groups=data.groups.codes[rows], name=f"Adult resampled (n={n:,})")


def covariance_problem(data, share: float, unconstrained_cov: float):
    w = fm.Weights(data.n_features, radius=RADIUS, intercept=True)
    s = data.score(w)
    z = (data.groups.codes == 1).astype(float)
    loss = fm.mean(fm.logistic_loss(s, data.y))
    return fm.Problem(fm.Minimize(loss), [fm.abs(fm.mean((z - z.mean()) * s)) <= share * unconstrained_cov]), z


def unconstrained_covariance(data) -> float:
    w = fm.Weights(data.n_features, radius=RADIUS, intercept=True)
    res = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(w), data.y)))).solve()
    theta = res.variables["w"]
    z = (data.groups.codes == 1).astype(float)
    X = data.in_memory_X("the benchmark")
    return abs(float(np.mean((z - z.mean()) * (X @ theta[:-1] + theta[-1]))))


def slsqp(data, z, c, exact_gradients: bool):
    """The paper's reference approach: scipy SLSQP on min mean logistic loss s.t. -c <= cov <= c, ||theta|| <= R,
    from a random start as in the paper's code (uniform in [0, 1)); finite-difference gradients unless asked."""
    X = data.in_memory_X("SLSQP")
    y = np.where(data.y > 0, 1.0, -1.0)
    a = (z - z.mean()) / data.n_samples
    ax, a1 = X.T @ a, a.sum()

    def loss(theta):
        m = y * (X @ theta[:-1] + theta[-1])
        value = -float(np.mean(log_expit(m)))
        if not exact_gradients:
            return value
        g = -y * expit(-m) / data.n_samples
        return value, np.append(X.T @ g, g.sum())

    cov = np.append(ax, a1)
    constraints = [{"type": "ineq", "fun": lambda t: c - cov @ t},
                   {"type": "ineq", "fun": lambda t: c + cov @ t},
                   {"type": "ineq", "fun": lambda t: RADIUS ** 2 - t @ t}]
    if exact_gradients:
        constraints[0]["jac"] = lambda t: -cov
        constraints[1]["jac"] = lambda t: cov
        constraints[2]["jac"] = lambda t: -2.0 * t
    theta0 = np.random.default_rng(0).random(data.n_features + 1)
    start = time.perf_counter()
    out = minimize(loss, theta0, jac=exact_gradients, method="SLSQP", constraints=constraints,
                   options={"maxiter": 100_000})
    seconds = time.perf_counter() - start
    theta = out.x
    m = y * (X @ theta[:-1] + theta[-1])
    violation = max(0.0, abs(float(cov @ theta)) - c, float(np.linalg.norm(theta)) - RADIUS)
    return seconds, -float(np.mean(log_expit(m))), violation, out.nit, out.success


def covariance_rows(sizes, shares):
    rows = []
    full = fm.datasets.load_adult(sensitive="sex")
    cov0 = unconstrained_covariance(full)
    print(f"unconstrained covariance on Adult: {cov0:.4g}", flush=True)
    for n in sizes:
        data = adult(n)
        for share in shares if n == full.n_samples else shares[-1:]:
            prob, z = covariance_problem(data, share, cov0)
            ms = prob.solve(method="model_space")          # timed without tracing (tracemalloc slows allocation)
            fresh, _ = covariance_problem(data, share, cov0)     # a new problem: its program is built while traced
            _, peak = peak_memory(lambda: fresh.solve(method="model_space"))
            row = {"n": f"{data.n_samples:,}", "c": f"{share:g} x", "ms": ms.timings["solve"],
                   "ms_it": ms.solver.get("iterations"), "ms_ok": ms.ok, "obj": ms.objective,
                   "gap": ms.certificate.get("lagrangian_gap"),
                   "mem": peak / (data.in_memory_X("bench").nbytes / 2 ** 20)}
            print(f"n={n} c={share}: model_space {row['ms']:.2f} s ({ms.status}, {row['ms_it']} it, "
                  f"peak {peak:.0f} MiB)", flush=True)
            if data.n_samples <= CVXPY_MAX_N:
                cv = prob.solve(method="cvxpy")
                row["cvxpy"], row["cvxpy_diff"] = cv.timings["solve"], cv.objective - ms.objective
                print(f"  cvxpy {row['cvxpy']:.1f} s, objective diff {row['cvxpy_diff']:.2e}", flush=True)
                st = prob.solve(backend="stochastic", seed=0)
                row["st"], row["st_ok"], row["st_diff"] = st.timings["solve"], st.ok, st.objective - ms.objective
                print(f"  stochastic {row['st']:.1f} s ok={st.ok} diff {row['st_diff']:.2e}", flush=True)
                t, obj, viol, nit, success = slsqp(data, z, share * cov0, exact_gradients=True)
                row["sq"] = (t, obj - ms.objective, viol, nit)
                print(f"  SLSQP exact gradients {t:.1f} s diff {obj - ms.objective:.2e} viol {viol:.1e}", flush=True)
            if data.n_samples <= SLSQP_FD_MAX_N:
                t, obj, viol, nit, success = slsqp(data, z, share * cov0, exact_gradients=False)
                row["fd"] = (t, obj - ms.objective, viol, nit)
                print(f"  SLSQP finite differences {t:.1f} s diff {obj - ms.objective:.2e}", flush=True)
            rows.append(row)
    return rows, cov0


def _cell_time(row, key, diff_key=None):
    if key not in row:
        return "not run"
    text = f"{row[key]:.3g}"
    return text + (f" ({row[diff_key]:+.1e})" if diff_key else "")


def _cell_slsqp(row, key):
    if key not in row:
        return "not run"
    t, diff, viol, nit = row[key]
    return f"{t:.3g} ({diff:+.1e}, violation {viol:.0e}, {nit} it)"


def composition_rows():
    spec = importlib.util.spec_from_file_location("composition_examples", EXAMPLES_FILE)
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    rows, total = [], 0.0
    for name, build in examples.EXAMPLES.items():
        start = time.perf_counter()
        prob = build()
        report = fm.crosscheck(prob, seed=0)
        seconds = time.perf_counter() - start
        total += seconds
        cv = prob.solve(method="cvxpy")
        rows.append([name, report.exact.method, f"{report.exact.timings['solve']:.3g}",
                     f"{report.stochastic.timings['solve']:.3g}", "ok" if report.ok else "NOT OK", f"{seconds:.3g}",
                     f"{cv.timings['solve']:.3g}", f"{cv.objective - report.exact.objective:+.1e}"])
        print(f"{name}: cross-check {'ok' if report.ok else 'NOT OK'} in {seconds:.1f} s; CVXPY "
              f"{cv.timings['solve']:.1f} s", flush=True)
    return rows, total


STOCHASTIC_SHARES = (1.0, 0.5, 0.1, 0.01)
RATIO_GOAL = 20.0     # the stochastic default's time at most this many times the model-space method's


def stochastic_rows():
    """Per share c: the model-space method and the default stochastic method (seed 0) on all of Adult, one after
    the other in this process."""
    full = fm.datasets.load_adult(sensitive="sex")
    cov0 = unconstrained_covariance(full)
    rows = []
    for share in STOCHASTIC_SHARES:
        prob, _ = covariance_problem(full, share, cov0)
        ms = prob.solve(method="model_space")
        st = prob.solve(backend="stochastic", seed=0)
        ratio = st.timings["solve"] / ms.timings["solve"]
        load = os.getloadavg()[0]
        rows.append([f"{share:g} x", f"{ms.timings['solve']:.3g}", ms.status, f"{st.timings['solve']:.3g}", st.status,
                     "ok" if st.ok else "NOT OK", f"{ratio:.1f}x" + ("" if ratio <= RATIO_GOAL else " (over 20x)"),
                     f"{st.objective - ms.objective:+.1e}", f"{st.certificate.get('lagrangian_gap', float('nan')):.1e}",
                     st.metrics.get("epochs_run"), st.metrics.get("restarts"), f"{load:.1f}"])
        print(" | ".join(str(v) for v in rows[-1]), flush=True)
    return rows, cov0


def stochastic_main(write: bool):
    started = time.perf_counter()
    rows, cov0 = stochastic_rows()
    load = os.getloadavg()
    text = ("## Compositions: the default stochastic method against the model-space method "
            "(`benchmarks/compositions.py --stochastic`)\n\n"
            "Logistic regression under the covariance constraint of Zafar et al. 2017 on all of Adult by sex (30,162 "
            f"rows, 102 features and an intercept, radius {RADIUS}), c a share of the covariance at the unconstrained "
            f"optimum ({cov0:.4g}); defaults only: `prob.solve(method='model_space')` and "
            "`prob.solve(backend='stochastic', seed=0)` (the generic primal-dual lowering, stopped when the judge's "
            "checks pass), one after the other in one process for each c. Times are solve times (the stochastic "
            "ones include the checkpoints' certificates); the objective difference is the judged objective of the "
            "stochastic result minus the model-space method's; the Lagrangian gap is the stochastic result's "
            "certificate (its tolerance is 0.2 % of the objective's scale, about 7e-4 here). The machine is shared "
            "with other sessions, so the load (1-minute average, last column, on 2 cores) varies between rows and "
            "both times of a row are slowed alike.\n\n"
            + table(["c", "model space (s)", "model-space status", "stochastic (s)", "stochastic status",
                     "stochastic judged", "ratio stochastic / model space", "objective: stochastic - model space",
                     "Lagrangian gap", "epochs", "restarts", "load"], rows)
            + f"\n\nRun: `python benchmarks/compositions.py --stochastic --write` "
              f"({time.perf_counter() - started:.0f} s; load average at the end {load[0]:.1f} / {load[1]:.1f} / "
              f"{load[2]:.1f} on 2 cores shared with other sessions).")
    if write:
        write_section("compositions_stochastic", text)
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-n", type=int, default=1_000_000)
    parser.add_argument("--skip-examples", action="store_true")
    parser.add_argument("--stochastic", action="store_true", help="only the stochastic-vs-model-space table (part 3)")
    parser.add_argument("--write", action="store_true", help="with --stochastic: write its section")
    args = parser.parse_args(argv)
    if args.stochastic:
        stochastic_main(args.write)
        return
    started = time.perf_counter()
    sizes = [n for n in (1_000, 30_162, 100_000, 1_000_000) if n <= args.max_n]
    rows, cov0 = covariance_rows(sizes, [1.0, 0.5])
    head = ["n", "c", "model space (s)", "iterations", "judged ok", "Lagrangian gap", "peak memory / data",
            "CVXPY (s) (objective - model space)", "generic stochastic to the judge's tolerance (s) (objective - "
            "model space)", "SLSQP, exact gradients (s)", "SLSQP, finite differences (paper's code) (s)",
            "CVXPY / model space"]
    body = [[r["n"], r["c"], f"{r['ms']:.3g}", r["ms_it"], "ok" if r["ms_ok"] else "NOT OK", f"{r['gap']:.1e}",
             f"{r['mem']:.2f}", _cell_time(r, "cvxpy", "cvxpy_diff"),
             _cell_time(r, "st", "st_diff") + ("" if "st" not in r else (" ok" if r["st_ok"] else " NOT OK")),
             _cell_slsqp(r, "sq"), _cell_slsqp(r, "fd"),
             f"{r['cvxpy'] / r['ms']:.0f}x" if "cvxpy" in r else "-"] for r in rows]
    text = ("## Compositions: the model-space exact method (`benchmarks/compositions.py`)\n\n"
            "**Logistic regression under the decision-boundary covariance constraint of Zafar et al. 2017** on Adult "
            f"by sex (102 features and an intercept, radius {RADIUS}), c a share of the covariance at the "
            f"unconstrained optimum ({cov0:.4g}). Rows beyond 30,162 are Adult rows drawn with replacement; 1,000 is "
            "a stratified subsample. Times are the solve times of one run per cell (the judge's time excluded); "
            "differences are judged objectives minus the model-space method's. SLSQP re-implements the paper's "
            "reference approach (scipy SLSQP on the same formulation, random start in [0, 1) as the paper's code); "
            "its cells give (objective difference, constraint violation, iterations). Peak memory: the traced "
            "NumPy/Python allocations of a second model-space solve of a new problem (building its program, e.g. the "
            "sparse copy of the one-hot design, included; the timed solve runs untraced) over the size of the dense "
            "design matrix. Cells 'not run': "
            f"the CVXPY program, the stochastic lowering and exact-gradient SLSQP beyond {CVXPY_MAX_N:,} rows, "
            f"finite-difference SLSQP beyond {SLSQP_FD_MAX_N:,} rows (minutes to tens of minutes each on this "
            "machine).\n\n" + table(head, body))
    if not args.skip_examples:
        ex_rows, total = composition_rows()
        text += ("\n\n**The four compositions of examples/compositions.py** (`fm.crosscheck`: the default exact "
                 "method against the generic stochastic lowering, both judged; the CVXPY program's time for "
                 f"comparison). Total cross-check time: {total:.1f} s.\n\n"
                 + table(["composition", "exact method", "exact (s)", "stochastic (s)", "cross-check",
                          "cross-check total (s)", "CVXPY (s)", "CVXPY - model space objective"], ex_rows))
    load = os.getloadavg()
    text += (f"\n\nRun: `python benchmarks/compositions.py --max-n {args.max_n}` ({time.perf_counter() - started:.0f} s; "
             f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on 2 cores shared with other "
             "jobs).")
    write_section("compositions", text)
    print(text)


if __name__ == "__main__":
    main()
