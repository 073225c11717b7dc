"""Wrong inputs to the declarations, the in-memory data, fm.assess, saddle problems and result files give a
fairmodel error that names the input and says what to do, never a raw NumPy / SciPy / pandas traceback nor a
silently wrong answer. (The Dask / Parquet readers are in test_dask_inputs.py, the estimators in
test_estimator_inputs.py, the command line in test_cli.py.)"""
import json
import os
import stat
import warnings

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.errors import (DataError, ExpressionTypeError, FairmodelError, ModelError, OptionError,
                              ResultFileError)

from .conftest import toy_classification


@pytest.fixture(scope="module")
def small():
    data, w = toy_classification(60)
    return data, w, fm.logistic_loss(data.score(w), data.y), fm.hinge_loss(data.score(w), data.y)


# -- saddle problems: a non-finite oracle is a judged failure -----------------------------------------------------
def test_saddle_value_nan_is_a_failed_result_not_an_exception():
    sp = fm.SaddleProblem(value=lambda x, y, i: float("nan"), n=3, x_domain=fm.Simplex(2), y_domain=fm.Simplex(2))
    res = sp.solve(epochs=3)
    assert res.status == "failed" and not res.ok
    assert "nan" in res.message and np.isnan(res.objective)
    # with given steps the run itself meets the NaN: the same verdict
    res = sp.solve(epochs=3, eta0=0.1, R0=0.1)
    assert res.status == "failed" and "nan" in res.message


def test_saddle_value_of_the_wrong_kind_names_the_callable():
    sp = fm.SaddleProblem(value=lambda x, y, i: np.ones(3), n=3, x_domain=fm.Simplex(2), y_domain=fm.Simplex(2))
    with pytest.raises(ModelError, match=r"value\(x, y, i\) must return one number"):
        sp.solve(epochs=3)


# -- declarations ----------------------------------------------------------------------------------------------------
def test_two_parameters_with_one_name_are_refused(small):
    data, w, l1, _ = small
    k1, k2 = fm.parameter(0.5, "k"), fm.parameter(0.3095, "k")
    with pytest.raises(ModelError, match="two different parameters are named 'k'"):
        fm.Problem(fm.Minimize(fm.mean(l1)), [fm.sum_squares(w) <= k1, fm.mean(l1) <= k2 + 1])
    k = fm.parameter(0.5, "k")     # one parameter used twice is fine
    prob = fm.Problem(fm.Minimize(fm.mean(l1)), [fm.sum_squares(w) <= k, fm.mean(l1) <= k + 1])
    assert list(prob.parameters()) == ["k"]


def test_two_variables_with_one_name_are_refused(small):
    data, _, _, _ = small
    w1, w2 = fm.Weights(3, radius=1.0, name="w"), fm.Weights(3, radius=2.0, name="w")
    obj = fm.mean(fm.logistic_loss(data.score(w1), data.y)) + fm.mean(fm.logistic_loss(data.score(w2), data.y))
    with pytest.raises(ModelError, match="two different variables are named 'w'"):
        fm.Problem(fm.Minimize(obj))


@pytest.mark.parametrize("call, hint", [
    (lambda a, b: max(a, b), "fm.max"), (lambda a, b: min(a, b), "fm.min"), (lambda a, b: sorted([a, b]), "fm.max"),
    (lambda a, b: a > 0.5, "<="), (lambda a, b: a < 0.5, "<="),
    (lambda a, b: len(a), "size"), (lambda a, b: float(a), "evaluate"), (lambda a, b: int(a), "evaluate"),
    (lambda a, b: round(a), "evaluate"), (lambda a, b: a ** 2, "sum_squares"), (lambda a, b: 1 / a, "divide"),
    (lambda a, b: np.max(a), "fm.max"), (lambda a, b: np.sum(a), "fm.sum"), (lambda a, b: np.maximum(a, b), "fm.max"),
    (lambda a, b: np.exp(a), "not an atom"), (lambda a, b: fm.sum([a, b]), "a + b"),
])
def test_python_and_numpy_builtins_on_expressions_point_to_the_dsl(small, call, hint):
    _, _, l1, l2 = small
    with pytest.raises(ExpressionTypeError, match=hint.replace("+", r"\+").replace("(", r"\(")):
        call(fm.mean(l1), fm.mean(l2))


