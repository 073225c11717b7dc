"""Notebook views: short reprs (< 300 characters whatever the history holds), Markdown/HTML views that are well
formed whatever the names contain, and describe() in text, Markdown and LaTeX with the exact program's structure
instead of CVXPY's internal names and data matrices."""
import re

import pytest

import fairmodel as fm
from fairmodel.utilities import display as _display


@pytest.fixture(scope="module")
def gdro():
    data = fm.datasets.make_gdro_synthetic(m=3, d=4, n_per_group=40, seed=0)
    w = fm.Weights(4, radius=2.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    report = fm.crosscheck(prob, seed=0, stochastic_options={"epochs": 30})
    return prob, report


def _cells(line):
    return len(re.split(r"(?<!\\)\|", line.strip())) - 2


def _well_formed(md):
    tables, current = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    assert tables
    for t in tables:
        assert len({_cells(line) for line in t}) == 1, t


def test_short_reprs(gdro):
    prob, report = gdro
    for obj in (prob, report, report.exact, report.stochastic):
        text = repr(obj)
        assert len(text) < 300 and "\n" not in text and text.startswith("<fairmodel.")
    assert len(report.stochastic.history) > 0       # the history is there, but not in the repr
    assert "ok" in repr(report.exact) and "objective" in repr(report.exact)


def test_markdown_and_html_views(gdro):
    prob, report = gdro
    res = report.stochastic
    _well_formed(res._repr_markdown_())
    _well_formed(report._repr_markdown_())          # check names hold "|" (|x - y|, ||w||): escaped
    assert res.to_markdown() == res._repr_markdown_()
    for html in (res._repr_html_(), report._repr_html_()):
        assert html.startswith("<table>") and html.count("<table>") == html.count("</table>")
    assert f"{res.objective:.6g}" in res._repr_html_()
    assert "$$" in prob._repr_markdown_() and "\\max_{g}" in prob._repr_markdown_()


def test_md_table_escapes_pipes_and_newlines():
    md = _display.md_table(["a", "||w||"], [["|x - y|", "line\nbreak"]])
    _well_formed(md)


def test_describe_formats_show_the_program_structure(gdro):
    prob, _ = gdro
    text = prob.describe()
    assert "Exact program of method 'epigraph' (not built by the default method 'dual'; " in text
    assert "variables: t (scalar); w (4)" in text
    assert "inequalities: 3 rows in (t, w); logistic loss" in text
    for internal in ("PnormApprox", "PowerApprox", "[[", "..."):
        assert internal not in text
    md = prob.describe(format="markdown")
    assert md.count("$$") == 2 and "**Exact program" in md
    latex = prob.describe(format="latex")
    assert "\\begin{align*}" in latex and "\\end{align*}" in latex and latex.count("\\begin{itemize}") == \
        latex.count("\\end{itemize}")
    assert "\\max_{g}" in latex and "\\operatorname{logistic}" in latex and "epigraph" in latex
    with pytest.raises(fm.OptionError, match="format must be one of text, markdown, latex"):
        prob.describe(format="html")


def test_latex_of_a_declaration():
    data = fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=30, seed=0)
    w = fm.Weights(3, radius=2.0)
    kappa = fm.parameter(0.1, "kappa")
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks)), [fm.norm(w) <= kappa])
    latex = prob.formulation("latex")
    assert "\\text{minimize}\\quad & \\max_{g} \\frac{1}{|G_g|}\\sum_{i \\in G_g} \\operatorname{logistic}" \
           "\\left(x_i^\\top w, y_i\\right)" in latex
    assert "\\|w\\|_{2} \\le \\kappa && \\text{(c0)}" in latex


def test_frontier_views_are_short_and_well_formed():
    """The helpers fairmodel.sweeps.frontier.Frontier uses for its notebook views (columns may hold "|", e.g. ||w||)."""
    data = fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=30, seed=0)
    w = fm.Weights(3, radius=2.0)
    k = fm.parameter(1.0, "k")
    risk = fm.mean(fm.logistic_loss(data.score(w), data.y))
    frontier = fm.Problem(fm.Minimize(risk), [fm.norm(w) <= k]).sweep("k", [0.5, 1.0, 1.5, 2.0, 3.0])
    text = _display.frontier_repr(frontier)
    assert len(text) < 300 and text.startswith("<fairmodel.Frontier k = [0.5, 1, 1.5, 2, ...] (5 values)")
    rows = frontier.rows()
    rows[0]["||w||"] = 0.5                                  # a column name with "|" (as a norm's) stays one cell
    md = _display.rows_markdown(rows)
    _well_formed(md)
    assert md.count("\n") == 6 and "\\|\\|w\\|\\|" in md
    assert _display.rows_html(frontier.rows()).count("<tr>") == 6
