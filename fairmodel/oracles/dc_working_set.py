"""A working set of hinges for the IDCA subproblem (25): solve it exactly while the interior-point method only
sees the hinges near their kinks.

Every hinge pos(y_ir(v)) of (25) whose argument at the anchor is far from 0 keeps its sign over the short
step IDCA takes (the step shrinks as IDCA converges: after 15 outer iterations 2-9 % of the hinges lie within
the previous step's largest change of y, measured on Law School). The working-set program replaces

    pos(y) by y  where y(anchor) > r,      pos(y) by 0  where y(anchor) < -r,

and keeps the hinges with |y(anchor)| <= r. Since pos(y) >= y and pos(y) >= 0, each g_i only decreases: the
working-set program is a relaxation of (25), so its minimizer x is the minimizer of (25) as soon as every
replaced hinge keeps its sign at x (then g_i(x) is the same in both programs). Hinges that changed sign join
the working set and the program is solved again, warm (an active-set method: finitely many rounds, at most
every hinge). The replaced hinges fold into the linearization: sum_{r: y > r} y_ir(v) is affine in v.

The returned hinge weights u (1 on hinges replaced by y, 0 on those replaced by 0) and λ are a dual point of
the full (25), and the certificate is :func:`~fairmodel.oracles.dc_ipm.duality_gap` on the full program:
the same numbers as without a working set, from the exact full-data oracles.
"""
from __future__ import annotations

import numpy as np

from .dc_ipm import HingeProgram, HingeRows, duality_gap, solve_subproblem

MAX_ROUNDS = 8     # re-solves after sign changes before the full program is solved instead


def _restrict(prog: HingeProgram, Y, keep, S, c):
    """The working-set program: for each constraint the hinges ``keep`` (per block, (m_b, n) booleans); the
    others replaced by y (where Y > 0) or 0 (where Y <= 0), folded into (S, c). Returns (program, S', c')."""
    S, c = S.copy(), c.copy()
    blocks = []
    for b, y, k in zip(prog.blocks, Y, keep):
        positive = (y > 0) & ~k
        count = positive.sum(axis=1)
        folded = b.adjoint_each(positive.astype(float), prog.D)          # sum over the rows of e_ir, per constraint
        S[b.idx] -= folded / b.n
        c[b.idx] += count * b.cut / b.n
        for local, i in enumerate(b.idx):
            rows = np.flatnonzero(k[local])
            if rows.size:
                blocks.append(HingeRows(b.X[rows], b.wsl, [i], [b.j[local]], [b.cut[local]], n=b.n))
    return HingeProgram(prog.objective, blocks, prog.m, prog.D, complete=False), S, c


def _expand(prog, Y, keep, reduced, u_reduced):
    """The hinge weights of the full program: the working set's u, 1 on hinges replaced by y, 0 elsewhere."""
    u = [((y > 0) & ~k).astype(float) for y, k in zip(Y, keep)]
    where = {int(i): (bi, local) for bi, b in enumerate(prog.blocks) for local, i in enumerate(b.idx)}
    for rb, ur in zip(reduced.blocks, u_reduced):
        bi, local = where[int(rb.idx[0])]
        u[bi][local, keep[bi][local]] = ur[0]
    return u


def _restrict_warm(prog, keep, reduced, warm):
    lam, u_full = warm
    where = {int(i): (bi, local) for bi, b in enumerate(prog.blocks) for local, i in enumerate(b.idx)}
    u = []
    for rb in reduced.blocks:
        bi, local = where[int(rb.idx[0])]
        u.append(u_full[bi][local, keep[bi][local]][None, :])
    return lam, u


def solve_with_working_set(prog: HingeProgram, anchor, S, c, mu: float, radius: float | None, *,
                           tol: float = 1e-10, max_iter: int = 100, warm=None):
    """Solve (25) as :func:`~fairmodel.oracles.dc_ipm.solve_subproblem` does, the interior-point method seeing
    only the hinges with |y(anchor)| <= ``radius`` (all of them when ``radius`` is None).

    Returns ``(x, lam, u, info)`` as ``solve_subproblem`` (u over the full program), ``info`` with the working
    set's size (``working_set``, a fraction of the hinges), ``rounds`` and the certificate of the full program.
    """
    a = np.asarray(anchor, dtype=float)
    if radius is None:
        x, lam, u, info = solve_subproblem(prog, a, S, c, mu, tol=tol, max_iter=max_iter, warm=warm)
        return x, lam, u, dict(info, working_set=1.0, rounds=1)
    Y = [b.y(a) for b in prog.blocks]
    keep = [np.abs(y) <= radius for y in Y]
    total = sum(y.size for y in Y)
    iterations = 0
    for rounds in range(1, MAX_ROUNDS + 1):
        reduced, S_r, c_r = _restrict(prog, Y, keep, S, c)
        warm_r = _restrict_warm(prog, keep, reduced, warm) if warm is not None else None
        x, lam, u_r, info = solve_subproblem(reduced, a, S_r, c_r, mu, tol=tol, max_iter=max_iter, warm=warm_r)
        iterations += info["iterations"]
        u = _expand(prog, Y, keep, reduced, u_r)
        Yx = [b.y(x) for b in prog.blocks]
        # a replaced hinge whose sign changed: its y joined pos(y) = y or 0 wrongly; add it (and its neighbours)
        flipped = [~k & ((y > 0) != (yx > 0)) & (yx != 0) for y, yx, k in zip(Y, Yx, keep)]
        if info["status"] != "optimal" or not any(f.any() for f in flipped):
            break
        keep = [k | f | (np.abs(yx) <= radius) for k, f, yx in zip(keep, flipped, Yx)]
        warm = (lam, u)
    else:
        x, lam, u, info = solve_subproblem(prog, a, S, c, mu, tol=tol, max_iter=max_iter, warm=(lam, u))
        iterations += info["iterations"]
        keep = [np.ones_like(k) for k in keep]
    cert = duality_gap(prog, x, lam, u, a, S, c, mu)
    share = sum(int(k.sum()) for k in keep) / max(total, 1)
    return x, lam, u, {**info, **cert, "iterations": iterations, "working_set": share, "rounds": rounds}
