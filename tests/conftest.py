"""Shared fixtures: small seeded group-DRO instances (a sanity-check instance: m = 3 logistic groups)."""

import pytest

import fairmodel as fm
from fairmodel.families.gdro import group_risks_of


def make_instance(m=3, d=5, sizes=(40, 50, 60), flips=(0.1, 0.2, 0.3), radius=3.0, seed=0, intercept=False):
    data = fm.datasets.make_gdro_synthetic(m=m, d=d, n_per_group=list(sizes), flip=list(flips), seed=seed)
    w = fm.Weights(data.n_features, radius=radius, intercept=intercept)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    return data, w, risks


@pytest.fixture
def small():
    """m=3, d=5, n_i = 40/50/60, label flips 0.1/0.2/0.3, radius 3 (an independent
    numpy/CVXPY check of this configuration, with another seed, found OPT = 0.6375)."""
    return make_instance()


@pytest.fixture
def small_risks(small):
    return group_risks_of(small[2])
