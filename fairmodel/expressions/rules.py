"""The composition rules of the language: how kinds (scalar, per sample, per group, constant vector) combine, and
how curvature and sign follow from each atom's own facts (disciplined convex programming, as in CVXPY).

Every atom states three facts: its *own* curvature as a function of its arguments (``own_curvature``: affine,
convex, concave, constant or unknown), its monotonicity in each argument (``monotonicity(i)``: increasing,
decreasing or none, possibly depending on the argument's sign) and its sign. The curvature of a node then follows
from the DCP composition rule (:func:`dcp_curvature`): a convex atom is convex when each argument is affine, or
convex where the atom is increasing in it, or concave where it is decreasing; a concave atom symmetrically; an
affine atom is affine of affine arguments and otherwise convex or concave by the same rule. No atom writes its own
curvature rule, and the diagnosis of a non-convex expression (:mod:`.diagnose`) reads the same facts.
"""
from __future__ import annotations

from ..errors import ExpressionTypeError

CURVATURES = ("constant", "affine", "convex", "concave", "unknown")
SIGNS = ("zero", "nonneg", "nonpos", "unknown")
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


def flip_sign(sign: str) -> str:
    return {"nonneg": "nonpos", "nonpos": "nonneg"}.get(sign, sign)


def is_nonneg(sign: str) -> bool:
    return sign in ("zero", "nonneg")


def is_nonpos(sign: str) -> bool:
    return sign in ("zero", "nonpos")


def sum_sign(signs) -> str:
    """The sign of a sum (or of a mean with non-negative weights) of terms with these signs."""
    signs = list(signs)
    if all(s == "zero" for s in signs):
        return "zero"
    if all(is_nonneg(s) for s in signs):
        return "nonneg"
    if all(is_nonpos(s) for s in signs):
        return "nonpos"
    return "unknown"


def monotone_in_sign(sign: str) -> str:
    """The monotonicity of |x| (and of x^2) in x: increasing for x >= 0, decreasing for x <= 0."""
    return "increasing" if is_nonneg(sign) else "decreasing" if is_nonpos(sign) else "none"


def argument_fits(node, i: int, want: str) -> bool:
    """Whether argument ``i`` of ``node`` keeps ``node`` ``want`` ("convex" or "concave") by the DCP rule."""
    a = node.args[i]
    if a.is_affine():
        return True
    mono = node.monotonicity(i)
    same = a.is_convex() if want == "convex" else a.is_concave()
    other = a.is_concave() if want == "convex" else a.is_convex()
    return (mono == "increasing" and same) or (mono == "decreasing" and other)


def dcp_curvature(node) -> str:
    """The curvature of an atom from its own facts and its arguments' curvatures (the DCP composition rule)."""
    if not node.args:
        return node.own_curvature
    if all(a.curvature == "constant" for a in node.args):
        return "constant"
    own = node.own_curvature
    if own in ("constant", "unknown"):
        return own
    convex = own in ("convex", "affine") and all(argument_fits(node, i, "convex") for i in range(len(node.args)))
    concave = own in ("concave", "affine") and all(argument_fits(node, i, "concave") for i in range(len(node.args)))
    if convex and concave:
        return "affine"
    return "convex" if convex else "concave" if concave else "unknown"
