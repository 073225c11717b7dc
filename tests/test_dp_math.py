"""Exact identities of the DP post-processing dual (Chzhen, Hebiri, Taturyan, NeurIPS 2024), float64.

Every test builds a finite distribution (n atoms with non-uniform weights) where F, its gradient and the
primal quantities are exact finite sums, so identities hold to rounding (tolerances ~1e-10 relative).
"""
import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from fairmodel.oracles.dp_dual import DualProblem, gradient_mapping, policy_from_scores, policy_in_place, sigma2
from fairmodel.stochastic.dp_postprocessing import batch_gradient


def make_problem(n=200, K=3, L=5, beta=50.0, eps=(0.01, 0.02, 0.015), calibrated=False, seed=0, cost=False):
    rng = np.random.default_rng(seed)
    tau = rng.dirichlet(np.arange(1, K + 1), size=n)
    w = rng.random(n) + 0.5
    w /= w.sum()
    p = w @ tau if calibrated else rng.dirichlet(np.full(K, 5.0))
    T = 1.0 - tau / p
    grid = np.arange(-L, L + 1) / L
    eta = np.clip(rng.normal(0, 0.5, n), -1, 1)
    R = rng.random((n, 2 * L + 1)) if cost else (eta[:, None] - grid) ** 2
    return DualProblem(R, T, np.asarray(eps[:K]), beta, w), dict(tau=tau, p=p, eta=eta, grid=grid, w=w)


def random_z(dual, rng, scale=1.0):
    return scale * rng.exponential(size=dual.shape) * (rng.random(dual.shape) < 0.6)


@pytest.mark.parametrize("beta", [1.0, 50.0, 1e4])
def test_policy_is_a_probability_vector_without_overflow(beta):
    dual, _ = make_problem(beta=beta)
    rng = np.random.default_rng(1)
    for _ in range(5):
        P = dual.policy(random_z(dual, rng, scale=10.0))
        assert np.all(np.isfinite(P)) and P.min() >= 0
        np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
        # entries underflow to 0 at large beta; the entropy term stays finite (entr, not p log p)
        assert np.isfinite(dual.regularized_risk(P))


def test_policy_at_zero_is_softmax_of_negative_squared_distance():
    dual, d = make_problem(beta=30.0)
    expected = softmax(-30.0 * (d["eta"][:, None] - d["grid"]) ** 2, axis=1)
    np.testing.assert_allclose(dual.policy(dual.zeros()), expected, rtol=1e-12, atol=1e-15)


def test_policy_concentrates_on_nearest_grid_point_and_splits_ties():
    grid = np.array([-1.0, 0.0, 1.0])
    eta = np.array([0.2, -0.7, 0.5])  # nearest 0, -1, and a tie between 0 and 1
    a = -(eta[:, None] - grid) ** 2
    P = policy_from_scores(a, np.inf)
    np.testing.assert_array_equal(P, [[0, 1, 0], [1, 0, 0], [0, 0.5, 0.5]])
    np.testing.assert_allclose(policy_from_scores(a, 1e6)[2], [0, 0.5, 0.5], atol=1e-12)


@pytest.mark.parametrize("beta", [0.5, 50.0, 1e4])
def test_policy_kernel_equals_scipy_softmax_and_logsumexp_on_stacked_scores(beta):
    """The one policy kernel (eq. (7)) against scipy's softmax, on one point, a batch and a stack of batches (the
    stacked duals of an eps grid), in place; with row weights, sum_i w_i logsumexp(beta a_i) / beta (eq. (5))."""
    rng = np.random.default_rng(4)
    for shape in [(9,), (6, 9), (3, 6, 9)]:
        a = rng.normal(size=shape) * 3.0
        work = a.copy()
        assert policy_in_place(work, beta) is work
        np.testing.assert_allclose(work, softmax(beta * a, axis=-1), rtol=1e-12, atol=1e-300)
        np.testing.assert_array_equal(policy_from_scores(a, beta), work)
    w = rng.random(6)
    P, mean_lse = policy_in_place(a[0].copy(), beta, w)
    np.testing.assert_allclose(P, softmax(beta * a[0], axis=-1), rtol=1e-12, atol=1e-300)
    assert mean_lse == pytest.approx(w @ logsumexp(beta * a[0], axis=-1) / beta, rel=1e-12)


