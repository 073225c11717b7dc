"""Group metrics on Dask-backed inputs (``fm.assess`` and ``auc_fairness_groups`` given Dask arrays or Series, or a
Dask-backed :class:`fairmodel.Dataset` with a model): every statistic is a sum over chunks, one Dask task per chunk.

* Sum-type metrics (selection rate, TPR / FPR / FNR, accuracy, balanced accuracy, precision, MSE, MAE): each
  chunk returns its per-group weighted confusion counts and error sums; the client adds them in chunk order. The
  metrics are the same functions of the same sums as for in-memory inputs: equal up to summation order.
* AUC (per group and overall, and the K-group AUC-fairness presets of Yao, Lin and Yang 2023): each chunk returns
  the weighted histogram of its scores per group and label. When the scores take at most ``EXACT_LEVELS``
  distinct values the bins are those values and the AUC is exact (ties count 1/2). Otherwise the bins are
  ``bins`` equal-width intervals of [min, max]: a positive-negative pair in different bins is ordered exactly
  (the bins are ordered like the scores); a pair in the same bin is counted 1/2, where its true contribution
  lies in [0, 1]. So |AUC_sketch - AUC| <= (1/2) sum_b P_b N_b / (P N), with P_b, N_b the positive and negative
  weight in bin b: this bound is computed and reported with every sketched AUC.
* Bootstrap intervals are refused: a row bootstrap draws every row's multiplicity (a pass per draw, or n x B
  counts), and resampling whole chunks is not a row bootstrap (its spread is the chunk-to-chunk variation,
  which depends on how the rows were cut). Compute intervals on an in-memory sample.

The memory of a pass is a few chunks on the workers plus G x 2 x bins histogram sums in the client.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.dask_dataset import computed_in_order, dask_modules, is_dask
from ..data.dataset import Groups
from ..errors import DataError, OptionError
from .assessment import Assessment, _check_needs, _metric_list
from .rates import FROM_CONFUSION, auc_from_levels, binary, check_pos_label, ratio

EXACT_LEVELS = 4096          # scores with at most this many distinct values: exact AUC from their counts
DEFAULT_BINS = 1 << 16       # equal-width bins of the AUC sketch otherwise
SUM_METRICS = tuple(FROM_CONFUSION) + ("mse", "mae")


def dask_input(*values, data=None) -> bool:
    """Whether any input is a Dask collection (or ``data`` is Dask-backed): the chunked path applies."""
    def any_dask(v):
        if isinstance(v, dict):
            return any(any_dask(x) for x in v.values())
        if isinstance(v, (list, tuple)):
            return any(is_dask(x) for x in v)
        return is_dask(v)
    return bool(getattr(data, "is_chunked", False)) or is_dask(data) or any(any_dask(v) for v in values)


# ---------------------------------------------------------------------------------------------------
# Columns as Dask arrays with the same row chunks, and passes over them
# ---------------------------------------------------------------------------------------------------
def _array(v):
    if hasattr(v, "to_dask_array"):
        return v.to_dask_array(lengths=True)
    return v if is_dask(v) else np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v)


class _Predict:
    """A model's values on one chunk of features (a picklable task)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, X):
        return np.asarray(self.fn(np.asarray(X, dtype=float)), dtype=float).reshape(-1)


def _sensitive(sf, data):
    """[(column, names or None)], level names: Groups give codes with their names, other forms labels."""
    if sf is None and getattr(data, "groups", None) is not None:
        return [(data.groups.codes, data.groups.names)], [data.sensitive_name or "group"]
    if sf is None:
        raise DataError("sensitive_features is required: the group labels of every row (one or several columns)")
    if isinstance(sf, Groups):
        return [(sf.codes, sf.names)], ["sensitive_feature_0"]
    if hasattr(sf, "columns"):                                   # a (Dask) DataFrame
        return [(_array(sf[c]), None) for c in sf.columns], [str(c) for c in sf.columns]
    if isinstance(sf, dict):
        return [(_array(v), None) for v in sf.values()], [str(k) for k in sf]
    if isinstance(sf, (list, tuple)) and sf and all(np.ndim(c) == 1 for c in sf):
        return [(_array(c), None) for c in sf], [f"sensitive_feature_{j}" for j in range(len(sf))]
    arr = _array(sf)
    if arr.ndim == 2:
        return [(arr[:, j], None) for j in range(arr.shape[1])], [f"sensitive_feature_{j}" for j in
                                                                   range(arr.shape[1])]
    name = getattr(sf, "name", None) if hasattr(sf, "index") else None     # a Series' name, not a Dask key
    return [(arr, None)], [str(name) if isinstance(name, str) else "sensitive_feature_0"]


