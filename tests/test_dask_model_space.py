"""The model-space methods by passes over chunked data: the compositions' interior-point method, the group-DRO dual
method and MERO's group optima solve exactly on Dask-backed data, with the answers of the same declaration on the
same rows in memory; on rows replicated and shuffled (every mean unchanged) with the answers on the original rows;
the judge's numbers are the same; the generic stochastic method runs there with epochs of bounded length."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.data.passes import CHUNKED_EPOCH_STEPS, gathers_of, passes_of
from fairmodel.errors import DataError
from fairmodel.exact import budget
from fairmodel.families import model_space

from .dask_helpers import as_dask_dataset

pytest.importorskip("dask.array")

CHUNK = 700


@pytest.fixture(scope="module")
def law():
    return fm.datasets.load_lawschool().subsample(3000, seed=0)


def arrays(data, copies=1, seed=0):
    """(X, y, group labels) of ``data``'s rows repeated ``copies`` times in a random order."""
    rows = np.arange(data.n_samples) if copies == 1 else \
        np.random.default_rng(seed).permutation(data.n_samples * copies) % data.n_samples
    names = np.asarray(data.groups.names, dtype=object)[data.groups.codes]
    return data.X[rows], data.y[rows], names[rows]


def covariance(data):
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    z = (data.groups.codes == 1).astype(float)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))), [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.01])


def equal_opportunity(data):
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    m = fm.group_mean(s, data.groups, where=data.y > 0)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(s, data.y), data.groups))),
                      [fm.max(m) - fm.min(m) <= 0.05])


def group_loss(data):
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    loss = fm.logistic_loss(data.score(w), data.y)
    return fm.Problem(fm.Minimize(fm.mean(loss) + 0.01 * fm.sum_squares(w)),
                      [fm.max(fm.group_mean(loss, data.groups)) <= 0.5])


def mero(data):
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))))


COMPOSITIONS = {"covariance": covariance, "equal_opportunity": equal_opportunity, "group_loss": group_loss}


@pytest.mark.parametrize("name", list(COMPOSITIONS))
def test_the_interior_point_method_by_passes_gives_the_in_memory_answer(law, name):
    build = COMPOSITIONS[name]
    ref = build(law).solve(backend="exact", method="model_space")
    data = as_dask_dataset(*arrays(law), CHUNK)
    start = passes_of(data)
    res = build(data).solve(backend="exact", method="model_space")
    used = passes_of(data) - start
    assert res.ok and res.solver["name"] == "model_space"
    # the same arithmetic up to the order of the chunk sums: the IPM's iterates agree to its tolerance
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    np.testing.assert_allclose(res.variables["w"], ref.variables["w"], rtol=0, atol=1e-7)
    # one pass per interior-point iteration (plus the start and the certificate's Newton steps)
    assert 10 <= used <= 3 * (res.metrics["iterations"] + 15)


def test_replicated_shuffled_rows_give_the_answer_of_the_original_rows(law):
    ref = covariance(law).solve(backend="exact", method="model_space")
    res = covariance(as_dask_dataset(*arrays(law, copies=3), 1000)).solve(backend="exact")
    assert res.ok and res.solver["name"] == "model_space"
    assert res.objective == pytest.approx(ref.objective, rel=1e-8)
    np.testing.assert_allclose(res.variables["w"], ref.variables["w"], rtol=0, atol=1e-6)


def test_the_judge_by_passes_gives_the_in_memory_numbers(law):
    """A candidate (perturbed exact answer with its duals) judged on the NumPy rows and on the chunks: objective,
    constraint values and the Lagrangian gap (its inner minimum by projected Newton steps, one pass each)."""
    numpy_prob = equal_opportunity(law)
    exact = numpy_prob.solve(backend="exact", method="model_space")
    candidate = dict(exact.variables)
    candidate["w"] = candidate["w"] * 0.97
    dask_prob = equal_opportunity(as_dask_dataset(*arrays(law), CHUNK))
    a, b = numpy_prob.evaluate(**candidate), dask_prob.evaluate(**candidate)
    assert b.objective == pytest.approx(a.objective, rel=1e-12)
    for name in a.constraints:
        assert b.constraints[name]["value"] == pytest.approx(a.constraints[name]["value"], rel=1e-10, abs=1e-13)
    assert b.certificate["lagrangian_gap"] == pytest.approx(a.certificate["lagrangian_gap"], rel=1e-6, abs=1e-10)
    assert a.certificate["lagrangian_gap"] > 1e-4         # the perturbed candidate is measurably suboptimal


