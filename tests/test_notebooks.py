"""The course notebooks (docs/notebooks, jupytext percent-format scripts).

* Every worked-solution notebook runs from a fresh folder, in order, as Jupyter's "run all" would (its assertions
  check what each question claims).
* The exercise set is the solution set with the solution cells emptied (docs/notebooks/make_exercises.py), and no
  cell of an exercise notebook uses a name that only a solution cell defines: the exercise notebooks run the same
  shared cells as the solutions, on the same names, so they run too (executed under ``pytest -m slow``).
"""
import ast
import builtins
import importlib.util
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "docs" / "notebooks"
SOLUTIONS = sorted((NOTEBOOKS / "solutions").glob("*.py"))


def _make_exercises():
    spec = importlib.util.spec_from_file_location("make_exercises", NOTEBOOKS / "make_exercises.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code_cells(text: str):
    """(is_solution, source) of every code cell, in order."""
    make = _make_exercises()
    for cell in make.CELL.split(text):
        header = cell.split("\n", 1)[0]
        if cell.startswith("# %%") and "[markdown]" not in header:
            yield bool(make.SOLUTION_TAG.search(header)), cell


def _bound_and_free(source: str) -> tuple[set, set]:
    """Names a cell binds anywhere (assignments, imports, definitions, arguments) and the names it reads that it
    does not bind."""
    tree = ast.parse(source)
    bound, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else loaded).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, loaded - bound - set(dir(builtins))


def test_there_is_one_notebook_per_session():
    assert [p.stem.split("_")[0] for p in SOLUTIONS] == [f"s{i}" for i in range(1, 9)]
    assert sorted(p.name for p in (NOTEBOOKS / "exercises").glob("*.py")) == [p.name for p in SOLUTIONS]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_exercises_are_the_solutions_without_the_answers(path):
    make = _make_exercises()
    solution = path.read_text()
    exercise = (NOTEBOOKS / "exercises" / path.name).read_text()
    assert exercise == make.exercise_text(solution), (
        f"exercises/{path.name} is out of date: run python docs/notebooks/make_exercises.py")
    assert make.SOLUTION_TAG.search(solution), f"{path.name} has no solution cell"
    assert not make.SOLUTION_TAG.search(exercise)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_exercise_cells_do_not_depend_on_solution_cells(path):
    from_solutions, from_shared = set(), set()
    for is_solution, source in _code_cells(path.read_text()):
        bound, free = _bound_and_free(source)
        if is_solution:
            from_solutions |= bound
            continue
        leaked = free & from_solutions
        assert not leaked, f"{path.name}: a cell of the exercise set uses {sorted(leaked)}, bound by a solution cell"
        assert free <= from_shared, f"{path.name}: names used before any cell binds them: {sorted(free - from_shared)}"
        from_shared |= bound


def test_the_dependency_check_can_fail():
    text = "# %%\nx = 1\n\n# %% tags=[\"solution\"]\ny = x + 1\n\n# %%\nprint(y)\n"
    cells = list(_code_cells(text))
    assert [s for s, _ in cells] == [False, True, False]
    assert _bound_and_free(cells[2][1])[1] == {"y"} and _bound_and_free(cells[1][1])[0] == {"y"}


def _run(path: Path, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("sklearn")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    monkeypatch.chdir(tmp_path)
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        plt.close("all")


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_solution_notebook_runs(path, tmp_path, monkeypatch):
    _run(path, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_exercise_notebook_runs(path, tmp_path, monkeypatch):
    _run(NOTEBOOKS / "exercises" / path.name, tmp_path, monkeypatch)


def test_the_course_page_and_the_notebooks_number_the_questions_alike():
    """Session k of docs/teaching.md lists its questions 1..n (Markdown renumbers a list from 1 anyway) and
    notebook sk has the headings "Question 1".."Question n"."""
    import re
    page = (ROOT / "docs" / "teaching.md").read_text()
    sessions = {int(m.group(1)): m.group(2) for m in re.finditer(r"(?ms)^## Session (\d+):(.*?)(?=^## |\Z)", page)}
    assert sorted(sessions) == list(range(1, len(SOLUTIONS) + 1))
    for path in SOLUTIONS:
        k = int(path.name[1])
        listed = [int(n) for n in re.findall(r"(?m)^(\d+)\. ", sessions[k])]
        headings = [int(n) for n in re.findall(r"(?m)^# ## Question (\d+)$", path.read_text())]
        assert listed == list(range(1, len(listed) + 1)), f"session {k} numbers its questions {listed}"
        assert headings == listed, f"{path.name}: questions {headings}, the course page {listed}"


def test_the_notebooks_page_links_every_exercise_and_solution():
    page = (NOTEBOOKS / "index.md").read_text()
    for path in SOLUTIONS:
        stem = path.stem
        assert f"[exercise](exercises/{stem}.md)" in page and f"[solution](solutions/{stem}.md)" in page, stem


def test_course_material_runs_only_scripts_the_site_ships():
    """A script the course pages or notebooks tell to run is in examples/ (the site copies examples/*.py) and is
    linked where it is named."""
    import re
    texts = [ROOT / "docs" / "teaching.md"] + SOLUTIONS
    named = {(p, m) for p in texts for m in re.findall(r"examples/(\w+\.py)", p.read_text())}
    assert named
    for path, script in named:
        assert (ROOT / "examples" / script).is_file(), script
        assert f"examples/{script})" in path.read_text(), f"{path.name}: {script} is named but not linked"


def test_every_session_states_goals_prerequisites_and_length():
    import re
    page = (ROOT / "docs" / "teaching.md").read_text()
    for k, body in re.findall(r"(?ms)^## Session (\d+):(.*?)(?=^## |\Z)", page):
        head = " ".join(body.split("\n1. ", 1)[0].split())
        assert re.search(r"\*Goals:\* .+\. \*Prerequisites:\* .+\. \*Planned length:\* \d+ minutes\.", head), k
