"""Every ```python block of README.md and docs/*.md runs (blocks of one file share a namespace, in order).

A block preceded by the line ``<!-- slow -->`` runs only with ``pytest -m slow``.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"(<!-- slow -->\s*\n)?```python\n(.*?)```", re.S)


def _cases():
    for path in FILES:
        blocks = [(bool(m.group(1)), m.group(2)) for m in BLOCK.finditer(path.read_text())]
        if blocks:
            marks = [pytest.mark.slow] if any(slow for slow, _ in blocks) else []
            yield pytest.param(path, [code for _, code in blocks], id=path.name, marks=marks)


@pytest.mark.parametrize("path, blocks", list(_cases()))
def test_snippets_run(path, blocks, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for code in blocks:
        exec(compile(code, str(path), "exec"), namespace)


# -- the install line ---------------------------------------------------------------------------------------------
PIP = re.compile(r"pip install\s+(?:-e\s+)?([\"']?)([^\s\"'`]+)\1")
INSTALL_TEXTS = ([ROOT / "README.md", ROOT / "mkdocs.yml"] + sorted((ROOT / "docs").rglob("*.md"))
                 + sorted((ROOT / "docs" / "notebooks").rglob("*.py")) + sorted((ROOT / "fairmodel").rglob("*.py")))


def _install_targets(text):
    return [m.group(2) for m in PIP.finditer(text)]


def test_no_page_or_message_installs_fairmodel_from_an_index():
    """fairmodel is not on PyPI: `pip install fairmodel` (or `fairmodel[extra]`) would fail or install someone
    else's package. Pages and error messages install from the source folder or an archive (`pip install .`,
    `pip install ".[plot]"`, `pip install path/to/archive.tar.gz`) or name the dependency itself."""
    bare = re.compile(r"^fairmodel(\[[^\]]*\])?$")
    offenders = [f"{path.relative_to(ROOT)}: pip install {t}" for path in INSTALL_TEXTS
                 for t in _install_targets(path.read_text()) if bare.match(t)]
    assert not offenders, offenders
    assert _install_targets("run pip install 'fairmodel[plot]' first") == ["fairmodel[plot]"]   # the check can fail
    assert _install_targets("`.venv/bin/pip install fairmodel && x`") == ["fairmodel"]


def test_documented_install_lines_name_extras_that_exist():
    """Every extra of a source install line (`.[a,b]`, `path/to/archive.tar.gz[a]`) is one of pyproject.toml's, and
    the home page and Getting started both show the install from the source folder."""
    try:
        import tomllib
    except ImportError:         # Python 3.10
        import tomli as tomllib
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    seen = []
    for path in INSTALL_TEXTS:
        for target in _install_targets(path.read_text()):
            local = re.match(r"^(\.|[\w./-]*/[\w.-]+)(?:\[([^\]]*)\])?$", target)
            if local and (target.startswith(".") or "/" in target):
                named = set(filter(None, (local.group(2) or "").split(",")))
                assert named <= extras, f"{path.relative_to(ROOT)}: pip install {target}: no extra {named - extras}"
                seen.append((path.name, target))
    for page in ("index.md", "getting-started.md", "README.md"):
        assert any(name == page and target.startswith(".") for name, target in seen), page
    assert {"plot", "sklearn"} <= extras


def test_the_criterion_chapter_states_the_bundled_data_as_loaded():
    """docs/choosing.md's table of the bundled data sets: rows and group sizes as the loaders give them."""
    import fairmodel as fm
    page = (ROOT / "docs" / "choosing.md").read_text()
    assert "- Choosing a fairness criterion: choosing.md" in (ROOT / "mkdocs.yml").read_text()
    for title, loader in (("Adult", fm.datasets.load_adult), ("Law School", fm.datasets.load_lawschool),
                          ("Communities and Crime", fm.datasets.load_communities)):
        row = next(line for line in page.splitlines() if line.startswith(f"| {title} |"))
        data = loader()
        assert f"| {data.n_samples:,} |" in row, title
        for name, size in zip(data.groups.names, data.group_sizes):
            assert f"{name} {int(size):,}" in row, (title, name, size)
