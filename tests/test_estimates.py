"""Every stochastic estimate pinned three ways: (a) it equals the exact full-data value when the batch holds all
rows (or an exact identity of the estimator holds), (b) it is unbiased: the mean of many seeded draws lies within
K_SE standard errors of the exact value (standard errors computed from the same draws), (c) a variance-reduced
estimate equals the full operator at its snapshot, whatever the batch.

K_SE = 5: the mean of N i.i.d. draws is close to normal (CLT), so a correct estimator leaves a coordinate more than
5 standard errors away with probability < 6e-7; a wrong sign, factor or missing term moves the mean by many standard
errors at these N (the seeds are fixed, so the tests are deterministic). References are independent: full passes
of the oracles, the paper's algorithms written out step by step, closed forms.
"""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.data import Batch
from fairmodel.families.gdro import group_risks_of
from fairmodel.families.lagrangian import LagrangianOracle
from fairmodel.families.piecewise import saddle_form
from fairmodel.oracles.dp_dual import DualProblem
from fairmodel.oracles.domains import project_ball
from fairmodel.stochastic.acsa import acsa, acsa2
from fairmodel.stochastic.aleg import aleg, normalize_log, snapshot_terms, vr_operator
from fairmodel.stochastic.bregman_smd import smd as auc_smd, upper_bound
from fairmodel.stochastic.dp_postprocessing import batch_gradient
from fairmodel.stochastic.iqrc import iqrc
from fairmodel.stochastic.ogda_estimator import Estimator
from fairmodel.stochastic.sgd3 import sgd3, sgd3_stages
from fairmodel.stochastic.smd import smd
from fairmodel.stochastic.ssg import polyak_feasibility, ssg

from .conftest import make_instance

K_SE = 5.0


def assert_unbiased(draws, exact, k=K_SE):
    """The mean of ``draws`` (first axis) lies within k standard errors of ``exact``, coordinate by coordinate."""
    draws = np.asarray(draws, dtype=float).reshape(len(draws), -1)
    exact = np.asarray(exact, dtype=float).ravel()
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    err = np.abs(draws.mean(axis=0) - exact)
    assert np.all(err <= k * se + 1e-12 * (1.0 + np.abs(exact))), (err / np.maximum(se, 1e-300)).max()


# ---------------------------------------------------------------------------------------------------------------
# The generic lowering: LagrangianOracle.estimate (variance-reduced mirror-prox on the Lagrangian)
# ---------------------------------------------------------------------------------------------------------------
def _composition(equal_cells: bool, seed=0, compiled=True):
    """A declaration with every kind of leaf: group risks (one max), a masked mean, a norm (exact leaf), a
    covariance constraint over all rows and a masked group-mean constraint (pieces under the penalty). With
    ``equal_cells`` the cells (group x label) all hold 12 rows, so that 12 rows per cell is the whole data."""
    rng = np.random.default_rng(seed)
    if equal_cells:
        groups = np.repeat([0, 1, 2], 24)
        y = np.tile(np.repeat([1.0, -1.0], 12), 3)
        X = rng.normal(size=(72, 3))
    else:
        n = 150
        groups, y, X = rng.integers(0, 3, size=n), np.where(rng.random(n) < 0.4, 1.0, -1.0), rng.normal(size=(n, 3))
    data = fm.Dataset(X, y, groups=groups)
    w = fm.Weights(3, radius=2.0, intercept=True)
    s = data.score(w)
    loss = fm.logistic_loss(s, data.y)
    m = fm.group_mean(s, data.groups, where=data.y > 0)
    z = data.X[:, 0]
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(loss, data.groups)) + 0.5 * fm.mean(loss, where=data.y > 0)
                                  + 0.05 * fm.norm(w)),
                      [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.05, fm.max(m) - fm.min(m) <= 0.1])
    oracle = LagrangianOracle(saddle_form(prob.canonical, w), w, bound=3.0, batch_size=12 if equal_cells else None,
                              compiled=compiled)
    assert (oracle.kernels is not None) == compiled        # compiled leaf evaluators, or the tree walk
    return oracle, w, rng


def _random_point(oracle, w, rng):
    theta = 0.9 * w.project(rng.normal(size=w.shape))          # inside the ball (finite differences need room)
    ys = [rng.dirichlet(np.ones(m)) for m in oracle.blocks]
    return theta, ys


