"""The public API of DP post-processing: declaration, validation, solving on pools and
streams, the judge, predictors, metrics (App. G of the paper), the sweep, the estimator and the loaders."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.errors import (DataError, ExpressionTypeError, InfeasibleError, ModelError, OptionError,
                              UnsupportedProblemError)


def synthetic(n=3000, seed=0, K=2):
    """Features X, labels y in (-1, 1), groups s in 0..K-1 correlated with X and y."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    s = np.digitize(X[:, 0] + 0.7 * rng.normal(size=n), np.linspace(-0.5, 0.5, K - 1)) if K > 2 else \
        (X[:, 0] + 0.5 * rng.normal(size=n) > 0.3).astype(int)
    y = np.tanh(0.4 * X.sum(axis=1) + 0.3 * s)
    return X, y, s


@pytest.fixture(scope="module")
def models():
    from sklearn.linear_model import LinearRegression, LogisticRegression
    X, y, s = synthetic()
    reg = LinearRegression().fit(X[:1000], y[:1000])
    clf = LogisticRegression().fit(X[:1000], s[:1000])
    return reg, clf, X, y, s


def arrays(n=400, K=2, seed=1):
    rng = np.random.default_rng(seed)
    tau = rng.dirichlet(np.arange(2, K + 2), size=n)
    eta = np.clip(0.8 * tau[:, 0] - 0.4 + 0.2 * rng.normal(size=n), -1, 1)
    return eta, tau


def problem(post, eps=0.01, entropy=0.01):
    return fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= eps], entropy=entropy)


# -- declaration and validation ---------------------------------------------------------------------------------------
def test_invalid_declarations_raise_clear_errors():
    eta, tau = arrays()
    with pytest.raises(DataError, match="K >= 2"):
        fm.GridPredictor(eta=eta, tau=tau[:, :1], L=5, B=1)
    bad = tau.copy()
    bad[3] = [0.7, 0.7]
    with pytest.raises(DataError, match="probability vectors.*row 3"):
        fm.GridPredictor(eta=eta, tau=bad, L=5, B=1)
    bad[3] = [1.2, -0.2]
    with pytest.raises(DataError, match="probability vectors"):
        fm.GridPredictor(eta=eta, tau=bad, L=5, B=1)
    with pytest.raises(DataError, match="rows"):
        fm.GridPredictor(eta=eta[:-1], tau=tau, L=5, B=1)
    nan = eta.copy()
    nan[0] = np.nan
    with pytest.raises(DataError, match="NaN"):
        fm.GridPredictor(eta=nan, tau=tau, L=5, B=1)
    for L in (0, 2.5, True):
        with pytest.raises(ModelError, match="L must be a positive integer"):
            fm.GridPredictor(eta=eta, tau=tau, L=L, B=1)
    for B in (0, -1, np.inf):
        with pytest.raises(ModelError, match="B must be"):
            fm.GridPredictor(eta=eta, tau=tau, L=5, B=B)
    for p in ([0.0, 1.0], [0.5, 0.6], [0.3, 0.3, 0.4], [1.2, -0.2]):
        with pytest.raises(ModelError, match="p "):
            fm.GridPredictor(eta=eta, tau=tau, L=5, B=1, p=p)
    with pytest.raises(ModelError, match="callables .* or both"):
        fm.GridPredictor(eta=lambda X: X, tau=tau, L=5, B=1)
    with pytest.raises(ModelError, match="either eta"):
        fm.GridPredictor(tau=tau, L=5, B=1)


def test_eps_must_lie_in_zero_one():
    eta, tau = arrays()
    post = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1)
    for eps in (2 ^ (-8), -0.1, 1.5, np.nan, [0.1, 0.2, 0.3]):  # 2^(-8) is XOR: -6 (the reference code's bug)
        with pytest.raises(ModelError):
            fm.dp_gap(post) <= eps
    with pytest.raises(ExpressionTypeError):
        fm.dp_gap(post) <= "0.1"
    c = np.array([0.01, 0.02]) >= fm.dp_gap(post)  # the reflected form is the same constraint
    np.testing.assert_array_equal(c.eps(2), [0.01, 0.02])


