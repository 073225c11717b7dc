"""Every certificate of the judge against an independent computation written here, on non-optimal candidates
(a certificate that is 0 at the optimum catches nothing there): CVXPY programs written out by hand (not through
the library's lowering), brute force over finite sets, scipy.optimize, closed forms.

Tolerances: 1e-6 where both sides are conic or Newton solves at their default accuracy (1e-8 relative) with a
margin; exact identities at 1e-9; the generic Lagrangian gap's inner minimum by accelerated gradient at 1e-5 (its
Frank-Wolfe bound makes it a lower bound whatever its accuracy: checked one-sided at 1e-7).
"""
import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import brentq, minimize
from scipy.special import logsumexp, softmax

import fairmodel as fm
from fairmodel.exact import gdro as exact_gdro
from fairmodel.families.gdro import group_risks_of
from fairmodel.families.partial_program import MU
from fairmodel.oracles.domains import frank_wolfe_gap
from fairmodel.oracles.strategic import C_LABEL

from .auc_reference import reference
from .conftest import make_instance

SOLVER = "CLARABEL"


# ---------------------------------------------------------------------------------------------------------------
# Group DRO and MERO: the duality gap (13), its rigorous bound and the lower bound on OPT
# ---------------------------------------------------------------------------------------------------------------
def _logistic_risks(X, y, codes, m, theta):
    """The group risks as CVXPY expressions (cp.logistic written here, not the library's lowering)."""
    losses = cp.logistic(-cp.multiply(y, X @ theta))
    return [cp.sum(losses[np.flatnonzero(codes == g)]) / int(np.sum(codes == g)) for g in range(m)]


def _hand_min(X, y, codes, q, radius, offsets):
    """min_{||w|| <= R} sum_g q_g (R_g(w) - c_g) and the group optima min_w R_g(w), by CVXPY."""
    theta = cp.Variable(X.shape[1])
    risks = _logistic_risks(X, y, codes, len(q), theta)
    value = cp.Problem(cp.Minimize(sum(qg * (r - c) for qg, r, c in zip(q, risks, offsets))),
                       [cp.norm(theta) <= radius]).solve(solver=SOLVER)
    return value


@pytest.fixture(scope="module")
def gdro_instance():
    data, w, risks = make_instance(seed=5)
    return data, w, risks


def test_group_dro_gap_at_non_optimal_candidates(gdro_instance):
    """duality_gap = max_g R_g(w) - min_w' sum_g q_g R_g(w') (13) for several (w, q) far from the saddle point;
    duality_gap_bound >= duality_gap by at most the inner solve's accuracy; lower_bound <= OPT (CVXPY epigraph)."""
    data, w, risks = gdro_instance
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    X, y, codes = data.X, data.y, data.groups.codes
    theta = cp.Variable(5)
    opt = cp.Problem(cp.Minimize(cp.max(cp.hstack(_logistic_risks(X, y, codes, 3, theta)))),
                     [cp.norm(theta) <= 3.0]).solve(solver=SOLVER)
    rng = np.random.default_rng(0)
    for _ in range(3):
        cand = w.project(rng.normal(size=5))
        q = rng.dirichlet(np.ones(3))
        r = np.array([np.mean(np.logaddexp(0, -y[codes == g] * (X[codes == g] @ cand))) for g in range(3)])
        gap = r.max() - _hand_min(X, y, codes, q, 3.0, np.zeros(3))
        cert = prob.evaluate(w=cand, q=q).certificate
        assert gap > 0.05                                    # far from optimal: the check is not vacuous
        assert cert["duality_gap"] == pytest.approx(gap, abs=1e-6)
        assert gap - 1e-6 <= cert["duality_gap_bound"] <= gap + 1e-6
        assert cert["lower_bound"] <= opt + 1e-7
        assert cert["lower_bound"] == pytest.approx(r.max() - gap, abs=1e-6)


