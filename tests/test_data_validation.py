"""Data that cannot mislead: missing or colliding group labels, duplicated or misplaced columns, ID-like
categorical columns, complex numbers, mistyped problem-file options and badly scaled features.

Each test reproduces a reported fault (it failed before the fix) and then checks the new behaviour."""
import warnings
from pathlib import Path

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.data.dataset import Groups, encode_columns
from fairmodel.frontends import problemfile
from fairmodel.frontends.problemfile import ProblemFileError

pd = pytest.importorskip("pandas")
ROOT = Path(__file__).resolve().parent.parent


# -- 1. missing group labels ------------------------------------------------------------------------------
@pytest.mark.parametrize("labels", [
    ["a", None, "b", None],
    np.array(["a", np.nan, "b", np.nan], dtype=object),
    np.array([0.0, np.nan, 1.0, np.nan]),
    pd.Series(["a", pd.NA, "b", pd.NA], dtype="string"),
    pd.Series(["a", None, "b", None], dtype="category"),
    ["a", "", "b", " "],
], ids=["None", "nan-object", "nan-float", "pd.NA", "category-nan", "empty-string"])
def test_missing_group_labels_are_refused_with_count_and_first_row(labels):
    with pytest.raises(fm.DataError, match=r"in group labels: 2 \(None, NaN or blank\), the first at row 1"):
        Groups(labels)
    with pytest.raises(fm.DataError, match="missing values in group labels: 2"):
        fm.Dataset(np.arange(4.0)[:, None], groups=labels)


def test_complete_labels_of_every_kind_still_encode():
    assert Groups(pd.Series(["a", "b", "a"], dtype="category")).names == ("a", "b")
    assert Groups(np.array([0.5, 1.5, 0.5])).names == (0.5, 1.5)
    assert Groups([("F", 1), ("M", 0)]).n_groups == 2


# -- 2. labels that read the same as text -----------------------------------------------------------------
def test_labels_that_collide_as_text_are_refused():
    """Reports key group risks by str(name): 1 and '1' would merge there, so Groups refuses them."""
    with pytest.raises(fm.DataError, match=r"read as the same text: 1 and '1'"):
        Groups([1, "1", 2, "1"])
    with pytest.raises(fm.DataError, match=r"1 and '1'"):
        fm.Dataset(np.ones((3, 1)), groups=[1, "1", 1])
    with pytest.raises(fm.DataError, match=r"same text: 1 and '1'"):
        Groups(np.zeros(2, dtype=int), names=[1, "1"])
    assert Groups([1, "a", 2]).n_groups == 3  # mixed types that stay distinct are fine


# -- 3. duplicated column names ---------------------------------------------------------------------------
def test_from_frame_refuses_duplicate_column_names():
    df = pd.DataFrame([[1.0, 2.0, 0.0], [3.0, 4.0, 1.0]], columns=["a", "a", "y"])
    with pytest.raises(fm.DataError, match=r"duplicated column name.*'a' \(2 times\)"):
        fm.Dataset.from_frame(df, target="y")


# -- 4. the target or the sensitive column among the features -----------------------------------------------
def test_from_frame_refuses_target_and_sensitive_features():
    df = pd.DataFrame({"age": [20.0, 30.0, 40.0], "sex": ["F", "M", "F"], "y": [1.0, 0.0, 1.0]})
    with pytest.raises(fm.DataError, match="target column 'y' is listed among the features"):
        fm.Dataset.from_frame(df, target="y", features=["age", "y"])
    with pytest.raises(fm.DataError, match="sensitive column 'sex' is listed among the features.*drop_sensitive"):
        fm.Dataset.from_frame(df, target="y", sensitive="sex", features=["age", "sex"])
    data = fm.Dataset.from_frame(df, target="y", sensitive="sex", features=["age", "sex"], drop_sensitive=False)
    assert data.feature_names == ("age", "sex=F", "sex=M")


# -- 5. ID-like categorical columns ---------------------------------------------------------------------------
def test_high_cardinality_categorical_columns_are_refused():
    n = 300
    df = pd.DataFrame({"id": [f"user{i}" for i in range(n)], "x": np.arange(n, dtype=float) % 7,
                       "y": np.arange(n) % 2})
    with pytest.raises(fm.DataError, match=r"column 'id' has 300 distinct values in 300 rows.*drop it or bin it"):
        fm.Dataset.from_frame(df, target="y")
    ids = np.array([f"u{i}" for i in range(1001)])
    with pytest.raises(fm.DataError, match="1001 distinct values"):
        encode_columns({"id": np.tile(ids, 3)}, ["id"])
    X, names = encode_columns({"job": np.array(["a", "b", "a"] * 50)}, ["job"])  # few categories: fine
    assert names == ["job=a", "job=b"] and X.sum() == 150


