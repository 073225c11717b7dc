"""Exact group-DRO / MERO programs: duals, duality gaps, Lemma 5.1, symmetric cases and independent formulations."""
import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.exact import gdro as exact
from fairmodel.exact.newton import ball_qp_step, minimize_on_ball
from fairmodel.families.gdro import group_risks_of

from .conftest import make_instance


def test_epigraph_duals_are_a_saddle_point(small):
    """Duals sum to 1, max_i R_i(w*) = t*, complementary slackness; the duality gap (13) is ~0 at (w*, q*)."""
    _, w, risks = small
    R = group_risks_of(risks)
    theta, opt, q, record = exact.solve_epigraph(R)
    r = R.risks(theta)
    assert record["dual_sum"] == pytest.approx(1.0, abs=1e-6)
    assert np.max(r) == pytest.approx(opt, abs=1e-7)
    active = q > 1e-6
    assert np.allclose(r[active], opt, atol=1e-6)
    res = fm.Problem(fm.Minimize(fm.max(risks))).solve()
    assert abs(res.certificate["duality_gap"]) < 1e-6
    assert res.certificate["lower_bound"] <= res.objective + 1e-9


def test_two_solvers_and_the_dual_method_agree(small):
    """Independent formulations: epigraph with Clarabel, ECOS and SCS, and the dual method (no CVXPY)."""
    _, _, risks = small
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    clarabel = prob.solve(solver="CLARABEL")
    ecos = prob.solve(solver="ECOS")
    dual = prob.solve(method="dual")
    assert ecos.objective == pytest.approx(clarabel.objective, abs=1e-7)
    assert dual.objective == pytest.approx(clarabel.objective, abs=1e-7)
    # SCS is a first-order conic solver: agreement to its default accuracy (~1e-4)
    assert prob.solve(solver="SCS").objective == pytest.approx(clarabel.objective, abs=1e-3)
    # the optimal q is unique here: both dual vectors agree
    assert np.abs(dual.variables["q"] - clarabel.variables["q"]).sum() < 1e-4


def test_epigraph_equals_a_direct_max_formulation(small):
    """The epigraph program and cp.max of the risk vector (another CVXPY form) give the same optimum."""
    _, _, risks = small
    R = group_risks_of(risks)
    theta = cp.Variable(R.shape)
    direct = cp.Problem(cp.Minimize(cp.max(exact.cvxpy_risks(R, theta))), exact.cvxpy_domain(R, theta))
    direct.solve(solver="CLARABEL")
    assert exact.solve_epigraph(R)[1] == pytest.approx(direct.value, abs=1e-7)


def test_translation_shifts_the_optimum(small):
    """Adding c to every risk shifts OPT by c and keeps w*."""
    _, _, risks = small
    base = fm.Problem(fm.Minimize(fm.max(risks))).solve()
    shifted = fm.Problem(fm.Minimize(fm.max(risks - np.full(3, -0.25)))).solve()
    assert shifted.objective == pytest.approx(base.objective + 0.25, abs=1e-7)
    assert np.allclose(shifted.variables["w"], base.variables["w"], atol=1e-5)


def test_identical_groups_have_zero_mero():
    """With identical groups a common minimizer exists, so OPT_MERO = 0."""
    data = fm.datasets.make_gdro_synthetic(m=1, d=4, n_per_group=60, seed=3)
    X = np.vstack([data.X, data.X])
    y = np.concatenate([data.y, data.y])
    twins = fm.Dataset(X, y, groups=np.repeat(["a", "b"], data.n_samples))
    w = fm.Weights(4, radius=2.0)
    risks = fm.group_mean(fm.logistic_loss(twins.score(w), twins.y), twins.groups)
    res = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks)))).solve()
    assert res.objective == pytest.approx(0.0, abs=1e-7)


def test_lemma_5_1_holds_for_any_point_and_overestimated_offsets(small, small_risks):
    """Lemma 5.1: eps_true(z) <= eps_hat(z) + 2 max_i (R_hat*_i - R*_i) for arbitrary z and R_hat* >= R*."""
    _, _, risks = small
    R = small_risks
    r_star = exact.group_optimal_values(R)
    rng = np.random.default_rng(1)
    for _ in range(5):
        theta = R.project(rng.normal(size=R.shape) * 3)
        q = rng.dirichlet(np.ones(R.m))
        over = r_star + rng.uniform(0, 0.1, size=R.m)

        def gap(offsets):
            inner, _ = exact.solve_weighted_erm(R, q)
            return np.max(R.risks(theta) - offsets) - (R.weighted_value_and_grad(inner, q)[0] - q @ offsets)
        assert gap(r_star) <= gap(over) + 2 * np.max(over - r_star) + 1e-9


