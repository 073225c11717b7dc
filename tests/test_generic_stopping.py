"""The generic stochastic lowering stops on the judge's checks: its defaults certify compositions it was not tuned on
(bounded group loss with a squared loss on Communities, badly scaled and collinear features), a run that hits its
cap says which check failed, by how much and what to try, the cross-check's tolerance scales with small objectives,
and an unbounded declaration is reported as such by both backends."""
import dataclasses
import sys
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.exact.newton import minimize_on_ball_first_order
from fairmodel.oracles.metric import Coordinates

from .conftest import on_the_cpu_clock

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import defaults_generic  # noqa: E402


@pytest.fixture(scope="module")
def communities():
    """Bounded group loss (Agarwal, Dudik, Wu 2019) with the squared loss on Communities and Crime by race: the
    features in [0, 1] are nearly collinear (singular values of the design from 4.1 to 1.5e-4) and the optimum is
    small (0.0186), with a multiplier of 1.3 on the non-white group's risk."""
    data = fm.datasets.load_communities()
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    loss = fm.squared_loss(data.score(w), data.y)
    prob = fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.025])
    return prob, fm.crosscheck(prob, seed=0)


def test_bounded_group_loss_on_communities_is_certified_with_the_defaults(communities):
    """The fixed budget of 40 epochs ended infeasible with a Lagrangian gap of 2.09 (the multiplier bound raised
    four times by an unconverged run), and so did 200 epochs; with the defaults the run now stops on its checks."""
    prob, report = communities
    st, ex = report.stochastic, report.exact
    assert report.ok, report.to_markdown()
    assert st.status == "converged" and "every check of the judge passed" in st.message
    assert st.certificate["lagrangian_gap"] <= prob.family.accuracy(prob.evaluate(st)) < 1e-4
    assert st.certificate["lower_bound"] <= ex.objective + 1e-9          # weak duality: a valid lower bound
    assert abs(st.objective - ex.objective) <= 1e-4 and st.max_violation <= 2.6e-4
    assert st.metrics["epochs_run"] < 400                                 # stopped before its cap


def _hinge_dro_under_equal_opportunity(seeds) -> list:
    """Adult by race, 6,000 rows: group DRO with the hinge loss under equal opportunity <= 0.2, the default stochastic
    method at each seed. Every result is judged honestly: an ok one is within its own Lagrangian gap of the exact
    optimum and meets the bound, a run that is not ok names the check that failed. Returns which seeds are ok."""
    prob = defaults_generic.CASES["adult_race_eo_hinge"]()
    exact = prob.solve(backend="exact")
    oks = []
    for seed in seeds:
        st = prob.solve(backend="stochastic", seed=seed)
        if st.ok:
            assert st.objective - exact.objective <= st.certificate["lagrangian_gap"] + 1e-12
            assert st.metrics["lower_bound_method"].startswith("Frank-Wolfe bound of the linear minorant")
            assert st.certificate["lower_bound"] <= exact.objective + 1e-9
        else:
            assert "Lagrangian gap" in st.message or "violation" in st.message, st.message
        oks.append(st.ok)
    return oks


def test_group_dro_with_the_hinge_loss_under_equal_opportunity_is_mostly_certified_with_the_defaults():
    """The hinge loss is not smooth (a first-order bound stayed 4e-2 loose): the certificate's inner minimum is
    bounded by the tangent lines of the hinges at the minimum of their softplus smoothing, and the w-step is measured
    on chords long enough to step over the rows at their kinks (on chords of 1e-4 x ||w|| the step collapsed and 6 or
    7 of seeds 0-7 were ok, by the machine's BLAS kernels). Measured 8 of seeds 0-7 ok on both machines. At least 3
    of 4: room for one seed that BLAS's rounding moves (the slow test below asks 7 of 8)."""
    assert sum(_hinge_dro_under_equal_opportunity(range(4))) >= 3


@pytest.mark.slow
def test_group_dro_with_the_hinge_loss_under_equal_opportunity_is_certified_at_most_seeds():
    """As above at seeds 0-7: at least 7 of 8 ok (measured 8 of 8)."""
    assert sum(_hinge_dro_under_equal_opportunity(range(8))) >= 7


def test_group_dro_under_an_l1_budget_keeps_its_average_across_failed_checkpoints():
    """Group DRO on synthetic data with 5 groups and the weights' l1 norm at most 1 (a non-smooth constraint piece):
    a non-smooth saddle problem converges at the rate of the average of all its iterates, so the run keeps its
    average across the checkpoints that make progress instead of restarting at every failed one. Restarting at every
    failed checkpoint, the run stalled at 2.1x its tolerance on the Lagrangian gap at every seed measured; keeping
    the average, seeds 0 and 1 are ok. Every ok result is checked against the exact optimum."""
    prob = defaults_generic.CASES["syn_norm_budget_m5"]()
    exact = prob.solve(backend="exact")
    for seed in (0, 1):
        st = prob.solve(backend="stochastic", seed=seed)
        assert st.ok, st.message
        assert st.objective - exact.objective <= st.certificate["lagrangian_gap"] + 1e-12
        assert st.certificate["lower_bound"] <= exact.objective + 1e-9


