"""MkDocs hooks of the documentation site (mkdocs.yml: ``hooks: [docs/hooks.py]``).

* The course notebooks are jupytext percent-format scripts, ``docs/notebooks/{exercises,solutions}/*.py``: each
  becomes a page (Markdown cells as they are, code cells as Python blocks followed by their outputs, solution
  cells in a collapsed "Solution" box) and an ``.ipynb`` download next to it (written by jupytext, without
  outputs).
* The notebooks are executed at build time, as Jupyter's "run all" would, in a fresh folder: each code cell's
  printed text, the value of its last expression (as Markdown when it has ``_repr_markdown_``, else its repr)
  and its Matplotlib figures (PNG files beside the page) are shown under it. A cell that raises stops its
  notebook, shows the traceback and logs a warning, so that ``mkdocs build --strict`` fails. The outputs are
  kept in ``build/notebook-outputs/``, under a digest of the notebook and of every file of the ``fairmodel``
  package: a second build with neither changed does not execute again. ``FAIRMODEL_DOCS_EXECUTE=0`` builds
  without executing (the pages then show code only).
* The problem files of ``examples/problems/`` are copied into the site (``problems/``) and listed with their
  text on a generated page, ``problem-files.md``, so that the command-line exercises can be done from the site;
  the example scripts of ``examples/`` are copied too (``examples/``), for the exercises that run one.
* The family pages show the formulation of a bundled problem file as ``describe(format="markdown")`` writes it
  (a ``<!-- formulation: FILE.toml -->`` line): the site's displayed declarations and the library's LaTeX are one
  notation from one source.
* MathJax 3 is served from the installed ``django-static-mathjax`` wheel (the ``docs`` extra), so the math of the
  site renders with no network access.
* The docstrings' reStructuredText roles (``:class:`Result```) are shown as code, without the role.
* ``FAIRMODEL_DOCS_WITHOUT_SOLUTIONS=1`` builds the site without the worked solutions (for a course whose
  students read the site); the notebooks page then names the solution scripts instead of linking their pages.
"""
from __future__ import annotations

import ast
import base64
import contextlib
import hashlib
import io
import json
import logging
import os
import posixpath
import re
import sys
import tempfile
import textwrap
import traceback
import warnings
from importlib.resources import files as package_files
from pathlib import Path

import jupytext
import matplotlib.pyplot as plt
from mkdocs.structure.files import File, Files

import fairmodel as fm

plt.switch_backend("Agg")   # the notebooks' figures are drawn off screen, and saved as PNG under their cells

NOTEBOOK_DIRS = ("notebooks/exercises/", "notebooks/solutions/")
MATHJAX = "assets/mathjax/tex-svg-full.js"
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}   # the .ipynb downloads' kernel
ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|obj):(?=<code>)")
SOLUTION_LINK = re.compile(r"\[solution\]\(solutions/(\w+)\.md\)")
FORMULATION = re.compile(r"(?m)^<!-- formulation: ([\w.-]+\.toml) -->$")
OUTPUTS = "build/notebook-outputs"   # the executed notebooks' outputs, by digest (relative to mkdocs.yml)
log = logging.getLogger("mkdocs.hooks.notebooks")


def _without_solutions() -> bool:
    return os.environ.get("FAIRMODEL_DOCS_WITHOUT_SOLUTIONS", "") not in ("", "0")


