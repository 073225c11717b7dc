"""SMD with the new Bregman divergence, SFLS and IQRC (Algorithms 1-3, Lemmas 3-4 of Yao, Lin,
Yang, AISTATS 2023), and invalid options."""
import itertools
import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize

import fairmodel as fm
from fairmodel.errors import OptionError
from fairmodel.oracles.pairs import PairRisks
from fairmodel.stochastic.bregman_smd import bregman_divergence, smd, upper_bound, y_prox
from fairmodel.stochastic.iqrc import iqrc
from fairmodel.stochastic.sfls import sfls

from .auc_reference import level_set_value, reference

F_STAR = reference().f_star   # by a CVXPY program written over the explicit pairs (tests/auc_reference.py)


def reference_problem(kappa=0.05, model="linear", **atom):
    data = fm.datasets.make_auc_synthetic()
    w = fm.Weights(5, radius=3.0) if model == "linear" else fm.SigmoidMLP(5, hidden=10, radius=20.0)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.auc_loss(s, data.y, **atom)),
                      [fm.auc_gap(s, data, kind="intra", **atom) <= kappa])


BLOCK = np.array([0, 1, 1, 2, 2])
BLOCK_SUM = np.eye(3)[:, BLOCK]


def prox_objective(yt, at, u, v, tau, C, q, yt_prev, al_prev):
    """Objective of (29) in the scaled variables (y~, alpha~), written out with NumPy."""
    kl = np.sum(yt * np.log(yt / yt_prev))
    breg = C * kl + np.sum((at - al_prev * yt[BLOCK]) ** 2 / yt[BLOCK])
    return -u @ yt - v @ at + breg / tau + np.sum(q * at ** 2 / yt[BLOCK])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lemma3_prox_closed_form_attains_the_minimum(seed):
    rng = np.random.default_rng(seed)
    I, C, tau = 2.0, 2 * (1 + np.sqrt(2) * 2.0) ** 2, rng.uniform(0.5, 40)
    q = np.array([0.5, 0.5, 0.5, 1.0, 1.0])
    u, v = rng.normal(size=3) * 3, rng.normal(size=5) * 4
    yt_prev = rng.dirichlet(np.ones(3))
    al_prev = rng.uniform(-I, I, size=5)
    logy, alpha = y_prox(np.log(yt_prev), al_prev, u, v, tau, C, q, I, BLOCK_SUM)
    yt = np.exp(logy)
    at = yt[BLOCK] * alpha
    assert yt.sum() == pytest.approx(1.0, abs=1e-14) and np.all(np.abs(alpha) <= I)        # stays in Y
    best = prox_objective(yt, at, u, v, tau, C, q, yt_prev, al_prev)
    # generic convex solve (CVXPY: kl_div and quad_over_lin terms, the box written as lo y~_k <= alpha~_i <= hi y~_k)
    Y, A = cp.Variable(3, nonneg=True), cp.Variable(5)
    terms = [cp.quad_over_lin(A[i] - al_prev[i] * Y[BLOCK[i]], Y[BLOCK[i]])
             + tau * q[i] * cp.quad_over_lin(A[i], Y[BLOCK[i]]) for i in range(5)]
    obj = -u @ Y - v @ A + (C * cp.sum(cp.kl_div(Y, yt_prev)) + cp.sum(cp.hstack(terms))) / tau
    cons = [cp.sum(Y) == 1] + [cp.abs(A[i]) <= I * Y[BLOCK[i]] for i in range(5)]
    cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL")
    Yf = Y.value / Y.value.sum()          # the solver's point is feasible only to ~1e-8: map it back into Y
    Af = np.clip(A.value / Y.value[BLOCK], -I, I) * Yf[BLOCK]
    assert best <= prox_objective(Yf, Af, u, v, tau, C, q, yt_prev, al_prev) + 1e-8
    # multi-start local solves in (softmax logits, alpha): the problem is convex in (y~, alpha~), so every start
    # must end at the closed form's value (to 1e-8)
    for start in range(4):
        z0 = np.random.default_rng(100 + start).normal(size=8)

        def f(z):
            yy = np.exp(z[:3] - z[:3].max())
            yy /= yy.sum()
            return prox_objective(yy, yy[BLOCK] * np.clip(z[3:], -I, I), u, v, tau, C, q, yt_prev, al_prev)
        res = minimize(f, z0, method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 40000,
                                                             "maxfev": 40000})
        res = minimize(f, res.x, method="BFGS", options={"gtol": 1e-12})
        assert res.fun >= best - 1e-8


