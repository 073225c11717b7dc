"""DSL atoms and the DC program of models (13) / (17): identities, start values, majorization, subgradients,
CVXPY lowering, and the declaration errors."""
import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fairmodel as fm
from fairmodel.errors import DataError, ExpressionTypeError, ModelError, UnsupportedProblemError
from fairmodel.exact.partial import BLOCK_LOWERING, Subproblem
from fairmodel.oracles.dc_bands import min_identity, ramp, ramp_minus, ramp_plus


@pytest.fixture(scope="module")
def law():
    data = fm.with_group_interactions(fm.datasets.load_lawschool().subsample(400, seed=0))
    w = fm.Weights(data.n_features, intercept=True)
    return data, w, data.score(w)


def _problem(law, *constraints, **kw):
    data, w, s = law
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)), list(constraints))


def _all_constraints(law, kappa=0.1, band=(0.7, 1.0)):
    data, w, s = law
    return [fm.partial_dp(s, data.groups, band=band) <= kappa,
            fm.weak_partial_dp(s, data.groups, band=band, decomposition="paper") <= kappa,
            fm.weak_partial_dp(s, data.groups, band=band, decomposition="minimal", threshold=0.3) <= kappa]


@settings(max_examples=200, deadline=None)
@given(st.floats(-5, 5), st.floats(-2, 2), st.floats(-2, 2), st.floats(-1, 2))
def test_ramp_split_and_identity_51(x, s_plus, s_minus, c):
    assert ramp_plus(x) - ramp_minus(x) == pytest.approx(float(ramp(x)), abs=1e-15)
    assert float(ramp(x)) == pytest.approx(min(max(x + 0.5, 0.0), 1.0), abs=1e-15)
    # (51) with the corrected average S+ (the paper prints the sum): min{S, c} for S = S+ - S-
    assert min_identity(s_plus, s_minus, c) == pytest.approx(min(s_plus - s_minus, c), abs=1e-12)


def test_dc_split_equals_the_original_constraints(law):
    """f+ - f- equals the original (13)/(17) expression to 1e-12 at random points; paper == minimal split."""
    prog = _problem(law, *_all_constraints(law)).family.program
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.standard_normal(prog.D) * rng.choice([0.1, 1.0, 3.0])
        fp, _ = prog.plus(x)
        fm_, _ = prog.minus(x)
        assert np.max(np.abs(fp - fm_ - prog.values(x))) <= 1e-12
    data, w, s = law
    paper = _problem(law, fm.weak_partial_dp(s, data.groups, band=(0.05, 0.3), decomposition="paper") <= 0.05)
    minimal = _problem(law, fm.weak_partial_dp(s, data.groups, band=(0.05, 0.3), decomposition="minimal") <= 0.05)
    for _ in range(5):
        x = rng.standard_normal(paper.family.program.D)
        assert np.allclose(paper.family.program.values(x), minimal.family.program.values(x), atol=1e-14)
        # the paper's f+ carries the extra S+ terms, the constraint function is the same
        assert np.all(paper.family.program.plus(x)[0] >= minimal.family.program.plus(x)[0] - 1e-14)


def test_weak_constraint_matches_the_metric_definition(law):
    """The (17) function with the indicator in place of sigma is the empirical WDP^I: check the sigma-version
    against a direct evaluation of (16) with S_k = mean sigma."""
    data, w, s = law
    band, kappa = (0.7, 1.0), 0.1
    prog = _problem(law, fm.weak_partial_dp(s, data.groups, band=band) <= kappa).family.program
    x = np.random.default_rng(1).standard_normal(prog.D)
    z = s.design() @ x[: w.size]
    S = [np.mean(np.clip(z[data.groups.codes == k] + 0.5, 0, 1)) for k in (0, 1)]
    term = [min(v, band[1]) - min(v, band[0]) for v in S]
    expect = np.array([term[0] - term[1], term[1] - term[0]]) - kappa * (band[1] - band[0])
    assert np.allclose(prog.values(x), expect, atol=1e-14)


def test_start_values_are_strictly_feasible(law):
    data, w, s = law
    band, kappa = (0.7, 1.0), 0.1
    kp = kappa * (band[1] - band[0])
    prog = _problem(law, *_all_constraints(law, kappa, band)).family.program
    x0 = prog.start()
    f = prog.values(x0)
    pdp = prog.blocks[0]
    assert np.allclose(f[: pdp.m], -kp / 2, atol=1e-14)           # every (13) constraint = -kappa'/2
    assert np.allclose(f[pdp.m:], -kp, atol=1e-14)                # every (17) constraint = -kappa'
    assert np.allclose(x0[pdp.tsl], 0.5 - pdp.levels - kp / 2)


