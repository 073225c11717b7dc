"""Peak memory and time of the exact programs guarded by fairmodel.exact.budget, at a few sizes.

Each (program, size) runs in a fresh subprocess; the peak resident memory (ru_maxrss) after the data are built is
subtracted from the peak after the program is built and solved. The per-unit constants of
:mod:`fairmodel.exact.budget` are fitted to these rows (bytes per unit at the largest size, rounded up).

    PYTHONPATH=. python benchmarks/guard_memory.py [case ...]     # prints a markdown table
"""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

CASES = {
    "dp_lp": [2000, 4000, 8000],
    "dp_entropic": [1000, 2000, 4000],
    "gdro_epigraph": [5000, 10000, 20000],
    "gdro_epigraph_d100": [5000, 10000],
    "strategic": [2000, 4000, 8000],
    "strategic_judge": [2000, 4000, 8000],
    "partial": [1000, 2000, 4000],
}


def _rss() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0


def run_case(case: str, n: int) -> dict:
    import time

    import numpy as np

    import fairmodel as fm
    from fairmodel.exact import budget
    rng = np.random.default_rng(0)
    warnings.simplefilter("ignore")
    if case.startswith("dp"):
        from fairmodel.exact import dp as exact_dp
        from fairmodel.oracles.dp_dual import DualProblem
        m, K = 41, 2
        tau = rng.dirichlet([2.0, 3.0], size=n)
        T = 1.0 - tau / tau.mean(axis=0)
        grid = np.linspace(-1, 1, m)
        eta = np.clip(0.8 * tau[:, 0] - 0.4 + 0.2 * rng.normal(size=n), -1, 1)
        R = (eta[:, None] - grid[None, :]) ** 2
        beta = np.inf if case == "dp_lp" else 100.0
        dual = DualProblem(R, T, np.full(K, 0.01), beta)
        estimate = budget.dp_primal(n, m, K, entropic=case != "dp_lp")
        base, start = _rss(), time.perf_counter()
        exact_dp.solve_primal(dual)
    elif case.startswith("gdro_epigraph"):
        from fairmodel.exact import gdro as exact_gdro
        from fairmodel.families.gdro import group_risks_of
        d, g = (100 if case.endswith("d100") else 10), 3
        data = fm.datasets.make_gdro_synthetic(m=g, d=d, n_per_group=n // g, flip=0.1, seed=0)
        w = fm.Weights(data.n_features, radius=3.0)
        risks = group_risks_of(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))
        _ = risks.X
        estimate = budget.gdro_epigraph(risks.n_samples, risks.X.shape[1])
        base, start = _rss(), time.perf_counter()
        exact_gdro.solve_epigraph(risks)
    elif case.startswith("strategic"):
        from fairmodel.exact import strategic_dro as exact_sdro
        data = fm.datasets.make_strategic_synthetic(n=n, p=10, seed=0)
        w = fm.Weights(data.n_features)
        loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=range(5), zeta=0.05), data.y)
        atom = fm.wasserstein_worst_case(loss, radius=0.1, label_cost=0.5)
        model = atom.model
        estimate = budget.strategic(model.n, model.p, judge=case != "strategic")
        base, start = _rss(), time.perf_counter()
        if case == "strategic":
            exact_sdro.solve_wdrsc(model)
        else:
            exact_sdro.inner_min(model, np.zeros(model.n))
    elif case == "partial":
        from fairmodel.exact.partial import Subproblem
        X = rng.normal(size=(n, 5))
        y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
        s = (X[:, 1] > 0).astype(int)
        data = fm.Dataset(X, y, groups=s)
        w = fm.Weights(5, intercept=True)
        sc = data.score(w)
        prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(sc, data.y)) + 1e-2 * fm.sum_squares(w)),
                          [fm.partial_dp(sc, data.groups, band=(0.7, 1.0), levels=4) <= 0.1])
        fam = prob.family
        program = fam.program
        estimate = budget.partial_program(program)
        base, start = _rss(), time.perf_counter()
        sub = Subproblem(program, 0.1, None)
        sub.solve(program.start())
    else:
        raise SystemExit(f"unknown case {case}")
    elapsed = time.perf_counter() - start
    return {"case": case, "n": n, "peak_bytes": max(_rss() - base, 0.0), "seconds": elapsed,
            "estimate_bytes": estimate.bytes, "estimate_seconds": estimate.seconds, "units": estimate.units}


def main(argv):
    if argv and argv[0] == "--one":
        print(json.dumps(run_case(argv[1], int(argv[2]))))
        return
    cases = argv or list(CASES)
    print("| program | n | size units | measured peak (MiB) | estimate (MiB) | measured s | estimate s |")
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        for n in CASES[case]:
            out = subprocess.run([sys.executable, __file__, "--one", case, str(n)], capture_output=True, text=True)
            if out.returncode:
                print(f"| {case} | {n} | failed: {out.stderr.strip().splitlines()[-1]} |||||", flush=True)
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {case} | {n} | {r['units']:,.0f} | {r['peak_bytes'] / 2 ** 20:.0f} | "
                  f"{r['estimate_bytes'] / 2 ** 20:.0f} | {r['seconds']:.1f} | "
                  f"{r['estimate_seconds'] if r['estimate_seconds'] is None else round(r['estimate_seconds'], 1)} |",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
