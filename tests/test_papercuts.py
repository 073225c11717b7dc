"""The small things a lecturer meets first: `fairmodel --version`, the LICENSE, figures whose bound lines sit on
their bars and whose legends, titles and tick labels cover nothing, outputs that name the paper of every equation,
checks without a bound shown as reported (not "pass"), DP results that say what their objective is, no "± nan"
for one split, tables printed whole, and docs that match what the library prints."""
import math
import re
import runpy
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.families.base import Check
from fairmodel.frontends import cli, problemfile

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"\b(19|20)\d\d\b")                          # an author-year citation in the same text
REFERENCE = re.compile(r"\(\d+\)|\b(Lemma|Theorem|Thm|Algorithm|Proposition|Remark)\b")


def test_version_and_license(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"fairmodel {fm.__version__}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "fairmodel._version.__version__"}
    assert project["project"]["license"] == {"text": "BSD-3-Clause"}
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License") and "Neither the name of the copyright holder" in text


# -- figures ----------------------------------------------------------------------------------------------------
@pytest.fixture
def plt():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot
    yield pyplot
    pyplot.close("all")


def _extent(artist, fig):
    return artist.get_window_extent(fig.canvas.get_renderer())


def test_bound_lines_span_their_bars_and_the_legend_covers_nothing(plt):
    from fairmodel.results.plotting import plot_results, plot_values
    results = {label: fm.Result(status="optimal", objective=obj, name="a long problem title that must wrap " * 3,
                                constraints={"c0": {"value": v, "bound": 0.3, "violation": 0.0},
                                             "c1": {"value": v / 2, "bound": 0.2, "violation": 0.0}})
               for label, obj, v in (("exact", 0.5, 0.29), ("stochastic", 0.52, 0.3))}
    fig = plot_values(results)
    ax = fig.axes[0]
    bars = ax.patches
    width = bars[0].get_width()
    for j, line in enumerate(ax.collections, start=1):          # one bound line per constraint
        (x0, _), (x1, _) = line.get_segments()[0]
        group = [b for b in bars if j - 0.01 <= b.get_x() + b.get_width() / 2 < j + 0.8]    # the bars of j
        assert x0 == pytest.approx(min(b.get_x() for b in group)) and x1 == pytest.approx(
            max(b.get_x() + width for b in group))
    fig.canvas.draw()
    legend = _extent(ax.get_legend(), fig)
    for bar in bars:
        assert not legend.overlaps(_extent(bar, fig)), "the legend covers a bar"
    for line in ax.collections:
        (x0, y0), (x1, y1) = ax.transData.transform(line.get_segments()[0])
        assert not (x0 < legend.x1 and x1 > legend.x0 and legend.y0 <= y0 <= legend.y1), "the legend covers a bound"
    title = _extent(ax.title, fig)
    assert title.y1 <= fig.bbox.y1 + 1 and title.x0 >= -1 and title.x1 <= fig.bbox.x1 + 1, "the title leaves the figure"
    risks = {label: fm.Result(status="optimal", objective=0.4, name="t",
                              metrics={"group_risks": {"A": 0.4, "B": 0.35, "C": 0.39}}) for label in ("exact", "sgd")}
    fig = plot_results(risks)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_title().startswith("t: group risks")
    assert not any(_extent(ax.get_legend(), fig).overlaps(_extent(b, fig)) for b in ax.patches)


def test_strategic_dro_example_figure_has_no_overlapping_tick_labels(plt):
    module = runpy.run_path(str(ROOT / "examples" / "strategic_dro.py"), run_name="strategic_dro_figure")
    queries = [2000 * 2 ** k for k in range(6)]
    curves = {(m, o): [(q * (1 + o), 1.0 / (1 + k)) for k, q in enumerate(queries)]
              for m in ("ogda-rr", "ogda-wr", "sgda-rr", "sgda-wr") for o in (0, 1)}
    fig = module["plot_gap_vs_queries"](curves)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
    boxes = sorted((_extent(t, fig) for t in labels), key=lambda b: b.x0)
    assert len(boxes) >= 3
    for left, right in zip(boxes, boxes[1:]):
        assert left.x1 < right.x0, "two tick labels overlap"
    assert not any(t.get_text() for t in ax.xaxis.get_minorticklabels())
    legend = _extent(ax.get_legend(), fig)
    assert legend.x0 >= _extent(ax, fig).x1 - 1, "the legend lies on the lines"


# -- checks and messages ------------------------------------------------------------------------------------------
def test_a_check_without_a_bound_is_reported_not_passed():
    reported = Check("spread of local solutions", 0.02, math.inf, "reported, not enforced")
    assert reported.verdict == "reported" and Check("x", 0.1, 1.0, "r").verdict == "pass"
    assert Check("x", 2.0, 1.0, "r").verdict == "FAIL" and Check("x", math.nan, 1.0, "r").verdict == "not computed"
    res = fm.Result(status="optimal", objective=1.0)
    report = fm.CrossCheckReport(exact=res, stochastic=res, checks=[reported], family="partial")
    row = next(line for line in report.to_markdown().splitlines() if line.startswith("| spread"))
    assert "| reported |" in row and "pass" not in row and "inf" not in row
    assert "pass" not in report._repr_html_().split("spread of local solutions")[1].split("</tr>")[0]


def test_checks_and_describe_name_the_paper_of_every_equation():
    data = fm.datasets.make_gdro_synthetic(m=3, d=4, n_per_group=40, seed=0)
    w = fm.Weights(4, radius=2.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    report = fm.crosscheck(prob, seed=0, stochastic_options={"epochs": 20})
    texts = [c.name for c in report.checks] + [c.reason for c in report.checks]
    texts += [c["name"] for r in (report.exact, report.stochastic) for c in r.checks]
    texts += [c["reason"] for r in (report.exact, report.stochastic) for c in r.checks]
    methods_and_notes = prob.describe().split("Exact backend:")[1].split("\nExact program")[0]
    texts += [line for line in methods_and_notes.splitlines() if line.strip()]
    game = fm.SaddleProblem.matrix_game(np.ones((2, 2, 2)))
    texts += [line for line in game.describe().split("Exact backend:")[1].splitlines() if line.strip()]
    uncited = [t for t in texts if REFERENCE.search(t) and not CITED.search(t)]
    assert not uncited, f"equations without their paper: {uncited}"
    assert "duality gap, eq. (13) of Yu et al. 2024" in [c["name"] for c in report.stochastic.checks]


def test_describe_warns_of_no_program_the_default_method_does_not_build():
    data = fm.datasets.load_adult(sensitive="race")
    w = fm.Weights(data.n_features, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    with warnings.catch_warnings():
        warnings.simplefilter("error", fm.SlowSolveWarning)
        text = prob.describe()
    assert "Exact program of method 'epigraph' (not built by the default method 'dual'; " in text
    assert "solving it: the group-DRO epigraph program may take" in text
    with pytest.warns(fm.SlowSolveWarning, match="may take"):   # solving it still warns
        prob.family.to_cvxpy()


# -- results ------------------------------------------------------------------------------------------------------
def test_dp_results_say_their_objective_includes_the_entropy_term_and_show_the_risk():
    rng = np.random.default_rng(1)
    tau = rng.dirichlet([2, 3], size=300)
    eta = np.clip(0.8 * tau[:, 0] - 0.4 + 0.2 * rng.normal(size=300), -1, 1)
    post = fm.GridPredictor(eta=eta, tau=tau, L=5, B=1)
    res = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.05], entropy=0.05).solve()
    m = res.metrics
    assert res.objective == pytest.approx(m["risk"] + m["entropy_term"], abs=1e-12) and m["entropy_term"] < 0
    lines = res.summary().splitlines()
    assert "R_beta = the squared risk + the entropy term" in lines[1] and "Chzhen, Hebiri, Taturyan 2024" in lines[1]
    assert lines[2].split() == ["risk", f"{m['risk']:.6g}"]
    assert lines[3].split() == ["entropy", "term", f"{m['entropy_term']:.6g}"]
    assert ["risk", fm.utilities.display.fmt(m["risk"], 6)] in res._table_rows()


def test_one_split_prints_no_nan_interval(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["x"])
    partial = runpy.run_path(str(ROOT / "examples" / "partial_fairness.py"), run_name="partial_fairness_table")
    one = [{"dataset": "lawschool", "model": "pdp", "method": "IDCA", "param": "0.1", "splits": 1,
            "fairness": 0.9, "fairness_ci": math.nan, "accuracy": 0.8, "accuracy_ci": math.nan, "auc": 0.7,
            "auc_ci": math.nan}]
    table = partial["markdown"](one)
    assert "nan" not in table and "±" not in table.split("\n", 2)[2] and "One split" in table
    two = [dict(one[0], splits=2, fairness_ci=0.01, accuracy_ci=0.02, auc_ci=0.03)]
    assert "0.900 ± 0.010" in partial["markdown"](two)
    dp = runpy.run_path(str(ROOT / "examples" / "dp_postprocessing_reproduction.py"), run_name="dp_table")
    assert dp["pm"](0.5, 0.0, 1) == "0.5000" and dp["pm"](0.5, 0.1, 3) == "0.5000 +- 0.1000"


def test_an_assessment_prints_every_column():
    rng = np.random.default_rng(0)
    y = rng.choice([-1, 1], 400)
    pred = np.where(rng.random(400) < 0.7, y, -y)
    a = fm.assess(y, y_pred=pred, scores=pred + rng.normal(size=400), sensitive_features={"g": rng.choice(["a", "b"],
                                                                                                       400)})
    text = str(a)
    assert "..." not in text
    for name in a.metrics:
        assert name in text.splitlines()[0]
    assert [line.split()[0] for line in text.splitlines()[1:]] == ["a", "b", "overall", "difference", "ratio"]


# -- docs that match the output ---------------------------------------------------------------------------------
def test_getting_started_shows_the_default_methods_and_the_labels_printed():
    doc = (ROOT / "docs" / "getting-started.md").read_text()
    data = fm.datasets.load_lawschool(target="bar1", sensitive="race")
    train, _ = data.split([0.7, 0.3], seed=0)
    w = fm.Weights(train.n_features, radius=5.0, intercept=True)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(train.score(w), train.y), train.groups))))
    exact, stochastic = (prob.reduction_for(b, None)[1] for b in ("exact", "stochastic"))
    assert f"| method | {exact} | {stochastic} |" in doc
    assert f"{prob.label} / exact / {exact}: status optimal" in doc and f"### Cross-check: {prob.label} — OK" in doc
    for line in str(prob).splitlines():                  # the formulation as printed
        assert line in doc


