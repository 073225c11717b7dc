"""ALEG, SMD and two-stage MERO (Yu, Cai, Jiang, Zhang 2024): exact properties of the iterates and of the
operator estimates, and statistical agreement with the exact programs."""
import cvxpy as cp
import numpy as np
import pytest
from scipy.special import logsumexp

import fairmodel as fm
from fairmodel.exact import gdro as exact
from fairmodel.data import Batch
from fairmodel.families.gdro import certified_gap, group_risks_of
from fairmodel.oracles.metric import RUN_RIDGE, Coordinates, step_coordinates
from fairmodel.stochastic.aleg import (aleg, default_steps, design_coordinates, lipschitz_lz, mero_two_stage,
                                       metric_minibatch_scale, minibatch_step, normalize_log, prox_step, radius_step,
                                       snapshot_terms, theory_band, vr_operator)
from fairmodel.stochastic.smd import smd

from .conftest import make_instance, solved_in_a_second_run


def test_normalize_log_matches_scipy():
    rng = np.random.default_rng(0)
    for scale in (1.0, 300.0):
        v = rng.normal(size=7) * scale
        assert np.allclose(normalize_log(v), v - logsumexp(v), atol=1e-12)


def test_iterates_stay_in_the_domain_and_simplex(small_risks):
    """Every q is a strictly positive probability vector; every w lies in the ball."""
    trace = []
    out = aleg(small_risks, epochs=3, seed=0, trace=trace, step_w=2.0, step_q=5.0)
    qs = [t[k] for t in trace for k in ("q_half", "q", "snap_q")] + [out["q"]]
    for q in qs:
        assert np.all(q > 0) and abs(q.sum() - 1) <= 1e-12
    for t in trace:
        for k in ("w_half", "w"):
            assert np.linalg.norm(t[k]) <= small_risks.radius * (1 + 1e-12)


def test_initialization_and_first_snapshot(small_risks):
    """Initialization: w_0 = Proj(0) = 0, q_0 = 1/m, the first snapshot is z_0 and lambda^0 = ln(1/m)."""
    trace = []
    aleg(small_risks, epochs=1, seed=0, trace=trace)
    first = trace[0]
    assert np.all(first["snap_w"] == 0) and np.allclose(first["snap_q"], 1 / 3)
    assert np.allclose(first["snap_lam"], np.log(1 / 3))


def test_snapshot_is_the_one_index_shifted_weighted_average(small_risks):
    """One-index shift of (17)/(18): snapshot = sum_k alpha_{k-1} z_k / sum alpha_{k-1} over z_1..z_K (z_0 excluded,
    z_K included); the mirror snapshot is the weighted mean of ln q_k (a weighted geometric mean of the q_k)."""
    K = 6
    alpha = np.array([[0.1, 0.3, 0.2, 0.5, 0.4, 0.25]] * 2)
    trace = []
    aleg(small_risks, epochs=2, inner=K, alpha=alpha, seed=1, trace=trace, step_w=1.0, step_q=2.0)
    epoch0 = [t for t in trace if t["epoch"] == 0]
    second = [t for t in trace if t["epoch"] == 1][0]
    a = alpha[0]
    w_expected = sum(a[k] * epoch0[k]["w"] for k in range(K)) / a.sum()
    lam_expected = sum(a[k] * np.log(epoch0[k]["q"]) for k in range(K)) / a.sum()
    q_expected = sum(a[k] * epoch0[k]["q"] for k in range(K)) / a.sum()
    assert np.allclose(second["snap_w"], w_expected, atol=1e-12)
    assert np.allclose(second["snap_lam"], lam_expected, atol=1e-12)
    assert np.allclose(second["snap_q"], q_expected, atol=1e-12)


