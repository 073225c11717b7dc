"""A parser check of LaTeX documents: what pdflatex would reject (unbalanced braces and delimiters, unmatched
environments, unknown macros, non-ASCII characters, double scripts), without pdflatex."""
import re

# every macro the describe() output may use (a new one must be added here on purpose: it must exist in LaTeX with
# the amsmath and amssymb packages)
KNOWN_MACROS = {
    "documentclass", "usepackage", "allowdisplaybreaks", "sloppy", "begin", "end", "section", "section*",
    "paragraph", "item", "texttt", "text", "quad", "qquad", "frac", "sum", "in", "left", "right", "Big", "max", "min",
    "sup", "log", "exp", "operatorname", "operatorname*", "mathbb", "mathrm", "top", "le", "ge", "ne", "cdot", "dots",
    "times", "pm", "mid", "cap", "hat", "bar", "langle", "rangle", "infty", "textbar", "textless", "textgreater",
    "textasciitilde", "textasciicircum", "textbackslash", "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
    "theta", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "phi", "psi", "omega", "Gamma", "Delta",
    "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega", "pi", "odot", "surd", "to", "textstyle", "nabla",
}
ENVIRONMENTS = {"document", "align*", "itemize"}


def check_latex(doc: str) -> None:
    """A parser check of a LaTeX document: what pdflatex would reject, without pdflatex."""
    bad = sorted({ch for ch in doc if ord(ch) > 127})
    assert not bad, f"non-ASCII characters {bad}"
    stack = []
    for m in re.finditer(r"\\begin\{([^{}]*)\}|\\end\{([^{}]*)\}", doc):
        if m.group(1):
            assert m.group(1) in ENVIRONMENTS, f"unknown environment {m.group(1)}"
            stack.append(m.group(1))
        else:
            assert stack and stack.pop() == m.group(2), f"\\end{{{m.group(2)}}} does not close the open environment"
    assert not stack, f"unclosed environments {stack}"
    depth = 0
    for tok in re.finditer(r"\\[A-Za-z]+\*?|\\.|[{}]", doc):
        t = tok.group(0)
        if t.startswith("\\") and t[1:2].isalpha():
            assert t[1:] in KNOWN_MACROS, f"unknown macro {t}"
        elif t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            assert depth >= 0, f"unbalanced closing brace near {doc[max(0, tok.start() - 60):tok.end()]!r}"
    assert depth == 0, "unbalanced braces"
    for block in re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", doc, re.S):
        for row in re.split(r"\\\\", block):     # \left and \right pair up within one row of an alignment
            assert row.count("\\left") == row.count("\\right"), f"\\left/\\right unbalanced in {row!r}"
            assert "$" not in row, f"inline math inside display math: {row!r}"
    text_mode = re.sub(r"\\begin\{align\*\}.*?\\end\{align\*\}", "", doc, flags=re.S)
    for line in text_mode.splitlines():
        assert line.replace("\\$", "").count("$") % 2 == 0, f"unbalanced $ in {line!r}"
        for math in re.findall(r"\$([^$]*)\$", line.replace("\\$", "")):
            _check_scripts(math)
    for block in re.findall(r"\\begin\{align\*\}(.*?)\\end\{align\*\}", doc, re.S):
        _check_scripts(block)


def _group_end(text: str, i: int) -> int:
    """The index after the brace group that opens at ``text[i] == "{"``."""
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0) if text[j - 1:j] != "\\" else 0
        if depth == 0:
            return j + 1
    raise AssertionError(f"unclosed group in {text!r}")


def _check_scripts(math: str) -> None:
    """No atom with two subscripts or two superscripts (TeX's "Double subscript" error)."""
    i = 0
    while i < len(math):
        ch = math[i]
        if ch == "\\":
            i += 2 if not math[i + 1:i + 2].isalpha() else len(re.match(r"\\[A-Za-z]+\*?", math[i:]).group(0))
            continue
        if ch in "_^":
            j = i + 1
            while j < len(math) and math[j] == " ":
                j += 1
            if math[j] == "{":
                j = _group_end(math, j)
            elif math[j] == "\\":
                cmd = re.match(r"\\[A-Za-z]+", math[j:])
                j += len(cmd.group(0)) if cmd else 2
                if j < len(math) and math[j] == "{":
                    j = _group_end(math, j)
            else:
                j += 1
            assert not math[j:].lstrip().startswith(ch), f"double {'sub' if ch == '_' else 'super'}script in {math!r}"
            i = j
            continue
        i += 1
