"""DSL nodes: NumPy values against direct formulas, gradients against finite differences, CVXPY lowering
against the NumPy value, curvature rules and error messages."""
import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairmodel as fm
from fairmodel.exact.lower import LoweringContext, lower
from fairmodel.expressions import evaluate, value_and_grad


def _data(seed=0, n=30, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return fm.Dataset(X, y, groups=rng.integers(0, 3, size=n) if n >= 3 else None), rng


def _expressions(data, w):
    s = data.score(w)
    yreal = data.X[:, 0] * 0.5
    return {
        "logistic": fm.mean(fm.logistic_loss(s, data.y)),
        "hinge": fm.mean(fm.hinge_loss(s, data.y)),
        "squared": fm.mean(fm.squared_loss(s, yreal)),
        "gdro": fm.max(fm.group_mean(fm.logistic_loss(s, data.y), data.groups)),
        "reg": fm.mean(fm.logistic_loss(s, data.y)) + 0.3 * fm.sum_squares(w) + 0.1 * fm.norm(w, 1),
        "shift": fm.max(fm.group_mean(fm.squared_loss(s, yreal), data.groups) - np.array([0.1, 0.2, 0.3])),
    }


def test_values_match_direct_formulas():
    data, rng = _data()
    w = fm.Weights(4, intercept=True)
    theta = rng.normal(size=5)
    z = data.X @ theta[:-1] + theta[-1]
    assert evaluate(fm.mean(fm.logistic_loss(data.score(w), data.y)), {w: theta}) == pytest.approx(
        np.mean(np.log1p(np.exp(-data.y * z))))
    r = evaluate(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups), {w: theta})
    codes = data.groups.codes
    assert np.allclose(r, [np.mean(np.maximum(0, 1 - data.y * z)[codes == g]) for g in range(3)])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10 ** 6), st.sampled_from(["logistic", "squared", "gdro", "reg", "shift"]),
       st.booleans())
def test_gradients_match_finite_differences(seed, which, intercept):
    data, rng = _data(seed)
    w = fm.Weights(4, intercept=intercept)
    expr = _expressions(data, w)[which]
    theta = rng.normal(size=w.shape)
    value, grads = value_and_grad(expr, {w: theta})
    eps = 1e-6
    fd = np.array([(evaluate(expr, {w: theta + eps * e}) - evaluate(expr, {w: theta - eps * e})) / (2 * eps)
                   for e in np.eye(w.size)])
    # max (gdro/shift) and the 1-norm are not differentiable at ties/zeros: these have probability 0 here
    assert np.allclose(grads[w], fd, atol=1e-5)


def test_softmax_value_and_gradient():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 3))
    y = rng.integers(0, 4, size=20)
    data = fm.Dataset(X, y)
    W = fm.Weights(3, n_outputs=4, intercept=True)
    expr = fm.mean(fm.softmax_loss(data.score(W), data.y))
    theta = rng.normal(size=W.shape)
    value, grads = value_and_grad(expr, {W: theta})
    Z = X @ theta[:-1] + theta[-1]
    direct = np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[np.arange(20), y])
    assert value == pytest.approx(direct)
    eps = 1e-6
    fd = np.zeros_like(theta)
    for idx in np.ndindex(theta.shape):
        e = np.zeros_like(theta)
        e[idx] = eps
        fd[idx] = (evaluate(expr, {W: theta + e}) - evaluate(expr, {W: theta - e})) / (2 * eps)
    assert np.allclose(grads[W], fd, atol=1e-6)


@pytest.mark.parametrize("which", ["logistic", "hinge", "squared", "gdro", "reg", "shift"])
def test_cvxpy_lowering_equals_numpy_value(which):
    data, rng = _data(3)
    w = fm.Weights(4, intercept=True)
    expr = _expressions(data, w)[which]
    ctx = LoweringContext()
    lowered = lower(expr, ctx)
    theta = rng.normal(size=w.shape)
    ctx.variables[w].value = theta
    assert float(lowered.value) == pytest.approx(evaluate(expr, {w: theta}), rel=1e-9)


def test_minibatch_rows_give_unbiased_means():
    data, rng = _data(4, n=12)
    w = fm.Weights(4)
    expr = fm.mean(fm.squared_loss(data.score(w), data.X[:, 1]))
    theta = rng.normal(size=4)
    full = evaluate(expr, {w: theta})
    parts = [evaluate(expr, {w: theta}, rows=np.array([i])) for i in range(12)]
    assert np.mean(parts) == pytest.approx(full)


def test_curvature_rules():
    data, _ = _data()
    w = fm.Weights(4, radius=1.0)
    loss = fm.mean(fm.logistic_loss(data.score(w), data.y))
    assert loss.curvature == "convex"
    assert (-loss).curvature == "concave"
    assert (loss - loss).curvature == "unknown"
    assert data.score(w).curvature == "affine"
    assert fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)).curvature == "convex"


