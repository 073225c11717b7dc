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
