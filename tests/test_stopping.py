"""Stopping on the judge's checks (tolerances, not budgets): the shared mechanism, group DRO / MERO, the fallback of
the default exact method, and "no ok without a check"."""
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.errors import SolverError
from fairmodel.exact import gdro as exact_gdro
from fairmodel.families.base import Check
from fairmodel.families.stopping import CertifiedStop
from fairmodel.stochastic.averaging import TailAverage


def _gdro(n=3000, m=3, d=6, seed=0, radius=3.0, mero=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    g = rng.integers(0, m, n)
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.3 * g + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    data = fm.Dataset(X, y, groups=g)
    w = fm.Weights(d, radius=radius)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    core = risks - fm.group_optimal(risks) if mero else risks
    return fm.Problem(fm.Minimize(fm.max(core)))


def test_tail_average_is_the_mean_over_the_last_half_to_three_quarters_of_the_epochs():
    """Brute force: at epoch s in [2^j, 2^(j+1)) the output is the weighted mean of epochs 2^(j-1) .. s."""
    rng = np.random.default_rng(0)
    avg, rows = TailAverage(), []
    for s in range(40):
        avg.start_epoch(s)
        for _ in range(3):
            x, wt = rng.standard_normal(4), rng.random() + 0.1
            avg.add(wt, x)
            rows.append((s, wt, x))
        j = int(np.floor(np.log2(s))) if s >= 1 else 0
        first = 2 ** (j - 1) if s >= 2 else 0
        keep = [(wt, x) for e, wt, x in rows if e >= first]
        expected = sum(wt * x for wt, x in keep) / sum(wt for wt, _ in keep)
        np.testing.assert_allclose(avg.value()[0], expected, rtol=1e-12)
        assert s + 1 - first >= (s + 1) / 2          # it covers at least the last half of the epochs


def test_the_check_schedule_depends_only_on_the_epochs():
    """Checks after every `every` epochs, then each time the run grew by a quarter; never more than that."""
    calls = []
    stop = CertifiedStop(None, lambda info: {}, every=5, judge=lambda v: (None, [Check("c", 1.0, 0.5, "")]))
    stop.check = lambda variables, epoch=None, work=None: calls.append(epoch) or False
    for epoch in range(100):
        stop({"epoch": epoch})
    assert [e + 1 for e in calls] == [5, 10, 15, 20, 25, 32, 40, 50, 63, 79, 99]


def test_a_second_opinion_is_asked_only_when_the_checks_fail_and_kept_only_when_closer_to_passing():
    """The checkpoint judges the second candidate only after the first fails, keeps whichever is closer to passing
    (by the largest value / tolerance), and records the kept one as the last check."""
    values = {"first": 3.0, "better": 1.5, "worse": 4.0, "passing": 0.5}
    asked = []

    def judge(variables):
        return None, [Check("gap", values[variables["name"]], 1.0, "", "certificate")]

    def opinion_of(name):
        return lambda variables: asked.append(variables["name"]) or {"name": name}
    for first, second, kept in [("first", "better", "better"), ("first", "worse", "first"),
                                ("passing", "better", "passing"), ("first", "passing", "passing")]:
        asked.clear()
        stop = CertifiedStop(None, lambda info: {"name": first}, judge=judge, second_opinion=opinion_of(second))
        stop({"epoch": 0})
        assert stop.last[0]["name"] == kept
        assert asked == ([] if first == "passing" else [first])
        assert stop.passed == (kept == "passing")


def test_aleg_stops_on_the_duality_gap_and_is_reproducible():
    prob = _gdro()
    first = prob.solve(backend="stochastic", seed=1)
    again = prob.solve(backend="stochastic", seed=1)
    budget = prob.solve(backend="stochastic", seed=1, stop="budget")
    assert first.status == "converged" and first.ok
    gap = next(c for c in first.checks if c["name"].startswith("duality gap"))
    assert gap["value"] <= gap["tolerance"] and "every check of the judge passed" in first.message
    assert first.metrics["epochs_run"] < budget.metrics["epochs_run"]      # stopped before the old fixed budget
    np.testing.assert_array_equal(first.variables["w"], again.variables["w"])     # same seed, same result
    # the judge's final evaluation is the checkpoint's: the same numbers as judging the returned point afresh
    fresh = prob.evaluate(first)
    assert fresh.certificate["duality_gap"] == pytest.approx(first.certificate["duality_gap"], rel=1e-9, abs=1e-12)


def test_a_run_that_hits_its_cap_is_not_ok_and_says_what_to_try():
    res = _gdro(n=600).solve(backend="stochastic", seed=0, epochs=1, step_w=1e-4)
    assert not res.ok and res.status == "inaccurate"
    assert "duality gap, eq. (13)" in res.message and "x the tolerance" in res.message
    assert "cap (epochs=1)" in res.message and "What to try" in res.message


def test_mero_stage_one_estimates_are_within_a_quarter_of_the_accuracy():
    prob = _gdro(mero=True)
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok
    exact = np.array(list(res.metrics["group_optimal"].values()))
    estimated = np.array(list(res.metrics["estimated_group_optimal"].values()))
    target = 0.25 * 2e-3 * max(exact.max(), 1e-2)
    assert np.all(estimated - exact >= -1e-9)              # R_i(w_i) >= R*_i: an estimate is an upper bound
    assert np.all(estimated - exact <= target)


def test_the_default_exact_method_falls_back_when_it_fails(monkeypatch):
    prob = _gdro(n=400)

    def fail(*args, **kwargs):
        raise SolverError("the dual method stopped with duality gap 0.000678", status="inaccurate")
    monkeypatch.setattr(exact_gdro, "solve_dual", fail)
    res = prob.solve()
    assert res.method == "epigraph" and res.ok
    assert "'dual' failed" in res.message and "solved by 'epigraph' instead" in res.message
    with pytest.raises(SolverError):       # a method the user asked for by name does not fall back
        prob.solve(method="dual")


def test_no_ok_without_a_computed_check():
    prob = _gdro(n=400)
    res = prob.solve(backend="stochastic", seed=0)
    assert res.ok
    res.checks = [dict(c, value=float("nan"), passed=False) for c in res.checks]
    assert not res.ok
    res.checks = []
    assert not res.ok


def test_aleg_preconditions_badly_scaled_columns_and_converges():
    """Columns on scales 1e-3 .. 1e3 (curvature ratio 1e12): the Euclidean steps crawled to their cap with a gap
    80x the tolerance; the diagonal metric of the columns' second moments converges in a few epochs."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3000, 8)) * 10.0 ** np.linspace(-3, 3, 8)
    g = rng.integers(0, 3, 3000)
    y = np.where(X[:, 0] * 1e3 + X[:, -1] * 1e-3 + 0.3 * g + rng.standard_normal(3000) > 0, 1.0, -1.0)
    data = fm.Dataset(X, y, groups=g)
    w = fm.Weights(8, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    report = fm.crosscheck(prob, seed=0)
    assert report.ok and report.stochastic.status == "converged", report.to_markdown()