def test_policy_kernel_at_infinite_beta_is_the_max_and_the_even_arg_max():
    """beta = inf (the LP (3)): LSE is the row max and the policy splits ties evenly, the limits of finite beta."""
    a = np.array([[0.0, 2.0, 2.0, -1.0], [3.0, 1.0, 0.0, 3.0 - 1e-9]])
    w = np.array([0.25, 0.75])
    P, mean_max = policy_in_place(a.copy(), np.inf, w)
    np.testing.assert_array_equal(P, [[0, 0.5, 0.5, 0], [1, 0, 0, 0]])
    assert mean_max == 0.25 * 2.0 + 0.75 * 3.0
    _, near = policy_in_place(a.copy(), 1e12, w)
    assert near == pytest.approx(mean_max + 0.25 * np.log(2.0) / 1e12, rel=1e-12)


@pytest.mark.parametrize("cost", [False, True])
def test_gradient_matches_central_finite_differences(cost):
    dual, _ = make_problem(beta=20.0, cost=cost)
    rng = np.random.default_rng(2)
    z = random_z(dual, rng, 0.3) + 0.01  # interior point: the two-sided difference stays in z >= 0
    g = dual.grad(z)
    h = 1e-6
    fd = np.empty_like(z)
    for idx in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[idx] = h
        fd[idx] = (dual.value(z + e) - dual.value(z - e)) / (2 * h)
    np.testing.assert_allclose(fd, g, atol=1e-7)


def test_minibatch_gradient_is_unbiased_on_a_finite_distribution():
    dual, _ = make_problem()
    rng = np.random.default_rng(3)
    z = random_z(dual, rng)
    out = np.empty(dual.shape)
    full = batch_gradient(z, dual.T, dual.R, dual.beta, dual.eps, out, dual.w).copy()
    np.testing.assert_allclose(full, dual.grad(z), rtol=1e-12, atol=1e-14)
    # E_w[g(z; X)] over single points equals grad F exactly (eq. (11))
    singles = np.array([batch_gradient(z, dual.T[i], dual.R[i], dual.beta, dual.eps, np.empty(dual.shape)).copy()
                        for i in range(dual.n)])
    np.testing.assert_allclose(np.tensordot(dual.w, singles, axes=1), dual.grad(z), rtol=1e-10, atol=1e-13)


def test_unfairness_excess_equals_negative_part_of_gradient():
    """sum_(l,s) (U_s(pi_z, l) - eps_s)_+^2 = ||(-grad F(z))_+||^2 (Lemma 3.5 part I)."""
    dual, _ = make_problem()
    rng = np.random.default_rng(4)
    for _ in range(5):
        z = random_z(dual, rng, 0.5)
        P = dual.policy(z)
        lhs = np.sum(np.maximum(dual.unfairness(P) - dual.eps, 0.0) ** 2)
        assert lhs > 0  # the test is not vacuous: pi_z violates some constraints
        rhs = np.sum(np.maximum(-dual.grad(z), 0.0) ** 2)
        assert lhs == pytest.approx(rhs, rel=1e-10)


@pytest.mark.parametrize("cost", [False, True])
def test_identity_with_corrected_sign(cost):
    """R_beta(pi_z) + F(z) = +<z, grad F(z)> (Lemma 3.5 part II; the paper prints -)."""
    dual, _ = make_problem(cost=cost)
    rng = np.random.default_rng(5)
    for _ in range(5):
        z = random_z(dual, rng)
        value, grad = dual.value_and_grad(z)
        lhs = dual.regularized_risk(dual.policy(z)) + value
        inner = float(np.sum(z * grad))
        assert lhs == pytest.approx(inner, rel=1e-10, abs=1e-13)
        assert abs(inner) > 1e-3 and lhs != pytest.approx(-inner, rel=1e-3)  # the printed sign is wrong


def test_negative_gradient_part_is_below_gradient_mapping():
    """||(-grad F(z))_+|| <= ||G_alpha(z)|| for every alpha > 0, z >= 0 (eq. (19))."""
    dual, _ = make_problem()
    rng = np.random.default_rng(6)
    for _ in range(10):
        z = random_z(dual, rng)
        g = dual.grad(z)
        neg = np.linalg.norm(np.maximum(-g, 0.0))
        for alpha in (1e-6, 1.0 / dual.smoothness(), 1.0, 1e3):
            assert neg <= np.linalg.norm(gradient_mapping(z, g, alpha)) + 1e-15
    z = dual.zeros()  # at z = 0 the mapping is min(0, grad)
    np.testing.assert_array_equal(gradient_mapping(z, dual.grad(z), 0.1), np.minimum(0.0, dual.grad(z)))


