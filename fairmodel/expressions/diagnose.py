"""Why an expression is not convex: the deepest node whose composition rule fails, named with the rule.

Curvature composes bottom-up (CVXPY's disciplined convex programming): a node's curvature is unknown when one of
its rules fails even though its children are fine, or when a child's is. :func:`explain` walks down to the first
node that breaks a rule and says which: ``|x|`` needs an affine x, ``max`` convex arguments, ``min`` concave ones,
``pos`` a convex argument, a loss an affine score, a sum no convex and concave terms together, a product with a
data vector of mixed signs an affine factor. Used in the errors of the reductions that need convexity.
"""
from __future__ import annotations

from .atoms.aggregates import Max, Min, Pos
from .atoms.losses import Loss
from .core import Abs, Add, Expr, Multiply, ScalarMul


def _rule(node: Expr) -> str | None:
    """The rule ``node`` breaks given its children's curvatures, or None."""
    curv = [a.curvature for a in node.args]
    if isinstance(node, Abs) and not node.expr.is_affine():
        return f"|x| is convex only for an affine x; x = {node.expr} is {curv[0]}"
    if isinstance(node, Max) and not all(a.is_convex() for a in node.args):
        bad = next(a for a in node.args if not a.is_convex())
        return f"max is convex only of convex arguments; {bad} is {bad.curvature}"
    if isinstance(node, Min) and not all(a.is_concave() for a in node.args):
        bad = next(a for a in node.args if not a.is_concave())
        return f"min is concave only of concave arguments; {bad} is {bad.curvature}"
    if isinstance(node, Pos) and not node.expr.is_convex():
        return f"pos(x) is convex only for a convex x; x = {node.expr} is {curv[0]}"
    if isinstance(node, Loss) and not node.score.is_affine():
        return f"a loss is convex in w only of an affine score; {node.score} is {curv[0]}"
    if isinstance(node, Add) and {"convex", "concave"} <= set(curv):
        vex = next(a for a in node.args if a.curvature == "convex")
        cave = next(a for a in node.args if a.curvature == "concave")
        return f"a sum of a convex term ({vex}) and a concave term ({cave}) has no known curvature"
    if isinstance(node, Multiply) and node.curvature == "unknown":
        return (f"a data vector with entries of both signs times {node.expr} ({curv[0]}) has no known curvature; "
                f"only an affine factor may meet a vector of mixed signs")
    return None


def explain(expr: Expr, want: str = "convex") -> str:
    """A sentence saying why ``expr`` is not ``want`` ("convex" or "concave"), naming the offending node."""
    node = expr
    while True:
        child = next((a for a in node.args if a.curvature == "unknown"), None)
        if child is None:
            break
        node = child
    rule = _rule(node) if node.curvature == "unknown" else None
    if rule is not None:
        where = "" if node is expr else f" (inside {expr})"
        return f"{node} has unknown curvature: {rule}{where}"
    if expr.curvature == "unknown":
        return f"{expr} has unknown curvature ({type(expr).__name__} of {[a.curvature for a in expr.args]})"
    sign = " (a negative multiple flips the curvature)" if isinstance(expr, ScalarMul) and expr.c < 0 else ""
    return f"{expr} is {expr.curvature}, not {want}{sign}"
