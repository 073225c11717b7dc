"""The documentation site (mkdocs.yml, docs/): a strict build (a broken link, a missing anchor, a page left out of
the navigation or an unresolved API reference fails it), and the browser check of the built site
(docs/check_site.py, headless Chromium; run with ``pytest -m slow`` where Chromium is installed).

Needs the ``docs`` extra (MkDocs, Material, mkdocstrings, jupytext, MathJax); skipped without it.
"""
import os
import re
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from fairmodel.frontends.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}   # Material's banner about MkDocs 2.0 (not a build warning)
DOCS_EXTRA = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "jupytext", "mathjax", "yaml")
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


def _build(config: Path, site: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    proc = _build(ROOT / "mkdocs.yml", site)
    assert proc.returncode == 0, f"strict build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return site


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
def test_the_browser_check_passes(site):
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "check_site.py"), "--site", str(site),
                           "--chromium", CHROMIUM], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " 0 failed" in proc.stdout and "search 'duality gap'" in proc.stdout