def test_duality_gap_bounds_suboptimality(small, small_risks):
    """(14): 0 <= max_i R_i(w) - OPT <= gap(w, q) for arbitrary candidates."""
    _, w, risks = small
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    opt = prob.solve().objective
    rng = np.random.default_rng(2)
    for _ in range(5):
        theta = small_risks.project(rng.normal(size=5))
        ev = prob.evaluate(w=theta, q=rng.dirichlet(np.ones(3)))
        assert -1e-9 <= ev.objective - opt <= ev.certificate["duality_gap"] + 1e-9
        assert ev.certificate["duality_gap"] <= ev.certificate["duality_gap_bound"] + 1e-12


def test_newton_inner_solver_matches_cvxpy(small_risks):
    """The certified projected-Newton inner minimum equals the conic solve, with a valid lower bound."""
    q = np.array([0.2, 0.5, 0.3])
    theta_n, rec = exact.solve_weighted_erm(small_risks, q, method="newton")
    theta_c, _ = exact.solve_weighted_erm(small_risks, q, method="cvxpy")
    value_c = small_risks.weighted_value_and_grad(theta_c, q)[0]
    assert rec["value"] == pytest.approx(value_c, abs=1e-7)
    value, bound = exact.lower_bound_on_ball(small_risks, q, theta_n)
    assert bound <= value_c + 1e-9 and value - bound < 1e-9


def test_ball_qp_step_is_the_constrained_minimizer():
    """The exact ball-constrained QP step against CVXPY, including a singular Hessian."""
    rng = np.random.default_rng(0)
    for rank in (4, 2):
        A = rng.normal(size=(rank, 4))
        H = A.T @ A
        b = rng.normal(size=4) * 5
        x = cp.Variable(4)
        cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, H, assume_PSD=True) - b @ x), [cp.norm(x) <= 1.0]).solve()
        ours = ball_qp_step(H, b, 1.0)
        assert 0.5 * ours @ H @ ours - b @ ours <= 0.5 * x.value @ H @ x.value - b @ x.value + 1e-6
        assert np.linalg.norm(ours) <= 1.0 + 1e-9


def test_newton_reports_non_convergence():
    """A budget too small for the tolerance raises instead of returning an inaccurate point."""
    def fun(theta, value_only=False):
        v = float(np.sum(np.cosh(theta - 3.0)))
        return v if value_only else (v, np.sinh(theta - 3.0), np.diag(np.cosh(theta - 3.0)))
    with pytest.raises(fm.SolverError, match="did not converge"):
        minimize_on_ball(fun, np.zeros(3), None, tol=1e-14, max_iter=1)


def test_mero_and_gdro_differ_with_a_noisy_group():
    """One group with heavy label noise pulls GDRO towards it; MERO discounts it."""
    data, w, risks = make_instance(m=3, d=5, sizes=(80, 80, 80), flips=(0.05, 0.05, 0.45), seed=4)
    gdro = fm.Problem(fm.Minimize(fm.max(risks))).solve()
    mero = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks)))).solve()
    assert np.linalg.norm(gdro.variables["w"] - mero.variables["w"]) > 0.1
    risks_at_optimum = gdro.metrics["group_risks"]     # the noisy group is among the worst (groups tie at the optimum)
    assert risks_at_optimum["2"] >= max(risks_at_optimum.values()) - 1e-6
    assert mero.objective >= -1e-9


