"""Every problem kind first-class: per-group risks of ERM and of compositions with groups, results, cross-check
headings and plot titles named by what was declared (not the reduction that solved it), fm.SaddleProblem with
describe(), backend= and fm.crosscheck, min-max games and compositions (every constraint choice, DSL expressions
parsed without eval) as problem files."""
from pathlib import Path

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.frontends import cli, problemfile
from fairmodel.oracles.losses import Logistic
from tests.latex_check import check_latex


@pytest.fixture(scope="module")
def law():
    return fm.datasets.load_lawschool(target="bar1", sensitive="race").subsample(600, seed=0)


def _write(tmp_path, problem: str, name="p.toml", data=True) -> Path:
    head = ('title = "Law School test"\n[data]\nname = "lawschool"\ntarget = "bar1"\nsensitive = "race"\n'
            'subsample = 600\nseed = 0\n[model]\nradius = 5.0\nintercept = true\n') if data else ""
    path = tmp_path / name
    path.write_text(head + "[problem]\n" + problem)
    return path


def _group_losses(data, theta, intercept=True):
    """The mean logistic loss of every group, computed directly (no DSL)."""
    w, b = (theta[:-1], theta[-1]) if intercept else (theta, 0.0)
    losses = Logistic.phi(data.X @ w + b, data.y)
    return {str(g): float(losses[data.groups.codes == k].mean()) for k, g in enumerate(data.groups.names)}


def test_erm_reports_the_risks_of_the_sensitive_groups_and_is_named_erm(tmp_path, law):
    path = _write(tmp_path, 'family = "erm"\nloss = "logistic"\n')
    prob, data, _ = problemfile.load(path)
    res = prob.solve(backend="exact")
    assert res.family == "gdro" and res.name == "Law School test (ERM)"      # the stable identifier is kept
    expected = _group_losses(data, res.variables["w"])
    assert set(res.metrics["group_risks"]) == {"non-white", "white"}
    for g, v in expected.items():
        assert res.metrics["group_risks"][g] == pytest.approx(v, rel=1e-10)
    assert res.metrics["worst_group"] == max(expected, key=expected.get)
    assert res.summary().startswith("Law School test (ERM) / exact /") and "gdro" not in res.summary()


def test_a_composition_reports_its_group_risks_and_is_named_composition(tmp_path):
    path = _write(tmp_path, 'family = "composition"\nobjective = "mean_risk"\nconstraint = "demographic_parity"\n'
                            'bound = 0.2\n')
    prob, data, _ = problemfile.load(path)
    res = prob.solve(backend="exact")
    assert res.family == "convex" and res.name == "Law School test (composition)"
    for g, v in _group_losses(data, res.variables["w"]).items():
        assert res.metrics["group_risks"][g] == pytest.approx(v, rel=1e-8)
    # the constraint is the spread of the groups' mean scores
    s = data.X @ res.variables["w"][:-1] + res.variables["w"][-1]
    means = [s[data.groups.codes == k].mean() for k in range(data.n_groups)]
    assert res.constraints["demographic_parity"]["value"] == pytest.approx(max(means) - min(means), rel=1e-9)


def test_headings_and_plot_titles_name_what_was_declared(law):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from fairmodel.results.plotting import plot_results
    w = fm.Weights(law.n_features, radius=5.0)
    risks = fm.group_mean(fm.logistic_loss(law.score(w), law.y), law.groups)
    mero = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))), title="Law School")
    report = fm.crosscheck(mero, seed=0, exact_options={"method": "dual"}, stochastic_options={"epochs": 5})
    assert report.to_markdown().startswith("### Cross-check: Law School (MERO) — ")
    assert report.family == "gdro" and report.to_dict()["name"] == "Law School (MERO)"
    assert plot_results({"exact": report.exact}).axes[0].get_title().startswith("Law School (MERO)")
    erm = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(law.score(w), law.y))))
    assert erm.label == "ERM" and fm.Problem(fm.Minimize(fm.max(risks))).label == "group DRO"
    dc = fm.Problem(fm.Minimize(fm.sum_squares(w)), [fm.dc(fm.sum_squares(w), fm.norm(w)) <= 1.0])
    assert dc.family.name == "partial" and dc.label == "DC constraints"
    plt.close("all")


