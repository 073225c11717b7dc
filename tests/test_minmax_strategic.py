"""Strategic Wasserstein DRO: the corrected saddle function, the exact program and its duals, the
judge, the family and the cross-check (Maheshwari et al., AISTATS 2022, §5 and App. B, corrected)."""
import sys
import warnings
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

import fairmodel as fm
from fairmodel.errors import DataError, ModelError, OptionError, UnsupportedProblemError
from fairmodel.exact import strategic_dro as exact_sdro
from fairmodel.oracles.strategic import WDRSC, strategic_response

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import defaults_minmax  # noqa: E402

from .conftest import on_the_cpu_clock  # noqa: E402


def _problem(n=300, delta=0.1, seed=0, p=10, zeta=0.05, variant="corrected", **kw):
    data = fm.datasets.make_strategic_synthetic(n=n, p=p, seed=seed)
    w = fm.Weights(data.n_features)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=range(min(5, p)), zeta=zeta), data.y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        atom = fm.wasserstein_worst_case(loss, radius=delta, label_cost=0.5, variant=variant, **kw)
    return fm.Problem(fm.Minimize(atom)), atom.model, data


@pytest.fixture(scope="module")
def solved():
    prob, model, data = _problem()
    theta, alpha, gamma, value, record = exact_sdro.solve_wdrsc(model)
    return prob, model, data, theta, alpha, gamma, value, record


def test_exact_program_agrees_with_the_closed_forms(solved):
    """OPT = max_gamma L(theta*, alpha*, .) (E2) = L(theta*, alpha*, gamma*) = worst-case risk(theta*); DG ~ 0."""
    prob, model, data, theta, alpha, gamma, value, record = solved
    assert np.linalg.norm(theta) > 0.3                                # the solution is non-trivial at delta = 0.1
    assert model.primal(theta, alpha) == pytest.approx(value, abs=1e-7)
    assert model.value(theta, alpha, gamma) == pytest.approx(value, abs=1e-7)
    assert model.worst_case_risk(theta)[0] == pytest.approx(value, abs=1e-7)
    assert record["dual_sum_error"] < 1e-6                            # lambda+ + lambda- = 1/n (stationarity in s)
    dual, _, _ = exact_sdro.inner_min(model, gamma)
    assert model.primal(theta, alpha) - dual < 1e-6
    assert np.all(gamma[model.neg] == 0) and np.all(np.abs(gamma) <= 1)


def test_gamma_star_from_duals_is_needed_where_the_sign_is_ambiguous(solved):
    """gamma* = n (lambda+ - lambda-) differs from sign(c z - kappa alpha) exactly where c z_i* = kappa alpha*."""
    prob, model, data, theta, alpha, gamma, value, record = solved
    z = model.scores(theta)[model.pos]
    slack = 0.5 * z - model.kappa * alpha
    clear = np.abs(slack) > 1e-4
    np.testing.assert_allclose(gamma[model.pos][clear], np.sign(slack[clear]), atol=1e-5)


def test_worst_case_risk_matches_scalar_minimization_and_cvxpy():
    """E2: the exact piecewise-linear minimization over alpha agrees with minimize_scalar and with CVXPY."""
    prob, model, data = _problem(n=200, delta=0.15, seed=1)
    rng = np.random.default_rng(0)
    for _ in range(5):
        theta = rng.normal(0, 0.5, model.p)
        value, a_star = model.worst_case_risk(theta)
        lo = np.linalg.norm(theta) / model.slope
        res = minimize_scalar(lambda a: model.primal(theta, a), bounds=(lo, lo + 50), method="bounded",
                              options={"xatol": 1e-12})
        assert value <= min(res.fun, model.primal(theta, lo)) + 1e-12
        assert value == pytest.approx(min(res.fun, model.primal(theta, lo)), abs=1e-7)
        a = cp.Variable()
        z = model.scores(theta)[model.pos]
        obj = a * model.delta + cp.sum(cp.maximum(np.logaddexp(0, -z), np.logaddexp(0, z) - 2 * model.kappa * a)) / model.n
        obj = obj + np.sum(np.logaddexp(0, model.scores(theta)[model.neg])) / model.n
        cp.Problem(cp.Minimize(obj), [a >= lo]).solve(solver="CLARABEL")
        assert value == pytest.approx(obj.value, abs=1e-6)


