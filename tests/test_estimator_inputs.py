"""What scikit-learn pipelines hand the estimators: sparse X (densified after a memory check), a DataFrame with
the sensitive attribute named as a column; and result.predictor() on a family without a predictor."""
import numpy as np
import pytest

import fairmodel as fm

sklearn = pytest.importorskip("sklearn")
pd = pytest.importorskip("pandas")
sparse = pytest.importorskip("scipy.sparse")


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = np.where(rng.random(n) < 0.4, "a", "b")
    y = np.where(X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=n) > 0, 1, 0)
    return X, y, g


def test_sparse_X_gives_the_same_model_as_dense():
    X, y, g = _data()
    # one seed for both: the stochastic fit stops at the judge's tolerance, so unseeded runs differ within it
    dense = fm.GroupDROClassifier(random_state=0).fit(X, y, sensitive_features=g)
    sp = fm.GroupDROClassifier(random_state=0).fit(sparse.csr_matrix(X), y, sensitive_features=g)
    assert np.allclose(sp.coef_, dense.coef_, atol=1e-8)
    assert np.array_equal(sp.predict(sparse.csr_matrix(X)), dense.predict(X))


def test_sparse_X_too_large_is_refused_with_the_size(monkeypatch):
    from fairmodel.estimators import _base
    X, y, g = _data()
    monkeypatch.setattr(_base, "MAX_DENSE_BYTES", X.size * 8 - 1)
    with pytest.raises(ValueError, match=r"densifying it needs .* GiB .*MAX_DENSE_BYTES"):
        fm.GroupDROClassifier().fit(sparse.csr_matrix(X), y, sensitive_features=g)


def test_onehot_pipeline_with_sensitive_column_by_name():
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    X, y, g = _data()
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"f1": X[:, 0], "f2": X[:, 1], "f3": X[:, 2], "job": rng.choice(["x", "y", "z"], len(y)),
                          "group": g})
    pre = ColumnTransformer([("num", StandardScaler(), ["f1", "f2", "f3"]), ("cat", OneHotEncoder(), ["job"])],
                            sparse_threshold=1.0)              # the encoder's sparse output reaches the estimator
    assert sparse.issparse(pre.fit_transform(frame))
    # by name: the estimator takes the column out of its DataFrame input
    clf = fm.FairAUCClassifier(kappa=0.1).fit(frame.drop(columns=["job"]), y, sensitive_features="group")
    by_values = fm.FairAUCClassifier(kappa=0.1).fit(frame[["f1", "f2", "f3"]], y, sensitive_features=g)
    assert clf.sensitive_columns_ == ["group"] and list(clf.feature_names_in_) == ["f1", "f2", "f3"]
    assert np.allclose(clf.coef_, by_values.coef_, atol=1e-6)
    assert np.array_equal(clf.predict(frame.drop(columns=["job"])), by_values.predict(frame[["f1", "f2", "f3"]]))
    # a sparse pipeline with the groups as values
    pipe = make_pipeline(pre, fm.FairAUCClassifier(kappa=0.1))
    pipe.fit(frame, y, fairaucclassifier__sensitive_features=g)
    assert pipe.predict(frame).shape == (len(y),)


def test_sensitive_column_name_errors():
    X, y, g = _data()
    with pytest.raises(ValueError, match="is not a pandas DataFrame"):
        fm.GroupDROClassifier().fit(X, y, sensitive_features="group")
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"that X does not have; X's columns are \['a', 'b', 'c'\]"):
        fm.GroupDROClassifier().fit(frame, y, sensitive_features="group")


def test_predictor_on_a_family_without_one_is_a_clear_error():
    X, y, g = _data()
    data = fm.Dataset(X, np.where(y == 1, 1.0, -1.0), g)
    w = fm.Weights(3, radius=2.0)
    res = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)))).solve()
    with pytest.raises(fm.OptionError, match="have no predictor"):
        res.predictor()


# -- bad inputs: each names the input and the fix (a fairmodel DataError, a ValueError for scikit-learn) -------------
ESTIMATORS = {"gdro": lambda: fm.GroupDROClassifier(backend="exact"), "flr": lambda: fm.FairLogisticRegression(),
              "auc": lambda: fm.FairAUCClassifier(kappa=0.1), "partial": lambda: fm.PartialFairnessClassifier(),
              "strategic": lambda: fm.StrategicRobustClassifier(), "rates": lambda: fm.FairRateClassifier()}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_text_column_of_a_dataframe_is_named(name):
    X, y, g = _data()
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(job=rng.choice(["p", "q"], len(y)), sex=g)
    by_name = {} if name == "strategic" else {"sensitive_features": "sex"}
    if name == "strategic":
        frame = frame.drop(columns=["sex"])
    with pytest.raises(fm.DataError, match=r"non-numeric column\(s\) 'job'.*OneHotEncoder"):
        ESTIMATORS[name]().fit(frame, y, **by_name)