def test_default_grid_lies_in_lemma_5_1_domain(law):
    data, w, s = law
    prog = _problem(law, fm.partial_dp(s, data.groups, band=(0.2, 0.6)) <= 0.25).family.program
    levels = prog.blocks[0].levels
    assert levels.size == 10 and levels[0] == 0.2 and levels[-1] < 0.6 - 0.25 * 0.4
    with pytest.warns(UserWarning, match="Lemma 5.1"):
        fm.Problem(fm.Minimize(fm.sum_squares(w)),
                   [fm.partial_dp(s, data.groups, band=(0.2, 0.6), grid="in_I") <= 0.25])
    p = fm.Problem(fm.Minimize(fm.sum_squares(w)),
                   [fm.partial_dp(s, data.groups, band=(0.2, 0.6), grid=[0.2, 0.25, 0.3]) <= 0.25])
    assert np.allclose(p.family.program.blocks[0].levels, [0.2, 0.25, 0.3])
    with pytest.raises(ModelError, match="band"):
        fm.partial_dp(s, data.groups, band=(0.2, 0.6), grid=[0.1, 0.3])
    with pytest.raises(ModelError, match="empty"):
        fm.partial_dp(s, data.groups, band=(0.2, 0.6), grid=[])


def test_majorization_and_tightness(law):
    """g_i(v) >= f_i(v) + (mu/2)||v - anchor||^2 and g_i(anchor) = f_i(anchor), i = 1..m."""
    prog = _problem(law, *_all_constraints(law)).family.program
    rng = np.random.default_rng(2)
    mu = 0.05
    for _ in range(3):
        anchor = rng.standard_normal(prog.D) * 0.5
        vals, S = prog.linearize(anchor)
        c = vals - S @ anchor

        def g(v):
            return prog.plus(v)[0] - (S @ v + c) + 0.5 * mu * np.sum((v - anchor) ** 2)
        assert np.allclose(g(anchor), prog.values(anchor), atol=1e-12)
        for _ in range(10):
            v = anchor + rng.standard_normal(prog.D) * rng.choice([0.01, 0.3, 2.0])
            assert np.all(g(v) >= prog.values(v) + 0.5 * mu * np.sum((v - anchor) ** 2) - 1e-12)


def test_subgradients_match_directional_derivatives(law):
    """f+ and f- are piecewise linear in x: at a random point a small step is exact to first order."""
    prog = _problem(law, *_all_constraints(law)).family.program
    rng = np.random.default_rng(3)
    x = rng.standard_normal(prog.D)
    fp, caches = prog.plus(x)
    fm_, jac = prog.minus(x)
    grad_plus = np.array([prog.plus_grad(x, i, caches) for i in range(prog.m)])
    d = rng.standard_normal(prog.D) * 1e-7
    assert np.allclose(prog.plus(x + d)[0] - fp, grad_plus @ d, atol=1e-13)
    assert np.allclose(prog.minus(x + d)[0] - fm_, jac @ d, atol=1e-13)
    val, grad = prog.penalty(x)
    assert prog.penalty(x + d)[0] - val == pytest.approx(grad @ d, abs=1e-13)


def test_cvxpy_lowering_of_f_plus_matches_numpy(law):
    prog = _problem(law, *_all_constraints(law)).family.program
    sub = Subproblem(prog, 0.1)
    x = np.random.default_rng(4).standard_normal(prog.D)
    for w, var in sub.ctx.variables.items():
        var.value = x[prog.layout.slices[w.name]]
    for name, var in sub.aux.items():
        var.value = x[prog.layout.slices[name]]
    lowered = cp.hstack([BLOCK_LOWERING[type(b)](b, sub.ctx, sub.aux) for b in prog.blocks])
    assert np.allclose(lowered.value, prog.plus(x)[0], atol=1e-12)


def test_best_thresholds_minimize_the_level(law):
    data, w, s = law
    prog = _problem(law, fm.partial_dp(s, data.groups, band=(0.7, 1.0)) <= 0.1).family.program
    b = prog.blocks[0]
    x = np.random.default_rng(5).standard_normal(prog.D) * 0.3
    x[b.tsl] = b.best_thresholds(x)
    best = prog.constraint_levels(x)["c0"]
    for shift in (-0.05, 0.05):
        y = x.copy()
        y[b.tsl] += shift
        assert prog.constraint_levels(y)["c0"] >= best - 1e-9


