"""``fm.assess``: a one-call group-metric report on any model's decisions, scores or predictions, for one
sensitive feature, several (their intersections), with sample weights and stratified bootstrap intervals.

Argument names follow fairlearn's ``MetricFrame`` where the meaning is the same (``y_true``, ``y_pred``,
``sensitive_features``, ``sample_weight``; ``.overall``, ``.by_group``, ``.difference()``, ``.ratio()``).

The intervals are percentile intervals of the stratified bootstrap (Efron and Tibshirani 1993, ch. 13): each
draw resamples, with replacement, as many rows from every group as the group has, and carries the rows' sample
weights. Every metric is a function of statistics linear in the weights (:mod:`fairmodel.metrics.vectorized`), so a
draw is one row of a weight matrix and a thousand draws are a few matrix products.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..data.dataset import Dataset
from ..errors import DataError, OptionError
from ..utilities.validate import as_generator, check_int, check_number, check_vector
from . import report
from .columns import column as _column
from .columns import dataset_groups, group_labels, sensitive_columns
from .dp import _proba, merge_levels
from .vectorized import Inputs, bootstrap_counts, build, evaluate
from .rates import FROM_CONFUSION, NEEDS_LABELS, binary, check_pos_label, weights_of

DECISION_METRICS = ("selection_rate", "accuracy", "balanced_accuracy", "true_positive_rate", "false_positive_rate",
                    "false_negative_rate", "precision")
METRICS = DECISION_METRICS + ("auc", "mse", "mae", "ks", "pmf")
RANDOMIZED_METRICS = ("mse", "mae", "ks", "pmf")       # computed exactly from the distributions
METHODS = ("between_groups", "to_overall")
CHUNK = 100            # bootstrap draws evaluated together (fixed, so a seed gives the same draws everywhere)
CHUNKED: dict = {}     # the Dask-input path ("applies", "assess"), registered by fairmodel.metrics.chunked


# ---------------------------------------------------------------------------------------------------
# Inputs (the columns and the sensitive features are read in :mod:`fairmodel.metrics.columns`)
# ---------------------------------------------------------------------------------------------------
def _is_binary(values, pos_label) -> bool:
    if values is None:
        return False
    try:
        binary(values, pos_label)
        return True
    except DataError:
        return False


def _metric_list(metrics, has, regression):
    """(built-in names, {name: callable}) from ``metrics=`` (None: the defaults for what was given)."""
    if metrics is None and has["y_proba"]:
        return (["mse", "mae"] if has["y_true"] else []) + ["ks", "pmf"], {}
    if metrics is None:
        names = []
        if has["y_pred"] and not regression:
            names += list(DECISION_METRICS) if has["y_true"] else ["selection_rate"]
        if has["scores"] and has["y_true"]:
            names.append("auc")
        if regression:
            names += (["mse", "mae"] if has["y_true"] else []) + ["ks"]
        if not names:
            raise DataError("nothing to assess: give y_pred= (decisions or predictions) and/or scores= with y_true=")
        return names, {}
    if isinstance(metrics, str) or callable(metrics):
        metrics = [metrics]
    if not isinstance(metrics, (dict, list, tuple)):
        raise OptionError(f"metrics must be a metric name, a list of names or callables, or a dict {{name: metric}}; "
                          f"got {metrics!r}")
    items = list(metrics.items()) if isinstance(metrics, dict) else [
        (m if isinstance(m, str) else getattr(m, "__name__", f"metric_{j}"), m) for j, m in enumerate(metrics)]
    names, custom = [], {}
    for key, m in items:
        if callable(m):
            custom[str(key)] = m
        elif isinstance(m, str) and m in METRICS:
            names.append(m)
        else:
            raise OptionError(f"unknown metric {m!r}; metrics are {', '.join(METRICS)}, or a callable "
                              f"f(y_true, y_pred, sample_weight=None)")
    if len(set(names) | set(custom)) != len(names) + len(custom):
        raise OptionError("a metric is listed twice")
    return names, custom


def _check_needs(names, has, yt_binary, yp_binary):
    if has["y_proba"]:
        bad = [m for m in names if m not in RANDOMIZED_METRICS]
        if bad:
            raise DataError(f"{', '.join(bad)} cannot be computed from y_proba= (a randomized predictor); its metrics "
                            f"are {', '.join(RANDOMIZED_METRICS)}")
        if any(m in ("mse", "mae") for m in names) and not has["y_true"]:
            raise DataError("mse and mae need numeric y_true=")
        return
    for m in names:
        if m in FROM_CONFUSION:
            if not has["y_pred"] or not yp_binary:
                raise DataError(f"{m} needs binary decisions y_pred= (0/1, -1/+1, True/False, or pos_label=)")
            if m in NEEDS_LABELS and (not has["y_true"] or not yt_binary):
                raise DataError(f"{m} needs binary labels y_true=")
        elif m == "auc" and not (has["scores"] and has["y_true"] and yt_binary):
            raise DataError("auc needs scores= and binary labels y_true=")
        elif m in ("mse", "mae") and not (has["y_true"] and has["y_pred"]):
            raise DataError(f"{m} needs numeric y_true= and y_pred=")
        elif m == "ks" and not (has["y_pred"] or has["scores"]):
            raise DataError("ks needs predictions y_pred= (or scores=)")
        elif m == "pmf":
            raise DataError("pmf needs a randomized predictor: y_proba= and levels=")


def _randomized(y_proba, levels, n_rows):
    """(probabilities of the distinct levels in ascending order, those levels): columns of equal levels are one
    output value, so their probabilities add up (the pmf and the CDF are over values, not over columns)."""
    if levels is None:
        raise DataError("y_proba= needs levels=: the output value of each column (e.g. the post-processor's grid_)")
    P = _proba(y_proba, name="y_proba")
    if n_rows is not None and P.shape[0] != n_rows:
        raise DataError(f"y_proba has {P.shape[0]} rows but the other columns have {n_rows}")
    return merge_levels(P, levels, "y_proba", "levels")


def assess(y_true=None, *, y_pred=None, scores=None, sensitive_features=None, metrics=None, sample_weight=None,
           pos_label=None, data=None, y_proba=None, levels=None, auc_bins=None) -> "Assessment":
    """Group metrics of a model's decisions ``y_pred``, scores ``scores`` or numeric predictions.

    sensitive_features : one column (array, list, Series, :class:`fairmodel.Groups`), several columns (a 2-D
        array, a list of columns, a dict of columns, a DataFrame: their intersections are the groups), or column
        names of ``data``.
    metrics : None (the defaults for what is given: the decision metrics for binary ``y_pred``, ``auc`` for
        ``scores``, ``mse``, ``mae`` and ``ks`` for numeric predictions), a name, a list of names
        (``selection_rate``, ``true_positive_rate``, ``false_positive_rate``, ``false_negative_rate``,
        ``accuracy``, ``balanced_accuracy``, ``precision``, ``auc``, ``mse``, ``mae``, ``ks``), callables
        ``f(y_true, y_pred, sample_weight=None)``, or a dict ``{name: name or callable}``.
    sample_weight : non-negative weights (e.g. survey weights) used by every metric and every interval.
    pos_label : the positive value of labels and decisions when they are not coded 0/1, -1/+1 or bools.
    data : a DataFrame (or dict of columns) in which string arguments name columns; or a
        :class:`fairmodel.Dataset`, whose labels and groups are the defaults of ``y_true`` and
        ``sensitive_features`` (levels named after the data's sensitive attribute).
    y_proba, levels : a randomized predictor's output instead of ``y_pred``: ``y_proba[i, l]`` the probability
        that row i is predicted ``levels[l]`` (e.g. ``post.predict_proba(X)`` and ``post.grid_`` of
        :class:`DemographicParityPostProcessor`). Its metrics (``mse``, ``mae``, ``ks``, ``pmf``; the default
        all four, or ``ks`` and ``pmf`` without ``y_true``) are computed exactly from the distributions: expected
        errors, and the gaps between each group's and everyone's CDF (``ks``) and pmf (``pmf``, the mean over
        the levels of |pmf_g - pmf|) of the predictions, the randomization integrated out (no sampling).
    auc_bins : Dask-backed inputs only: the bins of the AUC histogram sketch (default 65,536; see
        docs/large_data.md). Dask arrays / Series as columns, or a Dask-backed ``data`` (whose model outputs
        may be given as callables), are assessed by sums over chunks (:mod:`fairmodel.metrics.chunked`).
    """
    if CHUNKED and CHUNKED["applies"](y_true, y_pred, scores, sensitive_features, sample_weight, data=data):
        if y_proba is not None or levels is not None:
            raise OptionError("y_proba= / levels= (randomized predictors) are assessed in memory; compute the "
                              "Dask columns first (.compute()) or assess y_pred=")
        return CHUNKED["assess"](y_true, y_pred=y_pred, scores=scores, sensitive_features=sensitive_features,
                                 metrics=metrics, sample_weight=sample_weight, pos_label=pos_label, data=data,
                                 auc_bins=auc_bins)
    if auc_bins is not None:
        raise OptionError("auc_bins= sets the AUC sketch of Dask-backed inputs; in-memory inputs get the exact AUC")
    if isinstance(data, Dataset):
        y_true = data.y if y_true is None else y_true
        if sensitive_features is None:
            sensitive_features = dataset_groups(data)
        data = None
    if data is not None and not (hasattr(data, "columns") or isinstance(data, dict)):
        raise DataError(f"data= must be a pandas DataFrame, a dict of columns or a fm.Dataset (in which string "
                        f"arguments name columns); got a {type(data).__name__}")
    yt, yp = _column(y_true, data, "y_true"), _column(y_pred, data, "y_pred")
    sc = _column(scores, data, "scores")
    sw = _column(sample_weight, data, "sample_weight")
    lengths = {k: np.shape(v)[0] for k, v in (("y_true", yt), ("y_pred", yp), ("scores", sc)) if v is not None
               and np.ndim(v) >= 1}
    if len(set(lengths.values())) > 1:
        (a, na), (b, nb) = [(k, v) for k, v in lengths.items() if v != max(lengths.values())][:1] + \
            [(k, v) for k, v in lengths.items() if v == max(lengths.values())][:1]
        raise DataError(f"{a} has {na} entries but {b} has {nb}; every column needs one entry per row")
    if levels is not None and y_proba is None:
        raise DataError("levels= without y_proba=: levels name the output value of each column of y_proba= (a "
                        "randomized predictor); deterministic predictions go in y_pred= alone")
    if y_proba is not None and (yp is not None or sc is not None):
        raise DataError("give the predictions once: y_proba= (a randomized predictor) or y_pred= / scores=")
    given = [a for a in (yt, yp, sc) if a is not None]
    if not given and y_proba is None:
        raise DataError("give y_pred= (decisions or predictions), scores= or y_proba=")
    n = np.shape(given[0])[0] if given else np.shape(y_proba)[0]
    if n == 0:
        raise DataError("no rows to assess: the columns given are empty")
    proba, lv = (None, None) if y_proba is None else _randomized(y_proba, levels, n)
    cols, level_names = sensitive_columns(sensitive_features, data, n)
    groups = group_labels(cols, level_names, n)
    w = weights_of(sw, n)
    has = {"y_true": yt is not None, "y_pred": yp is not None, "scores": sc is not None, "y_proba": proba is not None}
    check_pos_label(pos_label, {k: np.unique(v) for k, v in (("y_true", yt), ("y_pred", yp))
                                if v is not None and np.ndim(v) == 1 and np.asarray(v).dtype.kind != "c"})
    yt_bin, yp_bin = _is_binary(yt, pos_label), _is_binary(yp, pos_label)
    for values, is_bin, name in ((yt, yt_bin, "y_true"), (yp, yp_bin, "y_pred")):
        if values is not None and not is_bin and np.asarray(values).dtype.kind not in "iufb":
            binary(values, pos_label, name)        # text labels: say how to name the positive one
    regression = has["y_pred"] and not yp_bin or (has["y_true"] and not yt_bin and not has["scores"]) \
        or has["y_proba"]
    names, custom = _metric_list(metrics, has, regression)
    _check_needs(names, has, yt_bin, yp_bin)
    num_pred = None
    if yp is not None and any(m in ("mse", "mae", "ks") for m in names):
        num_pred = check_vector(yp, n, "y_pred")
    if "ks" in names and num_pred is None and proba is None:
        num_pred = check_vector(sc, n, "scores")
    order = np.argsort(groups.codes, kind="stable")       # rows sorted by group: each group is a slice

    def sort(v):
        return None if v is None else np.asarray(v)[order]

    inputs = Inputs(
        n=n, codes=np.asarray(groups.codes)[order], n_groups=groups.n_groups,
        y_true=sort(check_vector(yt, n, "y_true")) if any(m in ("mse", "mae") for m in names) else None,
        y_pos=sort(binary(yt, pos_label, "y_true", n)) if yt_bin else None,
        pred_pos=sort(binary(yp, pos_label, "y_pred", n)) if yp_bin else None,
        y_pred=sort(num_pred), scores=sort(check_vector(sc, n, "scores")) if sc is not None else None,
        proba=sort(proba), levels=lv)
    second = yp if yp is not None else sc
    if custom and proba is not None:
        raise DataError("callable metrics take y_pred; with y_proba= use the built-in metrics "
                        f"({', '.join(RANDOMIZED_METRICS)})")
    custom = {k: (fn, sort(yt), sort(second)) for k, fn in custom.items()}
    designs, measures = build(inputs, names, custom)
    a = Assessment(groups, level_names, [k.name for k in measures], designs, measures, inputs, w[order])
    a.row_order = order
    return a


# ---------------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------------
def _extreme(values, fn, axis=-2):
    """``fn`` (np.max or np.min) over the groups, skipping the groups where a metric is undefined (NaN); NaN where
    it is undefined in every group (fairlearn's MetricFrame skips them the same way)."""
    missing = np.isnan(values)
    out = fn(np.where(missing, -np.inf if fn is np.max else np.inf, values), axis=axis)
    return np.where(missing.all(axis=axis), np.nan, out)


def _difference(by, overall, method):
    if method == "between_groups":
        return _extreme(by, np.max) - _extreme(by, np.min)
    return _extreme(np.abs(by - overall[..., None, :]), np.max)


def _ratio(by, overall, method):
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "between_groups":
            return _extreme(by, np.min) / _extreme(by, np.max)
        o = overall[..., None, :]
        return _extreme(np.minimum(by / o, o / by), np.min)


def _method(method):
    if method not in METHODS:
        raise OptionError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    return method


class Assessment:
    """The result of :func:`assess`: ``overall``, ``by_group`` (rows: groups, a MultiIndex for intersections;
    columns: metrics), ``difference()``, ``ratio()``, ``group_min()``, ``group_max()``, ``ci()``,
    ``to_markdown()``, ``plot()``. NaN marks a metric undefined in a group (a zero denominator)."""

    def __init__(self, groups, level_names, metrics, designs, measures, inputs, weights):
        self.metrics = tuple(metrics)
        self.groups = tuple(groups.names)
        self.level_names = tuple(level_names)
        self.sizes = np.asarray(groups.sizes)
        self.n_samples = inputs.n
        self._designs, self._measures, self._inputs, self._w = designs, measures, inputs, weights
        by, overall = evaluate(measures, designs, inputs, weights[:, None])
        self._by, self._overall = by[0], overall[0]
        self._ci = None
        self.row_order = np.arange(self.n_samples)    # row i of the group-sorted inputs is row row_order[i]

    # -- tables --------------------------------------------------------------------------------------
    @property
    def overall(self):
        """The metrics on all rows (a pandas Series indexed by metric, or a dict)."""
        return report.series(self._overall, self.metrics, "overall")

    @property
    def by_group(self):
        """One row per group, one column per metric (a pandas DataFrame, or a :class:`report.Table`)."""
        return report.frame(self._by, self.groups, self.metrics, self.level_names)

    def difference(self, method: str = "between_groups"):
        """Per metric, max - min over groups (``between_groups``: the largest pairwise gap) or the largest
        |group - overall| (``to_overall``: vs the population). Groups where a metric is undefined (NaN) are skipped,
        with a warning naming them. The series is named with its comparison, e.g. "difference (largest pairwise)"."""
        self._warn_undefined("difference")
        return report.series(_difference(self._by, self._overall, _method(method)), self.metrics,
                             report.comparison_label("difference", method))

    def ratio(self, method: str = "between_groups"):
        """Per metric, min / max over groups (``between_groups``: the smallest pairwise ratio) or the smallest of group / overall and
        overall / group (``to_overall``: vs the population); 1 means parity. Groups where a metric is undefined are
        skipped (warned)."""
        self._warn_undefined("ratio")
        return report.series(_ratio(self._by, self._overall, _method(method)), self.metrics,
                             report.comparison_label("ratio", method))

    def group_min(self):
        self._warn_undefined("group minimum")
        return report.series(_extreme(self._by, np.min, 0), self.metrics, "group_min")

    def group_max(self):
        self._warn_undefined("group maximum")
        return report.series(_extreme(self._by, np.max, 0), self.metrics, "group_max")

    def _warn_undefined(self, what: str) -> None:
        """A UserWarning per metric that is undefined (NaN: a zero denominator) in some groups, naming them."""
        undefined = np.isnan(self._by)
        for j in np.flatnonzero(undefined.any(axis=0)):
            names = [g for g, u in zip(self.groups, undefined[:, j]) if u]
            if len(names) == len(self.groups):
                text = f"{self.metrics[j]} is undefined in every group (a zero denominator): its {what} is NaN"
            else:
                text = (f"{self.metrics[j]} is undefined (a zero denominator, e.g. precision without predicted "
                        f"positives) in group(s) {', '.join(map(repr, names))}; the {what} is over the other groups, "
                        f"as fairlearn's MetricFrame computes it")
            warnings.warn(text, UserWarning, stacklevel=3)

    # -- intervals -----------------------------------------------------------------------------------
    def bootstrap(self, n_boot: int = 1000, seed=0):
        """Raw stratified bootstrap draws: (by group ``(n_boot, G, M)``, overall ``(n_boot, M)``)."""
        n_boot = check_int(n_boot, "n_boot", minimum=2)
        rng = as_generator(seed)
        by, overall = [], []
        for start in range(0, n_boot, CHUNK):
            draws = min(CHUNK, n_boot - start)
            W = bootstrap_counts(rng, self._inputs.rows, self.n_samples, draws)
            W *= self._w[:, None]
            b, o = evaluate(self._measures, self._designs, self._inputs, W)
            by.append(b)
            overall.append(o)
        return np.concatenate(by), np.concatenate(overall)

    def ci(self, level: float = 0.95, n_boot: int = 1000, seed=0) -> "Intervals":
        """Percentile intervals of the stratified bootstrap (seeded, reproducible) for every group's metric,
        the overall metrics, and the differences and ratios. Kept for ``plot()`` and ``to_markdown()``."""
        level = check_number(level, "level", low=0.0, high=1.0, strict=True)
        if level >= 1:
            raise OptionError(f"level must be < 1 (a 100% percentile interval is the range of the draws); got {level}")
        by, overall = self.bootstrap(n_boot, seed)
        self._ci = Intervals(self, level, by, overall, seed)
        return self._ci

    # -- renderings ----------------------------------------------------------------------------------
    def _table(self):
        """(labels, rows): the groups, then the overall, difference and ratio rows."""
        n_levels = len(self.level_names)
        extra = [(name,) + ("",) * (n_levels - 1) for name in ("overall", report.comparison_label("difference"),
                                                               report.comparison_label("ratio"))]
        extra = [e if n_levels > 1 else e[0] for e in extra]
        rows = [list(r) for r in self._by] + [list(self._overall),
                                               list(_difference(self._by, self._overall, "between_groups")),
                                               list(_ratio(self._by, self._overall, "between_groups"))]
        return list(self.groups) + extra, rows

    def to_markdown(self, digits: int = 4) -> str:
        """The by-group table with the overall, difference and ratio rows, as Markdown (``|`` escaped)."""
        labels, rows = self._table()
        text = report.markdown(labels, self.level_names, self.metrics, rows, digits)
        if self._ci is not None:
            text += "\n\n" + self._ci.to_markdown(digits)
        return text

    def __str__(self) -> str:
        """The whole table as text, every column shown (``print(a)``; printing ``a.by_group``, a pandas
        DataFrame, may elide columns)."""
        labels, rows = self._table()
        return report.text_table(labels, self.level_names, self.metrics, rows)

    def _repr_html_(self) -> str:
        rows = [list(r) for r in self._by] + [list(self._overall)]
        n_levels = len(self.level_names)
        overall = ("overall",) + ("",) * (n_levels - 1) if n_levels > 1 else "overall"
        return report.html_table(list(self.groups) + [overall], self.level_names, self.metrics, rows,
                                 caption=repr(self))

    def __repr__(self) -> str:
        by = " x ".join(self.level_names)
        return (f"Assessment(n={self.n_samples}, {len(self.groups)} groups by {by}, "
                f"metrics=[{', '.join(self.metrics)}])")

    def plot(self, metrics=None, *, ci=None, ax=None):
        """Per-group bars of each metric (``metrics``: a subset of names), with the intervals of ``ci`` (an
        :class:`Intervals`, True to compute them with the defaults, or None to use the last ``ci()`` if any)
        and a dashed line at the overall value. Returns a matplotlib Figure."""
        names = list(self.metrics) if metrics is None else ([metrics] if isinstance(metrics, str) else list(metrics))
        for m in names:
            if m not in self.metrics:
                raise OptionError(f"metric {m!r} is not in this assessment ({', '.join(self.metrics)})")
        idx = [self.metrics.index(m) for m in names]
        intervals = self.ci() if ci is True else (self._ci if ci is None else ci)
        lower = upper = level = None
        if intervals:
            lower, upper, level = intervals._lo[:, idx], intervals._hi[:, idx], intervals.level
        return report.plot_groups(names, list(self.groups), self._by[:, idx], self._overall[idx], lower, upper,
                                  ax, level)


class Intervals:
    """Bootstrap intervals of an :class:`Assessment`: ``by_group`` (columns (metric, lower/upper)),
    ``overall``, ``difference(method)``, ``ratio(method)`` (rows: metrics; columns: lower, upper), and the raw
    draws ``draws_by_group`` ``(n_boot, G, M)`` and ``draws_overall`` ``(n_boot, M)``. Draws where a metric is
    undefined (NaN) are left out of its interval; ``undefined`` counts them per group and metric."""

    def __init__(self, assessment, level, by, overall, seed):
        self.assessment, self.level, self.n_boot, self.seed = assessment, float(level), by.shape[0], seed
        self.draws_by_group, self.draws_overall = by, overall
        self.undefined = np.isnan(by).sum(axis=0)
        self._q = ((1 - self.level) / 2, (1 + self.level) / 2)
        self._lo, self._hi = self._bounds(by)

    def _bounds(self, draws):
        out = np.full((2,) + draws.shape[1:], np.nan)
        ok = np.isfinite(draws).any(axis=0)
        if ok.any():
            with np.errstate(all="ignore"):
                out[:, ok] = np.nanquantile(draws[:, ok], self._q, axis=0)
        return out[0], out[1]

    def _pairs(self, lo, hi, name):
        a = self.assessment
        return report.frame(np.column_stack([lo, hi]), list(a.metrics), ["lower", "upper"], (name,))

    @property
    def by_group(self):
        a = self.assessment
        vals = np.stack([self._lo, self._hi], axis=2).reshape(len(a.groups), -1)
        cols = [(m, b) for m in a.metrics for b in ("lower", "upper")]
        return report.frame(vals, list(a.groups), cols, a.level_names)

    @property
    def overall(self):
        return self._pairs(*self._bounds(self.draws_overall), "metric")

    def difference(self, method: str = "between_groups"):
        d = _difference(self.draws_by_group, self.draws_overall, _method(method))
        return self._pairs(*self._bounds(d), "metric")

    def ratio(self, method: str = "between_groups"):
        r = _ratio(self.draws_by_group, self.draws_overall, _method(method))
        return self._pairs(*self._bounds(r), "metric")

    def to_markdown(self, digits: int = 4) -> str:
        """The intervals of every group's metrics, of the overall metrics and of the between-group differences
        and ratios, as Markdown."""
        a = self.assessment
        n_levels = len(a.level_names)
        lo = np.vstack([self._lo, self._bounds(self.draws_overall)[0]])
        hi = np.vstack([self._hi, self._bounds(self.draws_overall)[1]])
        for f in (_difference, _ratio):
            b = self._bounds(f(self.draws_by_group, self.draws_overall, "between_groups"))
            lo, hi = np.vstack([lo, b[0]]), np.vstack([hi, b[1]])
        extra = [(name,) + ("",) * (n_levels - 1) if n_levels > 1 else name
                 for name in ("overall", report.comparison_label("difference"), report.comparison_label("ratio"))]
        rows = [[f"[{report.fmt(x, digits)}, {report.fmt(y, digits)}]" for x, y in zip(lr, hr)]
                for lr, hr in zip(lo, hi)]
        head = f"{self.level:.0%} stratified bootstrap intervals ({self.n_boot} draws, seed {self.seed}):\n\n"
        return head + report.markdown(list(a.groups) + extra, a.level_names, a.metrics, rows, digits)

    def __repr__(self) -> str:
        return f"Intervals(level={self.level:g}, n_boot={self.n_boot}, seed={self.seed!r}, {self.assessment!r})"
