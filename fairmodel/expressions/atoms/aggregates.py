"""Aggregates: sample means (over all rows or a subset), group means, sums, and the piecewise-linear atoms
max, min and pos.

``mean`` and ``group_mean`` take ``where=``, a boolean mask over the rows: ``fm.group_mean(data.score(w),
data.groups, where=data.y > 0)`` is the vector of mean scores of the positives of every group (the linear
surrogate of equal opportunity of Donini et al. 2018).

Sample weights (``sample_weight=`` of a loss) are applied here, by the aggregate, because the normalization is
the aggregate's: ``mean`` over the rows S of ``where`` is ``sum_{i in S} w_i e_i / sum_{i in S} w_i`` (the
convention of scikit-learn and fairlearn), ``group_mean`` the same within each group, ``sum`` is
``sum_i w_i e_i``. The aggregate wraps its argument in the product ``u ⊙ e`` with ``u_i = w_i |S| / sum_S w`` (the
weight relative to the mean weight of the row's set), so its plain mean is the weighted mean and a minibatch
mean of ``u_i e_i`` over rows drawn uniformly in S is an unbiased estimate of it.
"""
from __future__ import annotations

import numpy as np

from ...data.dataset import Groups
from ...data.groups import group_means, relative_weights
from ...errors import DataError, ExpressionTypeError, ModelError, UnsupportedProblemError
from ...utilities.display import latex_text as _latex_text
from ..core import Expr, Multiply, as_expr, reject_parameters, sample_weights_of
from ..evaluate import Env
from ..notation import wrap
from ..rules import is_nonneg, is_nonpos, kind_text, sum_sign
from ..variables import binary_values, label_text


def _check_mask(where, n: int, what: str) -> np.ndarray | None:
    if where is None:
        return None
    mask = np.asarray(where)
    if mask.dtype != bool:
        raise ExpressionTypeError(f"{what}: where= must be a boolean mask over the rows (e.g. data.y > 0); got "
                                  f"dtype {mask.dtype}")
    if mask.shape != (n,):
        raise DataError(f"{what}: where= has shape {mask.shape} but the expression has {n} rows")
    if not mask.any():
        raise DataError(f"{what}: where= selects no row")
    mask = mask.copy()
    mask.setflags(write=False)
    return mask


def _labels(expr: Expr):
    """The labels of the rows of a per-sample expression (from the data of a score below it), or None."""
    for node in expr.nodes():
        y = getattr(getattr(node, "data", None), "y", None)
        if y is not None and np.size(y) == expr.size:
            return np.asarray(y)
    return None


def _row_set(n, where: np.ndarray, expr: Expr):
    """(text condition, LaTeX superscript of a labelled set, LaTeX name of another set) of the rows of a where=
    mask: named by the label when the mask selects one label (``y_i = +1``), else a numbered set S1, S2, ..."""
    y = _labels(expr)
    values = binary_values(y) if y is not None else None
    for v in values or ():
        if np.array_equal(where, y == v):
            value = label_text(v, values)
            return f"y_i = {value}", {"+1": "+", "-1": "-"}.get(value, value), None
    k = n.number_of("row set", hash(where.tobytes()))
    text, tex = f"S{k}", f"S_{{{k}}}"
    n.define(("row set", text), f"{text}: the rows selected by a where= mask ({int(where.sum()):,} rows)",
             f"${tex}$: the rows selected by a where= mask ({int(where.sum())} rows)", order=15)
    return f"i in {text}", None, tex


def _mean_text(sub: str, expr: Expr, n) -> str:
    return f"mean_{sub} " + wrap(expr.render(n), n, expr)


def _sum_tex(size: str, over: str, expr: Expr, n) -> str:
    return f"\\frac{{1}}{{{size}}}\\sum_{{{over}}} " + wrap(expr.render(n), n, expr)


def _per_sample(expr, what: str) -> Expr:
    if not isinstance(expr, Expr) or expr.kind != "samples":
        raise ExpressionTypeError(f"{what} needs a per-sample expression (a loss or a score); got {expr!r}")
    return expr