def test_mero_gap_uses_the_q_weighted_offsets(gdro_instance):
    """MERO: gap = max_g (R_g(w) - R*_g) - min_w' sum_g q_g (R_g(w') - R*_g), with R*_g = min_w R_g(w) by CVXPY."""
    data, w, risks = gdro_instance
    prob = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))))
    X, y, codes = data.X, data.y, data.groups.codes
    star = []
    for g in range(3):
        t = cp.Variable(5)
        star.append(cp.Problem(cp.Minimize(_logistic_risks(X, y, codes, 3, t)[g]),
                               [cp.norm(t) <= 3.0]).solve(solver=SOLVER))
    star = np.array(star)
    rng = np.random.default_rng(1)
    cand, q = w.project(rng.normal(size=5)), np.array([0.6, 0.3, 0.1])
    r = np.array([np.mean(np.logaddexp(0, -y[codes == g] * (X[codes == g] @ cand))) for g in range(3)])
    gap = (r - star).max() - _hand_min(X, y, codes, q, 3.0, star)
    cert = prob.evaluate(w=cand, q=q).certificate
    np.testing.assert_allclose(list(prob.evaluate(w=cand).metrics["excess_risks"].values()), r - star, atol=1e-6)
    assert cert["duality_gap"] == pytest.approx(gap, abs=1e-6)
    assert cert["lower_bound"] == pytest.approx((r - star).max() - gap, abs=1e-6)


def test_frank_wolfe_lower_bound_on_the_ball_at_a_non_optimal_point(gdro_instance):
    """f(theta) - <grad, theta> - R ||grad|| (convexity, minimized over the ball) at a point far from the minimizer:
    below the CVXPY minimum, and equal to the formula computed here from a finite-difference gradient."""
    data, w, risks = gdro_instance
    R = group_risks_of(risks)
    q = np.array([0.2, 0.5, 0.3])
    theta = R.project(np.array([1.0, -2.0, 0.5, 0.3, 1.5]))
    value, bound = exact_gdro.lower_bound_on_ball(R, q, theta)

    def f(t):
        return float(q @ R.risks(t))
    h = 1e-6
    grad = np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(5)])
    assert value == pytest.approx(f(theta), rel=1e-12)
    assert bound == pytest.approx(f(theta) - grad @ theta - 3.0 * np.linalg.norm(grad), abs=1e-6)
    assert bound <= _hand_min(data.X, data.y, data.groups.codes, q, 3.0, np.zeros(3)) + 1e-9
    assert value - bound > 0.1                                  # a loose bound far from the minimizer


def test_group_dro_bounds_need_a_radius():
    """On a ball the gap's rigorous bound is >= the gap and the lower bound <= the objective; without a radius the
    gradient bounds no minimum over R^d, so both bounds are NaN (not the value itself, which was no bound), while
    the gap (from the inner Newton solve) is still reported and >= 0."""
    for radius in (3.0, None):
        data, w, risks = make_instance(radius=radius)
        prob = fm.Problem(fm.Minimize(fm.max(risks)))
        res = prob.solve("exact", method="dual")
        q = np.array([0.5, 0.3, 0.2])
        cert = prob.evaluate(w=res.variables[w.name] * 0.5, q=q).certificate
        assert cert["duality_gap"] > 0
        if radius is None:
            assert np.isnan(cert["duality_gap_bound"]) and np.isnan(cert["lower_bound"])
        else:
            assert cert["duality_gap_bound"] >= cert["duality_gap"] - 1e-12
            assert cert["lower_bound"] <= res.objective + 1e-9


def test_frank_wolfe_gap_is_the_largest_linear_decrease_and_bounds_a_quadratic_minimum():
    """The one Frank-Wolfe gap max_{||v|| <= R} <g, theta - v> = <g, theta> + R ||g||: attained at v = -R g / ||g||
    and above <g, theta - v> at random points of the ball; f(theta) - gap below the CVXPY minimum of a convex
    quadratic on the ball at random points, and ~0 at that minimizer; a matrix theta is its flattened vector."""
    rng = np.random.default_rng(7)
    d, radius = 6, 1.5
    A = rng.normal(size=(d, d))
    H, b = A.T @ A + 0.1 * np.eye(d), rng.normal(size=d) * 5.0
    x = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, H) - b @ x), [cp.norm(x, 2) <= radius])
    prob.solve(solver=SOLVER)
    f_star = prob.value
    for _ in range(20):
        theta = rng.normal(size=d)
        theta *= radius * rng.random() / np.linalg.norm(theta)
        g = H @ theta - b
        gap = frank_wolfe_gap(theta, g, radius)
        v = -radius * g / np.linalg.norm(g)
        assert gap == pytest.approx(g @ (theta - v), rel=1e-12)
        others = rng.normal(size=(200, d))
        others *= radius * rng.random((200, 1)) / np.linalg.norm(others, axis=1, keepdims=True)
        assert np.all((theta - others) @ g <= gap + 1e-12)
        assert 0.5 * theta @ H @ theta - b @ theta - gap <= f_star + 1e-7
    x_star = x.value
    assert frank_wolfe_gap(x_star, H @ x_star - b, radius) < 1e-5
    M, G = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    assert frank_wolfe_gap(M, G, 2.0) == pytest.approx(frank_wolfe_gap(M.ravel(), G.ravel(), 2.0), rel=1e-15)


