"""Result save/load (JSON + NPZ), cross-check verdicts, and the errors of solve()."""
import dataclasses
import html
import json

import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm


@pytest.fixture
def gdro(small):
    return fm.Problem(fm.Minimize(fm.max(small[2])))


def test_result_round_trip(gdro, tmp_path):
    res = gdro.solve(backend="stochastic", seed=0, epochs=3)
    json_path, npz_path = res.save(tmp_path / "run")
    back = fm.load_result(tmp_path / "run.json")
    assert back.status == res.status and back.objective == res.objective and back.seed == 0
    assert np.array_equal(back.variables["w"], res.variables["w"])
    assert back.metrics["group_risks"] == res.metrics["group_risks"]
    assert back.certificate == res.certificate
    assert np.allclose(back.history_column("max_risk"), res.history_column("max_risk"))
    assert json.loads(json_path.read_text())["format"] == "fairmodel.result"


def test_corrupt_or_foreign_files_are_refused(gdro, tmp_path):
    res = gdro.solve()
    res.save(tmp_path / "ok")
    with pytest.raises(fm.ResultFileError, match="does not exist"):
        fm.load_result(tmp_path / "missing")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "bad.npz").write_bytes((tmp_path / "ok.npz").read_bytes())
    with pytest.raises(fm.ResultFileError, match="not valid JSON"):
        fm.load_result(tmp_path / "bad")
    (tmp_path / "foreign.json").write_text(json.dumps({"hello": 1}))
    (tmp_path / "foreign.npz").write_bytes((tmp_path / "ok.npz").read_bytes())
    with pytest.raises(fm.ResultFileError, match="not written by fairmodel"):
        fm.load_result(tmp_path / "foreign")
    (tmp_path / "trunc.json").write_text((tmp_path / "ok.json").read_text())
    (tmp_path / "trunc.npz").write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(fm.ResultFileError, match="corrupt"):
        fm.load_result(tmp_path / "trunc")


def test_crosscheck_passes_with_enough_budget_and_fails_without(gdro):
    good = fm.crosscheck(gdro, seed=0)
    assert good.ok and all(c.passed for c in good.checks)
    assert "why this tolerance" in good.to_markdown()
    json.dumps(good.to_dict())
    # two checks with one reason: the reason is printed once, as note (1), in the Markdown and the HTML tables
    first = good.checks[0]
    good.checks = [first, dataclasses.replace(first, name="the same check again"), good.checks[1]]
    markdown, page = good.to_markdown(), good._repr_html_()
    for reason in (first.reason, good.checks[2].reason):
        assert markdown.count(reason) == 1 and page.count(html.escape(reason)) == 1
    assert f"| the same check again | {first.value:.3g} | {first.tolerance:.3g} | pass | (1) |" in markdown
    assert f"- (1) {first.reason}" in markdown and f"- (2) {good.checks[2].reason}" in markdown
    assert "<td>the same check again</td>" in page and "<td>(1)</td>" in page and "<td>(2)</td>" in page
    # one epoch with tiny steps cannot reach 1e-3: the verdict must say so
    bad = fm.crosscheck(gdro, seed=0, stochastic_options={"epochs": 1, "step_w": 1e-4, "step_q": 1e-4})
    assert not bad.ok and bad.failed()


def test_crosscheck_of_an_exact_result_already_computed(gdro):
    """exact=: the given exact result is compared (not solved again): the same checks as a full cross-check; a
    result of the other backend, or exact_options beside it, are refused."""
    exact = gdro.solve(backend="exact")
    given, full = fm.crosscheck(gdro, seed=0, exact=exact), fm.crosscheck(gdro, seed=0)
    assert given.exact is exact
    assert [(c.name, c.value) for c in given.checks] == [(c.name, c.value) for c in full.checks]
    with pytest.raises(fm.errors.OptionError, match="exact= takes a result"):
        fm.crosscheck(gdro, seed=0, exact=given.stochastic)
    with pytest.raises(fm.errors.OptionError, match="exact= takes a result"):
        fm.crosscheck(gdro, seed=0, exact=exact, exact_options={"method": "epigraph"})


