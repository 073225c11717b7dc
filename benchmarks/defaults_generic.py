"""The generic stochastic lowering with its defaults only, on compositions and data it was not tuned on.

Each case builds a declaration (a composition of the DSL's atoms that the paper families decline, so the generic
convex reduction solves it) on data other than the bundled examples': other sensitive attributes and subsets of
the bundled sets, synthetic data with badly scaled or collinear features, 2 to 10 groups, radii 0.5 to 50,
constraints from loose to nearly infeasible, logistic, hinge and squared losses, 1e3 to 1e5 rows. The runner
cross-checks every case with ``fm.crosscheck(prob, seed=0)`` (defaults only: the stochastic method stops when
the judge's checks pass) and prints a table: case, ok, exact and stochastic seconds, epochs, and what failed
(the failing checks and the advice of the message). ``--speed`` compares, on the bundled composition problems
(examples/compositions.py and the problem files with ``family = "composition"``), the time to an ok result of the
old fixed budget (``stop="budget"``, 40 epochs) and of the new rule, side by side in one process.

    python benchmarks/defaults_generic.py                 # every case (about 20 minutes on 2 cores)
    python benchmarks/defaults_generic.py --quick         # the fast subset of the tests
    python benchmarks/defaults_generic.py --cases a,b     # some cases
    python benchmarks/defaults_generic.py --speed         # old budget against the new rule, bundled problems
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fairmodel as fm  # noqa: E402


# -- data -------------------------------------------------------------------------------------------------------
def synthetic(n, d=10, groups=3, seed=0, scales=None, collinear=0, shift=0.5, regression=False):
    """Logistic (or linear) labels with a group shift; ``scales``: per-feature multipliers (badly scaled
    features); ``collinear``: that many extra columns that are noisy copies of the first ones."""
    rng = np.random.default_rng(seed)
    shares = np.linspace(2.0, 1.0, groups)
    g = rng.choice(groups, size=n, p=shares / shares.sum())
    X = rng.normal(size=(n, d)) + shift * g[:, None] * (np.arange(d) < 3)
    beta = np.random.default_rng(seed + 1).normal(size=d) / np.sqrt(d)
    if regression:
        y = X @ beta + 0.3 * (g - 1) + 0.5 * rng.normal(size=n)
    else:
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-(2 * X @ beta + 0.5 * (g - 1)))), 1.0, -1.0)
    if collinear:
        X = np.hstack([X, X[:, :collinear] + 1e-3 * rng.normal(size=(n, collinear))])
    if scales is not None:
        X = X * np.asarray(scales, dtype=float)[: X.shape[1]]
    return fm.Dataset(X, y, groups=g, name=f"synthetic(n={n}, d={X.shape[1]}, m={groups})")


def shifted_targets(data, shift=10.0, scale=5.0):
    """The same data with regression targets shift + scale * y (losses in the tens, not below 1)."""
    return fm.Dataset(data.X, shift + scale * data.y, groups=data.groups.codes, name=f"{data.name}, shifted targets")


def adult(sensitive, n=None, seed=0):
    data = fm.datasets.load_adult(sensitive=sensitive)
    return data if n is None else data.subsample(n, seed=seed)


def lawschool(sensitive, n=None, seed=0):
    data = fm.datasets.load_lawschool(sensitive=sensitive)
    return data if n is None else data.subsample(n, seed=seed)


# -- declarations -----------------------------------------------------------------------------------------------
LOSSES = {"logistic": fm.logistic_loss, "hinge": fm.hinge_loss, "squared": fm.squared_loss}


def weights(data, radius, intercept=True):
    return fm.Weights(data.n_features, radius=radius, intercept=intercept)


def bounded_group_loss(data, bound, loss="logistic", radius=5.0):
    """Agarwal, Dudik, Wu 2019: minimize the mean loss with every group's loss at most ``bound``."""
    w = weights(data, radius)
    ell = LOSSES[loss](data.score(w), data.y)
    return fm.Problem(fm.Minimize(fm.mean(ell)), [fm.max(fm.group_mean(ell, data.groups)) <= bound])


def dro_equal_opportunity(data, eps, loss="logistic", radius=5.0):
    """Group DRO under the linear surrogate of equal opportunity (Donini et al. 2018)."""
    w = weights(data, radius)
    s = data.score(w)
    risks = fm.group_mean(LOSSES[loss](s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= eps])


