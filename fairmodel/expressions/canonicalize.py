"""The canonical form of a declaration: equivalent trees become equal before any reduction looks at them.

Rules (each returns a new tree; the user's tree is never modified):

* sums are flattened (``(a + b) + c`` is one sum of three terms) and their constant terms folded into one,
  placed last and dropped when it is zero (``x + 0``, ``x - 0.0`` are ``x``);
* scalar multiples are normalized: ``1.0 * x`` is ``x``, ``c1 * (c2 * x)`` is ``(c1 c2) * x``, a multiple of
  a sum is distributed over its terms, a multiple of a constant is folded;
* positive multiples and constant scalar offsets move out of ``max`` and ``min`` (``max(2 x + 1) = 2 max(x) + 1``
  for a vector x), and nested ``max`` / ``min`` of scalars are flattened;
* a constraint ``lhs <= rhs`` becomes ``(non-constant terms of lhs - rhs) <= (constant terms)``; constraints
  of family atoms with their own form (e.g. ``fm.dp_gap(post) <= eps``) are kept as declared.

Parameters are kept symbolic (never folded), so a compiled program still sees them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .atoms.aggregates import GroupMean, Max, Mean, Min, Pos, Sum
from .core import Abs, Add, Constant, Expr, Inequality, Multiply, Parameter, ScalarMul


@dataclass
class CanonicalProblem:
    """The canonical objective expression, the canonical constraints (named as declared) and the options."""

    objective: Expr
    constraints: tuple
    options: dict

    def variables(self) -> list:
        out: list = []
        for e in [self.objective] + [c.lhs for c in self.constraints]:
            for v in e.variables():
                if v not in out:
                    out.append(v)
        return out


def canonical_problem(objective: Expr, constraints, options: dict) -> CanonicalProblem:
    return CanonicalProblem(canonicalize(objective), tuple(canonical_constraint(c) for c in constraints),
                            dict(options))


def _is_number(e: Expr) -> bool:
    return isinstance(e, Constant)


def _zero_like(e: Expr) -> Constant:
    if e.kind == "scalar":
        return Constant(0.0)
    return Constant(np.zeros(e.size), kind=e.kind)


def _fold(constants: list, kind: str | None) -> Constant | None:
    total = None
    for c in constants:
        v = np.asarray(c.constant_value(), dtype=float)
        total = v if total is None else total + v
    if total is None:
        return None
    if np.ndim(total) == 0:
        return Constant(float(total))
    return Constant(total, kind=kind if kind not in (None, "scalar") else "vector")


def _sum(terms: list, kind: str, size: int) -> Expr:
    flat: list = []
    for t in terms:
        flat += list(t.args) if isinstance(t, Add) else [t]
    variable = [t for t in flat if not _is_number(t)]
    constant = _fold([t for t in flat if _is_number(t)], kind)
    keeps_kind = any(t.kind == kind and t.size == size for t in variable) or kind == "scalar"
    if constant is not None and not np.any(constant.constant_value()) and keeps_kind:
        constant = None
    parts = variable + ([constant] if constant is not None else [])
    if not parts:
        return _zero_like(_Shape(kind, size))
    return parts[0] if len(parts) == 1 else Add(*parts)


class _Shape:
    def __init__(self, kind, size):
        self.kind, self.size = kind, size


def _scale(c: float, e: Expr) -> Expr:
    if c == 0:
        return _zero_like(e)
    if c == 1:
        return e
    if isinstance(e, Constant):
        return Constant(c * np.asarray(e.constant_value(), dtype=float),
                        kind=None if e.kind == "scalar" else e.kind)
    if isinstance(e, ScalarMul):
        return _scale(c * e.c, e.expr)
    if isinstance(e, Add):
        return _sum([_scale(c, t) for t in e.args], e.kind, e.size)
    return ScalarMul(c, e)


def _peel(e: Expr):
    """(scale > 0, core, scalar offset) with e = scale * core + offset, to move out of max / min."""
    terms = list(e.args) if isinstance(e, Add) else [e]
    offset = sum(float(t.constant_value()) for t in terms if _is_number(t) and t.kind == "scalar")
    rest = [t for t in terms if not (_is_number(t) and t.kind == "scalar")]
    moving = [t for t in rest if not _is_number(t)]
    scale = 1.0
    if len(moving) == 1 and isinstance(moving[0], ScalarMul) and moving[0].c > 0:
        scale = moving[0].c
        rest = [moving[0].expr if t is moving[0] else _scale(1.0 / scale, t) for t in rest]
    core = rest[0] if len(rest) == 1 else _sum(rest, e.kind, e.size)
    return scale, core, offset


def _extremum(cls, args: tuple) -> Expr:
    if len(args) == 1:                       # max / min over the entries of one vector
        scale, core, offset = _peel(args[0])
        out = _scale(scale, cls(core))
        return _sum([out, Constant(offset)], "scalar", 1) if offset else out
    flat: list = []
    for a in args:
        flat += list(a.args) if isinstance(a, cls) and not a.vector else [a]
    return cls(*flat)


def canonicalize(e: Expr) -> Expr:
    """The canonical form of an expression (see the module docstring)."""
    if isinstance(e, (Constant, Parameter)) or not e.args:
        return e
    if isinstance(e, ScalarMul):
        return _scale(e.c, canonicalize(e.expr))
    if isinstance(e, Add):
        return _sum([canonicalize(t) for t in e.args], e.kind, e.size)
    if isinstance(e, (Max, Min)):
        return _extremum(type(e), tuple(canonicalize(a) for a in e.args))
    args = tuple(canonicalize(a) for a in e.args)
    if all(a is b for a, b in zip(args, e.args)):
        return e
    return rebuild(e, args)


def rebuild(e: Expr, args: tuple) -> Expr:
    """``e`` with new (equivalent) children, for the atoms whose children may need canonicalizing."""
    if isinstance(e, Multiply):
        return Multiply(e.a, args[0], weighting=e.weighting)
    if isinstance(e, Abs):
        return Abs(args[0])
    if isinstance(e, Pos):
        return Pos(args[0])
    if isinstance(e, Sum):
        return Sum(args[0])
    if isinstance(e, Mean):
        return Mean(args[0], e.where)
    if isinstance(e, GroupMean):
        return GroupMean(args[0], e.groups, e.where)
    return e     # family atoms keep their own children (their structure is what their reductions read)


def canonical_constraint(c: Inequality) -> Inequality:
    """``(non-constant terms) <= (constant terms)`` with the constraint's name; family forms are kept."""
    if type(c) is not Inequality:
        return c
    diff = canonicalize(Add(c.lhs, ScalarMul(-1.0, c.rhs)))
    terms = list(diff.args) if isinstance(diff, Add) else [diff]
    fixed = [t for t in terms if t.curvature == "constant" and not t.variables()]
    moving = [t for t in terms if t not in fixed]
    lhs = _sum(moving, "scalar", 1) if moving else Constant(0.0)
    rhs = canonicalize(_scale(-1.0, _sum(fixed, "scalar", 1))) if fixed else Constant(0.0)
    return Inequality(lhs, rhs, c.name)


