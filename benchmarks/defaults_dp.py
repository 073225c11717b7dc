"""DP post-processing with default options on problems the defaults were not tuned on (Chzhen, Hebiri, Taturyan,
NeurIPS 2024): other data sets, targets and sensitive attributes, subsets, 2 to 8 groups, synthetic badly scaled and
collinear features, tolerances eps from loose (0.1) to tight (0.002), beta from 30 to 300, grids of 11 to 81 points,
given (not calibrated) group marginals, sample weights, a cost grid (classification), and 1,000 to 100,000 unlabeled
points. Every case runs ``fm.crosscheck(prob, data=..., seed=0)`` with no option: the exact dual (L-BFGS-B) and the
stochastic default (SGD3 + AC-SA^2 in rounds that stop on the judge's checks).

    PYTHONPATH=. python benchmarks/defaults_dp.py              # every case: case, ok, exact s, stochastic s, failed
    PYTHONPATH=. python benchmarks/defaults_dp.py law adult    # the cases whose name contains one of the words
    PYTHONPATH=. python benchmarks/defaults_dp.py --speed      # bundled problems: the old fixed budget vs the new rule

``--speed`` solves each bundled problem (examples/problems/dp_*.toml) in one process, alternating the old default
(one run of T = 20,000 gradients, ``stop="budget"``, M = 2 beta sigma^2) and the new default (``stop="checks"``),
and prints the time to the solve's end, whether the result is ok, and the checks' share of the time.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fairmodel as fm  # noqa: E402


# -- case builders ------------------------------------------------------------------------------------------------
def _fit(X, y, s, classification=False):
    from sklearn.linear_model import LinearRegression, LogisticRegression
    clf = LogisticRegression(max_iter=2000).fit(X, s)
    if classification:
        return LogisticRegression(max_iter=2000).fit(X, y), clf
    return LinearRegression().fit(X, y), clf


def _scaled(y, B=1.0):
    y = np.asarray(y, dtype=float)
    return B * (2 * (y - y.min()) / np.ptp(y) - 1)


def real(loader, target, sensitive, n=2000, L=10, beta=100.0, eps=0.01, p="calibrated", seed=0, B=1.0,
         classification=False, weights=False):
    """Base models on n rows, the post-processing on n other rows of a bundled data set."""
    data = getattr(fm.datasets, f"load_{loader}")(target=target, sensitive=sensitive)
    y = data.y if classification else _scaled(data.y, B)
    s = np.asarray(data.groups.codes)
    rows = np.random.default_rng(seed).permutation(data.n_samples)
    n = min(n, data.n_samples // 2)
    train, unl = rows[:n], rows[n:2 * n]
    reg, clf = _fit(data.X[train], y[train], s[train], classification)
    if p == "train":
        p = np.bincount(s[train], minlength=len(clf.classes_))[clf.classes_] / n
    return _problem(reg, clf, data.X[unl], L, B, beta, eps, p, classification, weights, seed)


def synthetic(n=2000, K=2, d=5, L=10, beta=100.0, eps=0.01, seed=0, scales=None, collinear=False, B=1.0,
              classification=False, weights=False, p="calibrated"):
    """Gaussian features (optionally rescaled column by column, or with near-copies of a column), K groups from a
    noisy linear score, a target that depends on the features and the group."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, d))
    score = X @ rng.normal(size=d) / np.sqrt(d) + 0.7 * rng.normal(size=2 * n)
    s = np.digitize(score, np.quantile(score, np.linspace(0, 1, K + 1)[1:-1] + rng.uniform(-0.05, 0.05, K - 1)))
    signal = np.tanh(X @ rng.normal(size=d) / np.sqrt(d) + 0.4 * (s - K / 2) / K + 0.3 * rng.normal(size=2 * n))
    y = (signal > np.quantile(signal, [1 / 3, 2 / 3])[:, None]).sum(axis=0) if classification else B * signal
    if collinear:
        X = np.column_stack([X, X[:, 0] + 1e-3 * rng.normal(size=2 * n), X[:, 1] * 2.0])
    if scales is not None:
        X = X * np.asarray(scales)[: X.shape[1]]
    reg, clf = _fit(X[:n], y[:n], s[:n], classification)
    if p == "train":
        p = np.bincount(s[:n], minlength=K) / n
    return _problem(reg, clf, X[n:], L, B, beta, eps, p, classification, weights, seed)


