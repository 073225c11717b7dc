"""``fm.dp_gap(post, pairwise=True) <= eps`` for K >= 2 groups: the largest pairwise gap
max_l (max_s q_sl - min_s q_sl), q_sl = P(pi = y_l | S = s), bounded by eps (DP post-processing of Chzhen, Hebiri,
Taturyan 2024).

The library solves the paper's problem in the pair columns t_a - t_b. The tests compare it with independent
formulations written here: the problem with a free center c_l per grid point, |q_sl - c_l| <= eps / 2 for every s,
as an LP (beta = inf) and as the dual of the entropic problem (4), min over D with rows summing to zero of
E[LSE_beta(<D_l, t(X)> - r_l(X))] + (eps / 2) ||D||_1, whose policy is softmax(beta (<D_l, t(x)> - r_l(x)))
(eq. (7) with the zero-sum D). Values agree to 1e-6 (the solvers' tolerance, the family's exact check), policies to
1e-4 (beta amplifies the dual's error). For two groups the constraint is U_s <= (1 - p_s) eps, the per-group
bounds vs the population."""
import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm

EPS = 0.05


def _data(K, n=100, seed=0):
    rng = np.random.default_rng(seed)
    tau = rng.dirichlet(np.full(K, 2.0), size=n)
    eta = rng.normal(size=n) + 2.0 * tau[:, 0] - tau[:, 1]
    return np.clip(eta, -3.0, 3.0), tau


def _problem(K, n=100, seed=0, entropy=0.0, pairwise=True, eps=EPS):
    eta, tau = _data(K, n, seed)
    post = fm.GridPredictor(eta=eta, tau=tau, L=3, B=3.0, clip=True)
    return fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post, pairwise=pairwise) <= eps],
                      entropy=entropy), eta, tau


def _costs(eta):
    grid = np.linspace(-3.0, 3.0, 7)
    return (eta[:, None] - grid[None, :]) ** 2


def _rates(P, tau, p):
    """q (m, K): q_ls = P(pi = y_l | S = s) = mean(P_l tau_s) / p_s, the plug-in of eq. (15)."""
    return (P.T @ tau) / P.shape[0] / p


def _largest_pairwise(P, tau, p):
    q = _rates(P, tau, p)
    return float(np.max(q.max(axis=1) - q.min(axis=1)))


def _center_lp(eta, tau, p, eps):
    """min R(P) s.t. |q_ls - c_l| <= eps / 2 for all l, s, with a free center c_l (two one-sided inequalities)."""
    R = _costs(eta)
    n, m = R.shape
    P, c = cp.Variable((n, m), nonneg=True), cp.Variable(m)
    q = P.T @ (tau / (n * p))
    center = cp.reshape(c, (m, 1), order="C")
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(R, P)) / n),
                         [cp.sum(P, axis=1) == 1, q - center <= eps / 2, center - q <= eps / 2])
    problem.solve(solver="CLARABEL")
    return problem.value


@pytest.mark.parametrize("K", [3, 4])
def test_the_lp_equals_an_independent_program_with_centers(K):
    prob, eta, tau = _problem(K, seed=K)
    r = prob.solve(method="lp", solver="HIGHS")
    p = np.asarray(r.metrics["p"])
    assert r.ok and r.metrics["dp_gap_comparison"] == "largest pairwise"
    assert r.objective == pytest.approx(_center_lp(eta, tau, p, EPS), abs=1e-6)
    (name, record), = r.constraints.items()
    gap = _largest_pairwise(np.asarray(r.variables["P"]), tau, p)
    assert "largest pairwise" in name and record["bound"] == EPS
    assert record["value"] == pytest.approx(gap, abs=1e-9)
    assert gap <= EPS + 1e-7 and gap >= EPS - 1e-6       # it binds (the unconstrained policy is less fair)
    assert len(r.metrics["dp_gap"]) == K * (K - 1) // 2 and "0 vs 1" in r.metrics["dp_gap"]
    # the same optimum from the dual LP: the policy read from its constraint duals
    assert prob.solve(method="dual_lp").objective == pytest.approx(r.objective, abs=1e-6)


def test_the_entropic_optimum_and_policy_equal_the_zero_sum_center_dual():
    K, beta = 3, 50.0
    prob, eta, tau = _problem(K, seed=7, entropy=1 / beta)
    r = prob.solve(method="lbfgs")
    assert r.ok
    p = np.asarray(r.metrics["p"])
    T = 1.0 - tau / p
    R = _costs(eta)
    n, m = R.shape
    D = cp.Variable((m, K))
    scores = T @ D.T - R
    dual = cp.Problem(cp.Minimize(cp.sum(cp.log_sum_exp(beta * scores, axis=1)) / (n * beta)
                                  + EPS / 2 * cp.sum(cp.abs(D))), [cp.sum(D, axis=1) == 0])
    dual.solve(solver="CLARABEL")
    assert -dual.value == pytest.approx(r.objective, abs=1e-6)   # strong duality (17) with R_beta* = -F*
    a = beta * (T @ D.value.T - R)
    center_policy = np.exp(a - a.max(axis=1, keepdims=True))
    center_policy /= center_policy.sum(axis=1, keepdims=True)
    fitted = r.predictor().predict_proba(eta=eta, tau=tau)
    assert np.abs(fitted - center_policy).max() < 1e-4
    assert np.abs(r.predictor().D.sum(axis=1)).max() < 1e-12   # the duals act on t as zero-sum rows D_pair C^T
    assert _largest_pairwise(fitted, tau, p) <= EPS + 1e-6
    # the CVXPY programs of the same problem agree with L-BFGS-B
    assert prob.solve(method="primal").objective == pytest.approx(r.objective, abs=1e-6)