def test_crosscheck_of_two_results_saved_and_read_back(gdro, tmp_path):
    """exact= and stochastic=: two solves run apart (each saved, then read back) give the checks of a cross-check
    that solves both; a result of the wrong backend, or options beside a given result, are refused."""
    full = fm.crosscheck(gdro, seed=0)
    full.exact.save(tmp_path / "exact")
    full.stochastic.save(tmp_path / "stochastic")
    exact, stochastic = (fm.load_result(tmp_path / name, problem=gdro) for name in ("exact", "stochastic"))
    given = fm.crosscheck(gdro, exact=exact, stochastic=stochastic)
    assert given.stochastic is stochastic and given.ok == full.ok
    assert [(c.name, c.value) for c in given.checks] == [(c.name, c.value) for c in full.checks]
    with pytest.raises(fm.errors.OptionError, match="stochastic= takes a result"):
        fm.crosscheck(gdro, exact=exact, stochastic=exact)
    with pytest.raises(fm.errors.OptionError, match="stochastic= takes a result"):
        fm.crosscheck(gdro, stochastic=stochastic, stochastic_options={"epochs": 1})


def test_crosscheck_on_mero(small):
    risks = small[2]
    rep = fm.crosscheck(fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks)))), seed=1)
    assert rep.ok
    assert "duality_gap_estimated_offsets" in rep.stochastic.certificate


def test_solve_option_errors(gdro, monkeypatch):
    with pytest.raises(fm.OptionError, match="valid backends are exact, stochastic"):
        gdro.solve(backend="fast")
    with pytest.raises(fm.OptionError, match="valid methods are aleg, smd"):
        gdro.solve(backend="stochastic", method="sgd")
    with pytest.raises(fm.OptionError, match="supported solvers are CLARABEL"):
        gdro.solve(solver="GUROBI")
    with pytest.raises(fm.OptionError, match="unknown option"):
        gdro.solve(backend="stochastic", epoch=3)
    with pytest.raises(fm.OptionError, match="epochs must be a positive integer"):
        gdro.solve(backend="stochastic", epochs=0)
    with pytest.raises(fm.OptionError, match="alpha"):
        gdro.solve(backend="stochastic", alpha=1.5, epochs=1)
    with pytest.raises(fm.OptionError, match="step_w"):
        gdro.solve(backend="stochastic", step_w=-1.0, epochs=1)
    with pytest.raises(fm.OptionError, match="shape"):
        gdro.solve(backend="stochastic", epochs=2, alpha=np.ones((3, 3)) * 0.1)
    with pytest.raises(fm.OptionError, match="interior of the simplex"):
        gdro.solve(backend="stochastic", q0=[1.0, 0.0, 0.0], epochs=1)
    with pytest.raises(fm.OptionError, match="interior of the simplex"):
        gdro.solve(backend="stochastic", q0=[0.5, 0.2, 0.2], epochs=1)
    with pytest.raises(fm.OptionError, match="theta must lie"):
        gdro.solve(backend="stochastic", schedule_mode="theory", theta=0.5, epochs=1)
    monkeypatch.setattr(cp, "installed_solvers", lambda: ["CLARABEL", "SCS"])
    with pytest.raises(fm.OptionError, match="ECOS is not installed; installed solvers are CLARABEL, SCS"):
        gdro.solve(solver="ECOS")


def test_solver_failure_is_an_error_not_numbers(gdro, monkeypatch):
    def fail(self, *args, **kwargs):
        raise cp.error.SolverError("numerical trouble")
    monkeypatch.setattr(cp.Problem, "solve", fail)
    with pytest.raises(fm.SolverError, match="failed on the group-DRO epigraph program") as info:
        gdro.solve(method="epigraph")
    assert "method='dual'" in str(info.value)


