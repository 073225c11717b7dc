"""Sweeps, plots and scikit-learn estimators."""
import numpy as np
import pytest

import fairmodel as fm


@pytest.fixture
def erm_with_budget():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = np.sign(X @ [1.0, -0.5, 0.2, 0.0] + 0.5 * rng.normal(size=120))
    data = fm.Dataset(X, y)
    w = fm.Weights(4)
    k = fm.parameter(1.0, "k", nonneg=True)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(w), data.y))), [fm.norm(w, 1) <= k])
    return prob, k


def test_sweep_reuses_the_compiled_program_and_keeps_finished_values(erm_with_budget):
    prob, k = erm_with_budget
    frontier = prob.sweep("k", [0.1, 0.5, -1.0, 2.0])
    objectives = frontier.column("objective")
    assert objectives[0] > objectives[1] > objectives[3]    # a larger budget can only help
    assert frontier.results[2] is None and "must be >= 0" in frontier.errors[2]
    assert k.value == 1.0                                    # restored after the sweep
    assert frontier.column("constraint:c0")[0] == pytest.approx(0.1, abs=1e-6)
    with pytest.raises(fm.OptionError, match="no parameter 'kappa'; its parameters are k"):
        prob.sweep("kappa", [1.0])


def test_stochastic_sweep_warm_starts(small):
    """fm.sweep over a builder: every stochastic solve after the first starts from the previous solution."""
    data, w, risks = small
    gdro = fm.Problem(fm.Minimize(fm.max(risks)))
    calls = []
    original = gdro.family.warm_start

    def spy(result):
        calls.append(result.objective)
        return original(result)
    gdro.family.warm_start = spy
    frontier = fm.sweep(lambda v: gdro, [1, 2, 3], backend="stochastic", seed=0, epochs=5)
    # five epochs are a starved budget: every value is solved (and judged), and each warm-starts the next
    assert len(calls) == 2 and all(r is not None and r.status in ("completed", "inaccurate") for r in frontier.results)


def test_plots_draw_the_numbers_of_the_results(erm_with_budget, small):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from fairmodel.results import plotting
    prob, _ = erm_with_budget
    frontier = prob.sweep("k", [0.2, 0.6, 1.0])
    fig = frontier.plot()
    xs, ys = fig.axes[0].lines[0].get_data()
    assert np.allclose(xs, [0.2, 0.6, 1.0]) and np.allclose(ys, frontier.column("objective"))

    data, w, risks = small
    gdro = fm.Problem(fm.Minimize(fm.max(risks)))
    res = gdro.solve(backend="stochastic", seed=0, epochs=10)
    opt = gdro.solve().objective
    fig = plotting.plot_convergence({"aleg": res}, x="grad_evals", y="max_risk", optimum=opt)
    line = fig.axes[0].lines[0]
    assert np.allclose(line.get_xdata(), res.history_column("grad_evals"))
    assert np.allclose(line.get_ydata(), np.maximum(res.history_column("max_risk") - opt, 1e-16))

    fig = plotting.plot_group_risks({"aleg": res})
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert np.allclose(heights, list(res.metrics["group_risks"].values()))

    scores = data.X @ res.variables["w"]
    fig = plotting.plot_score_densities(scores, data.groups, band=(0.7, 1.0))
    assert len(fig.axes[0].patches) >= 3
    fig = plotting.plot_prediction_distributions([0, 1, 2], {"a": [0.2, 0.3, 0.5]})
    assert np.allclose(fig.axes[0].lines[0].get_ydata(), [0.2, 0.3, 0.5])


def test_group_dro_classifier_in_a_pipeline_on_a_dataframe():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("sklearn")
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fairmodel.estimators import GroupDROClassifier

    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"age": rng.normal(40, 10, n), "hours": rng.normal(40, 5, n),
                       "job": rng.choice(["a", "b", "c"], n), "group": rng.choice(["g1", "g2"], n)})
    y = np.where(0.1 * (df["age"] - 40) + (df["job"] == "a") + 0.5 * rng.normal(size=n) > 0.3, "yes", "no")
    pre = ColumnTransformer([("num", StandardScaler(), ["age", "hours"]), ("cat", OneHotEncoder(), ["job"])])
    pipe = Pipeline([("pre", pre), ("clf", GroupDROClassifier(backend="exact", method="dual"))])
    pipe.fit(df, y, clf__sensitive_features=df["group"])
    clf = pipe.named_steps["clf"]
    assert set(pipe.predict(df)) <= {"yes", "no"} and clf.groups_ == ["g1", "g2"]
    assert clf.result_.family == "gdro" and clf.result_.status == "optimal"
    assert np.allclose(pipe.predict_proba(df).sum(axis=1), 1.0)
    # the estimator's worst group risk equals the judged objective of its result
    assert max(clf.result_.metrics["group_risks"].values()) == pytest.approx(clf.result_.objective)


def test_default_figure_draws_the_history_when_there_are_no_group_risks(small):
    """plot_results falls back to the convergence of the history (x: first progress column, y: first value
    column) with the exact optimum as a dashed line; the drawn points are the history's numbers."""
    pytest.importorskip("matplotlib")
    import dataclasses

    import matplotlib
    matplotlib.use("Agg")
    from fairmodel.results.plotting import plot_results
    data, w, risks = small
    prob = fm.Problem(fm.Minimize(fm.max(risks)))
    res = dataclasses.replace(prob.solve(backend="stochastic", seed=0, epochs=5), metrics={})
    fig = plot_results({"aleg": res}, optimum=0.5)
    line, optimum = fig.axes[0].lines
    assert np.allclose(line.get_xdata(), res.history_column("grad_evals"))
    assert np.allclose(line.get_ydata(), res.history_column("objective"))
    assert np.allclose(optimum.get_ydata(), 0.5)
    assert fig.axes[0].get_title()                       # every figure has a title
    # no history with a value and no per-group metric: the judged objective (and constraint values) as bars
    fig = plot_results({"x": dataclasses.replace(res, history=[{"epoch": 0}])})
    assert [p.get_height() for p in fig.axes[0].patches] == pytest.approx([res.objective])
    assert fig.axes[0].get_title()
