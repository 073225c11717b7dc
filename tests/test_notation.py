"""The formulation a reader sees: the text form (indices, parentheses, the weights' domain, where-sets named by
the mask they come from, every symbol defined) and LaTeX that compiles. Every bundled problem file's
``fairmodel describe --format latex`` document passes a parser check (balanced braces and delimiters, matched
environments, known macros only, ASCII only) and, where pdflatex is installed, compiles."""
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.frontends import cli, problemfile
from fairmodel.utilities import display as _display
from tests.latex_check import check_latex

PROBLEMS = sorted((Path(__file__).resolve().parent.parent / "examples" / "problems").glob("*.toml"))
PDFLATEX = shutil.which("pdflatex")


@pytest.fixture(scope="module")
def documents():
    """The `fairmodel describe --format latex` document of every bundled problem file."""
    out = {}
    for path in PROBLEMS:
        prob, data, spec = problemfile.load(path)
        body = prob.describe(format="latex")
        out[path.stem] = _display.latex_document(f"\\paragraph{{Data}} {_display.latex_text(repr(data))}\n\n{body}",
                                                 spec.doc.get("title", ""))
    return out


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_every_bundled_problem_file_gives_latex_that_passes_the_parser_check(documents, path):
    doc = documents[path.stem]
    check_latex(doc)
    assert "\\text{minimize}" in doc and "where" in doc


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (Debian: apt-get install texlive-latex-base "
                                             "texlive-latex-recommended); the parser check above still runs")
@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: p.stem)
def test_every_bundled_problem_file_gives_latex_that_pdflatex_compiles(documents, path, tmp_path):
    tex = tmp_path / f"{path.stem}.tex"
    tex.write_text(documents[path.stem])
    run = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", tex.name], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    errors = [line for line in run.stdout.splitlines() if line.startswith("!")]
    assert run.returncode == 0 and not errors, f"pdflatex failed: {errors or run.stdout[-2000:]}"
    assert (tmp_path / f"{path.stem}.pdf").stat().st_size > 1000


def test_the_parser_check_can_fail():
    good = _display.latex_document("\\begin{align*}\n\\text{minimize}\\quad & x\n\\end{align*}")
    check_latex(good)
    for broken, why in [(good.replace("x\n", "\\left(x\n"), "left/right"), (good + "é", "non-ASCII"),
                        (good.replace("x\n", "\\foo x\n"), "unknown macro"), (good.replace("x\n", "{x\n"), "braces"),
                        (good.replace("\\end{align*}", ""), "environments"),
                        (good.replace("\\end{document}", "$R_\\mathrm{a}_b$\n\\end{document}"), "double script")]:
        with pytest.raises(AssertionError):
            check_latex(broken)
            pytest.fail(f"the check missed {why}")


@pytest.fixture(scope="module")
def law():
    return fm.datasets.load_lawschool(target="bar1", sensitive="race").subsample(400, seed=0)


def test_text_form_has_indices_parentheses_the_domain_and_named_where_sets(law):
    w = fm.Weights(law.n_features, radius=5.0, intercept=True)
    s = law.score(w)
    risks = fm.group_mean(fm.logistic_loss(s, law.y), law.groups)
    prob = fm.Problem(fm.Minimize(fm.max(risks)), [(fm.equalized_odds_gap(s, law) <= 0.05).named("eodds")])
    text = str(prob)
    lines = text.splitlines()
    assert lines[0] == "minimize    max_g [mean_(i in G_g) logistic(x_i·w + b, y_i)]"
    assert lines[1] == "over        (w, b) in R^9 x R, ||(w, b)||_2 <= 5"
    # the two strata of equalized odds are told apart by the mask they come from, the score is parenthesized
    positives = "mean_(i in G_g, y_i = +1) (x_i·w + b)"
    negatives = "mean_(i in G_g, y_i = -1) (x_i·w + b)"
    assert lines[2] == (f"subject to  eodds: max(max_g [{positives}] - min_g [{positives}], max_g [{negatives}] - "
                        f"min_g [{negatives}]) <= 0.05")
    where = text.split("where")[1]
    for definition in ("x_i in R^9: the features of row i = 1..400", "y_i in {-1, +1}: the label of row i (bar1)",
                       "b: the intercept", "G_g: the rows of group g, for the groups of race: non-white",
                       "logistic(z, y) = log(1 + exp(-y z))"):
        assert definition in where
    assert "[i in where]" not in text and "where=" not in text.split("where")[0]


