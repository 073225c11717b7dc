"""Certified lower bounds for hinge losses by smoothing: the softplus mu log(1 + e^((1 - y z) / mu)) lies between the
hinge and the hinge + mu log 2 (the entropy smoothing of a maximum, Nesterov 2005, Smooth minimization of non-smooth
functions, §4), and a line a (1 - y z) with a in [0, 1] lies below the hinge everywhere. The bound of the tangent lines
at the smoothed minimum is checked against the exact minimum of an independent CVXPY program of the hinge."""
import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.exact import gdro as exact_gdro
from fairmodel.families.gdro import group_risks_of
from fairmodel.oracles.losses import Hinge, Logistic
from fairmodel.oracles.smoothing import HingeSmoothing, minorant, smoothable, smoothed


def test_the_softplus_lies_between_the_hinge_and_the_hinge_plus_mu_log_2_and_its_derivatives_are_right():
    rng = np.random.default_rng(0)
    z, y = rng.normal(scale=3.0, size=2000), rng.choice([-1.0, 1.0], size=2000)
    hinge = np.maximum(0.0, 1.0 - y * z)
    for mu in (1e-1, 1e-3):
        value, slope, curvature = HingeSmoothing.smooth(z, y, mu)
        rounding = 1e-15 * (1.0 + hinge)             # mu * ((1 - y z) / mu) need not round to 1 - y z
        assert np.all(value >= hinge - rounding) and np.all(value <= hinge + mu * np.log(2) + rounding)
        h = 1e-6 * mu
        up, down = HingeSmoothing.smooth(z + h, y, mu), HingeSmoothing.smooth(z - h, y, mu)
        np.testing.assert_allclose(slope, (up[0] - down[0]) / (2 * h), rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(curvature, (up[1] - down[1]) / (2 * h), rtol=1e-4, atol=1e-6 / mu)


def test_a_tangent_line_lies_below_the_hinge_everywhere_and_touches_its_smoothed_slope():
    rng = np.random.default_rng(1)
    z0, y = rng.normal(scale=2.0, size=500), rng.choice([-1.0, 1.0], size=500)
    value, slope = HingeSmoothing.tangent(z0, y, 1e-2)
    np.testing.assert_allclose(slope, HingeSmoothing.smooth(z0, y, 1e-2)[1])
    for z in np.linspace(-6, 6, 61):              # the line through (z0, value) of that slope, at any other score
        line = value + slope * (z - z0)
        assert np.all(line <= np.maximum(0.0, 1.0 - y * z) + 1e-12)


def test_only_the_hinge_is_smoothed():
    assert smoothable(Hinge) and not smoothable(Logistic) and not smoothable(None)
    assert smoothed(Logistic, 0.1) is Logistic
    assert smoothed(Hinge, 0.1).smoothness(np.inf, 1.0) == pytest.approx(2.5) and smoothed(Hinge, 0.1).smooth()
    assert minorant(Hinge, 0.1).d2phi is None


@pytest.mark.parametrize("q", [(0.5, 0.5), (0.9, 0.1)])
def test_the_weighted_hinge_risk_bound_is_below_the_cvxpy_minimum_and_close_to_it(q):
    """min over the ball of sum_g q_g (mean hinge of group g): the smoothed method's value is a feasible point's (at or
    above the minimum), its bound at or below the CVXPY minimum. The bound's distance to the minimum is what the
    linear minorant loses on the rows at a kink (at the optimum about as many as parameters): 8e-6 at mu = 1e-3 on
    these rows, where projected Newton on the smoothing stops converging at mu = 1e-4; the record says so."""
    data = fm.datasets.load_adult(sensitive="sex").subsample(1500, seed=0)
    w = fm.Weights(data.n_features, radius=2.0, intercept=True)
    risks = group_risks_of(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))
    q = np.asarray(q)
    theta, record = exact_gdro.solve_weighted_erm(risks, q)
    assert record["name"].startswith("tangent lines at the smoothed minimum")
    value, bound = record["value"], record["value"] - record["fw_gap"]

    X, y, codes = data.X, data.y, data.groups.codes
    v, b = cp.Variable(X.shape[1]), cp.Variable()
    per_row = cp.pos(1 - cp.multiply(y, X @ v + b))
    objective = sum(q[g] * cp.sum(per_row[np.flatnonzero(codes == g)]) / np.sum(codes == g) for g in range(2))
    optimum = cp.Problem(cp.Minimize(objective), [cp.sum_squares(cp.hstack([v, b])) <= 4.0]).solve(solver="CLARABEL")

    assert bound <= optimum + 1e-7 <= value + 2e-7
    assert value - bound <= 1e-5 and np.linalg.norm(theta) <= 2.0 + 1e-9
    assert record["status"] == ("optimal" if value - bound <= 1e-9 * max(1.0, value) else "inaccurate")
    assert value == pytest.approx(risks.weighted_value_and_grad(theta, q)[0], abs=1e-12)