def test_group_dro_and_mero_exact_methods_by_passes(law):
    data = as_dask_dataset(*arrays(law), CHUNK)
    for build in (mero, ):
        ref = build(law).solve(backend="exact", method="dual")
        res = build(data).solve(backend="exact", method="dual")
        assert res.ok and res.objective == pytest.approx(ref.objective, rel=1e-7, abs=1e-10)
        np.testing.assert_allclose(res.variables["w"], ref.variables["w"], rtol=0, atol=1e-5)
    with pytest.raises(DataError, match="epigraph program.*method='dual'"):
        mero(data).solve(backend="exact", method="epigraph")


def test_the_memory_guard_counts_the_model_space_state_not_the_features(law, monkeypatch):
    """Ten times the rows add a cell code per row to the estimate (8 bytes a row at most), not the features
    (8 d bytes a row), which the method never holds; a budget below the estimate refuses, naming the stochastic
    backend, and one above it runs."""
    def estimate(copies):
        prob = covariance(as_dask_dataset(*arrays(law, copies=copies), 3000))
        return prob, model_space.estimate(prob.family.form(), prob.family.w).bytes
    prob, small = estimate(1)
    _, large = estimate(10)
    added_rows = 9 * law.n_samples
    assert large - small <= 8 * added_rows + 1
    assert large - small < added_rows * law.n_features * 8 / 4
    monkeypatch.setattr(budget, "available_memory", lambda: 4.0 * small)      # the limit is half of it
    assert prob.solve(backend="exact", method="model_space").ok
    monkeypatch.setattr(budget, "available_memory", lambda: 0.5 * small)
    with pytest.raises(fm.errors.ResourceLimitError, match="stochastic"):
        prob.solve(backend="exact", method="model_space")


def test_crosscheck_on_chunks_is_ok_and_the_stochastic_epochs_are_bounded(law):
    data = as_dask_dataset(*arrays(law, copies=4), 3000)         # 12,000 rows: one pass is 375 minibatches
    prob = covariance(data)
    g0 = gathers_of(data)
    report = fm.crosscheck(prob, seed=0)
    assert report.ok, report.to_markdown()
    stoch = report.stochastic
    steps = stoch.metrics["grad_evals"]
    epochs = stoch.metrics["epochs_run"]
    # an epoch is the snapshot pass plus at most min(one pass's worth of minibatches, CHUNKED_EPOCH_STEPS) steps
    per_step = 32
    assert steps <= epochs * (data.n_samples + 2 * per_step * min(CHUNKED_EPOCH_STEPS, data.n_samples // per_step + 1))
    # the minibatches of an epoch are gathered at once: a few gathers per epoch, not one per block of steps
    assert gathers_of(data) - g0 <= 4 * epochs + 20


def test_the_generic_method_on_chunks_refuses_an_expression_it_cannot_gather_for(law):
    data = as_dask_dataset(*arrays(law), CHUNK)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.pos(1.0 - s))))
    with pytest.raises(DataError, match="sum of data-weighted losses of one linear score"):
        prob.solve(backend="stochastic", seed=0, epochs=2)


@pytest.mark.slow
def test_worker_processes_give_the_same_answer(law):
    """The per-chunk functions pickle: a LocalCluster of two worker processes gives the threaded answer."""
    distributed = pytest.importorskip("dask.distributed")
    ref = equal_opportunity(law).solve(backend="exact", method="model_space")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c):
        data = as_dask_dataset(*arrays(law), CHUNK)
        res = equal_opportunity(data).solve(backend="exact", method="model_space")
        judged = equal_opportunity(data).evaluate(res)
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    assert judged.objective == pytest.approx(ref.objective, rel=1e-9)


