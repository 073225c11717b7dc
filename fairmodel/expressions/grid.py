"""The randomized prediction on a grid of DP post-processing (Chzhen, Hebiri, Taturyan 2024): the model that the
atoms of :mod:`fairmodel.expressions.atoms.dp` are functions of, with the checks of the base models' values."""
from __future__ import annotations

import uuid
import warnings
import weakref
from typing import Mapping

import numpy as np

from ..data.dataset import Dataset
from ..data.passes import row_parts
from ..errors import DataError, ExpressionTypeError, ModelError, OptionError
from ..utilities.validate import check_finite, is_int, is_real
from .core import Expr

# Live GridPredictors by key, so that result.predictor() finds the base models of the problem that produced
# the result (a result stores only the key; a result loaded from disk gets its base models explicitly).
_LIVE: "weakref.WeakValueDictionary[str, GridPredictor]" = weakref.WeakValueDictionary()

SIMPLEX_TOL = 1e-6   # tolerance on the row sums of tau_hat (predict_proba rounds to ~1e-15)
P_SUM_TOL = 1e-8     # tolerance on sum(p)


def _as_array(values, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DataError(f"{what} must be numeric; got dtype {arr.dtype}")
    arr = arr.astype(float)
    check_finite(arr, what)
    return arr


def check_tau(tau, n: int | None, K: int | None) -> np.ndarray:
    """tau_hat values (n, K) whose rows are probability vectors; tiny negatives clipped to 0."""
    tau = _as_array(tau, "tau (the group probabilities tau_hat)")
    if tau.ndim != 2 or tau.shape[1] < 2:
        raise DataError(f"tau must be an (n, K) array of group probabilities with K >= 2 groups (e.g. "
                        f"clf.predict_proba(X)); got shape {tau.shape}")
    if n is not None and tau.shape[0] != n:
        raise DataError(f"tau has {tau.shape[0]} rows but the regressor gave {n} predictions; they must match")
    if K is not None and tau.shape[1] != K:
        raise DataError(f"tau has {tau.shape[1]} columns but the problem has {K} groups")
    if tau.min() < -SIMPLEX_TOL or np.abs(tau.sum(axis=1) - 1.0).max() > SIMPLEX_TOL:
        row = int(np.argmax(np.abs(tau.sum(axis=1) - 1.0) + (tau.min(axis=1) < -SIMPLEX_TOL)))
        raise DataError(f"the rows of tau must be probability vectors (entries >= 0 summing to 1); row {row} "
                        f"is {np.array2string(tau[row], precision=4)}. Pass clf.predict_proba, not predict "
                        f"or decision_function")
    return np.maximum(tau, 0.0)


def check_eta(eta, n: int | None, B: float, clip: bool, warn: bool = True) -> np.ndarray:
    """eta_hat values (n,); outside [-B, B] (Assumption 3.1) they are clipped or (``warn``) a warning is given."""
    eta = _as_array(eta, "eta (the regressor's predictions eta_hat)")
    if eta.ndim == 2 and eta.shape[1] == 1:
        eta = eta[:, 0]
    if eta.ndim != 1 or (n is not None and eta.shape[0] != n):
        raise DataError(f"eta must give one prediction per point, shape ({n if n is not None else 'n'},); "
                        f"got shape {eta.shape}")
    outside = np.abs(eta) > B
    if outside.any():
        if clip:
            return np.clip(eta, -B, B)
        if warn:
                warnings.warn(f"{int(outside.sum())} of {eta.shape[0]} regressor predictions lie outside [-B, B] = "
                          f"[{-B:g}, {B:g}] (range [{eta.min():.4g}, {eta.max():.4g}]); Assumption 3.1 of the paper "
                          f"asks |eta(X)| <= B. The method still runs (their nearest grid points are +-B); pass "
                          f"clip=True to GridPredictor to clip them, or a larger B (warned once per GridPredictor)",
                          UserWarning, stacklevel=4)
    return eta


def check_cost(cost, n: int | None, m: int) -> np.ndarray:
    cost = _as_array(cost, "cost (the cost matrix r(x_i, y_j))")
    if cost.ndim != 2 or cost.shape[1] != m or (n is not None and cost.shape[0] != n):
        raise DataError(f"cost must be an (n, m) array with one column per grid point (m = {m}); got shape "
                        f"{cost.shape}")
    return cost


def check_eps(eps, K: int | None) -> np.ndarray:
    """eps as an array (a number or one per group), every entry in [0, 1] (the paper's range)."""
    if isinstance(eps, (Expr, bool, str, bytes)):
        raise ExpressionTypeError(f"the bound of dp_gap(post) <= eps must be a number or one number per group; "
                                  f"got {eps!r}")
    try:
        arr = np.asarray(eps, dtype=float)
    except (TypeError, ValueError):
        raise ExpressionTypeError(f"eps must be a number or a sequence of numbers; got {eps!r}") from None
    if arr.ndim > 1 or arr.size == 0:
        raise ModelError(f"eps must be a number or a 1-D sequence with one entry per group; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ModelError(f"every eps must lie in [0, 1] (U_s is a difference of probabilities); got {arr.tolist()}. "
                         f"Note: in Python 2^(-8) is XOR (= -6), write 2**-8")
    if arr.ndim == 1 and K is not None and arr.shape[0] != K:
        raise ModelError(f"eps has {arr.shape[0]} entries but there are {K} groups; give one per group or a number")
    return arr


class GridPredictor:
    """A randomized prediction pi(.|x) on a grid, post-processing fitted base models (Section 3, eq. (13)).

    Parameters
    ----------
    eta : the regressor, a callable ``X -> (n,)`` (e.g. ``reg.predict``) or an array of its predictions on
        the unlabeled points.
    tau : the sensitive-attribute classifier, a callable ``X -> (n, K)`` (e.g. ``clf.predict_proba``) or an
        array of its probabilities. Columns are groups; K >= 2.
    L, B : the grid y_l = l B / L, l = -L..L (m = 2L + 1 points); B bounds |eta(X)| (Assumption 3.1).
    p : the group marginals P(S = s) in the column order of tau: an array, a mapping ``{label: p_s}`` (needs
        the column labels, ``groups=`` or ``tau.__self__.classes_``), or ``None`` / ``"calibrated"``: the mean
        of tau over the unlabeled data, which makes the problem feasible for every eps (then E[t_hat] = 0).
    cost, grid : the general-cost variant (Remark 2.2): ``cost`` a callable ``X -> (n, m)`` or an array of
        costs r(x_i, y_j), ``grid`` the m labels (e.g. classes for multi-class classification under DP).
        Give either (eta, L, B) or (cost, grid).
    groups : labels of tau's columns (default: ``tau.__self__.classes_`` for a bound sklearn method).
    clip : clip eta to [-B, B] (otherwise predictions outside give a warning).

    Arrays and callables cannot be mixed: with arrays the problem is solved on those points (no ``data=``).
    """

    def __init__(self, eta=None, tau=None, *, L=None, B=None, p=None, cost=None, grid=None, groups=None,
                 clip: bool = False):
        if tau is None:
            raise ModelError("GridPredictor needs tau: the classifier of the sensitive attribute (a callable such "
                             "as clf.predict_proba, or an (n, K) array of probabilities)")
        if (eta is None) == (cost is None):
            raise ModelError("give either eta (a regressor, with L and B) or cost (a cost matrix, with grid), "
                             "not both or neither")
        self.kind = "regression" if eta is not None else "cost"
        if self.kind == "regression":
            if grid is not None:
                raise ModelError("grid= goes with cost=; with eta the grid is l B / L, l = -L..L")
            if not is_int(L) or L < 1:
                raise ModelError(f"L must be a positive integer (the grid has 2L + 1 points); got {L!r}")
            if not is_real(B) or not np.isfinite(B) or B <= 0:
                raise ModelError(f"B must be a positive finite number bounding |eta(X)| (Assumption 3.1); got {B!r}")
            self.L, self.B = int(L), float(B)
            self.grid = self.B * np.arange(-self.L, self.L + 1) / self.L
        else:
            if L is not None or B is not None:
                raise ModelError("L and B define the regression grid; with cost= give the grid labels grid=")
            if grid is None or np.ndim(grid) != 1 or len(grid) < 2:
                raise ModelError("cost= needs grid=: the m >= 2 labels of the cost matrix's columns")
            self.L = self.B = None
            self.grid = np.asarray(grid)
        self.callable = callable(tau)
        first = eta if eta is not None else cost
        if callable(first) != self.callable:
            raise ModelError("give the base models both as callables (e.g. reg.predict, clf.predict_proba) or both "
                             "as arrays of their values; mixing them is ambiguous")
        self.eta, self.tau, self.cost, self.clip = eta, tau, cost, bool(clip)
        if groups is None and self.callable:
            groups = getattr(getattr(tau, "__self__", None), "classes_", None)
        self.groups = None if groups is None else list(np.asarray(groups).tolist())
        self._arrays, self._warned = None, False
        if not self.callable:
            self._arrays = self._check_values(first, tau)
        self.K = self._infer_K(p)
        self.p_spec = self._check_p_spec(p)
        self.key = uuid.uuid4().hex
        _LIVE[self.key] = self

    # -- facts -------------------------------------------------------------------------------------------------
    @property
    def m(self) -> int:
        return self.grid.shape[0]

    @property
    def numeric_grid(self) -> bool:
        return np.issubdtype(self.grid.dtype, np.number)

    def group_names(self, K: int) -> list:
        return self.groups if self.groups is not None else list(range(K))

    def _infer_K(self, p) -> int | None:
        candidates = []
        if self._arrays is not None:
            candidates.append(("tau", self._arrays[1].shape[1]))
        if self.groups is not None:
            candidates.append(("groups", len(self.groups)))
        if p is not None and not isinstance(p, (str, Mapping)):
            candidates.append(("p", np.size(p)))
        Ks = {k for _, k in candidates}
        if len(Ks) > 1:
            raise ModelError("the number of groups disagrees: " + ", ".join(f"{n} has {k}" for n, k in candidates))
        K = Ks.pop() if Ks else None
        if K is not None and K < 2:
            raise ModelError(f"DP post-processing needs K >= 2 groups; got {K}")
        return K

    def _check_p_spec(self, p):
        if p is None or (isinstance(p, str) and p == "calibrated"):
            return "calibrated"
        if isinstance(p, str):
            raise ModelError(f"p must be an array, a mapping {{label: p_s}}, None or 'calibrated'; got {p!r}")
        if isinstance(p, Mapping) or hasattr(p, "index") and hasattr(p, "to_dict"):
            mapping = dict(p.items())
            if self.groups is None:
                raise ModelError("p given by group label needs the column labels of tau: pass groups=clf.classes_ "
                                 "(the order of predict_proba's columns)")
            missing = [g for g in self.groups if g not in mapping]
            extra = [g for g in mapping if g not in self.groups]
            if missing or extra:
                raise ModelError(f"p's labels {sorted(map(str, mapping))} do not match tau's columns {self.groups}")
            p = [mapping[g] for g in self.groups]
        return check_p(p, self.K)

    def __str__(self):
        return f"pi_L={self.L}" if self.kind == "regression" else f"pi_m={self.m}"

    def define(self, n) -> None:
        """Define the prediction pi, its grid and the base model in the notation ``n``."""
        if self.kind == "regression":
            n.define("pi", f"pi(l|x): the probability of predicting y_l = l B / L, l = -L..L (L = {self.L}, B = "
                           f"{self.B:g}), at a point x; eta(x) the base regressor's prediction",
                     f"$\\pi(l \\mid x)$: the probability of predicting $y_l = l B / L$, $l = -L, \\dots, L$ "
                     f"($L = {self.L}$, $B = {self.B:g}$), at a point $x$; $\\hat\\eta(x)$ the base regressor's "
                     f"prediction")
        else:
            n.define("pi", f"pi(l|x): the probability of predicting the class y_l (m = {self.m} classes) at x; "
                           f"r(x, y_l) the cost of that prediction (Remark 2.2 of Chzhen, Hebiri, Taturyan 2024)",
                     f"$\\pi(l \\mid x)$: the probability of predicting the class $y_l$ ($m = {self.m}$ classes) at "
                     f"$x$; $r(x, y_l)$ the cost of that prediction (Remark 2.2 of Chzhen, Hebiri, Taturyan 2024)")
        n.define("E", "E: the mean over the unlabeled points X",
                 "$\\mathbb{E}$: the mean over the unlabeled points $X$")

    # -- base model values ---------------------------------------------------------------------------------------
    def _check_values(self, first, tau, K: int | None = None):
        if self.kind == "regression":
            first = check_eta(first, None, self.B, self.clip, warn=not self._warned)
            self._warned = self._warned or bool(np.abs(first).max(initial=0.0) > self.B)
        else:
            first = check_cost(first, None, self.m)
        if first.shape[0] == 0:
            raise DataError("no points: the base models' predictions are empty")
        return first, check_tau(tau, first.shape[0], K)

    def values(self, data=None):
        """(eta (n,) or cost (n, m), tau (n, K)) of the base models on ``data`` (or the stored arrays)."""
        if not self.callable:
            if data is not None:
                raise OptionError("this GridPredictor holds arrays of base predictions, so the problem is solved on "
                                  "those points: remove data=, or declare it with callables (reg.predict, "
                                  "clf.predict_proba) to use new points")
            return self._arrays
        if data is None:
            raise OptionError("pass the unlabeled points: data=X_unlabeled (the base models are callables)")
        if hasattr(data, "dask") and hasattr(data, "chunks"):       # a Dask array of unlabeled points
            data = Dataset.from_dask(data)
        if getattr(data, "is_chunked", False):
            # Dask-backed points: the base models run chunk by chunk (one Dask task per chunk); only their
            # values, (K + 1) numbers a row, come back
            parts = row_parts(data, _BaseValues(self.eta if self.kind == "regression" else self.cost, self.tau))
            first, tau = (np.concatenate([p[k] for p in parts]) for k in (0, 1))
            return self._check_values(first, tau, self.K)
        X = getattr(data, "X", data) if type(data).__name__ == "Dataset" else data
        first = self.eta(X) if self.kind == "regression" else self.cost(X)
        return self._check_values(first, self.tau(X), self.K)

    def costs(self, first: np.ndarray) -> np.ndarray:
        """R (n, m): (eta_hat(x_i) - y_j)^2 (r_hat of eq. (13)) or the given costs (Remark 2.2)."""
        if self.kind == "regression":
            return (first[:, None] - self.grid[None, :]) ** 2
        return first

    def resolve_p(self, tau: np.ndarray, weights=None) -> np.ndarray:
        """The group marginals: the given p, or the (weighted) mean of tau when calibrated."""
        if isinstance(self.p_spec, str):
            p = tau.mean(axis=0) if weights is None else weights @ tau
            if np.any(p <= 0) or np.any(p >= 1):
                raise DataError(f"the calibrated group marginals mean(tau) = {np.round(p, 6).tolist()} have an entry "
                                f"0 or 1: a group is never (or always) predicted on these points; check tau")
            return p / p.sum()
        if self.p_spec.shape[0] != tau.shape[1]:
            raise DataError(f"p has {self.p_spec.shape[0]} entries but tau has {tau.shape[1]} columns")
        return self.p_spec


class _BaseValues:
    """The base models' values on one chunk of points (a picklable task for Dask workers)."""

    def __init__(self, first, tau):
        self.first, self.tau = first, tau

    def __call__(self, batch):
        return np.asarray(self.first(batch.X)), np.asarray(self.tau(batch.X))


def check_p(p, K: int | None) -> np.ndarray:
    """Group marginals: K entries in (0, 1) summing to 1 (tolerance 1e-8)."""
    arr = _as_array(p, "p (the group marginals)")
    if arr.ndim != 1 or arr.shape[0] < 2:
        raise ModelError(f"p must be a vector of K >= 2 group marginals; got shape {arr.shape}")
    if K is not None and arr.shape[0] != K:
        raise ModelError(f"p has {arr.shape[0]} entries but there are {K} groups")
    if np.any(arr <= 0) or np.any(arr >= 1) or abs(arr.sum() - 1.0) > P_SUM_TOL:
        raise ModelError(f"p must have entries in (0, 1) summing to 1 (within {P_SUM_TOL:g}); got {arr.tolist()} "
                         f"(sum {arr.sum():.12g}). Order it like tau's columns (predict_proba follows clf.classes_)")
    return arr


def t_values(tau: np.ndarray, p: np.ndarray) -> np.ndarray:
    """t_hat(x) = 1 - tau_hat(x) / p elementwise (eq. (15), plug-in (13))."""
    return 1.0 - tau / p
