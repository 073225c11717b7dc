"""The "defaults" suite: problem x data combinations the defaults were not tuned on, each solved with the
defaults only (no epochs, budgets or steps; a method only where the case is about one) and judged by
``fm.crosscheck`` (both backends and the judge's verdict ``report.ok``), written into docs/benchmarks.md
(section "defaults").

Every case is a small function that builds ``(problem, crosscheck keyword arguments)`` from data, registered
with a name and tags: family, loss, n (rows the judge sees), groups, data source, and ``quick`` (the fast subset
of tests/test_defaults_suite.py) or ``large``. The cases cover every family (group DRO, MERO and ERM; AUC under
AUC-fairness constraints; DP post-processing for regression; partial fairness; strategic Wasserstein DRO;
``fm.SaddleProblem``; convex compositions), the logistic, hinge and squared losses, 2 to 8 groups, radii from 0.5
to 50 and none, budgets from loose to nearly infeasible, 1e3 to 1e5 rows, the bundled data sets with other
sensitive attributes, subsets and subsamples than the examples use, and synthetic data that is badly scaled,
collinear, imbalanced, with tiny groups or with many features. Every random choice is seeded.

A ``fm.SaddleProblem`` has no cross-check yet: its case solves ``method="exact"`` and the default stochastic
method, records each result's ``ok`` and duality gap, and is ok only when both results are ok and the stochastic
duality gap is at most 5e-2 (the accuracy docs/minmax.md states for the default budget on a matrix game).

    python benchmarks/defaults.py                      # every case, each in a fresh subprocess (30-60 min)
    python benchmarks/defaults.py --quick              # the fast subset (about 10 cases)
    python benchmarks/defaults.py --cases a,b --tags dp,large --json out.json --timeout 600
    python benchmarks/defaults.py --list               # the registry
    python benchmarks/defaults.py --baseline DIR       # before / after: each case also run by the code in DIR

A case that raises is recorded as an error (exception and message), one that exceeds its time limit as a
timeout; neither stops the suite. The full run (no --cases, --tags or --quick) rewrites the section "defaults" of
docs/benchmarks.md; ``--doc`` writes it for any selection. ``--baseline DIR`` (a checkout of an earlier version,
e.g. ``git archive <commit> | tar -x -C DIR``) runs every case with both versions in this session, one after the
other in alternating order (fresh processes each, the same load), and writes both columns.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fairmodel as fm  # noqa: E402

from _report import table, write_section  # noqa: E402

SADDLE_GAP_TOL = 5e-2   # docs/minmax.md: the default budget reaches a duality gap <= 0.05 on a small matrix game
EXACT_GAP_TOL = 1e-6    # an exact saddle point has gap 0 up to the LP / conic solver's tolerance
STOCHASTIC_ONLY = "stochastic_only"   # a case option: no exact program exists, the stochastic result alone is judged


@dataclass(frozen=True)
class Case:
    name: str
    build: object
    family: str
    loss: str
    n: int
    groups: int
    source: str
    note: str
    tags: tuple = field(default_factory=tuple)

    @property
    def all_tags(self) -> set:
        return {self.family, self.loss, self.source, *self.tags}


CASES: dict[str, Case] = {}


def case(name, *, family, loss, n, groups, source, note, tags=()):
    """Register ``fn() -> (problem, crosscheck kwargs)`` as a case."""
    def register(fn):
        if name in CASES:
            raise ValueError(f"duplicate case {name!r}")
        CASES[name] = Case(name, fn, family, loss, n, groups, source, note, tuple(tags))
        return fn
    return register


# -- data -------------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def adult(sensitive="race", encoding="standard", target="income"):
    return fm.datasets.load_adult(target=target, sensitive=sensitive, encoding=encoding)


@functools.lru_cache(maxsize=None)
def adult_race_sex8():
    """Adult with groups race x sex, the race "Other" dropped: 8 groups (the smallest, Amer-Indian-Eskimo women,
    has 107 rows); race and sex are not features."""
    d = adult("sex_race")
    names = [f"{race}/{sex}" for sex, race in d.groups.names]
    labels = np.asarray(names, dtype=object)[d.groups.codes].astype(str)
    keep = ~np.char.startswith(labels, "Other/")
    return fm.Dataset(d.X[keep], d.y[keep], labels[keep], feature_names=d.feature_names, name="adult-race-sex8")


@functools.lru_cache(maxsize=None)
def law(target="bar1", sensitive="race"):
    return fm.datasets.load_lawschool(target=target, sensitive=sensitive)


@functools.lru_cache(maxsize=None)
def law_race_sex(target="bar1"):
    """Law School with groups race (white / non-white) x gender: 4 groups; gender is not a feature (8 features)."""
    d = law(target, "race")
    sex = law(target, "gender").groups
    race = np.asarray(d.groups.names, dtype=object)[d.groups.codes]
    labels = np.array([f"{r}/{s}" for r, s in zip(race, np.asarray(sex.names, dtype=object)[sex.codes])])
    j = d.feature_names.index("gender")
    return fm.Dataset(np.delete(d.X, j, axis=1), d.y, labels,
                      feature_names=[f for f in d.feature_names if f != "gender"], name=f"law-race-sex({target})")


@functools.lru_cache(maxsize=None)
def communities():
    return fm.datasets.load_communities()


def communities_binary():
    """Communities with the label +1 for the communities in the top 30% of violent crime."""
    d = communities()
    y = np.where(d.y > np.quantile(d.y, 0.7), 1.0, -1.0)
    return fm.Dataset(d.X, y, np.asarray(d.groups.names)[d.groups.codes], feature_names=d.feature_names,
                      name="communities-binary")


def two_groups(data, first):
    """The same rows with groups ``first`` / ``other`` (e.g. white / non-white from race)."""
    labels = np.asarray(data.groups.names, dtype=object)[data.groups.codes]
    new = np.where(labels == first, first, "other")
    return fm.Dataset(data.X, data.y, new, feature_names=data.feature_names, name=f"{data.name}:{first}-vs-other")


def synthetic(n, d=10, *, sizes=None, shares=(0.5, 0.3, 0.2), seed=0, scales=None, duplicate=0, pos_rate=None,
              regression=False):
    """Labels from a logistic model with a group shift (groups shift three features and the log-odds).

    sizes : rows per group (overrides n and shares; a tiny group of 30 rows, say).
    scales : column scales (badly scaled features: 10 ** linspace(-3, 3, d)).
    duplicate : append that many exact copies of the first columns and one collinear column (2 x0 - x1).
    pos_rate : shift the log-odds so that about this fraction of labels is +1 (class imbalance).
    regression : y is the real-valued linear signal plus noise (for the squared loss).
    """
    rng = np.random.default_rng(seed)
    if sizes is not None:
        g = np.repeat(np.arange(len(sizes)), sizes)
        n = g.size
    else:
        g = rng.choice(len(shares), size=n, p=np.asarray(shares) / np.sum(shares))
    X = rng.normal(size=(n, d)) + 0.5 * g[:, None] * (np.arange(d) < 3)
    beta = rng.normal(size=d) / np.sqrt(d)
    signal_ = 2 * X @ beta + 0.5 * (g - g.mean())
    if regression:
        y = signal_ + rng.normal(scale=0.5, size=n)
    else:
        if pos_rate is not None:
            signal_ = signal_ - np.quantile(signal_, 1 - pos_rate)
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-signal_)), 1.0, -1.0)
    if duplicate:
        X = np.hstack([X, X[:, :duplicate], 2 * X[:, :1] - X[:, 1:2]])
    if scales is not None:
        X = X * np.asarray(scales)[: X.shape[1]]
    return fm.Dataset(X, y, np.array([f"g{k}" for k in g]), name=f"synthetic(n={n},d={X.shape[1]},seed={seed})")


def linear(data, radius=5.0, intercept=True):
    w = fm.Weights(data.n_features, radius=radius, intercept=intercept)
    return w, data.score(w)


LOSSES = {"logistic": fm.logistic_loss, "hinge": fm.hinge_loss, "squared": fm.squared_loss}


def group_dro(data, loss="logistic", radius=5.0, intercept=True, mero=False):
    _, s = linear(data, radius, intercept)
    risks = fm.group_mean(LOSSES[loss](s, data.y), data.groups)
    objective = fm.max(risks - fm.group_optimal(risks)) if mero else fm.max(risks)
    return fm.Problem(fm.Minimize(objective)), {}


# -- group DRO, MERO and ERM --------------------------------------------------------------------------------
@case("gdro_adult_racesex8_logistic_r5", family="gdro", loss="logistic", n=29875, groups=8, source="adult",
      note="Adult, 8 groups race x sex, radius 5 with intercept", tags=("quick",))
def _():
    return group_dro(adult_race_sex8(), "logistic", 5.0)


@case("gdro_adult_sex_hinge_r1", family="gdro", loss="hinge", n=30162, groups=2, source="adult",
      note="Adult by sex, hinge loss (exact default: epigraph), radius 1")
def _():
    return group_dro(adult("sex"), "hinge", 1.0)


@case("gdro_adult_a9a_race_logistic_r50", family="gdro", loss="logistic", n=30162, groups=5, source="adult",
      note="Adult a9a encoding (all binary columns), 5 races, radius 50")
def _():
    return group_dro(adult("race", "a9a"), "logistic", 50.0)


@case("gdro_law_gender_squared_r0.5", family="gdro", loss="squared", n=20800, groups=2, source="lawschool",
      note="Law School bar passage by gender, squared loss on +-1 labels, radius 0.5")
def _():
    return group_dro(law("bar1", "gender"), "squared", 0.5)


@case("gdro_law_racesex_logistic_noradius", family="gdro", loss="logistic", n=20800, groups=4,
      source="lawschool", note="Law School race x gender, no radius (unbounded weights), no intercept")
def _():
    return group_dro(law_race_sex(), "logistic", None, intercept=False)


@case("gdro_law_lsat_racesex_squared_r5_6172", family="gdro", loss="squared", n=6172, groups=4,
      source="lawschool", tags=("known-hard", "quick"),
      note="known hard (d): regression target lsat (11-48, unscaled), 8 features, race x gender, 6,172 rows, "
           "radius 5, no intercept; the default exact method 'dual' stops with a duality gap above 1e-4")
def _():
    return group_dro(law_race_sex("lsat").subsample(6172, seed=0), "squared", 5.0, intercept=False)


@case("gdro_communities_squared_r10", family="gdro", loss="squared", n=1984, groups=2, source="communities",
      note="Communities, regression target (crime rate in [0, 1]), 118 features, radius 10")
def _():
    return group_dro(communities(), "squared", 10.0)


@case("gdro_synth_badscale_logistic_r5", family="gdro", loss="logistic", n=5000, groups=3, source="synthetic",
      note="synthetic, column scales 1e-3..1e3 (not standardized)", tags=("quick",))
def _():
    return group_dro(synthetic(5000, 10, seed=1, scales=10.0 ** np.linspace(-3, 3, 10)), "logistic", 5.0)


@case("gdro_synth_collinear_logistic_r10", family="gdro", loss="logistic", n=8000, groups=3, source="synthetic",
      note="synthetic with 4 duplicated columns and one collinear column (rank-deficient design)")
def _():
    return group_dro(synthetic(8000, 12, seed=2, duplicate=4), "logistic", 10.0)


@case("gdro_synth_imbalanced_hinge_r2", family="gdro", loss="hinge", n=10000, groups=4, source="synthetic",
      note="synthetic, 4 groups, 3% positive labels, hinge loss, radius 2")
def _():
    return group_dro(synthetic(10000, 15, shares=(0.4, 0.3, 0.2, 0.1), seed=3, pos_rate=0.03), "hinge", 2.0)


@case("gdro_synth_tinygroup_logistic_r5", family="gdro", loss="logistic", n=4530, groups=3, source="synthetic",
      note="synthetic with group sizes 3000 / 1500 / 30 (a 30-row group)", tags=("quick",))
def _():
    return group_dro(synthetic(0, 10, sizes=(3000, 1500, 30), seed=4), "logistic", 5.0)


@case("gdro_synth_d200_logistic_r5", family="gdro", loss="logistic", n=3000, groups=3, source="synthetic",
      note="synthetic with d = 200 features and 3,000 rows")
def _():
    return group_dro(synthetic(3000, 200, seed=5), "logistic", 5.0)


@case("gdro_paper_synth_m8_flip_logistic_r3", family="gdro", loss="logistic", n=4000, groups=8,
      source="synthetic", note="the group-DRO paper's task eq. (33): 8 groups, d = 50, unequal sizes and flips")
def _():
    data = fm.datasets.make_gdro_synthetic(m=8, d=50, n_per_group=[1000, 800, 600, 500, 400, 300, 250, 150],
                                           flip=[0.05, 0.1, 0.1, 0.15, 0.2, 0.2, 0.25, 0.3], seed=6)
    return group_dro(data, "logistic", 3.0, intercept=False)


@case("gdro_synth_1e5_logistic_r5", family="gdro", loss="logistic", n=100000, groups=5, source="synthetic",
      note="synthetic, 100,000 rows, 5 groups, d = 30", tags=("large",))
def _():
    return group_dro(synthetic(100000, 30, shares=(0.4, 0.25, 0.15, 0.15, 0.05), seed=7), "logistic", 5.0)


@case("mero_adult_race_logistic_r10", family="gdro", loss="logistic", n=30162, groups=5, source="adult",
      note="MERO (minimax excess risk) on Adult by race, radius 10")
def _():
    return group_dro(adult("race"), "logistic", 10.0, mero=True)


@case("mero_law_racesex_squared_r2", family="gdro", loss="squared", n=20800, groups=4, source="lawschool",
      note="MERO with the squared loss, Law School race x gender, radius 2")
def _():
    return group_dro(law_race_sex(), "squared", 2.0, mero=True)


@case("mero_synth_hinge_r1", family="gdro", loss="hinge", n=6000, groups=6, source="synthetic",
      note="MERO with the hinge loss, synthetic 6 groups, radius 1", tags=("quick",))
def _():
    return group_dro(synthetic(6000, 8, shares=(0.3, 0.2, 0.2, 0.1, 0.1, 0.1), seed=8), "hinge", 1.0, mero=True)


@case("gdro_shifted_offsets_communities_logistic", family="gdro", loss="logistic", n=1984, groups=2,
      source="communities", note="max_i (R_i - c_i) with fixed offsets, binarized Communities, radius 5")
def _():
    data = communities_binary()
    _, s = linear(data, 5.0)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks - np.array([0.05, 0.0])))), {}


@case("erm_adult_sex_logistic_r50", family="gdro", loss="logistic", n=30162, groups=1, source="adult",
      note="plain ERM fm.mean(loss) (the one-group case), Adult, radius 50")
def _():
    data = adult("sex")
    _, s = linear(data, 50.0)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)))), {}


@case("erm_law_hinge_r0.5_5000", family="gdro", loss="hinge", n=5000, groups=1, source="lawschool",
      note="plain ERM with the hinge loss, 5,000-row subsample of Law School, radius 0.5")
def _():
    data = law("bar1", "gender").subsample(5000, seed=9)
    _, s = linear(data, 0.5)
    return fm.Problem(fm.Minimize(fm.mean(fm.hinge_loss(s, data.y)))), {}


# -- AUC under AUC-fairness constraints ---------------------------------------------------------------------
def auc_problem(data, kappa, kind="intra", radius=10.0, **gap):
    _, s = linear(data, radius, intercept=False)
    return fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind=kind, **gap) <= kappa]), {}


@case("auc_adult_white_intra_k0.05_4000", family="auc", loss="auc-square", n=4000, groups=2, source="adult",
      note="Adult white vs other races, intra-group preset, kappa 0.05, 4,000 rows")
def _():
    return auc_problem(two_groups(adult("race"), "White").subsample(4000, seed=10), 0.05)


@case("auc_law_gender_group_k0.02_5000", family="auc", loss="auc-square", n=5000, groups=2, source="lawschool",
      note="Law School by gender, group preset (Ex. 1), kappa 0.02, radius 5")
def _():
    return auc_problem(law("bar1", "gender").subsample(5000, seed=11), 0.02, kind="group", radius=5.0)


@case("auc_adult_sex_inter_k0.1_3000", family="auc", loss="auc-square", n=3000, groups=2, source="adult",
      note="Adult by sex, inter-group xAUC preset (Ex. 2), kappa 0.1, radius 50")
def _():
    return auc_problem(adult("sex").subsample(3000, seed=12), 0.1, kind="inter", radius=50.0)


@case("auc_communities_bpsn_k0.05", family="auc", loss="auc-square", n=1984, groups=2, source="communities",
      note="binarized Communities by race, BPSN/BNSP preset (Ex. 5), kappa 0.05, 118 features")
def _():
    return auc_problem(communities_binary(), 0.05, kind="bpsn_bnsp", protected="non-white")


@case("auc_synth_tight_k0.002", family="auc", loss="auc-square", n=3000, groups=2, source="synthetic",
      note="synthetic, nearly infeasible budget kappa 0.002, radius 1", tags=("quick",))
def _():
    return auc_problem(synthetic(3000, 8, shares=(0.6, 0.4), seed=13), 0.002, radius=1.0)


@case("auc_synth_badscale_pos_avg_k0.05", family="auc", loss="auc-square", n=3000, groups=2, source="synthetic",
      note="synthetic, columns scaled 1e-3..1e3, pos_avg_eq preset (Ex. 4), 20% positives")
def _():
    data = synthetic(3000, 8, shares=(0.7, 0.3), seed=14, scales=10.0 ** np.linspace(-3, 3, 8), pos_rate=0.2)
    return auc_problem(data, 0.05, kind="pos_avg_eq", protected="g1")


@case("auc_network_law_gender_k0.05_1500", family="auc", loss="auc-square", n=1500, groups=2,
      source="lawschool", note="two-layer sigmoid network (5 hidden units, radius 20), Law School by gender, "
                               "1,500 rows; no exact program (not convex): the stochastic default alone, judged")
def _():
    data = law("bar1", "gender").subsample(1500, seed=15)
    net = fm.SigmoidMLP(data.n_features, hidden=5, radius=20.0)
    s = data.score(net)
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra") <= 0.05])
    return prob, {STOCHASTIC_ONLY: True}


# -- DP post-processing for regression ----------------------------------------------------------------------
def base_models(X, y, s, ridge=1e-3):
    """A ridge regressor eta and a linear discriminant classifier tau of the sensitive attribute (closed forms,
    NumPy only): eta(X) = [X, 1] beta; tau(X) = softmax of the LDA scores with a shared covariance."""
    Xb = np.hstack([X, np.ones((X.shape[0], 1))])
    beta = np.linalg.solve(Xb.T @ Xb + ridge * np.eye(Xb.shape[1]), Xb.T @ y)
    labels = np.unique(s)
    means = np.array([X[s == c].mean(axis=0) for c in labels])
    prior = np.array([np.mean(s == c) for c in labels])
    centered = X - means[np.searchsorted(labels, s)]
    cov = centered.T @ centered / X.shape[0] + 1e-3 * np.eye(X.shape[1])
    P = np.linalg.solve(cov, means.T)                                   # d x K
    bias = -0.5 * np.sum(means.T * P, axis=0) + np.log(prior)

    def eta(Z):
        return np.hstack([Z, np.ones((Z.shape[0], 1))]) @ beta

    def tau(Z):
        a = Z @ P + bias
        a -= a.max(axis=1, keepdims=True)
        e = np.exp(a)
        return e / e.sum(axis=1, keepdims=True)
    return eta, tau, labels


def dp_problem(X, y, s, n_train, n_unlabeled, *, L, eps, beta=100.0, seed=0, B=1.0):
    """y is rescaled to [-B, B]; the first n_train shuffled rows fit the base models, the next n_unlabeled are
    the unlabeled pool (``data=``)."""
    y = B * (2 * (y - y.min()) / np.ptp(y) - 1)
    rows = np.random.default_rng(seed).permutation(len(y))
    train, unl = rows[:n_train], rows[n_train:n_train + n_unlabeled]
    eta, tau, labels = base_models(X[train], y[train], s[train])
    post = fm.GridPredictor(eta=eta, tau=tau, L=L, B=B, groups=list(labels), clip=True)
    options = {} if beta is None else {"entropy": 1.0 / beta}
    prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= eps], **options)
    return prob, {"data": X[unl]}


def labels_of(data):
    return np.asarray(data.groups.names, dtype=object)[data.groups.codes].astype(str)


@case("dp_law_ugpa_race_L10_eps0.01", family="dp", loss="squared", n=2000, groups=2, source="lawschool",
      note="known hard (a): 2,000 unlabeled points, L = 10, beta = 100, eps = 0.01 (Law School, target ugpa, race)",
      tags=("known-hard", "quick"))
def _():
    d = law("ugpa", "race")
    return dp_problem(d.X, d.y, labels_of(d), 2000, 2000, L=10, eps=0.01)


@case("dp_law_ugpa_race_L10_eps0.05", family="dp", loss="squared", n=2000, groups=2, source="lawschool",
      note="known hard (a) at eps = 0.05", tags=("known-hard",))
def _():
    d = law("ugpa", "race")
    return dp_problem(d.X, d.y, labels_of(d), 2000, 2000, L=10, eps=0.05)


@case("dp_adult_age_race_L10_eps0.01", family="dp", loss="squared", n=2000, groups=5, source="adult",
      note="known hard (a) on Adult: target age, 5 race groups (two of about 1%), L = 10, beta = 100, eps = 0.01",
      tags=("known-hard",))
def _():
    d = adult("race", "dp", "age")
    return dp_problem(d.X, d.y, labels_of(d), 3000, 2000, L=10, eps=0.01, seed=1)


@case("dp_communities_race_L8_eps0.05", family="dp", loss="squared", n=984, groups=2, source="communities",
      note="Communities, 1,000 training and 984 unlabeled points, L = 8, eps = 0.05")
def _():
    d = communities()
    return dp_problem(d.X, d.y, labels_of(d), 1000, 984, L=8, eps=0.05, seed=2)


@case("dp_law_zfygpa_racesex_L20_eps0.02_beta1000", family="dp", loss="squared", n=5000, groups=4,
      source="lawschool", note="Law School target zfygpa, 4 groups race x gender, L = 20, beta = 1000, eps 0.02")
def _():
    d = law_race_sex("zfygpa")
    return dp_problem(d.X, d.y, labels_of(d), 3000, 5000, L=20, eps=0.02, beta=1000.0, seed=3)


@case("dp_synth_3groups_L15_eps0.005_beta20", family="dp", loss="squared", n=3000, groups=3, source="synthetic",
      note="synthetic regression, 3 groups, L = 15, beta = 20, eps 0.005 (tight)")
def _():
    d = synthetic(6000, 6, seed=16, regression=True)
    return dp_problem(d.X, d.y, labels_of(d), 3000, 3000, L=15, eps=0.005, beta=20.0, seed=4)


@case("dp_synth_arrays_L5_eps0.1_20000", family="dp", loss="squared", n=20000, groups=2, source="synthetic",
      note="eta and tau given as arrays on 20,000 points (no data=), L = 5, eps 0.1, B = 2", tags=("quick",))
def _():
    rng = np.random.default_rng(17)
    n = 20000
    s = rng.random(n) < 0.3
    eta = np.clip(rng.normal(0.4 * s - 0.1, 0.6), -2, 2)
    p1 = np.clip(0.3 + 0.4 * (s - 0.3) + 0.1 * rng.normal(size=n), 0.02, 0.98)
    tau = np.column_stack([1 - p1, p1])
    post = fm.GridPredictor(eta=eta, tau=tau, L=5, B=2.0)
    return fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.1], entropy=1 / 100), {}


@case("dp_law_lsat_gender_L10_noentropy", family="dp", loss="squared", n=2000, groups=2, source="lawschool",
      note="the declaration's default entropy = 0 (the LP (3)), Law School target lsat by gender, eps 0.02")
def _():
    d = law("lsat", "gender")
    return dp_problem(d.X, d.y, labels_of(d), 2000, 2000, L=10, eps=0.02, beta=None, seed=5)


# -- partial fairness ---------------------------------------------------------------------------------------
def partial_problem(data, kappa, band, weak=False, threshold=0.0, interactions=False, reg=1e-3):
    if interactions:
        data = fm.with_group_interactions(data)
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    atom = (fm.weak_partial_dp(s, data.groups, band=band, threshold=threshold) if weak
            else fm.partial_dp(s, data.groups, band=band))
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + reg * fm.sum_squares(w)),
                      [atom <= kappa]), {}


@case("partial_law_gender_band0.5_k0.05_400", family="partial", loss="logistic", n=400, groups=2,
      source="lawschool", note="partial DP, Law School by gender, band [0.5, 1], kappa 0.05, 400 rows")
def _():
    return partial_problem(law("bar1", "gender").subsample(400, seed=18), 0.05, (0.5, 1.0))


@case("partial_adult_race_band0.8_k0.1_300", family="partial", loss="logistic", n=300, groups=2, source="adult",
      note="partial DP with the paper's group interactions, Adult white vs other, top band [0.8, 1], kappa 0.1")
def _():
    return partial_problem(two_groups(adult("race"), "White").subsample(300, seed=19), 0.1, (0.8, 1.0),
                           interactions=True)


@case("weak_partial_adult_sex_thr0_k0.02_400", family="partial", loss="logistic", n=400, groups=2,
      source="adult", note="weak partial DP at threshold 0, Adult by sex, band [0.3, 0.9], kappa 0.02")
def _():
    return partial_problem(adult("sex").subsample(400, seed=20), 0.02, (0.3, 0.9), weak=True)


@case("partial_communities_band0_k0.2_400", family="partial", loss="logistic", n=400, groups=2,
      source="communities", note="partial DP on the whole band [0, 1] (the KS statistic), binarized Communities, "
                                 "118 features, kappa 0.2")
def _():
    return partial_problem(communities_binary().subsample(400, seed=21), 0.2, (0.0, 1.0))


@case("partial_synth_3groups_k0.1_450", family="partial", loss="logistic", n=450, groups=3, source="synthetic",
      note="partial DP with 3 groups, synthetic, band [0.6, 1], kappa 0.1")
def _():
    return partial_problem(synthetic(450, 6, seed=22), 0.1, (0.6, 1.0))


@case("partial_law_racesex_white_band0.6_k0.1_200", family="partial", loss="logistic", n=200, groups=2,
      source="lawschool", note="partial DP on 200 rows of Law School, white men vs everyone else, band [0.6, 1], "
                               "kappa 0.1, regularization 1e-2", tags=("quick",))
def _():
    d = law_race_sex().subsample(2000, seed=39)
    labels = np.where(labels_of(d) == "white/male", "white/male", "other")
    d = fm.Dataset(d.X, d.y, labels, feature_names=d.feature_names).subsample(200, seed=39)
    return partial_problem(d, 0.1, (0.6, 1.0), reg=1e-2)


# -- strategic Wasserstein DRO ------------------------------------------------------------------------------
def strategic_problem(data, radius, features, zeta=0.05, label_cost=0.5):
    w = fm.Weights(data.n_features)
    score = fm.strategic_score(data, w, strategic_features=features, zeta=zeta)
    loss = fm.logistic_loss(score, data.y)
    return fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=radius, label_cost=label_cost))), {}


@case("strategic_synth_n1500_r0.05", family="strategic", loss="logistic", n=1500, groups=1, source="synthetic",
      note="strategic DRO, the paper's synthetic task, 1,500 rows, radius 0.05")
def _():
    return strategic_problem(fm.datasets.make_strategic_synthetic(n=1500, seed=23), 0.05, range(5))


@case("strategic_synth_n600_p8_r0.3", family="strategic", loss="logistic", n=600, groups=1, source="synthetic",
      note="strategic DRO, 600 rows, 8 features of which 2 strategic, noise variance 0.5, radius 0.3",
      tags=("quick",))
def _():
    data = fm.datasets.make_strategic_synthetic(n=600, p=8, n_strategic=2, noise_var=0.5, seed=40)
    return strategic_problem(data, 0.3, range(2))


@case("strategic_synth_p20_r0.2", family="strategic", loss="logistic", n=2000, groups=1, source="synthetic",
      note="strategic DRO, 20 features of which 10 strategic, zeta 0.2, radius 0.2, label cost 1")
def _():
    data = fm.datasets.make_strategic_synthetic(n=2000, p=20, n_strategic=10, seed=24)
    return strategic_problem(data, 0.2, range(10), zeta=0.2, label_cost=1.0)


@case("strategic_adult_sex_r0.02_2000", family="strategic", loss="logistic", n=2000, groups=1, source="adult",
      note="strategic DRO on 2,000 Adult rows (97 features, 3 strategic), radius 0.02")
def _():
    data = adult("sex").subsample(2000, seed=25)
    features = ["education.num", "capital.gain", "hours.per.week"]
    return strategic_problem(data, 0.02, features)


@case("strategic_law_race_nonstrategic_r0.1", family="strategic", loss="logistic", n=2000, groups=1,
      source="lawschool", note="non-strategic Wasserstein DRO (no strategic features), Law School, radius 0.1")
def _():
    return strategic_problem(law().subsample(2000, seed=26), 0.1, None)


# -- fm.SaddleProblem ---------------------------------------------------------------------------------------
@case("saddle_matrix_game_4x4", family="saddle", loss="bilinear", n=1, groups=0, source="synthetic",
      note="known hard (e): matrix game with A a 4 x 4 standard normal matrix, default solve",
      tags=("known-hard", "quick"))
def _():
    return fm.SaddleProblem.matrix_game(np.random.default_rng(0).standard_normal((4, 4))), {}


@case("saddle_matrix_game_finite_sum_40x6x3", family="saddle", loss="bilinear", n=40, groups=0,
      source="synthetic", note="finite-sum matrix game, 40 components of shape 6 x 3")
def _():
    return fm.SaddleProblem.matrix_game(np.random.default_rng(27).standard_normal((40, 6, 3))), {}


@case("saddle_quadratic_game_30", family="saddle", loss="quadratic", n=30, groups=0, source="synthetic",
      note="quadratic game G1: 30 components, x in R^5 on a ball of radius 2, y in [-1, 1]^3, mu 0.5")
def _():
    rng = np.random.default_rng(28)
    n, q, d, m = 30, 4, 5, 3
    return fm.SaddleProblem.quadratic(rng.standard_normal((n, q, d)), rng.standard_normal((n, q)),
                                      rng.standard_normal((n, m, d)), rng.standard_normal((n, m)), 0.5, 2.0), {}


# -- convex compositions (the generic reduction) --------------------------------------------------------------
@case("comp_gdro_eo_adult_race_hinge_6000", family="convex", loss="hinge", n=6000, groups=5, source="adult",
      note="known hard (c): group DRO with the hinge loss under equal_opportunity_gap <= 0.2, 6,000 rows of Adult "
           "by race", tags=("known-hard",))
def _():
    data = adult("race").subsample(6000, seed=0)
    _, s = linear(data)
    risks = fm.group_mean(fm.hinge_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= 0.2]), {}


@case("comp_bgl_communities_squared_0.025", family="convex", loss="squared", n=1984, groups=2,
      source="communities", note="known hard (b): bounded group loss max(risks) <= 0.025, squared loss, "
                                 "Communities", tags=("known-hard", "quick"))
def _():
    data = communities()
    _, s = linear(data)
    loss = fm.squared_loss(s, data.y)
    return fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.025]), {}


@case("comp_gdro_eo_law_racesex_logistic_eps0.02", family="convex", loss="logistic", n=20800, groups=4,
      source="lawschool", note="group DRO under equal opportunity eps 0.02, Law School race x gender")
def _():
    data = law_race_sex()
    _, s = linear(data)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= 0.02]), {}


@case("comp_gdro_eo_law_race_tight_eps0.002", family="convex", loss="logistic", n=20800, groups=2,
      source="lawschool", note="group DRO under a nearly binding equal opportunity budget 0.002, Law School by race")
def _():
    data = law()
    _, s = linear(data)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= 0.002]), {}


@case("comp_erm_eodds_adult_sex_logistic_10000", family="convex", loss="logistic", n=10000, groups=2,
      source="adult", note="logistic regression under equalized_odds_gap <= 0.05, 10,000 rows of Adult by sex")
def _():
    data = adult("sex").subsample(10000, seed=29)
    _, s = linear(data)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))),
                      [fm.equalized_odds_gap(s, data) <= 0.05]), {}


def covariance(data, loss, c, radius=5.0):
    """Zafar et al. 2017: the loss under |mean((z - zbar) s)| <= c, z the indicator of the second group."""
    _, s = linear(data, radius)
    z = (data.groups.codes == 1).astype(float)
    return fm.Problem(fm.Minimize(fm.mean(LOSSES[loss](s, data.y))), [fm.abs(fm.mean((z - z.mean()) * s)) <= c]), {}


@case("comp_cov_adult_sex_logistic_c0.005", family="convex", loss="logistic", n=30162, groups=2, source="adult",
      note="Zafar et al. 2017 covariance constraint |mean((z - zbar) s)| <= 0.005, Adult by sex")
def _():
    return covariance(adult("sex"), "logistic", 0.005)


@case("comp_cov_law_gender_hinge_c0.001", family="convex", loss="hinge", n=20800, groups=2, source="lawschool",
      note="covariance constraint with the hinge loss, c 0.001, Law School by gender, radius 1")
def _():
    return covariance(law("bar1", "gender"), "hinge", 0.001, radius=1.0)


@case("comp_cov_synth_badscale_logistic_c0.01", family="convex", loss="logistic", n=5000, groups=2,
      source="synthetic", note="covariance constraint on badly scaled synthetic columns (1e-3..1e3), radius 10")
def _():
    data = synthetic(5000, 10, shares=(0.6, 0.4), seed=30, scales=10.0 ** np.linspace(-3, 3, 10))
    return covariance(data, "logistic", 0.01, radius=10.0)


@case("comp_cov_ridge_noradius_communities", family="convex", loss="logistic", n=1984, groups=2,
      source="communities", note="no radius: mean logistic + 1e-2 ||w||^2 under a covariance constraint 0.002, "
                                 "binarized Communities")
def _():
    data = communities_binary()
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    z = (data.groups.codes == 1).astype(float)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-2 * fm.sum_squares(w)),
                      [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.002]), {}


@case("comp_bgl_adult_racesex8_logistic_0.5", family="convex", loss="logistic", n=29875, groups=8, source="adult",
      note="bounded group loss max(risks) <= 0.5 over 8 race x sex groups, Adult")
def _():
    data = adult_race_sex8()
    _, s = linear(data)
    loss = fm.logistic_loss(s, data.y)
    return fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.5]), {}


@case("comp_bgl_law_ugpa_squared_r50", family="convex", loss="squared", n=20800, groups=4, source="lawschool",
      note="bounded group loss for regression: target ugpa, squared loss, race x gender, bound 0.2, radius 50")
def _():
    data = law_race_sex("ugpa")
    _, s = linear(data, 50.0)
    loss = fm.squared_loss(s, data.y)
    return fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.2]), {}


@case("comp_gdro_aucgap_adult_sex_5000", family="convex", loss="logistic", n=5000, groups=2, source="adult",
      note="group DRO under an intra-group AUC gap <= 0.03, 5,000 rows of Adult by sex")
def _():
    data = adult("sex").subsample(5000, seed=31)
    _, s = linear(data)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.auc_gap(s, data, kind="intra") <= 0.03]), {}


@case("comp_erm_two_aucgaps_law_gender_4000", family="convex", loss="logistic", n=4000, groups=2,
      source="lawschool", note="logistic regression under two AUC gaps (inter <= 0.02, group <= 0.02), Law School "
                               "by gender")
def _():
    data = law("bar1", "gender").subsample(4000, seed=32)
    _, s = linear(data)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))),
                      [fm.auc_gap(s, data, kind="inter") <= 0.02, fm.auc_gap(s, data, kind="group") <= 0.02]), {}


@case("comp_pos_excess_adult_race_logistic", family="convex", loss="logistic", n=30162, groups=5,
      source="adult", note="fm.pos: the summed excess group risk sum(pos(risks - 0.4)) <= 0.01, Adult by race")
def _():
    data = adult("race")
    _, s = linear(data)
    loss = fm.logistic_loss(s, data.y)
    risks = fm.group_mean(loss, data.groups)
    return fm.Problem(fm.Minimize(fm.mean(loss)), [fm.sum(fm.pos(risks - 0.4)) <= 0.01]), {}


@case("comp_min_tpr_law_racesex_hinge", family="convex", loss="hinge", n=20800, groups=4, source="lawschool",
      note="fm.min: every group's mean score on its positives >= 0.5, hinge loss, Law School race x gender")
def _():
    data = law_race_sex()
    _, s = linear(data, 2.0)
    m = fm.group_mean(s, data.groups, where=data.y > 0)
    return fm.Problem(fm.Minimize(fm.mean(fm.hinge_loss(s, data.y))), [fm.min(m) >= 0.5]), {}


@case("comp_where_max_of_masks_adult", family="convex", loss="logistic", n=30162, groups=2, source="adult",
      note="where= masks: the worse of the risks of young (age below the mean) and older rows, with a "
           "risk of the women working more hours than the mean bounded by 0.35 (its minimum alone: 0.314), Adult")
def _():
    data = adult("sex")
    _, s = linear(data)
    loss = fm.logistic_loss(s, data.y)
    age = data.X[:, data.feature_names.index("age")]
    hours = data.X[:, data.feature_names.index("hours.per.week")]
    female = data.groups.codes == list(data.groups.names).index("Female")
    objective = fm.max(fm.mean(loss, where=age < 0), fm.mean(loss, where=age >= 0))
    return fm.Problem(fm.Minimize(objective), [fm.mean(loss, where=female & (hours > 0)) <= 0.35]), {}


@case("comp_weighted_gdro_adult_race", family="convex", loss="logistic", n=30162, groups=5, source="adult",
      note="sample weights (log-normal survey weights): weighted group DRO, Adult by race (the group-DRO family "
           "declines weights; the generic reduction solves it)", tags=("large",))
def _():
    data = adult("race")
    sw = np.random.default_rng(33).lognormal(0.0, 0.75, data.n_samples)
    _, s = linear(data)
    risks = fm.group_mean(fm.logistic_loss(s, data.y, sample_weight=sw), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks))), {}


@case("comp_weighted_gdro_law_racesex_hinge_5000", family="convex", loss="hinge", n=5000, groups=4,
      source="lawschool", note="weighted group DRO with the hinge loss (weights uniform in [0.2, 5]), 5,000 rows of "
                               "Law School race x gender, radius 1")
def _():
    data = law_race_sex().subsample(5000, seed=41)
    sw = np.random.default_rng(41).uniform(0.2, 5.0, data.n_samples)
    _, s = linear(data, 1.0)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(s, data.y, sample_weight=sw), data.groups)))), {}


@case("comp_weighted_eo_law_gender_freq", family="convex", loss="logistic", n=8000, groups=2, source="lawschool",
      note="integer frequency weights 1..5 with an equal opportunity budget 0.03 (weighted), 8,000 rows of Law "
           "School by gender", tags=("quick",))
def _():
    data = law("bar1", "gender").subsample(8000, seed=34)
    sw = np.random.default_rng(34).integers(1, 6, data.n_samples).astype(float)
    _, s = linear(data)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y, sample_weight=sw))),
                      [fm.equal_opportunity_gap(s, data, sample_weight=sw) <= 0.03]), {}


@case("comp_gdro_eo_synth_tinygroup", family="convex", loss="logistic", n=3030, groups=3, source="synthetic",
      note="group DRO under equal opportunity 0.05 with a 30-row group, synthetic")
def _():
    data = synthetic(0, 8, sizes=(2000, 1000, 30), seed=35)
    _, s = linear(data)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= 0.05]), {}


@case("comp_cov_synth_d200_hinge", family="convex", loss="hinge", n=4000, groups=2, source="synthetic",
      note="covariance constraint 0.005 with the hinge loss, d = 200, radius 5")
def _():
    return covariance(synthetic(4000, 200, shares=(0.5, 0.5), seed=36), "hinge", 0.005)


@case("comp_gdro_eo_synth_50000", family="convex", loss="logistic", n=50000, groups=4, source="synthetic",
      note="group DRO under equal opportunity 0.05, synthetic 50,000 rows, 4 groups, d = 20", tags=("large",))
def _():
    data = synthetic(50000, 20, shares=(0.4, 0.3, 0.2, 0.1), seed=37)
    _, s = linear(data)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= 0.05]), {}


@case("comp_bgl_synth_imbalanced_hinge_50000", family="convex", loss="hinge", n=50000, groups=3,
      source="synthetic", note="bounded group loss 0.3 with the hinge loss, 5% positives, 50,000 rows",
      tags=("large",))
def _():
    data = synthetic(50000, 15, seed=38, pos_rate=0.05)
    _, s = linear(data, 2.0)
    loss = fm.hinge_loss(s, data.y)
    return fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.3]), {}


# -- evaluation -------------------------------------------------------------------------------------------------
def _result_record(res) -> dict:
    return {"status": res.status, "ok": bool(res.ok), "method": res.method,
            "objective": res.objective, "seconds": res.timings.get("solve", 0.0) + res.timings.get("judge", 0.0),
            "solve_seconds": res.timings.get("solve"), "message": res.message,
            "failed_checks": [{"name": c["name"], "value": c["value"], "tolerance": c["tolerance"]}
                              for c in res.failed_checks()],
            "certificate": {k: v for k, v in res.certificate.items() if isinstance(v, (int, float))}}


def _saddle(sp) -> dict:
    """Exact and default stochastic solve of a SaddleProblem, with the suite's duality-gap checks."""
    exact, stochastic = sp.solve(method="exact"), sp.solve(seed=0)
    checks = []
    for res, tol, who in ((exact, EXACT_GAP_TOL, "exact"), (stochastic, SADDLE_GAP_TOL, "stochastic")):
        gap = res.certificate.get("duality_gap", float("nan"))
        checks.append({"name": f"duality gap ({who}; the result's own ok: {res.ok})", "value": gap, "tolerance": tol,
                       "passed": bool(gap <= tol)})
    ok = exact.ok and stochastic.ok and all(c["passed"] for c in checks)
    return {"ok": bool(ok), "reduction": "saddle", "exact": _result_record(exact),
            "stochastic": _result_record(stochastic), "checks": checks}


