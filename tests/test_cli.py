"""Command line and problem files: commands, exit codes, JSON output against docs/schema-v1.json, errors."""
import json
from pathlib import Path

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.frontends import cli, problemfile

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "schema-v1.json").read_text())


def validate(doc, schema, root=SCHEMA, where="$"):
    """A small validator for the subset of JSON Schema used by docs/schema-v1.json."""
    if "$ref" in schema:
        return validate(doc, root["$defs"][schema["$ref"].split("/")[-1]], root, where)
    if "oneOf" in schema:
        errors = []
        for option in schema["oneOf"]:
            try:
                validate(doc, option, root, where)
                return
            except AssertionError as exc:
                errors.append(str(exc))
        raise AssertionError(f"{where}: matches no option: {errors}")
    if "enum" in schema:
        assert doc in schema["enum"], f"{where}: {doc!r} not in {schema['enum']}"
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        py = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
              "number": (int, float)}
        assert any(isinstance(doc, py[t]) and not (t == "number" and isinstance(doc, bool)) for t in types), \
            f"{where}: {type(doc).__name__} is not {types}"
    if isinstance(doc, dict):
        for key in schema.get("required", []):
            assert key in doc, f"{where}: missing {key!r}"
        for key, sub in schema.get("properties", {}).items():
            if key in doc:
                validate(doc[key], sub, root, f"{where}.{key}")
    if isinstance(doc, list) and "items" in schema:
        for i, item in enumerate(doc):
            validate(item, schema["items"], root, f"{where}[{i}]")


