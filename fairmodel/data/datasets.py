"""Bundled real data sets (offline) and the synthetic generators of the papers.

The CSV files are gzip copies of the project's data (provenance: ``fairmodel/_data/PROVENANCE.md``).
They are parsed with the standard library; pandas is not needed.

Conventions shared by the loaders
---------------------------------
* Binary classification targets are coded ``+1`` (positive class) / ``-1``.
* Groups keep readable names (``"Male"``, ``"white"``, ...).
* Numeric features are standardized (zero mean, unit variance) unless ``standardize=False``;
  categorical columns are one-hot encoded. The sensitive attribute is not a feature unless
  ``include_sensitive=True``.
"""
from __future__ import annotations

import csv
import gzip
import io
from importlib import resources

import numpy as np
from scipy import sparse

from ..errors import DataError
from ..utilities.validate import as_generator, check_bool, check_int, check_number
from .dataset import Dataset, encode_columns, standardize_columns

ADULT_CATEGORICAL = ("workclass", "education", "marital.status", "occupation", "relationship", "race", "sex",
                     "native.country")
ADULT_NUMERIC = ("age", "fnlwgt", "education.num", "capital.gain", "capital.loss", "hours.per.week")


def read_bundled_csv(name: str) -> dict[str, np.ndarray]:
    """The bundled CSV ``name`` (``"adult"``, ``"communities"`` or ``"lawschool"``) as columns of strings."""
    try:
        raw = resources.files("fairmodel").joinpath("_data").joinpath(f"{name}.csv.gz").read_bytes()
    except FileNotFoundError:
        raise DataError(f"no bundled data set {name!r}; bundled: {', '.join(BUNDLED)}") from None
    rows = list(csv.reader(io.StringIO(gzip.decompress(raw).decode("utf-8"))))
    header, body = rows[0], rows[1:]
    cols = np.array(body, dtype=object).T
    return {h: cols[j].astype(str) for j, h in enumerate(header)}


def _choose(value, allowed, what):
    if value not in allowed:
        raise DataError(f"unknown {what} {value!r}; choose one of {', '.join(map(repr, allowed))}")
    return value


def _flags(standardize, include_sensitive) -> tuple[bool, bool]:
    return (check_bool(standardize, "standardize", error=DataError),
            check_bool(include_sensitive, "include_sensitive", error=DataError))


def _rows_without(table: dict, missing: set[str], columns) -> np.ndarray:
    keep = np.ones(len(next(iter(table.values()))), dtype=bool)
    for c in columns:
        keep &= ~np.isin(table[c], list(missing))
    return keep


def load_adult(target: str = "income", sensitive: str | None = "sex", *, encoding: str = "standard",
               standardize: bool = True, include_sensitive: bool = False) -> Dataset:
    """UCI Adult (census income, 32,561 rows; rows with a missing ``?`` value are dropped: 30,162 rows).

    target : ``"income"`` (+1 for ``>50K``) or ``"age"`` (the DP-regression variant).
    sensitive : ``"sex"``, ``"race"``, ``"sex_race"`` (the product, e.g. ``("Female", "Black")``) or None.
    encoding : ``"standard"`` (numeric columns log1p for fnlwgt and capital gain/loss, one-hot categories),
        ``"a9a"`` (every column binary, as LIBSVM's a9a: numeric columns cut into quantile bins, then
        one-hot) or ``"dp"`` (the DP post-processing paper's preprocessing: string columns dropped, income
        mapped to {0, 1} and kept as a feature when it is not the target, every numeric column with more than
        two distinct values replaced by log(1 + value)).
    """
    _choose(target, ("income", "age"), "target")
    _choose(sensitive, ("sex", "race", "sex_race", None), "sensitive attribute")
    _choose(encoding, ("standard", "a9a", "dp"), "encoding")
    standardize, include_sensitive = _flags(standardize, include_sensitive)
    t = read_bundled_csv("adult")
    keep = _rows_without(t, {"?"}, t.keys())
    t = {k: v[keep] for k, v in t.items()}
    if target == "income":
        y = np.where(t["income"] == ">50K", 1.0, -1.0)
    else:
        y = t["age"].astype(float)
    sens_cols = {"sex": ["sex"], "race": ["race"], "sex_race": ["sex", "race"], None: []}[sensitive]
    groups = None
    if sensitive == "sex_race":
        groups = list(zip(t["sex"].tolist(), t["race"].tolist()))
    elif sensitive is not None:
        groups = t[sensitive]
    drop = {"income", target} | (set() if include_sensitive else set(sens_cols))
    numeric = [c for c in ADULT_NUMERIC if c not in drop]
    categorical = [c for c in ADULT_CATEGORICAL if c not in drop]
    table = {c: t[c].astype(float) for c in numeric}
    if encoding == "dp":
        if target != "income":  # the DP paper's code maps income to {0, 1} and keeps it
            table["income"] = (t["income"] == ">50K").astype(float)
            numeric = numeric + ["income"]
        for c in numeric:
            if np.unique(table[c]).size > 2:
                table[c] = np.log1p(table[c])
        X, names = encode_columns(table, numeric)
        numeric_mask = np.ones(len(names), dtype=bool)
    elif encoding == "a9a":
        for c in numeric:
            table[c] = _quantile_bins(table[c], c)
        table.update({c: t[c] for c in categorical})
        X, names = encode_columns(table, numeric + categorical)
        numeric_mask = np.zeros(len(names), dtype=bool)
    else:
        for c in ("fnlwgt", "capital.gain", "capital.loss"):
            if c in table:
                table[c] = np.log1p(table[c])
        table.update({c: t[c] for c in categorical})
        X, names = encode_columns(table, numeric + categorical)
        numeric_mask = np.array([n in numeric for n in names])
    if standardize and numeric_mask.any():
        X = standardize_columns(X, numeric_mask)
    return Dataset(X, y, groups, feature_names=names, name="adult", target_name=target,
                   sensitive_name=sensitive)


