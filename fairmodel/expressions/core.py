"""The core of the declaration language: nodes, their facts, and the arithmetic that composes them.

A node is a small class of facts, as CVXPY's atoms are: its *kind* (``"scalar"``; ``"samples"``, one value per
data row; ``"groups"``, one value per group; ``"vector"``, a constant vector that takes the kind of what it is
combined with; ``"parameters"``, a model's weights), its ``size``, its own curvature as a function of its arguments
(``own_curvature``), its monotonicity in each argument (``monotonicity(i)``) and its ``sign``, from which its
``curvature`` follows by the DCP rule (:func:`.rules.dcp_curvature`); whether it is a smooth function of its
arguments (``own_smooth``), from which ``is_smooth()`` follows; its form as a function of one linear score
(``score_form()``, built from its arguments' forms: :mod:`.score_forms`); its NumPy value (``numeric(env)``, computed
by ``_numeric``), the chain rule (``backprop``), and ``copy(args)`` (the same atom over new arguments: generic tree
rewrites such as canonicalization need no per-type code) with ``get_data()`` (what, besides the arguments, makes two
atoms of a type the same). Nodes are immutable (a :class:`Parameter`'s value is the one thing a user may change).

No CVXPY and no solver here: lowerings live in tables of the backends (:mod:`fairmodel.exact.lower`), and
recognition works on the canonical form of :mod:`fairmodel.expressions.canonicalize`.

The composition rules (kinds and curvatures) are in :mod:`.rules`; values are computed in an environment
(:mod:`.evaluate`) that maps every variable to an array and may restrict per-sample nodes to a subset of rows.
"""
from __future__ import annotations

import numpy as np

from ..errors import ExpressionTypeError, ModelError, UnsupportedProblemError
from ..utilities.display import short as display_short
from ..utilities.validate import is_real
from .evaluate import Env
from .notation import Notation, wrap
from .rules import VECTOR_KINDS, combine_kinds, dcp_curvature, flip_sign, kind_text, monotone_in_sign, sum_sign
from .score_forms import ScoreForm


# The largest coefficient c of a product c * expr: beyond it, terms of order 1 next to c * expr fall below the solvers'
# relative tolerances (about 1e-8 of the largest term, in double precision with 16 digits).
MAX_COEFFICIENT = 1e12
MAX_DEPTH = 100      # nesting depth of an expression (e.g. abs(abs(...))); the tree walks recurse once per level


def nesting_depth(e: "Expr") -> int:
    """How many levels ``e`` nests (a leaf is 1), computed without recursion, each shared node once."""
    depth: dict = {}
    stack = [e]
    while stack:
        node = stack[-1]
        pending = [a for a in node.args if id(a) not in depth]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        depth[id(node)] = 1 + max((depth[id(a)] for a in node.args), default=0)
    return depth[id(e)]


def check_depth(e: "Expr", what: str) -> None:
    """Refuse an expression nested more than :data:`MAX_DEPTH` levels deep, naming ``what`` it is."""
    levels = nesting_depth(e)
    if levels > MAX_DEPTH:
        raise ModelError(f"{what} nests {levels} levels deep (e.g. abs(abs(...)) or a - (b - (c - ...))); at most "
                         f"{MAX_DEPTH} levels are allowed: a long sum is one level (a + b + c, fm.sum), and an atom "
                         f"applied to itself many times is usually a mistake")