def test_problem_structure_and_options_are_checked():
    eta, tau = arrays()
    post, other = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1), fm.GridPredictor(eta=eta, tau=tau, L=4, B=1)
    with pytest.raises(UnsupportedProblemError, match="same fm.GridPredictor"):
        fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(other) <= 0.1])
    with pytest.raises(UnsupportedProblemError, match="one fm.dp_gap"):
        fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.1, fm.dp_gap(post) <= 0.2])
    for entropy in (-1.0, np.inf, "x"):
        with pytest.raises(OptionError, match="entropy"):
            fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.1], entropy=entropy)
    with pytest.raises(OptionError, match="beta"):
        fm.Problem(fm.Minimize(fm.squared_risk(post)), beta=3)
    cost_post = fm.GridPredictor(cost=np.zeros((400, 3)), tau=tau, grid=[0, 1, 2])
    with pytest.raises(ModelError, match="expected_cost"):
        fm.squared_risk(cost_post)
    lp = problem(post, entropy=0)
    with pytest.raises(UnsupportedProblemError, match="entropy > 0"):
        lp.solve(backend="stochastic")
    prob = problem(post)
    for bad in ({"T": 0}, {"mu": -1.0}, {"mu": 1e9}, {"batch_size": 0}, {"oracle": "online"}, {"variant": "x"}):
        with pytest.raises(OptionError):
            prob.solve(backend="stochastic", **bad)
    with pytest.raises(OptionError, match="data="):
        prob.solve(data=np.zeros((3, 2)))
    assert "entropic problem (4)" in prob.describe()


def test_eta_outside_the_grid_warns_once_or_clips():
    eta, tau = arrays()
    eta = eta * 3
    with pytest.warns(UserWarning, match="outside"):
        post = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clipped = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1, clip=True)
        r1 = problem(clipped).solve()
        r2 = problem(post).solve()
    assert r1.objective == pytest.approx(r2.objective, abs=1e-12) or r1.objective < r2.objective


def test_infeasible_problem_raises_and_calibration_fixes_it():
    eta, tau = arrays(K=3)
    post = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1, p=[0.5, 0.3, 0.2])
    for backend in ("exact", "stochastic"):
        with pytest.raises(InfeasibleError, match=r"margin.*p='calibrated'"):
            problem(post, eps=1e-4).solve(backend=backend)
    calibrated = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1, p="calibrated")
    res = problem(calibrated, eps=0.0).solve()  # eps = 0 is feasible once p is calibrated
    assert res.max_violation <= 1e-7 and res.certificate["feasibility_margin"] == pytest.approx(0.0, abs=1e-12)


def test_group_labels_order_p():
    """p given by label is matched to tau's columns (not sorted frequencies, as the reference code does)."""
    eta, tau = arrays()
    a = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1, p={"b": 0.3, "a": 0.7}, groups=["a", "b"])
    np.testing.assert_array_equal(a.p_spec, [0.7, 0.3])
    with pytest.raises(ModelError, match="groups="):
        fm.GridPredictor(eta=eta, tau=tau, L=5, B=1, p={"a": 0.7, "b": 0.3})
    with pytest.raises(ModelError, match="do not match"):
        fm.GridPredictor(eta=eta, tau=tau, L=5, B=1, p={"a": 0.7, "c": 0.3}, groups=["a", "b"])


def test_large_beta_does_not_overflow():
    eta, tau = arrays()
    prob = problem(fm.GridPredictor(eta=eta, tau=tau, L=10, B=1), entropy=1e-4)  # beta 4 B^2 = 4e4
    res = prob.solve(backend="stochastic", seed=0, T=2000)
    assert np.isfinite(res.objective) and np.all(np.isfinite(res.variables["Lambda"]))


# -- solving, judging, predicting ----------------------------------------------------------------------------------
def test_arrays_and_callables_give_the_same_problem(models):
    reg, clf, X, _, _ = models
    Xu = X[1000:1500]
    r_call = problem(fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=6, B=2.5)).solve(data=Xu)
    r_arr = problem(fm.GridPredictor(eta=reg.predict(Xu), tau=clf.predict_proba(Xu), L=6, B=2.5)).solve()
    assert r_call.objective == pytest.approx(r_arr.objective, rel=1e-10)
    assert r_call.metrics["dp_gap"] == pytest.approx(r_arr.metrics["dp_gap"], rel=1e-8)