def _weighted(expr: Expr, codes: np.ndarray, what: str) -> Expr:
    """``expr`` times ``u_i = w_i n_c / W_c`` (n_c rows and total weight W_c in row i's set c = codes[i] >= 0; u_i
    = w_i on the rows of no set) when its losses carry sample weights; ``expr`` itself otherwise."""
    w = sample_weights_of(expr)
    if w is None:
        return expr
    u, count, total = relative_weights(w, codes)
    if np.any((count > 0) & (total <= 0)):
        raise DataError(f"{what}: the sample weights of {'a group' if count.size > 1 else 'its rows'} are all "
                        f"zero, so its weighted mean is undefined; drop that {'group' if count.size > 1 else 'mask'} "
                        f"or give its rows positive weights")
    return Multiply(u, expr, weighting=True)


class Mean(Expr):
    """The mean over samples (or over the rows where ``where`` holds) of a per-sample expression; the weighted
    mean ``sum w_i e_i / sum w_i`` when its losses carry ``sample_weight``."""

    def __init__(self, expr: Expr, where=None):
        expr = _per_sample(expr, "mean")
        self.where = _check_mask(where, expr.size, "mean")
        codes = np.zeros(expr.size, dtype=np.intp) if self.where is None else np.where(self.where, 0, -1)
        self.expr = expr = _weighted(expr, codes, "mean")
        self.count = expr.size if self.where is None else int(self.where.sum())
        self.args = (expr,)

    own_curvature = "affine"
    own_smooth = True

    def monotonicity(self, i):
        return "increasing"

    @property
    def sign(self):
        return self.expr.sign

    def get_data(self):
        return (self.where,)

    def copy(self, args):
        return Mean(args[0], self.where)

    def weights(self, env: Env) -> np.ndarray:
        """The weight of every evaluated row in the (estimated) mean: 1/count on the rows that count."""
        if self.where is None:
            n = self.expr.size if env.rows is None else len(env.rows)
            return np.full(n, 1.0 / n)
        mask = self.where if env.rows is None else self.where[env.rows]
        return mask / np.maximum(mask.sum(), 1)

    def _numeric(self, env):
        return float(self.weights(env) @ self.expr.numeric(env))

    def aggregated_rows(self):
        return (None if self.where is None else np.where(self.where, 0, -1)), 1

    def value_from_row_sums(self, sums):
        return float(sums[0] / np.maximum(self.count, 1))

    def backprop(self, env, upstream, grads):
        self.expr.backprop(env, upstream * self.weights(env), grads)

    def render(self, n):
        if self.where is None:
            if not n.latex:
                return _mean_text("i", self.expr, n)
            n.define("n", f"n = {self.expr.size}: the number of rows", f"$n = {self.expr.size}$: the number of rows",
                     order=2)
            return _sum_tex("n", "i=1}^{n", self.expr, n)
        cond, sign, other = _row_set(n, self.where, self.expr)
        if not n.latex:
            return _mean_text(f"(i: {cond})" if sign else f"(i in {cond[5:]})", self.expr, n)
        if sign:
            name = f"I^{{{sign}}}"
            n.define(("labelled rows", sign), "", f"${name} = \\{{i : {cond}\\}}$: the rows with ${cond}$", order=15)
        else:
            name = other
        return _sum_tex(f"|{name}|", f"i \\in {name}", self.expr, n)