class Expr:
    """Base class of all expression nodes."""

    kind = "scalar"
    size = 1
    args: tuple = ()
    is_sum = False           # written as a sum: parenthesized inside products and aggregates

    # -- facts ------------------------------------------------------------------------------------
    own_curvature = "unknown"    # the atom's curvature as a function of its arguments (CVXPY's is_atom_convex ...)
    dcp_rule = ""                # the composition rule in words, for the diagnosis of a non-convex expression
    own_smooth = False           # a smooth function of its arguments (differentiable, the gradient Lipschitz on
                                 # bounded sets); an atom that does not state it is not taken to be

    def monotonicity(self, i: int) -> str:
        """``"increasing"``, ``"decreasing"`` or ``"none"``: how the atom varies with its argument ``i``."""
        return "none"

    @property
    def sign(self) -> str:
        """``"zero"``, ``"nonneg"``, ``"nonpos"`` or ``"unknown"``."""
        return "unknown"

    @property
    def curvature(self) -> str:
        """Constant, affine, convex, concave or unknown, by the DCP rule from the facts above; computed once per
        node (nodes are immutable and no fact depends on a parameter's value), so that the rule, which asks each
        argument for its curvature several times, stays linear in the size of the tree however deep it nests."""
        known = self.__dict__.get("_curvature")
        if known is None:
            known = self.__dict__["_curvature"] = dcp_curvature(self)
        return known

    def get_data(self) -> tuple:
        """What besides the arguments makes two atoms of this type the same (compared by :func:`same_data`); an
        atom that does not state it is the same only as itself."""
        return (self,)

    def copy(self, args: tuple) -> "Expr":
        """The same atom over ``args`` (equivalent arguments, e.g. canonicalized ones)."""
        if all(a is b for a, b in zip(args, self.args)):
            return self
        raise UnsupportedProblemError(f"{type(self).__name__} ({self}) cannot be rebuilt over new arguments; "
                                      f"define its copy(args)")

    def is_convex(self) -> bool:
        return self.curvature in ("constant", "affine", "convex")

    def is_concave(self) -> bool:
        return self.curvature in ("constant", "affine", "concave")

    def is_affine(self) -> bool:
        return self.curvature in ("constant", "affine")

    def is_smooth(self) -> bool:
        """Whether the expression is differentiable in its variables with a gradient Lipschitz on bounded sets
        (entry by entry, for a per-sample expression): it has no variables, or it is a smooth atom of smooth
        arguments. Computed once per node, as the curvature is."""
        known = self.__dict__.get("_smooth")
        if known is None:
            known = self.__dict__["_smooth"] = not self.variables() or (
                self.own_smooth and all(a.is_smooth() for a in self.args))
        return known

    def score_form(self) -> ScoreForm | None:
        """The expression as c_i + sum_t a_ti f_t(z_i, y_i) of one linear score z (f_t the score or a loss kernel:
        :class:`.score_forms.ScoreForm`, whose jet gives its derivatives in z), or None when it is not of that
        form; each atom of the form states it from its arguments' forms."""
        return None

    def aggregated_rows(self) -> tuple | None:
        """(codes, n_codes) when this node's value is a function of the per-code sums over all rows of its
        per-sample argument (codes[i] in 0..n_codes-1, or -1 for a row left out; None: every row in code 0): a mean, a group mean, a sum over
        rows, then computed from those sums by :meth:`value_from_row_sums` (on chunked data, by a pass that returns
        only the sums: :func:`~fairmodel.expressions.evaluate.aggregates_by_pass`); None for every other node.
        An aggregate that states it defines ``value_from_row_sums(sums)``."""
        return None

    def variables(self) -> list:
        out: list = []
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
    def numeric(self, env: Env):
        """The NumPy value in ``env`` (memoized per environment)."""
        key = id(self)
        if key not in env.cache:
            env.cache[key] = self._numeric(env)
        return env.cache[key]

    def _numeric(self, env: Env):
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
            if other.kind == "scalar" and other.curvature == "constant" and not other.variables():
                if isinstance(other, Parameter):
                    raise ExpressionTypeError(f"a parameter may bound a constraint but not scale an expression "
                                              f"({self} * {other}): the lowerings need fixed coefficients")
                return ScalarMul(float(other.constant_value()), self)
            if self.kind == "scalar" and self.curvature == "constant" and not isinstance(self, Parameter):
                return ScalarMul(float(self.constant_value()), other)
            raise ExpressionTypeError(f"only products with a constant number or a fixed data vector are "
                                      f"supported; got ({self}) * ({other})")
        if isinstance(other, (list, tuple, np.ndarray)) and np.ndim(other) >= 1:
            return Multiply(other, self)
        return ScalarMul(_as_number(other, "multiplier"), self)

    __rmul__ = __mul__

    def __truediv__(self, other):
        c = _as_number(other, "divisor")
        if c == 0:
            raise ModelError("division of an expression by zero")
        return ScalarMul(1.0 / c, self)

    def __abs__(self):
        return Abs(self)

    def __le__(self, other):
        return Inequality(self, _bound(other, self, "<="))

    def __ge__(self, other):
        return Inequality(_bound(other, self, ">="), self)

    def __eq__(self, other):  # noqa: D105  (identity; == is not a constraint in fairmodel)
        return self is other

    __hash__ = object.__hash__

    def __bool__(self):
        raise ExpressionTypeError("an expression has no truth value; did you mean to build a constraint "
                                  "with <= and pass it to Problem(...)?")

    def __iter__(self):
        raise ExpressionTypeError(f"an expression is not a Python sequence: for the largest, smallest or total of "
                                  f"{self} use fm.max(...), fm.min(...) or fm.sum(...), not Python's max/min/sum")

    # -- what Python and NumPy must not do with an expression (each says what to write instead) ------------------
    def _no_order(self, other):
        raise ExpressionTypeError(f"'<' and '>' do not compare fairmodel expressions: a constraint is written with <= "
                                  f"or >= (e.g. {self} <= 0.1), and the largest or smallest of expressions is "
                                  f"fm.max(a, b) or fm.min(a, b) (Python's max, min and sorted compare with < and >)")

    __lt__ = __gt__ = _no_order

    def __len__(self):
        raise ExpressionTypeError(f"an expression has no len(); its number of entries is expr.size ({self.size} for "
                                  f"{self})")

    def _no_number(self, *args):
        raise ExpressionTypeError(f"{self} has no number before it is evaluated: after a solve read result.objective "
                                  f"and result.variables, or evaluate it at weights theta with "
                                  f"fm.expressions.evaluate(expr, {{w: theta}})")

    __float__ = __int__ = __index__ = __complex__ = __round__ = _no_number

    def __getitem__(self, key):
        raise ExpressionTypeError(f"expressions cannot be indexed ({self}[{key!r}]): select rows with a boolean mask, "
                                  f"fm.mean(e, where=mask) or fm.group_mean(e, groups, where=mask)")

    def __pow__(self, other):
        raise ExpressionTypeError(f"({self}) ** {other!r} is not an atom: the squared norm of weights is "
                                  f"fm.sum_squares(w), squared errors are fm.squared_loss(score, y)")

    __rpow__ = __pow__

    def __rtruediv__(self, other):
        raise ExpressionTypeError(f"{other!r} / ({self}): fairmodel cannot divide by an expression (it is not convex "
                                  f"in general); divide an expression by a number instead")

    # NumPy: ``array + expr`` and the like build expressions through the Python operators; other ufuncs and NumPy
    # functions (np.max, np.abs, ...) on an expression name the fm atom to use
    _UFUNC_OPERATORS = {"add": ("__add__", "__radd__"), "subtract": ("__sub__", "__rsub__"),
                        "multiply": ("__mul__", "__rmul__"), "true_divide": ("__truediv__", "__rtruediv__"),
                        "less_equal": ("__le__", "__ge__"), "greater_equal": ("__ge__", "__le__"),
                        "less": ("__lt__", "__gt__"), "greater": ("__gt__", "__lt__"),
                        "power": ("__pow__", "__rpow__"), "equal": ("__eq__", "__eq__"),
                        "not_equal": ("__ne__", "__ne__")}
    _NUMPY_HINTS = {"max": "fm.max", "amax": "fm.max", "maximum": "fm.max", "fmax": "fm.max", "min": "fm.min",
                    "amin": "fm.min", "minimum": "fm.min", "fmin": "fm.min", "sum": "fm.sum", "mean": "fm.mean",
                    "average": "fm.mean", "abs": "fm.abs", "absolute": "fm.abs", "square": "fm.sum_squares",
                    "linalg.norm": "fm.norm", "norm": "fm.norm"}

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            if ufunc.__name__ in self._UFUNC_OPERATORS and len(inputs) == 2:
                direct, reflected = self._UFUNC_OPERATORS[ufunc.__name__]
                if inputs[0] is self:
                    return getattr(self, direct)(inputs[1])
                return getattr(self, reflected)(inputs[0])
            if ufunc.__name__ == "negative":
                return -self
            if ufunc.__name__ == "absolute":
                return Abs(self)
        self._numpy_refusal(f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}"),
                            ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        self._numpy_refusal(f"numpy.{func.__name__}", func.__name__)

    def _numpy_refusal(self, what: str, name: str):
        hint = self._NUMPY_HINTS.get(name)
        raise ExpressionTypeError(f"{what} does not apply to a fairmodel expression ({self}): "
                                  + (f"use {hint}(...)" if hint else
                                     "it is not an atom of fairmodel; the atoms are the losses, norms and aggregates "
                                     "of fm (fm.max, fm.min, fm.sum, fm.mean, fm.abs, fm.pos, fm.norm, ...; see "
                                     "docs/modeling.md)"))

    # -- notation ------------------------------------------------------------------------------------
    def render(self, n: Notation) -> str:
        """The node in the notation ``n`` (text or LaTeX), defining the symbols it uses (:mod:`.notation`)."""
        return type(self).__name__

    def index(self) -> str:
        """The index of the entries of a vector node: i for rows, g for groups."""
        return "i" if self.kind == "samples" else "g"

    def __str__(self):
        return self.render(Notation())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