def _aligned(columns: dict, chunks=None):
    """The columns as 1-D Dask arrays cut at the same rows (``chunks``, else those of the first Dask column)."""
    _, da = dask_modules()
    if chunks is None:
        ref = next((v for v in columns.values() if is_dask(v)), None)
        if ref is None:
            raise DataError("no Dask column among the inputs")
        chunks = ref.chunks[0]
    if any(np.isnan(c) for c in chunks):
        raise DataError("a Dask input has unknown chunk sizes; call .compute_chunk_sizes() first")
    n = int(sum(chunks))
    out = {}
    for key, v in columns.items():
        if v is None:
            out[key] = None
            continue
        if is_dask(v) and any(np.isnan(c) for c in v.shape):
            raise DataError(f"{key} has unknown chunk sizes; call .compute_chunk_sizes() on it first")
        if v.ndim != 1 or int(v.shape[0]) != n:
            raise DataError(f"{key} must be 1-D with one entry per row ({n}); got shape {v.shape}")
        out[key] = (v if is_dask(v) else da.from_array(v, chunks=(chunks,))).rechunk((chunks,))
    return out, n


def _pass(fn, columns: dict, combine):
    """combine(acc, fn(**chunk columns)) over the chunks in row order, a few chunks computed at once."""
    dask, _ = dask_modules()
    keys = [k for k, v in columns.items() if v is not None]
    blocks = [columns[k].to_delayed(optimize_graph=False).ravel() for k in keys]
    tasks = [dask.delayed(fn)(**dict(zip(keys, parts))) for parts in zip(*blocks)]
    acc = None
    for got in computed_in_order(dask, tasks):
        for part in got:
            acc = part if acc is None else combine(acc, part)
    return acc


class _Levels:
    """Pass 1 of a chunk: the distinct values of each column (scores: at most EXACT_LEVELS, else None) and the
    score range."""

    def __call__(self, **cols):
        out = {}
        for k, v in cols.items():
            v = np.asarray(v)
            if k == "w":
                out[k] = (bool(np.all(np.isfinite(v))), float(v.min(initial=np.inf)), float(v.sum()))
            elif k == "scores":
                u = np.unique(v)
                out[k] = (u if u.size <= EXACT_LEVELS else None, float(v.min(initial=np.inf)),
                          float(v.max(initial=-np.inf)), bool(np.all(np.isfinite(v))))
            elif k.startswith("s"):                      # sensitive columns: every label
                out[k] = _labels(v)
            else:                                         # labels / decisions: enough to tell binary or not
                if v.dtype.kind == "f" and not np.all(np.isfinite(v)):
                    raise DataError(f"{k} contains NaN or infinite values; drop or impute those rows first")
                out[k] = _labels(v, k)[:3]
        return out


def _labels(v, what="sensitive_features"):
    """The sorted distinct values of a chunk's column; a DataError for missing (None, NaN) or unsortable ones."""
    try:
        u = np.unique(v)
    except TypeError:                                 # object column: None among strings, or mixed types
        u = None
    if u is None or u.dtype == object and any(x is None or x != x for x in u) or u.dtype.kind == "f" and \
            what == "sensitive_features" and np.isnan(u).any():
        raise DataError(f"{what} has missing values (None, NaN) or labels of types that do not sort (e.g. numbers "
                        f"and strings); drop or fill those rows, or make the labels one type")
    return u


