"""The documentation site (mkdocs.yml, docs/): a strict build (a broken link, a missing anchor, a page left out of
the navigation, an unresolved API reference or a notebook cell that raises fails it), the notebook outputs
written under their cells, and the browser check of the built site (docs/check_site.py, headless Chromium: typeset
math, no raw TeX, notebook outputs and figures; run with ``pytest -m slow`` where Chromium is installed).

The default tests build the site without executing the course notebooks (``FAIRMODEL_DOCS_EXECUTE=0``: executing
all 16 takes minutes) and check the executor on a two-page site of small notebooks instead; the slow browser test
builds the site as published, with every notebook executed (or its stored outputs, when neither the notebook nor
the package changed).

Needs the ``docs`` extra (MkDocs, Material, mkdocstrings, jupytext, MathJax, Matplotlib); skipped without it.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import fairmodel as fm
from fairmodel.frontends.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}   # Material's banner about MkDocs 2.0 (not a build warning)
DOCS_EXTRA = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "jupytext", "mathjax", "yaml",
              "matplotlib")
needs_docs = pytest.mark.skipif(not all(find_spec(m.split(".")[0]) and find_spec(m) for m in DOCS_EXTRA),
                                reason="needs the docs extra: pip install -e '.[docs]'")


def test_help_texts_name_pages_of_the_site():
    """The command line points to the site's page titles (and the source files), which the navigation has."""
    nav = (ROOT / "mkdocs.yml").read_text()
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["solve"]
    text = sub.format_help().replace("\n", " ")
    pages = re.findall(r"the '([^']+)' page of the documentation, or docs/(\w+\.md)", " ".join(text.split()))
    assert {p for p, _ in pages} == {"Command line", "JSON output"}
    for title, source in pages:
        assert f"- {title}: {source}" in nav and (ROOT / "docs" / source).is_file()


def _build(config: Path, site: Path, cwd: Path = ROOT, execute: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=cwd, env={**ENV, "FAIRMODEL_DOCS_EXECUTE": str(int(execute))},
                          capture_output=True, text=True, timeout=1800)


def _built(site: Path, execute: bool) -> Path:
    proc = _build(ROOT / "mkdocs.yml", site, execute=execute)
    assert proc.returncode == 0, f"strict build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site without the notebooks' outputs (fast)."""
    return _built(tmp_path_factory.mktemp("site"), execute=False)


@pytest.fixture(scope="module")
def executed_site(tmp_path_factory):
    """The site as published: every notebook executed, its outputs under its cells."""
    return _built(tmp_path_factory.mktemp("executed_site"), execute=True)


@needs_docs
def test_the_site_builds_strictly(site):
    pages = {p.parent.relative_to(site).as_posix() for p in site.rglob("index.html")}
    for page in ("getting-started", "api", "glossary", "teaching", "problem-files", "notebooks",
                 "notebooks/exercises/s1_group_dro", "notebooks/solutions/s8_assessment"):
        assert page in pages
    api = (site / "api" / "index.html").read_text()
    assert 'id="fairmodel.Problem"' in api and "fairmodel.estimators.GroupDROClassifier" in api   # from docstrings
    for name in ("notebooks/solutions/s1_group_dro.ipynb", "notebooks/exercises/s1_group_dro.py",
                 "problems/group_dro_adult.toml", "assets/mathjax/tex-svg-full.js",
                 "examples/partial_fairness_crosscheck.py"):
        assert (site / name).is_file(), name
    gdro = (site / "gdro" / "index.html").read_text()   # the problem file's formulation, as describe writes it
    formulation = fm.load_problem(ROOT / "examples" / "problems" / "group_dro_adult.toml").problem.formulation(
        "markdown")
    assert "\\operatorname{logistic}\\left(x_i^\\top w, y_i\\right)" in formulation
    assert formulation.split("\n")[2].replace("&", "&amp;") in gdro and "the rows of group" in gdro
    solution = (site / "notebooks" / "solutions" / "s1_group_dro" / "index.html").read_text()
    exercise = (site / "notebooks" / "exercises" / "s1_group_dro" / "index.html").read_text()
    assert "Solution" in solution and "Your answer" in exercise and "Your answer" not in solution


