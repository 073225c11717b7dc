"""The restarts' primal weight of the generic lowering (stochastic/primal_dual.py, families/lagrangian.py): the split
of the coupling bound between w and the simplices follows the last run's movements (Applegate et al. 2021, Section
3.3), within every step's own cap."""
import numpy as np
import pytest

from fairmodel.families.lagrangian import LagrangianOracle
from fairmodel.families.piecewise import saddle_form
from fairmodel.stochastic.primal_dual import WEIGHT_RANGE, balanced_weight
from tests.test_generic_steps import _covariance_problem


def _kl(p, q):
    return float(np.sum(p * np.log(p / q)))


def test_balanced_weight_moves_halfway_in_log_scale_toward_the_balancing_split():
    rng = np.random.default_rng(0)
    w0, w1 = rng.normal(size=5), rng.normal(size=5)
    y0 = [np.full(3, 1 / 3), np.full(2, 0.5)]
    y1 = [np.array([0.5, 0.3, 0.2]), np.array([0.9, 0.1])]
    step_w, step_y = 0.02, [0.7, 0.3]
    primal = np.sum((w1 - w0) ** 2) / (2 * step_w)
    dual = _kl(y1[0], y0[0]) / step_y[0] + _kl(y1[1], y0[1]) / step_y[1]
    for weight in (1.0, 3.0, 0.2):
        new = balanced_weight(weight, w0, w1, y0, y1, step_w, step_y)
        assert new == pytest.approx(weight * (primal / dual) ** 0.25, rel=1e-12)
    # the split that balances the movements: w's step times sqrt(q), the y-steps divided by it; at it, q = 1 and the
    # weight stays
    q = primal / dual
    assert balanced_weight(2.0, w0, w1, y0, y1, step_w * np.sqrt(q), [g / np.sqrt(q) for g in step_y]) == \
        pytest.approx(2.0, rel=1e-12)
    # a simplex at its own cap (not set by the coupling with w) does not trade with w: only the coupled one counts
    alone = _kl(y1[1], y0[1]) / step_y[1]
    assert balanced_weight(1.0, w0, w1, y0, y1, step_w, step_y, coupled=[False, True]) == \
        pytest.approx((primal / alone) ** 0.25, rel=1e-12)


def test_balanced_weight_keeps_the_weight_when_a_side_did_not_move_and_stays_in_its_range():
    w0 = np.zeros(3)
    y = [np.full(4, 0.25)]
    assert balanced_weight(5.0, w0, w0, y, [np.array([0.4, 0.2, 0.2, 0.2])], 0.1, [1.0]) == 5.0
    assert balanced_weight(5.0, w0, np.ones(3), y, y, 0.1, [1.0]) == 5.0
    far = balanced_weight(60.0, w0, 1e6 * np.ones(3), y, [np.array([0.26, 0.25, 0.25, 0.24])], 1e-6, [1.0])
    near = balanced_weight(1 / 60, w0, 1e-9 * np.ones(3), y, [np.array([0.97, 0.01, 0.01, 0.01])], 1.0, [1e-6])
    assert far == WEIGHT_RANGE and near == 1 / WEIGHT_RANGE


@pytest.mark.parametrize("weight", [0.05, 0.5, 4.0, 1e3])
def test_weighted_steps_scale_w_within_its_cap_and_keep_the_coupling_bound(weight):
    prob, w = _covariance_problem()
    form = saddle_form(prob.canonical, w)
    oracle = LagrangianOracle(form, w, 3.0, coordinates=prob.family.coordinates(form))
    step_w, step_y = oracle.default_steps()
    assert oracle.applied_weight == 1.0
    # by default every simplex takes its spread's step and the tightest coupling sets w's: that one is coupled
    assert any(oracle.coupled)
    weighted_w, weighted_y = oracle.default_steps(primal_weight=weight)
    assert oracle.applied_weight == pytest.approx(weighted_w / step_w, rel=1e-12)
    coupled = list(oracle.coupled)
    # the caps: w's curvature step (the largest w-step any weight reaches) and every simplex's spread step (the
    # y-steps at the smallest weight)
    cap_w, _ = oracle.default_steps(primal_weight=1e12)
    _, cap_y = oracle.default_steps(primal_weight=1e-12)
    assert weighted_w == pytest.approx(min(step_w * weight, cap_w), rel=1e-12)
    assert cap_w > step_w          # this problem's default leaves w below its cap: a larger weight moves it
    # the cap is w's curvature step: at most 1 / 2 over the top curvature of the smooth part at uniform duals (the
    # steps take every leaf at its largest weight, so their curvature is at least that)
    u0 = oracle.project(np.zeros(oracle.shape))
    snap = oracle.snapshot(u0, [np.full(m, 1.0 / m) for m in oracle.blocks])
    H_u, _ = oracle._curvature_moments(u0, np.abs(snap.omega))
    assert cap_w <= 0.5 / np.linalg.eigvalsh(H_u)[-1] * (1 + 1e-9)
    for g, g0, cap in zip(weighted_y, step_y, cap_y):
        assert g <= cap * (1 + 1e-12)
        if weight > 1:             # w took more: each simplex keeps the product with w's step of the default
            assert g * weighted_w <= g0 * step_w * (1 + 1e-9)
        else:                      # w took less: the simplex takes its cap (it is at it by default here)
            assert g == pytest.approx(cap, rel=1e-12)
    if weight > 1 and weighted_w > step_w:     # w's larger step binds every simplex whose step it lowered
        assert all(tied for tied, g, g0 in zip(coupled, weighted_y, step_y) if g < g0 * (1 - 1e-9))