def test_lemma4_upper_bound_equals_brute_force():
    rng = np.random.default_rng(3)
    I, q = 1.5, np.full(5, 0.5)
    u, v = rng.normal(size=3), rng.normal(size=5) * 3
    U = upper_bound(u, v, q, I, BLOCK_SUM)
    grid = np.linspace(-I, I, 30001)
    per_alpha = np.array([np.max(grid * vi - qi * grid ** 2) for vi, qi in zip(v, q)])
    brute = max(u[k] + per_alpha[BLOCK == k].sum() for k in range(3))    # vertices of the simplex x alpha grid
    assert U == pytest.approx(brute, abs=1e-7)
    assert U >= u.mean() - 1e-15          # >= the objective of (48) at y(0) = (1/3, 1/3, 1/3), alpha~ = 0
    # the (26) ordering of G flips the sign of alpha_1..alpha_4 only: U is unchanged for a symmetric I
    flipped = v * np.array([1, -1, -1, -1, -1])
    assert upper_bound(u, flipped, q, I, BLOCK_SUM) == pytest.approx(U, abs=1e-15)


def test_bregman_divergence_properties():
    rng = np.random.default_rng(4)
    for I in (0.5, 1.0, 3.0, 10.0):
        C = 2 * (1 + np.sqrt(2) * I) ** 2
        ratios = []
        for _ in range(300):
            y1 = (rng.dirichlet(np.ones(3) * 0.5), rng.uniform(-I, I, 5))
            y2 = (rng.dirichlet(np.ones(3) * 0.5), rng.uniform(-I, I, 5))
            V = bregman_divergence(y1, y2, C, BLOCK)
            assert bregman_divergence(y1, y1, C, BLOCK) == pytest.approx(0.0, abs=1e-12)
            # V = omega(y) - omega(y') - <grad omega(y'), y - y'> in the scaled variables (y~, alpha~)
            def omega(y):
                yt, al = y
                return C * (np.sum(yt * np.log(yt)) + np.log(3)) + np.sum(yt[BLOCK] * al ** 2)
            yt1, a1 = y1[0], y1[0][BLOCK] * y1[1]
            yt2, a2 = y2[0], y2[0][BLOCK] * y2[1]
            grad_y = C * (np.log(yt2) + 1) - BLOCK_SUM @ (y2[1] ** 2)
            grad_a = 2 * y2[1]
            direct = omega(y1) - omega(y2) - grad_y @ (yt1 - yt2) - grad_a @ (a1 - a2)
            assert V == pytest.approx(direct, rel=1e-9, abs=1e-9)
            norm2 = np.sum(np.abs(yt1 - yt2)) ** 2 + np.sum((a1 - a2) ** 2)
            ratios.append(V / (0.5 * norm2))
        assert min(ratios) >= 1.0          # 1-strong convexity w.r.t. ||.||_{1,2} (a numerical check found >= 2)


def phi_and_grad(saddle, x, ytil, alpha, rows, r):
    d = x.size - 2 * saddle.P
    g, u, v = saddle.gradients(x[:d], x[d:], ytil, alpha, rows, saddle.shift(r))
    return ytil @ u + (ytil[saddle.pairs.block] * alpha) @ v, g, u, v


