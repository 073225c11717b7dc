"""Short text, Markdown and HTML views of the library's objects (notebooks show ``_repr_markdown_`` /
``_repr_html_``; ``repr`` stays one short line, the full detail is one call away: ``summary()``,
``to_markdown()``)."""
from __future__ import annotations

import html
import math
import re
import shutil
import textwrap
import unicodedata

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


GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa", "lambda", "mu", "nu", "xi",
         "pi", "rho", "sigma", "tau", "phi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi",
         "Psi", "Omega")
_TEXT_SPECIAL = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{",
                 "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "<": "\\textless{}",
                 ">": "\\textgreater{}", "|": "\\textbar{}"}
# symbols of the library's text output, written in LaTeX (text mode); other letters by their Unicode names
_UNICODE = {"·": "$\\cdot$", "²": "$^2$", "⊙": "$\\odot$", "∩": "$\\cap$", "≤": "$\\le$", "≥": "$\\ge$",
            "∈": "$\\in$", "±": "$\\pm$", "×": "$\\times$", "→": "$\\to$", "—": "---", "–": "--", "’": "'",
            "‘": "`", "“": "``", "”": "''", "…": "\\dots{}", "√": "$\\surd$", "∞": "$\\infty$",
            "Î": "$\\hat I$"}


def _unicode_latex(ch: str) -> str:
    """A non-ASCII character in LaTeX text mode: a symbol, a Greek letter, or its ASCII base letter (é -> e)."""
    if ch in _UNICODE:
        return _UNICODE[ch]
    if unicodedata.combining(ch):     # an accent on the previous letter (θ̂): the letter stays, the accent goes
        return ""
    name = unicodedata.name(ch, "")
    if name.startswith("GREEK SMALL LETTER ") or name.startswith("GREEK CAPITAL LETTER "):
        word = name.split()[-1].lower()
        word = word.capitalize() if "CAPITAL" in name else word
        if word in GREEK or word.lower() in GREEK:
            return f"$\\{word}$"
    base = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
    return base or "?"


def latex_text(text: str) -> str:
    """Prose for a LaTeX document: special characters escaped, only ASCII in the output (symbols and Greek
    letters as LaTeX, accented letters by their base letter)."""
    out = []
    for ch in str(text):
        if ch in _TEXT_SPECIAL:
            out.append(_TEXT_SPECIAL[ch])
        elif ord(ch) < 128:
            out.append(ch)
        else:
            out.append(_unicode_latex(ch))
    return "".join(out)


def latex_ident(name: str) -> str:
    """A user's name (a variable, a parameter) in LaTeX math: Greek names as letters (``kappa`` -> ``\\kappa``,
    ``eps`` -> ``\\epsilon``), one letter as itself, a letter and digits with the digits as subscript, anything
    else upright."""
    name = str(name)
    if name in GREEK or name == "eps":
        return "\\epsilon" if name in ("eps", "epsilon") else f"\\{name}"
    if re.fullmatch(r"[A-Za-z]", name):
        return name
    m = re.fullmatch(r"([A-Za-z])_?(\d+)", name)
    if m:
        return f"{m.group(1)}_{{{m.group(2)}}}"
    m = re.fullmatch(r"([A-Za-z]+)_([A-Za-z0-9]+)", name)
    if m and (m.group(1) in GREEK or len(m.group(1)) == 1):
        return f"{latex_ident(m.group(1))}_{{\\mathrm{{{m.group(2)}}}}}"
    return f"\\mathrm{{{latex_text(name)}}}"


def latex_number(v: float) -> str:
    """A number in LaTeX math (``1e-05`` -> ``10^{-5}``, ``2.5e-06`` -> ``2.5 \\cdot 10^{-6}``)."""
    text = fmt(v, 6) if not isinstance(v, str) else v
    if text in ("nan", "inf", "-inf"):
        return {"nan": "\\mathrm{nan}", "inf": "\\infty", "-inf": "-\\infty"}[text]
    if "e" in text:
        mantissa, exponent = text.split("e")
        power = f"10^{{{int(exponent)}}}"
        return power if mantissa in ("1", "1.0") else f"{mantissa} \\cdot {power}"
    return text


# In prose (method descriptions, notes): a norm ||w||_2, a name with sub/superscripts (R_g, R*_g, x_(k+1),
# R^99, max_(q in simplex); the script _hat is a hat: tau_hat_s), or the name of a Greek letter (pi, Lambda), is set
# as math; the rest is escaped text.
_SCRIPT = r"(?:\((?:[^()]|\([^()]*\))*\)|[A-Za-z0-9*+']+)"
_PROSE_MATH = re.compile(r"(?P<norm>\|\|(?P<nv>[^|]+?)\|\|(?P<np>_\w+)?(?P<nq>\^\w+)?)"
                         r"|(?P<op><=|>=)|(?P<pow>(?<=\))\^\w+)"
                         rf"|(?P<tok>\b(?P<base>[A-Za-z][A-Za-z0-9]*)(?P<star>\*?)(?P<scripts>(?:[_^]{_SCRIPT})+))"
                         rf"|(?P<greek>\b(?:{'|'.join(GREEK)})\b)")