def same_structure(a: Expr, b: Expr) -> bool:
    """Whether two canonical trees are the same: same node types, same constants, same leaves (by identity)."""
    if type(a) is not type(b) or len(a.args) != len(b.args):
        return False
    if isinstance(a, Constant):
        return np.array_equal(a.constant_value(), b.constant_value())
    if isinstance(a, ScalarMul) and a.c != b.c:
        return False
    if not a.args:
        return a is b
    if isinstance(a, (Mean, GroupMean, Multiply, Sum, Abs, Pos, Max, Min, Add, ScalarMul)):
        return all(same_structure(x, y) for x, y in zip(a.args, b.args))
    return a is b


def constraint_pieces(lhs: Expr) -> list:
    """Expressions whose every entry must be <= the right-hand side, equivalent to ``lhs <= rhs``:
    ``max(a, b) <= r`` is ``a <= r`` and ``b <= r``, ``max(v) <= r`` is ``v <= r`` entrywise and ``|E| <= r``
    is ``E <= r`` and ``-E <= r`` (two one-sided inequalities: solvers handle them more reliably)."""
    if isinstance(lhs, Max):
        return list(lhs.args) if lhs.vector else [p for a in lhs.args for p in constraint_pieces(a)]
    if isinstance(lhs, Abs):
        return [lhs.expr, _scale(-1.0, lhs.expr)]
    return [lhs]
