"""Group-specific randomized thresholds (Hardt, Price, Srebro 2016): the LP against an independent CVXPY program
written over every distinct score (monotone probabilities, auxiliary bounds on the rates) to 1e-8; the fitted
predictor's expected training rates recomputed row by row against eps + 1e-9; brute force over every pair of
deterministic thresholds on small data; fairlearn's ThresholdOptimizer at the gap it reaches; the estimator's API
and a judge that rejects a wrong LP answer.

Tolerances: 1e-8 and 1e-9 are the LP's accuracy (HiGHS's simplex, feasibility and optimality tolerances 1e-10 on
O(1) rates and costs); 0.005 against fairlearn is the brief's comparison (fairlearn interpolates on a grid of 1,000
rate values)."""
import itertools
import warnings

import cvxpy as cp
import numpy as np
import pytest

import fairmodel as fm
from fairmodel.oracles.thresholds import CONSTRAINT_RATES

pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

LP_TOL = 1e-8
GAP_TOL = 1e-9


def _data(n=600, k=3, seed=0, rounding=1):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, k, n)
    y = (rng.random(n) < 0.3 + 0.15 * g).astype(int)
    s = np.round(rng.normal(size=n) + 1.3 * y + 0.4 * g, rounding)     # rounded: ties
    w = rng.uniform(0.2, 3.0, n)
    return s, y, g, w


class Scores:
    """A "fitted classifier" whose decision function is the first column of X (the score itself)."""

    classes_ = np.array([0, 1])

    def fit(self, X, y):
        return self

    def decision_function(self, X):
        return np.asarray(X, dtype=float)[:, 0]

    def __sklearn_is_fitted__(self):
        return True


def _fit(s, y, g, w=None, **kw):
    return fm.GroupThresholdPostProcessor(Scores(), prefit=True, **kw).fit(s[:, None], y, sensitive_features=g,
                                                                            sample_weight=w)


def _reference_lp(s, y, g, w, constraint, eps):
    """The same optimum written differently: per group, a probability q_k of predicting 1 at each distinct score
    (decreasing in the score: a monotone randomized threshold), bounds lo_r <= r_g <= hi_r with hi_r - lo_r <= eps."""
    error, cons, rates_by_group = 0, [], {r: [] for r in CONSTRAINT_RATES[constraint]}
    total = w.sum()
    for grp in np.unique(g):
        rows = g == grp
        values = np.unique(s[rows])[::-1]                                 # distinct scores, decreasing
        pos = np.array([w[rows & (s == v) & (y == 1)].sum() for v in values])
        neg = np.array([w[rows & (s == v) & (y == 0)].sum() for v in values])
        q = cp.Variable(values.size)
        cons += [q >= 0, q <= 1, q[1:] <= q[:-1]]
        error += (neg @ q + pos @ (1 - q)) / total
        rate = {"selection_rate": (pos + neg) @ q / (pos.sum() + neg.sum()),
                "true_positive_rate": pos @ q / pos.sum(), "false_positive_rate": neg @ q / neg.sum()}
        for r in rates_by_group:
            rates_by_group[r].append(rate[r])
    for r, exprs in rates_by_group.items():
        lo, hi = cp.Variable(), cp.Variable()
        cons += [e >= lo for e in exprs] + [e <= hi for e in exprs] + [hi - lo <= eps]
    prob = cp.Problem(cp.Minimize(error), cons)
    prob.solve(solver="HIGHS")
    return prob.value


@pytest.mark.parametrize("constraint", list(CONSTRAINT_RATES))
@pytest.mark.parametrize("eps", [0.0, 0.03])
def test_the_lp_equals_an_independent_formulation_and_its_rates_meet_the_bound(constraint, eps):
    s, y, g, w = _data()
    post = _fit(s, y, g, w, constraint=constraint, eps=eps)
    r = post.result_
    assert r.ok and r.status == "optimal"
    assert r.objective == pytest.approx(_reference_lp(s, y, g, w, constraint, eps), abs=LP_TOL)
    assert r.certificate["duality_gap"] <= LP_TOL
    # the expected rates of the randomized predictions, summed row by row
    q = post.predict_proba(s[:, None], sensitive_features=g)[:, 1]
    for rate in CONSTRAINT_RATES[constraint]:
        values = []
        for grp in range(3):
            num = den = 0.0
            for i in range(s.size):
                if g[i] != grp:
                    continue
                member = {"selection_rate": True, "true_positive_rate": y[i] == 1,
                          "false_positive_rate": y[i] == 0}[rate]
                if member:
                    num += w[i] * q[i]
                    den += w[i]
            values.append(num / den)
        gap = max(values) - min(values)
        assert gap <= eps + GAP_TOL
        name = f"{rate.replace('_', ' ')} gap (largest pairwise)"
        assert r.constraints[name]["value"] == pytest.approx(gap, abs=1e-12)
    accuracy = np.sum(w * np.where(y == 1, q, 1 - q)) / w.sum()
    assert r.metrics["accuracy"] == pytest.approx(accuracy, abs=1e-12)