def covariance(data, c, loss="logistic", radius=5.0, group=0, ridge=None):
    """Mean loss under the decision-boundary covariance constraint of Zafar et al. 2017 (optionally with a
    ridge term and no radius)."""
    w = weights(data, radius)
    s = data.score(w)
    z = (data.groups.codes == group).astype(float)
    objective = fm.mean(LOSSES[loss](s, data.y))
    if ridge is not None:
        objective = objective + ridge * fm.sum_squares(w)
    return fm.Problem(fm.Minimize(objective), [fm.abs(fm.mean((z - z.mean()) * s)) <= c])


def equalized_odds(data, eps, loss="logistic", radius=5.0):
    """Mean loss under the equalized-odds surrogate (Donini et al. 2018)."""
    w = weights(data, radius)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.mean(LOSSES[loss](s, data.y))), [fm.equalized_odds_gap(s, data) <= eps])


def parity(data, eps, loss="logistic", radius=5.0):
    """Mean loss with the groups' mean scores within eps of each other (a demographic-parity surrogate)."""
    w = weights(data, radius)
    s = data.score(w)
    m = fm.group_mean(s, data.groups)
    return fm.Problem(fm.Minimize(fm.mean(LOSSES[loss](s, data.y))), [fm.max(m) - fm.min(m) <= eps])


def excess_tail(data, level, loss="logistic", radius=5.0):
    """The mean loss plus the groups' risks above ``level`` (a sum of positive parts), unconstrained."""
    w = weights(data, radius)
    ell = LOSSES[loss](data.score(w), data.y)
    risks = fm.group_mean(ell, data.groups)
    return fm.Problem(fm.Minimize(fm.mean(ell) + fm.sum(fm.pos(risks - level))))


def balanced_error(data, eps, radius=5.0):
    """The balanced logistic loss (mean over the positives plus mean over the negatives) under equal
    opportunity."""
    w = weights(data, radius)
    s = data.score(w)
    ell = fm.logistic_loss(s, data.y)
    objective = 0.5 * fm.mean(ell, where=data.y > 0) + 0.5 * fm.mean(ell, where=data.y <= 0)
    return fm.Problem(fm.Minimize(objective), [fm.equal_opportunity_gap(s, data) <= eps])


def dro_auc_gap(data, kappa, radius=5.0):
    """Group DRO under the intra-group AUC gap of Yao, Lin, Yang (moment form)."""
    w = weights(data, radius)
    s = data.score(w)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.auc_gap(s, data, kind="intra") <= kappa])


def l1_regularized_parity(data, eps, lam=0.01, radius=None):
    """Logistic loss plus an l1 penalty (a non-smooth exact term) under a parity constraint."""
    w = weights(data, radius)
    s = data.score(w)
    m = fm.group_mean(s, data.groups)
    objective = fm.mean(fm.logistic_loss(s, data.y)) + lam * fm.norm(w, 1)
    return fm.Problem(fm.Minimize(objective), [fm.max(m) - fm.min(m) <= eps])


def norm_budget(data, budget, loss="logistic"):
    """Group DRO with the weights' l1 norm as a constraint (a non-smooth constraint piece), no radius."""
    w = weights(data, None)
    risks = fm.group_mean(LOSSES[loss](data.score(w), data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.norm(w, 1) <= budget])


def weighted_bgl(data, bound, seed=0):
    """Bounded group loss with survey weights (sample_weight= in the loss: a weighted mean in every aggregate)."""
    sw = np.random.default_rng(seed).uniform(0.2, 5.0, data.n_samples)
    w = weights(data, 5.0)
    ell = fm.logistic_loss(data.score(w), data.y, sample_weight=sw)
    return fm.Problem(fm.Minimize(fm.mean(ell)), [fm.max(fm.group_mean(ell, data.groups)) <= bound])


def tight_bound(data, loss="logistic", radius=5.0, slack=1.02):
    """Bounded group loss with the bound ``slack`` times the smallest achievable largest group risk (the group
    DRO optimum, solved exactly): a nearly infeasible constraint."""
    w = weights(data, radius)
    risks = fm.group_mean(LOSSES[loss](data.score(w), data.y), data.groups)
    best = fm.Problem(fm.Minimize(fm.max(risks))).solve().objective
    return bounded_group_loss(data, slack * best, loss, radius)


