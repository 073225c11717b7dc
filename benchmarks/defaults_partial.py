"""Partial fairness in a score band / DC constraints (He, Huang, Yao, Lin 2025) on problems the defaults were not
tuned on.

The defaults were tuned on Law School by race (model (13), band [0.70, 1.00], kappa = 0.1, logistic loss +
1e-3 ||w||^2, the paper's features (1, x, g, g x), 1,000 rows). These cases change the data (Law School by gender,
Adult by sex and by race with 5 groups, Communities with a binarized target, synthetic badly scaled and collinear
features), the model (weak partial parity (17), a general fm.dc constraint), the band, kappa (loose to
near-infeasible), the loss (hinge, squared), the domain (a ball), the number of levels and the size (500 to 20,800
rows). Every case is cross-checked with ``fm.crosscheck(prob, seed=0)`` and the library defaults only.

Run ``python benchmarks/defaults_partial.py`` (all cases), ``--fast`` (the subset the tests run) or
``--only name``; ``--write`` puts the table into docs/benchmarks.md.
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


def _problem(data, model="pdp", band=(0.7, 1.0), kappa=0.1, loss="logistic", l2=1e-3, interactions=True,
             radius=None, **atom):
    if interactions:
        data = fm.with_group_interactions(data)
    w = fm.Weights(data.n_features, intercept=radius is None, radius=radius)
    s = data.score(w)
    losses = {"logistic": fm.logistic_loss, "hinge": fm.hinge_loss, "squared": fm.squared_loss}
    objective = fm.mean(losses[loss](s, data.y)) + l2 * fm.sum_squares(w)
    if model == "pdp":
        con = fm.partial_dp(s, data.groups, band=band, **atom) <= kappa
    else:
        con = fm.weak_partial_dp(s, data.groups, band=band, **atom) <= kappa
    return fm.Problem(fm.Minimize(objective), [con])


def _synthetic(n, p=6, seed=1, scale=None, collinear=False, groups=2):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, size=n)
    X = rng.normal(size=(n, p))
    X[:, 0] += 0.8 * g
    beta = rng.normal(size=p)
    y = np.sign(X @ beta + 0.5 * g + rng.normal(size=n))
    y[y == 0] = 1
    if collinear:
        X = np.hstack([X, X[:, :2] + 1e-3 * rng.normal(size=(n, 2))])
    if scale is not None:
        X = X * np.logspace(-2, 2, X.shape[1])[None, :]
    return fm.Dataset(X, y, g, name=f"synthetic(n={n})")


def law_gender_band_mid():
    data = fm.datasets.load_lawschool(sensitive="gender").subsample(1500, seed=1)
    return _problem(data, band=(0.3, 0.8), kappa=0.1)


def law_race_kappa_tight():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(1200, seed=2)
    return _problem(data, band=(0.7, 1.0), kappa=0.02)


def law_race_kappa_loose():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(800, seed=3)
    return _problem(data, band=(0.5, 1.0), kappa=0.5)


def law_race_all_rows():
    data = fm.datasets.load_lawschool(sensitive="race")
    return _problem(data, band=(0.7, 1.0), kappa=0.1)


def law_weak_pdp():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(1000, seed=4)
    return _problem(data, model="weak", band=(0.7, 1.0), kappa=0.05, threshold=0.0)


def adult_sex_top_band():
    data = fm.datasets.load_adult(sensitive="sex").subsample(2000, seed=5)
    return _problem(data, band=(0.05, 0.3), kappa=0.1, interactions=False)


def adult_race_five_groups():
    data = fm.datasets.load_adult(sensitive="race").subsample(3000, seed=6)
    return _problem(data, band=(0.0, 0.25), kappa=0.2, interactions=False, levels=5)


def adult_weak_sex():
    data = fm.datasets.load_adult(sensitive="sex").subsample(1500, seed=7)
    return _problem(data, model="weak", band=(0.05, 0.3), kappa=0.03, interactions=False)


def communities_binary():
    data = fm.datasets.load_communities(standardize=True)
    y = np.where(data.y > np.median(data.y), 1.0, -1.0)
    data = fm.Dataset(data.X, y, np.asarray(data.groups.names, dtype=object)[data.groups.codes],
                      name="communities-binary")
    return _problem(data, band=(0.5, 1.0), kappa=0.15, interactions=False, l2=1e-2)


def synthetic_badly_scaled():
    return _problem(_synthetic(1000, scale=True), band=(0.6, 1.0), kappa=0.1, interactions=False)


def synthetic_collinear():
    return _problem(_synthetic(800, collinear=True, seed=8), band=(0.7, 1.0), kappa=0.1)


def synthetic_four_groups():
    return _problem(_synthetic(1600, seed=9, groups=4), band=(0.6, 1.0), kappa=0.15, levels=6,
                    interactions=False)


def synthetic_hinge_loss():
    return _problem(_synthetic(600, seed=10), band=(0.7, 1.0), kappa=0.1, loss="hinge", l2=1e-2)


def synthetic_squared_ball():
    return _problem(_synthetic(700, seed=11), band=(0.5, 0.9), kappa=0.1, loss="squared", l2=0.0, radius=3.0)


def synthetic_weak_minimal():
    return _problem(_synthetic(900, seed=12), model="weak", band=(0.0, 0.5), kappa=0.05,
                    decomposition="minimal")


def sphere_dc():
    """min mean((w - a)^2) s.t. ||w||^2 >= 1 (fm.dc(0, ||w||^2) <= -1), from a feasible start."""
    a = np.array([0.3, -0.2, 0.1, 0.25, -0.4])
    data = fm.Dataset(np.eye(5), a)
    w = fm.Weights(5)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.squared_loss(data.score(w), data.y))),
                      [fm.dc(0.0, fm.sum_squares(w)) <= -1.0])
    start = {"w": 2 * a / np.linalg.norm(a)}
    return prob, {"exact_options": {"start": start}, "stochastic_options": {"start": start}}


def law_levels_linspace():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(1000, seed=13)
    return _problem(data, band=(0.6, 1.0), kappa=0.08, levels=8, grid="in_I")


def law_gender_weak_minimal():
    data = fm.datasets.load_lawschool(sensitive="gender").subsample(1200, seed=14)
    return _problem(data, model="weak", band=(0.5, 1.0), kappa=0.05, decomposition="minimal")


def adult_sex_interactions():
    data = fm.datasets.load_adult(sensitive="sex").subsample(1500, seed=15)
    return _problem(data, band=(0.05, 0.3), kappa=0.1)


def synthetic_eight_groups():
    return _problem(_synthetic(2400, seed=16, groups=8), band=(0.5, 1.0), kappa=0.2, levels=4, interactions=False)


def law_full_range_dp():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(1000, seed=17)
    return _problem(data, band=(0.0, 1.0), kappa=0.2)


def law_5000_top_band():
    data = fm.datasets.load_lawschool(sensitive="race").subsample(5000, seed=18)
    return _problem(data, band=(0.8, 1.0), kappa=0.05)


def logistic_norm_floor():
    """Logistic loss with the concave constraint ||w||^2 >= 4 (fm.dc(0, ||w||^2) <= -4), from a feasible start."""
    data = fm.datasets.load_lawschool(sensitive="race").subsample(800, seed=19)
    w = fm.Weights(data.n_features)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(w), data.y))),
                      [fm.dc(0.0, fm.sum_squares(w)) <= -4.0])
    start = {"w": np.full(data.n_features, 3.0 / np.sqrt(data.n_features))}
    return prob, {"exact_options": {"start": start}, "stochastic_options": {"start": start}}


def communities_weak():
    data = fm.datasets.load_communities(standardize=True)
    y = np.where(data.y > np.median(data.y), 1.0, -1.0)
    data = fm.Dataset(data.X, y, np.asarray(data.groups.names, dtype=object)[data.groups.codes],
                      name="communities-binary")
    return _problem(data, model="weak", band=(0.3, 0.8), kappa=0.1, interactions=False, l2=1e-2)


CASES = [
    Case("law-gender-band-0.3-0.8", law_gender_band_mid, "Law School by gender, band [0.3, 0.8), 1,500 rows"),
    Case("law-race-kappa-0.02", law_race_kappa_tight, "kappa = 0.02 (near-infeasible start slack)"),
    Case("law-race-kappa-0.5", law_race_kappa_loose, "kappa = 0.5, band [0.5, 1.0)", ("fast",)),
    Case("law-race-all-rows", law_race_all_rows, "all 20,800 rows"),
    Case("law-weak-pdp", law_weak_pdp, "weak partial parity (17), kappa = 0.05"),
    Case("adult-sex-top-band", adult_sex_top_band, "Adult by sex, band [0.05, 0.3), 2,000 rows, 99 features"),
    Case("adult-race-5-groups", adult_race_five_groups, "Adult by race (5 groups), 5 levels"),
    Case("adult-weak-sex", adult_weak_sex, "weak partial parity on Adult, kappa = 0.03"),
    Case("communities", communities_binary, "Communities, binarized target, 118 features, l2 = 1e-2"),
    Case("synthetic-badly-scaled", synthetic_badly_scaled, "feature scales 1e-2 .. 1e2"),
    Case("synthetic-collinear", synthetic_collinear, "near-duplicate columns", ("fast",)),
    Case("synthetic-4-groups", synthetic_four_groups, "4 groups, 6 levels"),
    Case("synthetic-hinge", synthetic_hinge_loss, "hinge loss (CVXPY inner solver)"),
    Case("synthetic-squared-ball", synthetic_squared_ball, "squared loss on a ball of radius 3"),
    Case("synthetic-weak-minimal", synthetic_weak_minimal, "weak parity, minimal decomposition, band [0, 0.5)"),
    Case("sphere-dc", sphere_dc, "a general fm.dc constraint (known solution a / ||a||)", ("fast",)),
    Case("law-levels-in-I", law_levels_linspace, "8 levels on the literal grid 'in_I'"),
    Case("law-gender-weak-minimal", law_gender_weak_minimal, "weak parity by gender, minimal split, band [0.5, 1)"),
    Case("adult-sex-interactions", adult_sex_interactions, "Adult with the paper's features (1, x, g, g x): D = 200"),
    Case("synthetic-8-groups", synthetic_eight_groups, "8 groups, 4 levels, 2,400 rows"),
    Case("law-full-range", law_full_range_dp, "band [0, 1): full-range demographic parity (the KS distance)"),
    Case("law-5000-top-band", law_5000_top_band, "5,000 rows, band [0.8, 1), kappa = 0.05"),
    Case("logistic-norm-floor", logistic_norm_floor, "logistic loss s.t. ||w||^2 >= 4 (a concave constraint)"),
    Case("communities-weak", communities_weak, "weak parity on Communities, band [0.3, 0.8)"),
]

if __name__ == "__main__":
    main(CASES, "defaults_partial", "Partial fairness: cross-checks with the defaults on cases they were not tuned on")
