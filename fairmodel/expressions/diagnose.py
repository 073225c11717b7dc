"""Why an expression is not convex: the deepest node whose composition rule fails, named with the rule.

Curvature composes bottom-up by the DCP rule of :mod:`.rules` from each atom's facts (its own curvature, its
monotonicity in each argument, the signs). :func:`explain` walks down to the first node whose rule fails although
its arguments have a known curvature, and names the argument that breaks it with the atom's rule in words
(``dcp_rule``): ``|x|`` needs an affine x (or one of known sign), ``max`` convex arguments, ``min`` concave ones,
``pos`` a convex argument, a loss an affine score, a sum no convex and concave terms together, a product with a data
vector of mixed signs an affine factor. Used in the errors of the reductions that need convexity.
"""
from __future__ import annotations

from .core import Expr
from .rules import argument_fits


def _rule(node: Expr) -> str | None:
    """The rule ``node`` breaks given its arguments' curvatures (naming the arguments that break it), or None."""
    if node.own_curvature == "unknown":
        return f"{type(node).__name__} has no known curvature in the weights"
    wants = [w for w in ("convex", "concave") if node.own_curvature in (w, "affine")]
    breaking = [next((a for i, a in enumerate(node.args) if not argument_fits(node, i, want)), None)
                for want in wants]
    breaking = list(dict.fromkeys(a for a in breaking if a is not None))
    if not breaking:
        return None
    rule = node.dcp_rule or f"{type(node).__name__} is {node.own_curvature} in its arguments"
    which = " and ".join(f"{a} is {a.curvature}" + ("" if a.sign == "unknown" or a.is_affine() else f" ({a.sign})")
                         for a in breaking)
    return f"{rule}; {which}"


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
    flips = any(expr.monotonicity(i) == "decreasing" for i in range(len(expr.args)))
    sign = " (a decreasing atom, such as a negative multiple, flips the curvature)" if flips else ""
    return f"{expr} is {expr.curvature}, not {want}{sign}"
