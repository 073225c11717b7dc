"""Problem files: a fair-learning problem as a TOML file (read with the standard library).

```toml
title = "Group DRO on Adult by race"
[data]                    # a bundled data set by name, or csv = "path.csv" (relative to this file)
name = "adult"
target = "income"
sensitive = "race"
subsample = 5000          # optional: group-stratified subsample with [data].seed
seed = 0
[model]
radius = 5.0
intercept = false
[problem]
family = "gdro"           # see FAMILIES below for the families and their keys
loss = "logistic"
[solve]                   # defaults of the command line (overridden by its flags)
backend = "exact"
seed = 0
[solve.exact]             # options of the exact backend (method, solver, method options)
method = "dual"
[solve.stochastic]        # options of the stochastic backend
epochs = 20
```

Every wrong key, type or value raises :class:`ProblemFileError` naming the file, the key and the allowed
values. This module reads and checks the tables; the builders of the [problem] table, one module per
family, are collected in :data:`fairmodel.frontends.problemfile.FAMILIES`.
"""
from __future__ import annotations

import copy
import csv
import numbers
import sys
from pathlib import Path

import numpy as np

from ...data import datasets
from ...data.dataset import Dataset, encode_columns, standardize_columns
from ...errors import DataError, FairmodelError
from ...expressions import Weights
from ...expressions.atoms.losses import LOSSES as ALL_LOSSES
from ...utilities.validate import check_complete, check_regular_file, check_unique_names, nesting_depth

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ProblemFileError(DataError):
    """A problem file that cannot be read or has a wrong key, type or value."""


TOP_KEYS = {"title": "a title (text)", "data": "the data table", "model": "the model table",
            "problem": "the problem table", "solve": "solve options"}
DATA_KEYS = {"name": "a bundled data set: " + ", ".join(datasets.BUNDLED), "csv": "path of a CSV file",
             "target": "target column", "sensitive": "sensitive attribute", "features": "feature columns (CSV)",
             "categorical": "CSV columns to one-hot encode", "subsample": "rows to keep (stratified)",
             "split": "fractions, e.g. [0.7, 0.3]; the problem uses the first part", "seed": "seed of subsample/split",
             "encoding": "Adult encoding (standard, a9a, dp)",
             "standardize": "standardize numeric features (CSV: the non-categorical ones)",
             "include_sensitive": "keep the sensitive attribute as a feature"}
DATA_TYPES = {"name": "str", "csv": "str", "target": "str", "sensitive": "str", "features": "str list",
              "categorical": "str list", "subsample": "int", "split": "number list", "seed": "seed", "encoding": "str",
              "standardize": "bool", "include_sensitive": "bool"}
CSV_ONLY, BUNDLED_ONLY = ("features", "categorical"), ("encoding",)
LOADER_OPTIONS = ("target", "sensitive", "encoding", "standardize", "include_sensitive")
CSV_MISSING = ("NA", "N/A", "NaN", "nan", "null", "NULL")  # cells read as missing, besides blank ones
MODEL_KEYS = {"radius": "radius of the weight ball (positive number, or omit)", "intercept": "true/false",
              "name": "variable name"}
SOLVE_KEYS = {"backend": "exact or stochastic", "method": "method of the default backend", "seed": "integer",
              "exact": "table of exact-backend options", "stochastic": "table of stochastic-backend options"}


def _number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