@pytest.mark.parametrize("entropy", [0.0, 0.02])
def test_two_groups_equal_the_per_group_bounds_vs_the_population(entropy):
    pair, eta, tau = _problem(2, seed=3, entropy=entropy)
    r = pair.solve()
    p = np.asarray(r.metrics["p"])
    post = fm.GridPredictor(eta=eta, tau=tau, L=3, B=3.0, clip=True)
    per_group = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= EPS * (1 - p)], entropy=entropy)
    s = per_group.solve()
    assert r.ok and s.ok
    assert r.objective == pytest.approx(s.objective, abs=1e-7)
    if entropy == 0:      # the LP's policy (its optimum need not be unique: compare values only)
        P_pair = np.asarray(r.variables["P"])
    else:                 # the entropic optimum is unique: the policies of eq. (7) agree
        P_pair, P_group = (x.predictor().predict_proba(eta=eta, tau=tau) for x in (r, s))
        assert np.abs(P_pair - P_group).max() < 1e-4
    (_, record), = r.constraints.items()
    assert record["value"] == pytest.approx(_largest_pairwise(P_pair, tau, p), abs=1e-7)


def test_the_judge_fails_a_planted_policy_whose_pairwise_gap_exceeds_eps():
    K = 3
    prob, eta, tau = _problem(K, seed=11)
    population, _, _ = _problem(K, seed=11, pairwise=False)
    planted = population.solve(method="lp", solver="HIGHS")       # each group within eps of the population
    assert planted.ok
    P = np.asarray(planted.variables["P"])
    p = np.asarray(planted.metrics["p"])
    gap = _largest_pairwise(P, tau, p)
    assert gap > EPS + 1e-3                                      # but two groups 2 eps apart
    evaluation = prob.evaluate(P=P)
    (name, record), = evaluation.constraints.items()
    assert record["value"] == pytest.approx(gap, abs=1e-9)
    assert record["violation"] == pytest.approx(gap - EPS, abs=1e-9)
    failing = [c for c in prob.family.acceptance(evaluation, "exact") if not c.passed]
    assert [c.name for c in failing] == [f"violation of {name}"]
    # a policy that meets it passes the same checks
    fair = prob.solve(method="lp", solver="HIGHS")
    assert all(c.passed for c in prob.family.acceptance(prob.evaluate(P=np.asarray(fair.variables["P"])), "exact"))


def test_the_stochastic_result_crosschecks_with_the_exact_one_for_three_groups():
    prob, eta, tau = _problem(3, n=300, seed=5, entropy=0.02)
    report = fm.crosscheck(prob, seed=0)
    assert report.exact.ok and report.stochastic.ok and report.ok
    (_, record), = report.stochastic.constraints.items()
    P = report.stochastic.predictor().predict_proba(eta=eta, tau=tau)
    assert record["value"] == pytest.approx(_largest_pairwise(P, tau, np.asarray(report.stochastic.metrics["p"])),
                                            abs=1e-9)


def test_the_estimator_bounds_the_largest_pairwise_gap_of_three_groups():
    from sklearn.linear_model import LinearRegression, LogisticRegression

    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    s = np.digitize(X[:, 0] + 0.5 * rng.normal(size=300), [-0.5, 0.5])      # three groups tied to the features
    y = X @ np.array([1.0, 0.5, -0.3]) + 0.2 * rng.normal(size=300)
    reg, clf = LinearRegression().fit(X, y), LogisticRegression().fit(X, s)
    est = fm.DemographicParityPostProcessor(reg, clf, eps=0.05, pairwise=True, L=4, beta=50).fit(X)
    assert est.status_ == "optimal" and est.result_.ok
    P, tau = est.predict_proba(X), clf.predict_proba(X)
    gap = _largest_pairwise(P, tau, tau.mean(axis=0))                        # p calibrated on the points
    (_, record), = est.result_.constraints.items()
    assert record["value"] == pytest.approx(gap, abs=1e-9) and gap <= 0.05 + 1e-6
    unconstrained = fm.DemographicParityPostProcessor(reg, clf, eps=1.0, pairwise=True, L=4, beta=50).fit(X)
    assert _largest_pairwise(unconstrained.predict_proba(X), tau, tau.mean(axis=0)) > 0.05 + 1e-2   # it binds


def test_the_pairwise_variance_constant_bounds_the_pair_columns_and_is_attained_by_one_hot_tau():
    """sigma^2 = (K - 1) sum_s 1 / p_s bounds E||t C||^2 (Lemma 3.4's constant in the pair columns) when p is
    calibrated; with one-hot tau (S known from X) E[tau_s^2] = p_s and E[tau_a tau_b] = 0, so it is attained."""
    from fairmodel.oracles.dp_dual import pair_contrasts, sigma2

    rng = np.random.default_rng(2)
    for K in (2, 3, 5):
        for tau in (rng.dirichlet(np.full(K, 0.7), size=500), np.eye(K)[rng.integers(0, K, size=500)]):
            p = tau.mean(axis=0)
            TC = (1.0 - tau / p) @ pair_contrasts(K)
            plugin = float(np.mean(np.sum(TC ** 2, axis=1)))
            assert plugin <= sigma2(p, pairwise=True) * (1 + 1e-12)
        assert plugin == pytest.approx(sigma2(p, pairwise=True), rel=1e-12)      # the one-hot tau, last