def test_closed_form_step_is_the_bregman_argmin(small_risks):
    """The closed-form mirror step equals a CVXPY solve of
    eta <v, z> + alpha B(z, z_bar) + (1 - alpha) B(z, z_k) over the ball x simplex, with the DGF scales
    1/(2 D_w^2), 1/(2 ln m) of eq. (11)."""
    R = small_risks
    rng = np.random.default_rng(3)
    m, d, rho = R.m, R.shape[0], R.radius
    D_w2, D_q2 = rho ** 2 / 2, np.log(m)
    for _ in range(3):
        eta, a = 0.3, 0.4
        w_bar, w_k = R.project(rng.normal(size=d)), R.project(rng.normal(size=d))
        q_bar, q_k = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
        v_w, v_q = rng.normal(size=d), rng.normal(size=m)
        w_new, logq_new = prox_step(R, a * w_bar + (1 - a) * w_k, a * np.log(q_bar) + (1 - a) * np.log(q_k),
                                    v_w, v_q, 2 * D_w2 * eta, 2 * D_q2 * eta)
        w, q = cp.Variable(d), cp.Variable(m)
        bw = lambda ref: 0.5 * cp.sum_squares(w - ref) / (2 * D_w2)          # noqa: E731
        bq = lambda ref: -cp.sum(cp.entr(q)) - q @ np.log(ref)                 # KL on the simplex, up to consts
        objective = eta * (v_w @ w + v_q @ q) + a * (bw(w_bar) + bq(q_bar) / (2 * D_q2)) \
            + (1 - a) * (bw(w_k) + bq(q_k) / (2 * D_q2))
        cp.Problem(cp.Minimize(objective), [cp.norm(w) <= rho, cp.sum(q) == 1, q >= 0]).solve(solver="CLARABEL")
        assert np.allclose(w_new, w.value, atol=1e-6)
        assert np.allclose(np.exp(logq_new), q.value, atol=1e-4)


def test_the_preconditioned_step_is_the_argmin_in_the_metric_of_the_design(small_risks):
    """In preconditioned coordinates of P = S + ridge diag(S) (S an ill-conditioned second moment: eigenvalues 1e-3 to
    1e3) the w-block's step is argmin over the ball of f(w) = gamma <v, w> + (w - anchor)' P (w - anchor) / 2: its KKT
    conditions hold to rounding (gamma v + P (w - anchor) + mu w = 0, mu >= 0, mu = 0 inside the ball) and no point
    of a CVXPY solve (accurate to about 1e-5) has a lower f. Steps that leave the ball exercise the projection in
    the metric. The instance's own design is well conditioned: its default steps are the paper's Euclidean ones."""
    R = small_risks
    assert design_coordinates(R) is None
    rng = np.random.default_rng(4)
    m, d, rho = R.m, R.shape[0], R.radius
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    S = (Q * 10.0 ** np.linspace(-3, 3, d)) @ Q.T
    P = S + RUN_RIDGE * np.diag(np.diag(S))
    coords = Coordinates.from_second_moment(S, rho, RUN_RIDGE)
    outside = 0
    for scale in (5.0, 5.0, 5.0, 0.1):
        anchor, v, gamma = R.project(3 * rng.normal(size=d)), scale * rng.normal(size=d), 0.7
        w_new, _ = prox_step(R, anchor, np.full(m, -np.log(m)), v, np.zeros(m), gamma, 0.1, coords)
        f = lambda x: gamma * v @ x + 0.5 * (x - anchor) @ P @ (x - anchor)     # noqa: E731
        g = gamma * v + P @ (w_new - anchor)
        on_sphere = np.linalg.norm(w_new) > rho * (1 - 1e-12)
        mu = -(g @ w_new) / (w_new @ w_new) if on_sphere else 0.0
        assert mu >= 0 and np.linalg.norm(g + mu * w_new) <= 1e-10 * np.linalg.norm(gamma * v)
        assert np.linalg.norm(w_new) <= rho * (1 + 1e-12)
        w = cp.Variable(d)
        cp.Problem(cp.Minimize(gamma * v @ w + 0.5 * cp.quad_form(w - anchor, P)),
                   [cp.norm(w) <= rho]).solve(solver="CLARABEL")
        assert f(w_new) <= f(w.value) + 1e-9 and np.allclose(w_new, w.value, atol=1e-4)
        outside += on_sphere
    assert outside >= 2


def test_aleg_certifies_group_dro_on_the_uncentered_nearly_collinear_communities_design():
    """Communities (1,984 rows, 118 columns in [0, 1]: uncentered and nearly collinear, the second moment of the rows
    (x, 1) has eigenvalues from 16 down to 2e-8), squared loss, radius 10 (binding at the optimum). With Euclidean
    steps the duality gap fell at the rate 0.35 (log per log of the epochs) and the run stopped failing fast after
    60 epochs, 84x above its tolerance; in the metric of the design's second moment it passes the judge's checks."""
    data = fm.datasets.load_communities()
    w = fm.Weights(data.n_features, radius=10.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.squared_loss(data.score(w), data.y), data.groups))))
    report = fm.crosscheck(prob, seed=0)
    assert report.ok and report.stochastic.status == "converged", report.to_markdown()


def test_the_steps_get_a_metric_for_columns_in_raw_units_and_keep_euclidean_steps_for_standardized_ones():
    """A column whose second moment is above 1,000x the median column's (points, incomes) gets the metric even where
    the curvature ratio is below 1e6; standardized and one-hot columns (second moments 1 and their shares) do not."""
    assert step_coordinates(np.array([1.4e3, 10.0, 1.0, 0.5, 0.5, 0.25, 1.0]), None) is not None
    assert step_coordinates(np.array([1.0, 1.0, 1.0, 0.3, 0.05, 0.02, 1.0]), None) is None
    assert step_coordinates(np.diag([1.0, 1.0, 0.5, 0.5, 1.0]), 5.0) is None