def _merge_levels(a, b):
    out = {}
    for k in a:
        if k == "w":
            out[k] = (a[k][0] and b[k][0], min(a[k][1], b[k][1]), a[k][2] + b[k][2])
        elif k == "scores":
            u = None if a[k][0] is None or b[k][0] is None else np.union1d(a[k][0], b[k][0])
            u = None if u is not None and u.size > EXACT_LEVELS else u
            out[k] = (u, min(a[k][1], b[k][1]), max(a[k][2], b[k][2]), a[k][3] and b[k][3])
        else:
            out[k] = np.union1d(a[k], b[k]) if k.startswith("s") else np.union1d(a[k], b[k])[:3]
    return out


@dataclass
class _Spec:
    """What pass 2 computes per chunk: group codes (per sensitive column: its sorted names), the binary
    mappings, the score bins."""

    names: list                       # per sensitive column, its sorted names (None: already codes)
    radix: list
    n_cells: int
    pos_label: object = None
    confusion: bool = False
    errors: bool = False
    levels: np.ndarray | None = None  # exact score levels, or None (equal-width bins on [lo, hi])
    lo: float = 0.0
    hi: float = 1.0
    bins: int = 0
    confusion_labels: bool = False    # y_true enters the confusion counts (binary labels given)
    positive: object = "binary"       # the AUC's positive label: "binary" (the pos_label mapping), None (+1), a value

    def __call__(self, **cols):
        code = np.zeros(len(next(iter(cols.values()))), dtype=np.intp)
        for j, names in enumerate(self.names):
            v = np.asarray(cols[f"s{j}"])
            c = v.astype(np.intp) if names is None else np.searchsorted(names, v)
            code = code * self.radix[j] + c
        G = self.n_cells
        w = np.asarray(cols["w"], dtype=float) if "w" in cols else np.ones(code.size)
        out = {"count": np.bincount(code, minlength=G).astype(float), "wsum": np.bincount(code, w, minlength=G)}
        if self.confusion:
            yp = binary(cols["y_pred"], self.pos_label, "y_pred").astype(np.intp)
            yt = binary(cols["y_true"], self.pos_label, "y_true").astype(np.intp) if self.confusion_labels else 0
            out["confusion"] = np.bincount(4 * code + 2 * yt + yp, w, minlength=4 * G).reshape(G, 4)
        if self.errors:
            e = np.asarray(cols["y_pred"], dtype=float) - np.asarray(cols["y_true"], dtype=float)
            out["errors"] = np.stack([np.bincount(code, w, minlength=G), np.bincount(code, w * e * e, minlength=G),
                                      np.bincount(code, w * np.abs(e), minlength=G)], axis=1)
        if self.bins:
            y = np.asarray(cols["y_true"])
            pos = (binary(y, self.pos_label, "y_true") if self.positive == "binary" else
                   y == (1 if self.positive is None else self.positive)).astype(np.intp)
            out["hist"] = np.bincount((2 * code + pos) * self.bins + self.bin_of(cols["scores"]), w,
                                      minlength=2 * G * self.bins).reshape(G, 2, self.bins)
        return out

    def bin_of(self, s):
        s = np.asarray(s, dtype=float)
        if self.levels is not None:
            return np.searchsorted(self.levels, s)
        width = (self.hi - self.lo) / self.bins
        b = np.floor((s - self.lo) / width) if width > 0 else np.zeros(s.size)
        return np.clip(b, 0, self.bins - 1).astype(np.intp)


def _add(a, b):
    return {k: a[k] + b[k] for k in a}


def hist_auc(pos: np.ndarray, neg: np.ndarray, ties: float = 0.5, exact: bool = False) -> tuple[float, float]:
    """(AUC, error bound) from the positive and negative weight per ordered bin: a positive wins the negative
    weight of lower bins and ``ties`` (exact levels) or 1/2 (sketch bins) of its own bin's. The bound is 0 for
    exact levels, else (1/2) sum_b P_b N_b / (P N) (a same-bin pair counts 1/2 for a true value in [0, 1])."""
    den = float(pos.sum()) * float(neg.sum())
    if den <= 0:
        return float("nan"), float("nan")
    value = float(auc_from_levels(neg, pos, ties if exact else 0.5))
    return value, 0.0 if exact else 0.5 * float(pos @ neg) / den


