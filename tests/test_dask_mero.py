"""MERO (Yu, Cai, Jiang, Zhang 2024, eq. (4), Algorithm 2) on Dask-backed data: chunked row subsets (one group's
rows) read like the in-memory rows, the judge's exact group optima R*_g and its numbers agree with NumPy on a
single-machine Dask array and on a LocalCluster, and two-stage ALEG runs on Dask data."""
from fractions import Fraction

import numpy as np
import pytest

import fairmodel as fm
from tests.dask_helpers import as_dask_dataset
from fairmodel.data import Batch
from fairmodel.exact import gdro as exact_gdro
from fairmodel.data.passes import ordered_sum, passes_of
from fairmodel.oracles.group_risks import _RiskPass
from fairmodel.families.gdro import group_risks_of

da = pytest.importorskip("dask.array")

N, D, CHUNK = 2400, 4, 500


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(N, D))
    g = rng.choice(["a", "b", "c"], size=N, p=[0.5, 0.35, 0.15])
    noise = np.where(g == "c", 2.0, 0.5)      # groups of different attainable risks: MERO differs from group DRO
    y = np.sign(X @ np.array([1.0, -1.0, 0.5, 0.0]) + noise * rng.normal(size=N))
    return X, y, g


def dask_data(X, y, g):
    return as_dask_dataset(X, y, g, CHUNK)


def mero(data):
    w = fm.Weights(D, intercept=True, radius=5.0)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks)))), risks


def test_subset_reads_the_rows_it_selects(arrays):
    X, y, g = arrays
    dd = dask_data(X, y, g)
    rows = np.flatnonzero(g == "c")
    sub = dd.subset(rows)
    assert sub.is_chunked and sub.n_samples == rows.size and sub.groups.names == ("a", "b", "c")
    theta = np.linspace(-1, 1, D)
    # row dot products: equal to rounding (BLAS may block a row's products differently by the matrix's shape)
    np.testing.assert_allclose(sub.matvec(theta), X[rows] @ theta, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(sub.y, y[rows])
    picks = np.array([0, 5, rows.size - 1, 3])
    np.testing.assert_array_equal(sub.rows(picks), X[rows[picks]])
    np.testing.assert_array_equal(sub.take(picks).X, X[rows[picks]])
    np.testing.assert_array_equal(np.concatenate([b.X for b in sub.chunks()]), X[rows])
    twice = sub.subset([1, 2])                     # a subset of a subset: rows of the original arrays
    np.testing.assert_array_equal(twice.rows([0, 1]), X[rows[[1, 2]]])
    # the chunk sampler on the subset: exactly uniform over its rows, drawing only them
    s = sub.sampler("uniform", 1, seed=0, prefetch=False)
    assert set(s.row_probabilities(0)) == set(range(rows.size))
    assert all(p == Fraction(1, rows.size) for p in s.row_probabilities(0).values())
    b = s.draw(500)
    np.testing.assert_array_equal(b.X, X[rows[b.rows]])
    with pytest.raises(fm.DataError, match="subset"):
        dd.subset([N])


def test_single_group_risks_identical_on_dask(arrays):
    """Stage 1's one-group problem: on Dask, a chunked subset; its risk and gradient are the same per-chunk
    arithmetic as an in-memory pass cut at the same rows (bit-identical), and its Newton optimum agrees with
    the in-memory one to the Newton method's certified tolerance."""
    X, y, g = arrays
    _, rn = mero(fm.Dataset(X, y, g))
    _, rd = mero(dask_data(X, y, g))
    Rn, Rd = group_risks_of(rn), group_risks_of(rd)
    theta = np.array([0.3, -0.2, 0.1, 0.05, -0.1])
    for i in range(3):
        sn, sd = Rn.single_group(i), Rd.single_group(i)
        assert sd.data.is_chunked and sd.n_samples == sn.n_samples == Rn.sizes[i]
        # the reference: the oracle's per-chunk pass on the in-memory rows of each chunk, summed in chunk order
        rows, b = Rn.index[i], sd.data._bounds
        one = _RiskPass(sd.loss, True, theta, np.ones(1) / sd.sizes, 1, False)
        ref = ordered_sum([one(Batch(X[rows[b[c]:b[c + 1]]], None, None, np.arange(b[c], b[c + 1])),
                                y[rows[b[c]:b[c + 1]]], np.zeros(b[c + 1] - b[c], dtype=np.intp))[:2]
                            for c in range(len(b) - 1) if b[c + 1] > b[c]])
        ours = sd.risks_and_grad(theta, np.ones(1))
        np.testing.assert_array_equal(ours[0], ref[0] / sd.sizes)
        np.testing.assert_array_equal(ours[1], ref[1])
        np.testing.assert_allclose(ours[0], sn.risks(theta), rtol=1e-13)       # other cuts: summation rounding
    # R*_g: projected Newton on each side, each certified to a Frank-Wolfe gap <= 1e-10 max(1, |f|)
    np.testing.assert_allclose(exact_gdro.group_optimal_values(Rd), exact_gdro.group_optimal_values(Rn),
                               rtol=0, atol=3e-10)


@pytest.fixture(scope="module")
def numpy_mero(arrays):
    prob, _ = mero(fm.Dataset(*arrays))
    return prob, prob.solve(backend="stochastic", seed=1, epochs=10)


def _judged(prob, result):
    ev = prob.evaluate(result)
    return (ev.objective, np.array(list(ev.metrics["group_optimal"].values())),
            np.array(list(ev.metrics["group_risks"].values())), ev.certificate)


def test_mero_judge_same_numbers_numpy_dask_and_local_cluster(arrays, numpy_mero):
    distributed = pytest.importorskip("dask.distributed")
    prob_n, result = numpy_mero
    obj_n, opt_n, risks_n, cert_n = _judged(prob_n, result)
    prob_d, _ = mero(dask_data(*arrays))
    runs = [_judged(prob_d, result)]
    prob_c, _ = mero(dask_data(*arrays))       # a fresh problem: its R*_g computed on the cluster
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) \
            as cluster, distributed.Client(cluster):
        runs.append(_judged(prob_c, result))
    for obj, opt, risks, cert in runs:
        # R*_g: both certified Newton optima (Frank-Wolfe gap <= 1e-10 relative): agree to 3e-10
        np.testing.assert_allclose(opt, opt_n, rtol=0, atol=3e-10)
        np.testing.assert_allclose(risks, risks_n, rtol=1e-13)          # chunk sums vs one sum: rounding
        assert abs(obj - obj_n) <= 3e-10 + 1e-13
        for key in ("duality_gap", "duality_gap_bound"):    # plus the inner minimum's Newton tolerance
            assert abs(cert[key] - cert_n[key]) <= 1e-9, key