def test_saved_results_keep_the_name(tmp_path, law):
    w = fm.Weights(law.n_features, radius=5.0)
    res = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(law.score(w), law.y))), title="t").solve()
    res.save(tmp_path / "r")
    assert fm.load_result(tmp_path / "r").name == "t (ERM)"
    res.name = ""
    res.save(tmp_path / "r", overwrite=True)
    assert fm.load_result(tmp_path / "r").label == "gdro"


# -- SaddleProblem ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def game():
    return fm.SaddleProblem.matrix_game(np.random.default_rng(0).standard_normal((20, 3, 3)))


def test_saddle_problem_describes_itself_in_three_formats(game):
    text = game.describe()
    assert "minimize  max_(y in Y) (1/20) sum_i L_i(x, y)" in text
    assert "X = {x in R^3 : x >= 0, sum_j x_j = 1}" in text and "L_i(x, y) = x^T A_i y" in text
    assert "ogda-rr" in text and "exact" in text and "duality gap" in text
    from fairmodel.utilities import display as _display
    check_latex(_display.latex_document(game.describe("latex")))
    assert "$$" in game.describe("markdown")
    user = fm.SaddleProblem(lambda x, y, i: float(x @ y), 4, fm.Ball(2, 1.0), fm.Box(-1, 1, size=2))
    assert "the value callable" in user.describe() and "no duality gap" in user.describe()
    check_latex(_display.latex_document(user.describe("latex")))
    with pytest.raises(fm.OptionError, match="format"):
        game.describe("html")


def test_saddle_problem_takes_backend_and_crosschecks(game):
    exact = game.solve(backend="exact")
    assert exact.method == "exact" and exact.certificate["duality_gap"] < 1e-6
    stochastic = game.solve(backend="stochastic", seed=0, epochs=200)
    assert stochastic.method == "ogda-rr" and stochastic.backend == "stochastic"
    with pytest.raises(fm.OptionError, match="one method, 'exact'"):
        game.solve(backend="exact", method="ogda-rr")
    with pytest.raises(fm.OptionError, match="exact backend"):
        game.solve(backend="stochastic", method="exact")
    report = fm.crosscheck(game, seed=0)
    assert report.ok and report.family == "minmax"
    assert report.to_markdown().startswith("### Cross-check: min-max: matrix game — OK")
    gap = {c.name: c.value for c in report.checks}
    assert gap["duality gap of the stochastic result"] == report.stochastic.certificate["duality_gap"]
    # the exact primal value is the saddle value: the stochastic one cannot be lower (up to the solver)
    assert report.stochastic.objective >= report.exact.objective - 1e-6


def test_a_user_saddle_problem_without_an_exact_method_is_refused_by_crosscheck_with_the_reason():
    user = fm.SaddleProblem(lambda x, y, i: float(x @ y), 4, fm.Ball(2, 1.0), fm.Box(-1, 1, size=2))
    report = fm.crosscheck(user, seed=0)
    assert not report.ok and report.exact.status == "failed"
    assert "no duality gap for the judge" in report.exact.message and "no grad=" not in report.exact.message
    assert "method='exact'" not in report.exact.message


def test_min_max_games_as_problem_files(tmp_path, capsys):
    path = _write(tmp_path, 'family = "saddle"\ngame = "matrix"\nA = [[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], '
                            '[1.0, -1.0, 0.0]]\n', data=False)
    prob, data, _ = problemfile.load(path)
    assert data is None and prob.title is None
    res = prob.solve(backend="exact")
    assert res.objective == pytest.approx(0.0, abs=1e-7)           # rock-paper-scissors has value 0
    np.testing.assert_allclose(res.variables["x"], np.full(3, 1 / 3), atol=1e-6)
    quad = _write(tmp_path, 'family = "saddle"\ngame = "quadratic"\nn = 6\nd = 3\nm = 2\nseed = 1\n', "q.toml",
                  data=False)
    assert cli.main(["crosscheck", str(quad)]) == 0
    assert "Cross-check: min-max: quadratic game — OK" in capsys.readouterr().out
    bad = _write(tmp_path, 'family = "saddle"\ngame = "matrix"\nmu = 0.5\n', "b.toml", data=False)
    with pytest.raises(problemfile.ProblemFileError, match="mu: only for game = \"quadratic\""):
        problemfile.load(bad)
    with_data = _write(tmp_path, 'family = "saddle"\n', "d.toml")
    with pytest.raises(problemfile.ProblemFileError, match="takes no data"):
        problemfile.load(with_data)