# ---------------------------------------------------------------------------------------------------
# fm.assess on Dask inputs
# ---------------------------------------------------------------------------------------------------
class ChunkedAssessment(Assessment):
    """An :class:`Assessment` computed by chunked sums (see :mod:`fairmodel.metrics.chunked`). ``auc_error_bound``
    holds the AUC sketch's bound per group and overall (0 when exact); intervals are refused."""

    def __init__(self, groups, level_names, metrics, by, overall, sizes, n, auc_info=None):
        self.metrics, self.groups, self.level_names = tuple(metrics), tuple(groups), tuple(level_names)
        self.sizes, self.n_samples = np.asarray(sizes), int(n)
        self._by, self._overall, self._ci = by, overall, None
        self.row_order = None
        self.auc_error_bound = auc_info

    def bootstrap(self, n_boot: int = 1000, seed=0):
        raise DataError("bootstrap intervals are not computed on Dask-backed inputs: a row bootstrap needs every "
                        "row's multiplicity in every draw, and resampling whole chunks is not a row bootstrap "
                        "(its spread is the variation between chunks, which depends on how the rows were cut). "
                        "Compute intervals on an in-memory sample, e.g. fm.assess(...) on .compute() of a random "
                        "subset of the rows")

    def ci(self, level: float = 0.95, n_boot: int = 1000, seed=0):
        return self.bootstrap(n_boot, seed)


