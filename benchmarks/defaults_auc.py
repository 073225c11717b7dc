"""AUC under AUC-based fairness constraints (Yao, Lin, Yang 2023) on problems the defaults were not tuned on.

The defaults were tuned on Adult by sex (5,000 rows, intra preset, kappa = 0.05, ||w|| <= 10) and on the
synthetic reference task. These cases change the data (Law School, Communities with a binarized target, Adult by
race one-vs-rest, synthetic badly scaled and collinear features), the preset, the number of constraints (one per
protected group), the radius (0.5 to 50), the budget kappa (loose to near-infeasible), the surrogate (c1, c2,
the paper's literal q), sample weights and the size (1e3 to 1e5 rows). Every case is cross-checked with
``fm.crosscheck(prob, seed=0)`` and the library defaults only.

Run ``python benchmarks/defaults_auc.py`` (all cases), ``--fast`` (the subset the tests run) or ``--only name``;
``--write`` puts the table into docs/benchmarks.md.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _crosscheck_cases import Case, main  # noqa: E402

import fairmodel as fm  # noqa: E402


def _problem(data, kind="intra", kappa=0.05, radius=10.0, intercept=False, extra=(), c1=0.5, c2=1.0, **atom):
    w = fm.Weights(data.n_features, radius=radius, intercept=intercept)
    s = data.score(w)
    gaps = [fm.auc_gap(s, data, kind=kind, c1=c1, c2=c2, **atom) <= kappa] if kind else []
    gaps += [fm.auc_gap(s, data, kind=k, c1=c1, c2=c2, **a) <= b for k, a, b in extra]
    weight = atom.get("sample_weight")
    return fm.Problem(fm.Minimize(fm.auc_loss(s, data.y, c1=c1, c2=c2, sample_weight=weight,
                                              alpha_quad_coef=atom.get("alpha_quad_coef", "c1"))), gaps)


def _binary(data, mapping: dict, name: str) -> fm.Dataset:
    """The data with the groups recoded (e.g. race -> white / non-white)."""
    names = np.asarray(data.groups.names, dtype=object)[data.groups.codes]
    return fm.Dataset(data.X, data.y, [mapping.get(v, mapping.get("*")) for v in names], name=name)


def _synthetic(n, p=8, seed=1, scale=None, collinear=False, flip=0.1):
    rng = np.random.default_rng(seed)
    gamma = np.where(rng.random(n) < 0.3, 1, -1)
    X = rng.normal(size=(n, p))
    X[:, 1] += 0.7 * gamma
    beta = rng.normal(size=p)
    y = np.sign(X @ beta + 0.4 * gamma + rng.normal(scale=1.0, size=n))
    y[rng.random(n) < flip] *= -1
    y[y == 0] = 1
    if collinear:          # two near copies of informative columns
        X = np.hstack([X, X[:, :2] + 1e-3 * rng.normal(size=(n, 2))])
    if scale is not None:  # badly scaled columns (1e-2 .. 1e2)
        X = X * np.logspace(-2, 2, X.shape[1])[None, :] * scale
    return fm.Dataset(X, y, gamma, name=f"synthetic(n={n})")


def adult_race_black():
    data = fm.datasets.load_adult(sensitive="race").subsample(4000, seed=1)
    return _problem(data, kind="group", kappa=0.05, radius=5.0, protected="Black")


def adult_race_three_groups():
    data = fm.datasets.load_adult(sensitive="race").subsample(6000, seed=2)
    extra = [("group", {"protected": g}, 0.1) for g in ("White", "Asian-Pac-Islander")]
    return _problem(data, kind="group", kappa=0.1, radius=5.0, protected="Black", extra=extra)


def adult_sex_inter_small_radius():
    data = fm.datasets.load_adult(sensitive="sex").subsample(2000, seed=3)
    return _problem(data, kind="inter", kappa=0.02, radius=0.5)


def law_race_group():
    data = fm.datasets.load_lawschool(sensitive="race")
    return _problem(data, kind="group", kappa=0.02, radius=5.0, intercept=True)


def law_gender_intra_large_radius():
    data = fm.datasets.load_lawschool(sensitive="gender").subsample(3000, seed=0)
    return _problem(data, kind="intra", kappa=0.01, radius=50.0, protected="female")


def law_pos_avg_eq():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(5000, seed=4)
    return _problem(data, kind="pos_avg_eq", kappa=0.05, radius=3.0, protected="non-white")


def communities_raw_features():
    data = fm.datasets.load_communities()        # not standardized: features in [0, 1], 118 of them
    y = np.where(data.y > np.median(data.y), 1.0, -1.0)
    data = fm.Dataset(data.X, y, np.asarray(data.groups.names, dtype=object)[data.groups.codes],
                      name="communities-binary")
    return _problem(data, kind="intra", kappa=0.05, radius=10.0, protected="non-white")


def communities_bpsn_bnsp():
    data = fm.datasets.load_communities(standardize=True)
    y = np.where(data.y > np.quantile(data.y, 0.7), 1.0, -1.0)
    data = fm.Dataset(data.X, y, np.asarray(data.groups.names, dtype=object)[data.groups.codes],
                      name="communities-binary")
    return _problem(data, kind="bpsn_bnsp", kappa=0.1, radius=5.0, protected="non-white")


def synthetic_badly_scaled():
    return _problem(_synthetic(3000, scale=1.0), kind="intra", kappa=0.05, radius=2.0)


def synthetic_collinear():
    return _problem(_synthetic(2000, collinear=True, seed=5), kind="group", kappa=0.03, radius=3.0)


def synthetic_near_infeasible():
    return _problem(_synthetic(2000, seed=6), kind="intra", kappa=0.002, radius=5.0)


def synthetic_loose():
    return _problem(_synthetic(1000, seed=7), kind="intra", kappa=0.8, radius=5.0)


def synthetic_large():
    return _problem(_synthetic(100_000, p=10, seed=8), kind="intra", kappa=0.05, radius=3.0)


def synthetic_c1_small_c2_two():
    # 2 c1 c2^2 = 1.0 < 1 + kappa: the surrogate of a wider margin
    return _problem(_synthetic(2000, seed=9), kind="intra", kappa=0.2, radius=5.0, c1=0.125, c2=2.0)


def synthetic_paper_literal_q():
    return _problem(_synthetic(1500, seed=10), kind="inter", kappa=0.05, radius=3.0, alpha_quad_coef="paper_literal")


def synthetic_sample_weights():
    data = _synthetic(2500, seed=11)
    weights = np.random.default_rng(11).uniform(0.2, 3.0, size=2500)
    return _problem(data, kind="intra", kappa=0.05, radius=3.0, sample_weight=weights)


def unconstrained_law():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(2000, seed=12)
    return _problem(data, kind=None, radius=5.0)


def reference_neg_avg_eq():
    data = fm.datasets.make_auc_synthetic(1000, 6, seed=13)
    return _problem(data, kind="neg_avg_eq", kappa=0.03, radius=3.0)


def adult_sex_two_presets():
    data = fm.datasets.load_adult(sensitive="sex").subsample(3000, seed=14)
    return _problem(data, kind="group", kappa=0.05, radius=10.0, extra=[("intra", {}, 0.1)])


def adult_sex_group_10k():
    data = fm.datasets.load_adult(sensitive="sex").subsample(10_000, seed=15)
    return _problem(data, kind="group", kappa=0.1, radius=5.0)


def law_race_inter():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(8000, seed=16)
    return _problem(data, kind="inter", kappa=0.03, radius=3.0, protected="non-white")


def communities_standardized_intra():
    data = fm.datasets.load_communities(standardize=True)
    y = np.where(data.y > np.median(data.y), 1.0, -1.0)
    data = fm.Dataset(data.X, y, np.asarray(data.groups.names, dtype=object)[data.groups.codes],
                      name="communities-binary")
    return _problem(data, kind="intra", kappa=0.05, radius=3.0, protected="non-white")


def synthetic_intra_and_inter():
    return _problem(_synthetic(3000, seed=17), kind="intra", kappa=0.05, radius=3.0, extra=[("inter", {}, 0.05)])


def synthetic_intercept_small_radius():
    return _problem(_synthetic(2000, seed=18), kind="group", kappa=0.02, radius=1.0, intercept=True)


def reference_radius_20():
    return _problem(fm.datasets.make_auc_synthetic(2000, 5, seed=19), kind="intra", kappa=0.05, radius=20.0)


def synthetic_50k_group():
    return _problem(_synthetic(50_000, p=12, seed=20), kind="group", kappa=0.05, radius=3.0)


CASES = [
    Case("adult-race-black-group", adult_race_black, "Adult by race, Black vs rest, group preset, R = 5, 4,000 rows"),
    Case("adult-race-3-constraints", adult_race_three_groups, "three one-vs-rest group-AUC constraints (K groups)"),
    Case("adult-sex-inter-R0.5", adult_sex_inter_small_radius, "inter preset, radius 0.5, 2,000 rows"),
    Case("law-race-group-all", law_race_group, "all 20,800 Law School rows, intercept, kappa = 0.02"),
    Case("law-gender-intra-R50", law_gender_intra_large_radius, "Law School by gender, radius 50, kappa = 0.01"),
    Case("law-pos-avg-eq", law_pos_avg_eq, "positive average equality gap (Ex. 4), 5,000 rows", ("fast",)),
    Case("communities-raw", communities_raw_features, "Communities, unscaled features, binarized target"),
    Case("communities-bpsn", communities_bpsn_bnsp, "BPSN vs BNSP (Ex. 5), 30 % positives"),
    Case("synthetic-badly-scaled", synthetic_badly_scaled, "feature scales 1e-2 .. 1e2"),
    Case("synthetic-collinear", synthetic_collinear, "near-duplicate columns", ("fast",)),
    Case("synthetic-near-infeasible", synthetic_near_infeasible, "kappa = 0.002"),
    Case("synthetic-loose", synthetic_loose, "kappa = 0.8 (inactive)", ("fast",)),
    Case("synthetic-1e5", synthetic_large, "100,000 rows"),
    Case("synthetic-c1-0.125-c2-2", synthetic_c1_small_c2_two, "c1 = 0.125, c2 = 2"),
    Case("synthetic-q-literal", synthetic_paper_literal_q, "alpha_quad_coef = 'paper_literal' (q = 1)"),
    Case("synthetic-weights", synthetic_sample_weights, "sample weights 0.2 .. 3"),
    Case("law-unconstrained", unconstrained_law, "no fairness constraint"),
    Case("reference-neg-avg-eq", reference_neg_avg_eq, "negative average equality gap on make_auc_synthetic"),
    Case("adult-sex-two-presets", adult_sex_two_presets, "group <= 0.05 and intra <= 0.1 together"),
    Case("adult-sex-group-10k", adult_sex_group_10k, "10,000 Adult rows, group preset, kappa = 0.1"),
    Case("law-race-inter", law_race_inter, "Law School inter preset (xAUC), 8,000 rows, kappa = 0.03"),
    Case("communities-intra", communities_standardized_intra, "standardized Communities, intra preset, R = 3"),
    Case("synthetic-intra-and-inter", synthetic_intra_and_inter, "intra <= 0.05 and inter <= 0.05"),
    Case("synthetic-intercept-R1", synthetic_intercept_small_radius, "intercept, radius 1, kappa = 0.02"),
    Case("reference-R20", reference_radius_20, "make_auc_synthetic(2000), radius 20 (I and C large)"),
    Case("synthetic-50k-group", synthetic_50k_group, "50,000 rows, 12 features, group preset"),
]

if __name__ == "__main__":
    main(CASES, "defaults_auc", "AUC fairness: cross-checks with the defaults on cases they were not tuned on")