def run_case(name: str) -> dict:
    """Build and cross-check one case in this process; never raises (an exception is recorded as an error)."""
    c = CASES[name]
    start = time.perf_counter()
    out = {"case": name, "family": c.family, "loss": c.loss, "n": c.n, "groups": c.groups, "source": c.source}
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _solve(c, out)
    except Exception as err:  # a case that raises is a result of the suite, not a crash of it
        out.update({"ok": False, "error": f"{_raised_in(err)}{type(err).__name__}: {err}",
                    "traceback": traceback.format_exc(limit=8)})
    out["warnings"] = list(dict.fromkeys(f"{w.category.__name__}: {str(w.message)[:300]}" for w in caught))
    out["wall_seconds"] = time.perf_counter() - start
    return out


def _raised_in(err) -> str:
    """Where an exception came from: "exact backend: ", "judge of the stochastic backend: ", or ""."""
    backend, names, tb = None, [], err.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        names.append(frame.f_code.co_name)
        if frame.f_code.co_name == "solve" and frame.f_locals.get("backend") in ("exact", "stochastic"):
            backend = frame.f_locals["backend"]
        tb = tb.tb_next
    if backend is None:
        return ""
    return f"{'judge of the ' if 'judge_solution' in names else ''}{backend} backend: "


def _solve(c: Case, out: dict) -> None:
    problem, options = c.build()
    if isinstance(problem, fm.SaddleProblem):
        out.update(_saddle(problem))
    elif options.pop(STOCHASTIC_ONLY, False):
        res = problem.solve(backend="stochastic", seed=0, **options)
        out.update({"ok": bool(res.ok), "reduction": res.family, "stochastic": _result_record(res), "checks": []})
    else:
        report = fm.crosscheck(problem, seed=0, **options)
        out.update({"ok": bool(report.ok), "reduction": report.family,
                    "exact": _result_record(report.exact), "stochastic": _result_record(report.stochastic),
                    "checks": [{"name": k.name, "value": k.value, "tolerance": k.tolerance,
                                "passed": bool(k.passed)} for k in report.checks]})


