"""The atoms' structural facts: ``is_smooth()`` (differentiable in the variables with a Lipschitz gradient, from each
atom's ``own_smooth`` combined by the tree) and ``score_form()`` (a per-sample term as c_i + sum_t a_ti f_t(z_i, y_i)
of one linear score z, whose jet gives the value and the first two derivatives in z, or None).

The jet is checked against the tree's own values (``expr.numeric``): moving the intercept b by h moves every score
z_i by h, so central differences of the atom's values in b are its derivatives in z, computed without the form.
"""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.exact.partial import loss_rows
from fairmodel.expressions import evaluate

SMOOTH_LOSSES = ("logistic", "squared", "huber", "squared_hinge", "exponential")


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(3)
    n = 40
    X = rng.normal(size=(n, 3))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    data = fm.Dataset(X, y)
    w = fm.Weights(3, radius=3.0, intercept=True)
    return data, w, data.score(w), y, rng


def _loss(name, s, y, **kw):
    return getattr(fm, f"{name}_loss")(s, y, **kw)


@pytest.mark.parametrize("name", SMOOTH_LOSSES)
def test_a_smooth_loss_of_a_linear_score_is_smooth(toy, name):
    data, w, s, y, _ = toy
    loss = _loss(name, s, y)
    assert loss.is_smooth() and fm.mean(loss).is_smooth()
    assert (0.5 * loss + fm.multiply(data.X[:, 0], s) - 1.0).is_smooth()
    assert (fm.mean(loss) + 0.1 * fm.sum_squares(w)).is_smooth()


def test_kinks_are_not_smooth(toy):
    """The hinge, |.|, pos and max of per-sample terms, a norm: not smooth, and neither is any sum containing one."""
    data, w, s, y, _ = toy
    log = fm.logistic_loss(s, y)
    kinked = [fm.hinge_loss(s, y), fm.abs(s), fm.pos(s - 1.0), fm.max(s), fm.min(log), fm.norm(w),
              fm.max(fm.group_mean(log, fm.Groups(np.arange(s.size) % 2)))]
    for e in kinked:
        assert not e.is_smooth(), e
        assert not (e + 2.0 * (fm.mean(log) if e.kind == "scalar" else log)).is_smooth(), e
    # |mean of the score| inside a per-sample expression: a kink in w although the |.| is of a scalar
    assert not (log + fm.abs(fm.mean(s))).is_smooth()
    # without variables a kink is no kink in the variables
    assert fm.abs(fm.Constant(np.linspace(-1, 1, s.size), kind="samples")).is_smooth()


def test_the_jet_of_a_scaled_shifted_sum_is_its_derivatives_in_the_score(toy):
    """e = 0.5 logistic + a (squared) + 0.3 exponential - 0.7 (z - 1.5 c_i) + 2 (a and c data vectors of both
    signs; the constants scaled with the terms): value, d/dz and d^2/dz^2 of the jet against the tree's values
    and their central differences in the intercept, to 1e-6."""
    data, w, s, y, rng = toy
    a = rng.normal(size=s.size)
    c = fm.Constant(rng.normal(size=s.size), kind="samples")
    e = (0.5 * fm.logistic_loss(s, y) + fm.multiply(a, fm.squared_loss(s, y)) + 0.3 * fm.exponential_loss(s, y)
         - 0.7 * (s - 1.5 * c) + 2.0)
    form = e.score_form()
    assert form is not None and form.score is s and form.per_sample.twice_differentiable
    theta = 0.5 * w.project(rng.normal(size=w.shape))

    def values(shift):
        t = theta.copy()
        t[-1] += shift
        return np.asarray(evaluate(e, {w: t}))
    z = np.asarray(evaluate(s, {w: theta}))
    value, slope, curvature = form.per_sample.jet(z)
    np.testing.assert_allclose(value, values(0.0), rtol=1e-12, atol=1e-12)
    h1, h2 = 1e-5, 1e-3
    np.testing.assert_allclose(slope, (values(h1) - values(-h1)) / (2 * h1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(curvature, (values(h2) - 2 * values(0.0) + values(-h2)) / h2 ** 2, rtol=1e-6,
                               atol=1e-6)
    v2, s2 = form.per_sample.value_and_slope(z)
    np.testing.assert_allclose(v2, value, rtol=1e-12)
    np.testing.assert_allclose(s2, slope, rtol=1e-12)
    # the curvature is the kernels' alone: zero for an affine term
    np.testing.assert_array_equal((fm.multiply(a, s) - 1.0).score_form().per_sample.jet(z)[2], 0.0)


def test_terms_not_of_the_form_have_none(toy):
    data, w, s, y, _ = toy
    other = fm.Dataset(data.X + 1.0, y).score(w)
    matrix = fm.Dataset(data.X, np.arange(s.size) % 3).score(fm.Weights(3, n_outputs=3))
    log = fm.logistic_loss(s, y)
    for e in [fm.pos(fm.hinge_loss(s, y) - 1.0), fm.logistic_loss(2.0 * s, y), fm.abs(s), log + other,
              fm.softmax_loss(matrix, np.arange(s.size) % 3), fm.mean(log), log + fm.abs(fm.mean(s)), matrix]:
        assert e.score_form() is None, e
    # a constant has a form without a score (what the consumers refuse); the hinge has one with no curvature
    assert fm.Constant(np.ones(s.size), kind="samples").score_form().score is None
    hinge = (fm.hinge_loss(s, y) + s).score_form()
    assert hinge.score is s and not hinge.per_sample.twice_differentiable


def test_the_dc_newton_terms_read_the_form(toy):
    """The Newton path of partial fairness models a mean of non-negatively weighted logistic losses of a linear
    score, however the weights are written (sample weights, a data vector, a multiple): the row weights it uses
    give the tree's value of the mean; a squared loss, a negative weight or a constant offset is lowered exactly."""
    data, w, s, y, rng = toy
    u = rng.exponential(size=s.size)
    theta = w.project(rng.normal(size=w.shape))
    z = np.asarray(evaluate(s, {w: theta}))
    for e in [fm.logistic_loss(s, y), fm.logistic_loss(s, y, sample_weight=u),
              fm.multiply(u, 2.0 * fm.logistic_loss(s, y))]:
        term = fm.mean(e)
        score, loss, rows = loss_rows(term)
        assert score is s
        np.testing.assert_allclose(rows @ loss.kernel.phi(z, loss.y), evaluate(term, {w: theta}), rtol=1e-12)
    for e in [fm.squared_loss(s, y), fm.multiply(u - 1.0, fm.logistic_loss(s, y)), fm.logistic_loss(s, y) + 1.0]:
        assert loss_rows(fm.mean(e)) is None