def test_problem_level_errors(small):
    data, w, risks = small
    with pytest.raises(fm.DataError, match="fewer|at least two|group"):
        one = fm.Dataset(data.X, data.y, groups=np.zeros(data.n_samples, int))
        fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(one.score(w), one.y), one.groups))))
    with pytest.raises(fm.OptionError, match="probability vector"):
        fm.Problem(fm.Minimize(fm.max(risks))).evaluate(w=np.zeros(5), q=[2.0, -1.0, 0.0])
    with pytest.raises(fm.ModelError, match="outside the domain"):
        fm.Problem(fm.Minimize(fm.max(risks))).evaluate(w=np.full(5, 10.0))


def test_a_crosscheck_judges_a_stochastic_certificate_by_the_tolerance_that_decided_its_ok():
    """The stochastic result's own acceptance scales its accuracy by its own objective (group DRO: its largest group
    risk; the generic lowering: its objective's scale); a cross-check that scaled it by the exact result's failed a
    group-DRO result on 992 Communities rows whose duality gap (3.48712e-5) had passed its own tolerance and was
    1.0005x the exact-scaled one. Planted: a gap just under the result's own tolerance, the exact result's scale 3 %
    lower; every check of the stochastic result passes."""
    from types import SimpleNamespace
    from fairmodel.families.base import Evaluation
    from fairmodel.families.gdro import GAP_CHECK
    rng = np.random.default_rng(0)
    data = fm.Dataset(rng.normal(size=(60, 3)), np.where(rng.random(60) < 0.5, 1.0, -1.0), groups=rng.random(60) < 0.5)
    w = fm.Weights(3, radius=1.0)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    cases = [(fm.Problem(fm.Minimize(fm.max(risks))), GAP_CHECK, "duality_gap",
              lambda top: {"group_risks": {"a": top, "b": 0.5 * top}}),
             (fm.Problem(fm.Minimize(fm.max(risks)), [fm.mean(data.score(w)) <= 1.0]), "Lagrangian gap",
              "lagrangian_gap", lambda top: {"objective_scale": top, "group_risks": {"a": top}})]
    for prob, name, key, metrics in cases:
        family = prob.family
        own = family.accuracy(Evaluation(objective=0.6, metrics=metrics(0.6)))
        exact = SimpleNamespace(objective=0.6 - 0.5 * own, metrics=metrics(0.6 * 0.97), certificate={key: 0.0},
                                constraints={}, variables={}, max_violation=0.0)
        stochastic = SimpleNamespace(objective=0.6, certificate={key: 0.999 * own}, variables={}, max_violation=0.0,
                                     constraints={}, checks=[{"name": name, "value": 0.999 * own, "tolerance": own}])
        assert family.accuracy(Evaluation(objective=exact.objective, metrics=exact.metrics)) < 0.999 * own
        judged = [c for c in family.crosscheck_checks(exact, stochastic) if "stochastic" in c.name
                  and "violation" not in c.name]
        assert judged and all(c.passed for c in judged), [(c.name, c.value, c.tolerance) for c in judged]


