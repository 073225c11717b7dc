"""Strategic Wasserstein DRO (Maheshwari et al., AISTATS 2022, corrected; docs/minmax.md) on Dask-backed rows.

* The stochastic methods read a component's row from the epoch's order gathered a block at a time, with the same
  random stream as in memory: the same seed gives the same iterates (bit for bit with a fixed budget; to summation
  rounding, ~1e-15, when the steps come from the features' second moments, a sum over chunks).
* The judge: the worst-case risk, the metrics and the closed-form inner maximum (E2) from the scores X theta of one
  pass; the inner minimum (E3) of the duality gap by projected Newton steps of one pass each, whose value is a
  rigorous lower bound: against CVXPY's minimum on the same rows to 1e-8.
* The exact program (E1) is a per-row program: refused on Dask data with a message naming the stochastic backend,
  and so is fm.crosscheck.
* The per-chunk functions pickled to the two worker processes of a dask.distributed cluster give the same numbers.
"""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.data.passes import passes_of
from fairmodel.exact import strategic_dro as exact_sdro

pytest.importorskip("dask")
from tests.dask_helpers import as_dask_dataset  # noqa: E402

N, CHUNK, BLOCK = 600, 150, 100        # 4 chunks; an epoch's rows gathered in 6 blocks


def _problem(data, sample_weight=None, radius=0.1):
    w = fm.Weights(data.n_features)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=range(5), zeta=0.05), data.y,
                            sample_weight=sample_weight)
    return fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=radius, label_cost=0.5)))


@pytest.fixture(scope="module")
def rows():
    data = fm.datasets.make_strategic_synthetic(n=N, p=10, seed=0)
    return data, as_dask_dataset(data.X, data.y, np.zeros(N, dtype=int), CHUNK)


def _dask_problem(dask_data, **kw):
    prob = _problem(dask_data, **kw)
    prob.family.model.X.block = BLOCK       # several gathers per epoch
    return prob


def _vector(result):
    return np.concatenate([result.variables["w"], [result.variables["alpha"]], result.variables["gamma"]])