@pytest.mark.parametrize("model", ["linear", "mlp"])
def test_stochastic_gradients_match_finite_differences_and_the_closed_form(model):
    prob = reference_problem(model=model)
    fam = prob.family
    saddle = fam.saddle()
    rng = np.random.default_rng(5)
    theta = fam.model.initial(rng) + 0.3 * rng.normal(size=fam.w.size) / np.sqrt(fam.w.size)
    x = np.concatenate([theta, rng.normal(size=10) * 0.2])
    ytil, alpha = rng.dirichlet(np.ones(3)), rng.normal(size=5) * 0.1
    for rows in (rng.integers(0, 400, size=37), np.arange(400)):
        value, g, _, _ = phi_and_grad(saddle, x, ytil, alpha, rows, 0.4)
        num = np.zeros_like(x)
        for j in range(x.size):
            e = np.zeros_like(x)
            e[j] = 1e-6
            num[j] = (phi_and_grad(saddle, x + e, ytil, alpha, rows, 0.4)[0]
                      - phi_and_grad(saddle, x - e, ytil, alpha, rows, 0.4)[0]) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-7)
    # full batch: E[F_i] and E[G_i] are the closed forms at the given a, b (p_G = frequencies)
    _, _, u, v = phi_and_grad(saddle, x, ytil, alpha, np.arange(400), 0.4)
    h = saddle.model.forward(theta, saddle.X)[0]        # the saddle's design (centered for a linear score)
    t = fam.pairs.terms(h)
    c1, c2, a, b = 0.5, 1.0, x[-10:-5], x[-5:]
    EF = c1 * c2 ** 2 - 2 * c1 * c2 * t["delta"] + c1 * (t["variances"][fam.pairs.first] + (t["m"] - a) ** 2) \
        + c1 * (t["variances"][fam.pairs.second] + (t["m_prime"] - b) ** 2)
    np.testing.assert_allclose(u + np.array([0.4, 1.05, 1.05]), BLOCK_SUM @ EF, atol=1e-12)
    np.testing.assert_allclose(v, 2 * c1 * t["delta"], atol=1e-12)


def test_network_backward_matches_finite_differences():
    net = fm.SigmoidMLP(4, hidden=3)
    rng = np.random.default_rng(6)
    X, theta, coef = rng.normal(size=(9, 4)), rng.normal(size=net.size), rng.normal(size=9)
    h, cache = net.forward(theta, X)
    g = net.backward(theta, cache, coef)
    num = np.array([(coef @ net.forward(theta + e, X)[0] - coef @ net.forward(theta - e, X)[0]) / 2e-6
                    for e in np.eye(net.size) * 1e-6])
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-9)
    assert np.all((h > 0) & (h < 1))


def test_sign_of_G_under_pair_swap():
    """Oracle 9: G_{G',G} = -G_{G,G'} per sample."""
    prob = reference_problem()
    fam = prob.family
    m = fam.pairs.masks
    swapped = PairRisks(m, fam.pairs.second, fam.pairs.first, fam.pairs.block, 0.5, 1.0, 0.5)
    from fairmodel.stochastic.bregman_smd import AUCSaddle
    s1 = fam.saddle()
    s2 = AUCSaddle(s1.model, swapped, fam.bounds, s1.I, s1.X)
    theta = np.array([0.3, -0.2, 0.1, 0.05, 0.0])
    for j in range(0, 400, 37):
        v1 = s1.gradients(theta, np.zeros(10), np.ones(3) / 3, np.zeros(5), [j], s1.shift(0.0))[2]
        v2 = s2.gradients(theta, np.zeros(10), np.ones(3) / 3, np.zeros(5), [j], s2.shift(0.0))[2]
        np.testing.assert_allclose(v1, -v2, atol=1e-14)


def test_smd_oracle_accuracy_at_a_fixed_level():
    """SMD as an oracle (make_auc_synthetic() data, r = 0.5, H(0.5) = -0.047307 by the hand-written epigraph program of
    tests/auc_reference.py): at T = 2e4, |U - H| < 10 % |H| and
    P(r, x_bar) - H < 1 % |H|. Measured with minibatches of 100 on seeds 0-2: U - H = 0.0043 and P - H = 0.0007
    at T = 8000, half of that at 2e4 (O(1/sqrt T)); the margins cover the seed-to-seed spread (~1e-4)."""
    prob = reference_problem()
    fam = prob.family
    saddle = fam.saddle()
    H = level_set_value(0.5)
    out = smd(saddle, 0.5, T=20000, eta0=0.5, tau0=0.5 * saddle.C, batch_size=100, rng=np.random.default_rng(0),
              radius=3.0)
    f = fam.block_values(out["x"][:5])
    P = max(f[0] - 0.5, f[1] - 1.05, f[2] - 1.05)
    assert abs(out["U"] - H) < 0.1 * abs(H)
    assert 0 <= P - H < 0.01 * abs(H)        # P >= H always (H is the minimum of P)


@pytest.mark.slow
def test_smd_oracle_error_shrinks_with_T():
    prob = reference_problem()
    saddle = prob.family.saddle()
    gaps = {}
    for T in (2000, 8000, 32000):
        gaps[T] = np.mean([smd(saddle, 0.5, T=T, eta0=0.5, tau0=0.5 * saddle.C, batch_size=100,
                               rng=np.random.default_rng(s), radius=3.0)["U"] - level_set_value(0.5)
                         for s in range(3)])
    assert gaps[8000] < 0.7 * gaps[2000] and gaps[32000] < 0.7 * gaps[8000]