# ---------------------------------------------------------------------------------------------------------------
# The generic reduction: the Lagrangian gap max_y Phi(w, y) - min_w' Phi(w', y)
# ---------------------------------------------------------------------------------------------------------------
def _covariance_problem(radius):
    data, _, _ = make_instance(seed=6)
    w = fm.Weights(5, radius=radius)
    s = data.score(w)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    z = data.X[:, 0] - data.X[:, 0].mean()
    prob = fm.Problem(fm.Minimize(fm.max(risks)), [fm.abs(fm.mean(z * s)) <= 0.02])
    return data, w, z, prob


@pytest.mark.parametrize("radius", [2.0, None])
def test_lagrangian_gap_at_a_non_optimal_candidate(radius):
    """Phi(w, (p, lambda)) = sum_g p_g R_g(w) + lambda_1 (cov(w) - b) + lambda_2 (-cov(w) - b), the multipliers
    lambda_j = B mu_j (B = their sum with the slack): sup_y Phi = max_g R_g + B max(0, |cov| - b) and the inner
    minimum by a CVXPY program written here (with a radius the judge bounds it by Frank-Wolfe after accelerated
    gradient, without one it solves its own CVXPY program)."""
    data, w, z, prob = _covariance_problem(radius)
    assert prob.family.name == "convex"
    X, y, codes = data.X, data.y, data.groups.codes
    p = np.array([0.5, 0.2, 0.3])
    multipliers = np.array([0.3, 0.1, 1.6])                # lambda_1, lambda_2, slack: B = 2
    cand = np.array([0.6, -0.4, 0.3, 0.2, -0.1])
    cov = float(np.mean(z * (X @ cand)))
    r = np.array([np.mean(np.logaddexp(0, -y[codes == g] * (X[codes == g] @ cand))) for g in range(3)])
    sup = r.max() + 2.0 * max(0.0, abs(cov) - 0.02)
    assert abs(cov) > 0.02                                   # the candidate violates the constraint
    theta = cp.Variable(5)
    cov_expr = (z / z.size) @ (X @ theta)
    phi = sum(pg * rg for pg, rg in zip(p, _logistic_risks(X, y, codes, 3, theta))) \
        + multipliers[0] * (cov_expr - 0.02) + multipliers[1] * (-cov_expr - 0.02)
    inner = cp.Problem(cp.Minimize(phi), [] if radius is None else [cp.norm(theta) <= radius]).solve(solver=SOLVER)
    cert = prob.evaluate(w=cand, weights_0=p, multipliers=multipliers).certificate
    assert cert["multiplier_bound"] == pytest.approx(2.0)
    assert cert["penalized_objective"] == pytest.approx(sup, rel=1e-10)
    assert inner - 1e-5 <= cert["lower_bound"] <= inner + 1e-7
    assert cert["lagrangian_gap"] == pytest.approx(sup - inner, abs=1e-5)
    assert cert["lagrangian_gap"] > 0.05


# ---------------------------------------------------------------------------------------------------------------
# AUC fairness: the level-set bracket [f*_lower, f0(w)] (weak duality)
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def auc_ref():
    return reference()