def _problem(reg, clf, X, L, B, beta, eps, p, classification, weights, seed):
    if classification:
        proba = reg.predict_proba(X)
        post = fm.GridPredictor(cost=1.0 - proba, tau=clf.predict_proba(X), grid=reg.classes_, p=p)
        objective, data = fm.expected_cost(post), None
    else:
        post = fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=L, B=B, p=p, clip=True)
        objective, data = fm.squared_risk(post), X
    prob = fm.Problem(fm.Minimize(objective), [fm.dp_gap(post) <= eps], entropy=1.0 / beta)
    options = {} if data is None else {"data": data}
    if weights:
        options["sample_weight"] = np.random.default_rng(seed + 1).uniform(0.2, 1.0, size=len(X))
    return prob, options


SKEW = [1e-3, 1e-2, 1.0, 1e2, 1e3]
CASES = {
    # Law School: GPA, race or gender, subsets, grids, tolerances
    "law_gpa_race_L20_eps.01": lambda: real("lawschool", "ugpa", "race", L=20),
    "law_gpa_race_eps.003": lambda: real("lawschool", "ugpa", "race", eps=0.003),
    "law_gpa_race_eps.03_beta300": lambda: real("lawschool", "ugpa", "race", eps=0.03, beta=300),
    "law_gpa_gender_eps.01": lambda: real("lawschool", "ugpa", "gender"),
    "law_gpa_gender_eps.005_beta50": lambda: real("lawschool", "ugpa", "gender", eps=0.005, beta=50),
    "law_gpa_race_n1000_L5": lambda: real("lawschool", "ugpa", "race", n=1000, L=5, seed=1),
    "law_gpa_race_n10000_L20": lambda: real("lawschool", "ugpa", "race", n=10000, L=20, seed=2),
    "law_gpa_race_p_train_eps.01": lambda: real("lawschool", "ugpa", "race", p="train"),
    "law_gpa_race_weights": lambda: real("lawschool", "ugpa", "race", weights=True, seed=3),
    # Adult: age (regression), income (classification), sex, race (5 groups)
    "adult_age_sex_eps.01": lambda: real("adult", "age", "sex"),
    "adult_age_sex_eps.05": lambda: real("adult", "age", "sex", eps=0.05),
    "adult_age_sex_eps.02_beta300": lambda: real("adult", "age", "sex", eps=0.02, beta=300),
    "adult_age_sex_eps.1": lambda: real("adult", "age", "sex", eps=0.1),
    "adult_age_race_eps.02": lambda: real("adult", "age", "race", eps=0.02),
    "adult_age_race_eps.05": lambda: real("adult", "age", "race", eps=0.05, seed=1),
    "adult_age_sex_n20000_L20": lambda: real("adult", "age", "sex", n=15000, L=20, seed=2),
    "adult_age_sex_p_train": lambda: real("adult", "age", "sex", p="train", eps=0.02),
    "adult_income_sex_cost_eps.01": lambda: real("adult", "income", "sex", classification=True),
    "adult_income_race_cost_eps.02": lambda: real("adult", "income", "race", classification=True, eps=0.02),
    # Communities and Crime (about 1,000 unlabeled points)
    "communities_eps.05": lambda: real("communities", "ViolentCrimesPerPop", "race", eps=0.05),
    "communities_eps.02": lambda: real("communities", "ViolentCrimesPerPop", "race", eps=0.02),
    "communities_eps.01_beta50": lambda: real("communities", "ViolentCrimesPerPop", "race", beta=50),
    "communities_L5_eps.03": lambda: real("communities", "ViolentCrimesPerPop", "race", L=5, eps=0.03, seed=1),
    # synthetic: groups, sizes, scaling, collinearity, grids, B, weights, vectors of eps
    "syn_K2_n1000": lambda: synthetic(n=1000),
    "syn_K3_n2000_eps.02": lambda: synthetic(K=3, eps=0.02, seed=1),
    "syn_K4_n5000_eps.02": lambda: synthetic(n=5000, K=4, eps=0.02, seed=2),
    "syn_K6_n2000_eps.03": lambda: synthetic(K=6, eps=0.03, seed=3),
    "syn_K8_n5000_eps.05": lambda: synthetic(n=5000, K=8, eps=0.05, seed=4),
    "syn_K3_badly_scaled": lambda: synthetic(K=3, eps=0.02, scales=SKEW, seed=5),
    "syn_K2_collinear": lambda: synthetic(collinear=True, seed=6),
    "syn_K2_n100000": lambda: synthetic(n=100000, seed=7),
    "syn_K3_n20000_beta300": lambda: synthetic(n=20000, K=3, beta=300, eps=0.02, seed=8),
    "syn_K2_L40_eps.01": lambda: synthetic(L=40, seed=9),
    "syn_K2_beta30_eps.005": lambda: synthetic(beta=30, eps=0.005, seed=10),
    "syn_K4_eps_vector": lambda: synthetic(K=4, eps=[0.01, 0.02, 0.03, 0.05], seed=11),
    "syn_K2_weights": lambda: synthetic(weights=True, seed=12),
    "syn_K3_B2_eps.02": lambda: synthetic(K=3, B=2.0, eps=0.02, seed=13),
    "syn_K2_eps.002": lambda: synthetic(eps=0.002, seed=14),
    "syn_K3_cost_eps.02": lambda: synthetic(K=3, classification=True, eps=0.02, seed=15),
    "syn_K5_p_train_eps.03": lambda: synthetic(K=5, p="train", eps=0.03, seed=16),
    "syn_K2_n50000_L20_eps.005": lambda: synthetic(n=50000, L=20, eps=0.005, seed=17),
}