def test_teaching_counts_the_constraints_describe_prints():
    doc = (ROOT / "docs" / "teaching.md").read_text()
    claimed = int(re.search(r"The exact program has only (\d+) scalar constraints", doc).group(1))
    prob, _, _ = problemfile.load(ROOT / "examples" / "problems" / "auc_fairness.toml")
    printed = re.search(r"Exact program \((\d+) scalar variables, (\d+) scalar constraints", prob.describe())
    assert claimed == int(printed.group(2))


def test_assessment_doc_shows_the_tables_to_markdown_prints():
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression
    doc = (ROOT / "docs" / "assessment.md").read_text()
    data = fm.datasets.load_adult(sensitive="sex_race")
    train, test = data.split([0.5, 0.5], seed=0)
    scores = LogisticRegression(max_iter=1000).fit(train.X, train.y).decision_function(test.X)
    sex = np.asarray(test.groups.names)[test.groups.codes][:, 0]
    before = fm.assess(test.y, y_pred=np.where(scores > 0, 1, -1), scores=scores, sensitive_features={"sex": sex},
                       metrics=["selection_rate", "true_positive_rate", "false_positive_rate", "accuracy", "auc"])
    values = before.to_markdown()
    assert values in doc                                      # the table of values, row by row, as printed
    before.ci(level=0.95, n_boot=1000, seed=0)
    intervals = before.to_markdown().split("\n\n", 1)[1]
    assert intervals in doc


def test_a_plain_mean_on_a_subset_with_empty_groups_is_judged_and_certified():
    """``take`` keeps the data set's group names, so a subset of one group has empty groups; a plain mean does not use
    them, but the judge's accuracy (0.2 % of the largest group risk) came out NaN from their empty means, no check
    could pass, and ALEG ran to its cap to end inaccurate."""
    data = fm.datasets.load_adult(sensitive="race").subsample(4000, seed=0)
    sub = data.take(np.flatnonzero(data.groups.codes == data.groups.codes[0]))
    assert np.any(np.bincount(sub.groups.codes, minlength=sub.n_groups) == 0)
    w = fm.Weights(sub.n_features, radius=5.0)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(sub.score(w), sub.y))))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)       # the empty groups' metrics are NaN, without a warning
        result = prob.solve(backend="stochastic", seed=0)
    assert result.status == "converged", result.message