def test_numpy_arithmetic_with_expressions_still_builds_expressions(small):
    data, w, l1, _ = small
    v = np.ones(2)
    risks = fm.group_mean(l1, data.groups)
    assert isinstance(v + risks, fm.expressions.Add) and isinstance(risks - v, fm.expressions.Add)
    assert isinstance(np.float64(2.0) * fm.mean(l1), fm.expressions.ScalarMul)
    assert isinstance(v * risks, fm.expressions.Multiply)
    assert isinstance(np.float64(0.3) >= fm.mean(l1), fm.Inequality)
    assert isinstance(np.abs(fm.mean(l1) - 0.5), fm.expressions.Abs) and isinstance(-v + risks, fm.expressions.Add)


def test_a_list_of_expressions_is_unpacked_by_max_and_min(small):
    _, _, l1, l2 = small
    a, b = fm.mean(l1), fm.mean(l2)
    assert str(fm.max([a, b])) == str(fm.max(a, b)) and str(fm.min((a, b))) == str(fm.min(a, b))


@pytest.mark.parametrize("groups, message", [(None, "group labels are None"), ("a", "one label per row")])
def test_group_mean_with_missing_groups(small, groups, message):
    _, _, l1, _ = small
    with pytest.raises(DataError, match=message):
        fm.group_mean(l1, groups)


def test_losses_on_data_without_labels_say_so():
    data = fm.Dataset(np.random.default_rng(0).normal(size=(20, 2)))
    w = fm.Weights(2)
    with pytest.raises(DataError, match="no labels"):
        fm.logistic_loss(data.score(w), data.y)


# -- in-memory data ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("X, message", [
    (None, "X must be a 2-D array"), ({"a": [1, 2]}, "X must be a 2-D array .* got a dict"),
    ("abc", "X must be a 2-D array"),
])
def test_dataset_X_that_is_not_an_array(X, message):
    with pytest.raises(DataError, match=message):
        fm.Dataset(X)


def test_dataset_keeps_a_sparse_matrix_and_a_program_that_needs_dense_rows_says_to_densify():
    sparse = pytest.importorskip("scipy.sparse")
    data = fm.Dataset(sparse.csr_matrix(np.eye(3)))
    assert data.is_sparse
    with pytest.raises(DataError, match=r"sparse 3 x 3 design.*toarray\(\)"):
        data.dense_X("a per-row program")


def test_dataset_from_a_dataframe_with_text_names_the_column():
    pd = pytest.importorskip("pandas")
    with pytest.raises(DataError, match=r"column\(s\) 'job'.*from_frame"):
        fm.Dataset(pd.DataFrame({"a": [1.0, 2.0], "job": ["x", "y"]}))


@pytest.mark.parametrize("names, message", [(3, "feature_names must be a list"), ("abc", "feature_names must be a list")])
def test_feature_names_of_the_wrong_type(names, message):
    with pytest.raises(DataError, match=message):
        fm.Dataset(np.eye(3), feature_names=names)


def test_take_refuses_rows_that_are_not_integer_indices(small):
    data = small[0]
    with pytest.raises(DataError, match=r"row indices must lie in \[0, 60\)"):
        data.take([100])
    with pytest.raises(DataError, match="integer row indices"):
        data.take([0.5])
    mask = np.zeros(60, bool)
    mask[[3, 7]] = True
    part = data.take(mask)              # a boolean mask selects its rows (never rows 0 and 1)
    assert part.n_samples == 2 and np.array_equal(part.X, data.X[[3, 7]])


