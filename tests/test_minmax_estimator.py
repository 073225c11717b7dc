"""The zeroth-order estimator (Maheshwari et al., AISTATS 2022, §4.1 and Prop. A.3).

Monte Carlo checks use N draws with a fixed seed and a tolerance of 5 standard errors of the mean, with the
standard error estimated from the same draws (the mean of N i.i.d. draws is ~normal by the CLT; 5 sigma
keeps a false alarm below 1e-6 per coordinate while a wrong sign, scale or bias is off by many sigmas).
"""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.stochastic.ogda import Estimator, sphere_directions


def _draws(problem, u, R, N, seed=0, order=0, estimator="one-point"):
    est = Estimator(problem.oracle(), order, estimator)
    rng = np.random.default_rng(seed)
    V = sphere_directions(rng, N, est.d_zo)
    return np.array([np.concatenate([gx, gy]) for gx, _, gy in (est(0, u, R, v) for v in V)]), V, est


def _assert_mean(samples, expected, sigmas=5.0):
    mean = samples.mean(axis=0)
    se = samples.std(axis=0, ddof=1) / np.sqrt(samples.shape[0])
    assert np.all(np.abs(mean - expected) <= sigmas * se + 1e-12), (mean, expected, se)


def test_norm_identity_and_unit_directions():
    """||F_hat|| = (d/R) |L(u + R v)| exactly, and v has unit norm."""
    sp = fm.SaddleProblem(lambda x, y, i: float(np.sin(x @ x) + x[0] * y[1] + 2.0), 1, fm.Ball(2, 1.0),
                          fm.Box(-1.0, 1.0, size=2))
    u, R = np.array([0.3, -0.2, 0.5, 0.1]), 0.3
    F, V, est = _draws(sp, u, R, 50)
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1.0, atol=1e-14)
    values = np.array([sp.value_fn((u + R * v)[:2], (u + R * v)[2:], 0) for v in V])
    np.testing.assert_allclose(np.linalg.norm(F, axis=1), 4 / R * np.abs(values), rtol=1e-12)
    assert est.queries == 50


def test_sphere_moments():
    """E v = 0 and E v v^T = I/d (5 standard errors)."""
    d, N = 5, 20000
    V = sphere_directions(np.random.default_rng(3), N, d)
    _assert_mean(V, np.zeros(d))
    outer = (V[:, :, None] * V[:, None, :]).reshape(N, d * d)
    _assert_mean(outer, (np.eye(d) / d).ravel())


def test_unbiased_for_a_quadratic_with_the_sign_flip():
    """For quadratic L the smoothed gradient is the gradient, so E F_hat = J grad L = (grad_x, -grad_y)."""
    Q = np.array([[2.0, 0.5], [0.5, 1.0]])

    def L(x, y, i):
        return float(x @ Q @ x + 3 * x[0] * y[0] - y @ y + x[1] - 2 * y[1])
    sp = fm.SaddleProblem(L, 1, fm.Ball(2, 1.0), fm.Box(-1.0, 1.0, size=2))
    u = np.array([0.4, -0.3, 0.2, 0.6])
    x, y = u[:2], u[2:]
    grad_x = 2 * Q @ x + np.array([3 * y[0], 1.0])
    grad_y = np.array([3 * x[0], 0.0]) - 2 * y + np.array([0.0, -2.0])
    F, _, _ = _draws(sp, u, 0.2, 20000, seed=4)
    _assert_mean(F, np.concatenate([grad_x, -grad_y]))


def test_bilinear_sign_convention():
    """For L(x, y) = x y the mean estimate is (y, -x)."""
    sp = fm.SaddleProblem(lambda x, y, i: float(x[0] * y[0]), 1, fm.Ball(1, 1.0), fm.Box(-1.0, 1.0, size=1))
    F, _, _ = _draws(sp, np.array([0.7, -0.4]), 0.1, 20000, seed=5)
    _assert_mean(F, np.array([-0.4, -0.7]))


def test_cubic_estimates_the_ball_smoothed_gradient():
    """For L = u_1^3 in R^d, E F_hat_1 = 3 u_1^2 + 3 R^2/(d+2) (ball smoothing, as in Prop. A.3; the proof of
    Lemma A.7 restates it with the sphere), others 0."""
    d, R = 3, 0.8
    sp = fm.SaddleProblem(lambda x, y, i: float(x[0] ** 3), 1, fm.Ball(d, 1.0), fm.Box(-1.0, 1.0, size=0 + 1),
                          zo_mask=np.array([True] * d + [False]), grad=lambda x, y, i: (np.zeros(d), np.zeros(1)))
    u = np.array([0.5, 0.1, -0.2, 0.0])
    F, _, _ = _draws(sp, u, R, 20000, seed=6)
    expected = np.array([3 * 0.25 + 3 * R ** 2 / (d + 2), 0.0, 0.0, 0.0])
    _assert_mean(F, expected)
    # the smoothing bias 3R^2/(d+2) = 0.384 is detected: it is many standard errors from the plain gradient
    se = F[:, 0].std() / np.sqrt(F.shape[0])
    assert abs(F[:, 0].mean() - 0.75) > 10 * se


