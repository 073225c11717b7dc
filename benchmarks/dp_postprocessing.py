"""Benchmark of DP post-processing (Chzhen, Hebiri, Taturyan, NeurIPS 2024) on the paper's data sets.

    PYTHONPATH=. python benchmarks/dp_postprocessing.py               # fidelity, 3 splits (~6 min of CPU)
    PYTHONPATH=. python benchmarks/dp_postprocessing.py --splits 10   # the paper's 10 splits
    PYTHONPATH=. python benchmarks/dp_postprocessing.py --stochastic  # also the stochastic run to its checks
    PYTHONPATH=. python benchmarks/dp_postprocessing.py --timing      # also Table 1 timing and scaling (~9 min)

Default run (section "dp_postprocessing" of docs/benchmarks.md): per eps of the paper's grid on Communities and
Crime and Law School, the test risk and the KS unfairness U_0 of group S = 0 (medians over the splits) of the paper
(Figure 2), of fairmodel's certified solution (the exact dual, the default backend), of the authors' computation
(fairmodel's reference variant of SGD3 + AC-SA^2, one run of the paper's T), and of the exact optimum with one
input changed to the authors' (their group marginals; their target scale; their final split); with the judge's
constraint check on the unlabeled points (the largest violation of max_l U_s(pi, l) <= eps_s over the splits,
against the judge's tolerance). ``--stochastic`` (section "dp_postprocessing_stochastic"): at eps = 2^-8, the
stochastic backend run until the judge's checks pass. ``--timing`` (section "dp_postprocessing_timing"): training
time per eps next to the paper's Table 1, and exact vs stochastic wall time and memory as the number of unlabeled
points grows (every size in a fresh subprocess, so that its peak resident memory, ru_maxrss, is its own).
"""
import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import table, write_section  # noqa: E402

SIZES = [1_000, 10_000, 20_000, 100_000, 1_000_000]
EXACT_LP_MAX, LBFGS_MAX, POOL_MAX = 20_000, 100_000, 1_000_000
FIDELITY = ("communities", "lawschool")
CHECKED_EPS = 8          # eps = 2^-8: the stochastic backend run to the judge's checks
CAP = 100_000_000        # its cap on the sampled points (the library's default cap)
FINAL_SPLIT = (0.8, 0.1, 0.1)   # train / unlabeled / test of the authors' final evaluation code


# -- part 1: fidelity to the paper, per eps ----------------------------------------------------------------------------
def check_cell(row) -> str:
    """The largest judged violation over the splits, its tolerance, and the number of ok results."""
    if not row["solved"]:
        return "infeasible (all splits)"
    return f"{row['violation']:.1e} / {row['tolerance']:.1e} ({row['ok']}/{row['solved']} ok)"