def test_two_stage_mero_on_dask_data(arrays, numpy_mero):
    """Algorithm 2 on Dask data: stage 1 per-group ALEG on the chunked subsets, stage 2 ALEG on R - R_hat*;
    R_hat*_g = R_g(w_bar_g) >= R*_g (a risk at some point of W is at least the minimum), the judged MERO value
    is certified, and it agrees with the NumPy run within the two certified gap bounds."""
    prob_n, res_n = numpy_mero
    prob_d, _ = mero(dask_data(*arrays))
    res_d = prob_d.solve(backend="stochastic", seed=1, epochs=10)
    assert res_d.ok, res_d.status
    est = np.array(list(res_d.metrics["estimated_group_optimal"].values()))
    exact = np.array(list(prob_d.evaluate(res_d).metrics["group_optimal"].values()))
    assert np.all(est >= exact - 1e-12)
    bn, bd = res_n.certificate["duality_gap_bound"], res_d.certificate["duality_gap_bound"]
    assert bd <= 1e-2
    assert abs(res_d.objective - res_n.objective) <= bn + bd + 1e-9
    again = prob_d.solve(backend="stochastic", seed=1, epochs=10, prefetch=False)   # seeded, prefetch or not
    np.testing.assert_array_equal(again.variables["w"], res_d.variables["w"])


@pytest.mark.slow
def test_mero_on_a_process_cluster(arrays, numpy_mero):
    """Two worker processes (the subset's per-chunk tasks are pickled): two-stage MERO reaches a certified gap and
    the judge's group optima agree with NumPy's."""
    distributed = pytest.importorskip("dask.distributed")
    prob_n, result = numpy_mero
    _, opt_n, _, _ = _judged(prob_n, result)
    prob_d, _ = mero(dask_data(*arrays))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster, distributed.Client(cluster):
        res = prob_d.solve(backend="stochastic", seed=1, epochs=10)
        _, opt, _, _ = _judged(prob_d, result)
    assert res.ok and res.certificate["duality_gap_bound"] <= 1e-2
    np.testing.assert_allclose(opt, opt_n, rtol=0, atol=3e-10)


def test_group_optima_in_lockstep_take_the_passes_of_one_solve(arrays):
    """The m Newton solves of R*_g share their passes on chunked data: as many passes as the longest solve, each
    solve the same iterates as alone (same numbers as the one-group oracle to the Newton tolerance)."""
    X, y, g = arrays
    _, rd = mero(dask_data(X, y, g))
    R = group_risks_of(rd)
    start = passes_of(R.data)
    together = exact_gdro.group_optimal_values(R)
    lockstep = passes_of(R.data) - start
    start = passes_of(R.data)
    alone = []
    for i in range(R.m):
        q = np.eye(R.m)[i]
        theta, _ = exact_gdro.solve_weighted_erm(R, q)
        alone.append(R.weighted_value_and_grad(theta, q)[0])
    assert 0 < lockstep < (passes_of(R.data) - start) / 2
    np.testing.assert_allclose(together, alone, rtol=0, atol=3e-10)