def test_group_dro_is_judged_by_the_rigorous_gap_on_a_ball():
    """The gap (13) with the inner method's value understates the gap by that method's error (the hinge's smoothing
    path stopped 6.3e-6 above its own lower bound on 20,000 imbalanced rows, and the certified result was 3.33e-4
    above the exact optimum with a reported gap of 3.27e-4: weak duality broken by 2 %). On a ball the judge checks
    ``duality_gap_bound``, rigorous whatever the inner accuracy. Planted: a value-based gap just under the tolerance,
    its rigorous bound just over; the check and the cross-check fail, and pass with the bound under it."""
    from types import SimpleNamespace
    from fairmodel.families.base import Evaluation
    from fairmodel.families.gdro import GAP_CHECK
    rng = np.random.default_rng(1)
    data = fm.Dataset(rng.normal(size=(60, 3)), np.where(rng.random(60) < 0.5, 1.0, -1.0), groups=rng.random(60) < 0.5)
    w = fm.Weights(3, radius=1.0)
    family = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.hinge_loss(data.score(w), data.y), data.groups)))).family
    metrics = {"group_risks": {"a": 0.6, "b": 0.3}}
    tol = family.accuracy(Evaluation(objective=0.6, metrics=metrics))
    for bound, passes in ((1.02 * tol, False), (0.999 * tol, True)):
        cert = {"duality_gap": 0.98 * tol, "duality_gap_bound": bound, "lower_bound": 0.6 - bound}
        checks = family.certificate_checks(Evaluation(objective=0.6, metrics=metrics, certificate=cert), "stochastic")
        gap_check = next(c for c in checks if c.name == GAP_CHECK)
        assert gap_check.value == bound and gap_check.passed is passes
        exact = SimpleNamespace(objective=0.6 - 0.5 * tol, metrics=metrics, certificate={"duality_gap": 0.0},
                                constraints={}, variables={}, max_violation=0.0)
        stochastic = SimpleNamespace(objective=0.6, certificate=cert, variables={}, max_violation=0.0, constraints={},
                                     checks=[{"name": GAP_CHECK, "value": bound, "tolerance": tol}])
        judged = {c.name: c for c in family.crosscheck_checks(exact, stochastic)}
        assert judged["duality gap of the stochastic result"].passed is passes
    # without a radius there is no rigorous bound (NaN): the value-based gap is checked
    cert = {"duality_gap": 0.98 * tol, "duality_gap_bound": float("nan"), "lower_bound": float("nan")}
    checks = family.certificate_checks(Evaluation(objective=0.6, metrics=metrics, certificate=cert), "stochastic")
    assert next(c for c in checks if c.name == GAP_CHECK).value == 0.98 * tol


def test_the_generic_crosscheck_lets_a_violation_buy_what_the_exact_multipliers_say():
    """f* <= f(w) + lambda* v for a w that violates the constraints by v (Lagrangian duality, lambda* the optimal
    multipliers). A stochastic result whose multiplier bound sat below lambda* (bounded group loss at 1.01x its smallest
    feasible bound, Law School: lambda* = 2.60, the run's bound 1.73) violated the bound by 0.00101 (within its
    tolerance) and was 0.00214 below the exact optimum: more than the accuracy plus its own multipliers times the
    violation (0.00207), within the accuracy plus the exact multipliers times it (0.00295). Planted: those numbers."""
    from types import SimpleNamespace
    from fairmodel.families.base import Evaluation
    rng = np.random.default_rng(2)
    data = fm.Dataset(rng.normal(size=(60, 3)), rng.normal(size=60), groups=rng.random(60) < 0.5)
    w = fm.Weights(3, radius=1.0)
    loss = fm.squared_loss(data.score(w), data.y)
    family = fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.1807]).family
    metrics = {"objective_scale": 0.159}
    tol = family.accuracy(Evaluation(objective=0.159, metrics=metrics))
    record = {"c0": {"value": 0.1817, "bound": 0.1807, "violation": 0.00101}}
    stochastic = SimpleNamespace(objective=0.159 - 1.5 * tol - 1.73 * 0.00101, certificate={"lagrangian_gap": 1e-7},
                                 variables={"multipliers": np.array([1.73, 1e-4])}, max_violation=0.00101,
                                 constraints=record, checks=[{"name": "Lagrangian gap", "value": 1e-7,
                                                              "tolerance": tol}])
    for lam_exact, passes in ((2.6, True), (1.0, False)):
        exact = SimpleNamespace(objective=0.159, metrics=metrics, certificate={"lagrangian_gap": 0.0},
                                variables={"multipliers": np.array([lam_exact, 0.0])}, max_violation=0.0,
                                constraints={"c0": {"value": 0.1807, "bound": 0.1807, "violation": 0.0}})
        checks = {c.name: c for c in family.crosscheck_checks(exact, stochastic)}
        assert checks["objective: exact - stochastic"].passed is passes