@pytest.mark.parametrize("fractions", ["ab", 0.5, [0.5, "a"]])
def test_split_with_fractions_that_are_not_numbers(small, fractions):
    with pytest.raises(DataError, match="fractions must be"):
        small[0].split(fractions)


@pytest.mark.parametrize("seed", [-1, 1.5, "a"])
def test_bad_seeds_are_refused_naming_seed(small, seed):
    with pytest.raises(FairmodelError, match="seed"):
        small[0].subsample(10, seed=seed)


def test_from_frame_needs_a_dataframe():
    with pytest.raises(DataError, match="pandas DataFrame"):
        fm.Dataset.from_frame({"a": [1, 2], "y": [0, 1], "sex": ["m", "f"]}, target="y", sensitive="sex")
    with pytest.raises(DataError, match="pandas DataFrame"):
        fm.Dataset.from_frame(np.eye(3), target="y")


@pytest.fixture(scope="module")
def frame():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.normal(size=40), "b": rng.normal(size=40), "job": rng.choice(["p", "q"], 40),
                         "sex": rng.choice(["m", "f"], 40), "y": rng.integers(0, 2, 40)})


def test_from_frame_without_feature_columns(frame):
    with pytest.raises(DataError, match="no feature column"):
        fm.Dataset.from_frame(frame, target="y", features=[])
    with pytest.raises(DataError, match="no feature column"):
        fm.Dataset.from_frame(frame[["y"]], target="y")


def test_from_frame_features_given_as_one_name(frame):
    data = fm.Dataset.from_frame(frame, target="y", features="a")
    assert data.feature_names == ("a",)


@pytest.mark.parametrize("column, values, message", [
    ("t", "dates", "dates or times"), ("t", "timedeltas", "dates or times"), ("c", "lists", "one number or one category"),
])
def test_from_frame_columns_that_cannot_be_features(frame, column, values, message):
    pd = pytest.importorskip("pandas")
    made = {"dates": pd.date_range("2020", periods=40), "timedeltas": pd.to_timedelta(np.arange(40), "s"),
            "lists": [[1]] * 40}[values]
    with pytest.raises(DataError, match=f"column '{column}' .*{message}"):
        fm.Dataset.from_frame(frame.assign(**{column: made}), target="y")


def test_from_frame_drop_sensitive_must_be_a_bool(frame):
    with pytest.raises(FairmodelError, match="drop_sensitive must be True or False"):
        fm.Dataset.from_frame(frame, target="y", sensitive="sex", drop_sensitive="no")


# -- fm.assess --------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def decisions():
    rng = np.random.default_rng(0)
    n = 100
    return ((rng.random(n) < 0.5).astype(int), (rng.random(n) < 0.5).astype(int),
            np.where(rng.random(n) < 0.5, "a", "b"))


@pytest.mark.parametrize("pos_label", [7, "1"])
def test_assess_pos_label_not_among_the_labels_is_refused(decisions, pos_label):
    yt, yp, g = decisions
    with pytest.raises(DataError, match=f"pos_label={pos_label!r} is not among"):
        fm.assess(yt, y_pred=yp, sensitive_features=g, pos_label=pos_label)
    with pytest.raises(DataError, match="pos_label"):
        fm.metrics.demographic_parity_difference(yt, yp, sensitive_features=g, pos_label=pos_label)


def test_assess_text_labels_with_a_wrong_pos_label(decisions):
    yt, yp, g = decisions
    text = np.where(yt > 0, "yes", "no"), np.where(yp > 0, "yes", "no")
    with pytest.raises(DataError, match=r"pos_label='Yes' is not among .*'no', 'yes'"):
        fm.assess(text[0], y_pred=text[1], sensitive_features=g, pos_label="Yes")
    a = fm.assess(text[0], y_pred=text[1], sensitive_features=g, pos_label="yes")
    b = fm.assess(yt, y_pred=yp, sensitive_features=g)
    assert np.allclose(a.overall.to_numpy(), b.overall.to_numpy(), equal_nan=True)