def test_judge_certificates_of_exact_and_stochastic_results(models):
    reg, clf, X, _, _ = models
    prob = problem(fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=8, B=2.5), eps=0.005, entropy=0.02)
    Xu = X[1000:1600]
    exact = prob.solve(data=Xu, method="primal")
    c = exact.certificate
    assert c["duality_gap"] == pytest.approx(0.0, abs=1e-7) and c["dual_suboptimality"] == pytest.approx(0.0, abs=1e-7)
    assert c["optimal_value"] == pytest.approx(exact.objective, abs=1e-7)
    fast = prob.solve(backend="stochastic", data=Xu, seed=0, T=5000)
    s = fast.certificate
    assert abs(s["identity_residual"]) < 1e-12                      # Lemma 3.5 II, sign corrected
    assert s["dual_unfairness_excess"] == pytest.approx(fast.metrics["unfairness_excess"], rel=1e-9, abs=1e-15)
    assert s["dual_suboptimality"] >= -1e-12
    assert s["optimal_value"] == pytest.approx(exact.objective, abs=1e-7)
    used = fast.metrics["samples_used"]
    assert used <= 5000 and fast.metrics["passes"] == pytest.approx(used / 600)
    # ~5000 draws with replacement from 600 points reach all but ~600 exp(-5000/600) ~ 0.1 of them
    assert 595 <= fast.metrics["distinct_points"] <= 600
    assert prob.evaluate(fast, data=Xu).objective == pytest.approx(fast.objective)  # judge any candidate again


def test_law_school_crosscheck_agrees_with_the_exact_entropic_optimum():
    """The cross-check on real data: Law School, 2,000 unlabeled points, L = 20, beta = 100, eps = 0.01: crosscheck ok,
    stochastic value within 1e-2 of the exact entropic optimum and max violation below 5e-3."""
    from sklearn.linear_model import LinearRegression, LogisticRegression
    data = fm.datasets.load_lawschool(target="ugpa")
    y = 2 * (data.y - data.y.min()) / np.ptp(data.y) - 1
    rows = np.random.default_rng(0).permutation(data.n_samples)
    train, unl = rows[:2000], rows[2000:4000]
    reg = LinearRegression().fit(data.X[train], y[train])
    clf = LogisticRegression().fit(data.X[train], np.asarray(data.groups)[train])
    post = fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=20, B=1.0)
    report = fm.crosscheck(problem(post, eps=0.01, entropy=1 / 100), data=data.X[unl], seed=0)
    assert report.ok, report.to_markdown()
    assert abs(report.objective_gap) < 1e-2 and report.stochastic.max_violation < 5e-3
    assert "NOT OK" not in report.to_markdown()


def test_reference_variant_runs_its_whole_schedule():
    """The reference code's SGD3 uses 2T gradients (AC-SA^2 runs AC-SA(T') twice): the pool
    must serve all of them, and the run must end with its schedule complete."""
    from fairmodel.stochastic.sgd3 import sgd3_gradient_calls, sgd3_stages
    eta, tau = arrays()
    res = problem(fm.GridPredictor(eta=eta, tau=tau, L=5, B=1)).solve(backend="stochastic", T=1000, variant="reference",
                                                                      seed=0, certify=False, stop="budget")
    J = sgd3_stages(res.metrics["M"], res.metrics["mu"], reference=True)
    # a budget of T = 1000 is starved: the run completes its schedule, and the judge flags the violation
    assert res.status in ("completed", "infeasible") and res.metrics["samples_used"] == sgd3_gradient_calls(
        1000, J, "acsa2", True)
    assert res.metrics["samples_used"] > 1900