def test_group_dro_under_a_tight_l1_budget_balances_its_steps_and_is_certified():
    """Group DRO (logistic loss) with ||w||_1 <= 0.5 at d = 60: where the budget binds, the constraint block's values
    are near 0, its simplex takes a large step (77) and the coupling bound leaves w a step of 1.3e-5; with that fixed
    split the run reached its cap of 400 epochs at 1.5x its gap tolerance (seeds 0 and 1). The l1 norm is an exact
    term with a Lipschitz bound, not a kink of the sample terms, so w keeps its curvature cap and the restarts' primal
    weight moves the split: ok in 63-79 epochs. The ok result is checked against the exact optimum."""
    prob = defaults_generic.norm_budget(defaults_generic.synthetic(3000, d=60, groups=4, seed=61), 0.5)
    exact = prob.solve(backend="exact")
    st = prob.solve(backend="stochastic", seed=0)
    assert st.ok and st.metrics["primal_weight"] != 1.0, st.message
    assert st.objective - exact.objective <= st.certificate["lagrangian_gap"] + 1e-12


def test_the_crosscheck_fails_a_ten_percent_error_on_a_small_optimum(communities):
    """1e-2 max(1, |optimum|) passed a 9.5 % error on the optimum 0.0186; the tolerance is now the certificate's
    accuracy (relative to the objective's scale, with an absolute floor), so that error fails and the run's own
    error passes."""
    prob, report = communities
    ex, st = report.exact, report.stochastic
    names = {"objective: stochastic - exact", "objective: exact - stochastic"}
    for factor, passes in ((1.095, False), (0.905, False), (1.0005, True)):
        fake = dataclasses.replace(st, objective=ex.objective * factor)
        checks = {c.name: c for c in prob.family.crosscheck_checks(ex, fake) if c.name in names}
        assert all(c.passed for c in checks.values()) == passes, (factor, checks)
    tolerance = next(c for c in report.checks if c.name == "objective: stochastic - exact").tolerance
    assert tolerance == pytest.approx(2e-3 * ex.objective, rel=1e-3)


def test_a_run_that_hits_its_cap_says_which_check_failed_by_how_much_and_what_to_try(communities):
    prob, _ = communities
    res = prob.solve(backend="stochastic", seed=0, epochs=10)
    assert not res.ok and res.status in ("inaccurate", "infeasible")
    assert "the run reached its cap (epochs=10)" in res.message
    assert "x the tolerance)" in res.message and "What to try: a larger cap (epochs=)" in res.message
    assert "backend='exact'" in res.message


def test_same_seed_same_result_with_stopping_on():
    prob = defaults_generic.CASES["syn_scaled_bgl"]()
    a = prob.solve(backend="stochastic", seed=3)
    prob.solve(backend="stochastic", seed=4)            # another run in between leaves no state behind
    b = prob.solve(backend="stochastic", seed=3)
    assert a.status == b.status == "converged"
    for name in a.variables:
        assert np.array_equal(a.variables[name], b.variables[name])
    assert a.metrics["epochs_run"] == b.metrics["epochs_run"] and a.checks == b.checks


def test_the_checks_cost_a_bounded_share_of_the_run():
    """The checks run on a schedule of epochs (every 10, then every 25 % of the run) and the certificate's inner
    minimum is preconditioned: on a composition of the bundled data they cost a minor share of the solve."""
    data = fm.datasets.load_lawschool().subsample(3000, seed=0)
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    s = data.score(w)
    z = (data.groups.codes == 1).astype(float)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))), [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.01])
    res = prob.solve(backend="stochastic", seed=0, epochs=60, stop="budget")
    with on_the_cpu_clock():
        checked = prob.solve(backend="stochastic", seed=0)
    assert checked.ok and checked.metrics["checks_run"] <= 6
    # the checks' share of the solve in CPU time (measured 5-15 %; a loose bound)
    assert checked.metrics["check_time_s"] <= 0.5 * checked.timings["solve"]
    assert res.metrics["checks_run"] == 0


@pytest.mark.parametrize("name", defaults_generic.QUICK)
def test_defaults_certify_compositions_they_were_not_tuned_on(name):
    """A fast subset of benchmarks/defaults_generic.py: badly scaled features, two groups, a radius of 1."""
    row = defaults_generic.run_case(name)
    assert row["ok"], row["report"].to_markdown()