@pytest.fixture
def small_file(tmp_path):
    rng = np.random.default_rng(0)
    n = 240
    X = rng.normal(size=(n, 3))
    g = np.repeat(["a", "b", "c"], n // 3)
    y = np.where(X @ [1.0, -1.0, 0.5] + (g == "c") + 0.5 * rng.normal(size=n) > 0, 1, 0)
    job = rng.choice(["x", "y"], size=n)
    lines = ["f1,f2,f3,job,group,label"] + [f"{a},{b},{c},{j},{gg},{yy}" for (a, b, c), j, gg, yy in zip(X, job, g, y)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    path = tmp_path / "p.toml"
    path.write_text("""
title = "small"
[data]
csv = "d.csv"
target = "label"
sensitive = "group"
categorical = ["job"]
[model]
radius = 3.0
intercept = true
[problem]
family = "gdro"
loss = "logistic"
[solve.stochastic]
epochs = 60
""")
    return path


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_solve_and_crosscheck_json_follow_the_schema(small_file, capsys, tmp_path):
    code, out, _ = run(capsys, "solve", small_file, "--json", "--out", tmp_path / "res")
    assert code == 0
    doc = json.loads(out)
    validate(doc, SCHEMA)
    assert doc["result"]["status"] == "optimal" and (tmp_path / "res" / "result.json").exists()
    code, out, _ = run(capsys, "crosscheck", small_file, "--json", "--seed", "1")
    doc = json.loads(out)
    validate(doc, SCHEMA)
    assert code == 0 and doc["report"]["ok"] is True


def test_crosscheck_not_ok_exits_1(small_file, capsys):
    text = small_file.read_text().replace("epochs = 60", "epochs = 1\nstep_w = 1e-5\nstep_q = 1e-5")
    small_file.write_text(text)
    code, out, _ = run(capsys, "crosscheck", small_file)
    assert code == 1 and "NOT OK" in out


def test_sweep_describe_datasets(small_file, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    code, out, _ = run(capsys, "sweep", small_file, "--param", "model.radius", "--values", "0.5,1,2",
                       "--json", "--plot", tmp_path / "f.png")
    doc = json.loads(out)
    validate(doc, SCHEMA)
    objectives = [r["objective"] for r in doc["frontier"]["rows"]]
    assert code == 0 and objectives == sorted(objectives, reverse=True)  # a larger ball can only help
    assert (tmp_path / "f.png").stat().st_size > 0
    code, out, _ = run(capsys, "describe", small_file)
    assert code == 0 and "minimize t" in out and "ALEG" in out
    code, out, _ = run(capsys, "datasets")
    assert code == 0 and "lawschool" in out and "20800" in out


@pytest.mark.parametrize("edit, message", [
    (("family = \"gdro\"", "family = \"nope\""), "[problem] family: 'nope' is not allowed; allowed values are"),
    (("loss = \"logistic\"", "loss = \"cubic\""), "[problem] loss: 'cubic' is not allowed"),
    (("radius = 3.0", "radius = -1.0"), "[model] radius: must be positive"),
    (("radius = 3.0", "radius = \"big\""), "[model] radius: must be a number"),
    (("target = \"label\"", "target = \"nope\""), "[data] target: unknown column 'nope'"),
    (("categorical = [\"job\"]", "categorical = []"), "column 'job' is not numeric"),
    (("csv = \"d.csv\"", "csv = \"missing.csv\""), "[data] csv: cannot read"),
    (("[model]", "[modle]"), "top level modle: unknown key; allowed keys are"),
    (("intercept = true", "intercept = true\nbias = 1"), "[model] bias: unknown key"),
])
def test_bad_problem_files_exit_2_with_one_line(small_file, capsys, edit, message):
    small_file.write_text(small_file.read_text().replace(*edit))
    code, out, err = run(capsys, "solve", small_file)
    assert code == 2
    assert message in err and "p.toml" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_and_bad_toml(tmp_path, capsys):
    code, _, err = run(capsys, "solve", tmp_path / "none.toml")
    assert code == 2 and "no such problem file" in err
    (tmp_path / "bad.toml").write_text("[data\nname=")
    code, _, err = run(capsys, "solve", tmp_path / "bad.toml")
    assert code == 2 and "not valid TOML" in err


def test_solver_failure_exits_3(small_file, capsys, monkeypatch):
    import cvxpy as cp

    def fail(self, *args, **kwargs):
        raise cp.error.SolverError("numerical trouble")
    monkeypatch.setattr(cp.Problem, "solve", fail)
    code, _, err = run(capsys, "solve", small_file, "--backend", "exact", "--method", "epigraph")
    assert code == 3 and "solver failure" in err


def test_example_problem_files_parse():
    """Every problem file in examples/problems builds its problem (solving them is the test below)."""
    files = sorted((ROOT / "examples" / "problems").glob("*.toml"))
    assert files
    for path in files:
        problemfile.load(path)


# the slowest twins are opt-in (the default run stays under 10 minutes): the ramp twin runs IDCA with the true-rate
# continuation on both backends (about 80 s alone; tests/test_ramp_rates.py and the ramp_rates.py example check the
# family in the default run), mero_adult and partial_fairness take 11-14 s (MERO and partial fairness cross-check by
# default in tests/test_dask_mero.py, tests/test_dask_dc.py and the course notebooks)
SLOW_TWINS = {"ramp_rates", "mero_adult", "partial_fairness"}
TWINS = [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW_TWINS else p
         for p in sorted((ROOT / "examples" / "problems").glob("*.toml"))]


@pytest.mark.parametrize("path", TWINS, ids=lambda p: p.stem)
def test_every_example_twin_crosschecks_ok(path, capsys, tmp_path):
    """`fairmodel crosscheck --json --plot` on every twin exits 0 with a schema-valid document and a figure
    (all twins together take about two minutes here, so this runs by default); the figure `solve --plot` draws
    for each single saved result (exact, stochastic) is drawn too, with a title."""
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from fairmodel.results.plotting import plot_results
    code, out, err = run(capsys, "crosscheck", path, "--json", "--plot", tmp_path / "f.png", "--out", tmp_path / "r")
    doc = json.loads(out)
    validate(doc, SCHEMA)
    assert code == 0 and doc["report"]["ok"]
    assert (tmp_path / "f.png").stat().st_size > 0 and "saved:" in err
    for backend in ("exact", "stochastic"):
        fig = plot_results({backend: fm.load_result(tmp_path / "r" / backend)})
        assert fig.axes[0].get_title()
    plt.close("all")


def test_every_example_has_a_problem_file_twin():
    examples = {p.stem for p in (ROOT / "examples").glob("*.py")}
    twins = {p.stem for p in (ROOT / "examples" / "problems").glob("*.toml")}
    for name in examples:
        assert any(t == name or t.startswith(name) or name.startswith(t) for t in twins), f"{name} has no twin"


def test_sweep_refuses_an_unknown_y_with_the_columns(small_file, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    code, _, err = run(capsys, "sweep", small_file, "--param", "model.radius", "--values", "0.5,1", "--plot",
                       tmp_path / "f.png", "--y", "nonsense")
    assert code == 2 and "no column 'nonsense'" in err and "objective" in err and "max_violation" in err
    assert not (tmp_path / "f.png").exists()


def test_default_sweep_y_is_the_judged_risk_under_a_regularized_objective():
    from fairmodel.results.plotting import default_frontier_y

    class F:                        # a frontier with DP post-processing's columns (objective = R_beta)
        def __init__(self, rows):
            self._rows = rows

        def rows(self):
            return self._rows
    assert default_frontier_y(F([{"eps": 0.1, "objective": -0.2, "metric:risk": 0.3}])) == "metric:risk"
    assert default_frontier_y(F([{"kappa": 0.1, "objective": 0.5}])) == "objective"


def test_solve_and_crosscheck_save_the_default_figure(small_file, capsys, tmp_path):
    """--plot draws the group risks of the results (group DRO): the bar heights are the judged risks."""
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    figure = tmp_path / "risks.png"
    code, _, _ = run(capsys, "crosscheck", small_file, "--plot", figure)
    assert code == 0 and figure.stat().st_size > 0
    code, _, _ = run(capsys, "solve", small_file, "--plot", tmp_path / "solve.png", "--json")
    assert code == 0 and (tmp_path / "solve.png").stat().st_size > 0
    prob, _, _ = problemfile.load(small_file)
    res = prob.solve(backend="exact")
    from fairmodel.results.plotting import plot_results
    fig = plot_results({"exact": res})
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == pytest.approx(list(res.metrics["group_risks"].values()))
    plt.close("all")


@pytest.mark.parametrize("toml_edit, csv_edit, message", [
    (("categorical = [\"job\"]", "categorical = [\"job\"]\ninclude_sensitive = \"false\""), None,
     "[data] include_sensitive: must be a bool; got 'false'"),
    (("categorical = [\"job\"]", "categorical = [\"job\"]\nfeatures = [\"f1\", \"label\"]"), None,
     "[data] features: target column 'label' is listed among the features"),
    (None, ("f1,f2,f3,job,group,label", "f1,f2,f1,job,group,label"),
     "[data] csv: d.csv has duplicated column name(s): 'f1' (2 times)"),
    (None, (",a,", ",,", 1), "[data] sensitive: missing values in column 'group': 1"),
])
def test_bad_data_in_problem_files_exit_2_with_one_line(small_file, capsys, toml_edit, csv_edit, message):
    """Data faults reported by users: a string read as a boolean, the target as a feature, a duplicated CSV
    header silently replacing a column, an empty group cell becoming a group of its own."""
    if toml_edit:
        small_file.write_text(small_file.read_text().replace(*toml_edit))
    if csv_edit:
        csv_path = small_file.parent / "d.csv"
        csv_path.write_text(csv_path.read_text().replace(*csv_edit))
    code, out, err = run(capsys, "solve", small_file)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("edit, message", [
    (("radius = 3.0", "radius = \"3\""), "p.toml: [model] radius: must be a number; got '3'"),
    (("title = \"small\"", "title = 5"), "p.toml: top level title: must be a string"),
    (("target = \"label\"\n", ""), "needs labels y, got None"),
    (("categorical = [\"job\"]", "categorical = [\"job\"]\nseed = -1"), "[data] seed: must be a non-negative integer"),
    (("categorical = [\"job\"]", "categorical = [\"job\"]\nfeatures = []"), "[data] features: no feature column"),
    (("categorical = [\"job\"]", "categorical = [\"job\"]\nsubsample = 1\nseed = 0"),
     "[data] subsample: subsample of 1 rows cannot keep all 3 groups"),
    (("family = \"gdro\"\nloss = \"logistic\"", "family = \"dp_postprocessing\"\nbeta = -1"),
     "[problem] beta: must be >= 0"),
])
def test_more_bad_problem_files_name_the_key(small_file, capsys, edit, message):
    small_file.write_text(small_file.read_text().replace(*edit))
    code, out, err = run(capsys, "describe", small_file)
    assert code == 2 and message in err and err.count("p.toml") == 1 and "Traceback" not in err


def test_dp_classification_on_a_continuous_target(small_file, capsys):
    pytest.importorskip("sklearn")
    text = small_file.read_text().replace('target = "label"', 'target = "f1"').replace(
        'family = "gdro"\nloss = "logistic"', 'family = "dp_postprocessing"\ntask = "classification"')
    small_file.write_text(text)
    code, _, err = run(capsys, "describe", small_file)
    assert code == 2 and "[problem] task: classification needs a target of a few classes" in err


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-1", "--backend", "stochastic"], "seed must be a non-negative integer"),
    (["--out", "FILE"], "is a file; --out names a directory"),
    (["--out", "FILE/sub"], "cannot create the directory"),
])
def test_solve_arguments_refused_before_solving(small_file, capsys, monkeypatch, tmp_path, argv, message):
    from fairmodel import problem as problem_module
    (tmp_path / "FILE").write_text("x")
    argv = [str(tmp_path / a) if a.startswith("FILE") else a for a in argv]
    if "--seed" not in argv:
        monkeypatch.setattr(problem_module.Problem, "solve", lambda *a, **k: pytest.fail("solved before the check"))
    code, _, err = run(capsys, "solve", small_file, *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_sweep_values_with_an_empty_item(small_file, capsys):
    code, _, err = run(capsys, "sweep", small_file, "--param", "model.radius", "--values", "1,,2")
    assert code == 2 and "item 2 is empty" in err


def test_sweep_force_replaces_the_old_sweep_as_a_whole(small_file, capsys, tmp_path):
    out = tmp_path / "o"
    assert run(capsys, "sweep", small_file, "--param", "model.radius", "--values", "1,2,3", "--out", out)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["frontier.json", "frontier.md"] + [
        f"value{i}.{e}" for i in range(3) for e in ("json", "npz")]
    code, _, err = run(capsys, "sweep", small_file, "--param", "model.radius", "--values", "4", "--out", out)
    assert code == 2 and "--force" in err                       # without --force nothing is replaced
    code, out_text, _ = run(capsys, "sweep", small_file, "--param", "model.radius", "--values", "4", "--out", out,
                            "--force")
    assert code == 0 and f"saved: {out / 'frontier.md'}" in out_text
    assert sorted(p.name for p in out.iterdir()) == ["frontier.json", "frontier.md", "value0.json", "value0.npz"]
    assert [r["model.radius"] for r in json.loads((out / "frontier.json").read_text())["rows"]] == [4]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".o")]      # no directory left aside


def test_sweep_force_refuses_a_directory_with_other_files(small_file, capsys, tmp_path, monkeypatch):
    from fairmodel import problem as problem_module
    out = tmp_path / "o"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    monkeypatch.setattr(problem_module.Problem, "solve", lambda *a, **k: pytest.fail("solved before the check"))
    code, _, err = run(capsys, "sweep", small_file, "--param", "model.radius", "--values", "4", "--out", out, "--force")
    assert code == 2 and "notes.txt" in err and (out / "notes.txt").read_text() == "mine"


def test_ctrl_c_while_the_command_line_imports_exits_130_without_traceback(small_file):
    """The console script declared in pyproject.toml, run as pip's launcher runs it; the signal is sent while Python
    imports CVXPY (seen in -X importtime's lines on standard error), i.e. before any command-line code ran: the entry
    point installed its handler first."""
    import signal
    import subprocess
    import sys
    import time
    try:
        import tomllib
    except ImportError:         # Python 3.10
        import tomli as tomllib
    root = Path(__file__).resolve().parent.parent
    module, func = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["fairmodel"].split(":")
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-c", f"import sys; from {module} import {func}; "
                             f"sys.exit({func}())", "describe", str(small_file)], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, start = [], time.time()
    for line in proc.stderr:
        lines.append(line)
        if "cvxpy" in line:
            proc.send_signal(signal.SIGINT)
            break
        assert time.time() - start < 120
    err = "".join(lines) + proc.stderr.read()
    assert proc.wait(60) == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "fairmodel: interrupted (Ctrl-C)" in err