def test_clarabel_and_highs_give_the_same_optimum():
    s, y, g, w = _data(n=300, seed=4)
    results = [_fit(s, y, g, w, constraint="equalized_odds", eps=0.02, solver=name).result_
               for name in ("HIGHS", "CLARABEL")]
    assert all(r.ok for r in results)
    assert results[0].objective == pytest.approx(results[1].objective, abs=LP_TOL)


def _deterministic_rates(s, y, g, w, t):
    """Rates and accuracy of the deterministic rule "predict 1 iff score >= t[group]"."""
    pred = s >= np.array([t[k] for k in g])
    out = {}
    for rate in ("selection_rate", "true_positive_rate", "false_positive_rate"):
        member = {"selection_rate": np.ones_like(y, bool), "true_positive_rate": y == 1,
                  "false_positive_rate": y == 0}[rate]
        out[rate] = [np.sum(w * pred * member * (g == k)) / np.sum(w * member * (g == k)) for k in (0, 1)]
    out["accuracy"] = np.sum(w * (pred == (y == 1))) / w.sum()
    return out


@pytest.mark.parametrize("constraint", list(CONSTRAINT_RATES))
def test_the_lp_beats_every_deterministic_threshold_pair_meeting_the_constraint(constraint):
    s, y, g, w = _data(n=80, k=2, seed=3)
    candidates = [np.r_[np.inf, np.unique(s[g == k])] for k in (0, 1)]
    for eps in (0.0, 0.05, 0.15, 1.0):
        lp_accuracy = _fit(s, y, g, w, constraint=constraint, eps=eps).result_.metrics["accuracy"]
        best = -np.inf
        for t in itertools.product(*candidates):
            rates = _deterministic_rates(s, y, g, w, t)
            if all(abs(rates[r][0] - rates[r][1]) <= eps for r in CONSTRAINT_RATES[constraint]):
                best = max(best, rates["accuracy"])
        assert lp_accuracy >= best - 1e-12
        if eps == 1.0:        # unconstrained: the optimum is a pair of deterministic thresholds (an LP vertex)
            assert lp_accuracy == pytest.approx(best, abs=1e-12)


def test_weighted_errors_and_one_group():
    s, y, g, w = _data(n=300, k=2, seed=5)
    costly = _fit(s, y, g, constraint="equal_opportunity", eps=0.02, costs=(1.0, 4.0)).result_
    plain = _fit(s, y, g, constraint="equal_opportunity", eps=0.02).result_
    assert costly.ok and plain.ok
    # a false negative costing 4x predicts 1 more often
    assert costly.metrics["true_positive_rate"]["0"] >= plain.metrics["true_positive_rate"]["0"]
    single = fm.GroupThresholdPostProcessor(Scores(), prefit=True).fit(s[:, None], y)
    q = single.predict_proba(s[:, None])[:, 1]
    best = max(np.mean((s >= t) == (y == 1)) for t in np.r_[np.inf, np.unique(s)])
    assert single.result_.metrics["accuracy"] == pytest.approx(best, abs=1e-12)
    assert set(np.unique(q)) <= {0.0, 1.0} and not single.result_.constraints


def test_the_judge_rejects_a_wrong_lp_answer(monkeypatch):
    """The unconstrained LP's answer handed back for eps = 0.01: the judge's rates see the violation."""
    from fairmodel.estimators import thresholds as module

    real = module.solve_thresholds
    monkeypatch.setattr(module, "solve_thresholds", lambda rocs, rates, eps, *a, **k: real(rocs, rates, 1.0, *a, **k))
    s, y, g, w = _data(n=400, k=2, seed=1)
    with pytest.warns(ConvergenceWarning, match="gap"):
        post = _fit(s, y, g, constraint="demographic_parity", eps=0.01)
    assert post.status_ == "infeasible" and not post.result_.ok


def test_the_estimator_needs_the_sensitive_feature_when_predicting():
    pd = pytest.importorskip("pandas")
    s, y, g, w = _data(n=300, k=2, seed=2)
    X = pd.DataFrame({"score": s, "noise": np.zeros_like(s), "group": np.where(g == 1, "b", "a")})
    post = fm.GroupThresholdPostProcessor(LogisticRegression(), constraint="equalized_odds", eps=0.05)
    post.fit(X, y, sensitive_features="group")             # a column name: taken out of X
    assert post.result_.ok and list(post.groups_.names) == ["a", "b"]
    p = post.predict_proba(X)                               # the column is still in X: read from it
    assert np.allclose(p, post.predict_proba(X.drop(columns="group"), sensitive_features=X["group"]))
    with pytest.raises(fm.DataError, match="needs the sensitive feature when predicting"):
        post.predict(X.drop(columns="group"))
    with pytest.raises(fm.DataError, match="not seen in fit"):
        post.predict(X.drop(columns="group"), sensitive_features=np.full(len(X), "c"))
    a = post.predict(X, random_state=0)
    assert np.array_equal(a, post.predict(X, random_state=0))
    assert set(np.unique(a)) <= {0, 1}
    twin = clone(post)
    assert twin.get_params()["eps"] == 0.05 and not hasattr(twin, "result_")


