"""The compiled leaf evaluators of the generic lowering against the tree walk they replace.

Each compiled per-sample expression is the tree's formula term by term (the same loss kernels, the same data
vectors), so the two agree to rounding (relative 1e-12) on any rows: values, and gradients of any weighted sum.
The oracle built on them gives the same estimates on the same minibatches (so the estimates' exactness and
unbiasedness, pinned in tests/test_estimates.py, carry over), whether a step's snapshot side is computed alone or
for a block of steps, and the method runs the same iterates.
"""
import numpy as np
import pytest
from scipy.special import log_softmax, softmax

import fairmodel as fm
from fairmodel import expressions as E
from fairmodel.families.lagrangian import LagrangianOracle, PreparedStep
from fairmodel.families.leaf_kernels import compile_leaves
from fairmodel.families.piecewise import saddle_form
from fairmodel.stochastic.primal_dual import Simplices, primal_dual

RTOL = 1e-12     # the same formulas evaluated in another order: rounding only


def _every_leaf(intercept: bool, weighted: bool, seed: int = 0):
    """A declaration with every kind of compiled sample leaf: each loss kernel of a linear score (logistic,
    squared, Huber, squared hinge, hinge), the score itself, scalar multiples and sums of per-sample expressions
    with a constant, a product with a data vector (the covariance of Zafar et al. 2017), over all rows, a mask,
    groups, groups within a mask and a sum over the rows; with ``weighted`` the losses carry sample weights. A norm
    (an exact leaf) makes the oracle combine both kinds."""
    rng = np.random.default_rng(seed)
    n = 150
    X = rng.normal(size=(n, 3))
    y = np.where(rng.random(n) < 0.45, 1.0, -1.0)
    groups = rng.integers(0, 3, size=n)
    data = fm.Dataset(X, y, groups=groups)
    w = fm.Weights(3, radius=2.0, intercept=intercept)
    s = data.score(w)
    kw = {"sample_weight": rng.exponential(size=n) + 0.1} if weighted else {}
    log = fm.logistic_loss(s, data.y, **kw)
    z = X[:, 0]
    m = fm.group_mean(s, data.groups, where=data.y > 0)
    objective = (fm.max(fm.group_mean(log, data.groups)) + 0.5 * fm.mean(fm.squared_loss(s, data.y, **kw),
                                                                          where=data.y > 0)
                 + fm.sum(fm.huber_loss(s, data.y, delta=0.5, **kw)) * (1.0 / n)
                 + fm.mean(fm.squared_hinge_loss(s, data.y, **kw) + 0.5 * fm.hinge_loss(s, data.y, **kw) + 2.0)
                 + 0.05 * fm.norm(w))
    constraints = [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.05, fm.max(m) - fm.min(m) <= 0.1,
                   fm.mean(0.3 * s - 0.1) <= 1.0]
    prob = fm.Problem(fm.Minimize(objective), constraints)
    return prob, w, data, rng


def _oracles(prob, w, **kw):
    form = saddle_form(prob.canonical, w)
    return {mode: LagrangianOracle(form, w, 3.0, compiled=mode == "compiled", **kw) for mode in ("tree", "compiled")}


def _point(oracle, w, rng):
    theta = 0.9 * w.project(rng.normal(size=w.shape))
    return theta, [rng.dirichlet(np.ones(m)) for m in oracle.blocks]


@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_compiled_expression_equals_the_tree_walk(intercept, weighted):
    """Value and gradient of every distinct per-sample expression, compiled against ``expr.numeric`` and
    ``expr.backprop`` on all rows and on random rows (with repeats), at random weights and upstream vectors."""
    prob, w, data, rng = _every_leaf(intercept, weighted)
    oracle = _oracles(prob, w)["compiled"]
    kernels = oracle.kernels
    assert kernels is not None
    exprs = [e for e, _ in oracle.by_expr.values()]
    kinds = {type(node).__name__ for e in exprs for node in e.nodes()}
    # the test covers every node type the compiler accepts (a sum with a constant, a data vector, each kernel)
    assert {"LogisticLoss", "SquaredLoss", "HuberLoss", "SquaredHingeLoss", "HingeLoss", "LinearScore", "Add",
            "ScalarMul", "Multiply", "Constant"} <= kinds
    assert ("Multiply" in kinds) and len(exprs) >= 6
    for _ in range(3):
        theta = w.project(rng.normal(size=w.shape))
        for rows in (None, rng.integers(0, data.n_samples, size=40)):
            X = None if rows is None else kernels.gather(rows)
            z = kernels.scores(theta, X)
            for expr, form in zip(exprs, kernels.forms):
                env = E.Env({w: theta}, rows)
                value, slope = form.value_and_slope(z, rows)
                np.testing.assert_allclose(value, expr.numeric(env), rtol=RTOL, atol=1e-14)
                upstream = rng.normal(size=z.shape)
                grads = {}
                expr.backprop(env, upstream, grads)
                np.testing.assert_allclose(kernels.pullback(upstream * slope, X), grads[w], rtol=RTOL, atol=1e-13)


