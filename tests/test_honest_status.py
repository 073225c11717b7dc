"""Reproducers of results that used to be reported ok while the judge's own numbers showed them wrong."""
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression

import fairmodel as fm
from fairmodel.families.base import Check
from fairmodel.frontends import problemfile
from fairmodel.results.judge import verdict

ROOT = Path(__file__).resolve().parents[1]


def test_group_dro_classifier_with_a_badly_scaled_feature_warns_and_is_verified():
    """A feature 1000x the others: the data warn about the scaling, and ALEG's diagonal metric (the columns' second
    moments) still reaches the judge's duality-gap tolerance; a starved cap is not ok and says so."""
    adult = fm.datasets.load_adult(sensitive="sex")
    rows = np.random.default_rng(0).choice(adult.n_samples, 3000, replace=False)
    X = adult.X[rows].copy()
    X[:, 0] *= 1000
    with pytest.warns(UserWarning, match="badly scaled"):
        clf = fm.GroupDROClassifier(random_state=0).fit(X, adult.y[rows], sensitive_features=adult.groups.codes[rows])
    gap = next(c for c in clf.result_.checks if c["name"].startswith("duality gap"))
    assert clf.result_.ok and gap["value"] <= gap["tolerance"]
    with pytest.warns(ConvergenceWarning, match="duality gap"):
        starved = fm.GroupDROClassifier(random_state=0, solver_options={"epochs": 1, "step_w": 1e-9}).fit(
            X, adult.y[rows], sensitive_features=adult.groups.codes[rows])
    assert starved.status_ == "inaccurate" and not starved.result_.ok


def test_strategic_dro_with_a_badly_scaled_feature_is_judged_honestly_in_its_own_coordinates():
    """A feature 100x the others: with theta's own steps (design_metric=False) the run mostly falls short of its gap
    tolerance (seeds 0-3: 1 of 4 certified, which seed depends on how BLAS's kernels round) and the judge says so,
    while its certificate stays a valid bound; the default steps in the metric of the rows' second moment (the
    column is in raw units) certify."""
    data = fm.datasets.make_strategic_synthetic(n=300, p=10, seed=0)
    X = data.X.copy()
    X[:, 7] *= 100
    scaled = fm.Dataset(X, data.y)
    w = fm.Weights(scaled.n_features)
    loss = fm.logistic_loss(fm.strategic_score(scaled, w, strategic_features=range(5), zeta=0.05), scaled.y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob = fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=0.1, label_cost=0.5)))
        exact, stochastic = prob.solve(), prob.solve(backend="stochastic", seed=0, design_metric=False)
        default = prob.solve(backend="stochastic", seed=0)
    assert exact.ok
    gap = next(c for c in stochastic.checks if c["name"].startswith("duality gap"))
    assert stochastic.ok == gap["passed"] and stochastic.ok == (stochastic.status == "converged")
    assert stochastic.ok or "duality gap" in stochastic.message          # a run that falls short says by what
    assert stochastic.objective - exact.objective <= stochastic.certificate["duality_gap"] + 1e-6   # a valid bound
    assert default.status == "converged" and default.metrics["design_metric"] and "first_run" not in default.metrics
    assert exact.objective - 1e-6 <= default.objective <= exact.objective + default.certificate["duality_gap"]


def test_dp_post_processor_defaults_meet_a_tight_eps_on_communities():
    cc = fm.datasets.load_communities()
    X, y, s = cc.X, cc.y, cc.groups.codes
    reg = LinearRegression().fit(X[:1000], y[:1000])
    clf = LogisticRegression(max_iter=1000).fit(X[:1000], s[:1000])
    est = fm.DemographicParityPostProcessor(reg, clf, eps=0.002, random_state=0).fit(X[1000:], s[1000:])
    assert est.result_.backend == "exact" and est.status_ == "optimal"
    assert max(c["value"] for c in est.result_.constraints.values()) <= 0.002 * (1 + 1e-5)


def test_dp_cross_check_refuses_a_violation_of_a_few_eps():
    spec = problemfile.read(ROOT / "examples" / "problems" / "dp_postprocessing.toml")
    spec.doc["data"]["subsample"] = 1500
    prob = problemfile.build_problem(spec, problemfile.load_data(spec))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fm.crosscheck(prob, seed=0, stochastic_options={"T": 50})
    bound = next(iter(report.exact.constraints.values()))["bound"]
    assert report.stochastic.max_violation > bound      # a starved run a few eps over the budget ...
    assert not report.ok and not report.stochastic.ok   # ... is never ok, in a cross-check or alone


def test_an_inaccurate_exact_solve_is_ok_only_with_a_passing_certificate():
    certificate = Check("duality gap", 1e-9, 1e-6, "", "certificate")
    wrong = Check("duality gap", 0.22, 1e-6, "", "certificate")
    constraint = Check("violation of c", 0.0, 1e-6, "", "constraint")
    assert verdict("optimal_inaccurate", [constraint])[0] == "inaccurate"
    assert verdict("optimal_inaccurate", [constraint, wrong])[0] == "inaccurate"
    assert verdict("optimal_inaccurate", [constraint, certificate])[0] == "optimal_inaccurate"
    assert verdict("optimal", [Check("violation of c", 3.4e-3, 1e-3, "", "constraint")])[0] == "infeasible"
    # a result whose only check could not be computed is not verified: never ok, and the message says why
    status, message = verdict("converged", [Check("gap", float("nan"), 1e-3, "", "certificate")])
    assert status == "unverified" and "not certified: gap" in message
    assert verdict("completed", [])[0] == "unverified"



def test_a_run_that_reached_its_cap_says_its_output_passed_the_checks():
    """A stochastic loop that ran to its cap ('completed') and whose output passes every check is ok, and its message
    says that it passed, with the numbers (it used to say only that no checkpoint had passed before the cap)."""
    checks = [Check("violation of c0", 4.19e-5, 2.01e-3, "", "constraint"),
              Check("Lagrangian gap", 5.66e-4, 7.47e-4, "", "certificate"),
              Check("objective", 0.37, float("inf"), "", "certificate")]
    status, message = verdict("completed", checks, "the run reached its cap (epochs=400)")
    assert status == "completed" and message == ("the run reached its cap (epochs=400); its output passed every check "
                                                 "of the judge (violation of c0 = 4.19e-05 <= 0.00201; Lagrangian gap "
                                                 "= 0.000566 <= 0.000747)")
    assert verdict("converged", checks, "stopped")[1] == "stopped"           # a stop on the checks says so itself
    failed = [Check("Lagrangian gap", 2e-3, 7.47e-4, "", "certificate")]
    assert "passed" not in verdict("completed", failed, "the run reached its cap")[1]