FAST = 0.5   # seconds of wall time for `fairmodel --version` / `--help`, Python's own start-up included


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["solve", "--help"], ["describe", "--format", "x"]])
def test_version_help_and_bad_options_answer_before_the_heavy_imports(argv):
    """The console script's function (read from pyproject.toml) in a fresh interpreter, from this checkout: the answer
    comes within FAST seconds (the best of three runs: the machine may be busy) and NumPy, SciPy and CVXPY were never
    imported. Before the entry point parsed its arguments itself, `fairmodel --version` took about 6 s."""
    import subprocess
    import sys
    import time
    try:
        import tomllib
    except ImportError:         # Python 3.10
        import tomli as tomllib
    module, func = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["fairmodel"].split(":")
    code = (f"import sys\nfrom {module} import {func}\ntry:\n    {func}({argv!r})\nexcept SystemExit as e:\n"
            "    code = e.code\nloaded = sorted({'numpy', 'scipy', 'cvxpy', 'fairmodel'} & set(sys.modules))\n"
            "print('LOADED', loaded, code, file=sys.stderr)")
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        walls.append(time.perf_counter() - start)
        assert f"LOADED [] {2 if argv[-1] == 'x' else 0}" in proc.stderr, proc.stderr
    assert min(walls) < FAST, f"{argv}: {min(walls):.2f} s (best of {walls})"
    if argv == ["--version"]:
        assert proc.stdout.strip() == f"fairmodel {fm.__version__}"
    elif argv[-1] == "--help":
        sub = argv[:-1]
        parser = cli.build_parser()
        if sub:
            parser = next(a for a in parser._actions if a.dest == "command").choices[sub[0]]
        assert proc.stdout.split() == parser.format_help().split()   # the same text, wrapped anywhere