# -- compositions ------------------------------------------------------------------------------------------------
def test_a_composition_without_a_constraint_is_refused_with_the_choices(tmp_path):
    path = _write(tmp_path, 'family = "composition"\nobjective = "max_group_risk"\n')
    with pytest.raises(problemfile.ProblemFileError, match="constraint: missing; choose one of demographic_parity, "
                                                           "equal_opportunity"):
        problemfile.load(path)
    none = _write(tmp_path, 'family = "composition"\nconstraint = "none"\nbound = 0.1\n', "n.toml")
    with pytest.raises(problemfile.ProblemFileError, match="bound: no preset constraint takes it"):
        problemfile.load(none)


@pytest.mark.parametrize("kind", ["demographic_parity", "equal_opportunity", "equalized_odds", "auc_gap",
                                  "covariance", "group_loss", "none"])
def test_every_composition_constraint_builds_and_describes(tmp_path, kind):
    bound = "" if kind == "none" else "bound = 0.5\n"
    prob, _, _ = problemfile.load(_write(tmp_path, f'family = "composition"\nconstraint = "{kind}"\n{bound}'))
    if kind == "none":    # group DRO without constraints: the paper family recognizes it
        assert prob.family.name == "gdro" and not prob.constraints and prob.label == "Law School test (group DRO)"
    else:
        assert prob.family.name == "convex" and "subject to" in str(prob) and len(prob.constraints) >= 1


def test_dsl_expressions_in_a_problem_file_build_the_same_declaration_as_the_presets(tmp_path):
    preset, data, _ = problemfile.load(_write(tmp_path, 'family = "composition"\nobjective = "max_group_risk"\n'
                                                        'constraint = "equal_opportunity"\nbound = 0.05\n'))
    written, _, _ = problemfile.load(_write(tmp_path, (
        'family = "composition"\nobjective = "max(group_mean(loss, groups))"\n[problem.constraints]\n'
        'equal_opportunity = "max(group_mean(score, groups, where=y > 0)) - min(group_mean(score, groups, '
        'where=y > 0)) <= 0.05"\n'), "e.toml"))
    assert str(written) == str(preset)
    theta = np.random.default_rng(0).standard_normal(data.n_features + 1)
    theta *= 4.0 / np.linalg.norm(theta)
    a, b = preset.evaluate(w=theta), written.evaluate(w=theta)
    assert a.objective == b.objective
    assert a.constraints["equal_opportunity"] == b.constraints["equal_opportunity"]
    both, _, _ = problemfile.load(_write(tmp_path, (
        'family = "composition"\nobjective = "mean(loss) + 0.01 * sum_squares(w)"\nconstraint = "group_loss"\n'
        'bound = 0.6\n[problem.constraints]\nodds = "equalized_odds_gap(score, data) <= 0.1"\n'
        'neg = "mean(score, where=~(y > 0)) >= -2"\n'), "b.toml"))
    assert [c.name for c in both.constraints] == ["group_loss", "odds", "neg"]


@pytest.mark.parametrize("text, match", [
    ("__import__('os').system('true')", "cannot be called; the functions are mean"),
    ("__import__('os')", "'__import__' cannot be called"),
    ("w.__class__", "not allowed in a problem-file expression"),
    ("(lambda: 1)()", "cannot be called"),
    ("y[0]", "not allowed"),
    ("open('f')", "'open' cannot be called"),
    ("mean(loss) ** 2", "operator is not allowed"),
    ("mean(nonsense)", "unknown name 'nonsense'"),
    ("mean(loss) <", "not a valid expression"),
    ("mean(loss) < 1", "a constraint is written with <= or >="),
    ("group_mean(loss, groups)", "scalar"),
])
def test_unsafe_or_wrong_expressions_are_refused_with_what_is_allowed(tmp_path, text, match):
    path = _write(tmp_path, f'family = "composition"\nobjective = "{text.replace(chr(34), chr(39))}"\n'
                            f'constraint = "none"\n')
    with pytest.raises(problemfile.ProblemFileError, match=match):
        problemfile.load(path)
