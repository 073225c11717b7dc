"""Variables and scores: the model parameters of a declaration and their per-sample scores on a dataset."""
from __future__ import annotations

import numpy as np

from ..data.dataset import Dataset
from ..errors import ExpressionTypeError, ModelError
from ..oracles.domains import check_in_ball, project_ball
from ..oracles.losses import with_intercept
from ..utilities import display
from ..utilities.validate import check_bool, check_int, is_int, is_real
from .core import Expr
from .notation import Notation
from .score_forms import PerSample, ScoreForm, Term


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
        check_int(n_features, "n_features", error=ModelError)
        if radius is not None:
            if not is_real(radius):
                raise ModelError(f"radius must be a positive number or None; got {radius!r}")
            if not np.isfinite(radius) or radius <= 0:
                raise ModelError(f"radius must be positive and finite (the domain is the ball ||w|| <= radius); "
                                 f"got {radius}. Use radius=None for no domain.")
        if n_outputs is not None and (not is_int(n_outputs) or n_outputs < 2):
            raise ModelError(f"n_outputs must be None or an integer >= 2; got {n_outputs!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ModelError(f"name must be an identifier-like string; got {name!r}")
        self.n_features = int(n_features)
        self.radius = None if radius is None else float(radius)
        self.intercept = check_bool(intercept, "intercept", error=ModelError)
        self.n_outputs = None if n_outputs is None else int(n_outputs)
        self.name = name
        rows = self.n_features + self.intercept
        self.shape = (rows,) if self.n_outputs is None else (rows, self.n_outputs)
        self.size = int(np.prod(self.shape))

    own_curvature = "affine"
    own_smooth = True

    def variables(self):
        return [self]

    def _numeric(self, env):
        return env[self]

    def backprop(self, env, upstream, grads):
        grads[self] = grads.get(self, 0.0) + upstream

    def zeros(self) -> np.ndarray:
        return np.zeros(self.shape)

    def project(self, theta: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the domain (the ball, or the identity without a radius)."""
        return project_ball(theta, self.radius)

    def score_on(self, data: Dataset) -> "LinearScore":
        """The linear score of these weights on a dataset (what ``data.score(w)`` returns)."""
        return LinearScore(data, self)

    def check_value(self, theta, what: str = "value") -> np.ndarray:
        return check_in_ball(theta, self.shape, self.radius, f"{what} for {self.name!r}")

    def split(self, theta: np.ndarray):
        """(w, b) from the stored parameter array (b = 0 without an intercept)."""
        if self.intercept:
            return theta[:-1], theta[-1]
        return theta, (0.0 if self.n_outputs is None else np.zeros(self.n_outputs))

    def describe_domain(self) -> str:
        return self.domain(Notation())

    def domain(self, n: Notation) -> str:
        """The set the weights range over, in the notation ``n``: ``w in R^99, ||w||_2 <= 5`` (with an intercept
        ``(w, b) in R^99 x R, ||(w, b)||_2 <= 5``)."""
        name = n.ident(self.name)
        d = "x".join(map(str, (self.n_features,) + self.shape[1:]))
        if n.latex:
            space = "\\mathbb{R}^{" + d.replace("x", " \\times ") + "}"
            what, space = (f"({name}, b)", space + " \\times \\mathbb{R}" + (
                f"^{{{self.n_outputs}}}" if self.n_outputs else "")) if self.intercept else (name, space)
            ball = "" if self.radius is None else f",\\ {n.norm(what)} \\le {n.number(self.radius)}"
            return f"{what} \\in {space}{ball}"
        space = f"R^{d}"
        what, space = (f"({name}, b)", space + " x R" + (f"^{self.n_outputs}" if self.n_outputs else "")) \
            if self.intercept else (name, space)
        return f"{what} in {space}" + ("" if self.radius is None else f", {n.norm(what)} <= {self.radius:g}")

    def render(self, n):
        return n.ident(self.name)


class SampleScore(Expr):
    """Base of the per-sample scores of a model (``model_type``, built by ``fm.<constructor>``) on a
    :class:`Dataset`: checks the inputs and that the model takes the data's features."""

    kind = "samples"
    model_type: type = type(None)
    constructor = ""
    own_smooth = True          # linear in w, or a network of sigmoid units: smooth in its parameters

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
    own_curvature = "affine"

    def get_data(self):
        return (self.data,)

    def score_form(self):
        return None if self.w.n_outputs is not None else ScoreForm(self, PerSample([Term(1.0)]))

    def design(self, rows=None) -> np.ndarray:
        """The design matrix (X with a column of ones appended when the weights have an intercept)."""
        X = self.data.in_memory_X("the design matrix of a linear score")
        return with_intercept(X if rows is None else X[rows], self.w.intercept)

    def _numeric(self, env):  # through the data source: X need not be in memory (Dask-backed data)
        w, b = self.w.split(env[self.w])
        return (self.data.matvec(w) if env.rows is None else self.data.rows(env.rows) @ w) + b

    def backprop(self, env, upstream, grads):
        g = self.data.rmatvec(upstream) if env.rows is None else self.data.rows(env.rows).T @ upstream
        if self.w.intercept:
            g = np.concatenate([g, np.atleast_1d(upstream.sum(axis=0))[None, ...].reshape((1,) + g.shape[1:])])
        self.w.backprop(env, g, grads)

    @property
    def is_sum(self):
        return self.w.intercept

    def render(self, n):
        define_rows(n, self.data)
        if self.w.intercept:
            n.define("b", "b: the intercept (the last entry of the weights)", "$b$: the intercept (the last entry of "
                          "the weights)", order=3)
        return n.pick("x_i·", "x_i^\\top ") + self.w.render(n) + (" + b" if self.w.intercept else "")


def binary_values(y) -> tuple | None:
    """The two values of binary labels (low, high), or None (two O(n) passes, no sort: large data stay cheap)."""
    y = np.asarray(y)
    if y.size == 0:
        return None
    lo, hi = float(np.min(y)), float(np.max(y))
    return (lo, hi) if lo < hi and bool(np.all((y == lo) | (y == hi))) else None


def label_text(v: float, values: tuple) -> str:
    """A label as written in the notation: +1 / -1 for signed labels, else as is."""
    return f"{v:+g}" if min(values) < 0 else f"{v:g}"


def define_rows(n: Notation, data: Dataset) -> None:
    """Define x_i (and y_i) of the rows of ``data`` in the notation ``n``."""
    rows = f"{data.n_samples:,}"
    n.define("x", f"x_i in R^{data.n_features}: the features of row i = 1..{rows} of {data.name!r}",
             f"$x_i \\in \\mathbb{{R}}^{{{data.n_features}}}$: the features of row $i = 1, \\dots, {data.n_samples}$ "
             f"of {display.latex_text(repr(data.name))}", order=0)
    if data.y is not None:
        values = binary_values(data.y)
        shown = "" if values is None else " in {" + ", ".join(label_text(v, values) for v in values) + "}"
        target = f" ({data.target_name})" if data.target_name else ""
        tex_values = display.latex_text(shown).replace(" in ", " \\in ")
        n.define("y", f"y_i{shown}: the label of row i{target}",
                 f"$y_i{tex_values}$: the label of row $i${display.latex_text(target)}", order=1)