@pytest.mark.parametrize("method", ["ogda-rr", "sgda-wr"])
def test_the_same_seed_gives_the_in_memory_iterates(rows, method):
    memory, chunked = rows
    prob_m, prob_d = _problem(memory), _dask_problem(chunked)
    options = dict(method=method, seed=2, stop="budget", epochs=8)
    rm, rd = prob_m.solve(backend="stochastic", **options), prob_d.solve(backend="stochastic", **options)
    np.testing.assert_array_equal(_vector(rd), _vector(rm))
    assert rd.metrics["queries"] == rm.metrics["queries"]
    assert prob_d.family.model.X.gathers >= 8 * (N // BLOCK)        # the blocks of every epoch were gathered
    assert abs(rd.objective - rm.objective) <= 1e-12
    assert abs(rd.certificate["duality_gap"] - rm.certificate["duality_gap"]) <= 1e-8
    for name in ("strategic_risk", "nominal_risk", "accuracy", "strategic_accuracy", "worst_case_accuracy"):
        assert abs(rd.metrics[name] - rm.metrics[name]) <= 1e-12


def test_a_run_stopped_by_the_judges_checks_and_sample_weights(rows):
    """The default anytime run, checked by the judge every 10 epochs, with weights: the steps come from the features'
    second moments (a sum over chunks), so the iterates agree to summation rounding. The paper's one-point estimator:
    the two-point central difference the default may choose divides a rounding difference of the values by its
    radius eps^(1/3) R, so the two paths would agree to eps^(2/3) only."""
    memory, chunked = rows
    sw = np.random.default_rng(1).uniform(0.5, 2.0, N)
    prob_m, prob_d = _problem(memory, sample_weight=sw), _dask_problem(chunked, sample_weight=sw)
    rm = prob_m.solve(backend="stochastic", seed=0, check_every=10, epochs=20, estimator="one-point")
    before = passes_of(chunked)
    rd = prob_d.solve(backend="stochastic", seed=0, check_every=10, epochs=20, estimator="one-point")
    passes = passes_of(chunked) - before
    assert rd.status == rm.status and rd.metrics["epochs_run"] == rm.metrics["epochs_run"]
    np.testing.assert_allclose(_vector(rd), _vector(rm), rtol=0, atol=1e-12)
    assert abs(rd.certificate["duality_gap"] - rm.certificate["duality_gap"]) <= 1e-8
    assert 3 <= passes <= 100        # second moments, then per check one pass for X theta and the Newton passes


def test_the_judges_inner_minimum_by_passes_is_a_lower_bound_equal_to_cvxpys(rows):
    memory, chunked = rows
    prob_m, prob_d = _problem(memory), _problem(chunked)
    exact = prob_m.solve(backend="exact")
    rng = np.random.default_rng(0)
    for gamma in (exact.variables["gamma"], np.clip(rng.normal(0, 0.7, N), -1, 1), -np.ones(N), np.ones(N)):
        value_m, theta_m, _ = exact_sdro.inner_min(prob_m.family.model, gamma)
        before = passes_of(chunked)
        value_d, theta_d, _ = exact_sdro.inner_min(prob_d.family.model, gamma)
        assert passes_of(chunked) - before <= 40                    # one pass per Newton step
        assert value_d <= value_m + 1e-9                              # a lower bound (CVXPY's value to 1e-9)
        assert value_m - value_d <= 1e-8
    judged_m, judged_d = prob_m.evaluate(exact), prob_d.evaluate(exact)
    assert abs(judged_d.objective - judged_m.objective) <= 1e-12
    assert abs(judged_d.certificate["duality_gap"] - judged_m.certificate["duality_gap"]) <= 1e-8
    assert judged_d.certificate["duality_gap"] <= 1e-6               # the exact saddle point, judged by passes


def test_exact_backend_and_crosscheck_are_refused_naming_the_stochastic_method(rows):
    _, chunked = rows
    prob = _problem(chunked)
    with pytest.raises(fm.DataError, match=r"per-row CVXPY program.*backend='stochastic'.*OGDA-RR"):
        prob.solve(backend="exact")
    with pytest.raises(fm.DataError, match="backend='stochastic'"):
        fm.crosscheck(prob, seed=0)


@pytest.mark.slow
def test_the_per_chunk_functions_run_in_worker_processes(rows):
    """The judge's passes and a short run under a dask.distributed cluster of two worker processes give the threaded
    scheduler's numbers (about 15 s, most of it starting the cluster)."""
    distributed = pytest.importorskip("distributed")
    memory, chunked = rows
    options = dict(method="ogda-rr", seed=4, stop="budget", epochs=3)
    threaded = _dask_problem(chunked).solve(backend="stochastic", **options)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster, distributed.Client(cluster):
        remote = _dask_problem(chunked).solve(backend="stochastic", **options)
    np.testing.assert_array_equal(_vector(remote), _vector(threaded))
    assert remote.objective == threaded.objective
    assert abs(remote.certificate["duality_gap"] - threaded.certificate["duality_gap"]) <= 1e-12


def test_the_inner_pass_derivatives_match_finite_differences(rows):
    """The per-chunk value, gradient and Hessian of the smooth part of (E3) (projected Newton converges with any
    positive definite Hessian, so only this test checks its formula)."""
    from fairmodel.data.dataset import Batch
    from fairmodel.oracles.strategic import InnerPass
    memory, _ = rows
    model = _problem(memory).family.model
    rng = np.random.default_rng(3)
    coef = np.where(model.pos, model.mass * (0.5 * (1.0 + rng.uniform(-1, 1, N)) - 1.0), 0.0)
    batch = Batch(memory.X, None, None)
    theta, h = rng.normal(size=10), 1e-6
    value, grad, hess = InnerPass(theta, 0.3, model.mask, False)(batch, model.neg, model.mass, coef)
    for j in range(10):
        e = np.eye(10)[j] * h
        up = InnerPass(theta + e, 0.3, model.mask, False)(batch, model.neg, model.mass, coef)
        down = InnerPass(theta - e, 0.3, model.mask, False)(batch, model.neg, model.mass, coef)
        assert abs((up[0] - down[0]) / (2 * h) - grad[j]) <= 1e-7
        np.testing.assert_allclose((up[1] - down[1]) / (2 * h), hess[:, j], rtol=0, atol=1e-7)


def test_a_column_in_raw_units_gets_the_same_metric_and_iterates_on_dask_rows():
    """A column 1,000x the others (raw units): the rows' second moment, one pass over the chunks, gives the steps'
    metric on Dask-backed rows as in memory, and the run the same iterates (to the rounding of a sum over chunks)."""
    data = fm.datasets.make_strategic_synthetic(n=N, p=10, seed=0)
    X = data.X.copy()
    X[:, 7] = 1000.0 * X[:, 7] + 3000.0
    memory = fm.Dataset(X, data.y)
    prob_m, prob_d = _problem(memory), _dask_problem(as_dask_dataset(X, data.y, np.zeros(N, dtype=int), CHUNK))
    options = dict(seed=2, stop="budget", epochs=8)
    rm, rd = prob_m.solve(backend="stochastic", **options), prob_d.solve(backend="stochastic", **options)
    assert rm.metrics["design_metric"] and rd.metrics["design_metric"]
    np.testing.assert_allclose(_vector(rd), _vector(rm), rtol=1e-7, atol=1e-9)
    assert abs(rd.certificate["duality_gap"] - rm.certificate["duality_gap"]) <= 1e-6