def fidelity(name: str, splits: int) -> str:
    from fairmodel.estimators.dp_reproduction import SETTINGS, run_split, summarize
    runs = {"exact": [run_split(name, k, backend="exact") for k in range(splits)],
            "reference": [run_split(name, k, variant="reference") for k in range(splits)],
            "frequencies": [run_split(name, k, backend="exact", marginals="frequencies") for k in range(splits)],
            "raw": [run_split(name, k, backend="exact", targets="raw") for k in range(splits)],
            "small": [run_split(name, k, backend="exact", fractions=FINAL_SPLIT) for k in range(splits)]}
    rows = {key: summarize(name, value) for key, value in runs.items()}
    first = runs["exact"][0]

    def cell(row, check=False):
        if not row["solved"]:
            return "infeasible"
        values = f"{row['risk_median']:.4f} / {row['U0_median']:.4f}"
        return values + (f"; {check_cell(row)}" if check else
                         "" if row["ok"] == splits else f" ({row['ok']}/{splits} ok)")
    out = [[ex["i"], f"{ex['paper_risk']:.4f} / {ex['paper_U0']:.4f}", cell(ex, check=True),
            cell(rows["reference"][k], check=True), cell(rows["frequencies"][k]), cell(rows["raw"][k]),
            cell(rows["small"][k])] for k, ex in enumerate(rows["exact"])]
    head = ["i (eps = 2^-i)", "paper", "fairmodel: the exact optimum; its check",
            f"the authors' computation (variant='reference', T = {first['T']:,}); its check",
            "exact optimum with the authors' p", "exact optimum, targets on the authors' [0, 1] scale",
            f"exact optimum, split 0.8 / 0.1 / 0.1 (N = {runs['small'][0]['n_unlabeled']}, L = "
            f"{runs['small'][0]['L']})"]
    base = np.median([r["base_risk"] for r in runs["exact"]])
    base_u = np.median([r["base_U"][SETTINGS[name]["group0"]] for r in runs["exact"]])
    return (f"#### {name} ({splits} splits, N = {first['n_unlabeled']} unlabeled points, L = {first['L']}, beta = "
            f"{first['beta']:.1f})\n\nBase model: risk {base:.4f}, U_0 {base_u:.4f} (paper "
            f"{SETTINGS[name]['paper_base'][0]:.4f}, {SETTINGS[name]['paper_base'][1]:.4f}).\n\n" + table(head, out))


def checked(splits: int) -> str:
    """At eps = 2^-8: the stochastic backend (SGD3 + AC-SA^2 as printed) until the judge's checks pass, vs exact."""
    from fairmodel.estimators.dp_reproduction import SETTINGS, run_split, summarize
    out = []
    for name in FIDELITY:
        cfg = SETTINGS[name]
        stoch = [run_split(name, k, eps_exponents=[CHECKED_EPS], variant="paper", stop="checks", T=CAP)
                 for k in range(splits)]
        exact = [run_split(name, k, eps_exponents=[CHECKED_EPS], backend="exact") for k in range(splits)]
        s, e = summarize(name, stoch)[0], summarize(name, exact)[0]
        samples = np.median([r["eps"][0]["samples"] for r in stoch])
        times = np.median([r["eps"][0]["time"] for r in stoch])
        k = cfg["i"].index(CHECKED_EPS)
        out.append([name, f"{s['risk_median']:.4f} / {s['U0_median']:.4f}", check_cell(s), f"{samples:,.0f}",
                    f"{times:.1f}", f"{e['risk_median']:.4f} / {e['U0_median']:.4f}",
                    f"{cfg['paper_risk'][k]:.4f} / {cfg['paper_U0'][k]:.4f}"])
    head = ["data set", "stochastic, stop='checks': risk / U_0", "its check: violation / tolerance",
            "sampled points", "time (s)", "exact: risk / U_0", "paper: risk / U_0"]
    return table(head, out)


def timing(splits: int) -> str:
    from fairmodel.estimators.dp_reproduction import SETTINGS, run_split
    rows = []
    for name, cfg in SETTINGS.items():
        for variant in ("reference", "paper"):
            single = [run_split(name, k, variant=variant, parallel=False) for k in range(splits)]
            grid = [run_split(name, k, variant=variant, parallel=True) for k in range(splits)]
            per_eps = float(np.median([e["time"] for r in single for e in r["eps"]]))
            grid_time = float(np.median([r["eps"][0]["grid_time"] for r in grid]))
            n_eps = len(cfg["i"])
            calls = single[0]["eps"][0]["samples"]
            rows.append([name, variant, cfg["T"], calls, cfg["paper_time"], per_eps, cfg["paper_time"] / per_eps,
                         grid_time, n_eps, grid_time / n_eps, cfg["paper_time"] / (grid_time / n_eps)])
    head = ["data set", "variant", "T", "gradients per eps", "paper per eps (s)", "ours per eps, one run (s)",
            "speed-up", "ours, whole grid in one run (s)", "eps in grid", "ours per eps, amortized (s)", "speed-up"]
    return table(head, rows)