def run_case(name: str) -> dict:
    """One case with defaults only: the cross-check's verdict, both times, and what failed (with the advice)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob, options = CASES[name]()
        start = time.perf_counter()
        try:
            report = fm.crosscheck(prob, seed=0, **options)
        except Exception as exc:       # an error is a case that is not ok; its message says why
            return {"case": name, "ok": False, "exact_s": float("nan"), "stochastic_s": float("nan"),
                    "total_s": time.perf_counter() - start, "rounds": 0, "samples": 0, "check_s": 0.0,
                    "failed": f"{type(exc).__name__}", "message": str(exc)}
        total = time.perf_counter() - start
    s = report.stochastic
    failed = [c.name for c in report.failed()] + [f"{r.backend}: {c['name']}" for r in (report.exact, s)
                                                   for c in r.failed_checks()]
    return {"case": name, "ok": report.ok, "exact_s": report.exact.timings.get("total", float("nan")),
            "stochastic_s": s.timings.get("total", float("nan")), "total_s": total,
            "rounds": s.metrics.get("rounds"), "samples": s.metrics.get("samples_used"),
            "check_s": s.metrics.get("check_time_s", 0.0), "failed": "; ".join(failed),
            "message": "" if report.ok else (s.message if not s.ok else report.exact.message)}


def table(rows: list[dict]) -> str:
    lines = ["| case | ok | exact s | stochastic s | rounds | points sampled | checks s | what failed |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {'ok' if r['ok'] else 'NOT OK'} | {r['exact_s']:.2f} | {r['stochastic_s']:.2f} "
                     f"| {r['rounds']} | {r['samples']:,} | {r['check_s']:.2f} | {r['failed'] or '-'} |")
    ok = sum(r["ok"] for r in rows)
    lines.append(f"\n{ok} / {len(rows)} ok ({100 * ok / max(1, len(rows)):.0f} %)")
    return "\n".join(lines)


# -- old fixed budget vs stop on the checks, on the bundled problems ----------------------------------------------
def speed(repeats: int = 3) -> str:
    import glob
    from fairmodel.frontends import problemfile
    rows = []
    for path in sorted(glob.glob(str(Path(__file__).resolve().parent.parent / "examples" / "problems" / "dp_*.toml"))):
        spec = problemfile.read(path)
        prob = problemfile.build_problem(spec, problemfile.load_data(spec))
        runs = {"old": [], "new": []}
        for _ in range(repeats):
            for label, opts in (("old", {"stop": "budget", "T": 20000, "smoothness": "sigma2"}), ("new", {})):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = prob.solve(backend="stochastic", seed=0, **opts)
                runs[label].append(res)
        row = [Path(path).stem]
        for label in ("old", "new"):
            res = runs[label]
            t = float(np.median([r.timings["total"] for r in res]))
            share = float(np.median([r.metrics.get("check_time_s", 0.0) / r.timings["total"] for r in res]))
            row += [t, res[0].ok, share, res[0].metrics.get("samples_used")]
        rows.append(row)
    lines = ["| problem | old: time to end (s) | old ok | old checks share | old points | new: time to end (s) | "
             "new ok | new checks share | new points | new / old |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]:.2f} | {r[2]} | {r[3]:.0%} | {r[4]:,} | {r[5]:.2f} | {r[6]} | {r[7]:.0%} | "
                     f"{r[8]:,} | {r[5] / r[1]:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("words", nargs="*", help="run the cases whose name contains one of these words")
    parser.add_argument("--speed", action="store_true", help="old fixed budget vs stop on the checks")
    args = parser.parse_args()
    if args.speed:
        print(speed())
        return
    names = [n for n in CASES if not args.words or any(w in n for w in args.words)]
    rows = []
    for name in names:
        row = run_case(name)
        rows.append(row)
        print(f"{name}: {'ok' if row['ok'] else 'NOT OK'} exact {row['exact_s']:.2f}s stochastic "
              f"{row['stochastic_s']:.2f}s rounds {row['rounds']} {row['failed']}", flush=True)
        if not row["ok"]:
            print(f"    {row['message'][:600]}", flush=True)
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
