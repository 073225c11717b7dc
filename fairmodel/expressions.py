"""DSL expression nodes: facts (shape, curvature), NumPy value and gradient. No CVXPY here.

The CVXPY lowering of every node lives apart, in :mod:`fairmodel.exact.lower` (a table keyed by node
type), as DESIGN.md asks. Nodes are immutable: every attribute is set once in ``__init__``.

Shapes ("kinds") of expressions:

* ``"scalar"``: one number;
* ``"samples"``: one value per data row (length n), e.g. a score or a per-sample loss;
* ``"groups"``: one value per group (length m), e.g. the group risks of :func:`group_mean`.

Values are computed with an :class:`Env` that maps each :class:`Weights` to a NumPy array and may
restrict per-sample nodes to a subset of rows (``rows``), which gives unbiased minibatch estimates of
means. :func:`value_and_grad` backpropagates through the tree (reverse mode); ``max`` uses the
subgradient of an arg-max component.
"""
from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.special import log_expit, expit, logsumexp, softmax

from .data import Dataset, Groups, check_vector
from .errors import DataError, ExpressionTypeError, ModelError, UnsupportedProblemError

CURVATURES = ("constant", "affine", "convex", "concave", "unknown")


class Env:
    """Evaluation environment: variable values, an optional row subset, and a cache of node values."""

    def __init__(self, values: dict, rows: np.ndarray | None = None):
        self.values = values
        self.rows = rows
        self.cache: dict[int, object] = {}

    def __getitem__(self, w: "Weights") -> np.ndarray:
        try:
            return self.values[w]
        except KeyError:
            raise ModelError(f"no value given for the variable {w.name!r}") from None


class Expr:
    """Base class of all expression nodes."""

    kind = "scalar"
    size = 1
    args: tuple = ()

    # -- facts ------------------------------------------------------------------------------------
    @property
    def curvature(self) -> str:
        return "unknown"

    def is_convex(self) -> bool:
        return self.curvature in ("constant", "affine", "convex")

    def is_concave(self) -> bool:
        return self.curvature in ("constant", "affine", "concave")

    def variables(self) -> list["Weights"]:
        out: list[Weights] = []
        for a in self.args:
            for v in a.variables():
                if v not in out:
                    out.append(v)
        return out

    def nodes(self):
        """All nodes of the tree, this one first (depth first)."""
        yield self
        for a in self.args:
            yield from a.nodes()

    # -- numerics ----------------------------------------------------------------------------------
    def value(self, env: Env):
        key = id(self)
        if key not in env.cache:
            env.cache[key] = self._value(env)
        return env.cache[key]

    def _value(self, env: Env):
        raise UnsupportedProblemError(f"{type(self).__name__} has no NumPy value (it is only lowered to CVXPY)")

    def backprop(self, env: Env, upstream, grads: dict) -> None:
        """Add d(upstream . self)/d(variable) to ``grads`` for every variable below this node."""
        raise ModelError(f"{type(self).__name__} has no gradient; it cannot be used by a gradient method")

    # -- operators ---------------------------------------------------------------------------------
    def __add__(self, other):
        return Add(self, as_expr(other))

    def __radd__(self, other):
        return Add(as_expr(other), self)

    def __sub__(self, other):
        return Add(self, ScalarMul(-1.0, as_expr(other)))

    def __rsub__(self, other):
        return Add(as_expr(other), ScalarMul(-1.0, self))

    def __neg__(self):
        return ScalarMul(-1.0, self)

    def __mul__(self, other):
        if isinstance(other, Expr):
            if other.kind == "scalar" and other.curvature == "constant":
                return ScalarMul(float(other.constant_value()), self)
            raise ExpressionTypeError("only multiplication by a constant number is supported; "
                                      f"got {self} * {other}")
        return ScalarMul(_as_number(other, "multiplier"), self)

    __rmul__ = __mul__

    def __truediv__(self, other):
        c = _as_number(other, "divisor")
        if c == 0:
            raise ModelError("division of an expression by zero")
        return ScalarMul(1.0 / c, self)

    def __le__(self, other):
        from .problem import Inequality
        return Inequality(self, as_expr(other))

    def __ge__(self, other):
        from .problem import Inequality
        return Inequality(as_expr(other), self)

    def __eq__(self, other):  # noqa: D105  (identity; == is not a constraint in fairmodel)
        return self is other

    __hash__ = object.__hash__

    def __bool__(self):
        raise ExpressionTypeError("an expression has no truth value; did you mean to build a constraint "
                                  "with <= and pass it to Problem(...)?")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


