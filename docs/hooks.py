"""MkDocs hooks of the documentation site (mkdocs.yml: ``hooks: [docs/hooks.py]``).

* The course notebooks are jupytext percent-format scripts, ``docs/notebooks/{exercises,solutions}/*.py``: each
  becomes a page (Markdown cells as they are, code cells as Python blocks, solution cells in a collapsed
  "Solution" box) and an ``.ipynb`` download next to it (written by jupytext, without outputs).
* The problem files of ``examples/problems/`` are copied into the site (``problems/``) and listed with their
  text on a generated page, ``problem-files.md``, so that the command-line exercises can be done from the site;
  the example scripts of ``examples/`` are copied too (``examples/``), for the exercises that run one.
* MathJax 3 is served from the installed ``django-static-mathjax`` wheel (the ``docs`` extra), so the math of the
  site renders with no network access.
* The docstrings' reStructuredText roles (``:class:`Result```) are shown as code, without the role.
* ``FAIRMODEL_DOCS_WITHOUT_SOLUTIONS=1`` builds the site without the worked solutions (for a course whose
  students read the site); the notebooks page then names the solution scripts instead of linking their pages.
"""
from __future__ import annotations

import os
import posixpath
import re
import textwrap
from importlib.resources import files as package_files
from pathlib import Path

import jupytext
from mkdocs.structure.files import File, Files

NOTEBOOK_DIRS = ("notebooks/exercises/", "notebooks/solutions/")
MATHJAX = "assets/mathjax/tex-svg-full.js"
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}   # the .ipynb downloads' kernel
ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|obj):(?=<code>)")
SOLUTION_LINK = re.compile(r"\[solution\]\(solutions/(\w+)\.md\)")


def _without_solutions() -> bool:
    return os.environ.get("FAIRMODEL_DOCS_WITHOUT_SOLUTIONS", "") not in ("", "0")


def on_config(config):
    if _without_solutions():
        config["nav"] = _drop_nav_section(config["nav"], "Solutions")
    return config


def _drop_nav_section(nav, title):
    out = []
    for item in nav:
        if isinstance(item, dict):
            (key, value), = item.items()
            if key == title:
                continue
            item = {key: _drop_nav_section(value, title) if isinstance(value, list) else value}
        out.append(item)
    return out


def _is_notebook(file: File) -> bool:
    return file.src_uri.startswith(NOTEBOOK_DIRS) and file.src_uri.endswith(".py")


def on_files(files: Files, config) -> Files:
    for file in list(files):
        if not _is_notebook(file):
            continue
        if _without_solutions() and file.src_uri.startswith("notebooks/solutions/"):
            files.remove(file)
            continue
        notebook = jupytext.read(file.abs_src_path, fmt="py:percent")
        notebook.metadata["kernelspec"] = KERNEL
        stem = file.src_uri[:-len(".py")]
        files.append(File.generated(config, stem + ".md", content=notebook_page(notebook, posixpath.basename(stem))))
        files.append(File.generated(config, stem + ".ipynb", content=jupytext.writes(notebook, fmt="ipynb")))
    problems = sorted((Path(config["config_file_path"]).parent / "examples" / "problems").glob("*.*"))
    for path in problems:
        files.append(File.generated(config, f"problems/{path.name}", abs_src_path=str(path)))
    files.append(File.generated(config, "problem-files.md", content=problem_files_page(problems)))
    for path in sorted((Path(config["config_file_path"]).parent / "examples").glob("*.py")):
        files.append(File.generated(config, f"examples/{path.name}", abs_src_path=str(path)))
    source = package_files("mathjax").joinpath("static", "mathjax", "es5", "tex-svg-full.js")
    files.append(File.generated(config, MATHJAX, abs_src_path=str(source)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Without the solutions, the notebooks page names the solution scripts instead of linking the missing pages."""
    if _without_solutions() and page.file.src_uri == "notebooks/index.md":
        return SOLUTION_LINK.sub(r"`solutions/\1.py` (not in this site)", markdown)
    return markdown


def on_page_content(html: str, page, config, files) -> str:
    """Docstrings rendered by mkdocstrings keep reST roles as text before the code span: drop the role."""
    return ROLE.sub("", html)


def notebook_page(notebook, stem: str) -> str:
    """The Markdown page of a notebook: its cells in order, solution cells collapsed under "Solution"."""
    parts = []
    for i, cell in enumerate(notebook.cells):
        text = cell.source.strip("\n")
        if cell.cell_type == "code":
            text = f"```python\n{text}\n```"
        if "solution" in cell.metadata.get("tags", ()):
            text = '??? success "Solution"\n\n' + textwrap.indent(text, "    ")
        parts.append(text)
        if i == 0:   # after the title: how to get and run it
            parts.append(f"*Download:* [notebook]({stem}.ipynb) · [jupytext script]({stem}.py) "
                         f"(see [the notebooks page](../index.md) for how to run them).")
    return "\n\n".join(parts) + "\n"


def problem_files_page(paths) -> str:
    """The page that lists the bundled problem files: a download link and the text of each TOML file."""
    parts = ["# Problem files",
             "The problem files of the course sessions and the examples, as shipped in `examples/problems/` of the "
             "source. Download one, edit it, and run `fairmodel describe FILE`, `fairmodel solve FILE`, `fairmodel "
             "crosscheck FILE` or `fairmodel sweep FILE --param KEY --values ...`; the format is on the "
             "[Command line](cli.md) page."]
    for path in paths:
        parts.append(f"## {path.name}\n\n[Download](problems/{path.name})")
        if path.suffix == ".toml":
            parts.append(f"```toml\n{path.read_text().strip()}\n```")
    return "\n\n".join(parts) + "\n"