def test_reference_variant_runs_the_fixed_budget_without_stop(models):
    """variant='reference' reproduces the authors' code, one run of a fixed T: given without stop=, T must be the
    length of that run (2T gradients of SGD3 + AC-SA^2), in solve, in the parallel sweep and in the estimator. As the
    cap on the rounds of stop='checks' (the library's default rule, kept for variant='paper') T = 15,000 stopped a
    side-by-side run on Communities and Crime after 7,992 points, with a policy violating eps = 2^-8 six-fold."""
    from fairmodel.stochastic.sgd3 import sgd3_gradient_calls, sgd3_stages
    reg, clf, X, _, _ = models
    prob = problem(fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=5, B=2.5))
    Xu = X[1000:1400]
    res = prob.solve(backend="stochastic", data=Xu, T=1000, variant="reference", seed=0, certify=False)
    calls = sgd3_gradient_calls(1000, sgd3_stages(res.metrics["M"], res.metrics["mu"], reference=True), "acsa2", True)
    assert res.metrics["stop"] == "budget" and res.metrics["samples_used"] == calls
    explicit = prob.solve(backend="stochastic", data=Xu, T=1000, variant="reference", seed=0, certify=False,
                          stop="budget")
    assert np.array_equal(res.variables["Lambda"], explicit.variables["Lambda"])
    frontier = fm.dp_sweep(prob, [0.05, 0.01], parallel=True, data=Xu, T=1000, variant="reference", seed=0,
                           certify=False)
    assert [(r.metrics["stop"], r.metrics["samples_used"]) for r in frontier.results] == [("budget", calls)] * 2
    with pytest.warns(UserWarning, match="status 'infeasible'"):     # T = 1000 is starved, and says so
        est = fm.DemographicParityPostProcessor(reg, clf, eps=0.01, L=5, B=2.5, beta=100, backend="stochastic",
                                                T=1000, variant="reference", random_state=0).fit(Xu)
    assert est.result_.metrics["stop"] == "budget" and est.result_.metrics["samples_used"] == calls
    assert prob.solve(backend="stochastic", data=Xu, seed=0, certify=False).metrics["stop"] == "checks"


def test_predictor_reproduces_the_judged_policy(models, tmp_path):
    reg, clf, X, _, _ = models
    post = fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=8, B=2.5)
    Xu, Xt = X[1000:1600], X[2000:2100]
    res = problem(post).solve(backend="stochastic", data=Xu, seed=0, T=3000)
    model = res.predictor()
    P = model.predict_proba(Xt)
    assert P.shape == (100, 17) and np.allclose(P.sum(axis=1), 1)
    np.testing.assert_allclose(model.predict(Xt), P @ post.grid)
    np.testing.assert_array_equal(model.predict(Xt, mode="mode"), post.grid[P.argmax(axis=1)])
    s1, s2 = model.predict(Xt, mode="sample", seed=3), model.predict(Xt, mode="sample", seed=3)
    np.testing.assert_array_equal(s1, s2)
    assert set(np.round(s1, 12)) <= set(np.round(post.grid, 12))
    # the judge's policy on the unlabeled points is the predictor's
    z = np.stack([res.variables["Lambda"], res.variables["V"]])
    dual = res_dual = prob_dual(post, Xu, res)
    np.testing.assert_allclose(model.predict_proba(Xu), res_dual.policy(z), atol=1e-13)
    assert dual.n == 600
    res.save(tmp_path / "run")
    loaded = fm.load_result(tmp_path / "run")
    again = fm.DPPredictor.from_result(loaded)
    np.testing.assert_allclose(again.predict_proba(eta=reg.predict(Xt), tau=clf.predict_proba(Xt)), P)
    with pytest.raises(OptionError, match="mode"):
        model.predict(Xt, mode="median")


def prob_dual(post, Xu, res):
    from fairmodel.oracles.dp_dual import DualProblem
    from fairmodel.expressions.grid import t_values
    eta, tau = post.values(Xu)
    return DualProblem(post.costs(eta), t_values(tau, res.metrics["p"]), np.full(2, 0.01), res.metrics["beta"])


def test_stream_matches_the_pool_read_in_order(models):
    """data=iterator of chunks (p given, T given) = the pool with oracle='stream'; the judge uses a reservoir."""
    reg, clf, X, _, s = models
    p = np.bincount(s[:1000]) / 1000
    post = fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=6, B=2.5, p=p)
    prob = problem(post, eps=0.02)
    Xu = X[1000:3000]
    pool = prob.solve(backend="stochastic", data=Xu, oracle="stream", T=1800, batch_size=2, seed=1, stop="budget")
    stream = prob.solve(backend="stochastic", data=iter(np.array_split(Xu, 9)), T=1800, batch_size=2, seed=1,
                        judge_size=500, stop="budget")
    np.testing.assert_array_equal(pool.variables["Lambda"], stream.variables["Lambda"])
    assert stream.metrics["judge_points"] == 500 and stream.metrics["stream_points"] <= 2000
    with pytest.raises(OptionError, match="p="):
        problem(fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=6, B=2.5)).solve(
            backend="stochastic", data=iter([Xu]), T=100)
    with pytest.raises(OptionError, match="T="):
        prob.solve(backend="stochastic", data=iter([Xu]), stop="budget")