def _as_number(value, what: str) -> float:
    if isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, bool):
        v = float(value)
        if not np.isfinite(v):
            raise ModelError(f"{what} must be finite; got {value}")
        return v
    raise ExpressionTypeError(f"{what} must be a number; got {type(value).__name__}")


def as_expr(value) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, bool):
        return Constant(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return Constant(value)
    raise ExpressionTypeError(f"cannot use a {type(value).__name__} in an expression")


def _kind_str(e: Expr) -> str:
    return e.kind if e.kind == "scalar" else f"{e.kind}[{e.size}]"


class Constant(Expr):
    """A constant number, or a constant vector (kind ``"groups"`` by default for vectors)."""

    def __init__(self, value, kind: str | None = None, name: str | None = None):
        arr = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(arr)):
            raise ModelError(f"constant {name or ''} contains NaN or infinite values")
        if arr.ndim > 1:
            raise ModelError(f"constants must be numbers or 1-D vectors; got shape {arr.shape}")
        self._value_arr = arr.copy()
        self._value_arr.setflags(write=False)
        self.kind = "scalar" if arr.ndim == 0 else (kind or "groups")
        self.size = 1 if arr.ndim == 0 else arr.shape[0]
        self.name = name

    @property
    def curvature(self):
        return "constant"

    def constant_value(self):
        return self._value_arr

    def variables(self):
        return []

    def _value(self, env):
        return self._value_arr if self.kind != "scalar" else float(self._value_arr)

    def backprop(self, env, upstream, grads):
        pass

    def __str__(self):
        if self.name:
            return self.name
        if self.kind == "scalar":
            return f"{float(self._value_arr):g}"
        return "[" + ", ".join(f"{v:g}" for v in self._value_arr[:4]) + (", ...]" if self.size > 4 else "]")


class Parameter(Expr):
    """A named scalar whose value may change between solves: a fairness budget, a level, a cost.

    The one mutable node of the DSL (as in CVXPY): ``Problem.sweep(name, values)`` sets ``value`` and
    re-solves; exact programs lower it to a scalar ``cp.Parameter`` so a compiled program is reused.
    """

    def __init__(self, value: float, name: str, *, nonneg: bool = False):
        if not isinstance(name, str) or not name.isidentifier():
            raise ModelError(f"a parameter needs an identifier-like name; got {name!r}")
        self.name, self.nonneg = name, bool(nonneg)
        self.value = value

    @property
    def value(self) -> float:
        return self._value

    @value.setter
    def value(self, v) -> None:
        v = _as_number(v, f"parameter {self.name!r}")
        if self.nonneg and v < 0:
            raise ModelError(f"parameter {self.name!r} must be >= 0; got {v}")
        self._value = v

    @property
    def curvature(self):
        return "constant"

    def constant_value(self):
        return np.asarray(self._value)

    def variables(self):
        return []

    def _value(self, env):
        return self._value

    def backprop(self, env, upstream, grads):
        pass

    def __str__(self):
        return self.name