def test_aleg_certifies_group_dro_on_law_school_in_raw_units():
    """Law School's columns in their raw units (LSAT points, mean 37, beside indicators; gender one-hot in two columns
    as ``Dataset.from_frame`` encodes it): a column's second moment is 2.9e3 times the median column's while the
    eigenvalue ratio on the span of the rows stays below 1e6. The steps were Euclidean there and ALEG ended inaccurate
    (0.481 against the exact 0.464 after 40 epochs); with the design's metric it certifies in about 10."""
    raw = fm.datasets.load_lawschool(standardize=False)
    data = fm.Dataset(np.column_stack([raw.X, 1.0 - raw.X[:, -1]]), raw.y, raw.groups).subsample(3000, seed=0)
    S = np.mean(np.column_stack([data.X, np.ones(data.n_samples)]) ** 2, axis=0)
    assert S.max() > 1e3 * np.median(S)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    report = fm.crosscheck(prob, seed=0)
    assert report.ok and report.stochastic.status == "converged", report.to_markdown()


def _batch(R, rows):
    return Batch(R.data.X[rows], None, None, rows)


def _snapshot_operator(R, w_s, q_s):
    r_s, g_s, z_s = R.risks_and_grad(w_s, q_s)
    return r_s, g_s, z_s


def test_estimator_is_unbiased_exactly(small_risks):
    """Unbiasedness: averaging each group's contribution over all its samples gives the exact operator at z_half."""
    R = small_risks
    rng = np.random.default_rng(4)
    w_s, q_s = R.project(rng.normal(size=5)), rng.dirichlet(np.ones(3))
    w_h, q_h = R.project(rng.normal(size=5)), rng.dirichlet(np.ones(3))
    r_s, g_s, z_s = _snapshot_operator(R, w_s, q_s)
    # E over independent per-group draws = sum over groups of each group's mean contribution
    mean_vw, mean_vq = np.zeros(5), np.zeros(3)
    for i in range(3):
        for j in R.index[i]:
            rows = np.array([R.index[g][0] if g != i else j for g in range(3)])
            base = np.array([R.index[g][0] for g in range(3)])
            vw, vq = vr_operator(R, *snapshot_terms(R, _batch(R, rows), z_s), 1, w_h, q_h, q_s, r_s, g_s)
            vw0, vq0 = vr_operator(R, *snapshot_terms(R, _batch(R, base), z_s), 1, w_h, q_h, q_s, r_s, g_s)
            mean_vw += (vw - vw0) / R.index[i].size
            mean_vq += (vq - vq0) / R.index[i].size
    base = np.array([R.index[g][0] for g in range(3)])
    vw0, vq0 = vr_operator(R, *snapshot_terms(R, _batch(R, base), z_s), 1, w_h, q_h, q_s, r_s, g_s)
    exp_vw, exp_vq = vw0 + mean_vw, vq0 + mean_vq
    r_h, g_h, _ = R.risks_and_grad(w_h, q_h)
    assert np.allclose(exp_vw, g_h, atol=1e-10)
    assert np.allclose(exp_vq, -r_h, atol=1e-10)


def test_zero_variance_at_the_snapshot(small_risks):
    """Zero variance at the snapshot: at z_half = z^s the estimator equals the full operator for every draw."""
    R = small_risks
    rng = np.random.default_rng(5)
    w_s, q_s = R.project(rng.normal(size=5)), rng.dirichlet(np.ones(3))
    r_s, g_s, z_s = _snapshot_operator(R, w_s, q_s)
    sampler = R.sampler(2, rng)
    for _ in range(10):
        vw, vq = vr_operator(R, *snapshot_terms(R, sampler.draw(), z_s), 2, w_s, q_s, q_s, r_s, g_s)
        assert np.allclose(vw, g_s, atol=1e-12) and np.allclose(vq, -r_s, atol=1e-12)