def _as_number(value, what: str) -> float:
    if is_real(value):
        try:
            v = float(value)
        except OverflowError:           # an integer of hundreds of digits
            v = float("inf")
        if not np.isfinite(v):
            raise ModelError(f"{what} must be finite; got {value}")
        return v
    raise ExpressionTypeError(f"{what} must be a number; got {type(value).__name__}")


def _bound(value, expr: "Expr", op: str) -> "Expr":
    """The other side of ``expr <= value`` (or ``>=``): a finite number is named in the message when it is not."""
    if is_real(value):
        _as_number(value, f"the bound of the constraint {expr} {op} ...")
    return as_expr(value)


def as_expr(value) -> "Expr":
    if isinstance(value, Expr):
        return value
    if is_real(value) or isinstance(value, (list, tuple, np.ndarray)):
        return Constant(value)
    raise ExpressionTypeError(f"cannot use a {type(value).__name__} in an expression")


class Constant(Expr):
    """A constant number, or a constant vector (kind ``"vector"``: it takes the kind of what it meets)."""

    def __init__(self, value, kind: str | None = None, name: str | None = None):
        if isinstance(value, (list, tuple)) and any(isinstance(v, Expr) for v in value):
            raise ExpressionTypeError(f"a list of expressions is not an expression ({value!r}): combine them with "
                                      f"fm.max(a, b), fm.min(a, b) or a + b")
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ExpressionTypeError(f"a constant must be a number or a numeric vector; got {value!r}") from None
        if not np.all(np.isfinite(arr)):
            raise ModelError(f"the constant {name or display_short(value)} contains NaN or infinite values; "
                             f"constants, bounds and coefficients must be finite numbers")
        if arr.ndim > 1:
            raise ModelError(f"constants must be numbers or 1-D vectors; got shape {arr.shape}")
        self._value_arr = arr.copy()
        self._value_arr.setflags(write=False)
        self.kind = "scalar" if arr.ndim == 0 else (kind or "vector")
        self.size = 1 if arr.ndim == 0 else arr.shape[0]
        self.name = name

    own_curvature = "constant"
    own_smooth = True

    @property
    def sign(self):
        v = self._value_arr
        return "zero" if not v.any() else "nonneg" if v.min() >= 0 else "nonpos" if v.max() <= 0 else "unknown"

    def get_data(self):
        return (self._value_arr, self.kind)

    def constant_value(self):
        return self._value_arr

    def score_form(self):
        return ScoreForm.constant(self._value_arr)

    def variables(self):
        return []

    def _numeric(self, env):
        return float(self._value_arr) if self.kind == "scalar" else self._value_arr

    def backprop(self, env, upstream, grads):
        pass

    def render(self, n):
        if self.name:
            return n.ident(self.name)
        if self.kind == "scalar":
            return n.number(self._value_arr)
        return n.vector(self._value_arr) + (n.pick("_", "_") + self.index() if self.kind != "vector" else "")