@pytest.mark.parametrize("intercept, weighted", [(True, True), (False, False)])
def test_the_compiled_oracle_gives_the_tree_walks_passes_and_estimates(intercept, weighted):
    """Full passes, minibatch passes and variance-reduced estimates of the two oracles agree on the same rows at
    random (w, y) and snapshots; so do the pieces' gradients and the default steps (measured from minibatch passes
    of many minibatches at once)."""
    prob, w, data, rng = _every_leaf(intercept, weighted, seed=1)
    oracles = _oracles(prob, w)
    tree, comp = oracles["tree"], oracles["compiled"]
    for _ in range(3):
        theta, ys = _point(comp, w, rng)
        omega = rng.normal(size=len(comp.form.leaves))
        for rows in (None, comp.draw(rng, 1)[0]):
            weights = None if rows is None else comp.W_batch
            v_tree, g_tree = tree._sample_pass_theta(theta, omega, rows, weights)
            v_comp, g_comp = comp._sample_pass_theta(theta, omega, rows, weights)
            np.testing.assert_allclose(v_comp, v_tree, rtol=RTOL, atol=1e-14)
            np.testing.assert_allclose(g_comp, g_tree, rtol=RTOL, atol=1e-13)
        snap_tree, snap_comp = tree.snapshot(*_point(comp, w, rng)), None
        snap_comp = comp.snapshot(snap_tree.w, snap_tree.ys)
        np.testing.assert_allclose(snap_comp.grad, snap_tree.grad, rtol=RTOL, atol=1e-13)
        for rows in comp.draw(rng, 4):
            g_tree, v_tree = tree.estimate(rows, theta, ys, snap_tree)
            g_comp, v_comp = comp.estimate(rows, theta, ys, snap_comp)
            np.testing.assert_allclose(g_comp, g_tree, rtol=1e-10, atol=1e-12)
            for a, b in zip(v_comp, v_tree):
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for b in range(len(comp.blocks)):          # the pieces' full gradients (one pass for all the leaves)
        np.testing.assert_allclose(comp.piece_gradients(theta, b), tree.piece_gradients(theta, b), rtol=RTOL,
                                   atol=1e-13)
    step_tree, step_comp = tree.default_steps(), comp.default_steps()
    assert step_comp[0] == pytest.approx(step_tree[0], rel=1e-9)
    np.testing.assert_allclose(step_comp[1], step_tree[1], rtol=1e-9)


def test_a_prepared_block_gives_each_steps_estimate(monkeypatch):
    """The snapshot's side computed for a block of steps (in chunks: 3 steps' features at a time here) equals the
    estimate of each step's minibatch alone, across the chunk boundaries."""
    prob, w, data, rng = _every_leaf(True, True, seed=2)
    comp = _oracles(prob, w)["compiled"]
    monkeypatch.setattr(comp, "gather_bytes", 3 * 8 * comp.rows_per_step * 3)
    snap = comp.snapshot(*_point(comp, w, rng))
    batches = comp.draw(rng, 8)
    block = comp.prepare(batches, snap)
    assert len(block) == 8 and block.chunk == 3
    theta, ys = _point(comp, w, rng)
    for k in [0, 1, 5, 2, 7, 3]:           # out of order: chunks are reloaded as needed
        step = block[k]
        assert isinstance(step, PreparedStep) and np.array_equal(step.rows, batches[k])
        g_block, v_block = comp.estimate(step, theta, ys, snap)
        g_alone, v_alone = comp.estimate(batches[k], theta, ys, snap)
        np.testing.assert_allclose(g_block, g_alone, rtol=RTOL, atol=1e-13)
        for a, b in zip(v_block, v_alone):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-13)