def test_per_group_operator_is_lipschitz(small_risks):
    """Lemma A.7: ||gradF(z; xi) - gradF(z'; xi)||_* <= L_z ||z - z'|| with the norms (10)."""
    R = small_risks
    G, L = R.lipschitz_constants()
    D_w2, D_q2 = R.radius ** 2 / 2, np.log(R.m)
    L_z = lipschitz_lz(np.sqrt(D_w2), L, G, R.m)
    rng = np.random.default_rng(6)
    sampler = R.sampler(1, rng)
    for _ in range(50):
        rows = sampler.draw().rows
        z = [(R.project(rng.normal(size=5) * 3), rng.dirichlet(np.ones(3))) for _ in range(2)]
        ops = []
        for w, q in z:
            zz = R.X[rows] @ w
            ops.append((R.X[rows].T @ (q * R.loss.dphi(zz, R.y[rows])), -R.loss.phi(zz, R.y[rows])))
        dual = np.sqrt(2 * D_w2 * np.sum((ops[0][0] - ops[1][0]) ** 2) + 2 * D_q2 * np.max(np.abs(ops[0][1] - ops[1][1])) ** 2)
        primal = np.sqrt(np.sum((z[0][0] - z[1][0]) ** 2) / (2 * D_w2) + np.sum(np.abs(z[0][1] - z[1][1])) ** 2 / (2 * D_q2))
        assert dual <= L_z * primal + 1e-12


def test_identical_single_sample_groups_keep_q_uniform():
    """Identical groups with n_i = 1: no noise, deterministic run, q uniform for every iterate."""
    X = np.tile([[0.5, -1.0, 2.0]], (4, 1))
    data = fm.Dataset(X, [1, 1, 1, 1], groups=[0, 1, 2, 3])
    w = fm.Weights(3, radius=1.0)
    R = group_risks_of(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))
    traces = [[], []]
    for seed, tr in zip((0, 1), traces):
        aleg(R, epochs=3, seed=seed, trace=tr)
    for a, b in zip(*traces):
        assert np.allclose(a["q"], 0.25) and np.allclose(a["q_half"], 0.25)
        assert np.array_equal(a["w"], b["w"])  # no randomness left


def test_single_group_aleg_solves_erm(small):
    """With m = 1 ALEG is a variance-reduced method for ERM and matches the exact ERM value."""
    data, w, _ = small
    erm = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(w), data.y))))
    exact_value = erm.solve().objective
    stoch = erm.solve(backend="stochastic", seed=0, epochs=30, stop="budget")
    assert stoch.objective - exact_value < 1e-6


def test_translation_leaves_the_w_trajectory_unchanged(small_risks):
    """Offsets c * 1 (the same for every group) do not change ALEG's w-iterates for a fixed seed."""
    a = aleg(small_risks, epochs=3, seed=7)
    b = aleg(small_risks, epochs=3, seed=7, offsets=np.full(3, 0.8))
    assert np.allclose(a["w"], b["w"], atol=1e-12) and np.allclose(a["q"], b["q"], atol=1e-12)


def test_same_seed_same_result(small_risks):
    a, b = aleg(small_risks, epochs=2, seed=3), aleg(small_risks, epochs=2, seed=3)
    assert np.array_equal(a["w"], b["w"])
    c = aleg(small_risks, epochs=2, seed=4)
    assert not np.array_equal(a["w"], c["w"])


def test_aleg_agrees_with_the_exact_program():
    """Small instances (logistic), several seeds: max-risk gap <= 1e-2 and duality gap <= 2e-2."""
    for seed, (m, d, rho) in enumerate([(2, 4, 1.0), (3, 5, 3.0), (5, 8, 5.0)]):
        sizes = tuple(20 + 20 * i for i in range(m))
        data, w, risks = make_instance(m=m, d=d, sizes=sizes, flips=tuple(0.1 + 0.05 * i for i in range(m)),
                                       radius=rho, seed=seed)
        prob = fm.Problem(fm.Minimize(fm.max(risks)))
        opt = prob.solve().objective
        res = prob.solve(backend="stochastic", seed=seed)
        assert res.objective - opt <= 1e-2
        assert res.certificate["duality_gap"] <= 2e-2