class Parameter(Expr):
    """A named scalar whose value may change between solves: a fairness budget, a level, a cost.

    The one mutable node of the language (as in CVXPY): ``Problem.sweep(name, values)`` sets ``value`` and
    re-solves; exact programs lower it to a scalar ``cp.Parameter`` so that a compiled program is reused.
    """

    def __init__(self, value: float, name: str, *, nonneg: bool = False):
        if not isinstance(name, str) or not name.isidentifier():
            raise ModelError(f"a parameter needs an identifier-like name; got {name!r}")
        self.name, self.nonneg = name, bool(nonneg)
        self.value = value

    @property
    def value(self) -> float:
        return self._current

    @value.setter
    def value(self, v) -> None:
        v = _as_number(v, f"parameter {self.name!r}")
        if self.nonneg and v < 0:
            raise ModelError(f"parameter {self.name!r} must be >= 0; got {v}")
        self._current = v

    own_curvature = "constant"
    own_smooth = True

    @property
    def sign(self):
        return "nonneg" if self.nonneg else "unknown"

    def constant_value(self):
        return np.asarray(self._current)

    def score_form(self):
        return ScoreForm.constant(self._current)

    def variables(self):
        return []

    def _numeric(self, env):
        return self._current

    def backprop(self, env, upstream, grads):
        pass

    def render(self, n):
        return n.ident(self.name)