def test_assess_pos_label_that_only_the_labels_hold(decisions):
    yt, _, g = decisions
    a = fm.assess(yt, y_pred=np.zeros_like(yt), sensitive_features=g, pos_label=1)   # no predicted positive: legal
    assert a.overall["selection_rate"] == 0.0


def test_difference_skips_a_group_whose_metric_is_undefined_and_warns(decisions):
    yt, yp, g = decisions
    p = yp.copy()
    p[g == "a"] = 0                                   # group a has no predicted positive: its precision is undefined
    a = fm.assess(yt, y_pred=p, sensitive_features=g)
    assert np.isnan(a.by_group.loc["a", "precision"])
    with pytest.warns(UserWarning, match=r"precision is undefined .* group\(s\) 'a'"):
        diff = a.difference()
    # the groups where it is defined: one group left, so the difference is 0 (as fairlearn's MetricFrame)
    assert diff["precision"] == 0.0
    assert diff["selection_rate"] == pytest.approx(a.by_group["selection_rate"].max() - a.by_group["selection_rate"].min())
    with pytest.warns(UserWarning, match="precision is undefined"):
        assert a.ratio()["precision"] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fm.assess(yt, y_pred=yp, sensitive_features=g).difference()     # nothing undefined: no warning


def test_difference_undefined_in_every_group_is_nan(decisions):
    yt, _, g = decisions
    a = fm.assess(yt, y_pred=np.zeros_like(yt), sensitive_features=g)
    with pytest.warns(UserWarning, match="precision is undefined in every group"):
        assert np.isnan(a.difference()["precision"])


@pytest.mark.parametrize("metrics, message", [(3, "metrics must be"), ([3], "unknown metric")])
def test_assess_metrics_of_the_wrong_type(decisions, metrics, message):
    yt, yp, g = decisions
    with pytest.raises(OptionError, match=message):
        fm.assess(yt, y_pred=yp, sensitive_features=g, metrics=metrics)


@pytest.mark.parametrize("fn, message", [
    (lambda a, b: 1.0, "sample_weight"), (lambda a, b, sample_weight=None: np.ones(3), "one number"),
    (lambda a, b, sample_weight=None: "x", "one number"),
])
def test_assess_custom_metric_that_does_not_fit_the_protocol(decisions, fn, message):
    yt, yp, g = decisions
    with pytest.raises(OptionError, match=f"metric 'mine' .*{message}"):
        fm.assess(yt, y_pred=yp, sensitive_features=g, metrics={"mine": fn})


def test_assess_columns_of_different_lengths_are_named(decisions):
    yt, yp, g = decisions
    with pytest.raises(DataError, match="y_true has 10 entries but y_pred has 100"):
        fm.assess(yt[:10], y_pred=yp, sensitive_features=g)


@pytest.mark.parametrize("data", [[1, 2], 3])
def test_assess_data_of_the_wrong_type(decisions, data):
    with pytest.raises(DataError, match="data= must be"):
        fm.assess("y", y_pred="p", sensitive_features="g", data=data)


def test_assess_empty_dict_of_sensitive_features(decisions):
    yt, yp, _ = decisions
    with pytest.raises(DataError, match="sensitive_features"):
        fm.assess(yt, y_pred=yp, sensitive_features={})


# -- result files ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    res = fm.SaddleProblem.matrix_game(np.random.default_rng(0).standard_normal((5, 2, 2))).solve(method="exact")
    base = tmp_path_factory.mktemp("res") / "r"
    res.save(base)
    return res, base


def test_saved_results_follow_the_umask(saved, tmp_path):
    res = saved[0]
    old = os.umask(0o022)
    try:
        paths = res.save(tmp_path / "r")
    finally:
        os.umask(old)
    neighbour = tmp_path / "other.txt"
    neighbour.write_text("x")
    for p in paths:
        assert stat.S_IMODE(os.stat(p).st_mode) == stat.S_IMODE(os.stat(neighbour).st_mode) == 0o644