def test_auc_bracket_at_a_non_optimal_feasible_candidate(auc_ref):
    """At w = 0 (feasible: f1 = f2 = 2 c1 c2^2 = 1) the bracket is [f*, f0(0) = c1 c2^2]: the lower end from weak
    duality meets the optimum of the program written over the explicit pairs (tests/auc_reference.py); at w* both
    ends meet f*."""
    f_star, w_star = auc_ref.f_star, auc_ref.w_star
    data = fm.datasets.make_auc_synthetic()
    w = fm.Weights(5, radius=3.0)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra") <= 0.05])
    cert = prob.evaluate(w=np.zeros(5)).certificate
    assert cert["f_star_upper"] == pytest.approx(0.5, abs=1e-12)
    assert cert["f_star_lower"] == pytest.approx(f_star, abs=1e-6)
    assert cert["suboptimality_bound"] == pytest.approx(0.5 - f_star, abs=1e-6)
    at_opt = prob.evaluate(w=w_star)
    assert at_opt.objective == pytest.approx(auc_ref.blocks(w_star)[0], abs=1e-9)
    assert at_opt.certificate["f_star_lower"] == pytest.approx(f_star, abs=1e-6)
    assert at_opt.certificate["f_star_lower"] <= at_opt.objective + 1e-7


# ---------------------------------------------------------------------------------------------------------------
# DP post-processing: dual value, dual suboptimality, KKT residual, identity residual, primal-dual gap
# ---------------------------------------------------------------------------------------------------------------
def _dp_setup(n=150, seed=0):
    rng = np.random.default_rng(seed)
    tau = rng.dirichlet([2.0, 3.0], size=n)
    eta = np.clip(0.8 * tau[:, 0] - 0.4 + 0.2 * rng.normal(size=n), -1, 1)
    p = np.array([0.45, 0.55])
    post = fm.GridPredictor(eta=eta, tau=tau, L=4, B=1, p=p)
    prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.02], entropy=0.05)
    grid = np.arange(-4, 5) / 4
    return prob, (eta[:, None] - grid) ** 2, 1.0 - tau / p, np.array([0.02, 0.02]), 20.0, rng


def _dual_F(z, R, T, eps, beta):
    """F(z) of eq. (5) and its gradient (10), written out: scores a = T (Lambda - V)' - R, the softmax policy."""
    a = T @ (z[0] - z[1]).T - R
    value = np.mean(logsumexp(beta * a, axis=1)) / beta + np.sum((z[0] + z[1]) * eps)
    P = softmax(beta * a, axis=1)
    E = P.T @ T / T.shape[0]
    return value, np.stack([E + eps, eps - E]), P


def test_dp_certificates_at_a_non_optimal_dual(monkeypatch):
    """At a random dual z: the dual value F(z), the suboptimality F(z) - F* (F* by L-BFGS-B on the F written
    here), the KKT residual ||min(z / alpha, grad F)|| with alpha = 1 / (2 beta mean ||t||^2), the identity
    R_beta(pi_z) + F(z) = <z, grad F(z)> (Lemma 3.5, sign corrected) and the primal-dual gap R_beta(P) + F(z) of a
    given policy P."""
    prob, R, T, eps, beta, rng = _dp_setup()
    z = rng.exponential(size=(2, 9, 2)) * 0.3
    value, grad, P_z = _dual_F(z, R, T, eps, beta)
    res = minimize(lambda v: tuple(np.asarray(x, dtype=float).ravel() if i else x
                                   for i, x in enumerate(_dual_F(v.reshape(2, 9, 2), R, T, eps, beta)[:2])),
                   np.zeros(36), jac=True, method="L-BFGS-B", bounds=[(0, None)] * 36,
                   options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 5000})
    f_star = res.fun
    alpha = 1.0 / (2 * beta * np.mean(np.sum(T ** 2, axis=1)))
    kkt = np.linalg.norm(np.minimum(z / alpha, grad))
    P = rng.dirichlet(np.ones(9), size=T.shape[0])
    risk_P = np.mean(np.sum(R * P, axis=1)) + np.mean(np.sum(P * np.log(P), axis=1)) / beta
    ev = prob.evaluate(Lambda=z[0], V=z[1], P=P)
    cert = ev.certificate
    assert cert["dual_value"] == pytest.approx(value, rel=1e-12)
    assert value - f_star > 1e-3                          # non-optimal: the suboptimality is not vacuous
    assert cert["dual_suboptimality"] == pytest.approx(value - f_star, abs=1e-7)
    assert cert["kkt_residual"] == pytest.approx(kkt, rel=1e-10)
    assert abs(cert["identity_residual"]) <= 1e-10
    assert cert["duality_gap"] == pytest.approx(risk_P + value, rel=1e-10)
    assert cert["dual_unfairness_excess"] == pytest.approx(np.linalg.norm(np.maximum(-grad, 0.0)), rel=1e-10)
    # the policy's own quantities: the judge with P = pi_z
    ev_z = prob.evaluate(Lambda=z[0], V=z[1], P=P_z)
    reg = np.mean(np.sum(R * P_z, axis=1)) + np.mean(np.sum(P_z * np.log(P_z), axis=1)) / beta
    assert ev_z.objective == pytest.approx(reg, rel=1e-10)
    assert ev_z.certificate["duality_gap"] == pytest.approx(np.sum(z * grad), abs=1e-10)   # the identity again
    np.testing.assert_allclose(ev_z.metrics["unfairness"], np.abs(P_z.T @ T / T.shape[0]), atol=1e-14)