@needs_docs
@pytest.mark.parametrize("page, message", [
    ("[the command line](clii.md)", "not found among documentation files"),
    ("[a section](cli.md#no-such-section)", "does not contain an anchor"),
])
def test_the_strict_settings_fail_a_broken_link(tmp_path, page, message):
    """The validation settings of mkdocs.yml, on a two-page site with one broken link."""
    import yaml   # a dependency of MkDocs
    settings = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Home\n\nSee {page}.\n")
    (docs / "cli.md").write_text("# Command line\n\n## Commands\n")
    config = {"site_name": "check", "docs_dir": str(docs), "strict": settings["strict"],
              "validation": settings["validation"], "nav": ["index.md", "cli.md"]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    proc = _build(tmp_path / "mkdocs.yml", tmp_path / "site", cwd=tmp_path)
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr
    (docs / "index.md").write_text("# Home\n\nSee [the command line](cli.md#commands).\n")
    assert _build(tmp_path / "mkdocs.yml", tmp_path / "site", cwd=tmp_path).returncode == 0


@pytest.mark.slow      # a second full strict build (about 40 s); the default run builds the site once
@needs_docs
def test_the_site_can_leave_out_the_solutions(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                          cwd=ROOT, env={**ENV, "FAIRMODEL_DOCS_WITHOUT_SOLUTIONS": "1"}, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tmp_path / "notebooks" / "exercises" / "s1_group_dro" / "index.html").is_file()
    assert not (tmp_path / "notebooks" / "solutions").exists()
    index = (tmp_path / "notebooks" / "index.html").read_text()
    assert "solutions/s1_group_dro.py" in index and 'href="solutions/' not in index


CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.slow
@needs_docs
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no Chromium (Debian: apt-get install chromium)")
def test_the_browser_check_passes(executed_site):
    """Every page renders with its math typeset and no raw TeX or plain-text math; every notebook page shows its
    outputs and figures; search works."""
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "check_site.py"), "--site", str(executed_site),
                           "--chromium", CHROMIUM], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " 0 failed" in proc.stdout and "search 'mirror snapshot'" in proc.stdout
    notebook_pages = re.findall(r"(?m)^ok +page /notebooks/(?:exercises|solutions)/\w+/.*; (\d+) outputs", proc.stdout)
    assert len(notebook_pages) == 16 and all(int(n) > 0 for n in notebook_pages)


@pytest.mark.slow
@needs_docs
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no Chromium (Debian: apt-get install chromium)")
def test_the_browser_check_fails_on_raw_tex_and_on_a_notebook_page_without_outputs(site, tmp_path):
    """The same check on the site built without executing the notebooks, with a formula left as TeX on one page and
    the old plain-text formula on another: all three fail."""
    broken = tmp_path / "site"
    shutil.copytree(site, broken)
    gdro, ok = broken / "gdro" / "index.html", broken / "ok" / "index.html"
    gdro.write_text(gdro.read_text().replace('<span class="arithmatex">\\(g\\)</span>', "<span>$g$</span>", 1))
    ok.write_text(ok.read_text().replace("<h2", "<p>R_i(w) = (1/n_i) Σ_{j in group i} ℓ(w; ξ_ij)</p><h2", 1))
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "check_site.py"), "--site", str(broken),
                           "--chromium", CHROMIUM], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1
    assert re.search(r"(?m)^FAIL +page /gdro/: .*raw math in the text: .*\$g\$", proc.stdout)
    assert re.search(r"(?m)^FAIL +page /ok/: .*raw math in the text: .*R_i\(w\) = \(1/n_i\) Σ_\{j", proc.stdout)
    assert re.search(r"(?m)^FAIL +page /notebooks/solutions/s1_group_dro/: .*; 0 outputs", proc.stdout)


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NOTEBOOK = """# %% [markdown]
# # A small notebook

# %%
import matplotlib.pyplot as plt

print("printed", 6 * 7)
plt.plot([0, 1], [1, 0])

# %%
class Table:
    def _repr_markdown_(self):
        return "| a | b |\\n|---|---|\\n| 1 | 2 |"


Table()

# %%
{"value": 3}
"""