def reject_parameters(e: Expr, where: str) -> None:
    if e.kind == "parameters":
        raise ExpressionTypeError(f"Weights {e} cannot be used directly in {where}; use data.score({e}) or "
                                  f"fm.sum_squares({e})")


class Add(Expr):
    """A sum of expressions (elementwise for vectors; scalars broadcast)."""

    def __init__(self, *terms: Expr):
        if len(terms) < 2:
            raise ModelError("Add needs at least two terms")
        # a sum of sums is one sum: a sum built term by term in a loop (total = total + term) stays one level deep
        terms = tuple(a for t in terms for a in (t.args if type(t) is Add else (t,)))
        for t in terms:
            reject_parameters(t, "a sum")
        shaped = terms[0]            # the term that sets the kind so far (errors name it)
        for t in terms[1:]:
            kind, _ = combine_kinds(shaped, t)
            shaped = t if t.kind == kind and shaped.kind != kind else shaped
        self.kind, self.size = combine_kinds(shaped, shaped)
        self.args = tuple(terms)

    own_curvature = "affine"
    own_smooth = True
    dcp_rule = "a sum of a convex term and a concave term has no known curvature"

    def monotonicity(self, i):
        return "increasing"

    @property
    def sign(self):
        return sum_sign(a.sign for a in self.args)

    def get_data(self):
        return ()

    def copy(self, args):
        return Add(*args)

    def constant_value(self):
        return sum(np.asarray(a.constant_value(), dtype=float) for a in self.args)

    def score_form(self):
        total = ScoreForm.constant(0.0)
        for a in self.args:
            form = a.score_form()
            total = None if form is None else total.plus(form)
            if total is None:
                return None
        return total

    def _numeric(self, env):
        out = self.args[0].numeric(env)
        for a in self.args[1:]:
            out = out + a.numeric(env)
        return out

    def backprop(self, env, upstream, grads):
        for a in self.args:
            if a.kind == "scalar" and self.kind != "scalar":
                a.backprop(env, float(np.sum(upstream)), grads)
            else:
                a.backprop(env, upstream, grads)

    is_sum = True

    def render(self, n):
        gap = n.breaks() if n.take_split() else " "
        text = self.args[0].render(n)
        for b in self.args[1:]:
            if isinstance(b, ScalarMul) and b.c < 0:
                text += gap + "- " + (ScalarMul(-b.c, b.expr) if b.c != -1 else wrap_term(b.expr)).render(n)
            else:
                text += gap + "+ " + b.render(n)
        return text