# ---------------------------------------------------------------------------------------------------------------
# Partial fairness: the nearly-KKT epsilon of Lemma C.1
# ---------------------------------------------------------------------------------------------------------------
def test_lemma_c1_epsilon_from_an_independent_subproblem_solve():
    """min ||w - a||^2 / 4 s.t. 1 - ||w||^2 <= 0 (a DC constraint) at a feasible, non-critical w: the subproblem
    (25) at w, min ||v - a||^2 / 4 + mu/2 ||v - w||^2 s.t. 1 - ||w||^2 - 2 w.(v - w) + mu/2 ||v - w||^2 <= 0, solved
    here exactly from its KKT conditions (v(lambda) in closed form, the root of the active constraint in lambda);
    eps = ||v - w|| / min{1, 1/(2M), 1/(2M lambda)} with M the largest subgradient norm of f_0 and f_1^- at w and v
    (Lemma C.1). Tolerance 1e-4 relative: the judge solves (25) by a conic program, measured 1.5e-5 from the exact
    KKT point here."""
    a = np.array([0.3, -0.2, 0.1, 0.25])
    data = fm.Dataset(np.eye(4), a)
    wv = fm.Weights(4)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.squared_loss(data.score(wv), data.y))),
                      [fm.dc(0.0, fm.sum_squares(wv)) <= -1.0])
    x = np.array([0.2, 0.9, 0.5, -0.3])
    x = 1.1 * x / np.linalg.norm(x)                          # feasible (||x|| > 1) and far from a / ||a||

    def v_of(lam):                                           # stationarity of the Lagrangian of (25), solved for v
        return (a / 2 + MU * x + lam * (2 * x + MU * x)) / (0.5 + MU + lam * MU)

    def g1(lam):
        d = v_of(lam) - x
        return 1 - x @ x - 2 * x @ d + MU / 2 * d @ d
    assert g1(0.0) > 0                                       # the constraint binds: lambda > 0 solves g1 = 0
    lam = brentq(g1, 0.0, 10.0, xtol=1e-15)
    v_hat = v_of(lam)
    step = np.linalg.norm(v_hat - x)
    M = max(np.linalg.norm((p - a) / 2) for p in (x, v_hat))
    M = max(M, max(np.linalg.norm(2 * p) for p in (x, v_hat)))
    eps = step / min(1.0, 1.0 / (2 * M), 1.0 / (2 * M * lam))
    cert = prob.evaluate(w=x).certificate
    assert cert["feasible"] == 1.0 and lam > 0
    assert cert["subproblem_step"] == pytest.approx(step, rel=1e-4)
    assert cert["max_dual"] == pytest.approx(lam, rel=1e-4)
    assert cert["lipschitz_M"] == pytest.approx(M, rel=1e-4)
    assert cert["nearly_kkt_eps"] == pytest.approx(eps, rel=1e-4)
    assert cert["relative_step"] == pytest.approx(step / max(1.0, np.linalg.norm(x)), rel=1e-4)