@pytest.mark.parametrize("compiled", [True, False])
def test_lagrangian_estimate_on_all_rows_is_the_full_operator(compiled):
    """(a) 12 rows from each of the 6 cells of 12 rows are the whole data: the variance-reduced estimate at any
    (w, y) equals the exact gradient and piece values there (a full pass), not only at the snapshot."""
    oracle, w, rng = _composition(equal_cells=True, compiled=compiled)
    assert [r.size for r in oracle.cell_rows] == [12] * 6 and oracle.b == 12
    rows = np.concatenate(oracle.cell_rows)         # cell by cell, as a minibatch lays them out
    for _ in range(3):
        snap = oracle.snapshot(*_random_point(oracle, w, rng))
        theta, ys = _random_point(oracle, w, rng)
        grad, values = oracle.estimate(rows, theta, ys, snap)
        full = oracle.snapshot(theta, ys)
        np.testing.assert_allclose(grad, full.grad, rtol=1e-10, atol=1e-12)
        for v, v_full in zip(values, full.values):
            np.testing.assert_allclose(v, v_full, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("compiled", [True, False])
def test_lagrangian_estimate_is_unbiased(compiled):
    """(b) Cells of unequal sizes, minibatches drawn by the oracle: the mean of 3000 estimates of the gradient and of
    every piece is within K_SE standard errors of the full pass."""
    oracle, w, rng = _composition(equal_cells=False, seed=1, compiled=compiled)
    snap = oracle.snapshot(*_random_point(oracle, w, rng))
    theta, ys = _random_point(oracle, w, rng)
    full = oracle.snapshot(theta, ys)
    draws = [oracle.estimate(rows, theta, ys, snap) for rows in oracle.draw(rng, 3000)]
    assert_unbiased([g for g, _ in draws], full.grad)
    assert_unbiased([np.concatenate(v) for _, v in draws], np.concatenate(full.values))
    # the estimates vary: the test is not vacuous (a minibatch is not the full data here)
    assert np.std([g[0] for g, _ in draws]) > 1e-3


@pytest.mark.parametrize("compiled", [True, False])
def test_lagrangian_estimate_at_the_snapshot_is_exact_for_every_batch(compiled):
    """(c) The variance-reduction identity: at the snapshot the estimate is the full operator for any minibatch."""
    oracle, w, rng = _composition(equal_cells=False, seed=2, compiled=compiled)
    theta, ys = _random_point(oracle, w, rng)
    snap = oracle.snapshot(theta, ys)
    for rows in oracle.draw(rng, 5):
        grad, values = oracle.estimate(rows, theta, ys, snap)
        np.testing.assert_allclose(grad, snap.grad, rtol=1e-12, atol=1e-13)
        for v, v_snap in zip(values, snap.values):
            np.testing.assert_allclose(v, v_snap, rtol=1e-12, atol=1e-13)


def test_lagrangian_phi_and_penalized_value_from_the_declaration():
    """Phi(w, y) = sum_k omega_k(y) leaf_k + const and max_y Phi = objective + bound * max(0, max_j C_j): both
    against the declaration evaluated directly (the penalty from the declared constraints' values)."""
    oracle, w, rng = _composition(equal_cells=False, seed=3)
    for _ in range(3):
        theta, ys = _random_point(oracle, w, rng)
        snap = oracle.snapshot(theta, ys)
        phi, grad = oracle.phi(theta, ys)
        direct = oracle.a0 @ snap.leaves + oracle.c0 + sum(float(y @ v) for y, v in zip(ys, snap.values))
        assert phi == pytest.approx(direct, rel=1e-12)
        h = 1e-6
        fd = np.array([(oracle.phi(theta + h * e, ys)[0] - oracle.phi(theta - h * e, ys)[0]) / (2 * h)
                       for e in np.eye(theta.size)])
        np.testing.assert_allclose(grad, fd, atol=1e-6)
        pieces = snap.values[-1][:-1] / oracle.bound       # the constraint pieces C_j(w)
        objective = oracle.a0 @ snap.leaves + oracle.c0 + sum(float(np.max(v)) for v in snap.values[:-1])
        expected = objective + oracle.bound * max(0.0, float(pieces.max()))
        assert oracle.penalized(snap.leaves, snap.values) == pytest.approx(expected, rel=1e-12)


def test_primal_dual_steps_follow_the_method():
    """The generic method with every row in every minibatch (exact estimates): its output equals the method written
    out here (ALEG's Algorithm 1 with one simplex per block, Alacaoglu and Malitsky 2022): per epoch a snapshot, per
    step a half step with the snapshot operator and a full step with the operator at the half point, both from the
    anchors alpha z^s + (1 - alpha) z_k (log space for the simplices), the snapshot of the next epoch the mean of the
    iterates, the output the mean of the half iterates of the second half of the epochs."""
    from fairmodel.stochastic.primal_dual import primal_dual
    oracle, w, _ = _composition(equal_cells=True)
    all_rows = np.concatenate(oracle.cell_rows)
    oracle.draw = lambda rng, n: np.tile(all_rows, (n, 1))
    epochs, K, gw, gy = 4, 3, 0.3, 0.5
    out = primal_dual(oracle, epochs=epochs, inner=K, step_w=gw, step_y=gy, seed=0)
    wk = oracle.project(np.zeros(oracle.shape))
    logy = [np.full(m, -np.log(m)) for m in oracle.blocks]
    snap_w, snap_lam = wk.copy(), [lv.copy() for lv in logy]
    out_w, out_y, out_n = 0.0, [0.0] * len(logy), 0
    for s in range(epochs):
        snap = oracle.snapshot(snap_w, [np.exp(normalize_log(lv)) for lv in snap_lam])
        acc_w, acc_lam = 0.0, [0.0] * len(logy)
        for _ in range(K):
            anchor_w = snap_w / K + (1 - 1 / K) * wk
            anchor = [a / K + (1 - 1 / K) * b for a, b in zip(snap_lam, logy)]
            w_half = oracle.project(anchor_w - gw * snap.grad)
            y_half = [np.exp(normalize_log(a + gy * v)) for a, v in zip(anchor, snap.values)]
            at_half = oracle.snapshot(w_half, y_half)
            wk = oracle.project(anchor_w - gw * at_half.grad)
            logy = [normalize_log(a + gy * v) for a, v in zip(anchor, at_half.values)]
            if s >= epochs // 2:
                out_w, out_y, out_n = out_w + w_half, [o + y for o, y in zip(out_y, y_half)], out_n + 1
            acc_w, acc_lam = acc_w + wk, [a + lv for a, lv in zip(acc_lam, logy)]
        snap_w, snap_lam = acc_w / K, [a / K for a in acc_lam]
    np.testing.assert_allclose(out["w"], oracle.project(out_w / out_n), rtol=1e-10, atol=1e-12)
    for got, acc in zip(out["ys"], out_y):
        np.testing.assert_allclose(got, acc / acc.sum(), rtol=1e-10, atol=1e-12)


def test_primal_dual_default_steps_shrink_as_one_over_sqrt_of_long_epochs():
    """The default steps are the oracle's up to STEADY_INNER inner steps an epoch and shrink as 1 / sqrt(inner)
    beyond (Alacaoglu and Malitsky 2022: the step sqrt(p) / L for a snapshot every 1 / p steps); step_scale
    multiplies them; given steps are left as they are."""
    from fairmodel.stochastic.primal_dual import STEADY_INNER, primal_dual
    oracle, w, _ = _composition(equal_cells=True)
    gw, gy = oracle.default_steps(oracle.project(np.zeros(oracle.shape)), [np.full(m, 1.0 / m) for m in oracle.blocks])

    def steps(**options):
        out = primal_dual(oracle, epochs=1, seed=0, **options)["steps"]
        return out["step_w"], out["step_y"]
    for inner, factor in [(STEADY_INNER // 4, 1.0), (STEADY_INNER, 1.0), (4 * STEADY_INNER, 0.5)]:
        got_w, got_y = steps(inner=inner)
        assert got_w == pytest.approx(factor * gw, rel=1e-12)
        np.testing.assert_allclose(got_y, factor * np.asarray(gy), rtol=1e-12)
    assert steps(inner=4 * STEADY_INNER, step_scale=0.5)[0] == pytest.approx(0.25 * gw, rel=1e-12)
    assert steps(inner=4 * STEADY_INNER, step_w=0.3, step_y=0.7) == (0.3, [0.7] * len(gy))


# ---------------------------------------------------------------------------------------------------------------
# ALEG (Yu, Cai, Jiang, Zhang 2024, eq. (22)) and SMD on group risks
# ---------------------------------------------------------------------------------------------------------------
class _AllRows:
    """A per-group sampler whose every draw is the whole data, group by group (groups of equal size b): ``draw(k)``
    returns each group's rows k / b times (a block of k / b steps, group-major, as ALEG's block draws lay them out)."""

    def __init__(self, risks):
        self.index, self.X = risks.index, risks.data.X

    def draw(self, k=None):
        b = self.index[0].size
        rows = np.concatenate([np.tile(ix, 1 if k is None else k // b) for ix in self.index])
        return Batch(self.X[rows], None, None, rows)


@pytest.fixture
def equal_groups():
    """3 logistic groups of 20 rows, radius 3, an intercept (make_gdro_synthetic)."""
    data, w, expr = make_instance(sizes=(20, 20, 20), intercept=True, seed=3)
    return group_risks_of(expr)


def test_aleg_estimate_on_all_rows_is_the_full_operator(equal_groups):
    """(a) b = 20 rows per group, every row once: g of eq. (22) at any (w_half, q_half) equals the operator (16)
    there, (sum_i q_i grad R_i(w_half), -(R(w_half) - c)), with offsets c cancelling in the difference term."""
    R = equal_groups
    rng = np.random.default_rng(0)
    c = np.array([0.1, -0.2, 0.3])
    batch = _AllRows(R).draw()
    for _ in range(3):
        w_s, q_s = R.project(rng.normal(size=R.shape)), rng.dirichlet(np.ones(3))
        w_h, q_h = R.project(rng.normal(size=R.shape)), rng.dirichlet(np.ones(3))
        r_s, g_s, z_s = R.risks_and_grad(w_s, q_s)
        v_w, v_q = vr_operator(R, *snapshot_terms(R, batch, z_s), 20, w_h, q_h, q_s, r_s - c, g_s)
        r_h, g_h, _ = R.risks_and_grad(w_h, q_h)
        np.testing.assert_allclose(v_w, g_h, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(v_q, -(r_h - c), rtol=1e-10, atol=1e-12)
        # the chunked path (no cached scores: the sampled rows' snapshot scores recomputed) gives the same terms
        v_w2, v_q2 = vr_operator(R, *snapshot_terms(R, batch, None, w_s), 20, w_h, q_h, q_s, r_s - c, g_s)
        np.testing.assert_allclose(v_w2, v_w, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(v_q2, v_q, rtol=1e-12, atol=1e-13)


def test_aleg_estimate_with_minibatches_is_unbiased(small_risks):
    """(b) b = 4 rows per group from the per-group sampler of eq. (20), unequal groups (40, 50, 60): the mean of
    2000 estimates is within K_SE standard errors of the operator at the half point."""
    R = small_risks
    rng = np.random.default_rng(1)
    w_s, q_s = R.project(rng.normal(size=5)), rng.dirichlet(np.ones(3))
    w_h, q_h = R.project(rng.normal(size=5)), rng.dirichlet(np.ones(3))
    r_s, g_s, z_s = R.risks_and_grad(w_s, q_s)
    sampler = R.sampler(4, rng)
    draws = [np.concatenate(vr_operator(R, *snapshot_terms(R, sampler.draw(), z_s), 4, w_h, q_h, q_s, r_s, g_s))
             for _ in range(2000)]
    r_h, g_h, _ = R.risks_and_grad(w_h, q_h)
    assert_unbiased(draws, np.concatenate([g_h, -r_h]))


def test_aleg_steps_follow_algorithm_1(equal_groups):
    """ALEG with every row in every minibatch (so the estimator (22) is the operator (16) at the half point): each
    traced step is the pair of mirror steps (19), (23) from the anchors alpha z^s + (1 - alpha) z_k, recomputed here
    from full passes: w_half = Proj(anchor_w - gamma_w g(w^s, q^s)), ln q_half = anchor_q + gamma_q (R(w^s) - c) - lse,
    then the same from the anchors with the operator at (w_half, q_half)."""
    R = equal_groups
    R.sampler = lambda batch_size, rng, prefetch=True: _AllRows(R)
    c = np.array([0.1, 0.0, 0.2])
    gw, gq = 0.8, 1.5
    trace = []
    aleg(R, epochs=2, inner=3, batch_size=20, step_w=gw, step_q=gq, offsets=c, seed=0, trace=trace)
    w_prev, logq_prev = np.zeros(R.shape), np.full(3, -np.log(3))
    for t in trace:
        a = t["alpha"]
        anchor_w = a * t["snap_w"] + (1 - a) * w_prev
        anchor_q = a * t["snap_lam"] + (1 - a) * logq_prev
        r_s, g_s, _ = R.risks_and_grad(t["snap_w"], t["snap_q"])
        w_half = project_ball(anchor_w - gw * g_s, R.radius)
        q_half = np.exp(normalize_log(anchor_q + gq * (r_s - c)))
        np.testing.assert_allclose(t["w_half"], w_half, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(t["q_half"], q_half, rtol=1e-10, atol=1e-12)
        r_h, g_h, _ = R.risks_and_grad(w_half, q_half)
        np.testing.assert_allclose(t["w"], project_ball(anchor_w - gw * g_h, R.radius), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(t["q"], np.exp(normalize_log(anchor_q + gq * (r_h - c))), rtol=1e-10, atol=1e-12)
        w_prev, logq_prev = t["w"], np.log(t["q"])
    assert len(trace) == 6 and not np.allclose(trace[0]["w"], trace[-1]["w"])


def test_smd_step_on_all_rows_is_the_exact_mirror_step(equal_groups):
    """(a) SMD with every row in its minibatch: one iteration is the exact mirror-descent step
    w1 = Proj(w0 - gamma_w sum_i q_i grad R_i(w0)), ln q1 = ln q0 + gamma_q (R(w0) - c) - logsumexp(...); with a
    constant schedule the output after two iterations is the plain average (z0 + z1) / 2."""
    R = equal_groups
    R.sampler = lambda batch_size, rng, prefetch=True: _AllRows(R)
    rng = np.random.default_rng(2)
    c = np.array([0.05, 0.0, -0.1])
    w0, q0 = R.project(0.3 * rng.normal(size=R.shape)), rng.dirichlet(np.ones(3) * 3)
    gw, gq = 0.7, 1.3
    out = smd(R, epochs=2, batch_size=20, step_w=gw, step_q=gq, step_schedule="constant", offsets=c, w0=w0, q0=q0,
              seed=0)
    r, g, _ = R.risks_and_grad(w0, q0)
    w1 = project_ball(w0 - gw * g, R.radius)
    q1 = np.exp(normalize_log(np.log(q0) + gq * (r - c)))
    np.testing.assert_allclose(out["w"], (w0 + w1) / 2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["q"], (q0 + q1) / 2, rtol=1e-10, atol=1e-12)


def test_smd_gradient_estimate_is_unbiased():
    """(b) SMD's w-step from b = 10 rows per group drawn with replacement (groups of 10, so one iteration per epoch;
    no radius, so w1 is linear in the estimate): over 800 seeded runs of two iterations, w1 = 2 out - w0 averages to
    the exact step w0 - gamma_w sum_i q_i grad R_i(w0)."""
    data, w, expr = make_instance(sizes=(10, 10, 10), radius=None, seed=4)
    R = group_risks_of(expr)
    w0, q0 = 0.2 * np.ones(5), np.array([0.2, 0.3, 0.5])
    gw = 0.5
    draws = [2 * smd(R, epochs=2, batch_size=10, step_w=gw, step_q=1.0, step_schedule="constant", w0=w0, q0=q0,
                     seed=seed)["w"] - w0 for seed in range(800)]
    _, g, _ = R.risks_and_grad(w0, q0)
    assert_unbiased(draws, w0 - gw * g)
    assert np.std([d[0] for d in draws]) > 1e-3        # draws with replacement: the step is random


# ---------------------------------------------------------------------------------------------------------------
# DP post-processing: the stochastic gradient (11), AC-SA (Algorithm 2), AC-SA^2 (Algorithm 3), SGD3 (Algorithm 4)
# ---------------------------------------------------------------------------------------------------------------
def _dp_problem(n=60, m=7, K=3, beta=20.0, seed=0):
    rng = np.random.default_rng(seed)
    tau = rng.dirichlet(np.ones(K), size=n)
    p = rng.dirichlet(np.full(K, 5.0))
    grid = np.linspace(-1, 1, m)
    eta = rng.uniform(-1, 1, n)
    R = (eta[:, None] - grid) ** 2
    return 1.0 - tau / p, R, np.array([0.01, 0.03, 0.02])[:K], beta, rng


def test_dp_gradient_on_all_points_is_the_dual_gradient():
    """(a) The minibatch gradient (11) over every point (uniform weights, the 1/b mean) and over weighted points
    equals grad F (10) of the dual on those atoms; one point alone equals grad F of the one-atom dual."""
    T, R, eps, beta, rng = _dp_problem()
    z = rng.exponential(size=(2, 7, 3)) * 0.5
    out = np.empty((2, 7, 3))
    np.testing.assert_allclose(batch_gradient(z, T, R, beta, eps, out).copy(), DualProblem(R, T, eps, beta).grad(z),
                               rtol=1e-12, atol=1e-14)
    w = rng.random(T.shape[0]) + 0.1
    w /= w.sum()
    np.testing.assert_allclose(batch_gradient(z, T, R, beta, eps, out, w).copy(),
                               DualProblem(R, T, eps, beta, w).grad(z), rtol=1e-12, atol=1e-14)
    for i in (0, 17):
        np.testing.assert_allclose(batch_gradient(z, T[i], R[i], beta, eps, out).copy(),
                                   DualProblem(R[i:i + 1], T[i:i + 1], eps, beta).grad(z), rtol=1e-12, atol=1e-14)


def test_dp_gradient_of_stacked_duals_is_each_dual_gradient():
    """(a) A stack of duals (one per eps of a sweep) fed the same points: each slice equals the gradient of its own
    dual, for one point and for a batch."""
    T, R, eps, beta, rng = _dp_problem(seed=1)
    eps_stack = np.stack([np.broadcast_to(e, (7, 3)) for e in (eps, 2 * eps, 0.5 * eps)])
    z = rng.exponential(size=(3, 2, 7, 3)) * 0.5
    out = np.empty_like(z)
    batch = batch_gradient(z, T[:9], R[:9], beta, eps_stack, out).copy()
    point = batch_gradient(z, T[4], R[4], beta, eps_stack, np.empty_like(z)).copy()
    for k, scale in enumerate((1.0, 2.0, 0.5)):
        np.testing.assert_allclose(batch[k], DualProblem(R[:9], T[:9], scale * eps, beta).grad(z[k]),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(point[k], DualProblem(R[4:5], T[4:5], scale * eps, beta).grad(z[k]),
                                   rtol=1e-12, atol=1e-14)


def test_dp_gradient_from_resampled_points_is_unbiased():
    """(b) Minibatches of 5 points drawn uniformly with replacement (the 'resample' oracle): the mean of 3000
    gradients is within K_SE standard errors of grad F on the pool."""
    T, R, eps, beta, rng = _dp_problem(seed=2)
    z = rng.exponential(size=(2, 7, 3)) * 0.5
    draws = []
    for _ in range(3000):
        rows = rng.integers(0, T.shape[0], size=5)
        draws.append(batch_gradient(z, T[rows], R[rows], beta, eps, np.empty((2, 7, 3))).copy())
    assert_unbiased(draws, DualProblem(R, T, eps, beta).grad(z))


def _acsa_reference(grad, w0, mu, M, T, alpha_of=lambda t: 2.0 / (t + 1)):
    """Algorithm 2 (AC-SA, Ghadimi and Lan 2012) on the nonnegative orthant, line by line."""
    w, w_ag = w0.copy(), w0.copy()
    for t in range(1, T + 1):
        a, g = alpha_of(t), 4.0 * M / (t * (t + 1))
        den = g + (1 - a ** 2) * mu
        w_md = (1 - a) * (mu + g) / den * w_ag + a * ((1 - a) * mu + g) / den * w
        w = np.maximum(((1 - a) * mu + g) / (mu + g) * w + a * mu / (mu + g) * w_md - a / (mu + g) * grad(w_md), 0.0)
        w_ag = a * w + (1 - a) * w_ag
    return w_ag


def _drive(generator, grad):
    """Feed a generator optimizer (yield query, receive gradient) until it returns."""
    query, _ = next(generator)
    try:
        while True:
            query, _ = generator.send(grad(query.copy()))
    except StopIteration as stop:
        return stop.value


class _NoisyQuadratic:
    """grad of 1/2 w'Aw - b'w plus a fixed noise sequence (the t-th call gets noise[t]): a deterministic stochastic
    oracle, so two optimizers fed from fresh copies see the same gradients."""

    def __init__(self, seed=0, d=6, calls=4000):
        rng = np.random.default_rng(seed)
        B = rng.normal(size=(d, d))
        self.A, self.b = B @ B.T / d + 0.5 * np.eye(d), rng.normal(size=d)
        self.noise = 0.1 * rng.normal(size=(calls, d))
        self.t = 0

    def __call__(self, w):
        g = self.A @ w - self.b + self.noise[self.t]
        self.t += 1
        return g


def test_acsa_and_acsa2_follow_algorithms_2_and_3():
    """AC-SA's vectorized steps equal Algorithm 2 written out (alpha_t = 2/(t+1), gamma_t = 4M/(t(t+1)), the exact
    prox step then the projection max(., 0)); AC-SA^2 restarts it halfway (Algorithm 3)."""
    w0 = np.abs(np.random.default_rng(1).normal(size=6))
    M, mu = 3.0, 0.4
    got = _drive(acsa(w0, mu, M, 50), _NoisyQuadratic())
    np.testing.assert_allclose(got, _acsa_reference(_NoisyQuadratic(), w0, mu, M, 50), rtol=1e-11, atol=1e-12)
    ref_oracle = _NoisyQuadratic()
    half = _acsa_reference(ref_oracle, w0, mu, M, 25)
    expected = _acsa_reference(ref_oracle, half, mu, M, 25)
    np.testing.assert_allclose(_drive(acsa2(w0, mu, M, 51), _NoisyQuadratic()), expected, rtol=1e-11, atol=1e-12)
    # the reference code's schedule alpha_t = 2/t (reference=True)
    got = _drive(acsa(w0, mu, M, 30, reference=True), _NoisyQuadratic())
    np.testing.assert_allclose(got, _acsa_reference(_NoisyQuadratic(), w0, mu, M, 30, lambda t: 2.0 / t),
                               rtol=1e-11, atol=1e-12)


def test_sgd3_follows_algorithm_4():
    """SGD3-refined: J = floor(log2(M / mu)) stages of AC-SA^2 on F^(j-1) = F + sum_{i < j} mu_i/2 ||w - w_hat_i||^2
    (F^(0) with mu/2 ||w - w0||^2), smoothness 2(M + mu), mu_j = 2 mu_{j-1}: the regularized gradients are formed
    here explicitly and fed to the reference AC-SA."""
    w0 = np.abs(np.random.default_rng(2).normal(size=6))
    M, mu, T = 4.0, 0.3, 120
    J = sgd3_stages(M, mu)
    assert J == int(np.floor(np.log2(M / mu))) == 3
    got = _drive(sgd3(w0, mu, M, T, inner="acsa2"), _NoisyQuadratic(seed=3))
    oracle = _NoisyQuadratic(seed=3)
    anchors, mus, w_hat, mu_j = [w0], [mu], w0, mu
    for _ in range(J):
        def grad(w, anchors=tuple(anchors), mus=tuple(mus)):
            return oracle(w) + sum(m_ * (w - a) for m_, a in zip(mus, anchors))
        per = T // J
        w_hat = _acsa_reference(grad, w_hat, mu_j, 2 * (M + mu), per // 2)
        w_hat = _acsa_reference(grad, w_hat, mu_j, 2 * (M + mu), per // 2)
        mu_j *= 2.0
        anchors.append(w_hat)
        mus.append(mu_j)
    np.testing.assert_allclose(got, w_hat, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# AUC fairness: the pair estimates of Bregman SMD (Algorithm 2 of Yao, Lin, Yang 2023) and IQRC (Algorithm 3)
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def auc_family():
    data = fm.datasets.make_auc_synthetic()
    w = fm.Weights(5, radius=3.0)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra") <= 0.05])
    return prob.family


def test_pair_estimates_are_unbiased(auc_family):
    """(b) Minibatches of 20 rows drawn uniformly: the means of (g, u, v) over 2000 draws are within K_SE standard
    errors of the full-batch values (which equal the closed forms of Lemma 1: tests/test_auc_fairness_stochastic)."""
    fam = auc_family
    saddle = fam.saddle()
    rng = np.random.default_rng(0)
    theta, ab = 0.3 * rng.normal(size=5), 0.2 * rng.normal(size=2 * saddle.P)
    ytil, alpha = rng.dirichlet(np.ones(saddle.K1)), 0.1 * rng.normal(size=saddle.P)
    shift = saddle.shift(0.4)
    full = np.concatenate(saddle.gradients(theta, ab, ytil, alpha, np.arange(saddle.n), shift))
    draws = [np.concatenate(saddle.gradients(theta, ab, ytil, alpha, rng.integers(0, saddle.n, 20), shift))
             for _ in range(2000)]
    assert_unbiased(draws, full)


def test_proximal_smd_step_and_bound_of_iqrc(auc_family):
    """(a) IQRC's SMD (d_x = rho/2 ||x - x~||^2) with every row in one step: the x-step is the closed form of (29),
    argmin eta <g, x> + 1/2 ||x - x0||^2 + eta rho/2 ||x - x~||^2 = (x0 + eta rho x~ - eta g) / (1 + eta rho), and
    U(r) after one step is Lemma 4's bound at (u, v) plus the proximal term rho/2 ||x0 - x~||^2."""
    fam = auc_family
    saddle = fam.saddle()
    rng = np.random.default_rng(1)
    d, P, K1 = 5, saddle.P, saddle.K1
    center = np.concatenate([0.2 * rng.normal(size=d), 0.1 * rng.normal(size=2 * P)])
    x0 = center + 0.05 * rng.normal(size=center.size)
    rho, eta0, tau0 = 0.7, 0.05, 0.3
    out = auc_smd(saddle, 0.4, T=1, eta0=eta0, tau0=tau0, batch_size=saddle.n, rng=None, radius=3.0, rho_hat=rho,
                  center=center, x0=x0, stream=iter([np.arange(saddle.n)]))
    ytil0, alpha0 = np.full(K1, 1.0 / K1), np.zeros(P)
    g, u, v = saddle.gradients(x0[:d], x0[d:], ytil0, alpha0, np.arange(saddle.n), saddle.shift(0.4))
    x1 = (x0 + eta0 * rho * center - eta0 * g) / (1 + eta0 * rho)
    assert np.linalg.norm(x1[:d]) < 3.0 and np.all(np.abs(x1[d:]) < saddle.I)       # no projection, no clipping
    np.testing.assert_allclose(out["x_last"], x1, rtol=1e-12, atol=1e-14)
    expected_U = upper_bound(u, v, fam.pairs.q, saddle.I, saddle.block_sum) \
        + 0.5 * rho * float((x0 - center) @ (x0 - center))
    assert out["U"] == pytest.approx(expected_U, rel=1e-12)
    np.testing.assert_allclose(out["x"], x0, rtol=1e-12)          # the average of the one iterate x_0


def test_iqrc_calls_its_oracle_around_each_center_and_draws_the_output_uniformly():
    """Algorithm 3: subproblem s is centered at x~(s), starts at the level f0(x~(s)) with delta / S; the output
    index R is uniform on {0, ..., S} (every index within K_SE standard errors of frequency 1 / (S + 1))."""
    S, calls = 3, []

    def oracle(x0, rho_hat, center, r0, delta):
        calls.append((x0.copy(), center.copy(), r0, delta, rho_hat))
        return {"x": center + 1.0, "status": "completed", "history": [{}], "y": None}

    def evaluate(x):
        return {"track_f0": float(x.sum()), "track_violation": 0.0}

    out = iqrc(oracle, np.zeros(2), S=S, rho_hat=0.3, rng=np.random.default_rng(0), evaluate=evaluate, delta=0.06)
    assert [c[2] for c in calls] == [0.0, 2.0, 4.0]
    for k, (x0, center, _, delta, rho) in enumerate(calls):
        np.testing.assert_array_equal(center, np.full(2, float(k)))
        np.testing.assert_array_equal(x0, center)
        assert delta == pytest.approx(0.06 / S) and rho == 0.3
    np.testing.assert_array_equal(out["x"], out["centers"][out["index"]])
    indices = []
    for seed in range(600):
        calls.clear()
        indices.append(iqrc(oracle, np.zeros(2), S=S, rho_hat=0.3, rng=np.random.default_rng(seed),
                            evaluate=evaluate)["index"])
    onehot = np.eye(S + 1)[indices]
    assert_unbiased(onehot, np.full(S + 1, 1.0 / (S + 1)))


# ---------------------------------------------------------------------------------------------------------------
# SSG (Algorithm 2 of He, Huang, Yao, Lin 2025): the switching subgradient steps
# ---------------------------------------------------------------------------------------------------------------
def test_ssg_steps_are_the_objective_and_polyak_steps():
    """The objective step eps / ||g0'||^2 g0' and the Polyak step g / ||g'||^2 g' (which lands on the hyperplane of
    an affine constraint), each checked on one step with a nearly feasible / infeasible start."""
    c = np.array([2.0, 0.0])

    def objective(x):
        return float(c @ x), c

    def far_constraint(x):                  # g(x) = -1 - x[0] <= eps near x = 0
        return -1.0 - float(x[0]), lambda: np.array([-1.0, 0.0])

    out = ssg(np.zeros(2), 0.3, 2, objective, far_constraint, lambda x: x)
    np.testing.assert_allclose(out["x"], -0.3 / (c @ c) * c, rtol=1e-14)   # x1 = (-0.15, 0), better than x0
    a, b = np.array([0.0, 2.0]), 1.0

    def constraint(x):                       # g(x) = a.x - b
        return float(a @ x - b), lambda: a

    x0 = np.array([0.5, 3.0])
    out = ssg(x0, 0.01, 2, objective, constraint, lambda x: x)
    x1 = x0 - (a @ x0 - b) / (a @ a) * a
    assert a @ x1 - b == pytest.approx(0.0, abs=1e-14)
    np.testing.assert_allclose(out["x"], x1, rtol=1e-14)                   # the only nearly feasible iterate
    assert out["n_feasible"] == 1
    feas = polyak_feasibility(x0, constraint, lambda x: x, target=-0.5)
    np.testing.assert_allclose(a @ feas["x"] - b, -0.5, atol=1e-14)
    assert feas["status"] == "feasible" and feas["iterations"] == 1


# ---------------------------------------------------------------------------------------------------------------
# OGDA's zeroth-order estimator (Maheshwari et al. 2022, Section 4.1): exact identities over +-e_i
# ---------------------------------------------------------------------------------------------------------------
def test_zeroth_order_estimators_recover_the_gradient_over_coordinate_directions():
    """For a quadratic L, the two-point estimator along v = e_i is d dL/du_i e_i exactly, and the one-point
    estimates along +e_i and -e_i average to it; the mean over the 2d directions +-e_i is J grad L = (grad_x L,
    -grad_y L) exactly (the y-block negated)."""
    Q = np.array([[2.0, 0.5], [0.5, 1.0]])

    def L(x, y, i):
        return float(x @ Q @ x + 3 * x[0] * y[0] - y @ y + x[1] - 2 * y[1] + 1.5)
    sp = fm.SaddleProblem(L, 1, fm.Ball(2, 1.0), fm.Box(-1.0, 1.0, size=2))
    u = np.array([0.4, -0.3, 0.2, 0.6])
    x, y = u[:2], u[2:]
    expected = np.concatenate([2 * Q @ x + np.array([3 * y[0], 1.0]),
                               -(np.array([3 * x[0], 0.0]) - 2 * y + np.array([0.0, -2.0]))])
    R = 0.25
    for kind in ("one-point", "two-point"):
        est = Estimator(sp.oracle(), 0, kind)
        total = np.zeros(4)
        for e in np.eye(4):
            for v in (e, -e):
                gx, _, gy = est(0, u, R, v)
                total += np.concatenate([gx, gy])
        np.testing.assert_allclose(total / 8, expected, rtol=1e-12, atol=1e-12)


def test_dp_pool_oracles_serve_the_points_they_promise():
    """The costs computed per batch from eta and the grid equal the stored (eta - y_j)^2; 'exact' serves every point
    with its weight, 'stream' the points in order once, 'epochs' every point once per pass, and 'resample' by the
    weights (a weighted pool's draws have the weights as frequencies, within K_SE standard errors)."""
    from fairmodel.stochastic.dp_postprocessing import Pool
    T, R, eps, beta, rng = _dp_problem(n=40, seed=3)
    eta, grid = rng.uniform(-1, 1, 40), np.linspace(-1, 1, 7)
    pool = Pool(T, eta=eta, grid=grid)
    rows = np.array([3, 17, 17, 0])
    np.testing.assert_allclose(pool.costs(rows), (eta[rows, None] - grid[None, :]) ** 2, rtol=1e-15)
    t, r, w = next(Pool(T, R).batches("exact", 5, 1, rng))
    np.testing.assert_array_equal(t, T)
    np.testing.assert_array_equal(r, R)
    np.testing.assert_allclose(w, np.full(40, 1 / 40))
    streamed = [t for t, _, _ in Pool(T, R).batches("stream", 4, 10, rng)]
    np.testing.assert_array_equal(np.concatenate(streamed), T)
    seen = np.concatenate([t for t, _, _ in Pool(T, R).batches("epochs", 8, 10, rng)])   # two passes of 40
    for half in (seen[:40], seen[40:]):
        assert sorted(map(tuple, half)) == sorted(map(tuple, T))
    weights = rng.dirichlet(np.ones(40))
    pool = Pool(T, R, weights=weights)
    index = {tuple(row): i for i, row in enumerate(T)}
    drawn = [index[tuple(t)] for t, _, _ in pool.batches("resample", 1, 20000, rng)]
    assert_unbiased(np.eye(40)[drawn], weights)


def test_sgd3_gradient_mapping_parameter_and_projected_sgd():
    """alpha = 1 / (2^(J+2) mu) with J = floor(log2(M / mu)) lies in [1/(4M), 1/(2M)] (Thm C.2); projected SGD (the
    'SGD' baseline of App. G) is w <- max(w - step g, 0) with the mean of the last ceil(tail T) iterates, written out."""
    from fairmodel.stochastic.sgd3 import projected_sgd, sgd3_alpha
    for M, mu in ((4.0, 0.3), (10.0, 1.0), (1.0, 0.5)):
        J = int(np.floor(np.log2(M / mu)))
        alpha = sgd3_alpha(M, mu)
        assert alpha == pytest.approx(1.0 / (2 ** (J + 2) * mu), rel=1e-15)
        assert 1 / (4 * M) - 1e-15 <= alpha <= 1 / (2 * M) + 1e-15
    w0 = np.abs(np.random.default_rng(4).normal(size=6))
    for T, tail in ((40, 1.0), (40, 0.25), (7, 0.5)):
        oracle, w, kept = _NoisyQuadratic(seed=5), w0.copy(), []
        for _ in range(T):
            w = np.maximum(w - 0.2 * oracle(w), 0.0)
            kept.append(w)
        expected = np.mean(kept[T - int(np.ceil(tail * T)):], axis=0)
        np.testing.assert_allclose(_drive(projected_sgd(w0, 0.2, T, tail), _NoisyQuadratic(seed=5)), expected,
                                   rtol=1e-12, atol=1e-14)


def test_sfls_moves_the_level_by_u_over_two_theta_and_halts_at_eps_opt():
    """Algorithm 1 of the AUC-fairness paper with an exact oracle U(r) = H(r) = f* - r (an unconstrained problem):
    r_(k+1) = r_k + U_k / (2 theta), delta_k = delta / 2^k, eps_opt = -U(r_0) eps / theta (Proposition 1, when not
    given), and the run halts at the first k with U_k >= -eps_opt."""
    from fairmodel.stochastic.sfls import sfls
    f_star, theta, delta, eps = 0.3, 1.5, 0.05, 0.02
    out = sfls(lambda r, delta_k, k: {"U": f_star - r, "x": np.array([r]), "status": "completed"}, 1.0, theta=theta,
               delta=delta, eps=eps, max_outer=200)
    levels = [h["level"] for h in out["history"]]
    r, eps_opt = 1.0, (1.0 - f_star) * eps / theta
    for k, h in enumerate(out["history"]):
        assert h["level"] == pytest.approx(r, rel=1e-14) and h["delta_k"] == pytest.approx(delta / 2 ** k)
        if f_star - r >= -eps_opt:
            break
        r += (f_star - r) / (2 * theta)
    assert out["eps_opt"] == pytest.approx(eps_opt, rel=1e-14)
    assert out["status"] == "converged" and len(levels) == k + 1
    assert f_star <= levels[-1] <= f_star + eps_opt


def test_dp_parameter_rules():
    """The rules the DP runs take their grid and temperature from: the experiments' (App. G, the authors' code)
    L = floor(sqrt(N)), beta = sqrt(N) log2(N) / 2 for N unlabeled points (N = 800: L = 28, beta = 136); Thm 5.1's
    beta = T / (8 log2 T), L = round(sqrt(T)) for T stochastic gradients; entropy = 1 / beta."""
    from fairmodel.families.dp_runs import dp_parameters
    ref = dp_parameters("reference", n=800)
    assert ref["L"] == 28 and ref["beta"] == pytest.approx(0.5 * np.sqrt(800) * np.log2(800), rel=1e-15)
    assert ref["entropy"] == pytest.approx(1 / ref["beta"], rel=1e-15)
    theory = dp_parameters("theory", T=2 ** 13)
    assert theory["L"] == round(np.sqrt(2 ** 13)) and theory["beta"] == pytest.approx(2 ** 13 / (8 * 13), rel=1e-15)
