"""A declaration written for a reader: as text or as LaTeX, with every symbol it uses defined.

Every node renders itself, ``node.render(n)``, for a :class:`Notation` ``n`` (text or LaTeX); ``str(node)`` is
the text form with a fresh notation. One notation renders a whole problem, so it also collects what the symbols
mean (the "where" lines): the features x_i and labels y_i, the groups G_g, the sets of rows a ``where=`` mask
selects (named by the mask they come from when it is a label, ``y_i = +1``), the losses, the data vectors.
"""
from __future__ import annotations

import re

import numpy as np

from ..utilities import display


class Notation:
    """How to write math (``latex=False``: the library's text notation; ``True``: LaTeX math) and the
    definitions of the symbols used so far (``where()``)."""

    def __init__(self, latex: bool = False):
        self.latex = bool(latex)
        self._definitions: dict = {}     # key -> (order, text line, LaTeX line with $...$ math)
        self._names: dict = {}           # (family of names, content key) -> number
        self.split = False               # LaTeX: the next sum or max may break its terms over lines (layout sets it)

    # -- symbols ---------------------------------------------------------------------------------------------
    def pick(self, text: str, tex: str) -> str:
        return tex if self.latex else text

    def ident(self, name: str) -> str:
        """A user's name (a variable, a parameter)."""
        return display.latex_ident(name) if self.latex else str(name)

    def number(self, v) -> str:
        return display.latex_number(float(v)) if self.latex else display.fmt(float(v), 6)

    def vector(self, values, limit: int = 4) -> str:
        values = np.asarray(values, dtype=float).ravel()
        shown = [self.number(v) for v in values[:limit]]
        if values.size > limit:
            shown.append(self.pick("...", "\\dots"))
        return self.pick("[" + ", ".join(shown) + "]", "(" + ",\\ ".join(shown) + ")")

    def call(self, name: str, *args: str) -> str:
        """``name(a, b)``; in LaTeX an upright operator name."""
        head = f"\\operatorname{{{display.latex_text(name)}}}" if self.latex else name
        return head + self.paren(", ".join(args))

    def paren(self, body: str) -> str:
        return f"\\left({body}\\right)" if self.latex else f"({body})"

    def bracket(self, body: str) -> str:
        return f"\\left[{body}\\right]" if self.latex else f"[{body}]"

    def abs(self, body: str) -> str:
        return f"\\left|{body}\\right|" if self.latex else f"|{body}|"

    def norm(self, body: str, p=2, squared: bool = False) -> str:
        p = "inf" if p == np.inf else p
        sub = self.pick(f"_{p}", "_{" + ("\\infty" if p == "inf" else str(p)) + "}")
        return self.pick(f"||{body}||{sub}", f"\\|{body}\\|{sub}") + ("^2" if squared else "")

    def le(self) -> str:
        return self.pick("<=", "\\le")

    def number_of(self, family: str, key) -> int:
        """1, 2, ...: the number of a thing of ``family`` (e.g. a set of rows) with content ``key``; the same
        content gets the same number."""
        full = (family, key)
        if full not in self._names:
            self._names[full] = 1 + sum(1 for f, _ in self._names if f == family)
        return self._names[full]

    def numbered(self, family: str, key, symbol: str) -> tuple[str, str]:
        """(text, LaTeX) names of the thing: ``symbol`` for the first, then ``symbol2`` / ``symbol^{(2)}``."""
        k = self.number_of(family, key)
        return (symbol, symbol) if k == 1 else (f"{symbol}{k}", f"{symbol}^{{({k})}}")

    # -- definitions -------------------------------------------------------------------------------------------
    def define(self, key, text: str, tex: str | None = None, order: int = 50) -> None:
        """Record what a symbol means: ``text`` in the text notation, ``tex`` a LaTeX line (math in $...$);
        ``order`` sorts the lines (the rows' symbols first, then sets, then functions)."""
        if key not in self._definitions:
            self._definitions[key] = (order, text, display.latex_prose(text) if tex is None else tex)

    def where(self) -> list[str]:
        """The definitions recorded, by ``order`` and then in the order the symbols first appeared."""
        entries = sorted(self._definitions.values(), key=lambda e: e[0])
        return [line for line in (tex if self.latex else text for _, text, tex in entries) if line]

    def take_split(self) -> bool:
        """Whether this node may break over lines (once: its arguments may not)."""
        split, self.split = self.split, False
        return split

    # -- a whole formulation ---------------------------------------------------------------------------------
    def breaks(self) -> str:
        """What separates the lines of a broken sum or max inside an ``align*`` row."""
        return " \\\\\n  & \\qquad "


def wrap(body: str, n: Notation, node) -> str:
    """``body`` in parentheses when the node is a sum (so that ``c·(a + b)`` and ``mean_i (x_i·w + b)`` read
    right)."""
    return n.paren(body) if getattr(node, "is_sum", False) else body


WIDE = 95    # LaTeX: a formula wider than this many visible characters breaks at its top-level sum or max


def visible_width(tex: str) -> int:
    """About how many characters wide a LaTeX formula prints (a command counts one, braces and scripts none)."""
    tex = re.sub(r"\\frac\{1\}\{[^{}]*\}", "xx", tex)
    tex = re.sub(r"\\(?:left|right|top|mathrm|operatorname|mathbb|text)\b|\\[,;! ]", "", tex)
    return len(re.sub(r"[{}^_]", "", re.sub(r"\\[A-Za-z]+", "x", tex)))


def render_wide(expr, n: Notation) -> str:
    """``expr`` rendered; in LaTeX, rendered again with a line break allowed at its top level when too wide."""
    text = expr.render(n)
    if n.latex and visible_width(text) > WIDE:
        n.split = True
        text = expr.render(n)
        n.split = False
    return text


def layout(sense: str, objective: str, domain: list, constraints: list, where: list, fmt: str) -> str:
    """A formulation laid out: ``sense objective / over domain / subject to constraints / where ...`` as text
    (``fmt="text"``), a Markdown block with display math, or a LaTeX fragment (``align*`` and a list)."""
    if fmt == "text":
        rows = [(sense, objective)] + [("over" if k == 0 else "", d) for k, d in enumerate(domain)]
        rows += [("subject to" if k == 0 else "", f"{name}: {c}") for k, (name, c) in enumerate(constraints)]
        rows += [("where" if k == 0 else "", w) for k, w in enumerate(where)]
        width = max(len(head) for head, _ in rows) + 2
        return "\n".join(f"{head:<{width}}{body}".rstrip() for head, body in rows)
    rows = [f"\\text{{{sense}}}\\quad & {objective}"]
    rows += [("\\text{over}\\quad " if k == 0 else "") + f"& {d}" for k, d in enumerate(domain)]
    rows += [("\\text{subject to}\\quad " if k == 0 else "") + f"& {c} && \\text{{({display.latex_text(name)})}}"
             for k, (name, c) in enumerate(constraints)]
    math = " \\\\\n".join(rows)
    if fmt == "markdown":
        return "\n".join(["$$", "\\begin{aligned}", math, "\\end{aligned}", "$$"]
                         + (["", "where", ""] + [f"- {display.markdown_prose(w)}" for w in where] if where else []))
    return "\n".join(["\\begin{align*}", math, "\\end{align*}"]
                     + (["where", "\\begin{itemize}"] + [f"  \\item {w}" for w in where] + ["\\end{itemize}"]
                        if where else []))