def test_bias_is_within_ell_R():
    """Prop. A.3 (11): ||E F_hat - F|| <= ell R; for L = sum cos(u_k), ell = 1."""
    sp = fm.SaddleProblem(lambda x, y, i: float(np.sum(np.cos(x)) + np.sum(np.cos(y))), 1, fm.Ball(2, 1.0),
                          fm.Box(-1.0, 1.0, size=1))
    u, R = np.array([0.3, 1.1, -0.6]), 0.5
    F, _, _ = _draws(sp, u, R, 20000, seed=7)
    exact = np.concatenate([-np.sin(u[:2]), np.sin(u[2:])])       # J grad L
    se = F.std(axis=0) / np.sqrt(F.shape[0])
    assert np.linalg.norm(F.mean(axis=0) - exact) <= 1.0 * R + 5 * np.linalg.norm(se)


def test_block_mode_uses_exact_partials_deterministically():
    """Coordinates outside zo_mask equal the exact partial derivatives (with the sign flip), every draw."""
    def L(x, y, i):
        return float(x @ x + x[0] * y[0] - 0.5 * y[0] ** 2)

    def G(x, y, i):
        return np.array([2 * x[0] + y[0], 2 * x[1]]), np.array([x[0] - y[0]])
    sp = fm.SaddleProblem(L, 1, fm.Ball(2, 1.0), fm.Box(-1.0, 1.0, size=1), grad=G,
                          zo_mask=np.array([True, True, False]))
    u = np.array([0.2, -0.1, 0.4])
    F, _, est = _draws(sp, u, 0.1, 200, seed=8)
    np.testing.assert_allclose(F[:, 2], -(0.2 - 0.4), atol=1e-15)
    assert est.gradients == 200 and est.queries == 200
    # the zo block estimates the x-gradient (2x + y on coordinate 0)
    F, _, _ = _draws(sp, u, 0.1, 20000, seed=9)
    _assert_mean(F[:, :2], np.array([2 * 0.2 + 0.4, -0.2]))


def test_two_point_estimator_has_the_same_mean_and_less_variance():
    """Extension (not in the paper): same expectation, variance reduced (here by > 100x)."""
    sp = fm.SaddleProblem(lambda x, y, i: float(x @ x + x[0] * y[0] + 5.0), 1, fm.Ball(2, 1.0),
                          fm.Box(-1.0, 1.0, size=1))
    u = np.array([0.3, 0.2, -0.5])
    one, _, e1 = _draws(sp, u, 0.1, 20000, seed=10)
    two, _, e2 = _draws(sp, u, 0.1, 20000, seed=10, estimator="two-point")
    expected = np.array([2 * 0.3 - 0.5, 0.4, -0.3])
    _assert_mean(one, expected)
    _assert_mean(two, expected)
    assert two.var(axis=0).sum() * 100 < one.var(axis=0).sum()
    assert e2.queries == 2 * e1.queries


def test_first_order_mode_is_exact():
    sp = fm.SaddleProblem(lambda x, y, i: 0.0, 1, fm.Ball(1, 1.0), fm.Box(-1.0, 1.0, size=1),
                          grad=lambda x, y, i: (np.array([2.0]), np.array([3.0])))
    F, _, est = _draws(sp, np.zeros(2), 0.1, 3, order=1)
    np.testing.assert_allclose(F, [[2.0, -3.0]] * 3)
    assert est.queries == 0 and est.gradients == 3


def test_a_mini_batch_of_directions_is_the_mean_of_its_single_estimates():
    """Exact identity: the estimate from k directions (one vectorized values call) is the mean of the k
    one-direction estimates, for both estimators; the default values loop matches value."""
    sp = fm.SaddleProblem(lambda x, y, i: float(np.sin(x @ x) + x[0] * y[1] + 2.0), 1, fm.Ball(2, 1.0),
                          fm.Box(-1.0, 1.0, size=2))
    u, R = np.array([0.3, -0.2, 0.5, 0.1]), 0.3
    V = sphere_directions(np.random.default_rng(5), 6, 4, 3)
    assert V.shape == (6, 3, 4)
    for kind in ("one-point", "two-point"):
        est = Estimator(sp.oracle(), 0, kind)
        for block in V:
            batch = np.concatenate([est(0, u, R, block)[0], est(0, u, R, block)[2]])
            singles = np.mean([np.concatenate([gx, gy]) for gx, _, gy in (est(0, u, R, v) for v in block)], axis=0)
            np.testing.assert_allclose(batch, singles, rtol=1e-12, atol=1e-14)
        assert est.queries == (2 if kind == "two-point" else 1) * 6 * 3 * 3


def test_the_choice_of_estimator_measures_the_noise_of_the_components():
    """choose_estimator: on identical components (no spread: c = 0) the two-point estimator with as many directions
    as coordinates (k = d); on a linear L the two-point difference is exact along each direction, so the measured
    noise of one direction is sqrt(d - 1) ||grad L|| (E ||d <g, v> v - g||^2 = (d - 1) ||g||^2 on the sphere)."""
    from fairmodel.stochastic.ogda_estimator import FD_RADIUS, choose_estimator
    g = np.array([1.0, -2.0, 0.5, 3.0, 0.0, 1.5])
    sp = fm.SaddleProblem(lambda x, y, i: float(g @ x + 10.0), 4, fm.Ball(6, 1.0), fm.Box(-1.0, 1.0, size=1),
                          zo_mask=np.r_[np.ones(6, bool), False], grad=lambda x, y, i: (g, np.zeros(1)))
    out = choose_estimator(sp.oracle(), np.random.default_rng(0), 0.5, probes=200)
    assert out["estimator"] == "two-point" and out["directions"] == 6 and out["R0"] == FD_RADIUS * 0.5
    assert out["noise_two_point"] ** 2 == pytest.approx(5 * g @ g, rel=0.25)
    assert out["noise_one_point"] > 10 * out["noise_two_point"]      # (d / R) * 10 dominates
