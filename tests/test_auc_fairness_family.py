"""The AUC-fairness DSL atoms, recognition, judge, cross-check and baselines (App. E.2), input checks."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.baselines import auc as B
from fairmodel.errors import DataError, ExpressionTypeError, InfeasibleError, ModelError, UnsupportedProblemError
from fairmodel.expressions import value_and_grad


@pytest.fixture(scope="module")
def data():
    return fm.datasets.make_auc_synthetic()


def declare(data, kappa=0.05, kind="intra", **atom):
    w = fm.Weights(data.n_features, radius=3.0)
    s = data.score(w)
    return w, fm.Problem(fm.Minimize(fm.auc_loss(s, data.y, **atom)), [fm.auc_gap(s, data, kind=kind, **atom) <= kappa])


def test_atom_values_and_gradients(data):
    w, prob = declare(data)
    theta = np.array([0.3, -0.2, 0.1, 0.05, 0.02])
    ev = prob.evaluate(w=theta)
    loss, gap = prob.objective.expr, prob.constraints[0].lhs
    val, grads = value_and_grad(loss, {w: theta})
    assert val == pytest.approx(ev.objective, abs=1e-14)
    assert fm.expressions.evaluate(gap, {w: theta}) == pytest.approx(ev.constraints["c0"]["value"], abs=1e-14)
    for atom in (loss, gap):
        v, g = value_and_grad(atom, {w: theta})
        num = [(fm.expressions.evaluate(atom, {w: theta + e}) - fm.expressions.evaluate(atom, {w: theta - e})) / 2e-7
               for e in np.eye(5) * 1e-7]
        np.testing.assert_allclose(g[w], num, rtol=1e-5, atol=1e-8)
    # the surrogate gap approximates the AUC gap (4)-(5): both are small numbers of the same sign here
    assert abs(ev.metrics["c0:intra"]["true_gap"]) < 0.5


def test_invalid_declarations(data):
    w = fm.Weights(5, radius=3.0)
    s = data.score(w)
    with pytest.raises(ModelError, match="kappa must be >= 0"):
        fm.auc_gap(s, data) <= -0.1
    for kw, match in [({"c1": 0}, "c1"), ({"c2": -1}, "c2"), ({"interval": (2, 1)}, "lo > hi"),
                      ({"interval": (0.5, 2)}, "contain 0"), ({"interval": (-1, 2)}, "symmetric"),
                      ({"interval": -3}, "positive"), ({"alpha_quad_coef": "one"}, "alpha_quad_coef")]:
        with pytest.raises(ModelError, match=match):
            fm.auc_loss(s, data.y, **kw)
    with pytest.raises(DataError, match="positive="):
        fm.auc_loss(s, (data.y > 0).astype(float))
    assert fm.auc_loss(s, (data.y > 0).astype(float), positive=1.0).y.tolist() == data.y.tolist()
    y_no_neg = np.where(data.X[:, 0] > -10, 1.0, -1.0)
    with pytest.raises(DataError, match="D- has 0"):
        fm.auc_loss(s, y_no_neg)
    one_group = fm.Dataset(data.X, data.y, np.where(data.y > 0, 1, -1))   # G1' (protected negatives) empty
    with pytest.raises(DataError, match="empty: G1'"):
        fm.auc_gap(one_group.score(w), one_group, kind="intra")
    other = fm.datasets.make_auc_synthetic(seed=1)
    with pytest.raises(ModelError, match="another dataset"):
        fm.auc_gap(s, other)
    with pytest.raises(ExpressionTypeError, match="Dataset"):
        fm.auc_gap(s, data.X)
    w2 = fm.Weights(5, radius=3.0, name="v")    # its own name: two variables named "w" are refused
    # two different scores: not the AUC family's structure, but still a convex program (the generic reduction)
    two = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(data.score(w2), data) <= 0.1])
    assert two.family.name == "convex"
    assert any("same score" in reason for _, reason in two.recognition.declined)
    with pytest.raises(UnsupportedProblemError, match="no family options"):
        fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data) <= 0.1], entropy=1.0)
    with pytest.raises(UnsupportedProblemError, match="auc_gap"):
        fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data) >= 0.1])
    with pytest.raises(InfeasibleError, match="c1 <"):
        fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, c1=1.0) <= 0.2])
    with pytest.warns(UserWarning, match="smaller than the one valid"):
        fm.Problem(fm.Minimize(fm.auc_loss(s, data.y, interval=0.1)), [fm.auc_gap(s, data) <= 0.1])


def test_unconstrained_and_several_constraints(data):
    w = fm.Weights(5, radius=3.0)
    s = data.score(w)
    free = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)))
    ex = free.solve("exact")
    assert ex.constraints == {} and ex.certificate["suboptimality_bound"] < 1e-6
    st = free.solve("stochastic", seed=0, T=1000, max_outer=20)
    assert abs(st.objective - ex.objective) < 1e-2
    two = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)),
                     [fm.auc_gap(s, data, kind="intra") <= 0.05, fm.auc_gap(s, data, kind="group") <= 0.05])
    e2 = two.solve("exact")
    assert e2.objective >= fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)),
                                      [fm.auc_gap(s, data, kind="intra") <= 0.05]).solve("exact").objective - 1e-8
    assert e2.max_violation < 1e-7 and set(e2.constraints) == {"c0", "c1"}
    assert two.family.pairs.n_pairs == 9 and two.family.pairs.n_blocks == 5


def test_result_round_trip_describe_and_predictor(data, tmp_path):
    w, prob = declare(data)
    r = prob.solve("exact")
    text = prob.describe()
    assert "intra" in text and "moment" in text and "sfls" in text and "interval I" in text
    r.save(tmp_path / "run")
    back = fm.load_result(tmp_path / "run")
    assert back.objective == r.objective and back.metrics["c0:intra"]["true_gap"] == r.metrics["c0:intra"]["true_gap"]
    pred = r.predictor()
    np.testing.assert_allclose(pred(data.X), data.X @ r.variables["w"])


@pytest.mark.slow
def test_crosscheck_on_adult_done_when():
    """The cross-check on real data: Adult, 5,000-row subsample, intra-group preset, kappa = 0.05, c1 = 0.5, c2 = 1."""
    adult = fm.datasets.load_adult(target="income", sensitive="sex").subsample(5000, seed=0)
    w = fm.Weights(adult.n_features, radius=10.0)
    s = adult.score(w)
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, adult.y, c1=0.5, c2=1.0)),
                      [fm.auc_gap(s, adult, kind="intra", c1=0.5, c2=1.0) <= 0.05])
    report = fm.crosscheck(prob, seed=0)
    assert report.ok, report.to_markdown()


def test_crosscheck_on_the_reference_problem(data):
    _, prob = declare(data)
    report = fm.crosscheck(prob, seed=0, stochastic_options={"T": 1500})
    assert report.ok, report.to_markdown()
    assert {c.name for c in report.checks} >= {"stochastic constraint violation",
                                                "level-set bracket width at the exact optimum"}


def test_rescoring_grid_baseline(data):
    h = data.X @ np.array([1.0, -0.5, 0.3, 0.0, 0.2])
    g = np.asarray(data.groups.names)[data.groups.codes]
    grid = B.rescoring_grid(h, data.y, g, "group", omega1=np.arange(0, 2.01, 0.25), omega2=np.arange(-2, 2.01, 0.5))
    assert grid["auc"].shape == (9, 9)
    choice = B.choose_rescoring(grid, 0.02)
    assert choice["feasible"] and choice["gap"] <= 0.02
    new = B.rescore(h, g, choice["omega1"], choice["omega2"])
    assert fm.metrics.auc_fairness(new, data.y, g, "group") == pytest.approx(choice["gap"], abs=1e-15)
    assert choice["auc"] == max(grid["auc"][grid["gap"] <= 0.02])
    np.testing.assert_array_equal(B.rescore(h, g, 1.0, 0.0), h)


def test_sgd_baselines_reduce_their_targets(data):
    w = fm.Weights(5, radius=3.0)
    s = data.score(w)
    g = np.asarray(data.groups.names)[data.groups.codes]
    corr = lambda th: abs(np.corrcoef(data.X @ th, g)[0, 1])        # noqa: E731
    free = B.correlation_penalty(s, data, 0.0, steps=600, seed=0)
    pen = B.correlation_penalty(s, data, 5.0, steps=600, seed=0)
    assert corr(pen["theta"]) < 0.5 * corr(free["theta"])
    assert len(pen["iterates"]) == 7
    pl = B.proxy_lagrangian(s, data, "group", 0.02, steps=600, seed=0)
    assert np.all(pl["state"]["lambda"][-1] >= 0) and np.all(np.isfinite(pl["theta"]))
    with pytest.raises(fm.OptionError, match="lam"):
        B.correlation_penalty(s, data, -1.0)


def test_kappa_as_a_parameter_and_sweeps(data):
    w = fm.Weights(5, radius=3.0)
    s = data.score(w)
    kappa = fm.parameter(0.05, "kappa")
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra") <= kappa])
    frontier = prob.sweep("kappa", [0.02, 0.05, 0.2])
    objectives = frontier.column("objective")
    assert np.all(np.diff(objectives) <= 1e-8)                         # f*(kappa) non-increasing
    assert objectives[1] == pytest.approx(0.32675512, abs=1e-7)         # the value at kappa = 0.05
    assert frontier.column("constraint:c0") == pytest.approx([0.02, 0.05, 0.2], abs=1e-6)
    fast = prob.sweep("kappa", [0.05, 0.2], backend="stochastic", seed=0, T=300, max_outer=4)
    assert all(r is not None and r.max_violation == 0.0 for r in fast.results)
    kappa.value = 0.0                                                    # 2 c1 c2^2 = 1 + kappa: refused at solve
    with pytest.raises(InfeasibleError):
        prob.solve("exact")


def test_bracket_upper_end_accepts_rounding_only(data):
    """f0(w) is the bracket's upper end for a feasible w, and for a violation at a conic solver's rounding
    (1e-9); a real violation leaves the upper end undefined, while f0(w) - lower still bounds f0(w) - f* (the
    violation has its own check, so an infeasible point is not left without a certificate)."""
    w = fm.Weights(5, radius=3.0)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data) <= 0.1])
    ex = prob.solve("exact")
    family, f0 = prob.family, ex.objective
    for violation in (0.0, 6e-12, 1e-9):
        bracket = family._bracket(f0, violation, None)
        assert bracket["f_star_upper"] == f0 and np.isfinite(bracket["suboptimality_bound"])
    for violation in (2e-9, 1e-6):
        bracket = family._bracket(f0, violation, None)
        assert np.isnan(bracket["f_star_upper"])
        assert bracket["suboptimality_bound"] == pytest.approx(f0 - bracket["f_star_lower"])