def _quantile_bins(values: np.ndarray, name: str, n_bins: int = 5) -> np.ndarray:
    edges = np.unique(np.quantile(values, np.linspace(0, 1, n_bins + 1)[1:-1]))
    codes = np.searchsorted(edges, values, side="right")
    return np.array([f"bin{c}" for c in codes], dtype=object).astype(str)


def load_lawschool(target: str = "bar1", sensitive: str | None = "race", *, standardize: bool = True,
                   include_sensitive: bool = False) -> Dataset:
    """LSAC bar passage study (27,478 rows; rows with any missing value dropped: 20,800 rows).

    target : ``"bar1"`` (+1 for a pass ``P``), ``"ugpa"`` (regression, in [0, 4]), or another numeric column
        (``"lsat"``, ``"zfygpa"``, ``"zgpa"``).
    sensitive : ``"race"`` (``"white"`` for race code 7, else ``"non-white"``), ``"gender"`` or None.
    Features: every other column; ``gender`` coded male = 1, female = 0.
    """
    _choose(target, ("bar1", "ugpa", "lsat", "zfygpa", "zgpa"), "target")
    _choose(sensitive, ("race", "gender", None), "sensitive attribute")
    standardize, include_sensitive = _flags(standardize, include_sensitive)
    t = read_bundled_csv("lawschool")
    keep = _rows_without(t, {"NA", ""}, t.keys())
    t = {k: v[keep] for k, v in t.items()}
    race = np.where(t["race"] == "7", "white", "non-white")
    gender = (t["gender"] == "male").astype(float)
    y = np.where(t["bar1"] == "P", 1.0, -1.0) if target == "bar1" else t[target].astype(float)
    groups = {"race": race, "gender": np.where(gender == 1, "male", "female"), None: None}[sensitive]
    columns = ["race", "cluster", "lsat", "ugpa", "zfygpa", "zgpa", "bar1", "fulltime", "fam_inc", "age", "gender"]
    table = {c: t[c] for c in columns if c not in ("race", "gender", "bar1")}
    table = {c: v.astype(float) for c, v in table.items()}
    table["race"] = (race == "white").astype(float)
    table["gender"] = gender
    table["bar1"] = (t["bar1"] == "P").astype(float)
    drop = {target} | (set() if include_sensitive or sensitive is None else {sensitive})
    feats = [c for c in columns if c not in drop]
    X, names = encode_columns(table, feats)
    if standardize:
        X = standardize_columns(X, np.ones(len(names), dtype=bool))
    return Dataset(X, y, groups, feature_names=names, name="lawschool", target_name=target,
                   sensitive_name=sensitive)