def _execute() -> bool:
    return os.environ.get("FAIRMODEL_DOCS_EXECUTE", "1") != "0"


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
    root = Path(config["config_file_path"]).parent
    for file in list(files):
        if not _is_notebook(file):
            continue
        if _without_solutions() and file.src_uri.startswith("notebooks/solutions/"):
            files.remove(file)
            continue
        notebook = jupytext.read(file.abs_src_path, fmt="py:percent")
        notebook.metadata["kernelspec"] = KERNEL
        stem = file.src_uri[:-len(".py")]
        outputs = executed_outputs(notebook, file.src_uri, root) if _execute() else None
        for i, cell in enumerate(outputs or []):
            for j, output in enumerate(cell):
                if output["kind"] == "image":
                    name = posixpath.join(posixpath.dirname(stem), figure_name(posixpath.basename(stem), i, j))
                    files.append(File.generated(config, name, content=base64.b64decode(output["data"])))
        files.append(File.generated(config, stem + ".md",
                                    content=notebook_page(notebook, posixpath.basename(stem), outputs)))
        files.append(File.generated(config, stem + ".ipynb", content=jupytext.writes(notebook, fmt="ipynb")))
    problems = sorted((root / "examples" / "problems").glob("*.*"))
    for path in problems:
        files.append(File.generated(config, f"problems/{path.name}", abs_src_path=str(path)))
    files.append(File.generated(config, "problem-files.md", content=problem_files_page(problems)))
    for path in sorted((root / "examples").glob("*.py")):
        files.append(File.generated(config, f"examples/{path.name}", abs_src_path=str(path)))
    source = package_files("mathjax").joinpath("static", "mathjax", "es5", "tex-svg-full.js")
    files.append(File.generated(config, MATHJAX, abs_src_path=str(source)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """A ``<!-- formulation: FILE.toml -->`` line becomes the formulation of that bundled problem file as
    ``describe(format="markdown")`` writes it. Without the solutions, the notebooks page names the solution scripts
    instead of linking the missing pages."""
    if _without_solutions() and page.file.src_uri == "notebooks/index.md":
        return SOLUTION_LINK.sub(r"`solutions/\1.py` (not in this site)", markdown)
    problems = Path(config["config_file_path"]).parent / "examples" / "problems"
    return FORMULATION.sub(lambda m: fm.load_problem(problems / m.group(1)).problem.formulation("markdown"), markdown)


def on_page_content(html: str, page, config, files) -> str:
    """Docstrings rendered by mkdocstrings keep reST roles as text before the code span: drop the role."""
    return ROLE.sub("", html)


def notebook_page(notebook, stem: str, outputs: list | None = None) -> str:
    """The Markdown page of a notebook: its cells in order, each code cell followed by its outputs (``outputs``:
    one list per cell, as :func:`run_notebook` gives; None: not executed), solution cells collapsed under
    "Solution"."""
    parts = []
    for i, cell in enumerate(notebook.cells):
        text = cell.source.strip("\n")
        if cell.cell_type == "code":
            text = f"```python\n{text}\n```"
            shown = [output_markdown(o, figure_name(stem, i, j)) for j, o in enumerate(outputs[i] if outputs else [])]
            if shown:
                text += '\n\n!!! output ""\n\n' + textwrap.indent("\n\n".join(shown), "    ")
        if "solution" in cell.metadata.get("tags", ()):
            text = '??? success "Solution"\n\n' + textwrap.indent(text, "    ")
        parts.append(text)
        if i == 0:   # after the title: how to get and run it
            parts.append(f"*Download:* [notebook]({stem}.ipynb) · [jupytext script]({stem}.py) "
                         f"(see [the notebooks page](../index.md) for how to run them).")
    return "\n\n".join(parts) + "\n"


def output_markdown(output: dict, figure: str) -> str:
    """One output of a code cell in Markdown: text in a code block, Markdown as it is, a figure as an image."""
    kind, data = output["kind"], output["data"]
    if kind == "markdown":
        return data
    if kind == "image":
        return f"![Figure]({figure})"
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", data)), default=0))
    return f"{fence}{'text' if kind == 'text' else 'pytb'}\n{data.rstrip()}\n{fence}"


def figure_name(stem: str, cell: int, output: int) -> str:
    """The file of a figure output, beside the notebook's page."""
    return f"{stem}_files/cell{cell}_{output}.png"


def executed_outputs(notebook, src_uri: str, root: Path) -> list:
    """The outputs of every cell of the notebook, from the store when the notebook and the package are unchanged,
    else by running it (a failure is logged as a warning, which fails a strict build, and is not stored)."""
    digest = hashlib.sha256(jupytext.writes(notebook, fmt="py:percent").encode())
    for path in sorted((root / "fairmodel").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    stored = root / OUTPUTS / f"{digest.hexdigest()}.json"
    if stored.is_file():
        return json.loads(stored.read_text())
    log.info("executing %s", src_uri)
    outputs, error = run_notebook(notebook, str(root))
    if error:
        log.warning("notebook %s: %s", src_uri, error)
    else:
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(json.dumps(outputs))
    return outputs


def run_notebook(notebook, path: str) -> tuple[list, str]:
    """Run the code cells in order in one namespace, in a fresh folder, with ``path`` first on ``sys.path`` (the
    package of the source tree): (per cell, its list of outputs {"kind": "text" | "markdown" | "image" | "error",
    "data": ...}; "" or what the first failing cell raised, the later cells not run)."""
    namespace = {"__name__": "__main__"}
    outputs = [[] for _ in notebook.cells]
    here = os.getcwd()
    plt.close("all")        # pyplot's figures are the notebook's: one left open before it would show under its cells
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*non-interactive.*cannot be shown")   # plt.show() on Agg
        os.chdir(folder)
        sys.path.insert(0, path)
        try:
            for i, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                printed, failure, value = io.StringIO(), None, None
                try:
                    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                        value = _run_cell(cell.source, namespace, f"<cell {i}>")
                except Exception as exc:   # the notebook's own error, shown on its page
                    failure = f"cell {i} raised {type(exc).__name__}: {exc}"
                    cell_frames = exc.__traceback__.tb_next.tb_next   # without run_notebook's and _run_cell's
                    outputs[i].append({"kind": "error", "data": "".join(
                        traceback.format_exception(type(exc), exc, cell_frames))})
                if printed.getvalue().strip():
                    outputs[i].insert(0, {"kind": "text", "data": printed.getvalue()})
                outputs[i] += _value_output(value) + [_figure_output(plt.figure(n)) for n in plt.get_fignums()]
                plt.close("all")
                if failure:
                    return outputs, failure
        finally:
            sys.path.remove(path)
            os.chdir(here)
    return outputs, ""


def _run_cell(source: str, namespace: dict, name: str):
    """Execute a cell; return the value of its last statement when that is an expression (as Jupyter shows it)."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, name, "exec"), namespace)
    return eval(compile(ast.Expression(last.value), name, "eval"), namespace) if last else None


def _value_output(value) -> list:
    """The displayed value of a cell: none for None or Matplotlib objects (their figures are shown)."""
    items = value if isinstance(value, (list, tuple)) and value else [value]
    if value is None or all(type(v).__module__.startswith("matplotlib") for v in items):
        return []
    if hasattr(value, "_repr_markdown_"):
        return [{"kind": "markdown", "data": value._repr_markdown_()}]
    return [{"kind": "text", "data": repr(value)}]


def _figure_output(figure) -> dict:
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=80, bbox_inches="tight")
    return {"kind": "image", "data": base64.b64encode(png.getvalue()).decode()}


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