def test_the_method_runs_the_same_iterates_with_and_without_compiled_leaves():
    """Two epochs of the method from the same seed: the same output (w and every simplex) up to rounding."""
    prob, w, data, rng = _every_leaf(True, False, seed=3)
    outs = {}
    for mode, oracle in _oracles(prob, w).items():
        outs[mode] = primal_dual(oracle, epochs=2, step_w=0.05, step_y=0.5, seed=0)
    np.testing.assert_allclose(outs["compiled"]["w"], outs["tree"]["w"], rtol=1e-9, atol=1e-11)
    for a, b in zip(outs["compiled"]["ys"], outs["tree"]["ys"]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    assert np.linalg.norm(outs["compiled"]["w"]) > 1e-3          # it moved: the comparison is not vacuous


def _pos_of_samples():
    data = fm.Dataset(np.random.default_rng(0).normal(size=(30, 2)), np.tile([1.0, -1.0], 15))
    w = fm.Weights(2, radius=1.0)
    return w, [fm.mean(fm.pos(1.0 - data.score(w)))]


def _matrix_weights():
    rng = np.random.default_rng(0)
    data = fm.Dataset(rng.normal(size=(30, 2)), rng.integers(0, 3, size=30).astype(float))
    w = fm.Weights(2, radius=1.0, n_outputs=3)
    return w, [fm.mean(fm.softmax_loss(data.score(w), data.y))]


def _two_data_sets():
    rng = np.random.default_rng(0)
    a, b = (fm.Dataset(rng.normal(size=(30, 2)), np.tile([1.0, -1.0], 15)) for _ in range(2))
    w = fm.Weights(2, radius=1.0)
    return w, [fm.mean(fm.logistic_loss(a.score(w), a.y)), fm.mean(fm.logistic_loss(b.score(w), b.y))]


@pytest.mark.parametrize("build", [_pos_of_samples, _matrix_weights, _two_data_sets])
def test_expressions_outside_the_compiled_form_keep_the_tree_walk(build):
    """A per-sample pos, a matrix of weights, two data sets: not compiled (None), and the oracle walks the tree."""
    w, means = build()
    assert compile_leaves([m.expr for m in means], w) is None
    prob = fm.Problem(fm.Minimize(sum(means[1:], means[0])))
    oracle = LagrangianOracle(saddle_form(prob.canonical, w), w, 1.0)
    assert oracle.kernels is None
    snap = oracle.snapshot(np.zeros(w.shape), [np.ones(m) / m for m in oracle.blocks])
    grad, _ = oracle.estimate(oracle.prepare(oracle.draw(np.random.default_rng(0), 1), snap)[0], snap.w, snap.ys,
                              snap)
    np.testing.assert_allclose(grad, snap.grad, rtol=1e-12, atol=1e-14)     # the snapshot identity (tree walk)


@pytest.mark.parametrize("sizes", [[4], [3, 1, 5], [1]])
def test_the_simplices_vector_steps_are_each_simplexs_own(sizes):
    """The method's product of simplices as one vector: per-block log-normalization and weights equal those of
    each block alone (scipy's log_softmax and softmax), with blocks of very different scales (no underflow: each
    block is shifted by its own maximum)."""
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=m) * 10 + 800.0 * (-1) ** j for j, m in enumerate(sizes)]
    simplices = Simplices(sizes)
    joined = simplices.join(parts)
    for got, part in zip(simplices.split(simplices.normalize_log(joined)), parts):
        np.testing.assert_allclose(got, log_softmax(part), rtol=1e-13, atol=1e-12)
    for got, part in zip(simplices.split(simplices.weights(joined)), parts):
        np.testing.assert_allclose(got, softmax(part), rtol=1e-13, atol=1e-300)
        assert got.sum() == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_array_equal(simplices.expand(np.arange(len(sizes))), np.repeat(np.arange(len(sizes)), sizes))
    assert Simplices([]).join([]).size == 0 and Simplices([]).split(np.zeros(0)) == []
