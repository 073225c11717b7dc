"""The domains of :mod:`fairmodel.oracles.domains` as CVXPY constraints: one rule per domain type, in a table."""
from __future__ import annotations

import cvxpy as cp
import numpy as np

from ..errors import UnsupportedProblemError
from ..oracles.domains import Ball, Box, Product, ScaledTruncatedCone, Simplex, TruncatedCone


def ball_constraint(var, radius, center=None) -> list:
    """``[||var - center|| <= radius]`` (the Frobenius norm for a matrix variable), or ``[]`` without a radius:
    the one CVXPY form of every ball domain (weights, saddle-point blocks)."""
    if radius is None or not np.isfinite(radius):
        return []
    shifted = var if center is None else var - center
    return [cp.norm(shifted, "fro" if shifted.ndim == 2 else 2) <= radius]


def _ball(d: Ball, var):
    return ball_constraint(var, d.radius, d.center_)


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
    return [cp.norm(var[:-1], 2) <= d.slope * var[-1], var[-1] <= d.alpha_max] + ball_constraint(var[:-1], d.radius)


def _scaled_cone(d: ScaledTruncatedCone, var):
    size = cp.norm(cp.multiply(d.scale, var[:-1]), 2)
    return [size <= d.slope * var[-1], var[-1] <= d.alpha_max] + ([] if d.radius is None else [size <= d.radius])


def _product(d: Product, var):
    out, start = [], 0
    for p in d.parts:
        out += domain_constraints(p, var[start:start + p.dim])
        start += p.dim
    return out


DOMAIN_LOWERING = {Ball: _ball, Box: _box, Simplex: _simplex, TruncatedCone: _cone,
                    ScaledTruncatedCone: _scaled_cone, Product: _product}


def domain_constraints(domain, var) -> list:
    """The domain as CVXPY constraints on ``var`` (a vector of length ``domain.dim``)."""
    rule = DOMAIN_LOWERING.get(type(domain))
    if rule is None:
        raise UnsupportedProblemError(f"the domain {domain!r} has no CVXPY form")
    return rule(domain, var)