def wrap_term(e: Expr) -> Expr:
    """``e`` as the subtracted term of a sum: a sum in parentheses (a - (b + c))."""
    return _Paren(e) if e.is_sum else e


class _Paren(Expr):
    """Parentheses around a node, for printing only."""

    def __init__(self, expr):
        self.expr = expr

    def render(self, n):
        return n.paren(self.expr.render(n))


class ScalarMul(Expr):
    """c * expr for a constant number c."""

    def __init__(self, c: float, expr: Expr):
        reject_parameters(expr, "a product")
        if not -MAX_COEFFICIENT <= c <= MAX_COEFFICIENT:      # (abs is the language's here)
            raise ModelError(f"the coefficient {c:.3g} of {display_short(str(expr))} is beyond {MAX_COEFFICIENT:.0e} "
                             f"in magnitude: in double precision (16 digits) the solvers' tolerances would swallow "
                             f"every other term next to it; rescale the expression (e.g. divide it by a constant)")
        self.c, self.expr = float(c), expr
        self.args = (expr,)
        self.kind, self.size = expr.kind, expr.size

    own_smooth = True

    @property
    def own_curvature(self):
        return "constant" if self.c == 0 else "affine"

    def monotonicity(self, i):
        return "increasing" if self.c > 0 else "decreasing" if self.c < 0 else "none"

    @property
    def sign(self):
        return "zero" if self.c == 0 else self.expr.sign if self.c > 0 else flip_sign(self.expr.sign)

    def get_data(self):
        return (self.c,)

    def copy(self, args):
        return ScalarMul(self.c, args[0])

    def constant_value(self):
        return self.c * self.expr.constant_value()

    def score_form(self):
        form = self.expr.score_form()
        return None if form is None else form.scaled(self.c)

    def _numeric(self, env):
        return self.c * self.expr.numeric(env)

    def backprop(self, env, upstream, grads):
        self.expr.backprop(env, self.c * np.asarray(upstream), grads)

    def render(self, n):
        inner = wrap(self.expr.render(n), n, self.expr)
        return f"-{inner}" if self.c == -1 else n.number(self.c) + n.pick("·", "\\,") + inner