class Spec:
    """A parsed problem file: its tables and its path (for messages and relative paths)."""

    def __init__(self, doc: dict, path: Path):
        self.doc, self.path = doc, path

    def error(self, key: str, message: str) -> ProblemFileError:
        return ProblemFileError(f"{self.path.name}: {key}: {message}")

    def table(self, name: str, allowed: dict, required: bool = True) -> dict:
        value = self.doc.get(name)
        if value is None:
            if required:
                raise self.error(f"[{name}]", "missing table")
            return {}
        if not isinstance(value, dict):
            raise self.error(name, f"must be a table [{name}], got {type(value).__name__}")
        self.check_keys(value, allowed, f"[{name}]")
        return value

    def check_keys(self, table: dict, allowed: dict, where: str) -> None:
        unknown = [k for k in table if k not in allowed]
        if unknown:
            raise self.error(f"{where} {unknown[0]}", f"unknown key; allowed keys are {', '.join(allowed)}")

    def get(self, table: dict, key: str, where: str, kind, default=None, choices=None, positive=False):
        """``table[key]`` checked against a type (``number``, ``int``, ``seed`` (a non-negative integer), ``bool``,
        ``str``, ``list``, ``str list``, ``number list``)."""
        if key not in table:
            return default
        v = table[key]
        is_int = isinstance(v, int) and not isinstance(v, bool)
        ok = {"number": _number(v), "int": is_int, "seed": is_int and v >= 0, "bool": isinstance(v, bool),
              "str": isinstance(v, str), "list": isinstance(v, list),
              "str list": isinstance(v, list) and all(isinstance(x, str) for x in v),
              "number list": isinstance(v, list) and all(map(_number, v))}[kind]
        if ok and kind in ("number", "number list") and not np.all(np.isfinite(v)):
            raise self.error(f"{where} {key}", f"must be finite; got {v!r}")
        if not ok:
            what = {"str list": "list of strings", "number list": "list of numbers", "int": "integer",
                    "seed": "non-negative integer (a seed)",
                    "str": "string (text in quotes)"}.get(kind, kind)
            raise self.error(f"{where} {key}", f"must be {'an' if what[0] in 'aeiou' else 'a'} {what}; got {v!r}")
        if choices is not None and v not in choices:
            raise self.error(f"{where} {key}", f"{v!r} is not allowed; allowed values are "
                                               f"{', '.join(map(str, choices))}")
        if positive and not v > 0:
            raise self.error(f"{where} {key}", f"must be positive; got {v!r}")
        return v


MAX_FILE_BYTES = 1 << 20      # a problem file is a few hundred bytes; the data are in [data]
MAX_CSV_BYTES = 1 << 28       # [data] csv is read into Python lists: about 10x its size in memory
MAX_NESTING = 16              # tables and arrays in tables (a problem file nests 3 deep)
MAX_INTEGER = 2 ** 63         # TOML integers are 64-bit (TOML 1.0); tomllib reads longer ones


