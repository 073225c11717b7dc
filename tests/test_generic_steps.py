"""The curvature moments behind the generic lowering's w-step (families/lagrangian.py): the Hessian of one pass
and the second moment of the minibatch Hessians, against finite differences of the minibatch gradients."""
import numpy as np
import pytest
from scipy import sparse

import fairmodel as fm
from fairmodel.families import leaf_kernels
from fairmodel.families.lagrangian import LagrangianOracle
from fairmodel.families.piecewise import saddle_form


def _covariance_problem(sparse_design=False):
    """Logistic regression under a covariance constraint on 300 rows; one column is a category of 3 rows."""
    rng = np.random.default_rng(0)
    n = 300
    X = np.column_stack([rng.normal(size=(n, 3)), np.zeros(n)])
    X[:3, 3] = 1.0
    y = np.where(X[:, 0] + rng.normal(size=n) > 0, 1.0, -1.0)
    data = fm.Dataset(sparse.csr_matrix(X) if sparse_design else X, y, groups=(rng.random(n) < 0.4).astype(int))
    w = fm.Weights(4, radius=5.0, intercept=True)
    s = data.score(w)
    z = (data.groups.codes == 1).astype(float)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))),
                      [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.01]), w


@pytest.mark.parametrize("batch_size, sparse_design, block", [(1, False, 4096), (3, False, 7), (3, True, 7)])
def test_curvature_moments_match_the_minibatch_hessians(batch_size, sparse_design, block, monkeypatch):
    monkeypatch.setattr(leaf_kernels, "QUADRATIC_ROWS", block)     # the quadratic forms by blocks of rows
    prob, w = _covariance_problem(sparse_design)
    form = saddle_form(prob.canonical, w)
    oracle = LagrangianOracle(form, w, 3.0, batch_size=batch_size, coordinates=prob.family.coordinates(form))
    rng = np.random.default_rng(1)
    u = oracle.to_u(0.5 * w.project(rng.normal(size=w.shape)))
    omega = np.abs(rng.normal(size=len(form.leaves)))
    H_u, K_u = oracle._curvature_moments(u, omega)
    h, D = 1e-5, u.size

    def grad(v):
        return oracle._sample_pass(v, omega)[1] + oracle._exact(v, omega)[1]
    H = np.column_stack([(grad(u + h * e) - grad(u - h * e)) / (2 * h) for e in np.eye(D)])
    assert np.allclose(H_u, (H + H.T) / 2, rtol=1e-5, atol=1e-7 * np.abs(H).max())
    # every row alone as a minibatch of one (one cell: the rows are drawn uniformly): E ||A_i d||^2 = d' K d, and
    # K_u = K / batch_size
    rows = np.arange(oracle.n_samples)[:, None]
    one = LagrangianOracle(form, w, 3.0, batch_size=1, coordinates=prob.family.coordinates(form))
    assert len(one.cell_rows) == 1
    for d in [np.eye(D)[3], rng.normal(size=D)]:
        d = d / np.linalg.norm(d)
        plus, minus = (one._minibatch_passes(u + t * h * d, omega, rows)[1] for t in (1, -1))
        per_row = (plus - minus) / (2 * h)
        assert batch_size * float(d @ K_u @ d) == pytest.approx(float(np.mean(np.sum(per_row ** 2, axis=1))),
                                                                rel=1e-5)


def test_the_hinge_losses_step_does_not_collapse_where_a_row_sits_at_its_kink():
    """The w-step is measured on difference quotients of the gradient; the hinge's slope jumps at the margin, so a
    short chord across a row at its kink measures the jump divided by the chord (a curvature of 1e4 x the jump on a
    chord of 1e-4) and the step collapses. With half the rows exactly at the margin at w0, the step there stays
    within a factor 3 of the step at a point 1 % of ||w0|| away (where no row sits exactly at its kink); on chords of
    1e-4 x ||w|| the two differ by orders of magnitude."""
    rng = np.random.default_rng(0)
    n, d = 400, 3
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    w0 = np.array([1.0, -0.5, 0.25])
    margins = y * (X @ w0)
    at_kink = margins > 0.1
    X[at_kink] /= margins[at_kink, None]                # y_i x_i . w0 = 1 on these rows: the hinge's kink
    data = fm.Dataset(X, y, groups=(rng.random(n) < 0.4).astype(int))
    w = fm.Weights(d, radius=5.0)
    s = data.score(w)
    risks = fm.group_mean(fm.hinge_loss(s, data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= 0.05])
    form = saddle_form(prob.canonical, w)
    oracle = LagrangianOracle(form, w, 3.0, coordinates=prob.family.coordinates(form))
    assert at_kink.sum() > n // 3
    kink_step = oracle.default_steps(oracle.to_u(w0))[0]
    away = w0 + 0.01 * np.linalg.norm(w0) * rng.normal(size=d) / np.sqrt(d)
    away_step = oracle.default_steps(oracle.to_u(away))[0]
    assert np.isfinite(kink_step) and np.isfinite(away_step)
    assert kink_step >= away_step / 3, (kink_step, away_step)
