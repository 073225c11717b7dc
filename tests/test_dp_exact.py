"""Exact programs of DP post-processing agree with each other (LP (3), entropic primal (4) and dual (5)).

Independent formulations: LP primal vs dual LP vs two LP solvers; entropic exponential-cone primal vs CVXPY
log-sum-exp dual vs L-BFGS-B on the dual. Tolerances: 1e-6 on values (conic solvers at their default
1e-8 tolerances), 1e-4 on policies (beta amplifies dual errors).
"""
import math

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.oracles.dp_dual import DualProblem, gradient_mapping
from fairmodel.errors import InfeasibleError
from fairmodel.exact import dp as exact_dp
from tests.test_dp_math import make_problem


@pytest.fixture(scope="module")
def small():
    return make_problem(n=120, K=3, L=4, calibrated=True, seed=11)


def entropic(dual, beta):
    return DualProblem(dual.R, dual.T, dual.eps, beta, dual.w)


def test_lp_primal_dual_and_two_solvers_agree(small):
    dual, _ = small
    lp = entropic(dual, math.inf)
    P1, z1, r1 = exact_dp.solve_primal(lp, "CLARABEL")
    P2, z2, r2 = exact_dp.solve_primal(lp, "HIGHS")
    zd, Pd, rd = exact_dp.solve_dual(lp, "HIGHS")
    assert r1["value"] == pytest.approx(r2["value"], rel=1e-6)
    assert -rd["value"] == pytest.approx(r1["value"], rel=1e-6)
    for P, z in ((P1, z1), (P2, z2), (Pd, zd)):
        assert lp.risk(P) == pytest.approx(r1["value"], rel=1e-6)
        assert (lp.unfairness(P) - lp.eps).max() <= 1e-7
        assert -lp.value(z) == pytest.approx(r1["value"], rel=1e-6)  # the duals are optimal for the dual LP


def test_entropic_primal_and_both_duals_agree(small):
    dual, _ = small
    P, z_primal, rp = exact_dp.solve_primal(dual)
    z_cvx, _, rd = exact_dp.solve_dual(dual)
    z_lbfgs, rl = exact_dp.solve_lbfgs(dual, tol=1e-9)
    v_beta = rp["value"]
    assert dual.regularized_risk(P) == pytest.approx(v_beta, rel=1e-6)
    for z in (z_primal, z_cvx, z_lbfgs):
        assert -dual.value(z) == pytest.approx(v_beta, rel=1e-6, abs=1e-8)  # strong duality (17)
        np.testing.assert_allclose(dual.policy(z), P, atol=1e-4)              # primal recovery (6)
    assert (dual.unfairness(P) - dual.eps).max() <= 1e-7                       # Lemma 3.2
    assert rl["kkt_residual"] <= 1e-9 and rl["status"] == "optimal"


def test_kkt_at_the_exact_dual(small):
    dual, _ = small
    z, _ = exact_dp.solve_lbfgs(dual, tol=1e-10)
    g = dual.grad(z)
    assert np.linalg.norm(gradient_mapping(z, g, 1.0 / dual.smoothness())) <= 1e-8
    assert np.max(z[0] * z[1]) <= 1e-10     # lambda nu = 0 when eps > 0 (Lemma A.1)
    assert abs(np.sum(z * g)) <= 1e-9       # complementary slackness: R_beta(pi*) = -F(z*)
    assert not np.allclose(z, 0)            # the constraints bind (non-vacuous)


def test_entropic_values_bracket_the_lp_value(small):
    """V_LP - log(m)/beta <= V_beta <= V_LP, V_LP <= R(pi*_beta) <= V_LP + log(m)/beta, V_beta increasing in beta."""
    dual, _ = small
    v_lp = exact_dp.solve_primal(entropic(dual, math.inf), "HIGHS")[2]["value"]
    values = []
    for beta in (20.0, 100.0, 500.0):
        d = entropic(dual, beta)
        z, _ = exact_dp.solve_lbfgs(d)
        P = d.policy(z)
        v = -d.value(z)
        values.append(v)
        assert v_lp - math.log(d.m) / beta - 1e-9 <= v <= v_lp + 1e-9
        assert v_lp - 1e-7 <= d.risk(P) <= v_lp + math.log(d.m) / beta + 1e-9
    assert values[0] < values[1] < values[2]


def test_lp_without_active_constraints_is_the_nearest_grid_point():
    dual, d = make_problem(n=80, K=2, L=4, eps=(1.0, 1.0), seed=3, calibrated=True)
    lp = entropic(dual, math.inf)
    P, _, rec = exact_dp.solve_primal(lp, "HIGHS")
    assert rec["value"] == pytest.approx(float(lp.w @ lp.R.min(axis=1)), rel=1e-7)
    on_grid = DualProblem((d["grid"][np.arange(80) % 9][:, None] - d["grid"]) ** 2, dual.T, dual.eps, math.inf, dual.w)
    assert exact_dp.solve_primal(on_grid, "HIGHS")[2]["value"] == pytest.approx(0.0, abs=1e-9)


def test_infeasible_problem_raises_with_margin_and_fix():
    dual, _ = make_problem(n=100, K=2, eps=(1e-6, 1e-6), calibrated=False, seed=4)
    assert dual.feasibility_margins().min() < 0
    with pytest.raises(InfeasibleError, match=r"margin.*calibrated"):
        exact_dp.check_feasible(dual, p_is_calibrated=False)


def test_family_exact_methods_agree_and_multiclass_cost_variant():
    """Through fm.Problem, on the cost-matrix variant (Remark 2.2: multi-class classification under DP with the
    expected 0-1 loss as cost and the classes as grid): LP methods agree, entropic methods agree."""
    rng = np.random.default_rng(5)
    n, C = 150, 3
    tau = rng.dirichlet([2, 3], size=n)
    proba_y = rng.dirichlet(np.ones(C), size=n) * 0.5 + 0.5 * np.eye(C)[(tau[:, 0] * C).astype(int) % C]
    post = fm.GridPredictor(cost=1.0 - proba_y, tau=tau, grid=["a", "b", "c"])  # expected 0-1 loss
    lp = fm.Problem(fm.Minimize(fm.expected_cost(post)), [fm.dp_gap(post) <= 0.01])
    r_lp = lp.solve(method="lp", solver="HIGHS")
    r_dual = lp.solve(method="dual_lp")
    assert r_lp.objective == pytest.approx(r_dual.objective, rel=1e-6)
    assert r_lp.max_violation <= 1e-7
    unconstrained = float(np.mean((1.0 - proba_y).min(axis=1)))
    assert r_lp.objective > unconstrained + 1e-3  # the constraint costs accuracy (non-vacuous)
    assert r_lp.variables["P"].shape == (n, C)
    ent = fm.Problem(fm.Minimize(fm.expected_cost(post)), [fm.dp_gap(post) <= 0.01], entropy=0.01)
    objs = [ent.solve(method=m).objective for m in ("lbfgs", "primal", "dual")]
    assert objs[1] == pytest.approx(objs[0], rel=1e-6, abs=1e-8)
    assert objs[2] == pytest.approx(objs[0], rel=1e-6, abs=1e-8)
    model = ent.solve().predictor()
    labels = model.predict(cost=1.0 - proba_y, tau=tau, mode="mode")
    assert set(labels) <= {"a", "b", "c"}