def test_softmax_group_dro_exact_forms_agree():
    """Multiclass (softmax, matrix weights): epigraph with two solvers."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)) + rng.normal(size=(90, 3)), axis=1)
    data = fm.Dataset(X, y, groups=np.repeat([0, 1, 2], 30))
    W = fm.Weights(3, radius=2.0, n_outputs=3)
    risks = fm.group_mean(fm.softmax_loss(data.score(W), data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    a, b = prob.solve(solver="CLARABEL"), prob.solve(solver="ECOS")
    assert a.objective == pytest.approx(b.objective, abs=1e-6)
    assert a.variables["w"].shape == (3, 3)
    assert abs(a.certificate["duality_gap"]) < 1e-5


def test_judge_reports_an_uncertified_gap_instead_of_failing(small, monkeypatch):
    """When the inner minimum of (13) cannot be computed (e.g. unbounded weights whose infimum is not attained,
    seen on a subsample of Adult), the judge still scores the candidate: objective and group risks as usual,
    the duality gap as nan with a warning that says why."""
    data, w, risks = small
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    res = prob.solve(method="dual")

    def fail(*args, **kwargs):
        raise fm.SolverError("projected Newton did not converge: Frank-Wolfe gap 1e-06 after 100 steps")
    monkeypatch.setattr(exact, "solve_weighted_erm", fail)
    with pytest.warns(UserWarning, match="duality gap is not certified"):
        again = prob.evaluate(res)
    assert again.objective == pytest.approx(res.objective, abs=1e-12)
    assert np.isnan(again.certificate["duality_gap"]) and np.isnan(again.certificate["lower_bound"])


def test_an_epigraph_answer_just_outside_the_ball_is_projected_before_the_judge(monkeypatch):
    """A conic solver meets the ball to its feasibility tolerance (||w|| = 5.00008 at radius 5 on columns scaled
    1e-6..1e6): the judge refused that candidate with a ModelError and the exact fallback chain crashed."""
    data = fm.datasets.load_adult(sensitive="sex").subsample(1500, seed=0)
    w = fm.Weights(data.n_features, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))))

    solve = exact.solvers.solve

    def outside(problem, *args, what="", **kwargs):      # the epigraph's weights as a solver just outside leaves them
        record = solve(problem, *args, what=what, **kwargs)
        if what == "the group-DRO epigraph program":
            theta = max(problem.variables(), key=lambda v: v.size)
            theta.value = theta.value * (1.0 + 1.6e-5) * 5.0 / np.linalg.norm(theta.value)
        return record
    monkeypatch.setattr(exact.solvers, "solve", outside)
    result = prob.solve(backend="exact", method="epigraph")
    assert np.linalg.norm(result.variables[w.name]) <= 5.0 * (1 + 1e-12)


def _hetero_groups(n=4000, d=8, seed=1026):
    """Three groups whose feature scales differ (0.4, 0.9, 1.9) with group shifts, labels from a linear boundary
    flipped at group rates 5 / 10 / 20 %: the hinge's smoothing path stops short of its tolerance on group 0 here."""
    rng = np.random.default_rng(seed)
    g = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, d)) * (0.4 * 2.2 ** g)[:, None] + 0.3 * rng.normal(size=(3, d))[g]
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    signal = 1.5 * Xs @ (rng.normal(size=d) / np.sqrt(d)) + 0.5 * (g - g.mean())
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-2 * signal)), 1.0, -1.0)
    flip = rng.random(n) < np.array([0.05, 0.1, 0.2])[g]
    y[flip] = -y[flip]
    return fm.Dataset(X, y, np.array([f"g{k}" for k in g]))


def test_mero_hinge_offsets_are_the_group_minima():
    """MERO's R_g* enter its objective as they are: each equals the group's hinge minimum over the ball, solved here
    as its own CVXPY program, to the solvers' accuracy (the smoothing path had left group 0's 1.35e-5 above it, which
    put the exact MERO objective 5.9e-6 below its optimum), and so does the MERO optimum itself."""
    data = _hetero_groups()
    w = fm.Weights(data.n_features, radius=3.0, intercept=True)
    risks = fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups)
    res = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks)))).solve(backend="exact")
    Z = np.column_stack([data.X, np.ones(data.n_samples)])
    theta = cp.Variable(Z.shape[1])
    hinge = [cp.sum(cp.pos(1 - cp.multiply(data.y[m], Z[m] @ theta))) / m.sum()
             for m in (data.groups.codes == k for k in range(3))]
    minima = []
    for h in hinge:
        prog = cp.Problem(cp.Minimize(h), [cp.norm(theta) <= 3.0])
        prog.solve(solver=cp.CLARABEL)
        minima.append(prog.value)
    t = cp.Variable()
    mero = cp.Problem(cp.Minimize(t), [h - r <= t for h, r in zip(hinge, minima)] + [cp.norm(theta) <= 3.0])
    mero.solve(solver=cp.CLARABEL)
    assert res.ok
    assert res.objective == pytest.approx(mero.value, abs=1e-7)
