"""The program object of the partial-fairness reduction (He, Huang, Yao, Lin 2025): the DC program (21) of a
canonical declaration (one block per constraint: models (13) and (17), ``fm.dc(g, h) <= b`` and convex
``c(w) <= b``), the max-constraint oracle of the switching-subgradient methods, and the checks of the IDCA
options."""
from __future__ import annotations

import numpy as np

from .. import expressions as E
from .._validate import check_int, check_number
from ..expressions.atoms.partial import DC, PartialDP, WeakPartialDP, check_kappa
from ..oracles.dc import DCProgram, ExprBlock, Layout
from ..oracles.dc_bands import RampBandBlock, WeakBandBlock


def max_constraint(program):
    """v -> (max_i f_i(v), a thunk for a subgradient of the maximizing f_i = g_i - h_i): the oracle of the
    switching-subgradient and Polyak feasibility steps."""
    def constraint(v):
        g, caches = program.plus(v)
        h, jac = program.minus(v)
        f = g - h
        i = int(np.argmax(f))
        return float(f[i]), (lambda: program.plus_grad(v, i, caches) - jac[i])
    return constraint


def positive_int(v, name, minimum=1):
    return check_int(v, name, minimum=minimum)


def nonneg(v, name, strict=False):
    return check_number(v, name, low=0.0, strict=strict)


def schedule(v, name, integer=False):
    """A number, a sequence (one value per outer iteration) or a callable k -> value, validated lazily."""
    check = (lambda x: positive_int(x, name)) if integer else (lambda x: nonneg(x, name, strict=True))
    if callable(v):
        return lambda k: check(v(k))
    if np.ndim(v) == 1:
        arr = [check(x) for x in np.asarray(v).tolist()]
        return lambda k: arr[min(k, len(arr) - 1)]
    value = check(v)
    return lambda k: value


def constraint_kind(c):
    """The block type of a canonical constraint ``lhs <= rhs`` as a tuple, or a string saying why it is not
    supported."""
    if c.rhs.curvature != "constant":
        return f"constraint {c.name}: the right-hand side {c.rhs} must be a constant"
    lhs = c.lhs
    if isinstance(lhs, PartialDP):
        return ("pdp", lhs, c)
    if isinstance(lhs, WeakPartialDP):
        return ("weak", lhs, c)
    if isinstance(lhs, DC):
        return ("expr", lhs.g, lhs.h, c)
    if any(isinstance(n, (PartialDP, WeakPartialDP, DC)) for n in lhs.nodes()):
        return (f"constraint {c.name}: partial_dp, weak_partial_dp and dc must stand alone on the left of "
                f"'<= constant' (got {lhs})")
    if lhs.is_convex():
        return ("expr", lhs, None, c)
    return f"constraint {c.name}: {lhs} has curvature {lhs.curvature!r}; write it as fm.dc(g, h) <= b"


def dc_program(problem, kinds) -> DCProgram:
    """The DC program (21) of a canonical problem whose constraints have the block types ``kinds``."""
    specs, aux = [], []
    for kind in kinds:
        tag, atom, c = kind[0], kind[1], kind[-1]
        if tag in ("pdp", "weak"):
            kappa = check_kappa(c.bound(), "partial_dp" if tag == "pdp" else "weak_partial_dp")
            if tag == "pdp":
                levels = atom.levels(kappa)
                aux.append((f"theta_{c.name}", levels.size))
                specs.append((tag, atom, kappa, levels, c.name))
            else:
                specs.append((tag, atom, kappa, c.name))
        else:
            specs.append((tag, kind[1], kind[2], c.bound(), c.name))
    layout = Layout(problem.canonical.variables(), aux)
    blocks = []
    for tag, *rest in specs:
        if tag == "pdp":
            blocks.append(RampBandBlock(*rest, layout))
        elif tag == "weak":
            blocks.append(WeakBandBlock(*rest, layout))
        else:
            blocks.append(ExprBlock(*rest, layout, E.value_and_grad))
    return DCProgram(problem.canonical.objective, blocks, layout, [k[-1].name for k in kinds], E.value_and_grad)