CASES = {
    # bundled data, other sensitive attributes and subsets
    "adult_sex_bgl_logistic": lambda: bounded_group_loss(adult("sex", 5000), 0.40),
    "adult_sexrace_bgl_logistic": lambda: bounded_group_loss(adult("sex_race", 8000, seed=1), 0.45),
    "adult_race_eo_hinge": lambda: dro_equal_opportunity(adult("race", 6000), 0.2, "hinge"),
    "adult_sex_eodds": lambda: equalized_odds(adult("sex", 4000, seed=2), 0.05, radius=10.0),
    "adult_race_parity_r1": lambda: parity(adult("race", 3000, seed=3), 0.1, radius=1.0),
    "adult_sex_cov_tight": lambda: covariance(adult("sex", 10000, seed=4), 0.002),
    "adult_sex_balanced": lambda: balanced_error(adult("sex", 3000, seed=5), 0.1),
    "law_gender_bgl_squared": lambda: bounded_group_loss(lawschool("gender", 4000), 0.9, "squared"),
    "law_gender_eo": lambda: dro_equal_opportunity(lawschool("gender"), 0.05),
    "law_race_cov_hinge": lambda: covariance(lawschool("race", 3000, seed=1), 0.01, "hinge"),
    "law_race_tail": lambda: excess_tail(lawschool("race", 5000, seed=2), 0.3),
    "law_gender_auc": lambda: dro_auc_gap(lawschool("gender", 2000, seed=3), 0.05),
    "communities_bgl_squared": lambda: bounded_group_loss(fm.datasets.load_communities(), 0.025, "squared"),
    "communities_bgl_r50": lambda: bounded_group_loss(fm.datasets.load_communities(), 0.03, "squared", 50.0),
    "communities_cov_squared": lambda: covariance(fm.datasets.load_communities(), 0.002, "squared"),
    # synthetic: groups, scales, collinearity, radii, sizes
    "syn_m2_bgl": lambda: bounded_group_loss(synthetic(2000, groups=2), 0.55),
    "syn_m4_eo": lambda: dro_equal_opportunity(synthetic(4000, groups=4, seed=1), 0.05),
    "syn_m8_bgl_tight": lambda: tight_bound(synthetic(8000, groups=8, seed=2)),
    "syn_m6_eodds_hinge": lambda: equalized_odds(synthetic(3000, groups=6, seed=3), 0.1, "hinge"),
    "syn_scaled_cov": lambda: covariance(synthetic(3000, seed=4, scales=np.logspace(-2, 2, 10)), 0.01, radius=50.0),
    "syn_scaled_bgl": lambda: bounded_group_loss(synthetic(3000, seed=5, scales=np.logspace(-1.5, 1.5, 10)), 0.6),
    "syn_collinear_eo": lambda: dro_equal_opportunity(synthetic(3000, seed=6, collinear=5), 0.05),
    "syn_collinear_parity_sq": lambda: parity(synthetic(3000, seed=7, collinear=4, regression=True), 0.05,
                                              "squared", radius=2.0),
    "syn_r05_eo": lambda: dro_equal_opportunity(synthetic(2000, seed=8), 0.02, radius=0.5),
    "syn_ridge_noradius_cov": lambda: covariance(synthetic(2000, seed=9), 0.005, radius=None, ridge=0.01),
    "syn_loose_bgl": lambda: bounded_group_loss(synthetic(2000, seed=10), 5.0),
    "syn_regression_bgl": lambda: bounded_group_loss(synthetic(3000, seed=11, regression=True), 0.35, "squared"),
    "syn_n1e3_tail": lambda: excess_tail(synthetic(1000, groups=5, seed=12), 0.5, "hinge"),
    "syn_n3e4_eo": lambda: dro_equal_opportunity(synthetic(30_000, d=20, seed=13), 0.05),
    "syn_n1e5_bgl": lambda: bounded_group_loss(synthetic(100_000, d=20, groups=3, seed=14), 0.6),
    "syn_l1_parity_noradius": lambda: l1_regularized_parity(synthetic(2000, seed=15), 0.05),
    "syn_norm_budget_m5": lambda: norm_budget(synthetic(3000, groups=5, seed=16), 1.0),
    "adult_race_weighted_bgl": lambda: weighted_bgl(adult("race", 5000, seed=6), 0.45),
    "syn_m8_eo_tight": lambda: dro_equal_opportunity(synthetic(6000, groups=8, seed=17), 0.01),
    "syn_large_targets_bgl": lambda: tight_bound(shifted_targets(synthetic(3000, seed=18, regression=True)),
                                                 "squared", radius=50.0, slack=1.1),
    "law_race_eodds_hinge_r2": lambda: equalized_odds(lawschool("race", 5000, seed=4), 0.02, "hinge", radius=2.0),
}