def test_a_mask_that_is_no_label_gets_a_numbered_set_with_its_size(law):
    w = fm.Weights(law.n_features, radius=5.0)
    s = law.score(w)
    mask = np.asarray(law.X[:, 0] > np.median(law.X[:, 0]))
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, law.y))), [fm.mean(s, where=mask) <= 1.0,
                                                                         fm.mean(s, where=~mask) <= 1.0])
    text = str(prob)
    assert "mean_(i in S1) x_i·w <= 1" in text and "mean_(i in S2) x_i·w <= 1" in text
    assert f"S1: the rows selected by a where= mask ({int(mask.sum()):,} rows)" in text
    latex = prob.formulation("latex")
    assert "\\frac{1}{|S_{1}|}\\sum_{i \\in S_{1}}" in latex and "\\frac{1}{n}\\sum_{i=1}^{n}" in latex


def test_latex_of_the_composition_atoms_and_a_long_constraint_breaks_over_lines(law):
    w = fm.Weights(law.n_features, radius=5.0, intercept=True)
    s = law.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, law.y)) + 0.01 * fm.sum_squares(w)),
                      [(fm.equalized_odds_gap(s, law) <= 0.05).named("eodds"), fm.norm(w, 1) <= 3.0])
    latex = prob.formulation("latex")
    check_latex(_display.latex_document(latex))
    assert "\\max\\Big\\{" in latex and "\\\\\n  & \\qquad" in latex      # the wide max breaks after its comma
    assert "G_g^{+} = \\{i \\in G_g : y_i = +1\\}" in latex and "G_g^{-}" in latex
    assert "\\|w\\|_{2}^2" in latex and "\\|w\\|_{1} \\le 3" in latex and "0.01\\,\\|w\\|" in latex
    md = prob.formulation("markdown")
    assert md.startswith("$$\n\\begin{aligned}") and "\\end{aligned}\n$$" in md


def test_describe_reads_the_chosen_reduction_plainly_and_latex_prose_has_no_raw_scripts():
    data = fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=30, seed=0)
    w = fm.Weights(3, radius=2.0)
    prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    text = prob.describe()
    assert "chosen: it comes first in the order of priority" in text and "lowest priority" not in text
    latex = prob.describe(format="latex")
    check_latex(_display.latex_document(latex))
    assert "R\\_g" not in latex and "\\^{}" not in latex and "$R_{g}$" in latex


def test_latex_prose_sets_the_library_ascii_math_as_math():
    assert _display.latex_prose("w in R^99, ||w||_2 <= 5") == "w in $R^{99}$, $\\|w\\|_{2}$ $\\le$ 5"
    assert _display.latex_prose("(R_g(w) - c_g)") == "($R_{g}$(w) - $c_{g}$)"
    assert _display.latex_prose("fm.weak_partial_dp and 50% & #") == \
        "fm.\\texttt{weak\\_partial\\_dp} and 50\\% \\& \\#"
    assert _display.latex_text("Fähigkeit · κ ≤ 1") == "Fahigkeit $\\cdot$ $\\kappa$ $\\le$ 1"


