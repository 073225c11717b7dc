"""A held-out hunt on data the methods were never run on: scikit-learn's bundled breast cancer, wine and digits sets
and a synthetic set of correlated features, with ten declarations of the defaults suite's kinds (bounded group loss,
group DRO under equal opportunity with the logistic and the hinge loss, the covariance bound of Zafar et al. 2017,
equalized odds, a parity bound, the hinge excess over a level, balanced error, the AUC gap of Yao, Lin and Yang 2023,
a nearly infeasible bound). Defaults only, seed 0: every stochastic answer is compared with the exact backend's, and a
row is flagged FALSE OK when the stochastic result says converged while its objective is more than 1 % (of
max(|f*|, 0.1)) above the exact optimum f*. Prints one JSON line per case; docs/benchmarks.md ("Held-out hunt 14") has
the results of 2026-12-02 and what was tried on the NOT OK rows.

    python benchmarks/heldout_sklearn.py                    # every case (about 2 minutes on 2 cores)
    python benchmarks/heldout_sklearn.py bc eo_hinge        # the cases or data sets named
"""
from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fairmodel as fm  # noqa: E402
import defaults_generic as dg  # noqa: E402


def _standardized(X):
    sd = X.std(0)
    keep = sd > 0
    return (X[:, keep] - X[:, keep].mean(0)) / sd[keep]


def breast_cancer():
    from sklearn.datasets import load_breast_cancer
    b = load_breast_cancer()
    radius = b.data[:, 0]
    return fm.Dataset(_standardized(b.data), np.where(b.target == 1, 1.0, -1.0),
                      np.where(radius >= np.quantile(radius, 0.8), "large", "small"), name="breast cancer")


def wine():
    from sklearn.datasets import load_wine
    b = load_wine()
    alcohol = b.data[:, 0]
    return fm.Dataset(_standardized(b.data), np.where(b.target == 0, 1.0, -1.0),
                      np.where(alcohol >= np.median(alcohol), "high", "low"), name="wine")


def digits():
    from sklearn.datasets import load_digits
    b = load_digits()
    ink = b.data.sum(1)
    return fm.Dataset(_standardized(b.data), np.where(b.target < 5, 1.0, -1.0),
                      np.digitize(ink, np.quantile(ink, [1 / 3, 2 / 3])).astype(str), name="digits")


def correlated(n=4000, d=12, seed=7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) @ rng.standard_normal((d, d)) * 0.4
    g = rng.integers(0, 3, n)
    X[:, 0] += 0.7 * g
    p = 1 / (1 + np.exp(-(X @ rng.standard_normal(d) * 0.8 + 0.3 * g)))
    return fm.Dataset(_standardized(X), np.where(rng.random(n) < p, 1.0, -1.0), g.astype(str), name="correlated")


def _loose_bgl(data):
    w = dg.weights(data, 5.0)
    best = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    return dg.bounded_group_loss(data, 1.3 * best.solve().objective)


DATA = {"bc": breast_cancer, "wine": wine, "digits": digits, "correlated": correlated}
CASES = {
    "bgl_log": _loose_bgl,
    "eo_log": lambda d: dg.dro_equal_opportunity(d, 0.05),
    "eo_hinge": lambda d: dg.dro_equal_opportunity(d, 0.1, "hinge"),
    "cov_log": lambda d: dg.covariance(d, 0.01),
    "eodds_log": lambda d: dg.equalized_odds(d, 0.05),
    "parity_r1": lambda d: dg.parity(d, 0.05, radius=1.0),
    "tail_hinge": lambda d: dg.excess_tail(d, 0.2, "hinge"),
    "balanced": lambda d: dg.balanced_error(d, 0.1),
    "auc_gap": lambda d: dg.dro_auc_gap(d, 0.05),
    "tight": lambda d: dg.tight_bound(d),
}


def run(data_name, case_name) -> dict:
    row = {"data": data_name, "case": case_name}
    try:
        prob = CASES[case_name](DATA[data_name]())
        start = time.perf_counter()
        exact = prob.solve(backend="exact")
        row["exact"] = [exact.status, exact.objective, round(time.perf_counter() - start, 2)]
        start = time.perf_counter()
        fast = prob.solve(backend="stochastic", seed=0)
        row["stochastic"] = [fast.status, fast.objective, round(time.perf_counter() - start, 2)]
        row["above_exact"] = fast.objective - exact.objective
        if fast.ok and exact.ok and row["above_exact"] > 0.01 * max(abs(exact.objective), 0.1):
            row["flag"] = "FALSE OK"
        if not fast.ok:
            row["message"] = fast.message[:200]
    except fm.errors.FairmodelError as exc:
        row["refused"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return row


def main(names) -> None:
    warnings.simplefilter("ignore")
    for data_name in DATA:
        for case_name in CASES:
            if names and data_name not in names and case_name not in names:
                continue
            print(json.dumps(run(data_name, case_name), default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