def test_structure_of_the_corrected_problem():
    """Worst-case risk >= strategic ERM risk, non-decreasing in delta; L convex in (theta, alpha), affine in gamma."""
    data = fm.datasets.make_strategic_synthetic(n=200, seed=2)
    rng = np.random.default_rng(1)
    models = [WDRSC(data.X, data.y, np.arange(10) < 5, 0.05, d, 0.5) for d in (0.02, 0.1, 0.3)]
    for _ in range(10):
        theta = rng.normal(0, 0.7, 10)
        risks = [m.worst_case_risk(theta)[0] for m in models]
        assert risks[0] >= np.mean(models[0].losses(theta)) - 1e-12
        assert risks[0] <= risks[1] <= risks[2]
    m = models[1]
    for _ in range(20):
        u1 = m.x_domain.project(rng.normal(0, 2, 11))
        u2 = m.x_domain.project(rng.normal(0, 2, 11))
        g = rng.uniform(-1, 1, m.n)
        mid = m.value((u1[:-1] + u2[:-1]) / 2, (u1[-1] + u2[-1]) / 2, g)
        assert mid <= (m.value(u1[:-1], u1[-1], g) + m.value(u2[:-1], u2[-1], g)) / 2 + 1e-12
        g2 = rng.uniform(-1, 1, m.n)
        assert m.value(u1[:-1], u1[-1], (g + g2) / 2) == pytest.approx(
            (m.value(u1[:-1], u1[-1], g) + m.value(u1[:-1], u1[-1], g2)) / 2, abs=1e-12)


def test_weak_duality_lower_bound_by_an_explicit_perturbation():
    """Weak duality: flipping the labels of some +1 points (cost 2 kappa / n each) is a feasible distribution,
    so its expected loss is a lower bound on the worst-case risk."""
    prob, model, data = _problem(n=200, delta=0.1, seed=3)
    theta = np.random.default_rng(2).normal(0, 0.5, 10)
    z = model.scores(theta)
    losses = np.logaddexp(0, -model.y * z)
    k = int(model.delta * model.n / (2 * model.kappa))                # flips the budget allows
    gain = np.logaddexp(0, z) - np.logaddexp(0, -z)                    # loss increase of flipping a +1 point
    order = np.argsort(-np.where(model.pos, gain, -np.inf))[:k]
    flipped = losses.copy()
    flipped[order] = np.logaddexp(0, z[order])
    assert flipped.mean() <= model.worst_case_risk(theta)[0] + 1e-12


