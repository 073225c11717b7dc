"""The Huber, squared-hinge and exponential losses, added in three files each (kernel, atom, CVXPY form): their values against
the formulas, gradients against finite differences, the CVXPY form against NumPy, and every path (exact and
stochastic group DRO, a composition, the judge, problem files) working with them."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.exact.lower import LoweringContext, lower
from fairmodel.frontends.problemfile import load


def _data(n=400, seed=0, regression=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    g = rng.integers(0, 2, n)
    if regression:
        y = X @ np.array([1.0, -0.5, 0.0, 0.3]) + 0.5 * g + rng.standard_t(2, n)      # heavy-tailed noise
    else:
        y = np.where(X[:, 0] - X[:, 1] + 0.4 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return fm.Dataset(X, y, groups=g)


@pytest.mark.parametrize("name", ["huber", "squared_hinge", "exponential"])
def test_values_gradients_and_cvxpy_form(name):
    data = _data(regression=name == "huber")
    w = fm.Weights(4, intercept=True)
    make = {"huber": lambda s, y: fm.huber_loss(s, y, delta=0.7), "squared_hinge": fm.squared_hinge_loss,
            "exponential": fm.exponential_loss}[name]
    loss = make(data.score(w), data.y)
    theta = np.random.default_rng(1).standard_normal(5)
    z = data.X @ theta[:-1] + theta[-1]
    if name == "huber":
        r = np.abs(z - data.y)
        expected = np.where(r <= 0.7, r ** 2, 1.4 * r - 0.49)
    elif name == "exponential":
        expected = np.exp(-data.y * z)
    else:
        expected = np.maximum(0.0, 1.0 - data.y * z) ** 2
    value, grads = fm.expressions.value_and_grad(fm.mean(loss), {w: theta})
    assert value == pytest.approx(expected.mean(), rel=1e-12)
    eps, numeric = 1e-6, np.zeros(5)
    for j in range(5):
        step = np.eye(5)[j] * eps
        numeric[j] = (fm.expressions.evaluate(fm.mean(loss), {w: theta + step})
                      - fm.expressions.evaluate(fm.mean(loss), {w: theta - step})) / (2 * eps)
    np.testing.assert_allclose(grads[w], numeric, rtol=1e-5, atol=1e-7)
    ctx = LoweringContext()
    expr = lower(fm.mean(loss), ctx)
    ctx.variables[w].value = theta
    assert float(expr.value) == pytest.approx(expected.mean(), rel=1e-9)
    assert loss.curvature == "convex" and loss.sign == "nonneg"


@pytest.mark.parametrize("name", ["huber", "squared_hinge", "exponential"])
def test_group_dro_exact_methods_agree_and_the_stochastic_path_is_judged_ok(name):
    data = _data(regression=name == "huber")
    w = fm.Weights(4, radius=3.0)
    loss = fm.expressions.atoms.losses.LOSSES[name](data.score(w), data.y)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(loss, data.groups))))
    dual, epigraph = prob.solve(method="dual"), prob.solve(method="epigraph")    # Newton (d2phi) vs CVXPY
    assert dual.ok and epigraph.ok
    assert dual.objective == pytest.approx(epigraph.objective, rel=1e-6, abs=1e-8)
    report = fm.crosscheck(prob, seed=0)
    assert report.ok, report.to_markdown()


def test_a_composition_and_a_problem_file_with_the_new_losses(tmp_path):
    data = _data(regression=True)
    w = fm.Weights(4, radius=5.0)
    risks = fm.group_mean(fm.huber_loss(data.score(w), data.y), data.groups)
    bounded = fm.Problem(fm.Minimize(fm.mean(fm.huber_loss(data.score(w), data.y))),
                         [fm.max(risks) <= 1.05 * max(risks.numeric(fm.expressions.Env({w: np.zeros(4)})))])
    assert bounded.family.name == "convex"
    exact = bounded.solve()
    assert exact.ok
    text = """
[data]
name = "adult"
sensitive = "sex"
subsample = 600
[model]
radius = 2.0
[problem]
family = "gdro"
loss = "squared_hinge"
"""
    path = tmp_path / "p.toml"
    path.write_text(text)
    prob = load(path)[0]
    assert "squared_hinge" in str(prob)
    assert prob.solve().ok