class Multiply(Expr):
    """The elementwise product a ⊙ e of a fixed data vector a with a vector expression e (per sample or per
    group), e.g. ``(z - z.mean()) * data.score(w)`` for the decision-boundary covariance of Zafar et al. 2017.

    ``weighting=True`` marks the product an aggregate builds from the sample weights of the losses below it
    (:func:`sample_weights_of`): the weights are applied there, and an aggregate above does not apply them again.
    """

    def __init__(self, vector, expr: Expr, weighting: bool = False):
        reject_parameters(expr, "a product")
        if expr.kind not in VECTOR_KINDS:
            raise ExpressionTypeError(f"a data vector multiplies a per-sample or per-group expression; {expr} is "
                                      f"a {kind_text(expr)} expression (scale a scalar with a number instead)")
        try:
            a = np.asarray(vector, dtype=float)
        except (TypeError, ValueError):
            raise ExpressionTypeError(f"the data vector of a product must be numeric; got {vector!r}") from None
        if a.ndim != 1 or a.shape[0] != expr.size:
            raise ExpressionTypeError(f"the data vector has shape {a.shape} but {expr} has {expr.size} entries")
        if not np.all(np.isfinite(a)):
            raise ModelError("the data vector of a product contains NaN or infinite values")
        self.a = a.copy()
        self.a.setflags(write=False)
        self.expr, self.args = expr, (expr,)
        self.kind, self.size = expr.kind, expr.size
        self.weighting = bool(weighting)

    dcp_rule = ("a data vector with entries of both signs times a factor that is not affine has no known "
                "curvature; only an affine factor may meet a vector of mixed signs")

    own_smooth = True

    @property
    def own_curvature(self):
        return "affine" if np.any(self.a) else "constant"

    def monotonicity(self, i):
        return "increasing" if np.all(self.a >= 0) else "decreasing" if np.all(self.a <= 0) else "none"

    @property
    def sign(self):
        if not np.any(self.a):
            return "zero"
        mono = self.monotonicity(0)
        return self.expr.sign if mono == "increasing" else flip_sign(self.expr.sign) if mono == "decreasing" \
            else "unknown"

    def get_data(self):
        return (self.a, self.weighting)

    def copy(self, args):
        return Multiply(self.a, args[0], weighting=self.weighting)

    def score_form(self):
        form = self.expr.score_form() if self.kind == "samples" else None
        return None if form is None else form.scaled(self.a)

    def coefficients(self, env: Env | None = None) -> np.ndarray:
        if env is None or env.rows is None or self.kind != "samples":
            return self.a
        return self.a[env.rows]

    def _numeric(self, env):
        return self.coefficients(env) * self.expr.numeric(env)

    def backprop(self, env, upstream, grads):
        self.expr.backprop(env, self.coefficients(env) * np.asarray(upstream), grads)

    def render(self, n):
        i = self.index()
        if self.weighting:
            n.define("u", "u_i = w_i / (the mean sample weight of the rows of i's set): a mean of u_i e_i is the "
                          "sample-weighted mean of e", "$u_i = w_i / \\bar w_{S(i)}$: the sample weight of row $i$ "
                          "relative to the mean weight of its set, so that a mean of $u_i e_i$ is the sample-weighted "
                          "mean of $e$")
            name = "u"
        else:
            text_name, tex_name = n.numbered("data vector", hash(self.a.tobytes()), "a")
            name = n.pick(text_name, tex_name)
            values = np.unique(self.a)
            shown = (" and ".join(_fmt_g(v) for v in values) if values.size <= 3
                     else f"in [{_fmt_g(values[0])}, {_fmt_g(values[-1])}]")
            what = "row" if i == "i" else "group"
            n.define(("vector", text_name), f"{text_name}_{i}: a fixed data vector, one entry per {what} (values "
                                            f"{shown})",
                     f"${tex_name}_{i}$: a fixed data vector, one entry per {what} (values {shown})")
        return f"{name}_{i}" + n.pick("·", "\\,") + wrap(self.expr.render(n), n, self.expr)


def sample_weights_of(expr: Expr):
    """The sample weights (``sample_weight=`` of a loss) carried by a per-sample expression, or None.

    The per-sample nodes below ``expr`` are searched, down to a product already marked ``weighting`` (its
    weights are applied). Weights of one sample are the weights of every per-sample term in it: two different
    weight vectors in one aggregate are refused, and so is a weighted loss next to an unweighted one (whose rows
    weigh 1 each).
    """
    found, unweighted, stack = None, None, [expr]
    while stack:
        e = stack.pop()
        if e.kind != "samples" or (isinstance(e, Multiply) and e.weighting):
            continue
        w = getattr(e, "sample_weight", _NO_WEIGHTS)
        if w is None:
            unweighted = e                      # a loss declared without sample_weight
        elif w is not _NO_WEIGHTS:
            if found is not None and found is not w and not np.array_equal(found, w):
                raise ModelError(f"two different sample_weight vectors meet in one mean ({expr}): aggregate the "
                                 f"differently weighted losses separately (one fm.mean each)")
            found = w
        stack.extend(e.args)
    if found is not None and unweighted is not None:
        raise ModelError(f"weighted and unweighted losses meet in one mean ({expr}): {unweighted} has no "
                         f"sample_weight; give it the same sample_weight, or aggregate the two separately "
                         f"(fm.mean(weighted) + fm.mean(unweighted))")
    return found


