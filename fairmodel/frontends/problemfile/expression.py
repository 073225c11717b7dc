"""DSL expressions written in a problem file, e.g. ``objective = "mean(loss) + 0.01 * sum_squares(w)"``.

The text is parsed with :mod:`ast` and walked node by node: only numbers, text (as a keyword value), the names of
:data:`NAMES`, calls of the atoms in :data:`FUNCTIONS` (with keyword arguments), ``+ - * /``, unary minus, the
comparisons ``<=`` / ``>=`` (a constraint) and, on the labels, ``y > 0``, ``y == 1``, ``&``, ``|``, ``~`` (a row mask
for ``where=``) are allowed. Anything else (attributes, subscripts, lambdas, other names) is refused with what is
allowed; nothing is ever passed to ``eval``.
"""
from __future__ import annotations

import ast
import operator

import numpy as np

from ... import expressions as dsl
from ...errors import FairmodelError, ModelError
from ...expressions.atoms.auc import auc_gap, auc_loss
from ...expressions.core import Expr, Inequality
from ...utilities import display

FUNCTIONS = {
    "mean": dsl.mean, "group_mean": dsl.group_mean, "sum": dsl.sum, "max": dsl.max, "min": dsl.min,
    "abs": dsl.abs, "pos": dsl.pos, "sum_squares": dsl.sum_squares, "norm": dsl.norm,
    "logistic_loss": dsl.logistic_loss, "hinge_loss": dsl.hinge_loss, "squared_loss": dsl.squared_loss,
    "equal_opportunity_gap": dsl.equal_opportunity_gap, "equalized_odds_gap": dsl.equalized_odds_gap,
    "auc_gap": auc_gap, "auc_loss": auc_loss, "group_optimal": dsl.group_optimal,
    "selection_rate_gap": dsl.selection_rate_gap,
}
NAMES = {"w": "the weights (fm.Weights of [model])", "score": "the linear score data.score(w)",
         "loss": "the per-sample loss of [problem] loss", "y": "the labels (for masks: y > 0)",
         "groups": "the groups of [data] sensitive", "data": "the data set (for equal_opportunity_gap(score, data))"}
MAX_LENGTH = 2000
MAX_DEPTH = 50       # levels of the syntax tree (each is one or two levels of the DSL, which allows 100)
MAX_INTEGER = 2 ** 63     # TOML's own limit on integers (64-bit)
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
               ast.BitAnd: operator.and_, ast.BitOr: operator.or_}
_COMPARE = {ast.LtE: operator.le, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.Gt: operator.gt,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}


def allowed() -> str:
    return (f"numbers, the names {', '.join(NAMES)}, calls of {', '.join(FUNCTIONS)} (keyword arguments allowed), "
            f"+ - * /, <= and >= (constraints), and masks on the labels (y > 0, y == 1, &, |, ~)")