# ---------------------------------------------------------------------------------------------------
# Variables and scores
# ---------------------------------------------------------------------------------------------------
class Weights(Expr):
    """Model parameters of a linear score ``x . w (+ b)``.

    Parameters
    ----------
    n_features : number of features d.
    radius : the domain is the Euclidean ball ``||(w, b)||_2 <= radius`` (Frobenius norm for a matrix);
        ``None`` for no domain (some methods need a bounded domain and will say so).
    intercept : add an intercept b (it lies inside the same ball).
    n_outputs : ``None`` for a vector w (binary / regression); an integer C >= 2 for a d x C matrix
        (multiclass softmax).
    name : the name of the variable in results (``result.variables[name]``).

    The parameters are stored as one array of shape ``(d + intercept,)`` or ``(d + intercept, C)``;
    the intercept is the last row. ``split(theta)`` returns ``(w, b)``.
    """

    kind = "parameters"

    def __init__(self, n_features: int, radius: float | None = None, *, intercept: bool = False,
                 n_outputs: int | None = None, name: str = "w"):
        if not isinstance(n_features, (numbers.Integral, np.integer)) or n_features < 1:
            raise ModelError(f"n_features must be a positive integer; got {n_features!r}")
        if radius is not None:
            if isinstance(radius, bool) or not isinstance(radius, (numbers.Real, np.floating, np.integer)):
                raise ModelError(f"radius must be a positive number or None; got {radius!r}")
            if not np.isfinite(radius) or radius <= 0:
                raise ModelError(f"radius must be positive and finite (the domain is the ball ||w|| <= radius); "
                                 f"got {radius}. Use radius=None for no domain.")
        if n_outputs is not None and (not isinstance(n_outputs, (numbers.Integral, np.integer)) or n_outputs < 2):
            raise ModelError(f"n_outputs must be None or an integer >= 2; got {n_outputs!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ModelError(f"name must be an identifier-like string; got {name!r}")
        self.n_features = int(n_features)
        self.radius = None if radius is None else float(radius)
        self.intercept = bool(intercept)
        self.n_outputs = None if n_outputs is None else int(n_outputs)
        self.name = name
        rows = self.n_features + self.intercept
        self.shape = (rows,) if self.n_outputs is None else (rows, self.n_outputs)
        self.size = int(np.prod(self.shape))

    @property
    def curvature(self):
        return "affine"

    def variables(self):
        return [self]

    def _value(self, env):
        return env[self]

    def backprop(self, env, upstream, grads):
        grads[self] = grads.get(self, 0.0) + upstream

    def zeros(self) -> np.ndarray:
        return np.zeros(self.shape)

    def project(self, theta: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the domain (the ball, or the identity without a radius)."""
        if self.radius is None:
            return theta
        norm = math.sqrt(float(np.vdot(theta, theta)))  # cheaper than np.linalg.norm in ALEG's inner loop
        return theta if norm <= self.radius else theta * (self.radius / norm)

    def check_value(self, theta, what: str = "value") -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        if theta.shape != self.shape:
            raise ModelError(f"{what} for {self.name!r} must have shape {self.shape}; got {theta.shape}")
        if not np.all(np.isfinite(theta)):
            raise ModelError(f"{what} for {self.name!r} contains NaN or infinite values")
        if self.radius is not None and np.linalg.norm(theta) > self.radius * (1 + 1e-9):
            raise ModelError(f"{what} for {self.name!r} lies outside the domain: ||w|| = "
                             f"{np.linalg.norm(theta):.6g} > radius {self.radius:g}")
        return theta

    def split(self, theta: np.ndarray):
        """(w, b) from the stored parameter array (b = 0 without an intercept)."""
        if self.intercept:
            return theta[:-1], theta[-1]
        return theta, (0.0 if self.n_outputs is None else np.zeros(self.n_outputs))

    def describe_domain(self) -> str:
        what = "(w, b)" if self.intercept else "w"
        shape = "x".join(map(str, self.shape))
        return f"{what} in R^{shape}" + ("" if self.radius is None else f", ||{what}||_2 <= {self.radius:g}")

    def __str__(self):
        return self.name


class SampleScore(Expr):
    """Base of the per-sample scores of a model (``model_type``, built by ``fm.<constructor>``) on a
    :class:`Dataset`: checks the inputs and that the model takes the data's features."""

    kind = "samples"
    model_type: type = type(None)
    constructor = ""

    def __init__(self, data: Dataset, model):
        if not isinstance(data, Dataset):
            raise ExpressionTypeError(f"a score needs a fairmodel.Dataset; got {type(data).__name__}")
        if not isinstance(model, self.model_type):
            raise ExpressionTypeError(f"a score needs fairmodel.{self.model_type.__name__}; "
                                      f"got {type(model).__name__}")
        if model.n_features != data.n_features:
            raise ModelError(f"{self.model_type.__name__} has {model.n_features} features but the data has "
                             f"{data.n_features}; use fm.{self.constructor}(data.n_features, ...)")
        self.data, self.w = data, model
        self.args = (model,)
        self.size = data.n_samples


class LinearScore(SampleScore):
    """The per-sample linear score ``X @ w + b`` of a :class:`Weights` on a :class:`Dataset`."""

    model_type = Weights
    constructor = "Weights"

    @property
    def curvature(self):
        return "affine"

    def design(self, rows=None) -> np.ndarray:
        """The design matrix (X with a column of ones appended when the weights have an intercept)."""
        X = self.data.X if rows is None else self.data.X[rows]
        if self.w.intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        return X

    def _value(self, env):
        X = self.data.X if env.rows is None else self.data.X[env.rows]
        w, b = self.w.split(env[self.w])
        return X @ w + b

    def backprop(self, env, upstream, grads):
        X = self.data.X if env.rows is None else self.data.X[env.rows]
        g = X.T @ upstream
        if self.w.intercept:
            g = np.concatenate([g, np.atleast_1d(upstream.sum(axis=0))[None, ...].reshape((1,) + g.shape[1:])])
        self.w.backprop(env, g, grads)

    def __str__(self):
        return f"x·{self.w}" + (" + b" if self.w.intercept else "")


# ---------------------------------------------------------------------------------------------------
# Per-sample losses
# ---------------------------------------------------------------------------------------------------
class Loss(Expr):
    """A per-sample loss phi(z_i, y_i) of a score z: convex in z.

    Subclasses define ``phi(z, y)`` and ``dphi(z, y)`` (derivative in z), vectorized, optionally
    ``d2phi(z, y)`` (second derivative, for Newton solves of binary losses), and ``smoothness`` (a bound
    on d^2 phi / dz^2, ``inf`` when not smooth). Labels are validated once.
    """

    kind = "samples"
    symbol = "loss"
    smoothness = np.inf
    d2phi = None

    def __init__(self, score: Expr, y):
        if not isinstance(score, Expr) or score.kind != "samples":
            raise ExpressionTypeError(f"{type(self).__name__} needs a per-sample score such as data.score(w); "
                                      f"got {score!r}")
        self.score = score
        self.args = (score,)
        self.size = score.size
        self.y = self.check_labels(y, score.size)

    def check_labels(self, y, n) -> np.ndarray:
        return check_vector(y, n, "y")

    @property
    def curvature(self):
        return "convex" if self.score.curvature in ("affine", "constant") else "unknown"

    def labels(self, env):
        return self.y if env.rows is None else self.y[env.rows]

    def _value(self, env):
        return self.phi(self.score.value(env), self.labels(env))

    def backprop(self, env, upstream, grads):
        d = self.dphi(self.score.value(env), self.labels(env))
        up = upstream[:, None] * d if d.ndim == 2 and np.ndim(upstream) == 1 else upstream * d
        self.score.backprop(env, up, grads)

    def __str__(self):
        return f"{self.symbol}({self.score}, y)"


def _binary_labels(y, n, loss_name: str) -> np.ndarray:
    y = check_vector(y, n, "y")
    values = np.unique(y)
    if np.all(np.isin(values, (-1.0, 1.0))):
        return y
    if np.all(np.isin(values, (0.0, 1.0))):
        return 2.0 * y - 1.0
    raise DataError(f"{loss_name} needs binary labels in {{-1, +1}} (or {{0, 1}}); found values "
                    f"{values[:6].tolist()}{' ...' if values.size > 6 else ''}")


class LogisticLoss(Loss):
    """log(1 + exp(-y z)) with labels in {-1, +1} ({0, 1} is mapped to {-1, +1})."""

    symbol = "logistic"
    smoothness = 0.25

    def check_labels(self, y, n):
        return _binary_labels(y, n, "logistic_loss")

    @staticmethod
    def phi(z, y):
        return -log_expit(y * z)

    @staticmethod
    def dphi(z, y):
        return -y * expit(-y * z)

    @staticmethod
    def d2phi(z, y):
        p = expit(y * z)
        return p * (1.0 - p)


class HingeLoss(Loss):
    """max(0, 1 - y z) with labels in {-1, +1} ({0, 1} is mapped)."""

    symbol = "hinge"

    def check_labels(self, y, n):
        return _binary_labels(y, n, "hinge_loss")

    @staticmethod
    def phi(z, y):
        return np.maximum(0.0, 1.0 - y * z)

    @staticmethod
    def dphi(z, y):
        return np.where(y * z < 1.0, -y, 0.0)


class SquaredLoss(Loss):
    """(z - y)^2 for real-valued targets."""

    symbol = "squared"
    smoothness = 2.0

    @staticmethod
    def phi(z, y):
        return (z - y) ** 2

    @staticmethod
    def dphi(z, y):
        return 2.0 * (z - y)

    @staticmethod
    def d2phi(z, y):
        return np.full_like(z, 2.0)


class SoftmaxLoss(Loss):
    """Multiclass cross-entropy logsumexp(z) - z[y] of a matrix score (n x C); labels are integers 0..C-1."""

    symbol = "softmax_ce"
    smoothness = 0.5

    def __init__(self, score, y):
        if isinstance(score, LinearScore) and score.w.n_outputs is None:
            raise ModelError("softmax_loss needs a matrix of weights: fm.Weights(d, n_outputs=C)")
        super().__init__(score, y)

    def check_labels(self, y, n):
        y = check_vector(y, n, "y")
        C = self.score.w.n_outputs if isinstance(self.score, LinearScore) else None
        if np.any(y != np.round(y)) or y.min() < 0 or (C is not None and y.max() >= C):
            raise DataError(f"softmax_loss needs integer class labels in [0, {C}); found range "
                            f"[{y.min():g}, {y.max():g}]")
        return y.astype(np.intp)

    @staticmethod
    def phi(z, y):
        return logsumexp(z, axis=1) - z[np.arange(z.shape[0]), y]

    @staticmethod
    def dphi(z, y):
        p = softmax(z, axis=1)
        p[np.arange(z.shape[0]), y] -= 1.0
        return p


# ---------------------------------------------------------------------------------------------------
# Aggregates
# ---------------------------------------------------------------------------------------------------
class Mean(Expr):
    """The mean over samples of a per-sample expression."""

    def __init__(self, expr: Expr):
        if not isinstance(expr, Expr) or expr.kind != "samples":
            raise ExpressionTypeError(f"mean needs a per-sample expression (a loss); got {expr!r}")
        self.expr = expr
        self.args = (expr,)

    @property
    def curvature(self):
        return self.expr.curvature

    def _value(self, env):
        return float(np.mean(self.expr.value(env)))

    def backprop(self, env, upstream, grads):
        v = self.expr.value(env)
        self.expr.backprop(env, np.full(v.shape[0], upstream / v.shape[0]), grads)

    def __str__(self):
        return f"mean_i {self.expr}"


class GroupMean(Expr):
    """The vector of group means (1/n_g) sum_{i in g} e_i of a per-sample expression: group risks."""

    kind = "groups"

    def __init__(self, expr: Expr, groups):
        if not isinstance(expr, Expr) or expr.kind != "samples":
            raise ExpressionTypeError(f"group_mean needs a per-sample expression (a loss); got {expr!r}")
        self.groups = Groups(groups)
        if len(self.groups) != expr.size:
            raise DataError(f"groups has {len(self.groups)} entries but the expression has {expr.size} samples")
        self.groups.require_nonempty("group_mean")
        self.expr = expr
        self.args = (expr,)
        self.size = self.groups.n_groups

    @property
    def curvature(self):
        return self.expr.curvature

    def _codes(self, env):
        return self.groups.codes if env.rows is None else self.groups.codes[env.rows]

    def _counts(self, env):
        if env.rows is None:
            return self.groups.sizes
        return np.bincount(self._codes(env), minlength=self.size)

    def _value(self, env):
        v = self.expr.value(env)
        counts = self._counts(env)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(self._codes(env), weights=v, minlength=self.size) / counts

    def backprop(self, env, upstream, grads):
        counts = np.maximum(self._counts(env), 1)
        self.expr.backprop(env, (np.asarray(upstream) / counts)[self._codes(env)], grads)

    def __str__(self):
        return f"mean_(i in g) {self.expr}"


class GroupOptimal(Expr):
    """R*_g = min_{w in W} R_g(w): the smallest achievable risk of every group (for MERO).

    A constant vector once computed; its value comes from exact per-group solves (see
    :func:`fairmodel.exact.gdro.group_optimal_values`) and is cached on first use.
    """

    kind = "groups"

    def __init__(self, risks: Expr):
        if not isinstance(risks, GroupMean):
            raise ExpressionTypeError("group_optimal needs the group risks, fm.group_mean(loss, groups)")
        if not risks.is_convex() or len(risks.variables()) != 1:
            raise ModelError("group_optimal needs convex group risks of one Weights variable")
        self.risks = risks
        self.size = risks.size
        self._cache: dict = {}

    @property
    def curvature(self):
        return "constant"

    def variables(self):
        return []

    def constant_value(self, solver: str | None = None) -> np.ndarray:
        if "values" not in self._cache:
            from .exact.gdro import group_optimal_values
            self._cache["values"] = group_optimal_values(self.risks, solver=solver)
        return self._cache["values"]

    def _value(self, env):
        return self.constant_value()

    def backprop(self, env, upstream, grads):
        pass

    def __str__(self):
        return "R*_g"


class Max(Expr):
    """The largest entry of a vector expression, or the largest of several scalar expressions."""

    def __init__(self, *exprs: Expr):
        exprs = tuple(as_expr(e) for e in exprs)
        if len(exprs) == 1 and exprs[0].kind in ("groups", "samples"):
            self.vector = True
        elif exprs and all(e.kind == "scalar" for e in exprs):
            self.vector = False
        else:
            raise ExpressionTypeError("fm.max takes one vector expression (e.g. group risks) or several "
                                      f"scalar expressions; got {[_kind_str(e) for e in exprs]}")
        self.args = exprs

    @property
    def curvature(self):
        if all(a.curvature == "constant" for a in self.args):
            return "constant"
        return "convex" if all(a.is_convex() for a in self.args) else "unknown"

    def _stack(self, env):
        if self.vector:
            return np.asarray(self.args[0].value(env), dtype=float)
        return np.array([a.value(env) for a in self.args], dtype=float)

    def _value(self, env):
        return float(np.max(self._stack(env)))

    def backprop(self, env, upstream, grads):
        v = self._stack(env)
        i = int(np.argmax(v))
        if self.vector:
            e = np.zeros_like(v)
            e[i] = upstream
            self.args[0].backprop(env, e, grads)
        else:
            self.args[i].backprop(env, upstream, grads)

    def __str__(self):
        if self.vector:
            return f"max_g [{self.args[0]}]"
        return "max(" + ", ".join(map(str, self.args)) + ")"


class SumSquares(Expr):
    """||w||_2^2 (squared Frobenius norm for a matrix); the intercept is included when present."""

    def __init__(self, w: Weights, include_intercept: bool = False):
        if not isinstance(w, Weights):
            raise ExpressionTypeError(f"sum_squares needs fairmodel.Weights; got {type(w).__name__}")
        self.w, self.args = w, (w,)
        self.include_intercept = include_intercept

    @property
    def curvature(self):
        return "convex"

    def _mask(self):
        mask = np.ones(self.w.shape)
        if self.w.intercept and not self.include_intercept:
            mask[-1] = 0.0
        return mask

    def _value(self, env):
        return float(np.sum((env[self.w] * self._mask()) ** 2))

    def backprop(self, env, upstream, grads):
        self.w.backprop(env, 2.0 * upstream * env[self.w] * self._mask(), grads)

    def __str__(self):
        return f"||{self.w}||²"


class Norm(Expr):
    """||w||_p for p in {1, 2, inf} (the intercept is not penalized)."""

    def __init__(self, w: Weights, p=2):
        if not isinstance(w, Weights):
            raise ExpressionTypeError(f"norm needs fairmodel.Weights; got {type(w).__name__}")
        if p not in (1, 2, np.inf, "inf"):
            raise ModelError(f"norm order p must be 1, 2 or inf; got {p!r}")
        self.w, self.args, self.p = w, (w,), (np.inf if p == "inf" else p)

    @property
    def curvature(self):
        return "convex"

    def _core(self, theta):
        return theta[:-1] if self.w.intercept else theta

    def _value(self, env):
        return float(np.linalg.norm(np.ravel(self._core(env[self.w])), ord=self.p))

    def backprop(self, env, upstream, grads):
        theta = env[self.w]
        core = self._core(theta)
        if self.p == 2:
            nrm = np.linalg.norm(core)
            g = core / nrm if nrm > 0 else np.zeros_like(core)
        elif self.p == 1:
            g = np.sign(core)
        else:
            g = np.zeros_like(core)
            flat = np.abs(core).ravel()
            g.flat[int(np.argmax(flat))] = np.sign(core.flat[int(np.argmax(flat))])
        full = np.zeros_like(theta)
        full[: core.shape[0]] = g
        self.w.backprop(env, upstream * full, grads)

    def __str__(self):
        return f"||{self.w}||_{'inf' if self.p == np.inf else self.p}"


# ---------------------------------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------------------------------
def _combine_kinds(a: Expr, b: Expr) -> tuple[str, int]:
    if a.kind == "scalar":
        return b.kind, b.size
    if b.kind == "scalar" or (a.kind == b.kind and a.size == b.size):
        return a.kind, a.size
    raise ExpressionTypeError(f"cannot add a {_kind_str(a)} expression and a {_kind_str(b)} expression: "
                              f"{a} + {b}")


class Add(Expr):
    def __init__(self, a: Expr, b: Expr):
        for e in (a, b):
            if e.kind == "parameters":
                raise ExpressionTypeError(f"Weights {e} cannot be added directly; use data.score({e}) or "
                                          f"fm.sum_squares({e})")
        self.kind, self.size = _combine_kinds(a, b)
        self.args = (a, b)

    @property
    def curvature(self):
        cs = {a.curvature for a in self.args} - {"constant"}
        if not cs:
            return "constant"
        if cs == {"affine"}:
            return "affine"
        if cs <= {"affine", "convex"}:
            return "convex"
        if cs <= {"affine", "concave"}:
            return "concave"
        return "unknown"

    def _value(self, env):
        return self.args[0].value(env) + self.args[1].value(env)

    def backprop(self, env, upstream, grads):
        for a in self.args:
            if a.kind == "scalar" and self.kind != "scalar":
                a.backprop(env, float(np.sum(upstream)), grads)
            else:
                a.backprop(env, upstream, grads)

    def __str__(self):
        a, b = self.args
        if isinstance(b, ScalarMul) and b.c < 0:
            return f"{a} - {ScalarMul(-b.c, b.expr) if b.c != -1 else b.expr}"
        return f"{a} + {b}"


class ScalarMul(Expr):
    def __init__(self, c: float, expr: Expr):
        if expr.kind == "parameters":
            raise ExpressionTypeError(f"Weights {expr} cannot be scaled directly; use data.score({expr})")
        self.c, self.expr = float(c), expr
        self.args = (expr,)
        self.kind, self.size = expr.kind, expr.size

    @property
    def curvature(self):
        cv = self.expr.curvature
        if self.c == 0:
            return "constant"
        if self.c < 0:
            return {"convex": "concave", "concave": "convex"}.get(cv, cv)
        return cv

    def constant_value(self):
        return self.c * self.expr.constant_value()

    def _value(self, env):
        return self.c * self.expr.value(env)

    def backprop(self, env, upstream, grads):
        self.expr.backprop(env, self.c * np.asarray(upstream), grads)

    def __str__(self):
        inner = str(self.expr)
        if isinstance(self.expr, Add):
            inner = f"({inner})"
        return f"-{inner}" if self.c == -1 else f"{self.c:g}·{inner}"


# ---------------------------------------------------------------------------------------------------
# Evaluation helpers
# ---------------------------------------------------------------------------------------------------
def _env(assignment: dict, rows=None) -> Env:
    values = {}
    for w, v in assignment.items():
        if not isinstance(w, Weights):
            raise ExpressionTypeError("assignments map fairmodel.Weights to arrays")
        values[w] = w.check_value(v)
    return Env(values, rows)


def evaluate(expr: Expr, assignment: dict, rows=None):
    """The NumPy value of ``expr`` with ``assignment`` mapping each Weights to an array."""
    return expr.value(_env(assignment, rows))


def value_and_grad(expr: Expr, assignment: dict, rows=None):
    """(value, {Weights: gradient}) of a scalar expression (subgradient where not differentiable)."""
    if expr.kind != "scalar":
        raise ExpressionTypeError(f"value_and_grad needs a scalar expression; got a {_kind_str(expr)} one")
    env = _env(assignment, rows)
    val = expr.value(env)
    grads: dict = {}
    expr.backprop(env, 1.0, grads)
    for w in expr.variables():
        grads.setdefault(w, np.zeros(w.shape))
    return val, grads


# ---------------------------------------------------------------------------------------------------
# Atom constructors (the public DSL names)
# ---------------------------------------------------------------------------------------------------
def parameter(value: float, name: str, nonneg: bool = False) -> Parameter:
    """A named scalar parameter (e.g. a fairness budget) that ``Problem.sweep`` can vary."""
    return Parameter(value, name, nonneg=nonneg)


def logistic_loss(score: Expr, y) -> LogisticLoss:
    """Per-sample logistic loss log(1 + exp(-y s)); labels in {-1, +1} or {0, 1}."""
    return LogisticLoss(score, y)


def hinge_loss(score: Expr, y) -> HingeLoss:
    """Per-sample hinge loss max(0, 1 - y s); labels in {-1, +1} or {0, 1}."""
    return HingeLoss(score, y)


def squared_loss(score: Expr, y) -> SquaredLoss:
    """Per-sample squared loss (s - y)^2."""
    return SquaredLoss(score, y)


def softmax_loss(score: Expr, y) -> SoftmaxLoss:
    """Per-sample multiclass cross-entropy of a matrix score (Weights with n_outputs=C); labels 0..C-1."""
    return SoftmaxLoss(score, y)


def mean(expr: Expr) -> Mean:
    """Mean over samples of a per-sample expression."""
    return Mean(expr)


def group_mean(expr: Expr, groups) -> GroupMean:
    """Vector of per-group means (group risks) of a per-sample expression."""
    return GroupMean(expr, groups)


def group_optimal(risks: GroupMean) -> GroupOptimal:
    """Vector of the smallest achievable risk of each group, R*_g = min_w R_g(w) (for MERO)."""
    return GroupOptimal(risks)


def max(*exprs) -> Max:  # noqa: A001  (the DSL's max, used as fm.max)
    """Largest entry of a vector expression, or largest of several scalar expressions."""
    return Max(*exprs)


def sum_squares(w: Weights, include_intercept: bool = False) -> SumSquares:
    """Squared Euclidean (Frobenius) norm of the weights (intercept excluded by default)."""
    return SumSquares(w, include_intercept)


def norm(w: Weights, p=2) -> Norm:
    """The p-norm of the weights (p in {1, 2, inf}); the intercept is not included."""
    return Norm(w, p)
