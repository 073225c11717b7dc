"""Plots (needs the ``plot`` extra, matplotlib). Every function returns a matplotlib Figure and draws
exactly the numbers held by the results it is given (tests compare the drawn data with them).
"""
from __future__ import annotations

import math
import textwrap

import numpy as np

from ..data.dataset import Groups
from ..errors import OptionError


def _plt():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("plotting needs matplotlib (the plot extra): pip install matplotlib") from None
    return plt


TITLE_WIDTH = 60    # characters per line of a title (a long problem title wraps instead of leaving the figure)


def _title(ax, text: str) -> None:
    ax.set_title("\n".join(textwrap.wrap(text, TITLE_WIDTH)), fontsize=10)


def _legend(ax) -> None:
    """The legend beside the axes, where it covers no bar, line or bound."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)


def _label(result) -> str:
    """What a result is of, for a title: the problem's title and kind (``result.label``), else its family."""
    return getattr(result, "label", "") or getattr(result, "family", "")


def _axes(ax, figsize=(6, 4)):
    plt = _plt()
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
    else:
        fig = ax.figure
    return fig, ax


def plot_frontier(frontiers, x: str, y: str = "objective", ax=None, label: str | None = None):
    """Column ``y`` against column ``x`` of one or several :class:`fairmodel.sweeps.frontier.Frontier` objects
    (e.g. the exact and the stochastic frontier of the same sweep), one line each."""
    if not isinstance(frontiers, (list, tuple)):
        frontiers = [frontiers]
    columns = frontier_columns(frontiers)
    for name, which in ((x, "x"), (y, "y")):
        if name not in columns:
            raise OptionError(f"the frontier has no column {name!r} to plot as {which}; its numeric columns are "
                              f"{', '.join(columns) or '(none: every value failed)'}")
    fig, ax = _axes(ax)
    for f in frontiers:
        xs, ys = np.asarray(f.column(x), dtype=float), np.asarray(f.column(y), dtype=float)
        ok = np.isfinite(xs) & np.isfinite(ys)
        ax.plot(xs[ok], ys[ok], marker="o", label=label or f.backend or None)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{y} vs {x}")
    if any(f.backend for f in frontiers) or label:
        ax.legend()
    fig.tight_layout()
    return fig


def frontier_columns(frontiers) -> list[str]:
    """The columns of one or several frontiers that hold a number in at least one row (plottable)."""
    if not isinstance(frontiers, (list, tuple)):
        frontiers = [frontiers]
    keys: list[str] = []
    for f in frontiers:
        for row in f.rows():
            keys += [k for k, v in row.items() if k not in keys and isinstance(v, (int, float))
                     and not isinstance(v, bool) and math.isfinite(v)]
    return keys


def default_frontier_y(frontiers) -> str:
    """The column a reader expects on a frontier's y axis: the judged risk when the objective adds a
    regularizer to it (the entropic objective R_beta of DP post-processing is ``risk + entropy term``, and
    can be negative), else the objective."""
    columns = frontier_columns(frontiers)
    return "metric:risk" if "metric:risk" in columns else "objective"


def plot_convergence(results, x: str = "grad_evals", y: str = "objective", optimum: float | None = None,
                     ax=None, log: bool = True):
    """History column ``y`` against ``x`` for one or several results (dict label -> Result or a list),
    with the exact optimum as a horizontal line; with ``log`` the y axis shows ``y - optimum``."""
    fig, ax = _axes(ax)
    if not isinstance(results, dict):
        results = {r.method or f"run {i}": r for i, r in enumerate(results if isinstance(results, (list, tuple))
                                                                  else [results])}
    for name, res in results.items():
        xs, ys = res.history_column(x), res.history_column(y)
        if log and optimum is not None:
            ys = np.maximum(ys - optimum, 1e-16)
        ax.plot(xs, ys, label=name)
    if optimum is not None and not log:
        ax.axhline(optimum, color="k", linestyle="--", label="exact optimum")
    if log:
        ax.set_yscale("log")
        if optimum is None:
            ax.set_xscale("linear")
    ax.set_xlabel(x)
    ax.set_ylabel(f"{y} - exact optimum" if (log and optimum is not None) else y)
    ax.set_title(f"convergence: {y} against {x}")
    _legend(ax)
    fig.tight_layout()
    return fig


def plot_group_risks(results: dict, key: str = "group_risks", ax=None):
    """Grouped bars of a per-group metric (default the group risks) for several results (label -> Result
    or label -> {group: value})."""
    fig, ax = _axes(ax, figsize=(7, 4))
    tables = {name: (r.metrics[key] if hasattr(r, "metrics") else r) for name, r in results.items()}
    groups = list(next(iter(tables.values())))
    width = 0.8 / max(1, len(tables))
    for i, (name, values) in enumerate(tables.items()):
        ax.bar(np.arange(len(groups)) + i * width, [values[g] for g in groups], width, label=name)
    ax.set_xticks(np.arange(len(groups)) + 0.4 - width / 2)
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylabel(key.replace("_", " "))
    _title(ax, f"{key.replace('_', ' ')} by group")
    _legend(ax)
    fig.tight_layout()
    return fig