_OPERATORS = {"min": "\\min", "max": "\\max", "sum": "\\sum", "sup": "\\sup", "inf": "\\inf", "log": "\\log",
              "exp": "\\exp", "in": "\\in", "mean": "\\operatorname*{mean}"}
_MATH_TOKEN = re.compile(rf"(?P<tok>\b(?P<base>[A-Za-z][A-Za-z0-9]*)(?P<star>\*?)(?P<scripts>(?:[_^]{_SCRIPT})*))"
                         r"|(?P<op><=|>=)|(?P<special>[{}%&#$~\\|])")


def _math_word(m) -> str:
    base = m.group("base")
    out = _OPERATORS.get(base) or latex_ident(base)
    scripts = re.findall(rf"([_^])({_SCRIPT})", m.group("scripts") or "")
    if ("_", "hat") in scripts:                    # tau_hat_s: an estimate, \hat\tau_{s}
        out, scripts = f"\\hat{{{out}}}", [s for s in scripts if s != ("_", "hat")]
    out += "^{*}" if m.group("star") else ""
    for kind, body in scripts:
        body = body[1:-1] if body.startswith("(") and body.endswith(")") else body
        out += f"{kind}{{{_ascii_math(body)}}}"
    return out + (" " if out.startswith("\\") else "")


def _ascii_math(text: str) -> str:
    """A snippet of the library's ASCII math (``x_(k+1) - x_k``, ``q in simplex``) as LaTeX math."""
    def repl(m):
        if m.group("op"):
            return "\\le " if m.group("op") == "<=" else "\\ge "
        if m.group("special"):
            return {"|": "|", "{": "\\{", "}": "\\}"}.get(m.group("special"), "\\" + m.group("special"))
        return _math_word(m)
    return _MATH_TOKEN.sub(repl, text).replace("*", "^{*}").strip()


def _prose_math(m) -> str:
    if m.group("op"):
        return "$\\le$" if m.group("op") == "<=" else "$\\ge$"
    if m.group("pow"):
        return f"$^{{{_ascii_math(m.group('pow')[1:])}}}$"
    if m.group("greek"):
        return f"${latex_ident(m.group('greek'))}$"
    if m.group("norm"):
        sub = f"_{{{_ascii_math(m.group('np')[1:])}}}" if m.group("np") else ""
        sup = f"^{{{_ascii_math(m.group('nq')[1:])}}}" if m.group("nq") else ""
        return f"$\\|{_ascii_math(m.group('nv'))}\\|{sub}{sup}$"
    scripts = re.findall(rf"([_^])({_SCRIPT})", m.group("scripts"))
    base = m.group("base")
    hat = base in GREEK or len(base) == 1      # the script _hat of a symbol (tau_hat_s), not of a name in code
    if len([s for s in scripts if not (hat and s == ("_", "hat"))]) > 1 or (
            len(base) > 1 and base not in GREEK and base not in _OPERATORS
            and re.fullmatch(r"_[A-Za-z]{2,}", m.group("scripts") or "") and scripts[0][1] not in GREEK):
        return f"\\texttt{{{latex_text(m.group(0))}}}"     # a name in code (weak_partial_dp, mean_risk)
    return f"${_math_word(m).strip()}$"


def latex_prose(text: str) -> str:
    """Prose with the library's ASCII math (``R_g(w) - c_g``, ``||w||_2 <= 5``, ``R^99``) for a LaTeX document:
    the math tokens in inline math, the rest escaped (ASCII only)."""
    out, last = [], 0
    text = str(text)
    for m in _PROSE_MATH.finditer(text):
        out += [latex_text(text[last:m.start()]), _prose_math(m)]
        last = m.end()
    out.append(latex_text(text[last:]))
    return "".join(out)


# LaTeX text mode back to Markdown: what latex_text writes (and the ties and quotes of hand-written LaTeX prose), in
# this order. "\\$" and "\\_" stay escaped (a "$" would start math on a page that typesets $...$), "*" is escaped.
_TEXT_MARKDOWN = [("~", "\u00a0"), ("\\textbackslash{}", "\\\\"), ("\\textasciitilde{}", "~"),
                  ("\\textasciicircum{}", "^"), ("\\textless{}", "&lt;"), ("\\textgreater{}", "&gt;"),
                  ("\\textbar{}", "|"), ("\\dots{}", "…"), ("\\&", "&"), ("\\%", "%"), ("\\#", "#"), ("\\{", "{"),
                  ("\\}", "}"), ("---", "—"), ("--", "–"), ("``", "“"), ("''", "”"), ("`", "‘"), ("*", "\\*")]