# -- part 2: scaling with the number of unlabeled points -----------------------------------------------------------
def base_models(d: int = 5):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=d) / math.sqrt(d), rng.normal(size=d)

    def eta(X):
        return np.tanh(X @ a)

    def tau(X):
        q = 1.0 / (1.0 + np.exp(-(X @ b - 1.0)))
        return np.column_stack([q, 1.0 - q])
    return eta, tau


def chunks(n: int, seed: int = 1, size: int = 65_536, d: int = 5):
    rng = np.random.default_rng(seed)
    for start in range(0, n, size):
        yield rng.normal(size=(min(size, n - start), d))


def child(kind: str, n: int) -> dict:
    """One measurement in this (fresh) process: wall time of the solve and peak RSS."""
    import fairmodel as fm
    eta, tau = base_models()
    p = np.array([0.27, 0.73]) if kind == "stream" else "calibrated"
    post = fm.GridPredictor(eta=eta, tau=tau, L=20, B=1.0, p=p)
    entropy = 0.0 if kind == "lp" else 1.0 / 100
    prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.01], entropy=entropy)
    X = None if kind == "stream" else np.concatenate(list(chunks(n)))
    start = time.perf_counter()
    if kind == "lp":
        res = prob.solve(data=X)  # HiGHS interior point
    elif kind == "lbfgs":
        res = prob.solve(data=X, method="lbfgs")
    elif kind == "pool":
        res = prob.solve(backend="stochastic", data=X, seed=0, T=20_000, certify=False)
    else:  # every point of the stream once, in batches giving 20,000 steps
        res = prob.solve(backend="stochastic", data=chunks(n), seed=0, T=n, batch_size=max(1, n // 20_000),
                         certify=False)
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"time": elapsed, "solve": res.timings["solve"], "rss": rss,
            "objective": res.objective, "violation": res.max_violation, "status": res.status}