# ---------------------------------------------------------------------------------------------------------------
# Strategic DRO and SaddleProblem: duality gaps
# ---------------------------------------------------------------------------------------------------------------
def test_strategic_gap_against_brute_force_and_scipy():
    """The primal max_gamma L(w, alpha, .) (E2) is L at the best gamma_i in {-1, +1} (L is linear in each gamma_i,
    brute force per sample); the dual min over the truncated cone of L(., ., gamma) (E3) matches SLSQP from several
    starts; the judge's gap is their difference, positive at a non-optimal candidate."""
    data = fm.datasets.make_strategic_synthetic(n=120, p=4, n_strategic=2, seed=2)
    w = fm.Weights(data.n_features)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=range(2), zeta=0.05), data.y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        atom = fm.wasserstein_worst_case(loss, radius=0.1, label_cost=0.5)
    prob, model = fm.Problem(fm.Minimize(atom)), atom.model
    rng = np.random.default_rng(3)
    theta = 0.3 * rng.normal(size=model.p)
    alpha = float(np.linalg.norm(theta)) / model.slope * 1.5
    plus, minus = np.ones(model.n), -np.ones(model.n)
    L_plus = np.array([model.value(theta, alpha, np.where(np.arange(model.n) == i, 1.0, 0.0))
                       - model.value(theta, alpha, np.zeros(model.n)) for i in range(model.n)])
    best = np.where(L_plus > 0, plus, minus)
    assert model.primal(theta, alpha) == pytest.approx(model.value(theta, alpha, best), rel=1e-12)
    for _ in range(5):
        assert model.value(theta, alpha, rng.uniform(-1, 1, model.n)) <= model.primal(theta, alpha) + 1e-12
    low = np.where(model.pos, -0.8, 0.0)                          # alpha's coefficient in L(., ., gamma) > 0
    high = np.where(model.pos, np.clip(rng.normal(size=model.n), -1, 1), 0.0)     # ... and < 0
    for gamma, sign in ((low, 1.0), (high, -1.0)):
        assert np.sign(model.alpha_coefficient(gamma)) == sign      # the inner minimum's two cases for alpha (E3)
        cert = prob.evaluate(w=theta, alpha=alpha, gamma=gamma).certificate

        def objective(u, gamma=gamma):
            return model.value(u[:-1], u[-1], gamma)
        cons = [{"type": "ineq", "fun": lambda u: model.slope * u[-1] - np.linalg.norm(u[:-1])},
                {"type": "ineq", "fun": lambda u: model.alpha_max - u[-1]}]
        best_scipy = np.inf
        for start in range(4):
            u0 = np.concatenate([0.1 * rng.normal(size=model.p), [0.5 * model.alpha_max]])
            r = minimize(objective, u0, method="SLSQP", constraints=cons, options={"ftol": 1e-12, "maxiter": 500})
            if r.success:
                best_scipy = min(best_scipy, r.fun)
        assert cert["primal"] == pytest.approx(model.primal(theta, alpha), rel=1e-12)
        assert cert["dual"] == pytest.approx(best_scipy, abs=1e-5)
        assert cert["dual"] <= best_scipy + 1e-7
        assert cert["duality_gap"] == pytest.approx(cert["primal"] - best_scipy, abs=1e-5)
        assert cert["duality_gap"] > 1e-2
    assert C_LABEL == 0.5


def test_saddle_problem_gap_of_a_bilinear_game():
    """L(x, y) = x'Ay on unit balls: max_y = ||A'x||, min_x = -||Ay|| (Cauchy-Schwarz), so the gap of (x, y) is
    ||A'x|| + ||Ay||; the judge computes both inner problems by CVXPY from cvxpy_value."""
    rng = np.random.default_rng(4)
    A = rng.normal(size=(3, 2))
    sp = fm.SaddleProblem(lambda x, y, i: float(x @ A @ y), 1, fm.Ball(3, 1.0), fm.Ball(2, 1.0),
                          cvxpy_value=lambda x, y: x @ A @ y)
    x, y = np.array([0.3, -0.5, 0.2]), np.array([0.6, 0.1])
    ev = sp.evaluate(x, y)
    assert ev.certificate["saddle_value"] == pytest.approx(x @ A @ y, rel=1e-12)
    assert ev.certificate["primal"] == pytest.approx(np.linalg.norm(A.T @ x), abs=1e-6)
    assert ev.certificate["dual"] == pytest.approx(-np.linalg.norm(A @ y), abs=1e-6)
    assert ev.certificate["duality_gap"] == pytest.approx(np.linalg.norm(A.T @ x) + np.linalg.norm(A @ y), abs=1e-6)
    assert ev.objective == pytest.approx(np.linalg.norm(A.T @ x), abs=1e-6)