def test_best_response_matches_numerical_maximization():
    """<b_i, theta> = <x_i, theta> + zeta ||M theta||^2; +1 agents and non-strategic features stay put;
    b_i maximizes the agent's utility (checked by scipy)."""
    data = fm.datasets.make_strategic_synthetic(n=20, seed=4)
    mask = np.arange(10) < 5
    model = WDRSC(data.X, data.y, mask, 0.05, 0.1, 0.5)
    theta = np.random.default_rng(3).normal(size=10)
    B = model.agents.respond_all(theta)
    np.testing.assert_allclose(B @ theta, model.scores(theta), rtol=1e-12)
    np.testing.assert_array_equal(B[model.pos], data.X[model.pos])
    np.testing.assert_array_equal(B[:, ~mask], data.X[:, ~mask])
    np.testing.assert_allclose(B, strategic_response(theta, data.X, data.y, 0.05, mask))
    i = int(np.flatnonzero(model.neg)[0])
    x0 = data.X[i]

    def neg_utility(xs):                       # utility over the strategic coordinates (others are fixed)
        x = x0.copy()
        x[mask] = xs
        return -(x @ theta - np.sum((x - x0) ** 2) / (2 * 0.05))
    res = minimize(neg_utility, x0[mask], method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(res.x, B[i, mask], atol=1e-6)
    assert model.agents.queries == 20


def test_paper_variant_relation_and_unboundedness():
    """L_paper - L_corrected = -kappa alpha n_-/n identically; the literal eq. (7) with delta < kappa n_-/n
    drives alpha to any bound (it subtracts kappa alpha for every sample, not only for y = +1), so fairmodel
    refuses it."""
    data = fm.datasets.make_strategic_synthetic(n=200, seed=5)
    mask = np.arange(10) < 5
    corr = WDRSC(data.X, data.y, mask, 0.05, 0.4, 0.5)
    paper = WDRSC(data.X, data.y, mask, 0.05, 0.4, 0.5, variant="paper", alpha_max=corr.alpha_max)
    rng = np.random.default_rng(4)
    for _ in range(5):
        theta, a, g = rng.normal(size=10), rng.uniform(0, 3), rng.uniform(-1, 1, 200)
        assert paper.value(theta, a, g) - corr.value(theta, a, g) == pytest.approx(-0.5 * a * corr.n_neg / 200,
                                                                                   abs=1e-12)
    assert paper.slope == pytest.approx(1 / 1.25) and corr.slope == 1.0
    shift = 0.5 * corr.n_neg / 200
    with pytest.raises(ModelError, match="unbounded below"):
        WDRSC(data.X, data.y, mask, 0.05, shift - 0.01, 0.5, variant="paper")
    # independent check of the erratum: the literal objective, solved by CVXPY with a bound, sits on the bound
    for bound in (10.0, 100.0):
        theta, a = cp.Variable(10), cp.Variable()
        zp = data.X[corr.pos] @ theta
        zn = data.X[corr.neg] @ theta + 0.05 * cp.sum_squares(theta[:5])
        s = cp.Variable(corr.n_pos)
        obj = a * (0.1 - shift) + (cp.sum(s) + cp.sum(cp.logistic(zn))) / 200
        cons = [s >= cp.logistic(-zp), s >= cp.logistic(zp) - a, cp.norm(theta) <= a / 1.25, a <= bound]
        cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL")
        assert a.value == pytest.approx(bound, rel=1e-4)


def test_paper_settings_give_a_trivial_corrected_solution():
    """At the paper's delta = 0.4 (kappa = 0.5, zeta = 0.05, p = 10, 5 strategic, n = 500) the corrected
    problem has theta* = 0 and value log 2, while the literal eq. (7) gives a non-trivial theta*."""
    prob, model, data = _problem(n=500, delta=0.4, seed=0)
    theta, alpha, _, value, _ = exact_sdro.solve_wdrsc(model)
    assert np.linalg.norm(theta) < 1e-4 and value == pytest.approx(np.log(2), abs=1e-6)
    prob_p, model_p, _ = _problem(n=500, delta=0.4, seed=0, variant="paper")
    theta_p, _, _, value_p, _ = exact_sdro.solve_wdrsc(model_p)
    assert np.linalg.norm(theta_p) > 0.1 and value_p < np.log(2)


def test_family_exact_and_judge(solved):
    prob, model, data, theta, alpha, gamma, value, record = solved
    assert prob.family.name == "strategic_dro"
    res = prob.solve(backend="exact")
    assert res.objective == pytest.approx(value, abs=1e-7)
    assert res.certificate["duality_gap"] < 1e-6
    np.testing.assert_allclose(res.variables["w"], theta, atol=1e-6)
    assert 0.5 < res.metrics["strategic_accuracy"] <= 1.0
    assert res.metrics["worst_case_accuracy"] <= res.metrics["strategic_accuracy"]
    only_w = prob.evaluate(w=theta)                                    # the judge needs w only for the objective
    assert only_w.objective == pytest.approx(value, abs=1e-7) and only_w.certificate == {}
    assert "conic" in prob.describe() and "K = {||w|| <= 1 alpha" in prob.describe()
    assert isinstance(prob.to_cvxpy(), cp.Problem)
    with pytest.raises(OptionError, match="both 'alpha' and 'gamma'"):
        prob.evaluate(w=theta, alpha=alpha)
    with pytest.raises(OptionError, match="outside the feasible set"):
        prob.evaluate(w=theta * 10, alpha=alpha, gamma=gamma)


def test_stochastic_first_order_and_options(solved):
    prob, model, data, theta, alpha, gamma, value, record = solved
    res = prob.solve(backend="stochastic", method="ogda-rr", order=1, seed=0, epochs=120, stop="budget")
    assert res.ok and res.metrics["queries"] == 0 and res.metrics["gradients"] == 2 * 300 * 120 - 1
    assert res.certificate["duality_gap"] < 5e-2
    assert res.objective >= value - 1e-9
    zo = prob.solve(backend="stochastic", method="sgda-wr", order=0, seed=0, epochs=2, zo="all")
    # two epochs are a starved budget: the run completes, the judge's duality gap says it is not accurate; each
    # estimate takes k directions (the default's choice) and two queries each for the two-point estimator
    per_estimate = (2 if zo.solver["options"]["estimator"] == "two-point" else 1) * zo.solver["options"]["directions"]
    assert zo.status == "inaccurate" and zo.metrics["queries"] == 2 * 300 * per_estimate
    assert zo.metrics["gradients"] == 0
    assert zo.metrics["agent_queries"] == zo.metrics["queries"]
    with pytest.raises(OptionError, match="unknown option"):
        prob.solve(backend="stochastic", seed=0, step=0.1)
    with pytest.raises(ModelError, match="zo must be"):
        prob.solve(backend="stochastic", seed=0, zo="alpha")
    with pytest.raises(OptionError, match="design_metric must be"):
        prob.solve(backend="stochastic", seed=0, design_metric="auto")


@pytest.mark.slow     # three strategic solves, 25 s: opt-in (the stopping rule's tests in tests/test_fail_fast.py run)
def test_the_run_stops_on_the_judges_check_and_returns_what_it_checked():
    """Defaults: the judge's checks after 50 epochs, then every 50 until that is under 25 % of the run, then every
    25 %; the run stops when the duality gap is within 3 % of the worst-case risk, and the result is the candidate
    checked (its gap is the checkpoint's); a run of that many epochs with stop="budget" and the same steps returns
    the same point (the tail average does not depend on the run's length)."""
    prob, model, data = _problem(n=1000, delta=0.1, seed=1)
    with on_the_cpu_clock():
        res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.status == "converged" and "every check of the judge passed" in res.message
    epochs = res.metrics["epochs_run"]
    assert epochs % 50 == 0 and epochs < 2000 and res.metrics["checks_run"] == epochs // 50
    check = res.checks[0]
    assert check["tolerance"] == pytest.approx(0.03 * res.objective) and check["value"] <= check["tolerance"]
    assert res.certificate["duality_gap"] == check["value"]
    assert res.metrics["check_time_s"] <= 0.15 * res.timings["solve"]          # the checks' cost is bounded
    options = {k: res.solver["options"][k] for k in ("eta0", "eta_max", "R0", "y_step_scale", "noise", "schedule",
                                                     "output", "estimator", "directions")}
    same = prob.solve(backend="stochastic", seed=0, stop="budget", epochs=epochs, **options)
    np.testing.assert_allclose(same.variables["w"], res.variables["w"], rtol=1e-12)
    again = prob.solve(backend="stochastic", seed=0)                      # determinism with stopping on
    np.testing.assert_array_equal(again.variables["w"], res.variables["w"])


def test_steps_come_from_measured_constants():
    """The query radius is in the units of the features (a query moves a typical score by about 1, and by eps^(1/3)
    for the two-point central difference): features scaled by 10 get a radius 10 times smaller; the noise the steps
    were set for is recorded."""
    from fairmodel.stochastic.ogda_estimator import FD_RADIUS
    data = fm.datasets.make_strategic_synthetic(n=200, seed=2)
    radii = []
    for scale in (1.0, 10.0):
        scaled = fm.Dataset(scale * data.X, data.y)
        w = fm.Weights(data.n_features)
        loss = fm.logistic_loss(fm.strategic_score(scaled, w, strategic_features=range(5), zeta=0.05), scaled.y)
        prob = fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=0.1, label_cost=0.5)))
        res = prob.solve(backend="stochastic", seed=0, epochs=1)
        radii.append(res.metrics["R0"] / (FD_RADIUS if res.solver["options"]["estimator"] == "two-point" else 1.0))
        assert res.metrics["sigma"] > 0 and res.metrics["eta_max"] <= res.metrics["eta0"]
    assert radii[0] == pytest.approx(1.0 / np.sqrt(np.mean(data.X ** 2)))
    assert radii[1] == pytest.approx(radii[0] / 10.0)


