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

from ... import datasets as D
from ...data import Dataset, encode_columns
from ...errors import DataError, FairmodelError
from ...expressions import Weights, hinge_loss, logistic_loss, squared_loss

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ProblemFileError(DataError):
    """A problem file that cannot be read or has a wrong key, type or value."""


TOP_KEYS = {"title": "a title (text)", "data": "the data table", "model": "the model table",
            "problem": "the problem table", "solve": "solve options"}
DATA_KEYS = {"name": "a bundled data set: " + ", ".join(D.BUNDLED), "csv": "path of a CSV file",
             "target": "target column", "sensitive": "sensitive attribute", "features": "feature columns (CSV)",
             "categorical": "CSV columns to one-hot encode", "subsample": "rows to keep (stratified)",
             "split": "fractions, e.g. [0.7, 0.3]; the problem uses the first part", "seed": "seed of subsample/split",
             "encoding": "Adult encoding (standard, a9a, dp)", "standardize": "standardize numeric features",
             "include_sensitive": "keep the sensitive attribute as a feature"}
MODEL_KEYS = {"radius": "radius of the weight ball (positive number, or omit)", "intercept": "true/false",
              "name": "variable name"}
SOLVE_KEYS = {"backend": "exact or stochastic", "method": "method of the default backend", "seed": "integer",
              "exact": "table of exact-backend options", "stochastic": "table of stochastic-backend options"}


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
        """``table[key]`` checked against a type (``number``, ``int``, ``bool``, ``str``, ``list``)."""
        if key not in table:
            return default
        v = table[key]
        ok = {"number": isinstance(v, numbers.Real) and not isinstance(v, bool),
              "int": isinstance(v, int) and not isinstance(v, bool), "bool": isinstance(v, bool),
              "str": isinstance(v, str), "list": isinstance(v, list)}[kind]
        if not ok:
            raise self.error(f"{where} {key}", f"must be a {kind}; got {v!r}")
        if choices is not None and v not in choices:
            raise self.error(f"{where} {key}", f"{v!r} is not allowed; allowed values are "
                                               f"{', '.join(map(str, choices))}")
        if positive and not v > 0:
            raise self.error(f"{where} {key}", f"must be positive; got {v!r}")
        return v


def read(path) -> Spec:
    path = Path(path)
    if not path.is_file():
        raise ProblemFileError(f"{path}: no such problem file")
    try:
        doc = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProblemFileError(f"{path.name}: not valid TOML: {exc}") from None
    spec = Spec(doc, path)
    spec.check_keys(doc, TOP_KEYS, "top level")
    return spec


def load_data(spec: Spec) -> Dataset:
    t = spec.table("data", DATA_KEYS)
    if ("name" in t) == ("csv" in t):
        raise spec.error("[data]", "give exactly one of name (a bundled data set) or csv (a file path)")
    if "name" in t:
        name = spec.get(t, "name", "[data]", "str", choices=list(D.BUNDLED))
        options = {k: t[k] for k in ("target", "sensitive", "encoding", "standardize", "include_sensitive") if k in t}
        for key in ("features", "categorical"):
            if key in t:
                raise spec.error(f"[data] {key}", "only for csv data; bundled data sets come encoded")
        try:
            data = D.load(name, **options)
        except TypeError as exc:
            raise spec.error("[data]", f"option not accepted by the {name} loader: {exc}") from None
        except DataError as exc:
            raise spec.error("[data]", str(exc)) from None
    else:
        data = _read_csv(spec, t)
    seed = spec.get(t, "seed", "[data]", "int", default=0)
    if "subsample" in t:
        data = data.subsample(spec.get(t, "subsample", "[data]", "int", positive=True), seed=seed)
    if "split" in t:
        fractions = spec.get(t, "split", "[data]", "list")
        try:
            data = data.split(fractions, seed=seed)[0]
        except DataError as exc:
            raise spec.error("[data] split", str(exc)) from None
    return data


def _read_csv(spec: Spec, t: dict) -> Dataset:
    path = Path(spec.get(t, "csv", "[data]", "str"))
    path = path if path.is_absolute() else spec.path.parent / path
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise spec.error("[data] csv", f"cannot read {path}: {exc}") from None
    if len(rows) < 2:
        raise spec.error("[data] csv", f"{path} has no data rows")
    header, body = rows[0], rows[1:]
    if any(len(r) != len(header) for r in body):
        raise spec.error("[data] csv", f"{path}: every row must have {len(header)} fields")
    columns = {h: np.array([r[j] for r in body]) for j, h in enumerate(header)}
    target = spec.get(t, "target", "[data]", "str")
    sensitive = spec.get(t, "sensitive", "[data]", "str")
    for key, col in (("target", target), ("sensitive", sensitive)):
        if col is not None and col not in columns:
            raise spec.error(f"[data] {key}", f"unknown column {col!r}; columns are {', '.join(header)}")
    features = spec.get(t, "features", "[data]", "list",
                        default=[h for h in header if h not in (target, sensitive)])
    categorical = spec.get(t, "categorical", "[data]", "list", default=[])
    for col in list(features) + list(categorical):
        if col not in columns:
            raise spec.error("[data] features", f"unknown column {col!r}; columns are {', '.join(header)}")
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
    X, names = encode_columns(table, list(features))
    y = None
    if target is not None:
        try:
            y = columns[target].astype(float)
        except ValueError:
            raise spec.error("[data] target", f"column {target!r} is not numeric") from None
    groups = columns[sensitive] if sensitive is not None else None
    return Dataset(X, y, groups, feature_names=names, name=path.stem, target_name=target, sensitive_name=sensitive)


def build_weights(spec: Spec, data: Dataset, **extra):
    t = spec.table("model", MODEL_KEYS, required=False)
    try:
        return Weights(data.n_features, radius=spec.get(t, "radius", "[model]", "number", positive=True),
                       intercept=spec.get(t, "intercept", "[model]", "bool", default=False),
                       name=spec.get(t, "name", "[model]", "str", default="w"), **extra)
    except FairmodelError as exc:
        raise spec.error("[model]", str(exc)) from None


def solve_options(spec: Spec, backend: str) -> dict:
    """The [solve.<backend>] options of the file (method, solver, method options)."""
    t = spec.table("solve", SOLVE_KEYS, required=False)
    options = t.get(backend, {})
    if not isinstance(options, dict):
        raise spec.error(f"[solve] {backend}", "must be a table of options")
    return dict(options)


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


LOSSES = {"logistic": logistic_loss, "hinge": hinge_loss, "squared": squared_loss}


def build_loss(spec: Spec, t: dict, data: Dataset, w):
    """The per-sample loss named by [problem] loss (default logistic) of the linear score of ``w``."""
    name = spec.get(t, "loss", "[problem]", "str", default="logistic", choices=list(LOSSES))
    return LOSSES[name](data.score(w), data.y)