def plot_score_densities(scores, groups, band: tuple[float, float] | None = None, ax=None, bins: int = 40):
    """Per-group histograms (densities) of scores; with ``band = (a, b)`` the rank band of partial
    fairness (quantiles a..b of all scores) is shaded."""
    fig, ax = _axes(ax)
    scores = np.asarray(scores, dtype=float)
    g = Groups(groups)
    edges = np.histogram_bin_edges(scores, bins=bins)
    for code, name in enumerate(g.names):
        ax.hist(scores[g.codes == code], bins=edges, density=True, histtype="step", label=str(name))
    if band is not None:
        lo, hi = np.quantile(scores, [band[0], band[1]])
        ax.axvspan(lo, hi, alpha=0.15, color="gray", label=f"band [{band[0]:g}, {band[1]:g}]")
    ax.set_xlabel("score")
    ax.set_ylabel("density")
    ax.set_title("score densities by group")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_prediction_distributions(grid, probabilities: dict, ax=None):
    """Distributions over a prediction grid, one line per group (label -> probability vector)."""
    fig, ax = _axes(ax)
    grid = np.asarray(grid, dtype=float)
    for name, p in probabilities.items():
        p = np.asarray(p, dtype=float)
        if p.shape != grid.shape or not math.isclose(float(p.sum()), 1.0, rel_tol=1e-6):
            raise OptionError(f"the distribution of {name!r} must be a probability vector over the grid")
        ax.plot(grid, p, marker=".", label=str(name))
    ax.set_xlabel("prediction")
    ax.set_ylabel("probability")
    ax.set_title("distribution of the predictions by group")
    ax.legend()
    fig.tight_layout()
    return fig


def plot_values(results: dict, ax=None):
    """Grouped bars of the judged objective and constraint values of several results (label -> Result), the
    constraints' bounds as black ticks: the figure of a result without a history or a per-group metric."""
    fig, ax = _axes(ax, figsize=(7, 4))
    names = ["objective"] + list(dict.fromkeys(k for r in results.values() for k in r.constraints))
    width = 0.8 / max(1, len(results))
    for i, (label, r) in enumerate(results.items()):
        values = [r.objective] + [r.constraints.get(k, {}).get("value", np.nan) for k in names[1:]]
        ax.bar(np.arange(len(names)) + i * width, values, width, label=label)
    first = next(iter(results.values()))
    for j, k in enumerate(names[1:], start=1):
        bound = first.constraints.get(k, {}).get("bound")
        if bound is not None:   # across the group of bars of constraint j: [j - width/2, j - width/2 + 0.8]
            ax.hlines(bound, j - width / 2, j - width / 2 + 0.8, color="k", label="bound" if j == 1 else None)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2)
    ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("judged value")
    _title(ax, f"{_label(first)}: judged objective and constraints")
    _legend(ax)
    fig.tight_layout()
    return fig


PROGRESS_COLUMNS = ("grad_evals", "queries", "samples", "outer", "epoch", "step", "iteration", "t")
VALUE_COLUMNS = ("output_objective", "objective", "level", "max_risk", "risk", "dual_value", "duality_gap")


def _history_axes(runs: dict):
    """(x, y): the first progress and value columns that every history with a value shares, or (None, None)."""
    keys = set().union(*(rec.keys() for r in runs.values() for rec in r.history)) if runs else set()
    x = next((k for k in PROGRESS_COLUMNS if k in keys), None)
    for y in VALUE_COLUMNS:
        if y in keys and x is not None and any(np.isfinite(np.asarray(r.history_column(y), dtype=float)).any()
                                               for r in runs.values()):
            return x, y
    return None, None


def plot_results(results: dict, optimum: float | None = None):
    """The default figure of the command line's ``--plot``, for every family: the group risks of each result
    when the judge reports them (group DRO, MERO, ERM, compositions with groups); otherwise the convergence of the
    results' histories (the first value column of ``VALUE_COLUMNS`` against the first progress column of
    ``PROGRESS_COLUMNS``) with the exact optimum as reference; otherwise the family's per-group fairness metric (the DP gap of each group for
    DP post-processing) or the judged objective and constraint values (:func:`plot_values`)."""
    first = next(iter(results.values()))
    if isinstance(first.metrics.get("group_risks"), dict):
        fig = plot_group_risks(results)
        _title(fig.axes[0], f"{_label(first)}: group risks")
        fig.tight_layout()
        return fig
    runs = {name: r for name, r in results.items() if r.history}
    x, y = _history_axes(runs)
    if x is not None:
        fig = plot_convergence(runs, x=x, y=y, optimum=optimum if y in ("objective", "output_objective",
                                                                          "max_risk", "level") else None, log=False)
        _title(fig.axes[0], f"{_label(first)}: {y} against {x}")
        fig.tight_layout()
        return fig
    if all(isinstance(r.metrics.get("dp_gap"), dict) for r in results.values()):
        fig = plot_group_risks(results, key="dp_gap")
        _title(fig.axes[0], f"{_label(first)}: demographic-parity gap by group")
        fig.tight_layout()
        return fig
    return plot_values(results)