def test_an_unconstrained_composition_is_verified_on_both_backends():
    """No max term under a constraint and no constraint: the exact result is verified by the solver's optimum and
    the objective's own gap, the stochastic one by its Lagrangian gap (never ok without a check)."""
    data = defaults_generic.synthetic(1500, groups=3, seed=21)
    prob = defaults_generic.excess_tail(data, 0.5)
    report = fm.crosscheck(prob, seed=0)
    assert report.ok, report.to_markdown()
    # the default exact method (model space) is verified by the Lagrangian gap of its duals, the CVXPY program by
    # the solver's optimum
    assert report.exact.method == "model_space" and {c["name"] for c in report.exact.checks} >= {"Lagrangian gap"}
    assert {c["name"] for c in prob.solve(method="cvxpy").checks} >= {"judged objective - solver's optimum"}
    ridge = fm.Weights(data.n_features, radius=None)
    plain = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(ridge), data.y)) + 0.1 * fm.sum_squares(ridge)))
    res = plain.solve(backend="stochastic", seed=0, method="primal_dual")
    assert res.ok and res.checks and res.certificate["lagrangian_gap"] <= 1e-3


def test_an_unbounded_declaration_is_reported_unbounded_by_both_backends():
    """Weights without a radius and a linear objective: the stochastic run used to return 'completed' (ok) at
    -1.98e12 and the exact backend 'SCS failed'. Both now report 'unbounded' (not ok) and what to do."""
    rng = np.random.default_rng(0)
    data = fm.Dataset(rng.normal(size=(200, 3)), np.where(rng.random(200) < 0.5, 1.0, -1.0),
                      groups=rng.integers(0, 2, 200))
    w = fm.Weights(3)
    prob = fm.Problem(fm.Minimize(fm.mean(data.score(w))))
    assert "Unbounded" in prob.describe()
    for backend in ("exact", "stochastic"):
        res = prob.solve(backend=backend, seed=0)
        assert res.status == "unbounded" and not res.ok and res.objective == -np.inf
        assert "radius" in res.message
    # with a constraint the declaration is still unbounded: the exact solver proves it (Clarabel's status, not
    # the failure of the last fallback solver), and the stochastic certificate is +inf (never ok)
    z = data.X[:, 0]
    constrained = fm.Problem(fm.Minimize(fm.mean(data.score(w))), [fm.abs(fm.mean(z * data.score(w))) <= 0.1])
    exact = constrained.solve()
    assert exact.status == "unbounded" and "CLARABEL" in exact.message
    stoch = constrained.solve(backend="stochastic", seed=0, epochs=20)
    assert not stoch.ok and stoch.certificate["lagrangian_gap"] == np.inf and "may be unbounded" in stoch.message


# -- the preconditioned coordinates ---------------------------------------------------------------------------
def test_the_projection_in_preconditioned_coordinates_is_the_metric_projection_onto_the_ball():
    """Against CVXPY: argmin ||u - v||^2 over {u : ||M u|| <= R} for a badly conditioned P."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(6, 6)) * np.logspace(-2, 1, 6)
    coords = Coordinates(A.T @ A, radius=1.5)
    for _ in range(3):
        v = 10 * rng.normal(size=6)
        u = cp.Variable(6)
        cp.Problem(cp.Minimize(cp.sum_squares(u - v)), [cp.norm(coords.M @ u) <= 1.5]).solve(solver="CLARABEL")
        got = coords.project(v)
        assert np.linalg.norm(coords.to_theta(got)) <= 1.5 * (1 + 1e-12)
        assert np.allclose(got, u.value, atol=1e-5 * np.linalg.norm(v))
    theta = rng.normal(size=6)
    assert np.allclose(coords.to_theta(coords.to_u(theta)), theta)
    g = rng.normal(size=6)                      # <g_theta, d theta> = <g_u, d u>
    assert np.allclose(coords.gradient_to_theta(coords.gradient_to_u(g)), g)


def test_preconditioned_first_order_bound_is_valid_and_tighter_on_collinear_features():
    """min over the ball of a least-squares objective with nearly collinear columns: the Frank-Wolfe lower bound
    after 200 preconditioned steps is within 1e-8 of the exact minimum (CVXPY), and never above it; the plain
    method's bound after the same steps is valid but far looser."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 4))
    X = np.hstack([X, X[:, :3] + 1e-3 * rng.normal(size=(500, 3))])
    y = X @ rng.normal(size=7) + rng.normal(size=500)

    def fun(t):
        r = X @ t - y
        return float(r @ r) / 500, 2 * X.T @ r / 500
    theta = cp.Variable(7)
    exact = cp.Problem(cp.Minimize(cp.sum_squares(X @ theta - y) / 500), [cp.norm(theta) <= 2.0])
    exact.solve(solver="CLARABEL")
    coords = Coordinates.from_second_moment(X.T @ X / 500, 2.0)
    _, value, gap = minimize_on_ball_first_order(fun, np.zeros(7), 2.0, max_iter=200, coordinates=coords)
    _, plain_value, plain_gap = minimize_on_ball_first_order(fun, np.zeros(7), 2.0, max_iter=200)
    assert value - gap <= exact.value + 1e-9 and plain_value - plain_gap <= exact.value + 1e-9
    assert exact.value - (value - gap) <= 1e-6 < exact.value - (plain_value - plain_gap)