def test_the_result_saves_and_loads(tmp_path):
    s, y, g, w = _data(n=200, k=2)
    r = _fit(s, y, g, constraint="equalized_odds", eps=0.02).result_
    r.save(tmp_path / "run")
    back = fm.load_result(tmp_path / "run")
    assert back.ok and back.constraints == r.constraints and back.certificate == r.certificate


def test_bad_parameters_are_refused():
    s, y, g, w = _data(n=100, k=2)
    with pytest.raises(fm.OptionError, match="constraint"):
        _fit(s, y, g, constraint="equal_odds")
    with pytest.raises(fm.OptionError, match="eps"):
        _fit(s, y, g, eps=-0.1)
    with pytest.raises(fm.OptionError, match="costs"):
        _fit(s, y, g, costs=1.0)
    only_neg = np.where(g == 1, 0, y)
    with pytest.raises(fm.DataError, match="true positive rate is undefined"):
        _fit(s, only_neg, g, constraint="equal_opportunity")


@pytest.fixture(scope="module")
def adult():
    d = fm.datasets.load_adult(sensitive="sex")
    g = np.asarray(d.groups.names, dtype=object)[d.groups.codes]
    y = (d.y == 1).astype(int)
    return d.X, y, g, LogisticRegression(max_iter=1000).fit(d.X, y)


def _fairlearn_reference(adult, constraint, tol):
    fl = pytest.importorskip("fairlearn.postprocessing")
    X, y, g, clf = adult
    names = {"equalized_odds": "equalized_odds", "equal_opportunity": "true_positive_rate_parity",
             "demographic_parity": "demographic_parity"}
    theirs = fl.ThresholdOptimizer(estimator=clf, constraints=names[constraint], prefit=True,
                                   predict_method="predict_proba", tol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs.fit(X, y, sensitive_features=g)
        q = theirs._pmf_predict(X, sensitive_features=g)[:, 1]
    return q


@pytest.mark.parametrize("constraint, tol", [("equalized_odds", None), ("equal_opportunity", 0.02),
                                             ("demographic_parity", 0.05)])
def test_against_fairlearns_threshold_optimizer_at_equal_gap(adult, constraint, tol):
    """fairlearn's expected training rates give a gap; at that gap the LP's accuracy is at least theirs (theirs is a
    mixture of the same threshold rules) and within 0.005 of it."""
    X, y, g, clf = adult
    q = _fairlearn_reference(adult, constraint, tol)
    pos = y == 1
    gaps = []
    for rate in CONSTRAINT_RATES[constraint]:
        member = {"selection_rate": np.ones_like(pos), "true_positive_rate": pos, "false_positive_rate": ~pos}[rate]
        values = [q[member & (g == k)].mean() for k in np.unique(g)]
        gaps.append(max(values) - min(values))
    theirs = np.mean(np.where(pos, q, 1 - q))
    ours = fm.GroupThresholdPostProcessor(clf, constraint=constraint, eps=max(gaps), prefit=True)
    ours.fit(X, y, sensitive_features=g)
    accuracy = ours.result_.metrics["accuracy"]
    assert ours.result_.ok
    assert accuracy >= theirs - 1e-9
    assert accuracy - theirs <= 0.005


def test_check_estimator():
    """scikit-learn's checks (fit(X, y) without groups: the best mixture of thresholds of one group), every
    ConvergenceWarning an error."""
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        check_estimator(fm.GroupThresholdPostProcessor())


def test_a_quiet_fit_prints_nothing_on_standard_output():
    """HiGHS prints its banner from C++ the first time a solver is made in a process, whatever verbose says: a fit
    in a fresh interpreter must leave standard output empty."""
    import subprocess
    import sys
    code = ("import numpy as np, fairmodel as fm\n"
            "rng = np.random.default_rng(0); s = rng.normal(size=400); y = (s + rng.normal(size=400) > 0)\n"
            "g = rng.integers(0, 2, size=400)\n"
            "fm.GroupThresholdPostProcessor(lambda X: X[:, 0], constraint='equalized_odds', eps=0.05, prefit=True)"
            ".fit(s[:, None], y.astype(int), sensitive_features=g)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