def scaling() -> str:
    limits = {"lp": EXACT_LP_MAX, "lbfgs": LBFGS_MAX, "pool": POOL_MAX, "stream": SIZES[-1]}
    rows = []
    for n in SIZES:
        row = [f"{n:,}"]
        for kind in ("lp", "lbfgs", "pool", "stream"):
            if n > limits[kind]:
                row.append("–")
                continue
            out = subprocess.run([sys.executable, __file__, "--child", kind, str(n)], capture_output=True, text=True)
            if out.returncode:
                row.append(f"failed: {out.stderr.strip().splitlines()[-1][:60]}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            row.append(f"{r['time']:.3g} s, {r['rss']:.0f} MiB (R_beta {r['objective']:.4f}, "
                       f"viol {r['violation']:.1e})")
        rows.append(row)
    head = ["unlabeled points n", "exact LP (3), CVXPY + HiGHS (IPM)", "exact entropic dual (5), L-BFGS-B",
            "stochastic, pool (T = 20,000)", "stochastic, stream (each point once)"]
    return table(head, rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--stochastic", action="store_true",
                        help=f"also the stochastic run to the judge's checks at eps = 2^-{CHECKED_EPS} (~3 min)")
    parser.add_argument("--timing", action="store_true", help="also the timing and scaling section (~9 min)")
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    start = time.perf_counter()
    parts = ["### Fidelity to the paper, per eps (Figure 2 of the paper)", "",
             f"Protocol of the paper's Section 6 and Appendix G ({args.splits} splits; 0.4 / 0.4 / 0.2 split, "
             f"LinearRegression and LogisticRegression, L = floor(sqrt(N)), beta = 0.5 sqrt(N) log2 N). Each cell: "
             f"the test risk / the KS unfairness of group S = 0, **medians** over the splits. Each check: the "
             f"largest violation over the splits of the constraint max_l U_s(pi, l) <= eps_s on the unlabeled points, "
             f"as the judge computes it, / the judge's tolerance (exact: 1e-6; stochastic: 20% of eps + 1e-6), and "
             f"the number of ok results. 'fairmodel' is the certified optimum of the declared problem (the default "
             f"backend; p calibrated on the unlabeled points, targets mapped to [-1, 1]). 'the authors' "
             f"computation' is fairmodel's variant='reference' (SGD3 + AC-SA^2 as the authors' code runs it, one run "
             f"of T, 2T gradients) on the same problem. The last three columns change one input of the problem to "
             f"the authors' (exact optima, all ok unless said): p = the group frequencies of the whole data set "
             f"(below eps ~ 2^-10 the constraints then cannot be met on the unlabeled points, |E t_hat_0| > m eps: "
             f"'infeasible'); the targets on the [0, 1] scale with the grid on [-1, 1] (B = 1), which leaves half of "
             f"the grid's points unused; the split of the authors' final evaluation code, 0.8 / 0.1 / 0.1 (a quarter "
             f"of the unlabeled points, so half the grid points: L = floor(sqrt(N))). The constraint bounds the gap "
             f"of each grid point, so the fewer points the predictions occupy, the tighter a given eps.", ""]
    for name in FIDELITY:
        parts += [fidelity(name, args.splits), ""]
    parts += [f"Full run: {time.perf_counter() - start:.0f} s."]
    write_section("dp_postprocessing", "\n".join(parts))
    print("\n".join(parts))
    if args.stochastic:
        start = time.perf_counter()
        parts = [f"### The stochastic backend run until the judge's checks pass, at eps = 2^-{CHECKED_EPS}", "",
                 "SGD3 + AC-SA^2 as printed (the library's default stochastic method and stopping rule: rounds "
                 "warm-started at the previous output until the constraint violations and the duality gap pass; "
                 f"cap {CAP:,} points), the problem and splits of the section above, medians over "
                 f"{args.splits} splits, next to the exact optimum.", "", checked(args.splits), "",
                 f"Full run: {time.perf_counter() - start:.0f} s."]
        write_section("dp_postprocessing_stochastic", "\n".join(parts))
        print("\n".join(parts))
    if not args.timing:
        return
    start = time.perf_counter()
    parts = ["### Training time per eps on the paper's data sets (Table 1 of the paper)", "",
             f"Protocol of the paper's Section 6 and Appendix G ({args.splits} splits, N ~ 800 unlabeled "
             f"points, L = 28, beta ~ 136, batch size 1, T = 15,000 / 5,000 / 10,000). 'reference' is "
             f"SGD3 + AC-SA^2 as the authors' code runs it (2T gradients, as timed in the paper), 'paper' is "
             f"Algorithms 3-4 as printed (T gradients). 'one run' solves one eps (median over the grid and the "
             f"splits); 'whole grid' solves all eps of the grid in one vectorized run on the same points "
             f"(identical results). The paper's times are from an Intel i7-1195G7 laptop; the reduction "
             f"baseline ADW took 378 / 241 / 175 s per eps. These fixed-T runs do not meet the tighter eps on the "
             f"unlabeled points: see the section 'Fidelity to the paper' for their constraint checks.", "",
             timing(args.splits), "",
             "### Exact vs stochastic as the number of unlabeled points grows", "",
             "Synthetic base models (eta = tanh(x . a), tau logistic, d = 5), K = 2, L = 20, beta = 100 (LP: "
             "beta = inf), eps = 0.01. Wall time of `prob.solve` including the base models' predictions; peak "
             "resident memory of the process (a process that has only imported fairmodel, NumPy, SciPy and CVXPY "
             "peaks at ~245 MiB). The stream is generated chunk by chunk (65,536 rows) and never stored; it is "
             "judged on a 20,000-point reservoir sample.", "", scaling(),
             "", f"Full run: {time.perf_counter() - start:.0f} s."]
    write_section("dp_postprocessing_timing", "\n".join(parts))
    print("\n".join(parts))


if __name__ == "__main__":
    main()