def test_the_entry_points_parser_is_the_command_lines():
    """fairmodel_cli (standard library only) reads the version from the file and repeats the describe formats:
    both equal the package's."""
    import fairmodel_cli.arguments as arguments
    from fairmodel.families.base import DESCRIBE_FORMATS
    assert arguments.package_version() == fm.__version__
    assert arguments.DESCRIBE_FORMATS == DESCRIBE_FORMATS
    assert arguments.build_parser().format_help() == cli.build_parser().format_help()


def test_load_problem_is_public_and_solves_as_the_command_line(small_file, capsys):
    """fm.load_problem reads a problem file into (problem, data, options), the file's [solve] tables applied by its
    solve() and crosscheck() as `fairmodel solve` / `crosscheck` apply them; the former path still works."""
    assert "load_problem" in fm.__all__ and "ProblemFile" in fm.__all__
    api = (ROOT / "docs" / "api.md").read_text()
    assert "::: fairmodel.load_problem" in api and "::: fairmodel.ProblemFile" in api
    text = small_file.read_text().replace("[solve.stochastic]", '[solve]\nbackend = "stochastic"\nseed = 3\n'
                                          '[solve.exact]\nmethod = "epigraph"\n[solve.stochastic]')
    small_file.write_text(text)
    loaded = fm.load_problem(small_file)
    prob, data, options = loaded
    assert isinstance(prob, fm.Problem) and isinstance(data, fm.Dataset) and data.n_samples == 240
    assert prob.title == "small"
    assert options == {"backend": "stochastic", "exact": {"method": "epigraph"},
                       "stochastic": {"epochs": 60, "seed": 3}}
    result = loaded.solve()
    assert result.backend == "stochastic" and result.seed == 3
    assert loaded.solve(backend="exact").method == "epigraph"
    code, out, _ = run(capsys, "solve", small_file, "--json")
    assert json.loads(out)["result"]["objective"] == pytest.approx(result.objective, rel=1e-12)
    report = loaded.crosscheck()
    assert report.exact.method == "epigraph" and report.stochastic.seed == 3
    old_prob, old_data, _ = problemfile.load(small_file)          # the former (private) path
    assert old_prob.describe() == prob.describe() and old_data.n_samples == 240
    small_file.write_text(text.replace("radius = 3.0", "radius = -1.0"))
    with pytest.raises(fm.DataError, match=r"p\.toml: \[model\]"):
        fm.load_problem(small_file)