def test_aleg_softmax_agrees_with_the_exact_program():
    """The same agreement for the multiclass softmax loss with a matrix of weights."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)) + rng.normal(size=(120, 3)), axis=1)
    data = fm.Dataset(X, y, groups=np.repeat([0, 1, 2], 40))
    W = fm.Weights(3, radius=2.0, n_outputs=3)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.softmax_loss(data.score(W), data.y), data.groups))))
    opt = prob.solve().objective
    res = prob.solve(backend="stochastic", seed=0)
    assert res.objective - opt <= 1e-2 and res.certificate["duality_gap"] <= 2e-2


def test_theory_schedule_steps_lie_in_the_band(small_risks):
    """Theorem 4.5 setting: eta inside [1/(10 L_z sqrt K), 1/(L_z sqrt(5K))]."""
    R = small_risks
    G, L = R.lipschitz_constants()
    K = 50
    L_z = lipschitz_lz(R.radius / np.sqrt(2), L, G, R.m)
    lo, hi = theory_band(L_z, K)
    out = aleg(R, epochs=2, inner=K, schedule_mode="theory", seed=0)
    eta = out["steps"]["step_w"] / R.radius ** 2
    assert lo <= eta <= hi * (1 + 1e-12)


def test_mero_two_stage_overestimates_group_optima_and_matches_exact():
    """Stage 1 gives R_hat*_i >= R*_i - tol; two-stage ALEG's MERO value within 2e-2 of the exact MERO optimum."""
    data, w, risks = make_instance(m=3, d=5, sizes=(60, 60, 60), flips=(0.05, 0.05, 0.4), seed=4)
    R = group_risks_of(risks)
    r_star = exact.group_optimal_values(R)
    out = mero_two_stage(R, seed=0, epochs=20, stage1={"epochs": 10})
    assert np.all(out["offsets"] >= r_star - 1e-9)
    prob = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))))
    opt = prob.solve().objective
    res = prob.solve(backend="stochastic", seed=0)
    assert res.objective - opt <= 2e-2


def test_aleg_beats_smd_on_the_same_budget():
    """Variance reduction pays: on the scaled-down synthetic task (m=5, d=20, n_i=200) ALEG's final max-risk gap
    is at most SMD's (median over 5 seeds, equal budgets of per-sample gradient evaluations)."""
    data = fm.datasets.make_gdro_synthetic(m=5, d=20, n_per_group=200, seed=0)
    w = fm.Weights(20, radius=5.0)
    R = group_risks_of(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))
    opt = exact.solve_dual(R)[1]
    aleg_gaps, smd_gaps = [], []
    for seed in range(5):
        a = aleg(R, epochs=8, seed=seed)
        s = smd(R, epochs=1000, seed=seed, max_grad_evals=a["grad_evals"])
        assert s["grad_evals"] >= a["grad_evals"]  # SMD gets at least ALEG's budget
        aleg_gaps.append(np.max(R.risks(a["w"])) - opt)
        smd_gaps.append(np.max(R.risks(s["w"])) - opt)
    assert np.median(aleg_gaps) <= np.median(smd_gaps)


def test_divergence_becomes_a_status(small_risks):
    """Absurd steps make the iterates explode: the run ends with status 'diverged', not numbers."""
    data = fm.Dataset(np.array([[1e150, 1.0], [-1e150, 2.0], [1.0, 1e150]]), [1, -1, 1], groups=[0, 1, 1])
    w = fm.Weights(2)
    R = group_risks_of(fm.group_mean(fm.squared_loss(data.score(w), data.y), data.groups))
    with np.errstate(all="ignore"):
        out = aleg(R, epochs=3, seed=0, step_w=1e10, step_q=1e10)
    assert out["status"] == "diverged" and "non-finite" in out["message"]


def test_budget_exhaustion_is_reported(small_risks):
    out = aleg(small_risks, epochs=50, seed=0, max_grad_evals=1000)
    assert out["status"] == "budget_exhausted" and out["epochs_run"] < 50


@pytest.mark.slow
def test_theory_schedule_meets_the_expectation_bound(small_risks):
    """Mean over 20 seeds of eps(z_S) <= 30 L_z / (S sqrt K) (eq. (82)) with the theory schedule, K = n_bar,
    alpha = 1/K. (The bound is loose: with the theory steps the gap is still in its pre-asymptotic regime here.)"""
    R = small_risks
    G, L = R.lipschitz_constants()
    K = int(round(R.X.shape[0] / R.m))
    L_z = lipschitz_lz(R.radius / np.sqrt(2), L, G, R.m)
    for S in (4, 40):
        gaps = []
        for seed in range(20):
            out = aleg(R, epochs=S, inner=K, batch_size=1, schedule_mode="theory", output="average", seed=seed)
            inner, _ = exact.solve_weighted_erm(R, out["q"])
            gaps.append(np.max(R.risks(out["w"])) - R.weighted_value_and_grad(inner, out["q"])[0])
        assert np.mean(gaps) <= 30 * L_z / (S * np.sqrt(K))


@pytest.mark.slow
def test_gap_decays_at_least_like_one_over_s(small_risks):
    """Rate, with the practical constant steps (the theory steps need S > 5,000 epochs here to leave the
    pre-asymptotic regime): the mean duality gap of the output average (24) over 10 seeds falls at least like
    S^-0.8 between S = 5 and S = 50."""
    means = []
    for S in (5, 50):
        gaps = []
        for seed in range(10):
            out = aleg(small_risks, epochs=S, batch_size=1, output="average", seed=seed)
            inner, _ = exact.solve_weighted_erm(small_risks, out["q"])
            gaps.append(np.max(small_risks.risks(out["w"])) - small_risks.weighted_value_and_grad(inner, out["q"])[0])
        means.append(np.mean(gaps))
    assert np.log(means[1] / means[0]) / np.log(10) <= -0.8