class GroupMean(Expr):
    """The vector of group means (1/n_g) sum_{i in g} e_i of a per-sample expression (group risks), over the
    rows where ``where`` holds when given."""

    kind = "groups"

    def __init__(self, expr: Expr, groups, where=None):
        expr = _per_sample(expr, "group_mean")
        self.groups = Groups(groups)
        if len(self.groups) != expr.size:
            raise DataError(f"groups has {len(self.groups)} entries but the expression has {expr.size} samples")
        self.groups.require_nonempty("group_mean")
        self.where = _check_mask(where, expr.size, "group_mean")
        self.codes = self.groups.codes if self.where is None else np.where(self.where, self.groups.codes, -1)
        self.sizes = self.groups.sizes if self.where is None else \
            np.bincount(self.codes[self.codes >= 0], minlength=self.groups.n_groups)
        if np.any(self.sizes == 0):
            empty = [str(n) for n, s in zip(self.groups.names, self.sizes) if s == 0]
            raise DataError(f"group_mean: group(s) {', '.join(empty)} have no row where the mask holds")
        self.expr = expr = _weighted(expr, self.codes, "group_mean")
        self.args = (expr,)
        self.size = self.groups.n_groups

    own_curvature = "affine"
    own_smooth = True

    def monotonicity(self, i):
        return "increasing"

    @property
    def sign(self):
        return self.expr.sign

    def get_data(self):
        return (self.groups.codes, self.where)

    def copy(self, args):
        return GroupMean(args[0], self.groups, self.where)

    def row_codes(self, env: Env) -> np.ndarray:
        """The group of every evaluated row (-1 for rows outside ``where``)."""
        return self.codes if env.rows is None else self.codes[env.rows]

    def _counts(self, env):
        if env.rows is None:
            return self.sizes
        codes = self.row_codes(env)
        return np.bincount(codes[codes >= 0], minlength=self.size)

    def _numeric(self, env):
        return group_means(self.expr.numeric(env), self.row_codes(env), self.size, self._counts(env))

    def aggregated_rows(self):
        return self.codes, self.size

    def value_from_row_sums(self, sums):
        return np.asarray(sums, dtype=float) / self.sizes

    def backprop(self, env, upstream, grads):
        codes = self.row_codes(env)
        per_group = np.asarray(upstream) / np.maximum(self._counts(env), 1)
        self.expr.backprop(env, np.where(codes >= 0, per_group[np.maximum(codes, 0)], 0.0), grads)

    def render(self, n):
        group = _define_groups(n, self.groups, self.expr)
        if self.where is None:
            return n.pick(_mean_text(f"(i in {group})", self.expr, n),
                          _sum_tex(f"|{group}|", f"i \\in {group}", self.expr, n))
        cond, sign, other = _row_set(n, self.where, self.expr)
        if not n.latex:
            return _mean_text(f"(i in {group}, {cond})", self.expr, n)
        if sign:
            name = f"{group}^{{{sign}}}"
            n.define(("labelled group rows", group, sign), "", f"${name} = \\{{i \\in {group} : {cond}\\}}$: "
                                                                f"the rows of group $g$ with ${cond}$", order=15)
        else:
            name = f"{group} \\cap {other}"
        return _sum_tex(f"|{name}|", f"i \\in {name}", self.expr, n)


def _define_groups(n, groups: Groups, expr: Expr) -> str:
    """The name of the row sets of the groups (G_g; G2_g for a second grouping), defined in ``n``."""
    k = n.number_of("groups", (tuple(map(str, groups.names)), hash(groups.codes.tobytes())))
    text, tex = ("G", "G") if k == 1 else (f"G{k}", f"G^{{({k})}}")
    attribute = ""
    for node in expr.nodes():
        data = getattr(node, "data", None)
        if getattr(data, "has_groups", False) and np.array_equal(data.groups.codes, groups.codes):
            attribute = f" of {data.sensitive_name}" if data.sensitive_name else ""
            break
    listed = ", ".join(f"{name} ({size:,} rows)" for name, size in zip(groups.names, groups.sizes))
    n.define(("groups", text), f"{text}_g: the rows of group g, for the groups{attribute}: {listed}",
             f"${tex}_g$: the rows of group $g$, for the groups{_latex_text(attribute)}: {_latex_text(listed)}",
             order=10)
    return n.pick(f"{text}_g", f"{tex}_g")


class Sum(Expr):
    """The sum of the entries of a vector expression (for a per-sample expression: n times its mean)."""

    def __init__(self, expr):
        if isinstance(expr, (list, tuple)) and any(isinstance(e, Expr) for e in expr):
            raise ExpressionTypeError("fm.sum adds the entries of one vector expression; to add several expressions "
                                      "write a + b (or Python's sum([a, b]))")
        expr = as_expr(expr)
        reject_parameters(expr, "fm.sum")
        if expr.kind == "scalar":
            raise ExpressionTypeError(f"fm.sum adds the entries of a vector; {expr} is already a scalar")
        if expr.kind == "samples" and sample_weights_of(expr) is not None:     # sum_i w_i e_i
            expr = Multiply(sample_weights_of(expr), expr, weighting=True)
        self.expr, self.args = expr, (expr,)

    own_curvature = "affine"
    own_smooth = True

    def monotonicity(self, i):
        return "increasing"

    @property
    def sign(self):
        return self.expr.sign

    def get_data(self):
        return ()

    def copy(self, args):
        return Sum(args[0])

    def _scale(self, env) -> float:
        if self.expr.kind == "samples" and env.rows is not None:
            return self.expr.size / len(env.rows)     # an unbiased estimate from a minibatch of rows
        return 1.0

    def _numeric(self, env):
        return float(np.sum(self.expr.numeric(env))) * self._scale(env)

    def aggregated_rows(self):
        return (None, 1) if self.expr.kind == "samples" else None

    def value_from_row_sums(self, sums):
        return float(sums[0])

    def backprop(self, env, upstream, grads):
        v = self.expr.numeric(env)
        self.expr.backprop(env, np.full(np.shape(v)[0], upstream * self._scale(env)), grads)

    def render(self, n):
        body = wrap(self.expr.render(n), n, self.expr)
        i = self.expr.index()
        if not n.latex:
            return f"sum_{i} {body}"
        return ("\\sum_{i=1}^{n} " if i == "i" else f"\\sum_{{{i}}} ") + body


