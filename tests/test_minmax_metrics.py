"""Accuracy and margin under strategic shift and worst-case Wasserstein perturbations (§6.1 of the
zeroth-order min-max paper)."""
import numpy as np
import pytest
from scipy.optimize import linprog

import fairmodel as fm
from fairmodel.errors import DataError, ModelError
from fairmodel.metrics import strategic_accuracy, strategic_margin, worst_case_accuracy, worst_case_margin


@pytest.fixture(scope="module")
def setup():
    data = fm.datasets.make_strategic_synthetic(n=120, seed=0)
    theta = np.random.default_rng(0).normal(size=10)
    return data, theta


def test_strategic_shift(setup):
    data, theta = setup
    plain = np.mean(np.sign(data.X @ theta) == data.y)
    assert strategic_accuracy(theta, data) == pytest.approx(plain)
    mask = np.arange(10) < 5
    shifted = data.X + np.outer(data.y < 0, 0.3 * mask * theta)
    assert strategic_accuracy(theta, data, zeta=0.3, strategic_features=mask) == pytest.approx(
        np.mean(data.y * (shifted @ theta) > 0))
    assert strategic_margin(theta, data, zeta=0.3, strategic_features=["s0", "s1", "s2", "s3", "s4"]) == \
        pytest.approx(np.mean(data.y * (shifted @ theta)))
    curve = strategic_accuracy(theta, data.X, data.y, zeta=[0.0, 0.5, 2.0], strategic_features=range(5))
    assert curve.shape == (3,) and curve[0] >= curve[1] >= curve[2]   # -1 agents only gain from moving
    assert strategic_margin(np.zeros(10), data, zeta=1.0, strategic_features=range(5)) == 0.0


def _lp_accuracy(theta, X, y, radius, kappa):
    m = y * (X @ theta)
    correct = m > 0
    cost = m[correct] / np.linalg.norm(theta)
    if kappa is not None:
        cost = np.where(y[correct] > 0, np.minimum(cost, 2 * kappa), cost)
    n = len(y)
    res = linprog(-np.ones(cost.size) / n, A_ub=[cost / n], b_ub=[radius], bounds=[(0, 1)] * cost.size,
                  method="highs")
    return (correct.sum() + res.fun * n) / n


def _lp_margin(theta, X, y, radius, kappa):
    m = y * (X @ theta)
    n, nrm = len(y), np.linalg.norm(theta)
    pos = np.flatnonzero(y > 0)
    # variables: flip fractions f_i (i in I+) and transport t; minimize -2 sum f_i m_i / n - t ||theta||
    c = np.concatenate([-2 * m[pos] / n, [-nrm]])
    A = [np.concatenate([np.full(pos.size, 2 * kappa / n), [1.0]])]
    res = linprog(c, A_ub=A, b_ub=[radius], bounds=[(0, 1)] * pos.size + [(0, None)], method="highs")
    return np.mean(m) + res.fun


@pytest.mark.parametrize("radius", [0.0, 0.05, 0.3, 2.0])
@pytest.mark.parametrize("kappa", [None, 0.5, 0.05])
def test_worst_case_metrics_match_linear_programs(setup, radius, kappa):
    """The greedy closed forms equal the LPs of the adversary's fractional allocation (solved by HiGHS)."""
    data, theta = setup
    acc = worst_case_accuracy(theta, data, radius=radius, label_cost=kappa)
    assert acc == pytest.approx(_lp_accuracy(theta, data.X, data.y, radius, kappa), abs=1e-9)
    if kappa is not None:
        mar = worst_case_margin(theta, data, radius=radius, label_cost=kappa)
        assert mar == pytest.approx(_lp_margin(theta, data.X, data.y, radius, kappa), abs=1e-9)
    else:
        assert worst_case_margin(theta, data, radius=radius) == pytest.approx(
            strategic_margin(theta, data) - radius * np.linalg.norm(theta))


def test_worst_case_with_strategic_shift_and_monotonicity(setup):
    data, theta = setup
    kw = dict(zeta=0.2, strategic_features=range(5), label_cost=0.5)
    radii = [0.0, 0.01, 0.1, 1.0]
    accs = [worst_case_accuracy(theta, data, radius=r, **kw) for r in radii]
    assert accs[0] == pytest.approx(strategic_accuracy(theta, data, zeta=0.2, strategic_features=range(5)))
    assert all(a >= b for a, b in zip(accs, accs[1:]))


def test_invalid_metric_inputs(setup):
    data, theta = setup
    with pytest.raises(ModelError, match="length 10"):
        strategic_accuracy(theta[:3], data)
    with pytest.raises(DataError, match="labels are needed"):
        strategic_accuracy(theta, data.X)
    with pytest.raises(ModelError, match="zeta must be"):
        strategic_accuracy(theta, data, zeta=-1.0)
    with pytest.raises(ModelError, match="label_cost must be positive"):
        worst_case_accuracy(theta, data, radius=0.1, label_cost=0.0)
    with pytest.raises(ModelError, match="one entry per feature"):
        strategic_margin(theta, data, zeta=0.1, strategic_features=np.ones(4, dtype=bool))