def test_caps_and_budgets_are_judged():
    prob, model, data = _problem(n=120, delta=0.1, seed=7)
    capped = prob.solve(backend="stochastic", seed=3, epochs=3)
    assert not capped.ok and "What to try" in capped.message and capped.failed_checks()
    budget = prob.solve(backend="stochastic", seed=3, epochs=12, max_queries=500, estimator="one-point")
    # 239 queries per epoch (the paper's one-point estimator): the budget ends the run after 3 epochs; the judge's
    # gap then decides the status
    assert budget.metrics["epochs_run"] == 3 and "budget" in budget.message
    assert budget.status == ("budget_exhausted" if budget.ok else "inaccurate")
    with pytest.raises(OptionError, match="unknown option"):
        prob.solve(backend="stochastic", seed=0, target_gap=0.1)


def test_crosscheck_of_the_strategic_dro_example():
    """The cross-check of examples/strategic_dro.py (n = 1000 synthetic, delta = 0.1, ||w*|| = 1.26) with defaults:
    ok, and the agreement tolerance is the stochastic certificate's (3 % of the worst-case risk)."""
    prob, model, data = _problem(n=1000, delta=0.1, seed=0)
    report = fm.crosscheck(prob, seed=0)
    assert report.ok, report.to_markdown()
    agreement = report.checks[0]
    assert agreement.tolerance == pytest.approx(0.03 * report.stochastic.objective)
    assert agreement.tolerance == pytest.approx(report.stochastic.checks[0]["tolerance"])
    w_s, w_e = report.stochastic.variables["w"], report.exact.variables["w"]
    assert w_s @ w_e > 0.9 * np.linalg.norm(w_s) * np.linalg.norm(w_e)   # the same direction