_NO_WEIGHTS = object()      # a node that is not a loss (no sample_weight attribute)


class Abs(Expr):
    """|e| elementwise; convex when e is affine (``abs(expr)`` builds it too)."""

    def __init__(self, expr):
        expr = as_expr(expr)
        reject_parameters(expr, "fm.abs")
        self.expr, self.args = expr, (expr,)
        self.kind, self.size = expr.kind, expr.size

    own_curvature = "convex"
    own_smooth = False           # a kink at 0
    dcp_rule = "|x| is convex only for an affine x, a convex x >= 0 or a concave x <= 0"
    sign = "nonneg"

    def monotonicity(self, i):
        return monotone_in_sign(self.expr.sign)

    def get_data(self):
        return ()

    def copy(self, args):
        return Abs(args[0])

    def _numeric(self, env):
        return np.abs(self.expr.numeric(env))

    def backprop(self, env, upstream, grads):
        self.expr.backprop(env, np.sign(self.expr.numeric(env)) * np.asarray(upstream), grads)

    def render(self, n):
        return n.abs(self.expr.render(n))


class Inequality:
    """A constraint ``lhs <= rhs``. ``name`` labels it in results (default ``c0, c1, ...``)."""

    def __init__(self, lhs: Expr, rhs: Expr, name: str | None = None):
        if lhs.kind != "scalar" or rhs.kind != "scalar":
            bad = lhs if lhs.kind != "scalar" else rhs
            raise ExpressionTypeError(f"constraints compare scalars; {bad} is a {bad.kind} vector. "
                                      f"Use fm.max(...) to bound every entry")
        self.lhs, self.rhs, self.name = lhs, rhs, name

    def named(self, name: str) -> "Inequality":
        return Inequality(self.lhs, self.rhs, name)

    @property
    def expr(self) -> Expr:
        """``lhs - rhs`` (the constraint is ``expr <= 0``)."""
        return self.lhs - self.rhs

    def bound(self) -> float:
        """The right-hand side when it is a constant."""
        if self.rhs.curvature != "constant":
            raise ModelError(f"the right-hand side of {self} is not a constant")
        return float(self.rhs.constant_value())

    def __bool__(self):
        raise ExpressionTypeError("a constraint has no truth value; pass it to Problem(objective, [constraints])")

    def render(self, n: Notation) -> str:
        return f"{self.lhs.render(n)} {n.le()} {self.rhs.render(n)}"

    def __str__(self):
        return self.render(Notation())


class Minimize:
    """The objective of a problem: minimize a scalar expression."""

    def __init__(self, expr):
        expr = as_expr(expr)
        if expr.kind != "scalar":
            raise ExpressionTypeError(
                f"the objective must be a scalar; {expr} is a {expr.kind} vector of size {expr.size}. "
                f"Aggregate it with fm.max(...), fm.mean(...) or fm.sum(...)")
        self.expr = expr

    def __str__(self):
        return f"minimize {self.expr}"


def _fmt_g(v) -> str:
    return f"{float(v):.4g}"


def parameter(value: float, name: str, nonneg: bool = False) -> Parameter:
    """A named scalar parameter (e.g. a fairness budget) that ``Problem.sweep`` can vary."""
    return Parameter(value, name, nonneg=nonneg)


def multiply(vector, expr) -> Multiply:
    """The elementwise product of a fixed data vector with a per-sample (or per-group) expression."""
    return Multiply(vector, as_expr(expr))


def abs(expr) -> Abs:  # noqa: A001  (the language's abs, used as fm.abs)
    """|expr| elementwise (convex when expr is affine)."""
    return Abs(expr)


def same_data(a, b) -> bool:
    """Whether two atoms' ``get_data()`` agree (arrays by value, everything else by equality or identity)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is y:
            continue
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and np.array_equal(x, y)):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True