def test_an_interrupt_during_a_pass_on_a_cluster_leaves_no_task_behind(law, monkeypatch):
    """Ctrl-C (a KeyboardInterrupt in this process while a pass collects its chunks' parts) in the middle of an
    exact solve on a dask.distributed cluster: the pass's remaining tasks are cancelled, nothing is left running,
    and the next solve on the same client gives the right answer."""
    distributed = pytest.importorskip("dask.distributed")
    from fairmodel.data import dask_dataset
    ref = covariance(law).solve(backend="exact", method="model_space")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        data = as_dask_dataset(*arrays(law), 300)          # 10 chunks a pass
        calls = {"n": 0}
        original = dask_dataset.add_parts

        def interrupted(total, part):
            calls["n"] += 1
            if calls["n"] == 25:                            # in the third pass
                raise KeyboardInterrupt
            return original(total, part)
        monkeypatch.setattr(dask_dataset, "add_parts", interrupted)
        with pytest.raises(KeyboardInterrupt):
            covariance(data).solve(backend="exact", method="model_space")
        monkeypatch.setattr(dask_dataset, "add_parts", original)
        assert not any(client.processing().values())
        res = covariance(data).solve(backend="exact", method="model_space")
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)


def test_the_one_pass_curvature_is_the_finite_difference_hessian(law):
    """The default steps on chunked data take the curvature of w -> Phi(w, y) from the Hessian of one pass (in the
    method's preconditioned coordinates) instead of a power iteration of passes: it must equal the Hessian built
    column by column from central differences of the full gradient."""
    from fairmodel.families.lagrangian import LagrangianOracle
    from fairmodel.families.piecewise import saddle_form
    prob = group_loss(law)
    w = prob.family.w
    form = saddle_form(prob.canonical, w)
    oracle = LagrangianOracle(form, w, 3.0, coordinates=prob.family.coordinates(form))
    rng = np.random.default_rng(0)
    u = oracle.to_u(0.5 * w.project(rng.normal(size=w.shape)))
    omega = np.abs(rng.normal(size=len(form.leaves)))
    H_u = oracle._curvature_moments(u, omega)[0]
    h, D = 1e-5, u.size

    def grad(v):
        return oracle._sample_pass(v, omega)[1] + oracle._exact(v, omega)[1]
    H = np.column_stack([(grad(u + h * e) - grad(u - h * e)) / (2 * h) for e in np.eye(D)])
    assert np.allclose(H_u, (H + H.T) / 2, rtol=1e-5, atol=1e-7 * np.abs(H).max())


@pytest.mark.parametrize("name", list(COMPOSITIONS))
def test_the_judges_aggregates_take_one_pass_and_hold_nothing_per_row(law, name):
    """On chunked data the judge evaluates every mean, group mean and sum over rows of a per-sample expression of one
    linear score by a single pass returning per-group sums: walking the declaration afterwards needs no pass and
    caches no value per row, and the numbers are those of the walk over the rows in memory."""
    from fairmodel.expressions.evaluate import aggregates_by_pass, evaluate
    from fairmodel.families.base import declared_exprs, group_risk_node
    build = COMPOSITIONS[name]
    numpy_prob = build(law)
    candidate = {"w": numpy_prob.solve(backend="exact", method="model_space").variables["w"] * 0.97}
    data = as_dask_dataset(*arrays(law), CHUNK)
    prob = build(data)
    exprs = declared_exprs(prob) + [group_risk_node(prob)]
    env = prob.family.environment(candidate)
    start = passes_of(data)
    aggregates_by_pass(env, exprs)
    assert passes_of(data) - start == 1
    values = [e.numeric(env) for e in exprs]
    assert passes_of(data) - start == 1
    assert all(np.size(v) < law.n_samples for v in env.cache.values())
    w = {v: candidate[v.name] for v in numpy_prob.variables()}
    expected = [evaluate(e, w) for e in declared_exprs(numpy_prob) + [group_risk_node(numpy_prob)]]
    for got, want in zip(values, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