def assess_chunked(y_true=None, *, y_pred=None, scores=None, sensitive_features=None, metrics=None,
                   sample_weight=None, pos_label=None, data=None, auc_bins=None) -> ChunkedAssessment:
    """:func:`fairmodel.assess` on Dask-backed inputs (see the module docstring for the methods and bounds).
    With a Dask-backed ``data``, ``y_pred`` / ``scores`` may be callables (a model's ``predict`` /
    ``decision_function``), run chunk by chunk on the features."""
    bins = DEFAULT_BINS if auc_bins is None else auc_bins
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 2:
        raise OptionError(f"auc_bins must be an integer >= 2; got {auc_bins!r}")
    if getattr(data, "is_chunked", False):
        y_true = data.y if y_true is None else y_true
        y_pred, scores = ((data.X.map_blocks(_Predict(v), drop_axis=1, dtype=float) if callable(v) else v)
                          for v in (y_pred, scores))
    elif data is not None and not is_dask(data):
        raise DataError("with Dask inputs, data= must be a Dask-backed fm.Dataset (string column names are "
                        "read from in-memory frames only)")
    if any(isinstance(v, str) for v in (y_true, y_pred, scores, sample_weight)):
        raise DataError("with Dask inputs, give the columns themselves (Dask arrays or Series), not names")
    sens, level_names = _sensitive(sensitive_features, data)
    cols = {"y_true": y_true, "y_pred": y_pred, "scores": scores, "w": sample_weight}
    cols = {k: None if v is None else _array(v) for k, v in cols.items()}
    cols.update({f"s{j}": c for j, (c, _) in enumerate(sens)})
    cols, n = _aligned(cols, data.X.chunks[0] if getattr(data, "is_chunked", False) else None)
    has = {"y_true": cols["y_true"] is not None, "y_pred": cols["y_pred"] is not None,
           "scores": cols["scores"] is not None, "y_proba": False}
    if not any(has.values()):
        raise DataError("give y_pred= (decisions or predictions) or scores=")
    lev = _pass(_Levels(), {k: v for k, v in cols.items() if v is not None}, _merge_levels)
    check_pos_label(pos_label, {k: lev[k] for k in ("y_true", "y_pred") if has[k] and lev[k] is not None})
    yt_bin, yp_bin = (has[k] and _binary_levels(lev[k], pos_label) for k in ("y_true", "y_pred"))
    regression = has["y_pred"] and not yp_bin or (has["y_true"] and not yt_bin and not has["scores"])
    names, custom = _metric_list(metrics, has, regression)
    if custom or "ks" in names:
        raise DataError("on Dask-backed inputs fm.assess computes the sum-type metrics (" + ", ".join(SUM_METRICS)
                        + ") and auc; " + ("callable metrics" if custom else "ks") + " need the rows in memory: "
                        "assess an in-memory sample")
    _check_needs(names, has, yt_bin, yp_bin)
    if "w" in lev and (not lev["w"][0] or lev["w"][1] < 0 or lev["w"][2] == 0):
        raise DataError("sample_weight must be finite, >= 0 and not zero everywhere")
    col_names = [nm if nm is not None else _sorted_levels(lev[f"s{j}"]) for j, (_, nm) in enumerate(sens)]
    radix = [len(nm) for nm in col_names]
    spec = _Spec([None if nm is not None else col_names[j] for j, (_, nm) in enumerate(sens)], radix,
                 int(np.prod(radix)), pos_label, confusion=any(m in FROM_CONFUSION for m in names),
                 errors=any(m in ("mse", "mae") for m in names), confusion_labels=bool(yt_bin))
    if "auc" in names:
        levels, lo, hi, finite = lev["scores"]
        if not finite:
            raise DataError("scores contain NaN or infinite values")
        spec.levels, spec.lo, spec.hi = levels, lo, hi
        spec.bins = levels.size if levels is not None else int(bins)
    used = {"scores": spec.bins, "y_pred": spec.confusion or spec.errors,
            "y_true": spec.bins or spec.errors or (spec.confusion and yt_bin)}
    need = {k: v for k, v in cols.items() if v is not None and used.get(k, True)}
    stats = _pass(spec, need, _add)
    keep = np.flatnonzero(stats["count"] > 0)          # intersections that occur
    groups = [_cell_name(c, col_names, radix) for c in keep]
    by, overall, auc_info = [], [], None
    for m in names:
        if m in FROM_CONFUSION:
            S = stats["confusion"][keep]
            by.append(FROM_CONFUSION[m](S)), overall.append(float(FROM_CONFUSION[m](S.sum(axis=0))))
        elif m in ("mse", "mae"):
            S, c = stats["errors"][keep], 1 if m == "mse" else 2
            by.append(ratio(S[:, c], S[:, 0])), overall.append(float(ratio(S[:, c].sum(), S[:, 0].sum())))
        else:
            H, exact = stats["hist"][keep], spec.levels is not None
            per = [hist_auc(h[1], h[0], exact=exact) for h in H]
            a_all = hist_auc(H[:, 1].sum(axis=0), H[:, 0].sum(axis=0), exact=exact)
            by.append(np.array([p[0] for p in per])), overall.append(a_all[0])
            auc_info = {"method": "exact (distinct score levels)" if exact else f"histogram sketch, {spec.bins} "
                        f"equal-width bins on [{spec.lo:.6g}, {spec.hi:.6g}]",
                        "by_group": dict(zip(groups, (p[1] for p in per))), "overall": a_all[1]}
    return ChunkedAssessment(groups, level_names, names, np.column_stack(by), np.asarray(overall, dtype=float),
                             stats["count"][keep].astype(int), n, auc_info)


def _binary_levels(levels, pos_label) -> bool:
    try:
        binary(levels, pos_label)
        return True
    except DataError:
        return False


def _sorted_levels(levels):
    levels = np.asarray(levels)
    return levels.astype(str) if levels.dtype == object and all(isinstance(v, str) for v in levels) else levels


def _cell_name(cell, col_names, radix):
    parts = []
    for names, r in zip(reversed(col_names), reversed(radix)):
        cell, c = divmod(int(cell), r)
        parts.append(names[c])
    parts = [p.item() if hasattr(p, "item") else p for p in reversed(parts)]
    return parts[0] if len(parts) == 1 else tuple(parts)


CHUNKED_ASSESS = {"applies": dask_input, "assess": assess_chunked}
