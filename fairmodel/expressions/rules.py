"""The composition rules of the language: how kinds (scalar, per sample, per group, constant vector) combine
and how curvature propagates through sums and signs (disciplined convex programming, as in CVXPY)."""
from __future__ import annotations

from ..errors import ExpressionTypeError

CURVATURES = ("constant", "affine", "convex", "concave", "unknown")
VECTOR_KINDS = ("samples", "groups", "vector")


def kind_text(e) -> str:
    return e.kind if e.kind == "scalar" else f"{e.kind}[{e.size}]"


def combine_kinds(a, b, op: str = "+") -> tuple[str, int]:
    """The kind and size of an elementwise combination: scalars broadcast; a constant ``vector`` adopts the
    other side's kind; otherwise kinds and sizes must agree."""
    if a.kind == "scalar":
        return b.kind, b.size
    if b.kind == "scalar":
        return a.kind, a.size
    if a.size == b.size and (a.kind == b.kind or "vector" in (a.kind, b.kind)):
        return (b.kind if a.kind == "vector" else a.kind), a.size
    verb = "add" if op == "+" else "combine"
    raise ExpressionTypeError(f"cannot {verb} a {kind_text(a)} expression and a {kind_text(b)} expression: "
                              f"{a} {op} {b}")


def flip(curvature: str) -> str:
    return {"convex": "concave", "concave": "convex"}.get(curvature, curvature)


def sum_curvature(curvatures) -> str:
    """The curvature of a sum (DCP): constants drop out; convex + concave is unknown."""
    cs = set(curvatures) - {"constant"}
    if not cs:
        return "constant"
    if cs == {"affine"}:
        return "affine"
    if cs <= {"affine", "convex"}:
        return "convex"
    if cs <= {"affine", "concave"}:
        return "concave"
    return "unknown"