@pytest.mark.parametrize("build, error, match", [
    (lambda d, w: fm.wasserstein_worst_case(fm.logistic_loss(d.score(w), d.y), radius=0.0), ModelError,
     "radius.*positive"),
    (lambda d, w: fm.wasserstein_worst_case(fm.logistic_loss(d.score(w), d.y), radius=-1.0), ModelError,
     "radius.*positive"),
    (lambda d, w: fm.wasserstein_worst_case(fm.logistic_loss(d.score(w), d.y), label_cost=0.0), ModelError,
     "label_cost.*positive"),
    (lambda d, w: fm.wasserstein_worst_case(fm.logistic_loss(d.score(w), d.y), alpha_max=0.0), ModelError,
     "alpha_max.*positive"),
    (lambda d, w: fm.wasserstein_worst_case(fm.logistic_loss(d.score(w), d.y), variant="exact"), ModelError,
     "variant must be"),
    (lambda d, w: fm.wasserstein_worst_case(fm.squared_loss(d.score(w), d.y)), ModelError, "logistic loss only"),
    (lambda d, w: fm.wasserstein_worst_case(fm.hinge_loss(d.score(w), d.y)), ModelError, "logistic loss only"),
    (lambda d, w: fm.strategic_score(d, w, strategic_features=np.ones(7, dtype=bool)), ModelError,
     "one entry per feature"),
    (lambda d, w: fm.strategic_score(d, w, strategic_features=["income"]), ModelError, "unknown strategic feature"),
    (lambda d, w: fm.strategic_score(d, w, strategic_features=[12]), ModelError, "indices in"),
    (lambda d, w: fm.strategic_score(d, w, strategic_features=[0], zeta=-0.1), ModelError, "zeta.*non-negative"),
    (lambda d, w: fm.strategic_score(d, fm.Weights(10, intercept=True), [0]), ModelError, "intercept"),
    (lambda d, w: fm.strategic_score(fm.Dataset(d.X), w, [0]), DataError, "needs labels"),
    (lambda d, w: fm.wasserstein_worst_case(fm.logistic_loss(fm.strategic_score(fm.Dataset(d.X, d.y * 3), w),
                                                             d.y)), DataError, "binary labels"),
])
def test_invalid_declarations(build, error, match):
    data = fm.datasets.make_strategic_synthetic(n=50, seed=0)
    with pytest.raises(error, match=match):
        build(data, fm.Weights(10))


def test_paper_variant_warns_and_constraints_are_refused():
    data = fm.datasets.make_strategic_synthetic(n=50, seed=0)
    w = fm.Weights(10)
    loss = fm.logistic_loss(fm.strategic_score(data, w, range(5)), data.y)
    with pytest.warns(UserWarning, match="unbounded below"):
        fm.wasserstein_worst_case(loss, radius=0.4, variant="paper")
    atom = fm.wasserstein_worst_case(loss, radius=0.1)
    with pytest.raises(UnsupportedProblemError, match="constraints are not supported"):
        fm.Problem(fm.Minimize(atom), [fm.norm(w) <= 1.0])


def test_strategic_score_value_and_gradient():
    data = fm.datasets.make_strategic_synthetic(n=30, seed=6)
    w = fm.Weights(10)
    score = fm.strategic_score(data, w, strategic_features=["s0", "s1", "x7"], zeta=0.1)
    theta = np.random.default_rng(5).normal(size=10)
    from fairmodel.expressions import evaluate, value_and_grad
    mask = np.isin(np.arange(10), [0, 1, 7])
    expected = data.X @ theta + (data.y < 0) * 0.1 * np.sum(theta[mask] ** 2)
    np.testing.assert_allclose(evaluate(score, {w: theta}), expected)
    val, grads = value_and_grad(fm.mean(fm.logistic_loss(score, data.y)), {w: theta})
    eps = 1e-6
    num = [(evaluate(fm.mean(fm.logistic_loss(score, data.y)), {w: theta + eps * e}) - val) / eps
           for e in np.eye(10)]
    np.testing.assert_allclose(grads[w], num, atol=1e-5)


def test_problem_file_twin_matches_the_generator_and_builds():
    from pathlib import Path
    from fairmodel.frontends import problemfile
    path = Path(__file__).resolve().parent.parent / "examples" / "problems" / "strategic_dro_synthetic.toml"
    prob, data, spec = problemfile.load(path)
    ref = fm.datasets.make_strategic_synthetic(n=1000, seed=0)
    np.testing.assert_allclose(data.X, ref.X, rtol=1e-8, atol=1e-9)
    np.testing.assert_array_equal(data.y, ref.y)
    assert prob.family.name == "strategic_dro" and prob.family.model.mask.sum() == 5


def test_problem_file_errors(tmp_path):
    from fairmodel.frontends import problemfile
    body = ('[data]\nname = "lawschool"\ntarget = "bar1"\nsubsample = 200\n[problem]\nfamily = "strategic_dro"\n'
            'strategic_features = ["lsat"]\n')
    (tmp_path / "ok.toml").write_text(body + "wasserstein_radius = 0.1\n")
    assert problemfile.load(tmp_path / "ok.toml")[0].family.name == "strategic_dro"
    for extra, match in (('loss = "hinge"\n', "loss.*not allowed"), ("wasserstein_radius = -1.0\n", "positive"),
                         ('kappa = 1.0\n', "unknown key"), ('strategic_features2 = 1\n', "unknown key")):
        (tmp_path / "bad.toml").write_text(body + extra)
        with pytest.raises(problemfile.ProblemFileError, match=match):
            problemfile.load(tmp_path / "bad.toml")