def test_dsl_errors_are_clear():
    data, _ = _data()
    w = fm.Weights(4)
    with pytest.raises(fm.ModelError, match="radius must be positive"):
        fm.Weights(4, radius=0)
    with pytest.raises(fm.ModelError, match="radius must be positive"):
        fm.Weights(4, radius=float("inf"))
    with pytest.raises(fm.ModelError, match="has 3 features but the data has 4"):
        data.score(fm.Weights(3))
    with pytest.raises(fm.DataError, match="binary labels"):
        fm.logistic_loss(data.score(w), np.arange(30.0))
    with pytest.raises(fm.DataError, match="integer class labels"):
        fm.softmax_loss(data.score(fm.Weights(4, n_outputs=3)), np.full(30, 3.0))
    with pytest.raises(fm.ExpressionTypeError, match="only products with a constant number"):
        fm.mean(fm.logistic_loss(data.score(w), data.y)) * fm.mean(fm.logistic_loss(data.score(w), data.y))
    with pytest.raises(fm.ExpressionTypeError, match="objective must be a scalar"):
        fm.Minimize(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))
    with pytest.raises(fm.DataError, match="have no samples"):
        fm.group_mean(fm.logistic_loss(data.score(w), data.y), fm.Groups(np.zeros(30, int), names=["a", "b"]))
    with pytest.raises(fm.ExpressionTypeError, match="truth value"):
        bool(fm.mean(fm.logistic_loss(data.score(w), data.y)) <= 1)


def test_unsupported_problem_names_the_expression_and_the_rules():
    data, _ = _data()
    w = fm.Weights(4, radius=1.0)
    concave = -fm.mean(fm.logistic_loss(data.score(w), data.y))
    with pytest.raises(fm.UnsupportedProblemError) as info:
        fm.Problem(fm.Minimize(concave))
    msg = str(info.value)
    assert "not convex" in msg and "group DRO" in msg and "logistic" in msg


def test_generic_convex_family_solves_regularized_erm():
    """The fallback family lowers a regularized ERM with a constraint to one CVXPY program."""
    data, _ = _data(5, n=60)
    w = fm.Weights(4)
    loss = fm.mean(fm.logistic_loss(data.score(w), data.y))
    prob = fm.Problem(fm.Minimize(loss + 0.1 * fm.sum_squares(w)), [fm.norm(w, 1) <= 0.5])
    res = prob.solve()
    theta = cp.Variable(4)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.logistic(cp.multiply(-data.y, data.X @ theta))) / 60
                                 + 0.1 * cp.sum_squares(theta)), [cp.norm(theta, 1) <= 0.5])
    ref.solve(solver="ECOS")
    assert res.family == "convex" and res.objective == pytest.approx(ref.value, abs=1e-6)
    assert res.constraints["c0"]["value"] <= 0.5 + 1e-7
    # the generic stochastic lowering: the 1-norm is an exact (non-smooth) term under an exact penalty
    fast = prob.solve(backend="stochastic", seed=0)
    assert fast.method == "primal_dual" and fast.objective == pytest.approx(ref.value, abs=1e-2)
    assert fast.max_violation <= 1e-3


def test_every_loss_kernel_derivative_matches_finite_differences():
    """phi' and phi'' of every registered pointwise loss against central differences of phi and phi', at scores away
    from the kinks (hinge: 1 - yz = 0; Huber: |z - y| = delta), for both labels; the smoothness and Lipschitz bounds
    hold on a grid of scores."""
    from fairmodel.oracles.losses import KERNELS
    rng = np.random.default_rng(0)
    h = 1e-6
    for name, K in KERNELS.items():
        if name == "softmax":
            continue                                   # a matrix score: tests/test_expressions.py above
        y = np.where(rng.random(200) < 0.5, 1.0, -1.0) if K.binary else rng.normal(size=200)
        z = rng.normal(scale=2.0, size=200)
        far = np.abs(1 - y * z) > 1e-3 if name in ("hinge", "squared_hinge") else np.ones(200, dtype=bool)
        if name == "huber":
            far = np.abs(np.abs(z - y) - K.delta) > 1e-3
        z, y = z[far], y[far]
        fd = (K.phi(z + h, y) - K.phi(z - h, y)) / (2 * h)
        np.testing.assert_allclose(K.dphi(z, y), fd, rtol=1e-6, atol=1e-6, err_msg=name)
        if K.d2phi is not None:
            fd2 = (K.dphi(z + h, y) - K.dphi(z - h, y)) / (2 * h)
            np.testing.assert_allclose(K.d2phi(z, y), fd2, rtol=1e-5, atol=1e-5, err_msg=name)
            assert np.all(K.d2phi(z, y) <= K.smoothness(np.abs(z).max(), np.abs(y).max()) * (1 + 1e-12)), name
        assert np.all(np.abs(K.dphi(z, y)) <= K.dphi_bound(np.abs(z).max(), np.abs(y).max()) + 1e-12), name