def test_two_groups_constraints_are_linearly_dependent():
    """sum_s p_s t_s(x) = 0 for every x, so p_1 E[pi t_1] + p_2 E[pi t_2] = 0 and U_2 = (p_1/p_2) U_1."""
    dual, d = make_problem(K=2, eps=(0.01, 0.01))
    P = dual.policy(random_z(dual, np.random.default_rng(7)))
    E = dual.moments(P)
    np.testing.assert_allclose(E @ d["p"], 0.0, atol=1e-15)
    np.testing.assert_allclose(dual.unfairness(P)[:, 1], d["p"][0] / d["p"][1] * dual.unfairness(P)[:, 0],
                               rtol=1e-10, atol=1e-16)


def test_plugin_variance_and_bhatia_davis():
    """E_w ||t_hat||^2 = sum_s E (p_s - tau_s)^2 / p_s^2; with calibrated p it is <= sigma^2 and E t_hat = 0."""
    for calibrated in (False, True):
        dual, d = make_problem(calibrated=calibrated)
        expected = np.sum(d["w"] @ ((d["p"] - d["tau"]) ** 2) / d["p"] ** 2)
        assert dual.sigma2_plugin() == pytest.approx(expected, rel=1e-12)
    assert dual.sigma2_plugin() <= sigma2(d["p"])
    np.testing.assert_allclose(dual.mean_t(), 0.0, atol=1e-14)


def test_invariances_of_the_policy():
    """pi_(Lambda + C, V + C) = pi_(Lambda, V) and F moves by 2 sum_l <c_l, eps>; D_l -> D_l + c_l p."""
    dual, d = make_problem()
    rng = np.random.default_rng(8)
    z = random_z(dual, rng)
    C = rng.exponential(size=dual.shape[1:])
    shifted = z + C
    np.testing.assert_allclose(dual.policy(shifted), dual.policy(z), rtol=1e-10, atol=1e-14)
    assert dual.value(shifted) - dual.value(z) == pytest.approx(2 * np.sum(C * dual.eps), rel=1e-10)
    c = rng.normal(size=dual.m)
    moved = z.copy()
    moved[0] += np.outer(np.maximum(c, 0), d["p"])
    moved[1] += np.outer(np.maximum(-c, 0), d["p"])
    np.testing.assert_allclose(dual.policy(moved), dual.policy(z), rtol=1e-9, atol=1e-13)


def test_gradient_is_lipschitz_with_the_plugin_constant():
    """||grad F(z) - grad F(z')|| <= 2 beta E_w||t_hat||^2 ||z - z'|| (Lemma 3.4 with the plug-in sigma_hat^2)."""
    dual, _ = make_problem(beta=80.0)
    rng = np.random.default_rng(9)
    M = dual.smoothness()
    ratios = []
    for _ in range(30):
        z1, z2 = random_z(dual, rng, 0.2), random_z(dual, rng, 0.2)
        ratios.append(np.linalg.norm(dual.grad(z1) - dual.grad(z2)) / np.linalg.norm(z1 - z2))
    assert max(ratios) <= M


def test_gradient_variance_constant_is_two_sigma2_not_sigma2():
    """E||g - grad F||^2 <= 2 E||t_hat||^2 (Lemma 4.1 counts one block and prints sigma^2). With pi concentrated
    on one atom for every x the bound is attained, so the printed constant sigma^2 is exceeded."""
    dual, d = make_problem(calibrated=True, beta=1e3)
    dual.R[:] = (0.4 - d["grid"]) ** 2  # eta = a grid point for every x: pi_0 is the same point mass
    z = dual.zeros()
    mean = dual.grad(z)
    singles = np.array([batch_gradient(z, dual.T[i], dual.R[i], dual.beta, dual.eps, np.empty(dual.shape)).copy()
                        for i in range(dual.n)])
    variance = float(dual.w @ np.sum((singles - mean) ** 2, axis=(1, 2, 3)))
    assert variance == pytest.approx(2 * dual.sigma2_plugin(), rel=1e-9)
    assert variance > dual.sigma2_plugin()
    dual2, _ = make_problem(calibrated=True)
    z = random_z(dual2, np.random.default_rng(10))
    singles = np.array([batch_gradient(z, dual2.T[i], dual2.R[i], dual2.beta, dual2.eps, np.empty(dual2.shape)).copy()
                        for i in range(dual2.n)])
    var2 = float(dual2.w @ np.sum((singles - dual2.grad(z)) ** 2, axis=(1, 2, 3)))
    assert var2 <= 2 * dual2.sigma2_plugin()


def test_feasibility_margin():
    dual, _ = make_problem(calibrated=True)
    np.testing.assert_allclose(dual.feasibility_margins(), dual.m * dual.eps, atol=1e-13)
    dual2, _ = make_problem(calibrated=False)
    np.testing.assert_allclose(dual2.feasibility_margins(), dual2.m * dual2.eps - np.abs(dual2.w @ dual2.T))