_TEXTTT = re.compile(r"\\texttt\{((?:[^{}]|\{\})*)\}")
_INLINE_MATH = re.compile(r"(\$[^$]*\$)")


def markdown_prose(tex: str) -> str:
    """A line of LaTeX prose (math in ``$...$``, e.g. the "where" lines of ``describe(format="latex")``) as
    Markdown: the math as it is, ``\\texttt{x}`` as a code span, the text's escapes, ties and quotes as
    characters."""
    return "".join(part if k % 2 else _markdown_text(part) for k, part in enumerate(_INLINE_MATH.split(tex)))


def _markdown_text(tex: str) -> str:
    out = []
    for k, part in enumerate(_TEXTTT.split(tex)):      # text, code, text, code, ...
        if k % 2:
            for ch, latex in _TEXT_SPECIAL.items():
                part = part.replace(latex, ch)
            out.append(f"`{part}`")
            continue
        for latex, markdown in _TEXT_MARKDOWN:
            part = part.replace(latex, markdown)
        out.append(part)
    return "".join(out)


LATEX_PACKAGES = ("amsmath", "amssymb")


def latex_document(body: str, title: str = "") -> str:
    """A complete LaTeX document around a ``describe(format="latex")`` fragment (pdflatex compiles it as is)."""
    head = ["\\documentclass[11pt]{article}", "\\usepackage[margin=2cm]{geometry}",
            "\\usepackage{" + ",".join(LATEX_PACKAGES) + "}", "\\allowdisplaybreaks", "\\sloppy",
            "\\begin{document}"]
    if title:
        head.append(f"\\section*{{{latex_text(title)}}}")
    return "\n".join(head + [body, "\\end{document}", ""])


# -- sweeps (fairmodel.sweeps.frontier.Frontier wires these in: __repr__, _repr_markdown_, _repr_html_) -------------------
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


def frontier_text(frontier, width: int | None = None, full: str = "to_markdown()") -> str:
    """A sweep's table for a terminal: the swept value, the status, the objective the user declared first (the judged
    risk when the reduction adds a regularizer to it, as DP post-processing's entropy term, then the regularized
    objective), the largest violation, each constraint's value and the time; columns that do not fit in ``width``
    characters (default: the terminal's) are left out from the right and named below, with ``full``, where every
    column (metrics, certificates) is."""
    rows = frontier.rows()
    width = width or shutil.get_terminal_size().columns
    regularized = any("metric:risk" in r and "metric:entropy_term" in r for r in rows)
    cols = [(frontier.param, frontier.param), ("status", "status")]
    cols += ([("metric:risk", "risk"), ("objective", "objective")] if regularized else [("objective", "objective")])
    cols += [("max_violation", "max violation")]
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols += [(k, k.split(":", 1)[1]) for k in keys if k.startswith("constraint:")] + [("time", "time (s)")]
    kept = len(cols)
    fixed = 5 if regularized else 4
    cells = [[fmt(r.get(key, "")) if r.get(key, "") != "" else "" for key, _ in cols] for r in rows]

    def table(n):
        widths = [max([len(cols[j][1])] + [len(c[j]) for c in cells]) for j in range(n)]
        lines = ["| " + " | ".join(cols[j][1].ljust(widths[j]) for j in range(n)) + " |",
                 "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        lines += ["| " + " | ".join(c[j].ljust(widths[j]) for j in range(n)) + " |" for c in cells]
        return lines

    lines = table(kept)
    while kept > fixed and len(lines[0]) > width:
        kept -= 1
        lines = table(kept)
    notes = []
    if regularized:
        kind = next((r.metrics.get("objective_kind") for r in frontier.results if r is not None), None)
        notes.append("risk: the objective declared; objective: what the solver minimizes"
                     + (f", {kind}" if isinstance(kind, str) else " (the risk plus a regularizer)"))
    left = [header for _, header in cols[kept:]]
    notes.append((f"not shown ({len(left)} column{'s' * (len(left) != 1)} too wide for {width} characters): "
                  f"{', '.join(left)}; " if left else "") + f"every column, metrics and certificates: {full}")
    for i, r in enumerate(rows):
        if r.get("status") == "error":
            notes.append(f"{frontier.param} = {fmt(r.get(frontier.param))}: {r.get('error', '')}")
    return "\n".join(lines + [textwrap.fill(n, max(width, 40), subsequent_indent="  ") for n in notes])


def rows_markdown(rows: list[dict]) -> str:
    """Flat records as a well-formed Markdown table (cells and headers escaped: ``||w||`` stays one cell)."""
    keys, body = _row_table(rows)
    return md_table(keys, body)


def rows_html(rows: list[dict], caption: str = "") -> str:
    keys, body = _row_table(rows)
    return html_table(keys, body, caption)