@needs_docs
def test_a_figure_left_open_before_the_notebook_is_not_its_output():
    """A figure open before the notebook runs (another test's, in the same process) is neither shown under its
    cells nor drawn on by them."""
    import jupytext
    import matplotlib.pyplot as plt
    plt.figure()
    outputs, error = _hooks().run_notebook(jupytext.reads(NOTEBOOK, fmt="py:percent"), str(ROOT))
    assert error == ""
    assert [[o["kind"] for o in cell] for cell in outputs] == [[], ["text", "image"], ["markdown"], ["text"]]


@needs_docs
def test_a_notebook_runs_with_its_outputs_under_its_cells():
    """Printed text, a figure, a value with a Markdown view, a plain value: each under its cell, in order."""
    import jupytext
    hooks = _hooks()
    notebook = jupytext.reads(NOTEBOOK, fmt="py:percent")
    outputs, error = hooks.run_notebook(notebook, str(ROOT))
    assert error == ""
    assert [[o["kind"] for o in cell] for cell in outputs] == [[], ["text", "image"], ["markdown"], ["text"]]
    assert outputs[1][0]["data"] == "printed 42\n" and outputs[3][0]["data"] == "{'value': 3}"
    page = hooks.notebook_page(notebook, "small", outputs)
    assert "    ```text\n    printed 42\n    ```" in page and "    ![Figure](small_files/cell1_1.png)" in page
    assert page.count('!!! output ""') == 3 and "    | a | b |" in page


@needs_docs
def test_a_failing_notebook_fails_the_strict_build_and_a_good_one_shows_its_outputs(tmp_path):
    """A two-notebook site with the hooks of mkdocs.yml: the cell that raises fails the strict build, naming the
    notebook, the cell and the error, and shows its traceback; the other page shows its outputs and its figure file
    exists; only the good notebook's outputs are stored."""
    import yaml   # a dependency of MkDocs
    docs = tmp_path / "docs"
    (docs / "notebooks" / "solutions").mkdir(parents=True)
    for page, title in (("index.md", "Home"), ("cli.md", "Command line"), ("notebooks/index.md", "Notebooks")):
        (docs / page).write_text(f"# {title}\n")   # the pages the generated ones link to
    (docs / "notebooks" / "solutions" / "good.py").write_text(NOTEBOOK)
    (docs / "notebooks" / "solutions" / "bad.py").write_text(
        "# %%\nx = 1\n\n# %%\nraise ValueError('the data file is missing')\n")
    config = {"site_name": "check", "docs_dir": "docs", "strict": True, "hooks": [str(ROOT / "docs" / "hooks.py")],
              "markdown_extensions": ["admonition", "pymdownx.superfences"],
              "nav": ["index.md", "cli.md", "problem-files.md", "notebooks/index.md", "notebooks/solutions/good.md",
                      "notebooks/solutions/bad.md"]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    proc = _build(tmp_path / "mkdocs.yml", tmp_path / "site", cwd=tmp_path, execute=True)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Aborted with 1 warnings in strict mode" in log
    assert "notebook notebooks/solutions/bad.py: cell 1 raised ValueError: the data file is missing" in log
    solutions = tmp_path / "site" / "notebooks" / "solutions"
    bad = (solutions / "bad" / "index.html").read_text()   # the traceback under the cell, highlighted
    assert 'class="admonition output"' in bad and "Traceback" in bad and "the data file is missing" in bad
    page = (solutions / "good" / "index.html").read_text()
    assert page.count('class="admonition output"') == 3 and "printed 42" in page and "<td>2</td>" in page
    assert (solutions / "good_files" / "cell1_1.png").read_bytes()[:4] == b"\x89PNG"
    assert len(list((tmp_path / "build" / "notebook-outputs").glob("*.json"))) == 1   # stored, by digest