def test_built_in_saddle_problems_gaps_at_non_optimal_points():
    """The closed forms behind the built-in games' duality gaps, at points far from the saddle point: the quadratic
    game (G1) against CVXPY programs written here (max over the box of a concave quadratic in y, min over the ball of
    a convex quadratic in x), the matrix game (G2) against the best vertex of each simplex."""
    import cvxpy as cp
    rng = np.random.default_rng(5)
    n, q, d, m, mu, rho = 4, 3, 3, 2, 0.1, 2.0
    A, b = rng.normal(size=(n, q, d)), rng.normal(size=(n, q))
    B, e = rng.normal(size=(n, m, d)), rng.normal(size=(n, m))
    sp = fm.SaddleProblem.quadratic(A, b, B, e, mu=mu, rho=rho)
    x, yv = np.array([1.2, -0.5, 0.3]), np.array([0.9, -0.2])
    s = B.mean(axis=0) @ x - e.mean(axis=0)
    assert np.abs(s).max() > mu > np.abs(s).min()       # both branches of the closed-form max over y (Huber)

    def L(xx, yy):
        return sum(0.5 * cp.sum_squares(A[i] @ xx - b[i]) + yy @ (B[i] @ xx - e[i]) - mu / 2 * cp.sum_squares(yy)
                   for i in range(n)) / n
    y_var, x_var = cp.Variable(m), cp.Variable(d)
    primal = cp.Problem(cp.Maximize(L(x, y_var)), [cp.abs(y_var) <= 1]).solve(solver=SOLVER)
    dual = cp.Problem(cp.Minimize(L(x_var, yv)), [cp.norm(x_var) <= rho]).solve(solver=SOLVER)
    cert = sp.evaluate(x, yv).certificate
    assert cert["saddle_value"] == pytest.approx(np.mean([sp.value_fn(x, yv, i) for i in range(n)]), rel=1e-12)
    assert cert["primal"] == pytest.approx(primal, abs=1e-7)
    assert cert["dual"] == pytest.approx(dual, abs=1e-7)
    assert cert["duality_gap"] == pytest.approx(primal - dual, abs=1e-6) and primal - dual > 0.1
    G = rng.normal(size=(5, 3, 4))
    game = fm.SaddleProblem.matrix_game(G)
    xs, ys = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(4))
    Gbar = G.mean(axis=0)
    best_y = max(xs @ Gbar @ v for v in np.eye(4))
    best_x = min(u @ Gbar @ ys for u in np.eye(3))
    cert = game.evaluate(xs, ys).certificate
    assert cert["duality_gap"] == pytest.approx(best_y - best_x, rel=1e-12) and best_y - best_x > 0.05


def test_exact_mero_and_offset_group_dro_against_hand_written_programs(gdro_instance):
    """The exact methods (epigraph program and certified dual method) of MERO, min max_g (R_g - R*_g), and of group
    DRO with constant offsets c, min max_g (R_g - c_g), against CVXPY programs written here (R*_g each by its own
    program)."""
    data, w, risks = gdro_instance
    X, y, codes = data.X, data.y, data.groups.codes
    star = []
    for g in range(3):
        t = cp.Variable(5)
        star.append(cp.Problem(cp.Minimize(_logistic_risks(X, y, codes, 3, t)[g]),
                               [cp.norm(t) <= 3.0]).solve(solver=SOLVER))
    c = np.array([0.05, -0.1, 0.2])
    for offsets, expr in ((np.array(star), risks - fm.group_optimal(risks)), (c, risks - c)):
        theta = cp.Variable(5)
        opt = cp.Problem(cp.Minimize(cp.max(cp.hstack(_logistic_risks(X, y, codes, 3, theta)) - offsets)),
                         [cp.norm(theta) <= 3.0]).solve(solver=SOLVER)
        prob = fm.Problem(fm.Minimize(fm.max(expr)))
        for method in ("epigraph", "dual"):
            res = prob.solve("exact", method=method)
            assert res.objective == pytest.approx(opt, abs=1e-6), method


