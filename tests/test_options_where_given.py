"""Every option is checked where it is given, with an error of fairmodel's (what is wrong and how to fix it), never
ignored because the chosen path does not use it and never a Python or NumPy error from deep inside: the estimators'
options, the public functions taking a count (n, T, m, ...), the functions that expect a problem, features too large
for the solvers, and Parquet files rewritten under a data set."""
import numpy as np
import pytest

import fairmodel as fm

BAD_COUNTS = ["10", float("nan"), float("inf"), 2.5, True, 0]


@pytest.fixture(scope="module")
def dp_models():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    s = (X[:, 0] > 0).astype(int)
    y = X @ np.array([1.0, 2.0, 3.0]) + s
    return sklearn.LinearRegression().fit(X, y), sklearn.LogisticRegression().fit(X, s), X[:200]


@pytest.mark.parametrize("option, value, message", [
    ("T", 0, "T .* must be a positive integer; got 0"),           # the reported cases: the exact backend ran and
    ("method", "bogus", "method .* must be one of 'sgd3'"),       # the option was ignored
    ("T", "10", "must be a positive integer"),
    ("batch_size", 1.5, "batch_size .* must be a positive integer"),
    ("mu", -1.0, "mu .* must be positive"),
    ("oracle", "bogus", "oracle must be one of"),
    ("inner", "bogus", "inner .* must be one of 'acsa2', 'acsa'"),
    ("variant", "bogus", "variant must be 'paper' or 'reference'"),
    ("stop", "bogus", "stop must be one of"),
    ("clip", "yes", "clip must be True or False"),
    ("random_state", -1, "random_state must be a non-negative integer"),
])
def test_dp_post_processor_options_are_checked_whichever_backend_runs(dp_models, option, value, message):
    reg, clf, X = dp_models
    est = fm.DemographicParityPostProcessor(reg, clf, **{option: value})     # backend="auto": exact here
    with pytest.raises(fm.FairmodelError, match=message):
        est.fit(X)
    with pytest.raises(fm.FairmodelError, match=message):
        fm.DemographicParityPostProcessor(reg, clf, p=[0.5, 0.5], **{"T": 1000, option: value}).partial_fit(X)


@pytest.mark.parametrize("value", BAD_COUNTS)
def test_dp_parameters_counts(value):
    """n or T given as text, NaN, inf, a fraction, a bool or 0: an OptionError naming it (it used to leak
    TypeError, ValueError or OverflowError, or to be accepted)."""
    with pytest.raises(fm.OptionError, match=r"n \(the number of unlabeled points\) .* must be an integer >= 2"):
        fm.dp_parameters("reference", n=value)
    with pytest.raises(fm.OptionError, match=r"T \(the number of stochastic gradients\) .* must be an integer >= 3"):
        fm.dp_parameters("theory", T=value)


def test_dp_parameters_refuses_the_other_presets_count():
    with pytest.raises(fm.OptionError, match="takes n= .* not T="):
        fm.dp_parameters("reference", n=800, T=100)
    assert fm.dp_parameters("reference", n=800)["L"] == 28 and fm.dp_parameters("theory", T=2 ** 13)["L"] == 91


@pytest.mark.parametrize("call", ["generator m", "generator n_per_group", "auc n", "strategic n", "subsample",
                                  "sampler"])
@pytest.mark.parametrize("value", BAD_COUNTS)
def test_counts_of_the_data_functions(call, value):
    data = fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=10, seed=0)
    calls = {"generator m": lambda: fm.datasets.make_gdro_synthetic(m=value, d=3, n_per_group=10),
             "generator n_per_group": lambda: fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=value),
             "auc n": lambda: fm.datasets.make_auc_synthetic(n=value),
             "strategic n": lambda: fm.datasets.make_strategic_synthetic(n=value, p=3, n_strategic=1),
             "subsample": lambda: data.subsample(value, seed=0),
             "sampler": lambda: data.sampler(batch_size=value, seed=0)}
    with pytest.raises(fm.DataError, match="must be a positive integer|must be an integer >= 2"):
        calls[call]()


def _gdro():
    data = fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=[30, 40], seed=0)
    w = fm.Weights(3, radius=1.0)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))


