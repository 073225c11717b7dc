"""The scikit-learn estimators FairAUCClassifier, PartialFairnessClassifier and StrategicRobustClassifier: a
Pipeline on a DataFrame, agreement with the direct DSL solve, the constraint on the training
data, and errors on bad parameters (check_estimator and the default fits: tests/test_estimator_defaults.py)."""
import numpy as np
import pytest

import fairmodel as fm

pytest.importorskip("sklearn")



@pytest.fixture
def frame():
    """A DataFrame with numeric and categorical features, a sensitive column and a label that depends on it."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"age": rng.normal(40, 10, n), "hours": rng.normal(40, 5, n),
                       "job": rng.choice(["a", "b", "c"], n), "group": rng.choice(["g1", "g2"], n)})
    y = np.where(0.1 * (df["age"] - 40) + (df["job"] == "a") + 0.5 * (df["group"] == "g1")
                 + 0.5 * rng.normal(size=n) > 0.5, "yes", "no")
    return df, y


def pipeline(clf):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    pre = ColumnTransformer([("num", StandardScaler(), ["age", "hours"]), ("cat", OneHotEncoder(sparse_output=False), ["job"])])
    return Pipeline([("pre", pre), ("clf", clf)])


@pytest.fixture
def unfair():
    """Labels whose dependence on feature 1 differs by group: the unconstrained AUC model is unfair (intra)."""
    rng = np.random.default_rng(0)
    n = 400
    g = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[:, 2] += g
    y = np.where(X[:, 0] + (1 + 1.5 * g) * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1, 0)
    return X, y, g


# ---------------------------------------------------------------------------------------------------
# FairAUCClassifier
# ---------------------------------------------------------------------------------------------------
def test_fair_auc_classifier_in_a_pipeline_on_a_dataframe(frame):
    df, y = frame
    pipe = pipeline(fm.FairAUCClassifier(kind="intra", kappa=0.05, backend="exact"))
    pipe.fit(df, y, clf__sensitive_features=df["group"])
    clf = pipe.named_steps["clf"]
    assert clf.groups_ == ["g1", "g2"] and clf.result_.family == "auc_fairness"
    assert clf.result_.status == "optimal" and set(pipe.predict(df)) <= {"yes", "no"}
    # decision_function is the AUC score shifted by the threshold; predict is its sign
    Z = pipe.named_steps["pre"].transform(df)
    assert np.allclose(pipe.decision_function(df), Z @ clf.coef_[0] - clf.threshold_)
    assert np.array_equal(pipe.predict(df), np.where(Z @ clf.coef_[0] > clf.threshold_, "yes", "no"))
    assert not hasattr(clf, "predict_proba")


def test_fair_auc_classifier_equals_the_direct_dsl_solve(unfair):
    X, y, g = unfair
    est = fm.FairAUCClassifier(kind="intra", kappa=0.05, backend="stochastic", random_state=3,
                               solver_options={"T": 300})
    est.fit(X, y, sensitive_features=g)
    data = fm.Dataset(X, np.where(y == 1, 1.0, -1.0), g)
    w = fm.Weights(3, radius=10.0)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)), [fm.auc_gap(s, data, kind="intra", protected=0) <= 0.05])
    direct = prob.solve(backend="stochastic", method="sfls", seed=3, T=300)
    assert np.allclose(est.coef_[0], direct.variables["w"], rtol=0, atol=1e-12)
    assert est.result_.objective == pytest.approx(direct.objective, abs=1e-12)


def _pair_risk(h, first, second, c1=0.5, c2=1.0):
    """L(S, S') = mean over all pairs (i in S, j in S') of c1 (h_i - h_j - c2)^2, by brute force."""
    return float(np.mean(c1 * (h[first][:, None] - h[second][None, :] - c2) ** 2))


def test_fair_auc_classifier_meets_its_constraint_and_lowers_the_true_gap(unfair):
    X, y, g = unfair
    fair = fm.FairAUCClassifier(kind="intra", kappa=0.05, backend="exact").fit(X, y, sensitive_features=g)
    free = fm.FairAUCClassifier(kappa=None, backend="exact").fit(X, y, sensitive_features=g)
    assert "auc_gap" not in free.result_.problem and "auc_gap" in fair.result_.problem
    h = X @ fair.coef_[0]
    # the surrogate pair (6) of the intra preset (G1 = (+, g=0), G1' = (-, g=0), G2 = (+, g=1), G2' = (-, g=1))
    G1, G1p, G2, G2p = (y == 1) & (g == 0), (y == 0) & (g == 0), (y == 1) & (g == 1), (y == 0) & (g == 1)
    f1 = _pair_risk(h, G1p, G1) + _pair_risk(h, G2, G2p)
    f2 = _pair_risk(h, G2p, G2) + _pair_risk(h, G1, G1p)
    assert max(f1, f2) - 1 <= 0.05 + 1e-6
    free_h = X @ free.coef_[0]
    assert max(_pair_risk(free_h, G1p, G1) + _pair_risk(free_h, G2, G2p),
               _pair_risk(free_h, G2p, G2) + _pair_risk(free_h, G1, G1p)) - 1 > 0.1   # the budget binds
    # the true intra-group AUC gap on the training data falls (the constraint is on the surrogate)
    signed = 2 * y - 1
    true_fair = fm.metrics.auc_fairness(h, signed, g, kind="intra", protected=0)
    true_free = fm.metrics.auc_fairness(free_h, signed, g, kind="intra", protected=0)
    assert true_fair < 0.5 * true_free
    assert fair.result_.metrics["c0:intra"]["true_gap"] == pytest.approx(true_fair, abs=1e-12)


def test_fair_auc_threshold_maximizes_training_accuracy(unfair):
    X, y, g = unfair
    est = fm.FairAUCClassifier(kappa=None, backend="exact").fit(X, y)
    h = X @ est.coef_[0]
    s = np.sort(h)
    candidates = np.concatenate([[s[0] - 1], (s[1:] + s[:-1]) / 2, [s[-1] + 1]])
    best = max(np.mean((h > t) == (y == 1)) for t in candidates)
    assert est.score(X, y) == pytest.approx(best) and est.score(X, y) > 0.85
    assert est.groups_ == [] and est.intercept_[0] == -est.threshold_


@pytest.mark.parametrize("params, fit_groups, match", [
    ({"kind": "fairness"}, None, "kind must be one of"),
    ({"kappa": -0.1}, None, "kappa must be"),
    ({"radius": 0}, None, "radius must be"),
    ({"c1": "half"}, None, "c1 must be"),
    ({"backend": "gpu"}, None, "backend must be one of"),
    ({"solver_options": 5}, None, "solver_options must be a dict"),
    ({}, "three", "protected must name the protected group"),
    ({}, "one", "sensitive_features has 1 group"),
])
def test_fair_auc_classifier_rejects_bad_parameters(unfair, params, fit_groups, match):
    X, y, g = unfair
    groups = {None: None, "three": np.arange(len(y)) % 3, "one": np.zeros(len(y))}[fit_groups]
    with pytest.raises(ValueError, match=match):
        fm.FairAUCClassifier(**{"backend": "exact", **params}).fit(X, y, sensitive_features=groups)


# ---------------------------------------------------------------------------------------------------
# PartialFairnessClassifier
# ---------------------------------------------------------------------------------------------------
IDCA_SMALL = {"outer": 30, "inner": 50, "certificate": False}


@pytest.fixture
def shifted():
    """Group 1 scores higher: the unconstrained model is far from partial parity in the band (0.7, 1)."""
    rng = np.random.default_rng(1)
    n = 300
    g = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[:, 2] = g + 0.3 * rng.normal(size=n)
    y = np.where(X[:, 0] + 2 * g + 0.5 * rng.normal(size=n) > 0.5, 1, 0)
    return X, y, g


def _ramp_means(h, g, theta):
    """(1/n_k) sum_i sigma(h_i - theta) per group k, sigma(x) = clip(x + 1/2, 0, 1) (the ramp surrogate)."""
    return np.array([np.mean(np.clip(h[g == k] - theta + 0.5, 0, 1)) for k in (0, 1)])


def test_partial_fairness_classifier_in_a_pipeline_on_a_dataframe(frame):
    df, y = frame
    pipe = pipeline(fm.PartialFairnessClassifier(constraint="weak_pdp", kappa=0.1, solver_options=IDCA_SMALL))
    pipe.fit(df, y, clf__sensitive_features=df["group"])
    clf = pipe.named_steps["clf"]
    assert clf.groups_ == ["g1", "g2"] and clf.result_.family == "partial"
    assert clf.result_.constraints["c0"]["value"] <= 0.1 and set(pipe.predict(df)) <= {"yes", "no"}
    proba = pipe.predict_proba(df)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(pipe.predict(df), np.where(proba[:, 1] > 0.5, "yes", "no"))


def test_partial_fairness_classifier_equals_the_direct_dsl_solve(shifted):
    X, y, g = shifted
    est = fm.PartialFairnessClassifier(constraint="pdp", band=(0.7, 1.0), kappa=0.1, alpha=1e-3,
                                       solver_options=IDCA_SMALL).fit(X, y, sensitive_features=g)
    data = fm.Dataset(X, np.where(y == 1, 1.0, -1.0), g)
    w = fm.Weights(3, intercept=True)
    s = data.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.partial_dp(s, data.groups, band=(0.7, 1.0)) <= 0.1])
    direct = prob.solve(backend="stochastic", method="idca", **IDCA_SMALL)
    assert np.allclose(np.r_[est.coef_[0], est.intercept_], direct.variables["w"], rtol=0, atol=1e-12)
    assert est.result_.objective == pytest.approx(direct.objective, abs=1e-12)


def test_partial_fairness_pdp_meets_model_13_and_lowers_the_true_gap(shifted):
    X, y, g = shifted
    band, kappa = (0.7, 1.0), 0.1
    est = fm.PartialFairnessClassifier(constraint="pdp", band=band, kappa=kappa, solver_options=IDCA_SMALL)
    h = est.fit(X, y, sensitive_features=g).decision_function(X)
    # model (13): at each level p of the default grid, the level's threshold puts every group's ramp average
    # in [p, p + kappa (beta - alpha)]
    a, b = band
    levels = a + np.arange(10) * (b - kappa * (b - a) - a) / 10
    thetas = est.result_.variables["theta_c0"]
    for p, theta in zip(levels, thetas):
        means = _ramp_means(h, g, theta)
        assert np.all(means >= p - 1e-9) and np.all(means <= p + kappa * (b - a) + 1e-9)
    free = fm.PartialFairnessClassifier().fit(X, y).decision_function(X)
    true_free = fm.metrics.partial_dp(free, g, band=band).gap
    true_fair = fm.metrics.partial_dp(h, g, band=band).gap
    assert true_free > 0.9 and true_fair < 0.25         # the surrogate is not the step function: not <= kappa
    assert est.result_.metrics["c0.gap"] == pytest.approx(true_fair)


def test_partial_fairness_weak_pdp_meets_model_17_and_lowers_the_true_gap(shifted):
    X, y, g = shifted
    band, kappa, threshold = (0.7, 1.0), 0.1, 0.0
    est = fm.PartialFairnessClassifier(constraint="weak_pdp", band=band, kappa=kappa, threshold=threshold,
                                       solver_options=IDCA_SMALL).fit(X, y, sensitive_features=g)
    h = est.decision_function(X)
    S = np.clip(_ramp_means(h, g, threshold), *band)       # min{S, beta} - min{S, alpha} + alpha
    assert abs(S[0] - S[1]) / (band[1] - band[0]) <= kappa + 1e-9
    assert est.result_.constraints["c0"]["value"] == pytest.approx(abs(S[0] - S[1]) / (band[1] - band[0]))
    free = fm.PartialFairnessClassifier().fit(X, y).decision_function(X)
    assert fm.metrics.weak_partial_dp(free, g, band=band, threshold=threshold).gap > 0.5
    assert fm.metrics.weak_partial_dp(h, g, band=band, threshold=threshold).gap <= kappa


@pytest.mark.parametrize("params, fit_groups, match", [
    ({"constraint": "dp"}, None, "constraint must be one of"),
    ({"band": (0.9, 0.5)}, None, "band"),
    ({"band": 0.7}, None, "band must be a pair"),
    ({"kappa": 1.5}, None, "kappa must be"),
    ({"kappa": 1}, None, "kappa must be < 1"),
    ({"alpha": -1.0}, None, "alpha must be"),
    ({"threshold": "zero"}, None, "threshold must be"),
    ({"backend": "gpu"}, None, "backend must be one of"),
    ({}, "one", "sensitive_features has 1 group"),
])
def test_partial_fairness_classifier_rejects_bad_parameters(shifted, params, fit_groups, match):
    X, y, g = shifted
    groups = None if fit_groups is None else np.zeros(len(y))
    with pytest.raises(ValueError, match=match):
        fm.PartialFairnessClassifier(**params).fit(X, y, sensitive_features=groups)


# ---------------------------------------------------------------------------------------------------
# StrategicRobustClassifier
# ---------------------------------------------------------------------------------------------------
@pytest.fixture
def strategic():
    data = fm.datasets.make_strategic_synthetic(n=300, seed=0)
    return data.X, np.where(data.y > 0, "good", "bad")       # classes_ = ["bad", "good"]: "bad" agents move


def test_strategic_robust_classifier_in_a_pipeline_on_a_dataframe(frame):
    df, y = frame
    pipe = pipeline(fm.StrategicRobustClassifier(strategic_features=["num__hours"], radius=0.05))
    pipe.set_output(transform="pandas")                      # column names reach the estimator
    with pytest.raises(ValueError, match="no sensitive attribute"):
        pipe.fit(df, y, clf__sensitive_features=df["group"])
    pipe.fit(df, y)
    clf = pipe.named_steps["clf"]
    assert list(clf.feature_names_in_) == ["num__age", "num__hours", "cat__job_a", "cat__job_b", "cat__job_c"]
    assert clf.strategic_mask_.tolist() == [False, True, False, False, False]
    assert clf.result_.family == "strategic_dro" and clf.result_.status.startswith("optimal")
    assert np.linalg.norm(clf.coef_) > 0.1 and pipe.score(df, y) > 0.7
    Z = pipe.named_steps["pre"].transform(df).to_numpy()
    assert np.allclose(pipe.decision_function(df), (Z - clf.center_) @ clf.coef_[0])
    assert np.allclose(pipe.predict_proba(df).sum(axis=1), 1.0)


@pytest.mark.parametrize("backend, options", [("exact", None), ("stochastic", {"epochs": 30})])
def test_strategic_robust_classifier_equals_the_direct_dsl_solve(strategic, backend, options):
    X, y = strategic
    est = fm.StrategicRobustClassifier(strategic_features=range(5), zeta=0.05, radius=0.1, label_cost=0.5,
                                       backend=backend, random_state=0, solver_options=options).fit(X, y)
    data = fm.Dataset(X - X.mean(axis=0), np.where(y == "good", 1.0, -1.0))
    w = fm.Weights(10)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=range(5), zeta=0.05), data.y)
    prob = fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=0.1, label_cost=0.5)))
    direct = prob.solve(backend=backend, seed=0 if backend == "stochastic" else None, **(options or {}))
    assert np.allclose(est.coef_[0], direct.variables["w"], rtol=0, atol=1e-9)
    assert est.intercept_[0] == pytest.approx(-X.mean(axis=0) @ direct.variables["w"])
    assert est.result_.objective == pytest.approx(direct.objective, abs=1e-9)


def test_strategic_robust_classifier_minimizes_the_worst_case_risk(strategic):
    from fairmodel.exact.strategic_dro import logistic_erm
    from fairmodel.oracles.strategic import WDRSC
    X, y = strategic
    est = fm.StrategicRobustClassifier(strategic_features=[0, 1, 2, 3, 4], zeta=0.05, radius=0.1).fit(X, y)
    Xc, signed = X - X.mean(axis=0), np.where(y == "good", 1.0, -1.0)
    model = WDRSC(Xc, signed, np.arange(10) < 5, zeta=0.05, delta=0.1, kappa=0.5)   # the closed form (E2)
    best = model.worst_case_risk(est.coef_[0])[0]
    assert best == pytest.approx(est.result_.objective, abs=1e-9)
    assert best < model.worst_case_risk(np.zeros(10))[0] - 0.05                       # w = 0: log 2
    assert best < model.worst_case_risk(logistic_erm(Xc, signed))[0]                  # ERM is not robust
    rng = np.random.default_rng(0)
    for _ in range(20):                                                               # a local minimum
        step = 1e-2 * rng.normal(size=10)
        assert model.worst_case_risk(est.coef_[0] + step)[0] >= best - 1e-7
    assert est.predict(X[:3]).tolist() == np.where(est.decision_function(X[:3]) > 0, "good", "bad").tolist()


def test_strategic_features_by_name_equal_by_index(strategic):
    pd = pytest.importorskip("pandas")
    X, y = strategic
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(10)])
    by_name = fm.StrategicRobustClassifier(strategic_features=["f1", "f3"], zeta=0.5).fit(df, y)
    by_index = fm.StrategicRobustClassifier(strategic_features=[1, 3], zeta=0.5).fit(X, y)
    none = fm.StrategicRobustClassifier(zeta=0.5).fit(X, y)
    assert by_name.strategic_mask_.tolist() == [j in (1, 3) for j in range(10)]
    assert np.allclose(by_name.coef_, by_index.coef_, atol=1e-9)
    assert not np.allclose(by_name.coef_, none.coef_, atol=1e-3)       # the agents' response changes the model


@pytest.mark.parametrize("params, match", [
    ({"zeta": -1.0}, "zeta must be"),
    ({"radius": 0.0}, "radius must be"),
    ({"label_cost": 0}, "label_cost must be"),
    ({"backend": "gpu"}, "backend must be one of"),
    ({"order": 2}, "order must be 0"),
    ({"strategic_features": ["income"]}, "strategic_features names columns"),
    ({"strategic_features": [12]}, "strategic_features: strategic features must be"),
])
def test_strategic_robust_classifier_rejects_bad_parameters(strategic, params, match):
    X, y = strategic
    with pytest.raises(ValueError, match=match):
        fm.StrategicRobustClassifier(**params).fit(X, y)