# ---------------------------------------------------------------------------------------------------------------
# A certificate that contradicts itself (a lower bound above the value it bounds: a negative gap) is never ok
# ---------------------------------------------------------------------------------------------------------------
def _wrong_closed_forms():
    """A matrix game whose user-given closed forms are wrong: max_y= says -100, min_x= says 100 (gap -200)."""
    good = fm.SaddleProblem.matrix_game(np.random.default_rng(0).standard_normal((20, 3, 3)))
    return fm.SaddleProblem(good.value_fn, 20, fm.Simplex(3), fm.Simplex(3), grad=good.grad_fn,
                            max_y=lambda x: -100.0, min_x=lambda y: 100.0)


def test_a_negative_duality_gap_from_wrong_closed_forms_is_not_ok():
    """The reported case: the run said 'completed', ok, with a duality gap of -200. Each inner solution is checked
    against L(x, y) itself, so the failed check names the closed form that is wrong; the run stops at its first
    checkpoint (no iteration repairs a wrong closed form)."""
    sp = _wrong_closed_forms()
    for options in ({}, {"stop": "budget", "epochs": 50}):
        res = sp.solve(seed=0, **options)
        assert res.certificate["duality_gap"] == pytest.approx(-200.0)
        assert not res.ok and res.status == "inaccurate"
        failed = [c["name"] for c in res.failed_checks()]
        assert failed == ["L(x, y) - max_y L(x, .) (a lower bound above the value it bounds)",
                          "min_x L(., y) - L(x, y) (a lower bound above the value it bounds)"]
        assert "What to fix" in res.message and "max_y=" in res.message
    assert res.metrics["epochs_run"] == 50
    assert sp.solve(seed=0).metrics["epochs_run"] < 1000                   # stopped at the first checkpoint
    exact = fm.SaddleProblem.matrix_game(np.random.default_rng(0).standard_normal((20, 3, 3)))
    exact.min_x = lambda y: 100.0                                          # the exact backend's judge, too
    res = exact.solve(method="exact")
    assert not res.ok and [c["name"] for c in res.failed_checks()][-1].startswith("min_x L(., y) - L(x, y)")


def test_the_rounding_tolerance_of_a_lower_bound():
    """bound_order passes a lower bound above its value by rounding (1e-6 relative to max(1, |values|)), fails one
    beyond, and is not computed (NaN) when a side is missing; an unbounded side passes."""
    from fairmodel.families.base import ROUNDING, bound_order
    assert bound_order("l", 1e3 + 0.5 * ROUNDING * 1e3, "u", 1e3).passed
    assert not bound_order("l", 1e3 + 2 * ROUNDING * 1e3, "u", 1e3).passed
    assert bound_order("l", 1.0 + 0.5 * ROUNDING, "u", 1.0).passed and not bound_order("l", 100.0, "u", -100.0).passed
    assert not bound_order("l", np.nan, "u", 1.0).computed and bound_order("l", -np.inf, "u", 1.0).passed


def test_a_family_certificate_whose_lower_bound_exceeds_the_objective_fails(gdro_instance):
    """Group DRO: a certificate with its lower bound above the judged objective (a negative gap) makes the result
    inaccurate, whatever the gap's own check says."""
    from fairmodel.results.judge import verdict
    data, w, risks = gdro_instance
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    evaluation = prob.evaluate(w=w.project(np.ones(5)), q=np.ones(3) / 3)
    evaluation.certificate.update(duality_gap=-1.0, duality_gap_bound=-1.0, lower_bound=evaluation.objective + 1.0)
    checks = prob.family.acceptance(evaluation, "stochastic")
    assert [c.name for c in checks if not c.passed] == ["lower bound - objective (a lower bound above the value it "
                                                        "bounds)"]
    status, message = verdict("completed", checks)
    assert status == "inaccurate" and "lower bound - objective" in message