# -- 6. complex numbers -----------------------------------------------------------------------------------
def test_complex_input_is_refused():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # before the fix: a ComplexWarning, the imaginary part dropped
        with pytest.raises(fm.DataError, match="X must be real.*complex"):
            fm.Dataset(np.array([[1 + 2j], [2.0]]))
        with pytest.raises(fm.DataError, match="y must be real.*complex"):
            fm.Dataset(np.ones((2, 1)), y=np.array([1j, 1.0]))
        with pytest.raises(fm.DataError, match="group labels must not be complex"):
            fm.Dataset(np.ones((2, 1)), groups=np.array([1j, 1.0]))


# -- problem files (items 1, 3, 4, 5, 7) ---------------------------------------------------------------------
def write_problem(tmp_path, data_lines, header="f1,f2,group,label", rows=None):
    rng = np.random.default_rng(0)
    if rows is None:
        rows = [f"{a:.3f},{b:.3f},{'ab'[i % 2]},{i % 2}" for i, (a, b) in enumerate(rng.normal(size=(40, 2)))]
    (tmp_path / "d.csv").write_text("\n".join([header] + rows) + "\n")
    path = tmp_path / "p.toml"
    path.write_text("[data]\n" + "\n".join(data_lines) + "\n[problem]\nfamily = \"gdro\"\n")
    return path


def load(path):
    return problemfile.load_data(problemfile.read(path))


BASE = ['csv = "d.csv"', 'target = "label"', 'sensitive = "group"']


def test_problem_file_csv_with_missing_cells(tmp_path):
    rows = ["0.1,0.2,a,1", "0.3,0.1,,0", "0.2,0.5,b,1", "0.4,0.3,NA,0"]
    with pytest.raises(ProblemFileError, match=r"\[data\] sensitive: missing values in column 'group': 2 "
                                               r"\(blank or NA, .*first at row 1 \(line 3 of d.csv\)"):
        load(write_problem(tmp_path, BASE, rows=rows))
    rows = ["0.1,0.2,a,1", "0.3,,b,0"]  # before: "column 'f2' is not numeric; list it in categorical"
    with pytest.raises(ProblemFileError, match=r"\[data\] features: missing values in column 'f2': 1 .*row 1"):
        load(write_problem(tmp_path, BASE, rows=rows))


def test_problem_file_csv_with_a_duplicated_header(tmp_path):
    with pytest.raises(ProblemFileError, match=r"\[data\] csv: .*duplicated column name.*'f1' \(2 times\)"):
        load(write_problem(tmp_path, BASE, header="f1,f1,group,label"))


@pytest.mark.parametrize("features, message", [
    ('["f1", "label"]', "target column 'label' is listed among the features"),
    ('["f1", "group"]', "sensitive column 'group' is listed among the features; set include_sensitive = true"),
])
def test_problem_file_features_exclude_target_and_sensitive(tmp_path, features, message):
    with pytest.raises(ProblemFileError, match=r"\[data\] features: " + message):
        load(write_problem(tmp_path, BASE + [f"features = {features}"]))


def test_problem_file_include_sensitive_and_standardize_for_csv(tmp_path):
    lines = BASE + ["include_sensitive = true", 'categorical = ["group"]', "standardize = true"]
    data = load(write_problem(tmp_path, lines))
    assert data.feature_names == ("f1", "f2", "group=a", "group=b")
    assert np.allclose(data.X[:, :2].mean(axis=0), 0) and np.allclose(data.X[:, :2].std(axis=0), 1)
    assert set(np.unique(data.X[:, 2:])) == {0.0, 1.0}  # one-hot columns are not standardized
    assert load(write_problem(tmp_path, BASE)).feature_names == ("f1", "f2")


def test_problem_file_id_column(tmp_path):
    rows = [f"{i},0.5,{'ab'[i % 2]},{i % 2},u{i}" for i in range(200)]
    path = write_problem(tmp_path, BASE + ['categorical = ["id"]'], header="f1,f2,group,label,id", rows=rows)
    with pytest.raises(ProblemFileError, match=r"\[data\] features: column 'id' has 200 distinct values"):
        load(path)


