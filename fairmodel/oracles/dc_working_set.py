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
from scipy import sparse

from .dc_ipm import HingeProgram, duality_gap, solve_subproblem

MAX_ROUNDS = 8     # re-solves after sign changes before the full program is solved instead


class HingePairs:
    """Some hinges of many constraints as one flat block (the :class:`~fairmodel.oracles.dc_ipm.HingeRows`
    interface with 1-d arrays over the pairs): pair p is the hinge of constraint ``idx[local[p]]`` on the row
    ``X[p]`` (rows repeat when they belong to several constraints), y_p(v) = X_p . v[wsl] - v[j] - cut, and
    f+_i sums its pairs over ``n_each[i]`` (the constraint's full row count)."""

    def __init__(self, X, wsl: slice, idx, local, j, cut, n_each):
        self.X, self.wsl = np.asarray(X, dtype=float), wsl
        self.idx, self.local = np.asarray(idx, dtype=int), np.asarray(local, dtype=int)
        self.j, self.cut, self.n_each = np.asarray(j, dtype=int), np.asarray(cut, float), np.asarray(n_each, float)
        self.has_j = self.j[self.local] >= 0
        self.j_pair = np.where(self.has_j, self.j[self.local], 0)
        self.cut_pair = self.cut[self.local]
        m_b, N = self.idx.size, self.local.size
        self.sum_matrix = sparse.csr_matrix((np.ones(N), (self.local, np.arange(N))), shape=(m_b, N))

    def expand(self, per_constraint) -> np.ndarray:
        return np.asarray(per_constraint)[self.idx][self.local]

    def per_constraint(self, V) -> np.ndarray:
        return np.bincount(self.local, weights=V, minlength=self.idx.size)

    def expand_cut(self) -> np.ndarray:
        return self.cut_pair

    def y(self, v) -> np.ndarray:
        return self.X @ v[self.wsl] - np.where(self.has_j, v[self.j_pair], 0.0) - self.cut_pair

    def apply(self, dv) -> np.ndarray:
        return self.X @ dv[self.wsl] - np.where(self.has_j, dv[self.j_pair], 0.0)

    def adjoint_each(self, V, D: int) -> np.ndarray:
        out = np.zeros((self.idx.size, D))
        out[:, self.wsl] = self.sum_matrix @ (V[:, None] * self.X)
        rows = np.flatnonzero(self.j >= 0)
        out[rows, self.j[rows]] -= self.per_constraint(V)[rows]
        return out

    def adjoint(self, V, D: int) -> np.ndarray:
        out = np.zeros(D)
        out[self.wsl] = self.X.T @ V
        out -= np.bincount(self.j_pair[self.has_j], weights=V[self.has_j], minlength=D)
        return out

    def add_gram(self, Psi, K) -> None:
        PX = Psi[:, None] * self.X
        K[self.wsl, self.wsl] += self.X.T @ PX
        C = self.sum_matrix @ PX
        sums = self.per_constraint(Psi)
        for i in np.flatnonzero(self.j >= 0):
            j = self.j[i]
            K[self.wsl, j] -= C[i]
            K[j, self.wsl] -= C[i]
            K[j, j] += sums[i]

    def plus(self, v) -> np.ndarray:
        return self.per_constraint(np.maximum(self.y(v), 0.0)) / self.n_each


def _restrict(prog: HingeProgram, Y, keep, S, c):
    """The working-set program: the hinges ``keep`` (per block, (m_b, n) booleans) as one :class:`HingePairs`
    block; the others replaced by y (where Y > 0) or 0 (where Y <= 0), folded into (S, c).
    Returns (program, S', c')."""
    S, c = S.copy(), c.copy()
    parts = {}
    for b, y, k in zip(prog.blocks, Y, keep):
        positive = (y > 0) & ~k
        S[b.idx] -= b.adjoint_each(positive.astype(float), prog.D) / b.n_each[:, None]
        c[b.idx] += positive.sum(axis=1) * b.cut / b.n_each
        local, rows = np.nonzero(k)
        parts.setdefault((b.wsl.start, b.wsl.stop), []).append((b.X[rows], b.idx[local]))
    j, cut, n_each = np.empty(prog.m, int), np.empty(prog.m), np.empty(prog.m)
    for b in prog.blocks:
        j[b.idx], cut[b.idx], n_each[b.idx] = b.j, b.cut, b.n_each
    blocks = []
    for (lo, hi), part in parts.items():         # one flat block per score (its weights' slice)
        cons = np.concatenate([i for _, i in part])
        if cons.size:
            idx, local = np.unique(cons, return_inverse=True)
            blocks.append(HingePairs(np.concatenate([x for x, _ in part]), slice(lo, hi), idx, local, j[idx],
                                     cut[idx], n_each[idx]))
    return HingeProgram(prog.objective, blocks, prog.m, prog.D, complete=False), S, c


def _expand(prog, Y, keep, reduced, u_reduced):
    """The hinge weights of the full program: the working set's u, 1 on hinges replaced by y, 0 elsewhere."""
    u = [((y > 0) & ~k).astype(float) for y, k in zip(Y, keep)]
    for pairs, flat in zip(reduced.blocks, u_reduced):
        offset = 0
        for b, ub, k in zip(prog.blocks, u, keep):
            if b.wsl == pairs.wsl:
                count = int(k.sum())
                ub[k] = flat[offset:offset + count]
                offset += count
    return u


def _restrict_warm(prog, keep, reduced, warm):
    lam, u_full = warm
    return lam, [np.concatenate([ub[k] for b, ub, k in zip(prog.blocks, u_full, keep) if b.wsl == pairs.wsl])
                 for pairs in reduced.blocks]


def solve_with_working_set(prog: HingeProgram, anchor, S, c, mu: float, radius: float | None, *,
                           tol: float = 1e-10, max_iter: int = 100, warm=None):
    """Solve (25) as :func:`~fairmodel.oracles.dc_ipm.solve_subproblem` does, the interior-point method seeing
    only the hinges with |y(anchor)| <= ``radius`` (all of them when ``radius`` is None).

    Returns ``(x, lam, u, info)`` as ``solve_subproblem`` (u over the full program), ``info`` with the working
    set's size (``working_set``, a fraction of the hinges), ``rounds``, the certificate of the full program and
    ``hinge_change``, the largest change of a hinge argument from the anchor to x.
    """
    a = np.asarray(anchor, dtype=float)
    Y = [b.y(a) for b in prog.blocks]
    if radius is None:
        x, lam, u, info = solve_subproblem(prog, a, S, c, mu, tol=tol, max_iter=max_iter, warm=warm)
        return x, lam, u, dict(info, working_set=1.0, rounds=1, hinge_change=_largest_change(prog, Y, x))
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
    return x, lam, u, {**info, **cert, "iterations": iterations, "working_set": share, "rounds": rounds,
                       "hinge_change": _largest_change(prog, Y, x)}


def _largest_change(prog, Y, x) -> float:
    """max over the hinges of |y(x) - y(anchor)| (``Y``: the arguments at the anchor): the next radius."""
    return max((float(np.max(np.abs(b.y(x) - y), initial=0.0)) for b, y in zip(prog.blocks, Y)), default=0.0)