def test_online_order_of_samples_is_valid():
    """Oracle 15: single samples in any order, including a long run from one set, give valid steps."""
    prob = reference_problem()
    fam = prob.family
    saddle = fam.saddle()
    order = np.argsort(~fam.pairs.masks[3])      # every point of G1 first, then the rest
    stream = (np.array([j]) for j in itertools.chain(order, order))
    out = smd(saddle, 0.5, T=800, eta0=0.1, tau0=0.1 * saddle.C, batch_size=1, rng=None, radius=3.0, stream=stream)
    assert out["status"] == "completed" and np.isfinite(out["U"]) and np.all(np.isfinite(out["x"]))


def test_sfls_end_to_end_on_the_reference_problem():
    """Oracle 14 at a reduced budget (T = 2000 per call): f0 within 3 % of f*, feasible, w close to w*,
    a_i, b_i at the group means, alpha_i ~ Delta_i. Measured: f0 = 0.3322 (+1.7 %), cos = 0.9998."""
    prob = reference_problem()
    r = prob.solve("stochastic", seed=0, T=2000)
    exact = prob.solve("exact")
    w, ws = r.variables["w"], exact.variables["w"]
    assert r.status == "converged"
    assert F_STAR <= r.objective <= 1.03 * F_STAR
    assert r.max_violation == 0.0
    assert w @ ws / np.linalg.norm(w) / np.linalg.norm(ws) > 0.99
    t = prob.family.pairs.terms(prob.family.model.X @ w)
    np.testing.assert_allclose(r.variables["a"], t["m"], atol=1e-2)
    np.testing.assert_allclose(r.variables["b"], t["m_prime"], atol=1e-2)
    np.testing.assert_allclose(r.variables["alpha"], t["delta"], atol=2e-2)
    levels, T = r.history_column("level"), r.history_column("T")
    # r_k decreases monotonically, except where the halting rule doubled the SMD steps (the level is kept)
    assert np.all(np.diff(levels)[np.diff(T) == 0] < 0) and np.all(np.diff(levels) <= 0)
    assert r.certificate["suboptimality_bound"] <= r.objective - F_STAR + 1e-6
    short = [prob.solve("stochastic", seed=7, T=50, max_outer=3).variables["w"] for _ in range(2)]
    np.testing.assert_array_equal(short[0], short[1])           # same seed, same result


def test_sfls_steps_in_the_metric_of_badly_scaled_columns_and_certifies():
    """Columns on scales 1e-3 .. 1e3 (covariance eigenvalues about 1e12 apart): the Euclidean steps, eta = 1 / (2 c1
    mean ||x||^2) = 1e-6 set by the largest column, barely move the weights along the small columns (the optimum
    puts its largest weights there), and the level-set bracket stayed 17x above its tolerance until the run failed
    fast; in the metric of the design's covariance the judge's checks on the full data pass (the bracket's lower
    bound on f* included)."""
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((1000, 4))
    g = (rng.random(1000) < 0.3).astype(int)
    Z[:, 1] += 0.8 * g
    y = np.where(Z @ np.array([1.5, -1.0, 0.5, 0.0]) + 0.5 * g + rng.standard_normal(1000) > 0.8, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # the badly-scaled-features warning is the point here
        data = fm.Dataset(Z * 10.0 ** np.linspace(-3, 3, 4), y, groups=np.where(g == 1, "g1", "g0"))
    s = data.score(fm.Weights(4, radius=10.0))
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra") <= 0.05])
    assert prob.reduction("auc_fairness").coordinates() is not None
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.status == "converged", res.message


def rare_set_problem():
    """The inter-group preset where the positives of the protected group are 68 of 1,500 rows (4.5 %)."""
    rng = np.random.default_rng(3)
    g = rng.random(1500) < 0.3
    X = rng.standard_normal((1500, 4))
    X[:, 0] += 0.8 * g
    y = np.where(X @ np.array([1.0, -0.5, 0.5, 0.0]) - 1.5 * g + rng.standard_normal(1500) > 1.0, 1.0, -1.0)
    data = fm.Dataset(X, y, groups=np.where(g, "g1", "g0"))
    s = data.score(fm.Weights(4, radius=3.0))
    return fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)),
                      [fm.auc_gap(s, data, kind="inter", protected="g1") <= 0.05])