QUICK = ["syn_scaled_bgl", "syn_m2_bgl", "adult_race_parity_r1", "law_race_cov_hinge"]


def run_case(name, **options) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob = CASES[name]()
        start = time.perf_counter()
        report = fm.crosscheck(prob, seed=0, **options)
    wall = time.perf_counter() - start
    failed = [c.name for c in report.failed()]
    for r in (report.exact, report.stochastic):
        failed += [f"{r.backend}: {c['name']}" for c in r.failed_checks()]
    return {"case": name, "ok": report.ok, "exact_s": report.exact.timings.get("total", float("nan")),
            "stochastic_s": report.stochastic.timings.get("total", float("nan")), "wall_s": wall,
            "epochs": report.stochastic.metrics.get("epochs_run"), "status": report.stochastic.status,
            "failed": "; ".join(failed), "message": report.stochastic.message if not report.ok else "",
            "report": report}


def table(rows) -> str:
    lines = ["| case | ok | exact s | stochastic s | epochs | what failed |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {'ok' if r['ok'] else 'NOT OK'} | {r['exact_s']:.1f} | "
                     f"{r['stochastic_s']:.1f} | {r['epochs']} | {r['failed'] or ''} |")
    return "\n".join(lines)


# -- old fixed budget against the new rule on the bundled problems -------------------------------------------------
def bundled():
    """The bundled composition problems: examples/compositions.py and the problem files of the family."""
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "examples"))
    import compositions  # noqa: E402
    from fairmodel.frontends import problemfile  # noqa: E402
    out = {f"compositions.py {k}": v for k, v in compositions.EXAMPLES.items()}
    for path in sorted((root / "examples" / "problems").glob("*.toml")):
        spec = problemfile.read(path)
        if spec.doc.get("problem", {}).get("family") == "composition":
            out[path.name] = (lambda spec=spec: problemfile.build_problem(spec, problemfile.load_data(spec)))
    return out


def speed(repeats=1) -> str:
    rows, ratios = [], []
    for name, build in bundled().items():
        prob = build()
        times = {"budget": [], "checks": []}
        oks = {}
        for _ in range(repeats):
            for rule in times:                       # side by side in one process, alternating
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = prob.solve(backend="stochastic", seed=0, stop=rule)
                times[rule].append(res.timings["total"])
                oks[rule] = (res.ok, res.metrics.get("epochs_run"))
        old, new = statistics.median(times["budget"]), statistics.median(times["checks"])
        ratios.append(new / old)
        rows.append(f"| {name} | {old:.2f} | {'ok' if oks['budget'][0] else 'NOT OK'} ({oks['budget'][1]}) | "
                    f"{new:.2f} | {'ok' if oks['checks'][0] else 'NOT OK'} ({oks['checks'][1]}) | {new / old:.2f} |")
    return "\n".join(["| problem | old budget: s | old: ok (epochs) | new rule: s | new: ok (epochs) | new / old |",
                      "|---|---|---|---|---|---|"] + rows
                     + [f"\nmedian ratio new / old: {statistics.median(ratios):.2f}"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cases", default="")
    parser.add_argument("--speed", action="store_true")
    args = parser.parse_args()
    if args.speed:
        print(speed())
        return
    names = [c for c in args.cases.split(",") if c] or (QUICK if args.quick else list(CASES))
    rows = []
    for name in names:
        row = run_case(name)
        rows.append(row)
        print(f"{name}: {'ok' if row['ok'] else 'NOT OK'} exact {row['exact_s']:.1f} s, stochastic "
              f"{row['stochastic_s']:.1f} s, {row['epochs']} epochs {row['failed']}", flush=True)
        if not row["ok"]:
            print(f"    {row['message']}", flush=True)
    print()
    print(table(rows))
    print(f"\n{sum(r['ok'] for r in rows)} of {len(rows)} ok")


if __name__ == "__main__":
    main()