def test_cli_describe_formats(capsys):
    path = str(next(p for p in PROBLEMS if p.stem == "compositions_covariance"))
    assert cli.main(["describe", path, "--format", "latex"]) == 0
    doc = capsys.readouterr().out
    check_latex(doc)
    assert doc.startswith("\\documentclass") and doc.rstrip().endswith("\\end{document}")
    assert cli.main(["describe", path, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "$$" in md and "**Problem family:**" in md
    assert cli.main(["describe", path]) == 0
    out = capsys.readouterr().out
    assert "over        (w, b) in R^9 x R, ||(w, b)||_2 <= 5" in out and "a_i: a fixed data vector" in out


def _prose_outside_math(latex: str, paragraph: str) -> str:
    """The text of the items of a \\paragraph{...} list with the inline math taken out."""
    block = latex.split(f"\\paragraph{{{paragraph}}}", 1)[1].split("\\end{itemize}", 1)[0]
    return re.sub(r"\$[^$]*\$", "", block)


PLAIN_MATH = re.compile(r"\b(pi|tau|beta|eta|Phi|Lambda|lambda|nu|alpha|grad|eps)\b|\\textbar|\\textless|"
                        r"\\textgreater|\\_|\\mathrm\{pi\}|\\mathrm\{hat\}")


def test_describe_shows_the_entropic_objective_the_dp_solver_minimizes(documents, capsys):
    """`fairmodel describe` of the DP problem file (beta = 100) prints R_beta = the risk + (1/beta) E[sum pi log pi],
    the objective of the entropic problem (4) of Chzhen, Hebiri, Taturyan (2024), in text and in LaTeX, with beta
    defined; and the notes after the methods (Structure ... Judge) are typeset: no Greek name, pi_z, tau_hat, |, <
    or _ left as plain text outside the math."""
    path = str(next(p for p in PROBLEMS if p.stem == "dp_postprocessing"))
    assert cli.main(["describe", path]) == 0
    text = capsys.readouterr().out
    assert "minimize    E[sum_l pi(l|X) (eta(X) - y_l)^2] + (1/beta) E[sum_l pi(l|X) log pi(l|X)]" in text
    assert "beta = 100: 1/beta weighs the negative entropy" in text
    doc = documents["dp_postprocessing"]
    objective = doc.split("\\text{minimize}\\quad &", 1)[1].split("\\\\", 1)[0]
    assert "+ \\frac{1}{\\beta}\\,\\mathbb{E}\\left[\\sum_{l} \\pi(l \\mid X) \\log \\pi(l \\mid X)\\right]" in objective
    assert "\\item $\\beta = 100$:" in doc
    prose = _prose_outside_math(doc, "Structure")
    assert "Judge:" in prose and "Dual (5):" in prose
    assert not PLAIN_MATH.search(prose), PLAIN_MATH.search(prose)
    methods = _prose_outside_math(doc, "Exact backend")
    assert "pi" not in methods.split() and "\\mathrm{pi}" not in doc and "tau_{\\mathrm{hat}}" not in doc
    assert PLAIN_MATH.search(_prose_outside_math(doc.replace("$\\pi_{z}(l", "pi_z(l"), "Structure"))   # can fail


def test_the_lp_shows_no_entropy_term(tmp_path):
    """beta = 0 declares the LP (3): the formulation is the risk alone."""
    src = next(p for p in PROBLEMS if p.stem == "dp_postprocessing")
    path = tmp_path / "lp.toml"
    path.write_text(src.read_text().replace("beta = 100", "beta = 0"))
    prob = fm.load_problem(path).problem
    assert "log" not in prob.formulation() and "\\log" not in prob.formulation("latex")
    assert "beta = inf (LP (3))" in prob.describe(program=False)


def test_the_generic_judge_certificate_is_typeset(documents):
    doc = documents["compositions_covariance"]
    assert "$\\max_{y} \\Phi(w, y) - \\min_{w'} \\Phi(w', y)$" in doc
    prose = _prose_outside_math(doc, "Structure")
    assert "Judge certificate" in prose and "Phi" not in prose


def test_latex_prose_sets_greek_names_and_hats():
    assert _display.latex_prose("mean of tau_hat over (Lambda, V); pi_z of (7)") == \
        "mean of $\\hat{\\tau}$ over ($\\Lambda$, V); $\\pi_{z}$ of (7)"
    assert _display.latex_prose("t_hat_s(x) and fm.foo_hat") == "$\\hat{t}_{s}$(x) and fm.\\texttt{foo\\_hat}"


@pytest.mark.parametrize("stem", ["dp_postprocessing", "mero_adult"])
def test_the_markdown_where_lines_are_markdown_not_latex_text(stem):
    """`describe(format="markdown")` (what a notebook and the site show) writes the "where" lines of the LaTeX
    form as Markdown: the math in $...$ as it is, no text-mode LaTeX around it (\\texttt{...}, eq.~(4), \\%)."""
    prob, _, _ = problemfile.load(next(p for p in PROBLEMS if p.stem == stem))
    latex, markdown = prob.formulation("latex"), prob.formulation("markdown")
    where = markdown.split("\nwhere\n", 1)[1]
    prose = re.sub(r"\$[^$]*\$", "", where)
    assert not re.search(r"\\[A-Za-z]|~", prose), prose
    items = re.findall(r"(?m)^  \\item (.*)$", latex)
    assert [re.findall(r"\$[^$]*\$", i) for i in items] == [re.findall(r"\$[^$]*\$", w) for w in
                                                             re.findall(r"(?m)^- (.*)$", where)]   # the same math
    assert "eq.~(" in latex and "eq.\u00a0(" in where


def test_markdown_prose_turns_latex_text_into_markdown():
    line = r"as \texttt{metrics['risk\_x']} (eq.~(4), 50\%) --- $x_i \in G_{g}$ ``q'' a*b \textless{}1"
    assert _display.markdown_prose(line) == ("as `metrics['risk_x']` (eq.\u00a0(4), 50%) — $x_i \\in G_{g}$ “q” "
                                              "a\\*b &lt;1")
    assert _display.markdown_prose(_display.latex_prose("R_g(w) <= 5 for 3% & more")) == \
        "$R_{g}$(w) $\\le$ 5 for 3% & more"