def test_stratified_minibatches_are_unbiased_and_reduce_the_variance_of_a_rare_set():
    """Drawing b_c rows per cell with weights (N_c / n) / b_c: the batch means' expectation is the full-data mean (the
    exact identity: every row of cell c weighted by b_c share_c / N_c = 1 / n gives the full batch), and Neyman's
    allocation gives the cell of 68 rows about a quarter of the batch instead of 4.5 %, which cuts the total variance
    of the stochastic gradients (g, u, v) by more than 3x (measured 5.6x over 300 batches each)."""
    fam = rare_set_problem().family
    saddle = fam.saddle()
    cells, sizes, share = saddle.strata(100)
    counts = np.array([c.size for c in cells])
    assert counts.sum() == saddle.n and counts.min() == 68 and sizes[counts.argmin()] >= 20
    assert abs(sizes.sum() - 100) <= len(sizes)
    ends = np.cumsum(sizes) - 1
    np.testing.assert_allclose(sizes * share[ends] / counts, 1.0 / saddle.n, rtol=1e-12)
    theta, ab, ytil, alpha = np.array([0.3, -0.2, 0.1, 0.05]), np.zeros(10), np.ones(3) / 3, np.zeros(5)
    shift = saddle.shift(0.4)
    full = np.concatenate(saddle.gradients(theta, ab, ytil, alpha, np.arange(saddle.n), shift))
    every = np.concatenate(cells)
    expected = np.concatenate(saddle.gradients(theta, ab, ytil, alpha, every, shift,
                                               share=np.repeat(sizes * share[ends] / counts, counts)))
    np.testing.assert_allclose(expected, full, atol=1e-12)
    rng = np.random.default_rng(0)
    draws = {"uniform": [], "stratified": []}
    for _ in range(300):
        rows = rng.integers(0, saddle.n, size=share.size)
        draws["uniform"].append(np.concatenate(saddle.gradients(theta, ab, ytil, alpha, rows, shift)))
        rows = np.concatenate([c[rng.integers(0, c.size, size=b)] for c, b in zip(cells, sizes)])
        draws["stratified"].append(np.concatenate(saddle.gradients(theta, ab, ytil, alpha, rows, shift, share=share)))
    uniform, stratified = (np.array(draws[k]) for k in ("uniform", "stratified"))
    assert uniform.var(axis=0).sum() > 3 * stratified.var(axis=0).sum()
    assert np.all(np.abs(stratified.mean(axis=0) - full) <= 5 * stratified.std(axis=0) / np.sqrt(300) + 1e-12)


def test_sfls_certifies_the_inter_group_preset_with_a_rare_set_on_adult():
    """Adult by sex (3,000 rows, seed 12), the inter-group xAUC preset at kappa 0.1, radius 50: the positives of the
    women are 117 rows (3.9 %). With uniform minibatches of 100 (about 4 of their rows a step) the SMD oracle's
    error stalled near 0.004 and the level-set bracket at 1.7-1.8x its tolerance (0.0055 at 40,000 SMD steps, 0.0053
    at 100,000); with the stratified minibatches the judge's checks pass after 11,000 to 17,500 steps (seeds 0-4)."""
    data = fm.datasets.load_adult(sensitive="sex").subsample(3000, seed=12)
    s = data.score(fm.Weights(data.n_features, radius=50.0, intercept=False))
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="inter") <= 0.1])
    res = prob.solve(backend="stochastic", seed=0, max_steps=40000)
    assert res.ok and res.status == "converged", res.message


@pytest.mark.slow
def test_long_sfls_run_on_the_synthetic_task_is_feasible_and_near_optimal():
    """SFLS + SMD end to end on make_auc_synthetic() (T = 2e4, theta = 1.5, eps_opt = 2e-3, eta = 0.5, I = 2RB)."""
    data = fm.datasets.make_auc_synthetic()
    w = fm.Weights(5, radius=3.0)
    s = data.score(w)
    I = 2 * 3.0 * np.sqrt(np.max(np.sum(data.X ** 2, axis=1)))
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y, interval=I)),
                      [fm.auc_gap(s, data, kind="intra", interval=I) <= 0.05])
    r = prob.solve("stochastic", seed=0, T=20000, eta=0.5, eps_opt=2e-3, warm_start=False, select="last")
    assert F_STAR <= r.objective <= 1.03 * F_STAR and r.max_violation == 0.0
    lam = r.variables["lambda"]
    assert abs(lam[0] - 0.29) < 0.15 and abs(lam[1] - 1.04) < 0.15      # y~_k / y~_0 vs KKT (loose)