def read(path) -> Spec:
    if not Path(path).exists():
        raise ProblemFileError(f"{path}: no such problem file")
    path = check_regular_file(path, "the problem file", error=ProblemFileError)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ProblemFileError(f"{path}: cannot read the problem file: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ProblemFileError(f"{path.name}: larger than {MAX_FILE_BYTES >> 20} MiB: not a problem file (the data "
                               f"go in a CSV file named by [data] csv)")
    try:
        doc = tomllib.loads(raw.decode("utf-8-sig"))     # a byte order mark (e.g. from Notepad) is skipped
    except UnicodeDecodeError as exc:
        raise ProblemFileError(f"{path.name}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as "
                               f"UTF-8") from None
    except RecursionError:
        raise ProblemFileError(f"{path.name}: arrays or tables nest too deeply; a problem file nests at most "
                               f"{MAX_NESTING} deep") from None
    except ValueError as exc:     # TOMLDecodeError, and integers of more than 4300 digits
        raise ProblemFileError(f"{path.name}: not valid TOML: {exc}") from None
    _check_values(doc, path.name)
    spec = Spec(doc, path)
    spec.check_keys(doc, TOP_KEYS, "top level")
    spec.get(doc, "title", "top level", "str")
    return spec


def _check_values(doc: dict, name: str) -> None:
    """Refuse nesting beyond :data:`MAX_NESTING` and integers beyond 64 bits (TOML's own limit), without recursion."""
    if nesting_depth(doc, MAX_NESTING) > MAX_NESTING:
        raise ProblemFileError(f"{name}: arrays or tables nest more than {MAX_NESTING} deep; a problem file nests "
                               f"at most 3 deep ([problem.constraints])")
    stack = [("", doc)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((f"{key}.{k}" if key else k, x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((key, x) for x in v)
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) >= MAX_INTEGER:
            raise ProblemFileError(f"{name}: {key}: the integer of {len(str(abs(v)))} digits is beyond TOML's "
                                   f"64-bit integers; write a number of ordinary size (e.g. 1e6 or 1000000)")


def load_data(spec: Spec) -> Dataset:
    t = spec.table("data", DATA_KEYS)
    t = {k: spec.get(t, k, "[data]", DATA_TYPES[k]) for k in t}  # every option has its type checked here
    if ("name" in t) == ("csv" in t):
        raise spec.error("[data]", "give exactly one of name (a bundled data set) or csv (a file path)")
    if "name" in t:
        name = spec.get(t, "name", "[data]", "str", choices=list(datasets.BUNDLED))
        options = {k: t[k] for k in LOADER_OPTIONS if k in t}
        for key in CSV_ONLY:
            if key in t:
                raise spec.error(f"[data] {key}", "only for csv data; bundled data sets come encoded")
        try:
            data = datasets.load(name, **options)
        except TypeError as exc:
            raise spec.error("[data]", f"option not accepted by the {name} loader: {exc}") from None
        except DataError as exc:
            raise spec.error("[data]", str(exc)) from None
    else:
        for key in BUNDLED_ONLY:
            if key in t:
                raise spec.error(f"[data] {key}", "only for bundled data sets (name = ...); list the CSV columns "
                                                  "to one-hot encode in [data] categorical")
        data = _read_csv(spec, t)
    seed = t.get("seed", 0)
    if "subsample" in t:
        try:
            data = data.subsample(spec.get(t, "subsample", "[data]", "int", positive=True), seed=seed)
        except DataError as exc:
            raise spec.error("[data] subsample", str(exc)) from None
    if "split" in t:
        try:
            data = data.split(t["split"], seed=seed)[0]
        except DataError as exc:
            raise spec.error("[data] split", str(exc)) from None
    return data


def _read_csv(spec: Spec, t: dict) -> Dataset:
    """The CSV data of [data] (``t``: its options, type-checked): every used column complete, features
    numeric unless listed in categorical, neither the target nor (unless include_sensitive) the sensitive one."""
    path = Path(t["csv"])
    path = path if path.is_absolute() else spec.path.parent / path
    try:
        check_regular_file(path, "the CSV file", MAX_CSV_BYTES, " into memory by a problem file; write a sample of "
                           "its rows to a smaller file, or in Python read the data as a Dask-backed fm.Dataset "
                           "(fm.Dataset.from_parquet)")
    except DataError as exc:
        raise spec.error("[data] csv", str(exc)) from None
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
    except UnicodeDecodeError as exc:
        raise spec.error("[data] csv", f"cannot read {path}: it is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                       f"save it as UTF-8") from None
    except (OSError, csv.Error) as exc:
        raise spec.error("[data] csv", f"cannot read {path}: {exc}") from None
    while rows and not rows[-1]:        # blank lines at the end of the file
        rows.pop()
    if len(rows) < 2:
        raise spec.error("[data] csv", f"{path} has no data rows")
    header, body = rows[0], rows[1:]
    if len(header) == 1 and any(sep in header[0] for sep in (";", "\t", "|")):
        sep = next(s for s in (";", "\t", "|") if s in header[0])
        raise spec.error("[data] csv", f"{path} has one column {header[0]!r}: it seems to be separated by {sep!r}; "
                                       f"fairmodel reads comma-separated files (write it with sep=',')")
    blank = [j + 1 for j, h in enumerate(header) if not h.strip()]
    if blank:
        raise spec.error("[data] csv", f"{path}: column(s) {blank} of the header have no name; name every column")
    bad = next((i for i, r in enumerate(body) if len(r) != len(header)), None)
    if bad is not None:
        raise spec.error("[data] csv", f"{path}: line {bad + 2} has {len(body[bad])} fields; every row must have "
                                       f"{len(header)} fields (the header's)")
    try:
        check_unique_names(header, f"{path.name} has duplicated column name(s)", "rename the duplicates")
    except DataError as exc:
        raise spec.error("[data] csv", str(exc)) from None
    columns = {h: np.array([r[j] for r in body]) for j, h in enumerate(header)}
    target, sensitive, include_sensitive = t.get("target"), t.get("sensitive"), t.get("include_sensitive", False)
    for key, col in (("target", target), ("sensitive", sensitive)):
        if col is not None and col not in columns:
            raise spec.error(f"[data] {key}", f"unknown column {col!r}; columns are {', '.join(header)}")
    features = t.get("features", [h for h in header if h != target and (include_sensitive or h != sensitive)])
    categorical = t.get("categorical", [])
    for col in list(features) + list(categorical):
        if col not in columns:
            raise spec.error("[data] features", f"unknown column {col!r}; columns are {', '.join(header)}")
    if target is not None and target in features:
        raise spec.error("[data] features", f"target column {target!r} is listed among the features; remove it")
    if sensitive is not None and sensitive in features and not include_sensitive:
        raise spec.error("[data] features", f"sensitive column {sensitive!r} is listed among the features; set "
                                            f"include_sensitive = true to use it as a feature, or remove it")
    for key, cols in (("features", features), ("target", [target]), ("sensitive", [sensitive])):
        for col in (c for c in cols if c is not None):
            try:
                check_complete(columns[col], f"column {col!r}", tokens=CSV_MISSING, file=path.name)
            except DataError as exc:
                raise spec.error(f"[data] {key}", str(exc)) from None
    table = {}
    for col in features:
        if col in categorical:
            table[col] = columns[col]
            continue
        try:
            table[col] = columns[col].astype(float)
        except ValueError:
            raise spec.error("[data] features", f"column {col!r} is not numeric; list it in [data] categorical "
                                                f"to one-hot encode it") from None
    try:
        X, names = encode_columns(table, list(features))
    except DataError as exc:
        raise spec.error("[data] features", str(exc)) from None
    if t.get("standardize", False):
        X = standardize_columns(X, np.array([n in table and n not in categorical for n in names]))
    y = None
    if target is not None:
        try:
            y = columns[target].astype(float)
        except ValueError:
            raise spec.error("[data] target", f"column {target!r} is not numeric") from None
    groups = columns[sensitive] if sensitive is not None else None
    try:
        return Dataset(X, y, groups, feature_names=names, name=path.stem, target_name=target,
                       sensitive_name=sensitive)
    except DataError as exc:
        raise spec.error("[data]", str(exc)) from None


def build_weights(spec: Spec, data: Dataset, **extra):
    t = spec.table("model", MODEL_KEYS, required=False)
    radius = spec.get(t, "radius", "[model]", "number", positive=True)
    intercept = spec.get(t, "intercept", "[model]", "bool", default=False)
    name = spec.get(t, "name", "[model]", "str", default="w")
    try:
        return Weights(data.n_features, radius=radius, intercept=intercept, name=name, **extra)
    except FairmodelError as exc:
        raise spec.error("[model]", str(exc)) from None


def file_backend(spec: Spec) -> str:
    """The file's [solve] backend (default exact)."""
    t = spec.table("solve", SOLVE_KEYS, required=False)
    return spec.get(t, "backend", "[solve]", "str", default="exact", choices=("exact", "stochastic"))


def solve_options(spec: Spec, backend: str) -> dict:
    """The file's options of ``backend``: the [solve.<backend>] table (method, solver, method options), the
    [solve] method when ``backend`` is the file's backend, and the [solve] seed for the stochastic backend."""
    t = spec.table("solve", SOLVE_KEYS, required=False)
    options = t.get(backend, {})
    if not isinstance(options, dict):
        raise spec.error(f"[solve] {backend}", "must be a table of options")
    options = dict(options)
    method = spec.get(t, "method", "[solve]", "str")
    if method is not None and backend == file_backend(spec):
        options.setdefault("method", method)
    if backend == "stochastic":
        options.setdefault("seed", spec.get(t, "seed", "[solve]", "seed", default=0))
    return options


def set_value(doc: dict, dotted: str, value):
    """A copy of ``doc`` with the dotted key (e.g. ``problem.kappa``) set to ``value`` (for sweeps)."""
    out = copy.deepcopy(doc)
    node = out
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ProblemFileError(f"{dotted}: {p} is not a table")
    node[parts[-1]] = value
    return out


LOSSES = {name: f for name, f in ALL_LOSSES.items() if name != "softmax"}   # of a vector of weights


def build_loss(spec: Spec, t: dict, data: Dataset, w):
    """The per-sample loss named by [problem] loss (default logistic) of the linear score of ``w``."""
    name = spec.get(t, "loss", "[problem]", "str", default="logistic", choices=list(LOSSES))
    return LOSSES[name](data.score(w), data.y)
