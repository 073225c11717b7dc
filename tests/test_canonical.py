"""Canonicalization before recognition: equivalent declarations become the same tree, reach the same reduction
and the same methods, and give the same answers; recognition never raises."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.expressions.canonicalize import canonical_constraint, canonicalize, same_structure
from fairmodel.families.registry import ordered


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(3)
    n, d = 600, 4
    X = rng.normal(size=(n, d))
    groups = rng.integers(0, 3, size=n)
    y = np.where(X @ np.array([1.0, -0.5, 0.3, 0.0]) + 0.8 * groups + rng.normal(size=n) > 0, 1.0, -1.0)
    data = fm.Dataset(X, y, groups=groups)
    w = fm.Weights(d, radius=3.0)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    return data, w, risks


def _variants(risks):
    c = np.array([0.0, 0.1, -0.2])
    return {
        "plain": [fm.max(risks), fm.max(1.0 * risks), fm.max(risks) + 0, fm.max(risks - 0.0),
                  fm.max(fm.Constant(np.zeros(3)) + risks), fm.max(0.5 * (2 * risks)), 0 + fm.max(risks)],
        "offsets": [fm.max(risks - c), fm.max(fm.Constant(-c) + risks), fm.max(-c + risks),
                    fm.max((risks - c) * 1.0), fm.max(risks + 0 - c)],
    }


def test_equivalent_declarations_have_the_same_canonical_tree(setup):
    _, _, risks = setup
    for name, exprs in _variants(risks).items():
        first = canonicalize(exprs[0])
        for e in exprs[1:]:
            assert same_structure(canonicalize(e), first), f"{name}: {e} -> {canonicalize(e)} vs {first}"
    # and different declarations are not confused
    plain, shifted = (canonicalize(v[0]) for v in _variants(risks).values())
    assert not same_structure(plain, shifted)


def test_equivalent_declarations_reach_group_dro_and_agree_with_the_exact_optimum(setup):
    """Every variant is recognized as group DRO (ALEG) and its stochastic result is within 1e-3 of the exact
    optimum (the group-DRO family's own cross-check tolerance); same seed, same canonical tree, same numbers."""
    for exprs in _variants(setup[2]).values():
        results = []
        for e in exprs:
            prob = fm.Problem(fm.Minimize(e))
            assert prob.family.name == "gdro" and "aleg" in prob.family.stochastic_methods
            exact = prob.solve(method="dual")
            fast = prob.solve(backend="stochastic", seed=0, epochs=30)
            assert abs(fast.objective - exact.objective) <= 1e-3
            results.append(fast.objective)
        assert np.ptp(results) <= 1e-12


def test_an_affine_transform_of_the_objective_keeps_the_structure_and_scales_the_certificate(setup):
    _, _, risks = setup
    plain = fm.Problem(fm.Minimize(fm.max(risks)))
    scaled = fm.Problem(fm.Minimize(2.0 * fm.max(risks) + 1.0))
    assert scaled.family.name == "gdro" and scaled.family.scale == 2.0
    a, b = plain.solve(method="dual"), scaled.solve(method="dual")
    assert b.objective == pytest.approx(2.0 * a.objective + 1.0, abs=1e-9)
    assert b.certificate["duality_gap"] == pytest.approx(2.0 * a.certificate["duality_gap"], abs=1e-9)
    assert b.certificate["lower_bound"] <= b.objective + 1e-9


def test_canonical_rules():
    x = fm.Parameter(0.5, "kappa")
    w = fm.Weights(2)
    data = fm.Dataset(np.eye(2), np.array([1.0, -1.0]))
    r = fm.mean(fm.logistic_loss(data.score(w), data.y))
    e = canonicalize((r + 1.0) + (2.0 - 3.0) + 0.0 * r)
    assert same_structure(e, canonicalize(r))                       # constants folded, a zero multiple dropped
    e = canonicalize(3.0 * (r + 1.0))
    assert isinstance(e, fm.expressions.Add) and e.args[1].constant_value() == 3.0   # distributed, folded, last
    assert canonicalize(2.0 * (0.5 * r)) is r                       # c1 * (c2 * x) with c1 c2 = 1
    c = canonical_constraint((r + 0.2 <= x).named("c"))
    assert c.lhs is r and c.name == "c" and isinstance(c.rhs, fm.expressions.Add)   # the parameter stays symbolic
    assert c.rhs.numeric(fm.expressions.Env({})) == pytest.approx(0.5 - 0.2)
    c = canonical_constraint((0.1 >= r - 0.05).named("d"))
    assert c.lhs is r and float(c.rhs.constant_value()) == pytest.approx(0.15)


def test_recognition_never_raises_and_validation_belongs_to_the_chosen_reduction(setup):
    data, w, _ = setup
    one = fm.group_mean(fm.logistic_loss(data.score(w), data.y), np.zeros(data.n_samples))
    problem = type("P", (), {})()
    from fairmodel.expressions.canonicalize import canonical_problem
    problem.canonical = canonical_problem(fm.max(one), (), {})
    for cls in ordered():
        cls.accepts(problem)                                       # a structure or a reason string, never an error
    with pytest.raises(fm.DataError, match="at least two groups"):
        fm.Problem(fm.Minimize(fm.max(one)))


def test_describe_says_which_reductions_accept_and_why_the_others_decline(setup):
    text = fm.Problem(fm.Minimize(fm.max(setup[2]))).describe()
    assert "group DRO / MERO: accepts (chosen" in text and "generic convex program: accepts" in text
    assert "declines: the objective must be fm.auc_loss" in text


def test_a_method_of_another_accepting_reduction_is_used_on_request(setup):
    prob = fm.Problem(fm.Minimize(fm.max(setup[2])))
    res = prob.solve(backend="stochastic", method="primal_dual", seed=0)
    assert res.family == "convex" and res.method == "primal_dual"
    assert abs(res.objective - prob.solve(method="dual").objective) <= 1e-3
    with pytest.raises(fm.OptionError, match="valid methods are aleg, smd, primal_dual"):
        prob.solve(backend="stochastic", method="nope")
    report = fm.crosscheck(prob, exact_options={"method": "dual"}, stochastic_options={"method": "primal_dual"})
    assert report.family == "convex" and "Lagrangian gap of the stochastic result" in [c.name for c in report.checks]
    assert report.ok
    assert prob.evaluate(res).certificate["lagrangian_gap"] == pytest.approx(res.certificate["lagrangian_gap"])