def test_dc_atom_curvature_checks(law):
    data, w, s = law
    with pytest.raises(ModelError, match=r"second part h = .* curvature 'concave'"):
        fm.dc(fm.sum_squares(w), -fm.sum_squares(w))
    with pytest.raises(ModelError, match=r"first part g = .* curvature 'concave'"):
        fm.dc(-fm.norm(w), fm.sum_squares(w))
    with pytest.raises(ExpressionTypeError, match="scalar"):
        fm.dc(fm.logistic_loss(s, data.y), 0)
    d = fm.dc(fm.sum_squares(w), fm.norm(w))
    assert d.curvature == "unknown" and str(d) == "||w||_2^2 - ||w||_2"
    assert fm.dc(fm.sum_squares(w), 1.0).curvature == "convex"
    theta = np.random.default_rng(6).standard_normal(w.size)
    val, grads = fm.expressions.value_and_grad(d, {w: theta})
    core = theta.copy()
    core[-1] = 0.0
    assert val == pytest.approx(core @ core - np.linalg.norm(theta[:-1]))
    assert np.allclose(grads[w], 2 * core - np.append(theta[:-1] / np.linalg.norm(theta[:-1]), 0.0))


def test_declaration_errors(law):
    data, w, s = law
    pdp = fm.partial_dp(s, data.groups, band=(0.7, 1.0))
    obj = fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)))
    for kappa, match in ((-0.1, "kappa >= 0"), (1.5, "kappa <= 1"), (1.0, "empty")):
        with pytest.raises(ModelError, match=match):
            fm.Problem(obj, [pdp <= kappa])
    with pytest.warns(UserWarning, match="not strictly"):
        fm.Problem(obj, [pdp <= 0.0])
    with pytest.raises(ModelError, match="band"):
        fm.partial_dp(s, data.groups, band=(0.9, 0.2))
    with pytest.raises(DataError, match="too few"):
        tiny = fm.Dataset(data.X[:23], data.y[:23], np.repeat([0, 1], [20, 3]))
        fm.partial_dp(tiny.score(fm.Weights(data.n_features)), tiny.groups, band=(0.9, 1.0))
    with pytest.raises(DataError, match="need >= 2"):
        fm.partial_dp(s, np.zeros(data.n_samples), band=(0.7, 1.0))
    with pytest.raises(DataError, match="must match"):
        fm.weak_partial_dp(s, data.groups.codes[:-1], band=(0.7, 1.0))
    with pytest.raises(ExpressionTypeError, match="linear score"):
        fm.partial_dp(fm.logistic_loss(s, data.y), data.groups, band=(0.7, 1.0))
    with pytest.raises(ModelError, match="decomposition"):
        fm.weak_partial_dp(s, data.groups, band=(0.7, 1.0), decomposition="other")
    with pytest.raises(ModelError, match="levels"):
        fm.partial_dp(s, data.groups, band=(0.7, 1.0), levels=0)
    with pytest.raises(UnsupportedProblemError, match="stand alone"):
        fm.Problem(obj, [2.0 * pdp <= 0.1])
    with pytest.raises(UnsupportedProblemError, match="must be convex"):
        fm.Problem(fm.Minimize(-fm.sum_squares(w)), [pdp <= 0.1])
    with pytest.raises(UnsupportedProblemError, match="fm.dc"):
        fm.Problem(obj, [pdp <= 0.1, -fm.sum_squares(w) <= -1.0])
    with pytest.raises(ModelError, match="no gradient"):
        fm.expressions.value_and_grad(pdp, {w: np.zeros(w.size)})


def test_atom_value_is_the_true_metric(law):
    data, w, s = law
    theta = np.random.default_rng(7).standard_normal(w.size)
    scores = s.design() @ theta
    pdp = fm.partial_dp(s, data.groups, band=(0.7, 1.0))
    wpdp = fm.weak_partial_dp(s, data.groups, band=(0.7, 1.0), threshold=0.2)
    assert fm.expressions.evaluate(pdp, {w: theta}) == fm.metrics.partial_dp(scores, data.groups, band=(0.7, 1.0)).gap
    assert fm.expressions.evaluate(wpdp, {w: theta}) == \
        fm.metrics.weak_partial_dp(scores, data.groups, band=(0.7, 1.0), threshold=0.2).gap
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "pDP_[0.7,1)" in str(fm.Problem(fm.Minimize(fm.sum_squares(w)), [pdp <= 0.1]))