def test_a_function_where_a_problem_is_expected():
    """fm.dp_sweep given the function that builds a problem used to raise AttributeError; so did fm.crosscheck."""
    def build(eps):
        return _gdro()
    for call, where in [(lambda: fm.dp_sweep(build, [0.1]), "dp_sweep"), (lambda: fm.crosscheck(build), "crosscheck"),
                        (lambda: fm.judge(build, {}), "judge"),
                        (lambda: fm.load_result("run", problem=build), "load_result")]:
        with pytest.raises(fm.OptionError, match=f"{where}.* needs .*got function: pass the problem itself"):
            call()
    with pytest.raises(fm.OptionError, match="dp_sweep needs a DP post-processing"):
        fm.dp_sweep(_gdro(), [0.1])
    frontier = fm.sweep(lambda v: build, [1])                  # build returns a function: that value fails, named
    assert "build(1) needs to return a fm.Problem; got function" in frontier.errors[0]


@pytest.mark.parametrize("estimator, option, value", [
    ("GroupDROClassifier", "random_state", "x"),              # the exact backend does not use it: still checked
    ("GroupDROClassifier", "solver_options", "epochs=3"),
    ("FairLogisticRegression", "fit_intercept", "yes"),
    ("FairLogisticRegression", "random_state", 1.5),
    ("PartialFairnessClassifier", "fit_intercept", 1),
    ("FairRateClassifier", "fit_intercept", "yes"),
    ("FairRateClassifier", "solver_options", "rate_steps=2"),
    ("FairAUCClassifier", "protected", "nobody"),
    ("StrategicRobustClassifier", "strategic_features", -1.0),
    ("StrategicRobustClassifier", "center", "no"),
    ("GroupThresholdPostProcessor", "estimator", "logistic"),
    ("GroupThresholdPostProcessor", "prefit", "yes"),
    ("GroupThresholdPostProcessor", "random_state", "x"),
])
def test_estimator_options(estimator, option, value):
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))
    g = (rng.random(120) > 0.5).astype(int)
    y = (X[:, 0] + 0.3 * g + 0.5 * rng.standard_normal(120) > 0).astype(int)
    backend = {"backend": "exact"} if estimator == "GroupDROClassifier" else {}
    est = getattr(fm, estimator)(**backend, **{option: value})
    with pytest.raises(fm.FairmodelError, match=option):
        est.fit(X, y) if estimator == "StrategicRobustClassifier" else est.fit(X, y, sensitive_features=g)


@pytest.mark.parametrize("backend", ["exact", "stochastic"])
def test_features_too_large_for_the_solvers(backend):
    """Features of 1e308 used to reach NumPy's 'Eigenvalues did not converge' in group DRO (both backends): their
    squares overflow every sum the solvers form. Refused where the data are given, naming the first entry."""
    X = np.full((60, 3), 1e308)
    with pytest.raises(fm.DataError, match=r"X has 180 value\(s\) beyond 1e\+150 .* at index \(0, 0\).*rescale"):
        fm.Dataset(X, np.where(np.arange(60) % 2, 1.0, -1.0), np.repeat([0, 1], 30))
    pytest.importorskip("sklearn")
    with pytest.raises(fm.DataError, match="beyond 1e\\+150"):
        fm.GroupDROClassifier(backend=backend).fit(X, np.arange(60) % 2, sensitive_features=np.repeat([0, 1], 30))
    fm.Dataset(np.full((60, 3), 1e150))                        # the largest magnitude the solvers take


def test_features_too_large_in_chunks():
    da = pytest.importorskip("dask.array")
    X = np.ones((40, 2))
    X[25, 1] = -1e200
    with pytest.raises(fm.DataError, match="beyond 1e\\+150 .* -1e\\+200 at column 1"):
        fm.Dataset.from_dask(da.from_array(X, chunks=(10, 2)))


def test_a_parquet_file_rewritten_after_the_data_set_was_built(tmp_path):
    """The file holds fewer rows when a pass reads it: a DataError naming the change (it was a broadcast error)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)

    def write(n):
        pd.DataFrame({"a": rng.standard_normal(n), "b": rng.standard_normal(n), "y": np.where(rng.random(n) > .5, 1, -1),
                      "g": rng.integers(0, 2, n)}).to_parquet(tmp_path / "p.parquet")
    write(200)
    data = fm.Dataset.from_parquet(str(tmp_path / "p.parquet"), target="y", sensitive="g")
    write(150)
    w = fm.Weights(2, radius=1.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    with pytest.raises(fm.DataError, match="changed after the data set was built: partition 0 has 150 rows, 200 when "
                                           "it was opened"):
        prob.solve(backend="stochastic", seed=0, epochs=2)