def test_block_draws_give_each_step_b_rows_per_group(small_risks):
    """The samples of a block of steps come group by group for every step, with matching snapshot terms."""
    from fairmodel.stochastic.aleg import draw_block
    R = small_risks
    rng = np.random.default_rng(0)
    r_s, g_s, z_s = R.risks_and_grad(np.ones(5) * 0.1, np.full(3, 1 / 3))
    Xb, yb, phi_s, dphi_s = draw_block(R, R.sampler(2, rng), 2, 7, z_s)
    assert Xb.shape == (7, 6, 5) and yb.shape == (7, 6)
    for k in range(7):
        rows = [int(np.flatnonzero((R.X == x).all(axis=1))[0]) for x in Xb[k]]
        assert [int(R.codes[r]) for r in rows] == [0, 0, 1, 1, 2, 2]
        assert np.allclose(phi_s[k], R.loss.phi(z_s[rows], R.y[rows]))
        assert np.allclose(dphi_s[k], R.loss.dphi(z_s[rows], R.y[rows]))


def _hinge_gdro(n, seed, pos_rate=None):
    """Group DRO of the hinge loss on ``n`` rows of four groups (a ball of radius 2 with an intercept)."""
    rng = np.random.default_rng(seed)
    g = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    X = rng.normal(size=(n, 15)) + 0.5 * g[:, None] * (np.arange(15) < 3)
    logits = X[:, 0] - 0.5 * X[:, 1] + 0.3 * g + (0.0 if pos_rate is None else np.log(pos_rate / (1 - pos_rate)))
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logits)), 1.0, -1.0)
    data = fm.Dataset(X, y, groups=g)
    w = fm.Weights(15, radius=2.0, intercept=True)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))))


def test_aleg_takes_decreasing_steps_by_default_for_a_loss_that_is_not_smooth():
    """With the hinge loss the default step schedule is 1 / sqrt(s + 1) (the run equals one asked for it by name, and
    differs from the constant steps); steps a user gives stay as given (constant)."""
    prob = _hinge_gdro(1500, seed=0)
    runs = {schedule: prob.solve(backend="stochastic", seed=0, stop="budget", epochs=4,
                                 **({} if schedule is None else {"step_schedule": schedule}))
            for schedule in (None, "decreasing", "constant")}
    w = {k: np.asarray(r.variables[next(iter(r.variables))]) for k, r in runs.items()}
    assert np.array_equal(w[None], w["decreasing"]) and not np.allclose(w[None], w["constant"])
    given = prob.solve(backend="stochastic", seed=0, stop="budget", epochs=4, step_w=0.05, step_q=0.5)
    constant = prob.solve(backend="stochastic", seed=0, stop="budget", epochs=4, step_w=0.05, step_q=0.5,
                          step_schedule="constant")
    assert np.array_equal(np.asarray(given.variables[next(iter(given.variables))]),
                          np.asarray(constant.variables[next(iter(constant.variables))]))


@pytest.mark.slow
def test_aleg_certifies_hinge_group_dro_on_imbalanced_rows_with_the_default_schedule():
    """20,000 rows, about 3 % positives: with constant steps ALEG's duality gap stalled at 8x its tolerance to its cap
    (the eta-weighted average of a non-smooth run settles at a floor that scales with the step); with the default
    decreasing steps for the hinge loss it certifies, its max group risk within the gap's tolerance of the exact
    optimum (the cross-check's rule)."""
    from tests.test_defaults_suite import suite        # the defaults suite's generator (benchmarks/defaults.py)
    prob, options = suite.group_dro(suite.synthetic(20_000, 15, shares=(0.4, 0.3, 0.2, 0.1), seed=3, pos_rate=0.03),
                                    "hinge", 2.0)
    exact = prob.solve(**options)
    res = prob.solve(backend="stochastic", seed=0, **options)
    assert res.ok, res.message
    tolerance = next(c["tolerance"] for c in res.checks if c["name"].startswith("duality gap"))
    assert abs(res.objective - exact.objective) <= tolerance


