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

from .atoms.aggregates import Max, Min
from .core import Abs, Add, Constant, Expr, Inequality, ScalarMul, same_data


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
    """The canonical form of an expression (see the module docstring): the arguments first, then the rewrite of
    the node's type (sums, scalar multiples, max and min), else the same atom over the canonical arguments."""
    if not e.args:
        return e
    args = tuple(canonicalize(a) for a in e.args)
    rewrite = REWRITES.get(type(e))
    if rewrite is not None:
        return rewrite(e, args)
    return e if all(a is b for a, b in zip(args, e.args)) else e.copy(args)


REWRITES = {
    ScalarMul: lambda e, args: _scale(e.c, args[0]),
    Add: lambda e, args: _sum(list(args), e.kind, e.size),
    Max: lambda e, args: _extremum(Max, args),
    Min: lambda e, args: _extremum(Min, args),
}


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
    """Whether two canonical trees are the same: same node types with the same data (constants by value, the
    leaves that state no data by identity) over the same arguments."""
    if type(a) is not type(b) or len(a.args) != len(b.args) or not same_data(a.get_data(), b.get_data()):
        return False
    return all(same_structure(x, y) for x, y in zip(a.args, b.args))


def constraint_pieces(lhs: Expr) -> list:
    """Expressions whose every entry must be <= the right-hand side, equivalent to ``lhs <= rhs``:
    ``max(a, b) <= r`` is ``a <= r`` and ``b <= r``, ``max(v) <= r`` is ``v <= r`` entrywise and ``|E| <= r``
    is ``E <= r`` and ``-E <= r`` (two one-sided inequalities: solvers handle them more reliably)."""
    split = PIECES.get(type(lhs))
    return split(lhs) if split is not None else [lhs]


PIECES = {
    Max: lambda e: list(e.args) if e.vector else [p for a in e.args for p in constraint_pieces(a)],
    Abs: lambda e: [e.expr, _scale(-1.0, e.expr)],
}