def _dp_like_frontier():
    kind = "R_beta = the squared risk + the entropy term (the entropic problem (4) of Chzhen, Hebiri, Taturyan 2024)"
    results = [fm.Result(status="optimal", objective=risk - 0.0179, timings={"solve": 0.08},
                         metrics={"risk": risk, "entropy_term": -0.0179, "objective_kind": kind, "beta": 100.0},
                         constraints={f"c0[{g}]": {"value": v, "bound": eps, "violation": 0.0}
                                      for g, v in (("non-white", eps), ("white", eps / 5))},
                         certificate={"duality_gap": 1e-9})
               for eps, risk in ((0.01, 0.005977), (0.05, 0.005026))]
    return fm.Frontier("problem.eps", [0.01, 0.05, 0.1], results + [None], errors={2: "the solver failed"})


def test_the_sweep_table_fits_the_terminal_with_the_declared_objective_first():
    """DP post-processing's objective R_beta (risk + entropy term) is negative: the table shows the declared risk
    before it and says what each is; columns that do not fit the width are named, never wrapped."""
    frontier = _dp_like_frontier()
    narrow = frontier.to_text(width=80)
    table = [line for line in narrow.splitlines() if line.startswith("|")]
    assert len(table) == 5 and all(len(line) <= 80 for line in narrow.splitlines())
    headers = [h.strip() for h in table[0].strip("|").split("|")]
    assert headers[:5] == ["problem.eps", "status", "risk", "objective", "max violation"]
    assert "metric:" not in narrow and "certificate:" not in narrow and "duality_gap" not in narrow
    assert "not shown (2 columns too wide for 80 characters): c0[white], time (s)" in " ".join(narrow.split())
    assert "risk: the objective declared; objective: what the solver minimizes, R_beta" in narrow
    assert "problem.eps = 0.1: the solver failed" in narrow
    wide = frontier.to_text(width=200)
    assert "not shown" not in wide and "c0[white]" in wide.splitlines()[0] and "time (s)" in wide.splitlines()[0]
    assert "certificate:duality_gap" in frontier.to_markdown()          # the full table keeps every column
    plain = fm.Frontier("kappa", [1], [fm.Result(status="optimal", objective=0.5, metrics={"risk": 0.5})])
    header = plain.to_text(width=80).splitlines()[0]
    assert [h.strip() for h in header.strip("|").split("|")][:3] == ["kappa", "status", "objective"]


def test_cli_sweep_prints_the_terminal_table(small_file, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    code, out, _ = run(capsys, "sweep", small_file, "--param", "model.radius", "--values", "0.5,1")
    assert code == 0 and all(len(line) <= 60 for line in out.splitlines())
    assert out.splitlines()[0].split("|")[1:4] == [" model.radius ", " status  ", " objective "]
    assert "every column, metrics and certificates: --json, or --out DIR" in " ".join(out.split())