def evaluate(text: str, names: dict):
    """The value of the expression ``text`` with ``names`` (name -> DSL node, array or data set) in scope."""
    if not isinstance(text, str) or not text.strip():
        raise ModelError("an expression must be non-empty text")
    if len(text) > MAX_LENGTH:
        raise ModelError(f"the expression has {len(text)} characters; at most {MAX_LENGTH}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ModelError(f"not a valid expression ({exc.msg} at column {exc.offset})") from None
    except (RecursionError, MemoryError):
        raise ModelError(f"the expression nests too deeply to be read; at most {MAX_DEPTH} levels") from None
    levels = _depth(tree.body)
    if levels > MAX_DEPTH:
        raise ModelError(f"the expression nests {levels} levels deep (calls in calls, or operators); at most "
                         f"{MAX_DEPTH}: a sum a + b + c is one level per term, so write long sums with sum(...) or "
                         f"split the expression")
    try:
        return _Walker(names).visit(tree.body)
    except (FairmodelError, ValueError, TypeError) as exc:   # a refused construct, or an atom's own check
        raise ModelError(str(exc)) from None


class _Walker:
    def __init__(self, names: dict):
        self.names = names

    def visit(self, node):
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise ModelError(f"{_shown(node)} is not allowed in a problem-file expression; allowed are "
                                  f"{allowed()}")
        return method(node)

    def _Constant(self, node):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float, str)):
            raise ModelError(f"the constant {display.short(repr(node.value))} is not allowed (numbers and text only)")
        if isinstance(node.value, int) and abs(node.value) >= MAX_INTEGER:
            raise ModelError(f"the integer {display.short(str(node.value)[:40])} ({len(str(abs(node.value)))} digits) "
                             f"is too large; numbers in an expression must be below 2**63 in magnitude (write 1e12, "
                             f"not 1000000000000...)")
        return node.value

    def _Name(self, node):
        if node.id in self.names:
            return self.names[node.id]
        if node.id in FUNCTIONS:
            raise ModelError(f"{node.id} is a function: call it, e.g. {node.id}(...)")
        raise ModelError(f"unknown name {node.id!r}; the names are {', '.join(self.names)} ({allowed()})")

    def _UnaryOp(self, node):
        value = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Invert) and isinstance(value, np.ndarray) and value.dtype == bool:
            return ~value
        raise ModelError(f"{_shown(node)}: only -, + and ~ (on a mask) are allowed as unary operators")

    def _BinOp(self, node):
        op = _ARITHMETIC.get(type(node.op))
        if op is None:
            raise ModelError(f"{_shown(node)}: the operator is not allowed; use + - * / (and & | on masks)")
        left, right = self.visit(node.left), self.visit(node.right)
        if op in (operator.and_, operator.or_) and not (_is_mask(left) and _is_mask(right)):
            raise ModelError(f"{_shown(node)}: & and | combine row masks (e.g. (y > 0) & (y < 2))")
        return op(left, right)

    def _Compare(self, node):
        if len(node.ops) != 1:
            raise ModelError(f"{_shown(node)}: one comparison at a time")
        op = type(node.ops[0])
        left, right = self.visit(node.left), self.visit(node.comparators[0])
        if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
            return _COMPARE[op](np.asarray(left), right)            # a row mask, e.g. y > 0
        if op not in (ast.LtE, ast.GtE):
            raise ModelError(f"{_shown(node)}: a constraint is written with <= or >=")
        return _COMPARE[op](dsl.as_expr(left), right)

    def _Call(self, node):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ModelError(f"{_shown(node.func)} cannot be called; the functions are {', '.join(FUNCTIONS)}")
        args = [self.visit(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise ModelError(f"{_shown(node)}: ** arguments are not allowed")
            if kw.arg in kwargs:
                raise ModelError(f"{_shown(node)}: the keyword {kw.arg}= is given twice; give it once (combine "
                                 f"row masks with & or |, e.g. where=(y > 0) & (y < 2))")
            kwargs[kw.arg] = self.visit(kw.value)
        return FUNCTIONS[node.func.id](*args, **kwargs)


def _depth(tree) -> int:
    """The depth of a syntax tree, without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(node))
    return deepest


def _is_mask(v) -> bool:
    return isinstance(v, np.ndarray) and v.dtype == bool


def _shown(node) -> str:
    try:
        return repr(ast.unparse(node))
    except Exception:   # noqa: BLE001  (only for the message)
        return type(node).__name__


def objective_of(text: str, names: dict) -> Expr:
    value = evaluate(text, names)
    if not isinstance(value, Expr) or value.kind != "scalar":
        raise ModelError("the objective must be a scalar expression, e.g. mean(loss) or max(group_mean(loss, "
                              "groups))")
    return value


def constraint_of(text: str, names: dict) -> Inequality:
    value = evaluate(text, names)
    if not isinstance(value, Inequality):
        raise ModelError("a constraint must compare with <= or >=, e.g. max(group_mean(loss, groups)) <= 0.4")
    return value
