"""Tables of an assessment: pandas objects when pandas is installed, a small plain :class:`Table` otherwise;
Markdown and HTML renderings; the per-group bar plot (matplotlib, the ``plot`` extra)."""
from __future__ import annotations

import html
import math

import numpy as np

from ..errors import OptionError

try:                                 # pandas is an optional extra: plain tables without it
    import pandas as _pd
except ImportError:                  # pragma: no cover - exercised only without pandas
    _pd = None


# the words every gap and summary uses for its comparison: between_groups compares the groups with each other (the
# largest pairwise gap, max - min; the smallest pairwise ratio, min / max), to_overall each group with the whole
# population
COMPARISONS = {"between_groups": "largest pairwise", "to_overall": "vs the population"}


def comparison_label(what: str, method: str = "between_groups") -> str:
    """``"difference (largest pairwise)"``, ``"ratio (smallest pairwise)"``, ``"difference (vs the population)"``."""
    words = COMPARISONS[method]
    if what == "ratio" and method == "between_groups":
        words = "smallest pairwise"
    return f"{what} ({words})"


def has_pandas() -> bool:
    return _pd is not None


class Table:
    """A plain 2-D table (used when pandas is not installed): ``index`` (row labels), ``columns``,
    ``values`` (a float array), ``index_names``. ``table[column]`` is a ``{row label: value}`` dict."""

    def __init__(self, values, index, columns, index_names=()):
        self.values = np.asarray(values, dtype=float)
        self.index, self.columns, self.index_names = list(index), list(columns), tuple(index_names)

    @property
    def shape(self):
        return self.values.shape

    def __getitem__(self, column):
        j = self.columns.index(column)
        return dict(zip(self.index, self.values[:, j].tolist()))

    def to_dict(self) -> dict:
        """``{column: {row label: value}}``, as ``pandas.DataFrame.to_dict()``."""
        return {c: self[c] for c in self.columns}

    def __repr__(self) -> str:
        return text_table(self.index, self.index_names, [str(c) for c in self.columns], self.values)


def frame(values, index, columns, index_names):
    """A DataFrame (or a :class:`Table`) of ``values`` with group rows (a MultiIndex for tuple labels)."""
    if _pd is None:
        return Table(values, index, columns, index_names)
    return _pd.DataFrame(np.asarray(values, dtype=float), index=group_index(index, index_names),
                         columns=_columns(columns))


def _columns(columns):
    if columns and isinstance(columns[0], tuple):
        return _pd.MultiIndex.from_tuples(columns)
    return _pd.Index(columns)


def group_index(index, index_names):
    if index and isinstance(index[0], tuple):
        return _pd.MultiIndex.from_tuples(index, names=list(index_names))
    return _pd.Index(index, name=index_names[0] if index_names else None)


def series(values, index, name=None):
    """A pandas Series indexed by metric names, or a plain dict."""
    values = [float(v) for v in values]
    if _pd is None:
        return dict(zip(index, values))
    return _pd.Series(values, index=_pd.Index(list(index)), name=name)


# ---------------------------------------------------------------------------------------------------
# Text renderings
# ---------------------------------------------------------------------------------------------------
def fmt(v, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    return f"{v:.{digits}g}" if isinstance(v, (float, np.floating)) else str(v)


def label_cells(label, n_levels: int) -> list[str]:
    parts = list(label) if isinstance(label, tuple) else [label]
    return [str(p) for p in parts] + [""] * (n_levels - len(parts))


def text_table(index, index_names, columns, values, digits: int = 4) -> str:
    n_levels = max(1, len(index_names))
    head = [str(n) for n in index_names] or [""]
    rows = [label_cells(lab, n_levels) + [fmt(float(v), digits) for v in row] for lab, row in zip(index, values)]
    table = [head + list(columns)] + rows
    widths = [max(len(r[j]) for r in table) for j in range(len(table[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in table)


def md_escape(text) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown(index, index_names, columns, rows, digits: int = 4) -> str:
    """A Markdown table: ``rows`` are lists of cells (numbers or text), one per column, behind the labels."""
    n_levels = max(1, len(index_names))
    head = [md_escape(n) for n in index_names] or ["group"]
    head += [""] * (n_levels - len(head))
    lines = ["| " + " | ".join(head + [md_escape(c) for c in columns]) + " |",
             "|" + "---|" * (n_levels + len(columns))]
    for lab, row in zip(index, rows):
        cells = [md_escape(c) for c in label_cells(lab, n_levels)] + [md_escape(fmt(v, digits)) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def html_table(index, index_names, columns, rows, digits: int = 4, caption: str = "") -> str:
    n_levels = max(1, len(index_names))
    head = [html.escape(str(n)) for n in index_names] or ["group"]
    head += [""] * (n_levels - len(head))
    out = ["<table>"]
    if caption:
        out.append(f"<caption>{html.escape(caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{h}</th>" for h in head + [html.escape(str(c)) for c in columns])
               + "</tr></thead><tbody>")
    for lab, row in zip(index, rows):
        cells = "".join(f"<th>{html.escape(c)}</th>" for c in label_cells(lab, n_levels))
        cells += "".join(f"<td>{html.escape(fmt(v, digits))}</td>" for v in row)
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


# ---------------------------------------------------------------------------------------------------
# Plot
# ---------------------------------------------------------------------------------------------------
def plot_groups(metrics, labels, values, overall, lower=None, upper=None, axes=None, level=None):
    """One panel per metric: a bar per group (its value), error bars from ``lower``/``upper`` when given,
    and a dashed line at the overall value. Returns the matplotlib Figure."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("plotting needs matplotlib (the plot extra): pip install matplotlib") from None
    m = len(metrics)
    if axes is None:
        cols = min(m, 3)
        rows = math.ceil(m / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 0.35 * len(labels) + 2.2 * rows + 0.6),
                                 squeeze=False)
        axes = axes.ravel()
    else:
        axes = np.atleast_1d(axes).ravel()
        if axes.size < m:
            raise OptionError(f"ax= gives {axes.size} axes for {m} metrics; give one per metric")
        fig = axes[0].figure
    names = [" / ".join(map(str, lab)) if isinstance(lab, tuple) else str(lab) for lab in labels]
    ypos = np.arange(len(names))
    for j, metric in enumerate(metrics):
        ax = axes[j]
        v = values[:, j]
        err = None
        if lower is not None:
            err = np.vstack([v - lower[:, j], upper[:, j] - v])
            err = np.where(np.isfinite(err), np.maximum(err, 0.0), 0.0)
        ax.barh(ypos, np.nan_to_num(v), xerr=err, color="#4C72B0", alpha=0.85, capsize=3)
        ax.axvline(overall[j], color="k", linestyle="--", linewidth=1, label="overall")
        ax.set_yticks(ypos)
        ax.set_yticklabels(names, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(metric, fontsize=10)
    for ax in axes[m:]:
        ax.set_visible(False)
    if level is not None:
        fig.suptitle(f"error bars: {level:.0%} stratified bootstrap intervals; dashed line: overall", fontsize=9)
    fig.tight_layout()
    return fig
