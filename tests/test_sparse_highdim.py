"""Sparse designs (SciPy CSR) and many parameters: a sparse Dataset gives the answers of the same rows held dense
(every method that reads rows by passes and minibatches), the paths for more than budget.DENSE_PARAMETERS parameters
(a diagonal metric, the AUC pair risks from per-set means of the squared score) reach the exact optimum, and the
generators make what they say."""
import numpy as np
import pytest
from scipy import sparse

import fairmodel as fm
from fairmodel.errors import DataError
from fairmodel.exact import budget
from fairmodel.families.lagrangian import LagrangianOracle, design_moment, leaf_weights
from fairmodel.families.piecewise import DeterministicLeaf, SampleLeaf, saddle_form
from fairmodel.expressions.evaluate import evaluate
from fairmodel.oracles.metric import Coordinates, second_moment


@pytest.fixture(scope="module")
def pair():
    data = fm.datasets.make_sparse_synthetic(n=600, d=40, nnz=5, groups=2, seed=0)
    return data, fm.Dataset(data.X.toarray(), data.y, data.groups.codes)


def _declarations(D):
    w = fm.Weights(D.n_features, radius=5.0, intercept=True)
    s = D.score(w)
    z = (D.groups.codes == 0).astype(float)
    return {
        "covariance": fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, D.y))),
                                 [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.01]),
        "gdro": fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(s, D.y), D.groups)))),
        "gdro_eo_hinge": fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(s, D.y), D.groups))),
                                    [fm.equal_opportunity_gap(s, D) <= 0.05]),
        "auc": fm.Problem(fm.Minimize(fm.auc_loss(s, D.y)),
                          [fm.auc_gap(s, D, kind="intra", protected=D.groups.names[0]) <= 0.05]),
    }


def test_a_sparse_dataset_reads_as_the_dense_one(pair):
    data, dense = pair
    assert data.is_sparse and not dense.is_sparse and "5.0 nonzeros per row" in repr(data)
    v, u = np.random.default_rng(0).normal(size=40), np.random.default_rng(1).normal(size=600)
    np.testing.assert_allclose(data.matvec(v), dense.matvec(v), rtol=1e-13)
    np.testing.assert_allclose(data.rmatvec(u), dense.rmatvec(u), rtol=1e-13)
    np.testing.assert_array_equal(data.rows([3, 1, 3]).toarray(), dense.rows([3, 1, 3]))
    with pytest.raises(DataError, match=r"sparse 600 x 40 design.*toarray\(\)"):
        data.dense_X("a per-row program")
    with pytest.raises(ValueError):             # read-only, as a dense design
        data.X.data[0] = 2.0


def test_a_sparse_matrix_is_validated_and_the_callers_is_left_alone():
    X = sparse.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0]]))
    data = fm.Dataset(X)
    assert data.X is not X and X.data.flags.writeable
    X.data[0] = np.nan
    with pytest.raises(DataError, match=r"1 NaN or infinite stored value\(s\), the first in row 0"):
        fm.Dataset(X)
    X.data[0] = 1e200
    with pytest.raises(DataError, match=r"1 value\(s\) beyond 1e\+150 in magnitude, the first 1e\+200 at \(row, "
                                        r"column\) \(0, 1\)"):
        fm.Dataset(X)


@pytest.mark.parametrize("name", ["covariance", "gdro", "gdro_eo_hinge", "auc"])
def test_the_stochastic_methods_give_on_sparse_rows_the_answer_of_the_dense_rows(pair, name):
    """The same seeded run on the same rows, CSR or dense: the generic lowering (covariance, equal opportunity with
    the hinge), ALEG (group DRO) and, for the AUC, the generic lowering on the sparse rows against the exact
    optimum of the dense ones (the SFLS steps take dense rows, so that family declines a sparse design)."""
    data, dense = pair
    sp, de = _declarations(data)[name], _declarations(dense)[name]
    exact = de.solve(backend="exact")
    r = sp.solve(backend="stochastic", seed=0)
    assert r.ok, r.message
    if name == "auc":
        assert sp.family.name != de.family.name
        assert r.certificate["lower_bound"] <= exact.objective + 1e-9
        assert abs(r.objective - exact.objective) <= r.certificate["lagrangian_gap"]
    else:
        d = de.solve(backend="stochastic", seed=0)
        assert r.objective == pytest.approx(d.objective, rel=1e-10)
        np.testing.assert_allclose(r.variables["w"], d.variables["w"], rtol=1e-8, atol=1e-10)
    assert sp.solve(backend="exact").objective == pytest.approx(exact.objective, rel=1e-7)