class _Extremum(Expr):
    """max or min of one vector expression, or of several scalar expressions."""

    name = ""
    pick = staticmethod(np.argmax)

    def __init__(self, *exprs):
        if len(exprs) == 1 and isinstance(exprs[0], (list, tuple)) and any(isinstance(e, Expr) for e in exprs[0]):
            exprs = tuple(exprs[0])      # fm.max([a, b]) is fm.max(a, b)
        exprs = tuple(as_expr(e) for e in exprs)
        for e in exprs:
            reject_parameters(e, f"fm.{self.name}")
        if len(exprs) == 1 and exprs[0].kind != "scalar":
            self.vector = True
        elif len(exprs) > 1 and all(e.kind == "scalar" for e in exprs):
            self.vector = False
        else:
            raise ExpressionTypeError(f"fm.{self.name} takes one vector expression (e.g. group risks) or several "
                                      f"scalar expressions; got {[kind_text(e) for e in exprs]}")
        if self.vector and exprs[0].kind == "samples" and sample_weights_of(exprs[0]) is not None:
            raise ModelError(f"fm.{self.name} over the rows of a loss with sample_weight would ignore the weights; "
                             f"aggregate it with fm.mean, fm.group_mean or fm.sum (which weigh the rows)")
        self.args = exprs

    def monotonicity(self, i):
        return "increasing"

    def get_data(self):
        return ()

    def copy(self, args):
        return type(self)(*args)

    def _stack(self, env):
        if self.vector:
            return np.asarray(self.args[0].numeric(env), dtype=float)
        return np.array([a.numeric(env) for a in self.args], dtype=float)

    def _numeric(self, env):
        v = self._stack(env)
        return float(v[self.pick(v)])

    def backprop(self, env, upstream, grads):
        v = self._stack(env)
        i = int(self.pick(v))
        if self.vector:
            e = np.zeros_like(v)
            e[i] = upstream
            self.args[0].backprop(env, e, grads)
        else:
            self.args[i].backprop(env, upstream, grads)

    def render(self, n):
        split = n.take_split()
        if self.vector:
            arg = self.args[0]
            i = arg.index()
            if not n.latex:
                return f"{self.name}_{i} [{arg.render(n)}]"
            body = arg.render(n)
            return f"\\{self.name}_{{{i}}} " + (n.bracket(body) if arg.is_sum else body)
        args = [a.render(n) for a in self.args]
        if split:
            return f"\\{self.name}\\Big\\{{" + ("," + n.breaks()).join(args) + "\\Big\\}"
        return n.pick(f"{self.name}(" + ", ".join(args) + ")",
                      f"\\{self.name}\\left\\{{" + ",\\ ".join(args) + "\\right\\}")


class Max(_Extremum):
    """The largest entry of a vector expression, or the largest of several scalar expressions (convex)."""

    name = "max"
    own_curvature = "convex"
    own_smooth = False          # a kink where two entries tie
    dcp_rule = "max is convex only of convex arguments"

    @property
    def sign(self):
        signs = [a.sign for a in self.args]
        return "nonneg" if any(is_nonneg(s) for s in signs) and not all(s == "zero" for s in signs) \
            else sum_sign(signs)


class Min(_Extremum):
    """The smallest entry of a vector expression, or the smallest of several scalar expressions (concave)."""

    name = "min"
    pick = staticmethod(np.argmin)
    own_curvature = "concave"
    own_smooth = False          # a kink where two entries tie
    dcp_rule = "min is concave only of concave arguments"

    @property
    def sign(self):
        signs = [a.sign for a in self.args]
        return "nonpos" if any(is_nonpos(s) for s in signs) and not all(s == "zero" for s in signs) \
            else sum_sign(signs)