def test_reservoir_sample_is_uniform():
    """Algorithm R: every stream position is kept with probability k / N (checked on 400 seeded streams)."""
    from fairmodel.families.dp_runs import StreamFit
    post = fm.GridPredictor(eta=lambda X: X[:, 0], tau=lambda X: np.full((len(X), 2), 0.5), L=2, B=1e9, p=[0.5, 0.5])
    prob = problem(post, eps=0.5)
    counts = np.zeros(100)
    for seed in range(400):
        fit = StreamFit(prob.family, 10, judge_size=10, seed=seed)
        for chunk in np.array_split(np.arange(100.0)[:, None], 7):
            fit._reservoir(chunk[:, 0], np.full((len(chunk), 2), 0.5))
        counts[fit.res_first.astype(int)] += 1
    # expected 40 per position; binomial sd ~6, so a 5 sd band per position over 100 positions
    assert counts.sum() == 4000 and np.all(np.abs(counts - 40) < 30)
    assert abs(counts[:50].sum() - counts[50:].sum()) < 250  # no bias toward early or late rows


def test_sweep_traces_a_monotone_frontier():
    eta, tau = arrays(n=300)
    prob = problem(fm.GridPredictor(eta=eta, tau=tau, L=5, B=1), eps=0.1, entropy=0.01)
    eps = [0.1, 0.01, 0.001]
    exact = fm.dp_sweep(prob, eps, backend="exact", method="lbfgs")
    objective = np.array(exact.column("objective"))
    gaps = np.array([exact.column("constraint:c0[0]"), exact.column("constraint:c0[1]")]).max(axis=0)
    assert exact.values == eps and np.all(np.diff(objective) >= -1e-10)  # feasible sets shrink with eps
    assert np.all(gaps <= np.array(eps) + 1e-7)
    fast = fm.dp_sweep(prob, eps, backend="stochastic", T=20000, seed=0)
    # T = 2e4 on this instance (||z*|| = 0.9 at eps = 0.001): measured gaps 1e-6, 1e-3, 6e-3
    assert np.all(np.abs(np.array(fast.column("objective")) - objective) < 1e-2)
    assert np.all(np.array(fast.column("max_violation")) <= 1e-2)
    # one vectorized run over the grid = one run per eps with the same seed (the same sampled points)
    par = fm.dp_sweep(prob, eps, parallel=True, T=2000, seed=3, certify=False)
    seq = fm.dp_sweep(prob, eps, warm_start=False, T=2000, seed=3, certify=False)
    for a, b in zip(par.results, seq.results):
        np.testing.assert_allclose(a.variables["Lambda"], b.variables["Lambda"], rtol=1e-12, atol=1e-15)
        assert a.objective == pytest.approx(b.objective, rel=1e-12)
    assert "constraint:c0[0]" in par.to_markdown()


def test_eps_as_a_parameter_is_swept_by_the_core():
    """fm.dp_gap(post) <= fm.parameter(...): prob.sweep varies it; a value outside [0, 1] is recorded as an error."""
    eta, tau = arrays(n=300)
    post = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1)
    eps = fm.parameter(0.05, "eps")
    prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= eps], entropy=0.01)
    assert "<= eps" in str(prob)
    frontier = prob.sweep("eps", [0.05, 0.01, 2.0], method="lbfgs")
    objective = frontier.column("objective")
    assert objective[1] > objective[0] and frontier.results[2] is None and "[0, 1]" in frontier.errors[2]
    assert eps.value == 0.05
    calls = []
    original = prob.family.warm_start
    prob.family.warm_start = lambda r: calls.append(r) or original(r)
    fast = prob.sweep("eps", [0.05, 0.01], backend="stochastic", seed=0, T=2000, certify=False)
    assert len(calls) == 1 and "z0" in original(fast.results[0])
    # every result is judged: converged on the judge's checks within the cap T = 2000, or not ok with a failed check
    assert all(r.checks and (r.status == "converged") == r.ok and (r.ok or r.failed_checks()) for r in fast.results)


