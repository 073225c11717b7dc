"""Every rule of the CVXPY lowering table against a NumPy formula written here (and the DSL's own value): each
atom is lowered, its CVXPY variable set to a random point, and the CVXPY expression's value compared to the direct
formula at that point (1e-9 relative: both are floating-point evaluations of the same closed form)."""
import numpy as np
import pytest
from scipy.special import logsumexp

import fairmodel as fm
from fairmodel.exact.lower import LoweringContext, lower
from fairmodel.expressions import evaluate

RTOL = 1e-9


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    n, d = 90, 3
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.45, 1.0, -1.0)
    g = rng.integers(0, 3, n)
    return fm.Dataset(X, y, groups=g), rng


def _lowered_value(e, w, theta):
    ctx = LoweringContext()
    out = lower(e, ctx)
    ctx.variables[w].value = theta
    return np.asarray(out.value, dtype=float)


def _check(e, w, theta, expected):
    np.testing.assert_allclose(_lowered_value(e, w, theta), expected, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(np.asarray(evaluate(e, {w: theta}), dtype=float), expected, rtol=RTOL, atol=1e-12)


def test_losses_of_a_linear_score_with_an_intercept(toy):
    data, rng = toy
    w = fm.Weights(3, intercept=True)
    theta = rng.normal(size=4)
    z, y = data.X @ theta[:3] + theta[3], data.y
    r = z - y
    delta = 0.7
    cases = {
        "logistic": (fm.logistic_loss(data.score(w), y), np.log1p(np.exp(-y * z))),
        "hinge": (fm.hinge_loss(data.score(w), y), np.maximum(0, 1 - y * z)),
        "squared": (fm.squared_loss(data.score(w), y), r ** 2),
        "huber": (fm.huber_loss(data.score(w), y, delta=delta),
                  np.where(np.abs(r) <= delta, r ** 2, 2 * delta * np.abs(r) - delta ** 2)),
        "squared_hinge": (fm.squared_hinge_loss(data.score(w), y), np.maximum(0, 1 - y * z) ** 2),
    }
    for name, (e, expected) in cases.items():
        _check(fm.mean(e), w, theta, expected.mean())
        _check(e, w, theta, expected)


def test_softmax_loss_of_a_matrix_score(toy):
    data, rng = toy
    labels = rng.integers(0, 3, data.n_samples)
    w = fm.Weights(3, n_outputs=3, intercept=True)
    theta = rng.normal(size=w.shape)
    Z = data.X @ theta[:3] + theta[3]
    expected = logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), labels]
    _check(fm.mean(fm.softmax_loss(data.score(w), labels)), w, theta, expected.mean())


def test_aggregates_masks_and_piecewise_atoms(toy):
    data, rng = toy
    w = fm.Weights(3, intercept=True)
    theta = rng.normal(size=4)
    z = data.X @ theta[:3] + theta[3]
    loss = np.log1p(np.exp(-data.y * z))
    codes, pos = data.groups.codes, data.y > 0
    L = fm.logistic_loss(data.score(w), data.y)
    s = data.score(w)
    risks = np.array([loss[codes == k].mean() for k in range(3)])
    masked = np.array([z[(codes == k) & pos].mean() for k in range(3)])
    a = data.X[:, 1]
    _check(fm.mean(L, where=pos), w, theta, loss[pos].mean())
    _check(fm.group_mean(L, data.groups), w, theta, risks)
    _check(fm.group_mean(s, data.groups, where=pos), w, theta, masked)
    _check(fm.sum(fm.multiply(np.abs(a), L)), w, theta, np.sum(np.abs(a) * loss))
    _check(fm.max(fm.group_mean(L, data.groups)), w, theta, risks.max())
    _check(fm.min(fm.group_mean(s, data.groups, where=pos)), w, theta, masked.min())
    _check(fm.max(fm.mean(L), 0.3 * fm.mean(s)), w, theta, max(loss.mean(), 0.3 * z.mean()))
    _check(fm.abs(fm.mean(a * s)), w, theta, abs(np.mean(a * z)))
    _check(fm.sum(fm.pos(fm.group_mean(L, data.groups) - 0.7)), w, theta, np.maximum(risks - 0.7, 0).sum())
    _check(2.5 * fm.mean(L) - fm.mean(s) + 1.0, w, theta, 2.5 * loss.mean() - z.mean() + 1.0)
    kappa = fm.parameter(0.4, "kappa")
    _check(fm.mean(L) - kappa, w, theta, loss.mean() - 0.4)            # a parameter offsets, never scales


def test_norms_leave_the_intercept_out_unless_asked(toy):
    data, rng = toy
    w = fm.Weights(3, intercept=True)
    theta = rng.normal(size=4)
    core = theta[:3]
    _check(fm.sum_squares(w), w, theta, core @ core)
    _check(fm.sum_squares(w, include_intercept=True), w, theta, theta @ theta)
    for p, value in ((1, np.abs(core).sum()), (2, np.linalg.norm(core)), (np.inf, np.abs(core).max())):
        _check(fm.norm(w, p), w, theta, value)
    m = fm.Weights(3, n_outputs=2, intercept=True)
    Theta = rng.normal(size=m.shape)
    _check(fm.norm(m, 2), m, Theta, np.linalg.norm(Theta[:3]))
    _check(fm.sum_squares(m), m, Theta, np.sum(Theta[:3] ** 2))


def test_error_rate_surrogates(toy):
    """Equal opportunity: max_g - min_g of the mean scores on the positives; equalized odds: the larger of that
    spread on the positives and on the negatives (Donini et al. 2018), weighted means with sample weights."""
    data, rng = toy
    w = fm.Weights(3, intercept=True)
    theta = rng.normal(size=4)
    z = data.X @ theta[:3] + theta[3]
    codes, pos = data.groups.codes, data.y > 0
    sw = rng.uniform(0.5, 2.0, data.n_samples)

    def spread(mask, weights):
        means = [np.average(z[(codes == k) & mask], weights=weights[(codes == k) & mask]) for k in range(3)]
        return max(means) - min(means)
    ones = np.ones(data.n_samples)
    _check(fm.equal_opportunity_gap(data.score(w), data), w, theta, spread(pos, ones))
    _check(fm.equalized_odds_gap(data.score(w), data), w, theta, max(spread(pos, ones), spread(~pos, ones)))
    _check(fm.equal_opportunity_gap(data.score(w), data, sample_weight=sw), w, theta, spread(pos, sw))


def test_group_risks_of_the_exact_group_dro_program(toy):
    """The group-DRO epigraph program's risks (sparse group averaging) at a point: the group means of the losses."""
    from fairmodel.exact.gdro import cvxpy_risks
    from fairmodel.families.gdro import group_risks_of
    import cvxpy as cp
    data, rng = toy
    w = fm.Weights(3, radius=2.0)
    R = group_risks_of(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))
    theta = rng.normal(size=3)
    t = cp.Variable(3)
    expr = cvxpy_risks(R, t)
    t.value = theta
    loss = np.log1p(np.exp(-data.y * (data.X @ theta)))
    np.testing.assert_allclose(expr.value, [loss[data.groups.codes == k].mean() for k in range(3)], rtol=RTOL)
