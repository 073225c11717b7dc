"""Stochastic IDCA takes the judge's exact steps: a checkpoint that fails judges the end of the exact IDCA path its
certificate followed (He, Huang, Yao, Lin 2025, Algorithm 1 with subproblems (25) solved exactly) and the run goes on
from the better of the two. The path's points must be Algorithm 1's own, and the stalled run must now certify."""
import numpy as np
import pytest

import fairmodel as fm


@pytest.fixture(scope="module")
def weak_law():
    """Weak partial DP on 300 rows of Law School by race (threshold 0.5, band [0.2, 0.8], kappa 0.05): SSG's subproblem
    outputs stall with the judge's IDCA step 2.4x its tolerance (measured: 80,000 SSG iterations, 10 s, inaccurate)."""
    data = fm.datasets.load_lawschool(target="bar1", sensitive="race").subsample(300, seed=526)
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.weak_partial_dp(s, data.groups, band=(0.2, 0.8), threshold=0.5) <= 0.05])


def test_the_path_end_is_three_steps_of_algorithm_1(weak_law):
    family = weak_law.family
    candidate = weak_law.solve(backend="stochastic", seed=0, stop="budget", outer=15).variables
    evaluation, end = family.evaluate_along_path(candidate, certificate=True)
    assert evaluation.certificate["relative_step"] > 0
    exact = weak_law.solve(backend="exact", start=candidate, stop="budget", outer=3, extrapolate=False)
    assert exact.metrics["outer_iterations"] == 3
    for name, value in exact.variables.items():
        np.testing.assert_allclose(end[name], value, atol=1e-6 * max(1.0, np.linalg.norm(value)))
    program = family.program
    assert program.max_violation(program.start(end)) <= 1e-7
    assert program.objective_value(program.start(end)) <= evaluation.objective + 1e-12
    assert family.evaluate(candidate, certificate=True).certificate == evaluation.certificate


def test_a_stalled_run_certifies_on_the_judged_path(weak_law):
    exact = weak_law.solve(backend="exact")
    res = weak_law.solve(backend="stochastic", seed=0)
    assert res.ok and res.status == "converged", res.message
    assert res.metrics["adopted_path_ends"] >= 1
    assert abs(res.objective - exact.objective) <= weak_law.family.agreement(exact.objective)
    # the judge's numbers are those of the returned point (reused from its checkpoint, not of an earlier iterate)
    again = weak_law.evaluate(res)
    assert again.objective == pytest.approx(res.objective, abs=1e-12)
    assert again.certificate["relative_step"] <= weak_law.family.step_tolerance


def test_without_the_exact_steps_the_run_says_it_stalled(weak_law):
    res = weak_law.solve(backend="stochastic", seed=0, exact_steps=False, outer=60)
    assert not res.ok and res.metrics.get("adopted_path_ends", 0) == 0
    assert "IDCA step" in res.message
    with pytest.raises(fm.errors.OptionError, match="exact_steps"):
        weak_law.solve(backend="stochastic", exact_steps="yes")


def test_ssg_stuck_at_a_point_of_the_exact_path_is_checked_at_once():
    """Partial DP with three groups (450 synthetic rows, band [0.6, 1], kappa 0.1). SSG cannot leave a point of the
    exact path (its constraints are active; the output is the anchor): each such outer iteration is checked at once
    and the run follows the exact path to a certified point, instead of idling at the taken path end until the
    fail-fast rule stops it (measured: the same ratio of its checks, 5.5x, at three checkpoints in a row, not ok)."""
    rng = np.random.default_rng(22)
    n, d = 450, 6
    g = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, d)) + 0.5 * g[:, None] * (np.arange(d) < 3)
    signal = 2 * X @ (rng.normal(size=d) / np.sqrt(d)) + 0.5 * (g - g.mean())
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-signal)), 1.0, -1.0)
    data = fm.Dataset(X, y, np.array([f"g{k}" for k in g]))
    w = fm.Weights(d, intercept=True)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.partial_dp(s, data.groups, band=(0.6, 1.0)) <= 0.1])
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok, res.message
    steps = [h for h in res.history[1:]]
    stuck = [k for k in range(1, len(steps)) if steps[k]["step"] == 0.0 and steps[k - 1].get("adopted")]
    assert stuck, "the premise: SSG returns its anchor after a taken path end"
    # every outer iteration that idled at a taken path end was followed by another path end (checked at once)
    assert all(steps[k + 1].get("adopted") for k in stuck if k + 1 < len(steps))
    exact = prob.solve()
    assert abs(res.objective - exact.objective) <= prob.family.agreement(exact.objective)


def test_the_cross_check_fails_two_local_solutions_and_says_which_is_lower():
    """Partial DP on 300 rows of Law School by race x gender (band [0.5, 1], kappa 0.1): exact IDCA and IDCA + SSG from
    w = 0 end at two certified local solutions, 0.2724 and 0.2775 (measured). They do not verify each other whichever
    is lower; where the stochastic result is the lower one (the two results in the other roles), the report says so."""
    race = fm.datasets.load_lawschool(target="bar1", sensitive="race")
    gender = fm.datasets.load_lawschool(target="bar1", sensitive="gender").groups
    names = np.char.add(np.asarray(race.groups.names, dtype=str)[race.groups.codes],
                        np.asarray(gender.names, dtype=str)[gender.codes])
    data = fm.Dataset(race.X, race.y, names).subsample(300, seed=545)
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.partial_dp(s, data.groups, band=(0.5, 1.0)) <= 0.1])
    low, high = prob.solve(backend="exact"), prob.solve(backend="stochastic", seed=0)
    assert low.ok and high.ok and high.objective - low.objective > prob.family.agreement(low.objective)
    name, lower = "objective |stochastic - exact|", "objective exact - stochastic (the stochastic result is lower)"
    checks = {c.name: c for c in prob.family.crosscheck_checks(low, high)}
    assert not checks[name].passed and lower not in checks
    checks = {c.name: c for c in prob.family.crosscheck_checks(high, low)}
    assert not checks[name].passed
    assert checks[lower].value == pytest.approx(high.objective - low.objective)
    assert checks[lower].tolerance == float("inf")