def load_communities(target: str = "ViolentCrimesPerPop", sensitive: str | None = "race", *,
                     standardize: bool = False, include_sensitive: bool = False) -> Dataset:
    """UCI Communities and Crime, normalized version (1,994 rows; rows with target 0 dropped: 1,984).

    Missing values are filled with 0. The sensitive attribute ``race`` is ``"white"`` where
    ``racePctWhite`` is the largest of the four race percentages, else ``"non-white"``; the four race
    columns are dropped from the features. Features are already in [0, 1], so they are not
    standardized by default.
    """
    _choose(sensitive, ("race", None), "sensitive attribute")
    standardize, include_sensitive = _flags(standardize, include_sensitive)
    t = read_bundled_csv("communities")
    if target not in t:
        raise DataError(f"unknown target {target!r}; columns are {list(t)}")
    table = {c: np.where(v == "", "0", v).astype(float) for c, v in t.items()}
    race_cols = ["racepctblack", "racePctWhite", "racePctAsian", "racePctHisp"]
    largest = np.argmax(np.column_stack([table[c] for c in race_cols]), axis=1)
    race = np.where(largest == 1, "white", "non-white")
    keep = table[target] != 0
    feats = [c for c in t if c not in set(race_cols) | {target}]
    X, names = encode_columns({c: table[c][keep] for c in feats}, feats)
    if include_sensitive:
        X = np.column_stack([X, (race[keep] == "white").astype(float)])
        names.append("race")
    if standardize:
        X = standardize_columns(X, np.ones(len(names), dtype=bool))
    groups = race[keep] if sensitive == "race" else None
    return Dataset(X, table[target][keep], groups, feature_names=names, name="communities",
                   target_name=target, sensitive_name=sensitive)


def make_auc_synthetic(n: int = 400, p: int = 5, seed=0) -> Dataset:
    """A small synthetic AUC-fairness task, the regression instance of the tests (exact optimum known).

    gamma = +1 with probability 0.4 (else -1); x ~ N(0, I_p) with x_0 shifted by 0.8 gamma; the label is +1 with
    probability sigmoid(x . beta + 0.5 gamma), beta = (1.5, -1, 0.5, 0, 0.3) (padded with zeros or truncated to
    p). With the defaults (n = 400, p = 5, seed 0) it reproduces the tests' data exactly; groups are +1 / -1.
    """
    n = check_int(n, "n (the number of rows)", minimum=2, error=DataError)
    p = check_int(p, "p (the number of features)", error=DataError)
    rng = as_generator(seed)
    gamma = np.where(rng.random(n) < 0.4, 1, -1)
    X = rng.normal(size=(n, p))
    X[:, 0] += 0.8 * gamma
    beta = np.zeros(p)
    beta[: min(p, 5)] = np.array([1.5, -1, 0.5, 0, 0.3])[: min(p, 5)]
    logit = X @ beta + 0.5 * gamma
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), 1.0, -1.0)
    return Dataset(X, y, gamma, name=f"auc-synthetic(n={n},p={p})")


def make_skewed_synthetic(n: int = 10_000, seed=0) -> Dataset:
    """A classification task with four groups of very different sizes (shares 70 / 20 / 7 / 3 %).

    8 standardized features: six normal columns, the first two shifted by 0.5 g in group g, and two binary ones
    (30 % and 2 % ones: a rare category); the label is +1 with probability sigmoid(x . beta + a_g),
    beta = (2, -1.6, 1, 0, 0.6, -0.4, 1.2, 0.8), a = (0, -0.5, 0.7, -1). Groups ``g0..g3``, features ``x0..x7``.
    """
    n = check_int(n, "n (the number of rows)", minimum=8, error=DataError)
    rng = as_generator(seed)
    g = rng.choice(4, size=n, p=[0.70, 0.20, 0.07, 0.03])
    X = np.column_stack([rng.normal(size=(n, 6)) + 0.5 * g[:, None] * (np.arange(6) < 2),
                         rng.random(n) < 0.3, rng.random(n) < 0.02]).astype(float)
    X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    logit = X @ np.array([2.0, -1.6, 1.0, 0.0, 0.6, -0.4, 1.2, 0.8]) + np.array([0.0, -0.5, 0.7, -1.0])[g]
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), 1.0, -1.0)
    return Dataset(X, y, np.array([f"g{k}" for k in range(4)])[g], feature_names=[f"x{j}" for j in range(8)],
                   name="skewed-synthetic")