@pytest.mark.parametrize("line, message", [
    ('include_sensitive = "false"', "include_sensitive: must be a bool"),
    ('standardize = "no"', "standardize: must be a bool"),
    ("target = 1", "target: must be a str"),
    ('encoding = ["a9a"]', "encoding: must be a str"),
])
def test_bundled_data_options_are_type_checked(tmp_path, line, message):
    """Before the fix, [data] options went to the bundled loaders unchecked: "false" was read as true."""
    with pytest.raises(ProblemFileError, match=r"\[data\] " + message):
        load(write_problem(tmp_path, ['name = "lawschool"', line]))


def test_bundled_loaders_refuse_non_boolean_flags():
    """load_lawschool(include_sensitive="false") used to keep the sensitive column (a non-empty string is true)."""
    with pytest.raises(fm.DataError, match="include_sensitive must be True or False; got 'false'"):
        fm.datasets.load_lawschool(include_sensitive="false")
    with pytest.raises(fm.DataError, match="standardize must be True or False; got 0"):
        fm.datasets.load_communities(standardize=0)


@pytest.mark.parametrize("line, message", [
    ('features = ["f1", 2]', "features: must be a list of strings"),
    ('categorical = "group"', "categorical: must be a list of strings"),
    ('split = [0.5, "half"]', "split: must be a list of numbers"),
    ('encoding = "a9a"', "encoding: only for bundled data sets"),
    ('include_sensitive = "yes"', "include_sensitive: must be a bool"),
])
def test_csv_data_options_are_type_checked(tmp_path, line, message):
    with pytest.raises(ProblemFileError, match=r"\[data\] " + message):
        load(write_problem(tmp_path, BASE + [line]))


# -- 8. badly scaled features -------------------------------------------------------------------------------
def test_badly_scaled_features_warn_naming_the_columns():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=200), 5e4 * rng.normal(size=200), rng.normal(size=200)])
    with pytest.warns(UserWarning, match=r"badly scaled.*income \(std 5.*standardize"):
        fm.Dataset(X, feature_names=["age", "income", "height"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fm.Dataset(X / np.array([1, 5e4, 1]))
        fm.Dataset(np.column_stack([X[:, :1], np.zeros(200)]))  # constant columns do not count
        fm.Dataset(np.array([[1e150, 1.0], [-1e150, 2.0], [1.0, 1e150]]))  # no overflow in the check itself


def test_bundled_data_and_generators_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for sensitive in ("sex", "race", "sex_race"):  # the data of `fairmodel demo`
            fm.datasets.load_adult(sensitive=sensitive)
        fm.datasets.load_adult(encoding="a9a")
        fm.datasets.load_adult(target="age", encoding="dp", standardize=False)
        fm.datasets.load_lawschool(standardize=False)
        fm.datasets.load_communities()
        fm.datasets.make_gdro_synthetic(m=3, d=5, n_per_group=40, seed=0)
        fm.datasets.make_auc_synthetic()
        fm.datasets.make_strategic_synthetic(seed=0)
        fm.datasets.make_skewed_synthetic(200, seed=0)
        for path in sorted((ROOT / "examples" / "problems").glob("*.toml")):
            problemfile.load(path)


@pytest.mark.parametrize("header, rows, message", [
    ("f1;f2;group;label", ["0.1;0.2;a;1"], "it seems to be separated by ';'"),
    ("f1,,group,label", None, r"column\(s\) \[2\] of the header have no name"),
    ("f1,f2,group,label", ["0.1,0.2,a,1", "0.3,0.1,b"], "line 3 has 3 fields; every row must have 4"),
    ("f1,f2,group,label", [], "has no data rows"),
])
def test_problem_file_csv_layout_errors_name_the_line_or_column(tmp_path, header, rows, message):
    with pytest.raises(ProblemFileError, match=message):
        load(write_problem(tmp_path, BASE, header=header, rows=rows))


def test_problem_file_csv_blank_last_lines_bom_and_encoding(tmp_path):
    path = write_problem(tmp_path, BASE)
    csv_file = tmp_path / "d.csv"
    text = csv_file.read_text()
    csv_file.write_text(text + "\n\n")                       # blank lines at the end are not rows
    assert load(path).n_samples == 40
    csv_file.write_bytes(("\ufeff" + text).encode("utf-8"))  # a byte-order mark is not part of the first name
    assert load(path).feature_names[0] == "f1"
    csv_file.write_bytes(text.replace("a,", "\xe9,", 1).encode("latin-1"))
    with pytest.raises(ProblemFileError, match="not UTF-8 text .*save it as UTF-8"):
        load(path)