@pytest.mark.parametrize("name", [n for n in defaults_minmax.QUICK if n in defaults_minmax.STRATEGIC_CASES])
def test_defaults_cross_check_on_cases_they_were_not_tuned_on(name):
    """The fast subset of benchmarks/defaults_minmax.py (strategic DRO): the cross-check is ok with defaults only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = defaults_minmax.run_case(name)
    assert row["ok"], row


@pytest.mark.parametrize("zo, weighted", [("theta", False), ("all", False), ("theta", True)])
def test_vectorized_values_match_the_agents_one_query_at_a_time(zo, weighted):
    """WDRSCOracle.values (the scores of the agents' responses to many theta at once) equals value row by row,
    for +1 and -1 agents, and counts one agent query per row."""
    from fairmodel.oracles.strategic import WDRSCOracle
    data = fm.datasets.make_strategic_synthetic(n=40, p=6, seed=3)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, 40) if weighted else None
    model = WDRSC(data.X, data.y, np.array([1, 0, 1, 0, 0, 0], bool), 0.3, 0.1, 0.5, sample_weight=weights)
    oracle = WDRSCOracle(model, zo)
    rng = np.random.default_rng(0)
    u = oracle.project(rng.standard_normal(oracle.dim))
    shifts = 0.7 * rng.standard_normal((5, oracle.zo.shape[0]))
    for i in (int(np.flatnonzero(data.y > 0)[0]), int(np.flatnonzero(data.y < 0)[0])):
        before = model.agents.queries
        batch = oracle.values(i, u, shifts)
        assert model.agents.queries - before == 5
        np.testing.assert_allclose(batch, [oracle.value(i, u, s) for s in shifts], rtol=1e-12, atol=1e-13)


def test_zeroth_order_default_chooses_the_estimator_from_the_measured_noise():
    """200 synthetic rows with 30 features (3 strategic): the paper's one-point estimator (noise about 14x that of
    exact gradients here) stalls at 14x its tolerance; the default measures that and takes the two-point estimator
    with a mini-batch of directions, whose run certifies; its value is within its certified gap of the exact
    optimum (weak duality: max_gamma L >= OPT)."""
    data = fm.datasets.make_strategic_synthetic(n=200, p=30, n_strategic=3, seed=1)
    w = fm.Weights(30)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=range(3), zeta=0.05), data.y)
    prob = fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=0.1, label_cost=0.5)))
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok and res.status == "converged", res.message
    assert res.solver["options"]["estimator"] == "two-point" and 1 < res.solver["options"]["directions"] <= 30
    assert res.metrics["noise_one_point"] > 2 * res.metrics["noise_two_point"]
    exact = prob.solve(backend="exact")
    assert exact.objective - 1e-6 <= res.objective <= exact.objective + res.certificate["duality_gap"] + 1e-6


def test_the_multipliers_of_theta_certify_the_saddle_point(solved):
    """alpha minimizing E2 at theta and gamma its subgradient's certificate: alpha is the exact program's alpha*, gamma
    is sign(c z_i - kappa alpha) off the breakpoint, and at theta* their duality gap is under 1e-3 of the risk (the
    stochastic tolerance is 3e-2 of it; not 0: seven rows lie at the breakpoint there, within 1e-7, and gamma* spreads
    their flip mass as the stationarity in theta asks, -0.28 to 0.82, where the multipliers share it equally); at any
    other theta the gap they give is still an upper bound on the excess risk (weak duality), and it shrinks as theta
    approaches theta*."""
    prob, model, data, theta, alpha, gamma, value, record = solved
    a, g = model.multipliers(theta)
    assert a == pytest.approx(alpha, abs=1e-6)
    assert model.primal(theta, a) == pytest.approx(model.worst_case_risk(theta)[0], abs=1e-12)
    assert model.primal(theta, a) - exact_sdro.inner_min(model, g)[0] < 1e-3 * value
    slack = 0.5 * model.scores(theta)[model.pos] - model.kappa * a
    clear = np.abs(slack) > 1e-9
    np.testing.assert_array_equal(g[model.pos][clear], np.sign(slack[clear]))
    assert np.all(g[model.neg] == 0) and np.all(np.abs(g) <= 1)
    rng = np.random.default_rng(0)
    direction = rng.standard_normal(model.p)
    gaps = []
    for size in (0.3, 0.1, 0.03):
        t = theta + size * direction / np.linalg.norm(direction)
        a, g = model.multipliers(t)
        gap = model.primal(t, a) - exact_sdro.inner_min(model, g)[0]
        assert gap >= model.worst_case_risk(t)[0] - value - 1e-7
        gaps.append(gap)
    assert gaps[0] > gaps[1] > gaps[2]


def test_the_oracle_in_the_metric_of_the_rows_is_the_oracle_of_theta_by_the_chain_rule():
    """With coordinates phi (theta = M phi) the values are those of the plain oracle at theta = M phi (the agents
    answer the same theta), the gradients M' times its gradients (and the finite differences of the values), and the
    feasible set is the cone in phi: its projection keeps theta in the cone."""
    from fairmodel.oracles.metric import Coordinates
    from fairmodel.oracles.strategic import WDRSCOracle
    data = fm.datasets.make_strategic_synthetic(n=40, p=6, seed=3)
    X = data.X * np.array([1.0, 30.0, 0.5, 2.0, 1.0, 1.0]) + np.array([0.0, 50.0, 0.0, 3.0, 0.0, 0.0])
    model = WDRSC(X, data.y, np.array([1, 1, 0, 0, 0, 0], bool), 0.3, 0.1, 0.5)
    coordinates = Coordinates.from_second_moment(model.second_moments(full=True))
    plain, metric = WDRSCOracle(model), WDRSCOracle(model, coordinates=coordinates)
    rng = np.random.default_rng(0)
    M = coordinates.M
    for i in (int(np.flatnonzero(data.y > 0)[0]), int(np.flatnonzero(data.y < 0)[0])):
        u = metric.project(rng.standard_normal(metric.dim) * 0.1)
        theta = np.concatenate([M @ u[:6], u[6:]])
        shift = 0.01 * rng.standard_normal(6)
        assert metric.value(i, u, shift) == pytest.approx(plain.value(i, theta, M @ shift), rel=1e-12)
        np.testing.assert_allclose(metric.values(i, u, shift[None, :]), [metric.value(i, u, shift)], rtol=1e-12)
        g_u, g_theta = metric.gradient(i, u, False)[0], plain.gradient(i, theta, False)[0]
        np.testing.assert_allclose(g_u[:6], M.T @ g_theta[:6], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g_u[6], g_theta[6])
        e = np.eye(6)[1] * 1e-6
        difference = (metric.value(i, u, e) - metric.value(i, u, -e)) / 2e-6
        assert difference == pytest.approx(g_u[1], rel=1e-5, abs=1e-8)
    far = metric.project_x(rng.standard_normal(7) * 100)
    assert np.linalg.norm(metric.theta(np.concatenate([far, np.zeros(40)]))) <= model.slope * far[-1] * (1 + 1e-12)


def _raw_law_school(n, seed):
    """Law School's CSV file in its own units (LSAT 10-48, age about -60, undergraduate GPA 1.5-4; columns not
    centered), bar passage -> +-1."""
    from .test_raw_units import bundled_frame, from_frame
    df = bundled_frame("lawschool")
    df["bar1"] = np.where(df["bar1"] == "P", 1.0, -1.0)
    return from_frame(df, "bar1", "gender", n, seed)


def test_raw_units_get_the_steps_in_the_metric_of_the_rows_in_a_second_run():
    """Law School's CSV file, LSAT and GPA strategic, radius 0.02: the run with theta's own steps stopped at 137x the
    duality gap's tolerance (and at 89x with exact gradients): the features' root-mean-squares spread from 0.95 to
    59.5 over uncentered columns. The second run, in the metric of the rows' second moment, certifies, and the
    result says which run it is."""
    data = _raw_law_school(800, seed=547)
    w = fm.Weights(data.n_features)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=["lsat", "ugpa"], zeta=0.05), data.y)
    prob = fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=0.02, label_cost=0.5)))
    report = fm.crosscheck(prob, seed=0)
    st = report.stochastic
    assert report.ok and st.status == "converged", report.to_markdown()
    assert st.metrics["design_metric"] and st.metrics["first_run"]["status"] != "converged"
    assert "metric of the rows' second moment" in st.message
    plain = prob.solve(backend="stochastic", seed=0, design_metric=False)
    assert not plain.ok and "first_run" not in plain.metrics


def test_a_diverged_candidate_does_not_widen_its_own_tolerance():
    """The stochastic accuracy is 3 % of the candidate's worst-case risk, at most 3 % of log 2 (the risk of w = 0,
    which bounds the optimum): a candidate far from the optimum, whose risk is large, fails its duality-gap check
    instead of passing a tolerance as large as that risk."""
    prob, model, data = _problem(n=200, delta=0.1, seed=4)
    good = prob.solve(backend="exact").variables["w"]
    theta = -6.0 * good / np.linalg.norm(good)                 # inside the cone, the wrong way round
    alpha, gamma = model.multipliers(theta)
    bad = prob.evaluate(w=theta, alpha=alpha, gamma=gamma)
    assert bad.objective > 3.0
    check = next(c for c in prob.reduction("strategic_dro").certificate_checks(bad, "stochastic")
                 if c.name == "duality gap")
    assert check.tolerance == pytest.approx(0.03 * np.log(2.0)) and not check.passed


def test_the_advice_drops_a_larger_cap_when_the_fail_fast_rule_stopped_the_run(solved):
    """A run stopped by the fail-fast rule measured that its gap would not pass before the cap (its metrics hold the
    rate), so 'a larger cap' is no advice for it (a held-out run on Communities said both); a run that reached its
    cap gets it."""
    from fairmodel.families.base import Solution
    family = solved[0].family
    reached = Solution(variables={}, status="inaccurate", solver={"order": 0}, metrics={})
    stopped = Solution(variables={}, status="inaccurate", solver={"order": 0},
                       metrics={"certificate_rate": 0.0, "projected_work": float("inf")})
    from fairmodel.families.base import NO_LARGER_CAP
    assert "a larger cap (epochs=)" in family.advice("stochastic", reached, [])
    advice = family.advice("stochastic", stopped, [])
    assert "a larger cap (epochs=)" not in advice and NO_LARGER_CAP in advice and "backend='exact'" in advice


def test_the_advice_without_strategic_agents_speaks_of_the_loss():
    """Wasserstein DRO of data.score(w) has no agents: its zeroth-order advice names evaluations of the loss and
    order=1 (the gradients are known), not agent queries or the agents' response model (a held-out message did)."""
    from fairmodel.families.base import Solution
    data = fm.datasets.make_strategic_synthetic(n=200, p=6, seed=0)
    w = fm.Weights(data.n_features)
    prob = fm.Problem(fm.Minimize(fm.wasserstein_worst_case(fm.logistic_loss(data.score(w), data.y), radius=0.1,
                                                            label_cost=0.5)))
    run = Solution(variables={}, status="inaccurate", solver={"order": 0, "options": {"estimator": "one-point"}},
                   metrics={})
    advice = prob.reduction("strategic_dro").advice("stochastic", run, [])
    assert "agent queries" not in advice and "response model" not in advice
    assert "evaluations of the loss" in advice and "order=1" in advice
    strategic = _problem(n=200, p=6)[0].reduction("strategic_dro").advice("stochastic", run, [])
    assert "agent queries" in strategic and "agents' response model" in strategic and "order=1" not in strategic