# -- metrics (App. G) -----------------------------------------------------------------------------------------------
def test_ks_unfairness_is_exact_for_deterministic_predictions():
    rng = np.random.default_rng(0)
    pred = np.round(rng.normal(size=300), 1)  # ties on purpose
    g = rng.choice(["u", "v", "w"], size=300)
    ks = fm.metrics.ks_unfairness(g, pred=pred)
    ts = np.unique(np.concatenate([pred, pred - 1e-9]))
    for name in "uvw":
        brute = max(abs(np.mean(pred[g == name] <= t) - np.mean(pred <= t)) for t in ts)
        assert ks[name] == pytest.approx(brute, abs=1e-12)


def test_randomized_metrics_and_two_group_identity():
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(7), size=200)
    grid = np.linspace(-1, 1, 7)
    y = rng.uniform(-1, 1, 200)
    g = (rng.random(200) < 0.3).astype(int)
    assert fm.metrics.randomized_risk(y, P, grid) == pytest.approx(
        np.mean([P[i] @ (grid - y[i]) ** 2 for i in range(200)]), rel=1e-12)
    ks = fm.metrics.ks_unfairness(g, proba=P)
    m = np.bincount(g)
    assert m[0] * ks["0"] == pytest.approx(m[1] * ks["1"], rel=1e-10)  # sum_s m_s (CDF_s - CDF) = 0
    # a sampled deterministic prediction from P has about the same KS (law of the mixture), as a sanity check
    pmf = fm.metrics.pmf_unfairness(g, P)
    pmf_max = fm.metrics.pmf_unfairness(g, P, reduce="max")
    assert all(0 < pmf[k] <= pmf_max[k] for k in pmf)
    assert ks["1"] <= 7 * pmf_max["1"] + 1e-12  # KS <= sum_l |pmf gap| <= m max_l |pmf gap|
    with pytest.raises(DataError, match="no points"):
        fm.metrics.ks_unfairness(g, proba=P, labels=[0, 1, 2])
    assert fm.metrics.mse(y, y + 0.1) == pytest.approx(0.01)


# -- estimator --------------------------------------------------------------------------------------------------------
def test_estimator_fit_predict_and_partial_fit_equals_fit(models):
    reg, clf, X, y, s = models
    Xu, Xt = X[1000:2000], X[2000:]
    est = fm.DemographicParityPostProcessor(reg, clf, eps=0.02, L=8, B=2.5, beta=50, T=4000, random_state=0)
    est.fit(Xu)
    # 1000 points x 17 grid points: the default backend ("auto") is the certified exact dual
    assert est.status_ == "optimal" and est.result_.backend == "exact" and est.predict_proba(Xt).shape == (1000, 17)
    base_ks = fm.metrics.ks_unfairness(s[2000:], pred=reg.predict(Xt))["0"]
    fair_ks = fm.metrics.ks_unfairness(s[2000:], proba=est.predict_proba(Xt))["0"]
    assert fair_ks < 0.5 * base_ks  # the post-processing removes most of the base model's unfairness
    p = np.bincount(s[:1000]) / 1000
    kw = dict(eps=0.02, L=8, B=2.5, beta=50, p=p, T=1000, batch_size=3, random_state=0, backend="stochastic",
              stop="budget")
    full = fm.DemographicParityPostProcessor(reg, clf, oracle="stream", **kw).fit(Xu)
    streamed = fm.DemographicParityPostProcessor(reg, clf, **kw)
    for chunk in np.array_split(Xu, 7):
        streamed.partial_fit(chunk)
    np.testing.assert_array_equal(full.dual_, streamed.dual_)
    np.testing.assert_array_equal(full.predict(Xt), streamed.predict(Xt))
    # the stream is judged once its planned T points are used (here on all 1,000 points: the reservoir holds them)
    assert streamed.result_.checks and streamed.status_ == full.status_ == streamed.result_.status
    with pytest.raises(OptionError, match="T="):
        fm.DemographicParityPostProcessor(reg, clf, p=p).partial_fit(Xu)
    with pytest.raises(OptionError, match="p="):
        fm.DemographicParityPostProcessor(reg, clf, T=100).partial_fit(Xu)
    with pytest.raises(OptionError, match="not fitted"):
        fm.DemographicParityPostProcessor(reg, clf).predict(Xt)
    from sklearn.base import clone
    assert clone(est).get_params()["eps"] == 0.02