def test_the_radius_step_for_a_loss_that_is_not_smooth():
    """The hinge loss on a ball: the second run's w-step is half the radius over the subgradients' size sqrt(mean
    ||x||^2) (robust stochastic approximation); none for a smooth loss or where it is within 2x of the curvature step
    1 / mean ||x||^2, which stays the first run's step at every radius."""
    data = fm.datasets.load_adult(sensitive="sex").subsample(2000, seed=0)
    steps = {}
    for loss in ("hinge", "logistic"):
        for radius in (0.1, 5.0):
            w = fm.Weights(data.n_features, radius=radius)
            risks = group_risks_of(fm.group_mean(getattr(fm, f"{loss}_loss")(data.score(w), data.y), data.groups))
            steps[loss, radius] = default_steps(risks, 4)[0], radius_step(risks, 4)
            mean_sq = risks.row_norm_stats()[0]
    assert steps["logistic", 0.1] == steps["logistic", 5.0] == (pytest.approx(4.0 / mean_sq), None)
    assert steps["hinge", 0.1] == (pytest.approx(1.0 / mean_sq), None)       # 0.05 / sqrt(mean_sq) is smaller
    assert steps["hinge", 5.0] == (pytest.approx(1.0 / mean_sq), pytest.approx(2.5 / np.sqrt(mean_sq)))


def test_aleg_certifies_hinge_group_dro_at_radius_5_on_adult_in_a_second_run_with_the_radius_step():
    """5,000 rows of Adult by sex, hinge loss, radius 5: with the curvature step (1 / mean ||x||^2, 9x below the radius
    step here) the duality gap stalls at 10.5x its tolerance and the run stops failing fast after 24 epochs; the second
    run, with the radius step, certifies, and the result says so."""
    data = fm.datasets.load_adult(sensitive="sex").subsample(5000, seed=1)
    w = fm.Weights(data.n_features, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))))
    report = fm.crosscheck(prob, seed=0)
    assert report.ok and report.stochastic.status == "converged", report.to_markdown()
    first = report.stochastic.metrics["first_run"]
    assert first["epochs_run"] == 24 and "radius step" in report.stochastic.message


def test_mero_stage_two_takes_the_certified_group_optima_where_stage_one_misses_its_check():
    """Stage 1 capped at one epoch of large batches misses every group's check (a quarter of the accuracy): its
    estimates' errors would enter stage 2 one for one (the duality gap stalled at 400x its tolerance); stage 2 takes the
    judge's exact R*_i for those groups, certifies, and the result says which groups."""
    data = fm.datasets.load_adult(sensitive="race").subsample(3000, seed=0)
    w = fm.Weights(data.n_features, radius=5.0)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))))
    result = prob.solve(backend="stochastic", seed=0, stage1={"epochs": 1, "output": "tail", "batch_size": 20})
    assert result.status == "converged", result.message
    settled = result.metrics["stage1_certified_groups"]
    assert settled and all(name in result.message for name in settled)
    exact = prob.solve(backend="exact").metrics["group_optimal"]
    for name in settled:
        assert result.metrics["estimated_group_optimal"][name] == pytest.approx(exact[name], abs=1e-9)


def test_the_minibatch_step_for_a_smooth_loss():
    """The logistic loss on standardized Adult rows: 1 / (curvature ((1 - 1/b) top + mean ||x||^2 / b)), top the largest
    eigenvalue of the rows' second moment (computed here by NumPy from the rows themselves); b = 1 gives the curvature
    step (so none), and none for the hinge."""
    data = fm.datasets.load_adult(sensitive="race").subsample(3000, seed=0)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    Z = np.column_stack([data.X, np.ones(data.n_samples)])
    top, mean_sq = np.linalg.eigvalsh(Z.T @ Z / data.n_samples)[-1], np.mean(np.sum(Z * Z, axis=1))
    risks = group_risks_of(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))
    for b in (4, 20):
        assert minibatch_step(risks, b) == pytest.approx(4.0 / ((1 - 1 / b) * top + mean_sq / b), rel=1e-9)
    assert minibatch_step(risks, 1) is None
    assert minibatch_step(group_risks_of(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups)), 4) is None


def test_the_minibatch_step_in_the_design_metric():
    """In the metric of the rows' second moment the minibatch smoothness step is the metric's curvature step
    1 / (curvature p) times p / ((1 - 1/b) + p / b): the whitened rows have top eigenvalue at most 1 and mean squared
    norm at most p. None without a metric, for the hinge, and for one row per group."""
    d = fm.datasets.load_communities(target="PctPopUnderPov", standardize=True)
    data = fm.Dataset(d.X, np.where(d.y > np.quantile(d.y, 0.7), 1.0, -1.0), d.groups)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    risks = group_risks_of(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))
    p = data.n_features + 1
    assert design_coordinates(risks) is not None
    for b in (4, 16):
        assert metric_minibatch_scale(risks, b) == pytest.approx(p / ((1 - 1 / b) + p / b), rel=1e-12)
    assert metric_minibatch_scale(risks, 1) is None
    assert metric_minibatch_scale(group_risks_of(fm.group_mean(fm.hinge_loss(data.score(w), data.y),
                                                               data.groups)), 4) is None
    adult = fm.datasets.load_adult(sensitive="race").subsample(2000, seed=0)       # standardized: no metric
    v = fm.Weights(adult.n_features, radius=5.0, intercept=True)
    assert metric_minibatch_scale(group_risks_of(fm.group_mean(fm.logistic_loss(adult.score(v), adult.y),
                                                               adult.groups)), 4) is None