def test_text_array_and_text_at_predict_are_named():
    X, y, g = _data()
    with pytest.raises(fm.DataError, match="X holds text"):
        fm.FairLogisticRegression().fit(np.array([["a", "b", "c"]] * len(y)), y, sensitive_features=g)
    clf = fm.FairLogisticRegression().fit(pd.DataFrame(X, columns=["a", "b", "c"]), y, sensitive_features=g)
    with pytest.raises(fm.DataError, match=r"non-numeric column\(s\) 'c'"):
        clf.predict(pd.DataFrame(X, columns=["a", "b", "c"]).assign(c="x"))


def test_group_labels_given_as_a_list_of_strings_are_labels_not_column_names():
    X, y, g = _data()
    listed = fm.FairLogisticRegression().fit(X, y, sensitive_features=list(g))
    as_array = fm.FairLogisticRegression().fit(X, y, sensitive_features=g)
    assert listed.groups_ == ["a", "b"] and np.allclose(listed.coef_, as_array.coef_, atol=1e-8)
    with pytest.raises(ValueError, match="sensitive_features has 1 group"):
        fm.FairLogisticRegression().fit(X, y, sensitive_features=["a"] * len(y))


def test_fair_auc_with_intersections_of_two_sensitive_columns():
    X, y, g = _data()
    h = np.where(np.arange(len(y)) % 2 == 0, "u", "v")
    clf = fm.FairAUCClassifier(kappa=0.2, protected=("a", "u")).fit(X, y, sensitive_features=np.column_stack([g, h]))
    assert ("a", "u") in clf.groups_ and clf.coef_.shape == (1, 3)


def test_equal_opportunity_with_a_group_without_positives_names_it():
    X, y, g = _data()
    y = np.where(g == "a", 0, y)
    with pytest.raises(ValueError, match=r"group\(s\) 'a' have no row with a positive label"):
        fm.FairLogisticRegression(constraint="equal_opportunity").fit(X, y, sensitive_features=g)


# -- DemographicParityPostProcessor ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_models():
    from sklearn.linear_model import LinearRegression, LogisticRegression
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    s = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    reg = LinearRegression().fit(X, X @ [1.0, 2.0, -1.0] + s)
    return reg, LogisticRegression().fit(X, s), X


def test_dp_post_processor_on_one_point_is_judged(base_models):
    reg, clf, X = base_models
    est = fm.DemographicParityPostProcessor(reg, clf, eps=0.05).fit(X[:1])
    # one point with calibrated marginals: t_hat = 0, so the constraint holds for every policy and the optimum is
    # the unconstrained one (Remark 3.2); its unfairness is 0 and the KKT residual is finite
    assert est.result_.ok and np.isfinite(est.result_.certificate["kkt_residual"])
    assert est.result_.metrics["unfairness"].max() == pytest.approx(0.0, abs=1e-12)


def test_dp_post_processor_takes_sparse_points(base_models):
    reg, clf, X = base_models
    dense = fm.DemographicParityPostProcessor(reg, clf, eps=0.05).fit(X)
    sp = fm.DemographicParityPostProcessor(reg, clf, eps=0.05).fit(sparse.csr_matrix(X))
    assert np.allclose(sp.dual_, dense.dual_) and np.allclose(sp.predict(sparse.csr_matrix(X)), dense.predict(X))


@pytest.mark.parametrize("X, message", [(np.zeros((0, 3)), "at least one row"), (np.zeros(3), "reshape"),
                                        ({"a": 1}, "2-D array")])
def test_dp_post_processor_points_that_are_not_a_table(base_models, X, message):
    reg, clf, _ = base_models
    with pytest.raises(fm.DataError, match=message):
        fm.DemographicParityPostProcessor(reg, clf, eps=0.05).fit(X)


def test_dp_stochastic_with_too_few_steps_names_T(base_models):
    reg, clf, X = base_models
    with pytest.raises(fm.OptionError, match=r"T = 1 .*is too small for one run of 'sgd3'.*T >= 2"):
        fm.DemographicParityPostProcessor(reg, clf, eps=0.05, backend="stochastic", T=1).fit(X)
    post = fm.GridPredictor(reg.predict, clf.predict_proba, L=5, B=10.0)
    prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.05], entropy=0.01)
    with pytest.raises(fm.OptionError, match=r"T = 3 .*of 2 point\(s\).*T >= 4"):
        prob.solve("stochastic", data=X, T=3, batch_size=2)
    assert prob.solve("stochastic", data=X, T=2, seed=0).status != "failed"