def test_import_without_scikit_learn():
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "import fairmodel as fm\n"
            "assert fm.GridPredictor and fm.metrics.ks_unfairness\n"
            "try:\n    fm.DemographicParityPostProcessor\nexcept ImportError:\n    print('lazy')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=".")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "lazy"


# -- loaders ---------------------------------------------------------------------------------------------------
def test_loaders_follow_the_papers_preprocessing():
    law = fm.datasets.load_lawschool(target="ugpa")
    assert law.y.max() <= 4 and set(law.groups.names) == {"white", "non-white"} and law.n_features == 9
    cc = fm.datasets.load_communities()
    assert cc.n_samples == 1984 and 0 < cc.y.min() and cc.y.max() <= 1 and "racePctWhite" not in cc.feature_names
    adult = fm.datasets.load_adult(target="age", encoding="dp", standardize=False)
    assert adult.feature_names == ("fnlwgt", "education.num", "capital.gain", "capital.loss", "hours.per.week",
                                   "income")
    assert set(np.unique(adult.X[:, -1])) == {0.0, 1.0} and set(adult.groups.names) == {"Female", "Male"}


def test_ks_unfairness_merges_columns_of_equal_grid_values():
    """Two columns at the same grid value are one output value: splitting a column unevenly across rows leaves
    the KS distance unchanged (before, the CDF was read half-way through the value and could exceed it)."""
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(4), size=200)
    grid = np.array([0.0, 1.0, 2.0, 3.0])
    g = rng.integers(0, 2, 200)
    split = np.where(g == 0, 1.0, 0.0)[:, None] * np.ones((1, 4))     # group 0 in the first copy, group 1 in the second
    P2 = np.hstack([P * split, P * (1 - split)])
    a = fm.metrics.ks_unfairness(g, proba=P, grid=grid)
    b = fm.metrics.ks_unfairness(g, proba=P2, grid=np.r_[grid, grid])
    assert b == pytest.approx(a, abs=1e-12)


def test_reproduction_of_one_split_lies_in_the_published_spread():
    """The reduced version of tests/test_dp_slow.py::test_reproduction_matches_the_published_numbers (10 splits): one
    split (0) of Adult, the reference-code variant, at the paper's loosest and tightest eps (2^-1, 2^-512; App. G).

    At 2^-512 the risk and the KS unfairness of group S = 0 must lie within the published value (Table of App. G,
    SETTINGS of fairmodel.estimators.dp_reproduction) plus the slow test's allowance for the mean over 10 splits
    (0.0012 and 0.027) plus 3 per-split standard deviations (0.0011 and 0.011, measured over the 10 splits: one split
    is one draw); and, on the same split, the constraint must cut the unfairness at least in half at a risk no
    smaller than at 2^-1 (measured: 0.164 -> 0.040 and 0.0158 -> 0.0169). Each eps carries the judge's constraint
    check on the unlabeled points: the loosest is met; at the tightest the authors' fixed T is not enough to meet
    eps = 2^-512 there (its violation is above the tolerance and the result is not ok), as on Communities and Crime."""
    from fairmodel.estimators.dp_reproduction import SETTINGS, run_split
    cfg = SETTINGS["adult"]
    k = cfg["i"].index(512)
    loose, tight = run_split("adult", 0, eps_exponents=[1, 512], variant="reference")["eps"]
    g0 = cfg["group0"]
    assert abs(tight["risk"] - cfg["paper_risk"][k]) <= 0.0012 + 3 * 0.0011
    assert abs(tight["U"][g0] - cfg["paper_U0"][k]) <= 0.027 + 3 * 0.011
    assert tight["U"][g0] <= 0.5 * loose["U"][g0] and tight["risk"] >= loose["risk"]
    assert loose["ok"] and loose["violation"] <= loose["tolerance"]
    assert not tight["ok"] and tight["violation"] > tight["tolerance"]