@pytest.mark.parametrize("damage", ["empty_npz", "bad_float", "json_dir"])
def test_damaged_result_files_are_result_file_errors(saved, tmp_path, damage):
    _, base = saved
    target = tmp_path / "d"
    j, n = base.with_suffix(".json").read_text(), base.with_suffix(".npz").read_bytes()
    if damage == "json_dir":
        (tmp_path / "d.json").mkdir()
    else:
        doc = json.loads(j)
        if damage == "bad_float":
            doc["objective"] = {"__float__": "abc"}
        (tmp_path / "d.json").write_text(json.dumps(doc))
    (tmp_path / "d.npz").write_bytes(b"" if damage == "empty_npz" else n)
    with pytest.raises(ResultFileError, match=str(target.name)):
        fm.load_result(target)


@pytest.mark.parametrize("path", [3, None])
def test_load_result_path_of_the_wrong_type(path):
    with pytest.raises(ResultFileError, match="path"):
        fm.load_result(path)


def test_save_into_a_directory_path_or_under_a_file(saved, tmp_path):
    res = saved[0]
    with pytest.raises(ResultFileError, match="is a directory"):
        res.save(tmp_path)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ResultFileError, match="not a directory"):
        res.save(tmp_path / "f" / "r")
    with pytest.raises(FairmodelError, match="overwrite must be True or False"):
        res.save(tmp_path / "r", overwrite="no")


# -- solving, judging, sweeping -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gdro(small):
    data, w, l1, _ = small
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(l1, data.groups)))), w


def test_solve_and_judge_arguments_of_the_wrong_kind(gdro):
    prob, w = gdro
    with pytest.raises(OptionError, match="callback must be a callable"):
        prob.solve("stochastic", epochs=2, callback=3)
    with pytest.raises(ModelError, match="candidate for 'w' must be an array of numbers"):
        prob.evaluate(w="a")
    with pytest.raises(OptionError, match="judge needs a fm.Problem"):
        fm.judge(None, {"w": np.zeros(3)})
    with pytest.raises(OptionError, match="exact_options must be a dict"):
        fm.crosscheck(prob, exact_options=3)
    with pytest.raises(ModelError, match="intercept must be True or False"):
        fm.Weights(3, intercept="no")


@pytest.mark.parametrize("values", ["abc", None, 3])
def test_sweep_values_that_are_not_a_list(gdro, values):
    prob, _ = gdro
    with pytest.raises(ModelError, match="values must be a list"):
        fm.sweep(lambda v: prob, values)


def test_sweep_build_that_is_not_callable():
    with pytest.raises(OptionError, match="build must be a callable"):
        fm.sweep(3, [1, 2])


def test_error_rate_gaps_with_one_group_are_refused(small):
    data, w, _, _ = small
    one = fm.Dataset(data.X, data.y, ["a"] * data.n_samples)
    for gap in (fm.equal_opportunity_gap, fm.equalized_odds_gap):
        with pytest.raises(DataError, match="the gap compares groups, but the sensitive attribute has 1 group"):
            gap(one.score(w), one)


def test_constructors_with_operands_of_the_wrong_kind(small):
    data, _, _, _ = small
    with pytest.raises(ModelError, match="Box bounds must be numbers"):
        fm.Box("a", 1, size=2)
    with pytest.raises(ExpressionTypeError, match="with_group_interactions needs a fairmodel.Dataset"):
        fm.with_group_interactions(data.X)
    with pytest.raises(ModelError, match="for several classes use fm.softmax_loss"):
        fm.logistic_loss(data.score(fm.Weights(3, n_outputs=3)), data.y)


def test_assess_without_rows():
    with pytest.raises(DataError, match="no rows to assess"):
        fm.assess(np.array([], int), y_pred=np.array([], int), sensitive_features=np.array([], str))