def test_a_diagonal_metric_is_the_metric_of_its_diagonal_matrix():
    """theta = P^{-1/2} u: ||u||^2 = theta' P theta and <gradient in u, u> = <gradient in theta, theta>, the same
    as the full metric of diag(P) (whose coordinates differ by a permutation and signs)."""
    rng = np.random.default_rng(0)
    diag = rng.uniform(0.1, 10.0, size=7)
    for c in (Coordinates.from_second_moment(diag, radius=2.0),
              Coordinates.from_second_moment(np.diag(diag), radius=2.0)):
        P = np.diag(diag + 1e-6 * diag)                  # the relative ridge of from_second_moment
        for theta, g in ((rng.normal(size=7), rng.normal(size=7)), (rng.normal(size=(7, 3)), rng.normal(size=(7, 3)))):
            u = c.to_u(theta)
            np.testing.assert_allclose(c.to_theta(u), theta, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(np.sum(u * u), np.sum(theta * (P @ theta)), rtol=1e-12)
            np.testing.assert_allclose(np.sum(c.gradient_to_u(g) * u), np.sum(g * theta), rtol=1e-12)
            np.testing.assert_allclose(c.gradient_to_theta(c.gradient_to_u(g)), g, rtol=1e-12, atol=1e-14)
    assert Coordinates.from_second_moment(diag).diagonal


def test_the_auc_pair_risks_from_means_of_squares_equal_the_moment_form(pair, monkeypatch):
    """c1 [(m_S - m_S' - c2)^2 + v_S + v_S'] (the pair risk at its optimal a, b, alpha) written as means of h^2 per set
    plus products of the set means: every constraint piece and the objective at random weights, against the
    quadratics of the per-set moments."""
    data, _ = pair
    prob = _declarations(data)["auc"]
    w = prob.variables()[0]

    def values(form, theta):
        out = []
        for leaf in form.leaves:
            if isinstance(leaf, SampleLeaf):
                per_row = np.asarray(evaluate(leaf.expr, {w: theta}), dtype=float)
                out.append(float(np.mean(per_row if leaf.rows is None else per_row[leaf.rows])))
            else:
                assert isinstance(leaf, DeterministicLeaf)
                out.append(leaf.value_grad(theta)[0])
        out = np.array(out)
        pieces = form.constraint_pieces + [a for t in form.objective_terms for a in t] + [form.affine]
        return np.array([a.const + sum(c * out[k] for k, c in a.coef.items()) for a in pieces])

    moments = saddle_form(prob.canonical, w)
    monkeypatch.setattr(budget, "DENSE_PARAMETERS", 16)
    means = saddle_form(prob.canonical, w)
    assert any(getattr(leaf, "low_rank", False) for leaf in means.leaves)
    assert not any(getattr(leaf, "low_rank", False) for leaf in moments.leaves)
    for seed in range(3):
        theta = np.random.default_rng(seed).normal(size=w.shape)
        theta *= 4.0 / np.linalg.norm(theta)
        np.testing.assert_allclose(values(means, theta), values(moments, theta), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["covariance", "auc"])
def test_the_many_parameter_paths_reach_the_exact_optimum(pair, name, monkeypatch):
    data, dense = pair
    exact = _declarations(dense)[name].solve(backend="exact")
    monkeypatch.setattr(budget, "DENSE_PARAMETERS", 16)
    r = _declarations(data)[name].solve(backend="stochastic", seed=0)
    assert r.ok, r.message
    assert r.certificate["lower_bound"] <= exact.objective + 1e-9
    assert abs(r.objective - exact.objective) <= r.certificate["lagrangian_gap"] + 1e-9


def test_the_synthetic_sparse_set_has_its_shape():
    data = fm.datasets.make_sparse_synthetic(n=300, d=5000, nnz=12, groups=3, seed=1)
    assert data.is_sparse and data.X.shape == (300, 5000)
    assert np.all(np.diff(data.X.indptr) == 12) and np.all(data.X.data == 1.0)
    assert set(np.unique(data.y)) == {-1.0, 1.0} and data.groups.n_groups == 3


def test_interactions_are_the_products_of_the_binary_columns():
    X = np.array([[1.0, 0.0, 1.0, 0.5], [0.0, 1.0, 1.0, 2.0], [1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0]])
    data = fm.Dataset(X, np.array([1.0, -1.0, 1.0, -1.0]), feature_names=["a", "b", "c", "t"])
    out = fm.datasets.with_interactions(data)
    assert out.is_sparse
    # binary columns a, b, c (t is not): products a*b (0 on every row: dropped), a*c, b*c
    assert list(out.feature_names) == ["a", "b", "c", "t", "a*c", "b*c"]
    expected = np.hstack([X, (X[:, 0] * X[:, 2])[:, None], (X[:, 1] * X[:, 2])[:, None]])
    np.testing.assert_array_equal(out.X.toarray(), expected)


def test_a_covariance_bound_on_adult_with_interactions_certifies_with_defaults():
    """800 Adult rows with all pairwise products of their one-hot columns (1,173 sparse columns: a diagonal metric)
    under Zafar et al.'s covariance bound: the default run is ok by the judge's checks (the pieces are affine in w,
    so w keeps the step of its curvature; with the coupling's other split the run stopped inaccurate, gap 0.027)."""
    data = fm.datasets.with_interactions(fm.datasets.load_adult(sensitive="sex").subsample(800, seed=0))
    assert data.is_sparse and data.n_features > budget.DENSE_PARAMETERS
    r = _declarations(data)["covariance"].solve(backend="stochastic", seed=0)
    assert r.ok, r.message
    # up to rounding: the objective is evaluated on the tree, max_y Phi from the oracle's sums (equal when feasible)
    assert r.certificate["lower_bound"] <= r.objective \
        <= r.certificate["lower_bound"] + r.certificate["lagrangian_gap"] + 1e-12


def test_a_failing_checkpoint_stops_its_inner_minimum_early_and_keeps_a_lower_bound(pair):
    """The certificate's inner minimum given the candidate's max_y Phi and a tolerance its gap exceeds: a lower bound
    at most the one of the full solve, a gap within 1.25x the full solve's, in fewer passes."""
    data, _ = pair
    prob = _declarations(data)["covariance"]
    family = prob.family
    form = family.form()
    oracle = LagrangianOracle(form, family.w, 2.0, coordinates=family.coordinates(form, "certificate"))
    theta = np.zeros(family.w.shape)
    ys = [np.array([0.5, 0.0, 0.5])]                  # the first piece, half the bound, and the slack
    snap = oracle.snapshot(oracle.to_u(theta), ys)
    sup = oracle.penalized(snap.leaves, snap.values)          # max_y Phi(0, y)
    calls = []
    phi = oracle.phi
    oracle.phi = lambda t, y: calls.append(1) or phi(t, y)
    full, _ = oracle.lower_bound(ys, theta, slack=1e-10)
    n_full = len(calls)
    early, _ = oracle.lower_bound(ys, theta, slack=1e-10, upper=sup, decided=1e-3 * (sup - full))
    assert early <= full + 1e-9 and sup - early <= 1.25 * (sup - full) + 1e-9
    assert len(calls) - n_full < n_full / 2


def _auc_on_adult_with_interactions(rows=None):
    data = fm.datasets.load_adult(sensitive="sex")
    data = fm.datasets.with_interactions(data if rows is None else data.subsample(rows, seed=0))
    assert data.is_sparse and data.n_features > budget.DENSE_PARAMETERS
    return _declarations(data)["auc"]


def test_the_diagonal_metric_has_the_curvature_of_the_sample_leaves(pair, monkeypatch):
    """Beyond budget.DENSE_PARAMETERS the AUC pair risks are means of h^2 over their sets (sample leaves): the diagonal
    metric is the second moment's diagonal plus each sample leaf's Hessian diagonal times its largest coefficient in
    the saddle form (here from second differences of the leaves on the tree), so that the features of a small set
    (a group's positives) are not under-weighted."""
    data, _ = pair
    monkeypatch.setattr(budget, "DENSE_PARAMETERS", 16)
    prob = _declarations(data)["auc"]
    w = prob.variables()[0]
    form = saddle_form(prob.canonical, w)
    weight = leaf_weights(form)
    sample = [k for k, leaf in enumerate(form.leaves) if isinstance(leaf, SampleLeaf)]
    assert sample and all(weight[k] > 0 for k in sample)

    def curvature(j, h=1e-3):            # sum_k weight_k d^2 leaf_k / d theta_j^2 at 0 (the leaves are quadratics)
        def value(t):
            theta = np.zeros(w.shape)
            theta[j] = t
            return sum(weight[k] * float(np.mean(np.asarray(evaluate(form.leaves[k].expr, {w: theta}), dtype=float)
                                                 [form.leaves[k].rows])) for k in sample)
        return (value(h) - 2.0 * value(0.0) + value(-h)) / h ** 2
    P = design_moment(form, w)
    S = second_moment(data, True, False)
    assert P.shape == w.shape
    for j in (0, 7, 23, w.shape[0] - 1):      # features and the intercept
        assert P[j] == pytest.approx(S[j] + curvature(j), rel=1e-6)
    assert np.all(P > 1.5 * S)


def test_the_default_step_on_many_parameters_respects_the_rows_worst_direction():
    """800 Adult rows with all pairwise interactions (1,173 columns, a diagonal metric) under an AUC gap: the default
    step of w is within 5 % of 1 / (2 sqrt(top eigenvalue of H^2 + K / b)), the dense path's bound on the minibatch
    gradients' mean-square Lipschitz constant (formed here at this size). The probes alone miss a row of rare
    columns and gave a step 1.8x that."""
    prob = _auc_on_adult_with_interactions(800)
    family = prob.family
    form = family.form()
    oracle = LagrangianOracle(form, family.w, 1.0, coordinates=family.coordinates(form))
    u0 = oracle.project(np.zeros(oracle.shape))
    step_w, _ = oracle.default_steps(u0)
    omega = np.abs(oracle.omega([np.full(m, 1.0 / m) for m in oracle.blocks]))   # the smallest weights it takes
    H, K = oracle._curvature_moments(u0, omega)
    assert step_w <= 1.05 * 0.5 / np.sqrt(np.linalg.eigvalsh(H @ H + K)[-1])


@pytest.mark.slow
def test_an_auc_gap_on_all_of_adult_with_interactions_certifies_with_defaults():
    """All of Adult by sex with pairwise interactions (30,162 x 2,736, sparse) under an intra-group AUC gap <= 0.05:
    the default stochastic run is ok by the judge's checks (about a minute; it stopped inaccurate before the
    curvature of the AUC sets entered the diagonal metric and the default steps)."""
    prob = _auc_on_adult_with_interactions()
    r = prob.solve(backend="stochastic", seed=0)
    assert r.ok, r.message
    cert = r.certificate
    assert cert["lower_bound"] <= r.objective <= cert["lower_bound"] + cert["lagrangian_gap"] + 1e-12
