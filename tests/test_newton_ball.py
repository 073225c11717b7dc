"""The projected Newton method on a ball and its interior-point continuation (fairmodel.exact.newton)."""
import numpy as np
import pytest

from fairmodel.exact.newton import ball_qp_step, minimize_on_ball, minimize_on_ball_ipm, newton_steps
from fairmodel.oracles.domains import frank_wolfe_gap


def _linear(c):
    """f(theta) = c . theta: no curvature in any direction (the flat case where projected Newton stalls)."""
    def fun(theta, value_only=False):
        value = float(c @ theta)
        return value if value_only else (value, c.copy(), np.zeros((c.size, c.size)))
    return fun


def _quadratic(H, b):
    def fun(theta, value_only=False):
        value = 0.5 * float(theta @ H @ theta) - float(b @ theta)
        return value if value_only else (value, H @ theta - b, H)
    return fun


def _run(steps, fun):
    request = next(steps)
    try:
        while True:
            theta, value_only = request
            request = steps.send(fun(theta, value_only=True) if value_only else fun(theta))
    except StopIteration as done:
        return done.value


def test_flat_function_newton_steps_to_the_sphere_and_the_interior_point_method_agrees():
    """A linear function has no curvature: the model's unconstrained 'minimizer' (the current point) is no minimum,
    so the ball QP step goes to the sphere, where the minimum is (before, Newton stalled at its start with a gap of
    10 and the interior-point continuation found it)."""
    c = np.array([3.0, -4.0, 0.0])          # min over ||theta|| <= 2 of c . theta = -2 ||c|| = -10 at -2 c / ||c||
    fun = _linear(c)
    for theta, value, gap in (_run(newton_steps(np.zeros(3), 2.0, 1e-10, 50, strict=True), fun),
                              minimize_on_ball(fun, np.zeros(3), 2.0, tol=1e-10),
                              minimize_on_ball_ipm(fun, np.zeros(3), 2.0, tol=1e-10)):
        assert value == pytest.approx(-10.0, abs=1e-7)
        assert np.allclose(theta, -2.0 * c / 5.0, atol=1e-6)
        assert 0.0 <= gap <= 1e-7 and value - gap <= -10.0      # the Frank-Wolfe bound stays a lower bound


def test_interior_point_on_a_singular_quadratic_with_the_ball_active_matches_the_secular_equation():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 6))
    H = A.T @ A                              # rank 3 of 6: flat along a 3-dimensional subspace
    b = H @ rng.standard_normal(6) * 5.0     # b in the range of H: the unconstrained minimizers lie far out
    rho = 1.0
    exact = ball_qp_step(H, b, rho)          # the trust-region solution (eigendecomposition, secular equation)
    fun = _quadratic(H, b)
    theta, value, gap = minimize_on_ball_ipm(fun, rng.standard_normal(6), rho, tol=1e-10)
    assert value == pytest.approx(fun(exact, value_only=True), abs=1e-7)
    assert np.linalg.norm(theta) <= rho + 1e-12
    assert value - gap <= fun(exact, value_only=True) + 1e-12 and gap <= 1e-6


def test_ball_qp_step_solves_a_system_whose_curvatures_span_raw_data_scales():
    """Curvatures from 1e10 (a column in the units of an income) to 1e-3 (a rare indicator): a pseudo-inverse cut at
    1e-12 of the largest eigenvalue drops the small directions and misses the minimum; the Jacobi-scaled solve is the
    exact solution (checked against the direct solve of the well-posed system), and a singular H keeps its
    minimum-norm solution."""
    rng = np.random.default_rng(0)
    d = 10.0 ** np.array([5.0, 2.0, 0.0, -1.0, -1.5])          # square roots of the curvatures
    Q = np.linalg.qr(rng.normal(size=(5, 5)))[0]
    C = Q @ np.diag([1.0, 0.8, 0.5, 0.3, 0.2]) @ Q.T             # a well-conditioned correlation-like core
    H = d[:, None] * C * d[None, :]
    b = rng.normal(size=5) * d
    theta = ball_qp_step(H, b, None)
    np.testing.assert_allclose(theta, np.linalg.solve(C, b / d) / d, rtol=1e-8)
    assert np.linalg.norm(H @ theta - b) <= 1e-9 * np.linalg.norm(b)
    # an exactly singular H (two equal columns): the minimum-norm solution, as before
    A = rng.normal(size=(8, 3))
    A = np.column_stack([A, A[:, 0]])
    H, b = A.T @ A, A.T @ rng.normal(size=8)
    np.testing.assert_allclose(ball_qp_step(H, b, None), np.linalg.pinv(H) @ b, rtol=1e-7, atol=1e-10)


def test_projected_newton_returns_the_iterate_of_its_smallest_gap():
    """Gradients with errors of 1e-4 (as rounding gives on raw units, where whole steps along the sphere raised the gap
    again: 6.9e-9, then 9.5e-6, 3.2e-5, 1.3e-4 on 4,000 raw Adult rows at radius 50): the answer is the iterate of the
    smallest Frank-Wolfe gap seen, not the last one."""
    rng = np.random.default_rng(3)
    H, b = np.diag([1.0, 2.0, 3.0]), np.array([4.0, -2.0, 1.0])
    gaps = []

    def fun(theta, value_only=False):
        value = 0.5 * float(theta @ H @ theta) - float(b @ theta)
        if value_only:
            return value
        grad = H @ theta - b + 1e-4 * rng.standard_normal(3)
        gaps.append(frank_wolfe_gap(theta, grad, 1.0))
        return value, grad, H
    theta, value, gap = minimize_on_ball(fun, np.zeros(3), 1.0, tol=1e-12, max_iter=30, strict=False)
    assert len(gaps) >= 3 and gap == min(gaps) < gaps[-1]