def test_iqrc_network_and_linear():
    """Oracle 16: IQRC on the network returns a feasible point; on the linear model with a tiny rho^ it
    reproduces the SFLS solution (same surrogate value within the SFLS accuracy)."""
    net = reference_problem(model="mlp")
    r = net.solve("stochastic", seed=0, S=2, T=800, max_outer=12)
    assert r.method == "iqrc" and r.status == "completed"
    assert r.max_violation == 0.0 and r.objective < 0.5        # better than the constant start f0 = c1 c2^2
    assert r.metrics["iterates"].shape == (3, net.family.w.size)
    lin = reference_problem()
    a = lin.solve("stochastic", method="iqrc", seed=0, S=1, T=1500, output="last")
    assert a.objective == pytest.approx(F_STAR, rel=0.04) and a.max_violation == 0.0


def test_invalid_stochastic_options():
    prob = reference_problem()
    cases = [({"theta": 0.9}, "theta must be >= 1"), ({"delta": 1.0}, "delta must lie in"),
             ({"eps": 0.0}, "eps"), ({"eps_opt": -1.0}, "eps_opt"), ({"T": 0}, "T"), ({"batch_size": 0}, "batch_size"),
             ({"eta": 0.0}, "eta"), ({"tau_scale": -1.0}, "tau_scale"), ({"max_outer": 0}, "max_outer"),
             ({"averaging": "last"}, "averaging"), ({"steps": "fast"}, "steps"), ({"select": "any"}, "select"),
             ({"sampling": "per_group"}, "sampling"),
             ({"r0": float("nan")}, "r0"), ({"S": 3}, "unknown option"), ({"x0": np.ones(5) * 9}, "outside")]
    for opts, match in cases:
        with pytest.raises((OptionError, fm.ModelError), match=match):
            prob.solve("stochastic", seed=0, **{"T": 5, "max_outer": 1, **opts})
    for opts, match in [({"S": 0}, "S"), ({"rho_hat": 0.0}, "rho_hat"), ({"rho_hat": -1.0}, "rho_hat"),
                        ({"output": "best"}, "output")]:
        with pytest.raises(OptionError, match=match):
            prob.solve("stochastic", method="iqrc", seed=0, **{"T": 5, "max_outer": 1, **opts})
    with pytest.warns(UserWarning, match="theta = 1"):
        prob.solve("stochastic", seed=0, T=50, max_outer=2, theta=1.0)


def test_sfls_warns_when_it_halts_at_once_and_reports_divergence():
    prob = reference_problem()
    with pytest.warns(UserWarning, match="first iteration"):
        r = prob.solve("stochastic", seed=0, T=200, r0=0.2, stop="budget")   # r0 < f*: U(r0) >= 0
    # the loop says converged, but the point it halted at violates the constraint: the judge's word is final
    assert r.status == "infeasible" and not r.ok and r.metrics["outer_iterations"] == 1
    assert "violation of c0" in r.message
    with pytest.warns(UserWarning, match="steps too large"):     # iterates stay in X, but U overshoots H
        prob.solve("stochastic", seed=0, T=300, eta=1e6, max_outer=3, stop="budget")
    calls = iter([{"U": -0.1, "x": 1, "status": "completed"}, {"U": np.nan, "x": 2, "status": "diverged"}])
    out = sfls(lambda r, d, k: next(calls), 1.0, max_outer=5)
    assert out["status"] == "diverged" and "smaller steps" in out["message"] and len(out["history"]) == 2


def test_theory_step_rule_runs_and_sfls_validates_r0():
    prob = reference_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # 300 steps of the theory rule are far from accurate
        r = prob.solve("stochastic", seed=1, T=300, max_outer=2, steps="theory")
    assert r.metrics["eta0"] > 0 and r.metrics["tau0"] > 0
    with pytest.raises(OptionError, match="r0"):
        sfls(lambda r, d, k: {"U": -1.0, "x": None}, float("inf"))
    with pytest.raises(OptionError, match="S"):
        iqrc(None, np.zeros(3), S=0, rng=np.random.default_rng(0), evaluate=None)
