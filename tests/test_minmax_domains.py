"""Projections onto the domains of saddle problems (the truncated cone of Theorem 5.3, balls, boxes and
simplices)."""
import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.errors import ModelError
from fairmodel.exact.domains import domain_constraints


def _domains():
    rng = np.random.default_rng(0)
    return [
        fm.Ball(4, 1.5),
        fm.Ball(3, 2.0, center=[1.0, -1.0, 0.5]),
        fm.Box(-1.0, [1.0, 2.0, 0.5], size=3),
        fm.Simplex(5),
        fm.TruncatedCone(4, 0.5, 3.0),
        fm.TruncatedCone(3, 1.0, 5.0, radius=2.0),
        fm.Product(fm.Ball(2, 1.0), fm.Simplex(3), fm.Box(0.0, 1.0, size=2)),
        fm.Ball(2, 1.0) * fm.TruncatedCone(2, 2.0, float(rng.uniform(1, 2))),
    ]


@pytest.mark.parametrize("dom", _domains(), ids=repr)
def test_projection_is_a_projection(dom):
    """Feasible, idempotent, firmly nonexpansive (Prop. A.1) and the variational inequality."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        a, b = rng.normal(0, 3, (2, dom.dim))
        pa, pb = dom.project(a), dom.project(b)
        assert dom.contains(pa, tol=1e-9)
        np.testing.assert_allclose(dom.project(pa), pa, atol=1e-12)
        # firm nonexpansiveness ||Pa - Pb||^2 <= <Pa - Pb, a - b> (implies nonexpansiveness)
        assert np.sum((pa - pb) ** 2) <= np.dot(pa - pb, a - b) + 1e-9
        # <a - Pa, w - Pa> <= 0 for feasible w
        w = dom.project(rng.normal(0, 3, dom.dim))
        assert np.dot(a - pa, w - pa) <= 1e-9


@pytest.mark.parametrize("dom", _domains(), ids=repr)
def test_projection_matches_cvxpy(dom):
    """The closed-form projection equals the CVXPY projection (an independent formulation), to 1e-6."""
    rng = np.random.default_rng(2)
    for _ in range(5):
        a = rng.normal(0, 3, dom.dim)
        z = cp.Variable(dom.dim)
        cp.Problem(cp.Minimize(cp.sum_squares(z - a)), domain_constraints(dom, z)).solve(solver="CLARABEL")
        np.testing.assert_allclose(dom.project(a), z.value, atol=1e-6)


def test_cone_keeps_direction_and_handles_the_apex():
    cone = fm.TruncatedCone(3, 0.5, 2.0)
    a = np.array([3.0, 4.0, 0.0, -20.0])         # in the polar cone (alpha <= -||theta||/slope): the origin
    np.testing.assert_allclose(cone.project(a), 0.0, atol=1e-12)
    b = np.array([3.0, 4.0, 0.0, 100.0])         # far above: alpha -> alpha_max, ||theta|| -> slope alpha_max
    pb = cone.project(b)
    np.testing.assert_allclose(pb, [0.6, 0.8, 0.0, 2.0], atol=1e-12)
    np.testing.assert_allclose(cone.project(np.array([0.0, 0.0, 0.0, 1.0])), [0, 0, 0, 1.0])


def test_diameters():
    assert fm.Ball(3, 2.0).diameter == 4.0
    assert fm.Simplex(3).diameter == pytest.approx(np.sqrt(2))
    assert fm.Box(0.0, 1.0, size=4).diameter == pytest.approx(2.0)
    assert fm.TruncatedCone(2, 1.0, 1.0).diameter == pytest.approx(np.sqrt(2))


@pytest.mark.parametrize("make, match", [
    (lambda: fm.Ball(3, 0.0), "radius must be positive"),
    (lambda: fm.Ball(0, 1.0), "positive integer"),
    (lambda: fm.Box(1.0, 0.0, size=2), "lo > hi"),
    (lambda: fm.Box(-1, 1), "size="),
    (lambda: fm.Simplex(0), "positive integer"),
    (lambda: fm.TruncatedCone(3, 0.5, 0.0), "alpha_max must be positive"),
    (lambda: fm.TruncatedCone(3, 0.5, np.inf), "alpha_max must be positive and finite"),
    (lambda: fm.Product(fm.Ball(2, 1.0), "box"), "fairmodel domains"),
])
def test_invalid_domains(make, match):
    with pytest.raises(ModelError, match=match):
        make()


def test_unbounded_domains_say_which_bound_to_add():
    box = fm.Box([-1.0, -np.inf], 1.0, size=2)
    with pytest.raises(ModelError, match="unbounded in coordinate 1.*finite lo and hi"):
        box.require_bounded("y_domain")
    np.testing.assert_allclose(box.project(np.array([-5.0, -5.0])), [-1.0, -5.0])
    fm.Product(fm.Ball(2, 1.0), fm.Simplex(2)).require_bounded("x_domain")  # compact: no error


def test_the_cone_in_scaled_coordinates_projects_exactly():
    """The elliptic cone {||s phi|| <= slope alpha, alpha <= alpha_max [, ||s phi|| <= radius]} (a truncated cone in the
    coordinates phi = theta / s): the projection is feasible, no farther from the point than Clarabel's projection
    (an independent formulation; Clarabel's point itself is accurate to about 1e-5 when s spans e^-3..e^3), the
    variational inequality holds, and with s = 1 it is the truncated cone's own (closed-form) projection."""
    rng = np.random.default_rng(3)
    for trial in range(60):
        p = int(rng.integers(1, 7))
        cone = fm.TruncatedCone(p, float(rng.uniform(0.3, 3)), float(rng.uniform(0.5, 5)),
                                None if trial % 2 else float(rng.uniform(0.1, 3)))
        scale = np.exp(rng.uniform(-3, 3, p))
        dom = cone.in_coordinates(scale)
        a = rng.standard_normal(p + 1) * np.exp(rng.uniform(-2, 3))
        pa = dom.project(a)
        size = np.linalg.norm(scale * pa[:-1])
        assert size <= cone.slope * pa[-1] + 1e-12 and pa[-1] <= cone.alpha_max + 1e-12
        assert cone.radius is None or size <= cone.radius * (1 + 1e-12)
        z = cp.Variable(p + 1)
        cp.Problem(cp.Minimize(cp.sum_squares(z - a)), domain_constraints(dom, z)).solve(solver="CLARABEL")
        assert np.linalg.norm(pa - a) <= np.linalg.norm(z.value - a) + 1e-9 * max(1.0, np.linalg.norm(a))
        w = dom.project(rng.standard_normal(p + 1) * 3)
        assert np.dot(a - pa, w - pa) <= 1e-9 * max(1.0, np.dot(a, a))
        np.testing.assert_allclose(cone.in_coordinates(np.ones(p)).project(a), cone.project(a), atol=1e-12)
    polar = fm.TruncatedCone(2, 1.0, 2.0).in_coordinates(np.array([2.0, 0.5]))
    np.testing.assert_allclose(polar.project(np.array([1.0, 0.1, -3.0])), 0.0)     # ||a / s|| <= -b: the apex


def test_the_scaled_cone_refuses_bad_scales_and_diverged_points():
    cone = fm.TruncatedCone(2, 1.0, 2.0)
    for scale in ([1.0, 0.0], [1.0, -1.0], [1.0, np.inf], [1.0]):
        with pytest.raises(ModelError, match="positive finite"):
            cone.in_coordinates(np.array(scale))
    with pytest.raises(ArithmeticError, match="diverged"):
        cone.in_coordinates(np.ones(2)).project(np.array([np.inf, 0.0, 1.0]))
