"""The domains of :mod:`fairmodel.oracles.domains` as CVXPY constraints: one rule per domain type, in a table."""
from __future__ import annotations

import cvxpy as cp
import numpy as np

from ..errors import UnsupportedProblemError
from ..oracles.domains import Ball, Box, Product, Simplex, TruncatedCone


def _ball(d: Ball, var):
    return [cp.norm(var - d.center_, 2) <= d.radius] if np.isfinite(d.radius) else []


def _box(d: Box, var):
    out = []
    for bound, sign in ((d.lo, 1.0), (d.hi, -1.0)):
        keep = np.flatnonzero(np.isfinite(bound))
        if keep.size == d.dim:
            out.append(sign * var >= sign * bound)
        elif keep.size:
            out.append(sign * var[keep] >= sign * bound[keep])
    return out


def _simplex(d: Simplex, var):
    return [var >= 0, cp.sum(var) == 1]


def _cone(d: TruncatedCone, var):
    out = [cp.norm(var[:-1], 2) <= d.slope * var[-1], var[-1] <= d.alpha_max]
    if d.radius is not None:
        out.append(cp.norm(var[:-1], 2) <= d.radius)
    return out


def _product(d: Product, var):
    out, start = [], 0
    for p in d.parts:
        out += domain_constraints(p, var[start:start + p.dim])
        start += p.dim
    return out


DOMAIN_LOWERING = {Ball: _ball, Box: _box, Simplex: _simplex, TruncatedCone: _cone, Product: _product}


def domain_constraints(domain, var) -> list:
    """The domain as CVXPY constraints on ``var`` (a vector of length ``domain.dim``)."""
    rule = DOMAIN_LOWERING.get(type(domain))
    if rule is None:
        raise UnsupportedProblemError(f"the domain {domain!r} has no CVXPY form")
    return rule(domain, var)
