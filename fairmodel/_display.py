"""Short text, Markdown and HTML views of the library's objects (notebooks show ``_repr_markdown_`` /
``_repr_html_``; ``repr`` stays one short line, the full detail is one call away: ``summary()``,
``to_markdown()``)."""
from __future__ import annotations

import html
import math
import re

REPR_MAX = 300


def fmt(v, digits: int = 4) -> str:
    """A number for display (``–`` for None)."""
    if v is None:
        return "–"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        try:
            v = float(v)
        except (TypeError, ValueError):
            return str(v)
    if isinstance(v, int):
        return str(v)
    return "nan" if math.isnan(v) else f"{v:.{digits}g}"


def cell(text) -> str:
    """Text for a Markdown table cell: "|" (as in |x - y| or ||w||) would start a new cell, so it is escaped;
    line breaks would end the row."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(header, rows) -> str:
    """A well-formed Markdown table whatever the cells contain."""
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(header, rows, caption: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def short(text: str, limit: int = REPR_MAX) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "eps", "zeta", "eta", "theta", "kappa", "lambda", "mu", "nu",
         "xi", "rho", "sigma", "tau", "phi", "psi", "omega")
_TOKEN = re.compile(r"(?P<agg>\b(?:max|min)_(?P<sub>\([^()]*\)|\w+))|(?P<mean>\bmean_\((?P<msub>[^()]*)\))"
                    r"|(?P<sub2>_\((?P<s2>[^()]*)\))|(?P<func>\b[A-Za-z][A-Za-z0-9_]*(?=\())"
                    r"|(?P<word>\b[A-Za-z][A-Za-z0-9_]*\b)|(?P<op><=|>=|\|\||·|\[|\]|%)")


def latex_math(text: str) -> str:
    """A declaration as printed by the library (``minimize max_g [mean_(i in g) logistic(x·w, y)]``) in LaTeX
    notation (``\\max_{g} \\left[\\frac{1}{|g|}\\sum_{i \\in g} \\operatorname{logistic}(x \\cdot w, y)\\right]``)."""
    def sub(inner: str) -> str:
        return latex_math(inner.strip("()")).replace(" in ", " \\in ")

    def repl(m):
        if m.group("agg"):
            return f"\\{m.group('agg')[:3]}_{{{sub(m.group('sub'))}}}"
        if m.group("mean"):
            inner = m.group("msub")
            group = inner.split(" in ")[-1].strip() if " in " in inner else "n"
            return f"\\frac{{1}}{{|{group}|}}\\sum_{{{sub(inner)}}}"
        if m.group("sub2"):
            return f"_{{{sub(m.group('s2'))}}}"
        if m.group("func"):
            name = m.group("func")
            if name in ("max", "min", "log", "exp"):
                return f"\\{name}"
            return f"\\operatorname{{{name.replace('_', chr(92) + '_')}}}"
        if m.group("word"):
            word = m.group("word")
            if word in ("minimize", "maximize", "subject", "to", "in", "for", "all"):
                return {"in": "\\in", "minimize": "\\text{minimize}\\;", "maximize": "\\text{maximize}\\;"}.get(
                    word, f"\\text{{{word}}}")
            if word in GREEK:
                return "\\epsilon" if word == "eps" else f"\\{word}"
            return word if len(word) == 1 else f"\\mathrm{{{word.replace('_', chr(92) + '_')}}}"
        return {"<=": "\\le", ">=": "\\ge", "||": "\\|", "·": "\\cdot ", "[": "\\left[", "]": "\\right]",
                "%": "\\%"}[m.group("op")]
    if text.strip() == "subject to":
        return "\\text{subject to}"
    return _TOKEN.sub(repl, text)


def latex_text(text: str) -> str:
    """Prose for a LaTeX document (special characters escaped)."""
    out = []
    for ch in str(text):
        out.append({"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
                    "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\^{}"}.get(ch, ch))
    return "".join(out)


# -- sweeps (fairmodel.sweep.Frontier wires these in: __repr__, _repr_markdown_, _repr_html_) -------------------
def _row_table(rows: list[dict]):
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    return keys, [[fmt(row.get(k, "")) if row.get(k, "") != "" else "" for k in keys] for row in rows]


def frontier_repr(frontier) -> str:
    """One short line for a Frontier: parameter, values, failures, backend."""
    values = list(frontier.values)
    shown = ", ".join(fmt(v) for v in values[:4]) + (", ..." if len(values) > 4 else "")
    failed = f", {len(frontier.errors)} failed" if frontier.errors else ""
    return short(f"<fairmodel.Frontier {frontier.param} = [{shown}] ({len(values)} values{failed}), "
                 f"{frontier.backend or 'exact'} backend; .to_markdown() / .rows() for the table>")


def rows_markdown(rows: list[dict]) -> str:
    """Flat records as a well-formed Markdown table (cells and headers escaped: ``||w||`` stays one cell)."""
    keys, body = _row_table(rows)
    return md_table(keys, body)


def rows_html(rows: list[dict], caption: str = "") -> str:
    keys, body = _row_table(rows)
    return html_table(keys, body, caption)