class Pos(Expr):
    """max(e, 0) elementwise (convex when e is convex)."""

    def __init__(self, expr):
        expr = as_expr(expr)
        reject_parameters(expr, "fm.pos")
        self.expr, self.args = expr, (expr,)
        self.kind, self.size = expr.kind, expr.size

    own_curvature = "convex"
    own_smooth = False          # a kink at 0
    dcp_rule = "pos(x) is convex only for a convex x"
    sign = "nonneg"

    def monotonicity(self, i):
        return "increasing"

    def get_data(self):
        return ()

    def copy(self, args):
        return Pos(args[0])

    def _numeric(self, env):
        return np.maximum(self.expr.numeric(env), 0.0)

    def backprop(self, env, upstream, grads):
        active = (np.asarray(self.expr.numeric(env)) > 0).astype(float)
        self.expr.backprop(env, active * np.asarray(upstream), grads)

    def render(self, n):
        body = self.expr.render(n)
        return n.pick(f"max({body}, 0)", f"\\max\\left\\{{{body},\\ 0\\right\\}}")


class GroupOptimal(Expr):
    """R*_g = min_{w in W} R_g(w): the smallest achievable risk of every group (for MERO, eq. (4) of Yu et al.).

    A constant vector whose values are computed once, by exact per-group solves of the group-DRO reduction
    (:meth:`resolve`); the declaration itself never solves anything.
    """

    kind = "groups"

    def __init__(self, risks: Expr):
        if not isinstance(risks, GroupMean):
            raise ExpressionTypeError("group_optimal needs the group risks, fm.group_mean(loss, groups)")
        if not risks.is_convex() or len(risks.variables()) != 1:
            raise ModelError("group_optimal needs convex group risks of one Weights variable")
        self.risks = risks
        self.size = risks.size
        self._values: np.ndarray | None = None

    own_curvature = "constant"

    @property
    def resolved(self) -> bool:
        return self._values is not None

    def resolve(self, values) -> None:
        """Set the values R*_g (computed by the reduction that solves the per-group problems)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (self.size,) or not np.all(np.isfinite(values)):
            raise ModelError(f"group_optimal needs {self.size} finite values; got shape {values.shape}")
        values.setflags(write=False)
        self._values = values

    def variables(self):
        return []

    def constant_value(self) -> np.ndarray:
        if self._values is None:
            raise UnsupportedProblemError("fm.group_optimal(risks) has no value until a problem that uses it is "
                                          "solved or judged (its values come from exact per-group solves)")
        return self._values

    def _numeric(self, env):
        return self.constant_value()

    def backprop(self, env, upstream, grads):
        pass

    def render(self, n):
        n.define("R*", "R*_g = min over the weights' domain of the risk of group g alone (MERO, eq. (4) of Yu et al. "
                       "2024; computed by exact per-group solves)",
                 "$R^*_g = \\min_{w \\in W} R_g(w)$: the smallest risk of group $g$ alone (MERO, eq.~(4) of Yu et al. "
                 "2024; computed by exact per-group solves)")
        return n.pick("R*_g", "R^{*}_{g}")


# The public constructors. max, min and sum shadow Python's built-ins from here on: code of this module above
# uses NumPy (np.maximum, np.sum) for numbers, never the bare names.
def mean(expr: Expr, where=None) -> Mean:
    """Mean over samples of a per-sample expression (over the rows where the boolean mask ``where`` holds)."""
    return Mean(expr, where)


def group_mean(expr: Expr, groups, where=None) -> GroupMean:
    """Vector of per-group means (group risks) of a per-sample expression, over the rows in ``where``."""
    return GroupMean(expr, groups, where)


def group_optimal(risks: GroupMean) -> GroupOptimal:
    """Vector of the smallest achievable risk of each group, R*_g = min_w R_g(w) (for MERO)."""
    return GroupOptimal(risks)


def sum(expr) -> Sum:  # noqa: A001  (the language's sum, used as fm.sum)
    """The sum of the entries of a vector expression."""
    return Sum(expr)


def max(*exprs) -> Max:  # noqa: A001  (the language's max, used as fm.max)
    """Largest entry of a vector expression, or largest of several scalar expressions."""
    return Max(*exprs)


def min(*exprs) -> Min:  # noqa: A001  (the language's min, used as fm.min)
    """Smallest entry of a vector expression, or smallest of several scalar expressions."""
    return Min(*exprs)


def pos(expr) -> Pos:
    """max(expr, 0) elementwise."""
    return Pos(expr)