def test_a_smooth_loss_in_the_design_metric_certifies_in_a_second_run_with_the_minibatch_step():
    """Communities (118 standardized, nearly collinear features: the steps take the design metric), logistic loss,
    labels the top 30 % of PctPopUnderPov, radius 5: the first run with the metric's curvature step stopped failing fast
    at 65x its gap tolerance after 60 epochs, and was the answer (no second-run rule applied in the metric for a smooth
    loss). The second run with the minibatch step in the metric (3.9x longer) certifies."""
    d = fm.datasets.load_communities(target="PctPopUnderPov", standardize=True)
    data = fm.Dataset(d.X, np.where(d.y > np.quantile(d.y, 0.7), 1.0, -1.0), d.groups)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    solved_in_a_second_run(prob, "minibatch's smoothness in the design metric")


def test_mero_certifies_on_adult_by_race_in_a_second_run_with_the_minibatch_step():
    """MERO, logistic loss, 8,000 Adult rows by race, radius 10: with the curvature step stage 2's duality gap stalled
    at 14.5x its tolerance (the gap fell to 14.5x by epoch 18, then wandered) and the run stopped failing fast after 36
    epochs; stage 2 again from the same stage-1 estimates with the minibatch step (2.2x longer) certifies, and the
    result says so. The stage-1 work is counted once."""
    data = fm.datasets.load_adult(sensitive="race").subsample(8000, seed=103)
    w = fm.Weights(data.n_features, radius=10.0, intercept=True)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))))
    solved_in_a_second_run(prob, "minibatch")


def test_hinge_group_dro_certifies_in_a_second_run_with_the_curvature_step_held_constant():
    """Adult's 5,000 rows (subsample 540) grouped by the quartiles of age, hinge loss, radius 1: the first run's steps,
    falling as 1 / sqrt(s + 1), stalled at 4.4x the gap tolerance (the fail-fast rule stopped it after 60 epochs), and
    the radius step is within 2x of the curvature step; the second run holds the curvature step constant and
    certifies."""
    data = fm.datasets.load_adult(sensitive="sex")
    age = data.X[:, data.feature_names.index("age")]
    quartile = np.searchsorted(np.quantile(age, [0.25, 0.5, 0.75]), age, side="right")
    data = fm.Dataset(data.X, data.y, quartile, feature_names=data.feature_names).subsample(5000, seed=540)
    w = fm.Weights(data.n_features, radius=1.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))))
    result = solved_in_a_second_run(prob, "held constant", longer=False)
    assert result.solver["options"]["step_schedule"] == "constant"


def test_hinge_group_dro_with_many_features_certifies_in_restarted_stages():
    """1,000 synthetic rows with 150 features, hinge loss, radius 5 (a piecewise-linear objective): one run with the
    radius step and falling steps stopped at 3.4x its gap tolerance (its gap fell like 1/sqrt(epochs)); the second run
    in restarted stages (a constant step halved at each, from the previous stage's output) certifies, within its
    gap of the exact optimum, and the result says how."""
    rng = np.random.default_rng(608)
    g = rng.choice(3, size=1000, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(1000, 150)) + 0.5 * g[:, None] * (np.arange(150) < 3)
    signal = 2 * X @ (rng.normal(size=150) / np.sqrt(150)) + 0.5 * (g - g.mean())
    y = np.where(rng.random(1000) < 1 / (1 + np.exp(-signal)), 1.0, -1.0)
    data = fm.Dataset(X, y, np.array([f"g{k}" for k in g]))
    w = fm.Weights(150, radius=5.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups))))
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.status == "converged", res.message
    assert res.metrics["stages"] >= 2 and "restarted stages" in res.message
    assert res.metrics["last_stage_step_w"] == pytest.approx(res.metrics["step_w"] / 2 ** (res.metrics["stages"] - 1))
    assert sum(h.get("stage") == 0 for h in res.history) >= 1 and res.history[-1]["stage"] == res.metrics["stages"] - 1
    exact = prob.solve(backend="exact")
    assert 0 <= res.objective - exact.objective <= certified_gap(res.certificate) + 1e-8