def test_the_runs_own_dual_averages_certify_where_the_multipliers_do_not():
    """Wasserstein DRO without agents on 1,000 Law School rows at radius 0.1: the optimum is log 2 at w = 0, where the
    multipliers of theta (one optimal gamma among many) give a poor lower bound. The checkpoints judge the run's own
    averages of (alpha, gamma) as a second opinion: the run certifies at its first checkpoint (it ran 200 epochs to
    2.3x its tolerance before), within its gap of log 2, and the result holds the averages, whose gap the judge
    recomputes; the multipliers' gap at the same theta is above the tolerance."""
    data = fm.datasets.load_lawschool(target="bar1", sensitive="gender").subsample(1000, seed=1)
    w = fm.Weights(data.n_features)
    atom = fm.wasserstein_worst_case(fm.logistic_loss(data.score(w), data.y), radius=0.1, label_cost=0.25)
    prob = fm.Problem(fm.Minimize(atom))
    res = prob.solve(backend="stochastic", seed=0)
    assert res.status == "converged", res.message
    assert 0.0 <= res.objective - np.log(2.0) <= res.certificate["duality_gap"]
    model, theta = atom.model, res.variables["w"]
    alpha, gamma = model.multipliers(theta)
    assert not np.allclose(res.variables["gamma"], gamma)
    again = prob.evaluate(w=theta, alpha=res.variables["alpha"], gamma=res.variables["gamma"])
    assert again.certificate["duality_gap"] == pytest.approx(res.certificate["duality_gap"], rel=1e-9)
    tolerance = next(c["tolerance"] for c in res.checks if c["name"] == "duality gap")
    assert prob.evaluate(w=theta, alpha=alpha, gamma=gamma).certificate["duality_gap"] > tolerance


def test_the_default_order_is_first_without_agents():
    """order=None: zeroth order where the scores are the agents' best responses, first order for plain Wasserstein DRO
    (no agent to query; the loss's gradients are known); order=0 still runs zeroth order there."""
    data = fm.datasets.make_strategic_synthetic(n=300, p=6, seed=2)
    w = fm.Weights(data.n_features)
    plain = fm.Problem(fm.Minimize(fm.wasserstein_worst_case(fm.logistic_loss(data.score(w), data.y), radius=0.05,
                                                             label_cost=0.5)))
    first = plain.solve(backend="stochastic", seed=0)
    assert first.ok and first.solver["order"] == 1 and first.metrics["queries"] == 0
    assert plain.solve(backend="stochastic", seed=0, order=0, epochs=50).solver["order"] == 0
    strategic = _problem(n=300, p=6)[0].solve(backend="stochastic", seed=0, epochs=50)
    assert strategic.solver["order"] == 0 and strategic.metrics["agent_queries"] > 0