def make_gdro_synthetic(m: int = 25, d: int = 1024, n_per_group=1000, flip=0.1, seed=None) -> Dataset:
    """The synthetic task of the group-DRO paper, eq. (33).

    For every group i a direction w_i* is drawn uniformly on the unit sphere of R^d; x ~ N(0, I_d) and
    y = sign(x . w_i*), flipped with probability ``flip`` (a number, or one number per group).
    ``n_per_group`` is an integer or one integer per group. Groups are named ``0..m-1``.
    """
    m = check_int(m, "m (the number of groups)", error=DataError)
    d = check_int(d, "d (the number of features)", error=DataError)
    rng = as_generator(seed)
    sizes = [check_int(s, "n_per_group (an integer, or one per group)", error=DataError)
             for s in _per_group(n_per_group, m, "n_per_group")]
    flips = np.array([check_number(f, "flip (a probability, or one per group)", low=0.0, high=1.0, error=DataError)
                      for f in _per_group(flip, m, "flip")])
    w_star = rng.standard_normal((m, d))
    w_star /= np.linalg.norm(w_star, axis=1, keepdims=True)
    Xs, ys, gs = [], [], []
    for i in range(m):
        X = rng.standard_normal((sizes[i], d))
        y = np.sign(X @ w_star[i])
        y[y == 0] = 1.0
        y = np.where(rng.random(sizes[i]) < flips[i], -y, y)
        Xs.append(X), ys.append(y), gs.append(np.full(sizes[i], i))
    return Dataset(np.vstack(Xs), np.concatenate(ys), np.concatenate(gs), name=f"gdro-synthetic(m={m},d={d})")


def make_sparse_synthetic(n: int = 20_000, d: int = 100_000, nnz: int = 20, groups: int = 2, seed=None) -> Dataset:
    """A high-dimensional sparse classification task, text-like (a sparse ``Dataset``, CSR).

    Every row has ``nnz`` distinct active columns of value 1, drawn with Zipf-like frequencies (column j with
    probability proportional to 1 / (j + 10)), so a few columns are common and most are rare, as words in documents
    or one-hot categories with their interactions. Groups (``groups`` of them, shares 2:1:...) shift the frequencies:
    group g draws its active columns from the ranks shifted by 7 g, so the groups use partly different columns. The
    label is +1 with probability sigmoid(x . beta + 0.5 (g == 0)), beta sparse (every 50th column, N(0, 1)
    entries, scaled by 2 / sqrt(nnz))."""
    n, d, nnz, groups = int(n), int(d), int(nnz), int(groups)
    if n < 2 or d < 2 or not 1 <= nnz <= d // 2 or groups < 1:
        raise DataError(f"need n >= 2, d >= 2, 1 <= nnz <= d / 2 and groups >= 1; got n={n}, d={d}, nnz={nnz}, "
                        f"groups={groups}")
    rng = as_generator(seed)
    shares = np.linspace(2.0, 1.0, groups)
    g = rng.choice(groups, size=n, p=shares / shares.sum())
    weight = 1.0 / (np.arange(d) + 10.0)
    cdf = np.cumsum(weight) / weight.sum()
    draws = np.searchsorted(cdf, rng.random((n, 2 * nnz)))           # more draws than needed: repeats are dropped
    draws = (draws + 7 * g[:, None]) % d
    cols = np.empty((n, nnz), dtype=np.int64)
    for i in range(n):
        found = np.unique(draws[i])
        if found.size < nnz:                                           # rare: fill with uniform columns
            found = np.union1d(found, rng.choice(d, nnz, replace=False))
        cols[i] = rng.permutation(found)[:nnz]
    cols.sort(axis=1)
    X = sparse.csr_matrix((np.ones(n * nnz), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    beta = np.zeros(d)
    beta[::50] = rng.standard_normal(beta[::50].size) * 2.0 / np.sqrt(nnz)
    logit = X @ beta + 0.5 * (g == 0)
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-logit)), 1.0, -1.0)
    return Dataset(X, y, g, name=f"sparse-synthetic(n={n},d={d},nnz={nnz})")