def failures(rec: dict) -> list[str]:
    """What failed in a recorded case, one line each: the error, the failed cross-check checks, each backend's
    failed judge checks and its status and message."""
    if "error" in rec:
        return [rec["error"]]
    lines = [f"{c['name']} = {c['value']:.3g} > {c['tolerance']:.3g}" for c in rec.get("checks", [])
             if not c["passed"]]
    for side in ("exact", "stochastic"):
        r = rec.get(side)
        if r and not r["ok"]:
            checks = "; ".join(f"{c['name']} = {c['value']:.3g} > {c['tolerance']:.3g}" for c in r["failed_checks"])
            lines.append(f"{side} {r['method']} {r['status']}" + (f": {checks}" if checks else "")
                         + (f" ({r['message']})" if r["message"] and not checks else ""))
    return lines


def run_isolated(name: str, timeout: float, script: str = __file__) -> dict:
    """run_case in a fresh Python process (``script``: this file, or the suite of another version of the code),
    killed (with its process group) after ``timeout`` seconds."""
    c = CASES[name]
    base = {"case": name, "family": c.family, "loss": c.loss, "n": c.n, "groups": c.groups, "source": c.source}
    start, load = time.perf_counter(), os.getloadavg()[0]
    proc = subprocess.Popen([sys.executable, script, "--child", name], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {**base, "ok": False, "error": f"timeout: over {timeout:.0f} s", "timeout": True,
                "wall_seconds": time.perf_counter() - start, "load_average": load}
    marker = [line for line in stdout.splitlines() if line.startswith("CASE-RESULT ")]
    if proc.returncode != 0 or not marker:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return {**base, "ok": False, "error": f"crashed (exit {proc.returncode}): {tail}",
                "wall_seconds": time.perf_counter() - start, "load_average": load}
    return {**json.loads(marker[-1][len("CASE-RESULT "):]), "load_average": load}


def _seconds(rec, side):
    r = rec.get(side)
    return f"{r['seconds']:.3g}" if r else "-"


def markdown(records: list[dict], note: str = "") -> str:
    ok = sum(r["ok"] for r in records)
    families = {}
    for r in records:
        families.setdefault(r["family"], []).append(r["ok"])
    per_family = ", ".join(f"{f} {sum(v)}/{len(v)}" for f, v in families.items())
    loads = [r["load_average"] for r in records if "load_average" in r]
    if loads:
        note = f"{note} Load average (1 min) at the start of the cases: {min(loads):.1f} to {max(loads):.1f}.".strip()
    rows = []
    for r in records:
        what = "; ".join(failures(r)) if not r["ok"] else ""
        rows.append([f"`{r['case']}`", r["family"], r["n"], r["groups"], "ok" if r["ok"] else "**NOT OK**",
                     _seconds(r, "exact"), _seconds(r, "stochastic"),
                     what.replace("|", "/").replace("\n", " ")[:400]])
    return (f"**Defaults only** (no epochs, budgets, steps or methods), `fm.crosscheck(problem, seed=0)` on "
            f"problem x data combinations the defaults were not tuned on (the registry and what each case covers: "
            f"`python benchmarks/defaults.py --list`). **{ok} / {len(records)} ok** ({per_family}). Times are "
            f"solve + judge per backend; a case that raises or exceeds its time limit is NOT OK. {note}\n\n"
            + table(["case", "family", "n", "groups", "ok", "exact s", "stochastic s", "what failed"], rows))


def markdown_before_after(pairs: list[tuple[dict, dict]], baseline: str, note: str = "") -> str:
    """The section of a --baseline run: each case's verdict and stochastic time before and after."""
    def count(records):
        return f"{sum(r['ok'] for r in records)} / {len(records)}"
    before, after = [b for b, _ in pairs], [a for _, a in pairs]
    loads = [r["load_average"] for r in before + after if "load_average" in r]
    if loads:
        note = f"{note} Load average (1 min) at the start of the cases: {min(loads):.1f} to {max(loads):.1f}.".strip()
    rows = []
    for b, a in pairs:
        changed = b["ok"] != a["ok"]
        what = "; ".join(failures(a)) if not a["ok"] else ""
        rows.append([f"`{a['case']}`", a["family"], ("**ok**" if changed else "ok") if a["ok"] else
                     "**NOT OK**" if changed else "NOT OK", "ok" if b["ok"] else "NOT OK",
                     _seconds(b, "stochastic"), _seconds(a, "stochastic"), _wall(b), _wall(a),
                     what.replace("|", "/").replace("\n", " ")[:400]])
    return (f"**Defaults only** (no epochs, budgets, steps or methods), `fm.crosscheck(problem, seed=0)` on "
            f"problem x data combinations the defaults were not tuned on (`python benchmarks/defaults.py --list`), "
            f"run before ({baseline}) and after, case by case in one session (alternating which goes first; each "
            f"in a fresh process): **{count(after)} ok after, {count(before)} before**. Times: the stochastic "
            f"backend's solve + judge, and the whole case (both backends, the data); a case that raises or exceeds "
            f"its time limit is NOT OK. {note}\n\n"
            + table(["case", "family", "after", "before", "stochastic s before", "stochastic s after",
                     "case s before", "case s after", "what fails after"], rows))


def _wall(rec) -> str:
    return f"{rec['wall_seconds']:.3g}" if "wall_seconds" in rec else "-"


SECTION = "## The defaults suite (`benchmarks/defaults.py`)\n\n"


def select(names=None, tags=None, quick=False) -> list[str]:
    chosen = list(CASES)
    if quick:
        chosen = [n for n in chosen if "quick" in CASES[n].tags]
    if names:
        unknown = [n for n in names if n not in CASES]
        if unknown:
            raise SystemExit(f"unknown case(s) {', '.join(unknown)}; see --list")
        chosen = [n for n in chosen if n in names]
    if tags:
        chosen = [n for n in chosen if CASES[n].all_tags & set(tags)]
    return chosen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the fast subset (tag 'quick')")
    parser.add_argument("--cases", help="comma-separated case names")
    parser.add_argument("--tags", help="comma-separated tags (family, loss, source, quick, large, known-hard)")
    parser.add_argument("--json", help="write every record to this JSON file")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per case (3x for 'large' cases)")
    parser.add_argument("--doc", action="store_true", help="write the docs/benchmarks.md section for any selection")
    parser.add_argument("--list", action="store_true", help="print the registry and exit")
    parser.add_argument("--from-json", help="rewrite the docs/benchmarks.md section from a saved --json run")
    parser.add_argument("--note", default="", help="a sentence for the section (e.g. what else ran on the machine)")
    parser.add_argument("--baseline", help="a directory holding an earlier version of the code: run each case with "
                                           "both (before / after), alternating")
    parser.add_argument("--baseline-label", default="the baseline", help="how the section names the baseline")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print("CASE-RESULT " + json.dumps(run_case(args.child), default=float))
        return 0
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        body = (markdown_before_after([(r["before"], r["after"]) for r in saved], args.baseline_label, args.note)
                if saved and "before" in saved[0] else markdown(saved, args.note))
        write_section("defaults", SECTION + body)
        return 0
    names = select(args.cases.split(",") if args.cases else None, args.tags.split(",") if args.tags else None,
                   args.quick)
    if args.list:
        for n in names:
            c = CASES[n]
            print(f"{n}: [{c.family}, {c.loss}, n={c.n}, groups={c.groups}, {c.source}"
                  + (", " + ", ".join(c.tags) if c.tags else "") + f"] {c.note}")
        print(f"{len(names)} cases")
        return 0
    if args.baseline:
        return _before_after(names, args)
    records = []
    for i, n in enumerate(names, 1):
        limit = args.timeout * (3 if "large" in CASES[n].tags else 1)
        rec = run_isolated(n, limit)
        records.append(rec)
        print(f"[{i}/{len(names)}] {n}: {'ok' if rec['ok'] else 'NOT OK'} in {rec['wall_seconds']:.1f} s"
              + ("" if rec["ok"] else " -- " + " | ".join(failures(rec))), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(records, indent=1, default=float))
    print(f"\n{sum(r['ok'] for r in records)} / {len(records)} ok")
    if args.doc or not (args.quick or args.cases or args.tags):
        write_section("defaults", SECTION + markdown(records, args.note))
    return 0


def _before_after(names: list[str], args) -> int:
    """Every case with the baseline's suite and with this one, alternating the order."""
    script = str(Path(args.baseline).resolve() / "benchmarks" / "defaults.py")
    pairs = []
    for i, n in enumerate(names, 1):
        limit = args.timeout * (3 if "large" in CASES[n].tags else 1)
        if i % 2:
            before = run_isolated(n, limit, script)
            after = run_isolated(n, limit)
        else:
            after = run_isolated(n, limit)
            before = run_isolated(n, limit, script)
        pairs.append((before, after))
        print(f"[{i}/{len(names)}] {n}: before {'ok' if before['ok'] else 'NOT OK'} in {before['wall_seconds']:.1f} s, "
              f"after {'ok' if after['ok'] else 'NOT OK'} in {after['wall_seconds']:.1f} s"
              + ("" if after["ok"] else " -- " + " | ".join(failures(after))), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps([{"before": b, "after": a} for b, a in pairs], indent=1,
                                                  default=float))
    print(f"\nafter: {sum(a['ok'] for _, a in pairs)} / {len(pairs)} ok; before: "
          f"{sum(b['ok'] for b, _ in pairs)} / {len(pairs)} ok")
    if args.doc or not (args.quick or args.cases or args.tags):
        write_section("defaults", SECTION + markdown_before_after(pairs, args.baseline_label, args.note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