def with_interactions(data: Dataset, columns=None, name: str | None = None) -> Dataset:
    """``data`` with the pairwise products x_j x_k (j < k) of the given columns (default: every column with values
    in {0, 1}, e.g. one-hot categories) appended, as a sparse design: only products that are not 0 on every row are
    kept, named ``a*b``. With one-hot encodings the products of two categories of the same attribute are 0 and
    dropped: Adult by sex (103 columns) becomes 2,736 columns, 34 nonzeros a row."""
    X = data.X.tocsr() if data.is_sparse else sparse.csr_matrix(data.X)
    if columns is None:
        values = X.tocsc()
        binary = [j for j in range(X.shape[1]) if np.all(np.isin(values[:, j].data, (0.0, 1.0)))]
    else:
        index = {f: j for j, f in enumerate(data.feature_names)}
        binary = [index[c] if c in index else int(c) for c in columns]
    B = X[:, binary].tocsr()
    B.eliminate_zeros()
    B.sort_indices()
    per_row = np.diff(B.indptr)
    rows, codes, values = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    for k in np.unique(per_row[per_row >= 2]):          # the rows with k active columns: their k (k - 1) / 2 pairs
        at = np.flatnonzero(per_row == k)
        slots = B.indptr[at][:, None] + np.arange(k)
        first, second = np.triu_indices(k, 1)
        cols, vals = B.indices[slots], B.data[slots]
        rows.append(np.repeat(at, first.size))
        codes.append((cols[:, first] * len(binary) + cols[:, second]).ravel())
        values.append((vals[:, first] * vals[:, second]).ravel())
    rows, codes, values = np.concatenate(rows), np.concatenate(codes), np.concatenate(values)
    kept, column = np.unique(codes, return_inverse=True)           # products that are not 0 on every row
    products = sparse.csr_matrix((values, (rows, column.ravel())), shape=(X.shape[0], kept.size))
    names = list(data.feature_names) + [f"{data.feature_names[binary[c // len(binary)]]}*"
                                        f"{data.feature_names[binary[c % len(binary)]]}" for c in kept.tolist()]
    design = sparse.hstack([X, products], format="csr")
    return Dataset(design, data.y, data.groups if data.has_groups else None, feature_names=names, name=name or f"{data.name} with interactions",
                   target_name=data.target_name, sensitive_name=data.sensitive_name)


def make_strategic_synthetic(n: int = 1000, p: int = 10, n_strategic: int = 5, noise_var: float = 0.1,
                             seed=None) -> Dataset:
    """The synthetic task of the zeroth-order min-max paper (Maheshwari et al., §6.1).

    theta_gt ~ N(0, I_p), x_i ~ N(0, I_p), y_i = sign(<x_i, theta_gt> + z_i) with z_i ~ N(0, noise_var)
    (a scalar of variance 0.1; the paper prints N(0, 0.1 I_d)), sign(0) = +1. The first ``n_strategic`` features are the
    strategic ones (named ``s0..``; the others ``x..``): pass ``strategic_features=range(n_strategic)``.
    """
    n = check_int(n, "n (the number of rows)", error=DataError)
    p = check_int(p, "p (the number of features)", error=DataError)
    n_strategic = check_int(n_strategic, "n_strategic (the number of strategic features)", minimum=0, error=DataError)
    if n_strategic > p:
        raise DataError(f"n_strategic (the number of strategic features) must be at most p = {p}; got {n_strategic}")
    noise_var = check_number(noise_var, "noise_var", low=0.0, error=DataError)
    rng = as_generator(seed)
    theta_gt = rng.standard_normal(p)
    X = rng.standard_normal((n, p))
    y = np.sign(X @ theta_gt + rng.normal(0.0, np.sqrt(noise_var), n))
    y[y == 0] = 1.0
    names = [f"s{j}" for j in range(n_strategic)] + [f"x{j}" for j in range(n_strategic, p)]
    return Dataset(X, y, feature_names=names, name=f"strategic-synthetic(n={n},p={p})")


def _per_group(value, m: int, name: str) -> list:
    """One entry per group from a scalar or a sequence of m entries (each checked by the caller)."""
    if np.ndim(value) == 0:
        return [value] * m
    values = list(np.asarray(value, dtype=object).ravel()) if np.ndim(value) == 1 else None
    if values is None or len(values) != m:
        raise DataError(f"{name} must be one value or one per group ({m}); got shape {np.shape(value)}")
    return values


BUNDLED = {
    "adult": (load_adult, "UCI Adult census income; targets income (+1: >50K) or age; sensitive sex, race, sex_race"),
    "lawschool": (load_lawschool, "LSAC bar passage; targets bar1 (+1: pass), ugpa, lsat, zfygpa, zgpa; "
                                  "sensitive race (white / non-white) or gender"),
    "communities": (load_communities, "UCI Communities and Crime; target ViolentCrimesPerPop; sensitive race"),
}


def load(name: str, **options) -> Dataset:
    """Load a bundled data set by name (``"adult"``, ``"lawschool"``, ``"communities"``)."""
    if name not in BUNDLED:
        raise DataError(f"no bundled data set {name!r}; bundled: {', '.join(BUNDLED)}")
    return BUNDLED[name][0](**options)
