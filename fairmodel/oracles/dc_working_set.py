"""A working set of hinges for the IDCA subproblem (25): solve it exactly while the interior-point method only
sees the hinges near their kinks, and the rows stay behind the data source.

Every hinge pos(y_ir(v)) of (25) whose argument at the anchor is far from 0 keeps its sign over the short
step IDCA takes (the step shrinks as IDCA converges: after 15 outer iterations 2-9 % of the hinges lie within
the previous step's largest change of y, measured on Law School). The working-set program replaces

    pos(y) by y  where y(anchor) > r,      pos(y) by 0  where y(anchor) < -r,

and keeps the hinges with |y(anchor)| <= r. Since pos(y) >= y and pos(y) >= 0, each g_i only decreases: the
working-set program is a relaxation of (25), so its minimizer x is the minimizer of (25) as soon as every
replaced hinge keeps its sign at x (then g_i(x) is the same in both programs). Hinges that changed sign join
the working set and the program is solved again, warm (an active-set method: finitely many rounds, at most
every hinge). The replaced hinges fold into the linearization: sum_{r: y > r} y_ir(v) is affine in v, a
model-space sum.

On a data source (:class:`HingeSource`: the hinge averages of :mod:`fairmodel.oracles.dc_hinges`, whatever holds
the rows) a round is one pass: it classifies every hinge (at the anchor, and at the earlier rounds' minimizers),
adds the folded sums, returns the newly kept (row, constraint) pairs, and at the last minimizer the exact f+
values, the sign changes and the largest change of a hinge argument. Only the kept pairs' rows are gathered
(``data.rows``: the chunks holding them); the client holds the working set, never the data.

Certificate: with hinge weights u = 1 on the hinges replaced by y and 0 on those replaced by 0, the Lagrangian
lower bound of :func:`~fairmodel.oracles.dc_ipm.duality_gap` for the full (25) *is* that of the working-set program
at its own (λ, u) (the replaced hinges' terms are the folded sums), so the dual bound comes from the working set and
the primal feasibility max_i g_i(x) and complementarity from the exact f+ of the last pass: the same numbers as a
solve of the full program, from the exact full-data oracles.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from .dc_ipm import HingeProgram, HingeRows, solve_subproblem

MAX_ROUNDS = 8     # re-solves after sign changes before every hinge joins the working set
MARK_SHARE = 64    # a scan of at least 1/64 of the rows finds its new rows by a mark over all rows (else by sorting)
PAIR_FLOATS = 32   # floats the interior-point method keeps per hinge of its program (epigraph slack, multipliers,
                   # residuals and Newton directions: about 25, plus the pair's indices), besides the row's features


class WideWorkingSet(Exception):
    """A guard's refusal of a working set holding too large a share of the hinges (raised by the guard before
    rows are gathered); ``rows``: the distinct rows the working set had gathered in earlier rounds."""
    rows = 0


class HingePairs:
    """Some hinges of many constraints as one flat block (the :class:`~fairmodel.oracles.dc_ipm.HingeRows`
    interface with 1-d arrays over the pairs): pair p is the hinge of constraint ``idx[local[p]]`` on the row
    ``X[row[p]]`` (a row appears once in ``X`` however many constraints it has a hinge in), y_p(v) =
    X_row(p) . v[wsl] - v[j] - u_row(p) cut, and f+_i sums its pairs over ``n_each[i]`` (the constraint's full row
    count); ``factors`` u (per row of ``X``, default ones) are the row weights already in the rows
    (:class:`~fairmodel.oracles.dc_hinges.HingeAverages`)."""

    def __init__(self, X, row, wsl: slice, idx, local, j, cut, n_each, factors=None):
        self.X, self.row, self.wsl = np.asarray(X, dtype=float), np.asarray(row, dtype=np.intp), wsl
        self.idx, self.local = np.asarray(idx, dtype=int), np.asarray(local, dtype=int)
        self.j, self.cut, self.n_each = np.asarray(j, dtype=int), np.asarray(cut, float), np.asarray(n_each, float)
        self.has_j = self.j[self.local] >= 0
        self.j_pair = np.where(self.has_j, self.j[self.local], 0)
        self.cut_pair = self.cut[self.local] * (1.0 if factors is None else np.asarray(factors, float)[self.row])
        self.n_rows = self.X.shape[0]
        # the (constraint, row) pattern of the pairs (each pair once), built once: V enters through a permutation
        N = self.local.size
        self._pattern = sparse.csr_matrix((np.arange(1.0, N + 1), (self.local, self.row)),
                                          shape=(self.idx.size, self.n_rows))
        self._perm = self._pattern.data.astype(np.intp) - 1
        self._members = None

    def _by_constraint(self, V):
        """(m_b, rows) sparse matrix of V per (constraint, row)."""
        M = self._pattern.copy()
        M.data = np.asarray(V, dtype=float)[self._perm]
        return M

    def expand(self, per_constraint) -> np.ndarray:
        return np.asarray(per_constraint)[self.idx][self.local]

    def per_constraint(self, V) -> np.ndarray:
        return np.bincount(self.local, weights=V, minlength=self.idx.size)

    def expand_cut(self) -> np.ndarray:
        return self.cut_pair

    def y(self, v) -> np.ndarray:
        return (self.X @ v[self.wsl])[self.row] - np.where(self.has_j, v[self.j_pair], 0.0) - self.cut_pair

    def apply(self, dv) -> np.ndarray:
        return (self.X @ dv[self.wsl])[self.row] - np.where(self.has_j, dv[self.j_pair], 0.0)

    def adjoint_each(self, V, D: int) -> np.ndarray:
        out = np.zeros((self.idx.size, D))
        out[:, self.wsl] = self._by_constraint(V) @ self.X
        rows = np.flatnonzero(self.j >= 0)
        out[rows, self.j[rows]] -= self.per_constraint(V)[rows]
        return out

    def adjoint(self, V, D: int) -> np.ndarray:
        out = np.zeros(D)
        out[self.wsl] = self.X.T @ np.bincount(self.row, weights=V, minlength=self.n_rows)
        out -= np.bincount(self.j_pair[self.has_j], weights=V[self.has_j], minlength=D)
        return out

    def add_gram(self, Psi, K) -> None:
        K[self.wsl, self.wsl] += self.X.T @ (np.bincount(self.row, weights=Psi, minlength=self.n_rows)[:, None]
                                             * self.X)
        C = self._by_constraint(Psi) @ self.X
        sums = self.per_constraint(Psi)
        for i in np.flatnonzero(self.j >= 0):
            j = self.j[i]
            K[self.wsl, j] -= C[i]
            K[j, self.wsl] -= C[i]
            K[j, j] += sums[i]

    def plus(self, v) -> np.ndarray:
        return self.plus_and_y(v)[0]

    def plus_and_y(self, v) -> tuple:
        """(f+ of this block's constraints at v, the pairs' hinge arguments y(v): :meth:`add_grad` reuses them)."""
        y = self.y(v)
        return self.per_constraint(np.maximum(y, 0.0)) / self.n_each, y

    def pairs_of(self, k: int) -> np.ndarray:
        """The pairs of constraint ``idx[k]`` (grouped once, on first use)."""
        if self._members is None:
            order = np.argsort(self.local, kind="stable")
            self._members = np.split(order, np.cumsum(np.bincount(self.local, minlength=self.idx.size))[:-1])
        return self._members[k]

    def add_grad(self, v, k: int, out, y) -> None:
        """out += a subgradient of f+ of this block's constraint ``idx[k]`` at v (its pairs with y > 0); ``y``: the
        pairs' hinge arguments at v (:meth:`plus_and_y`)."""
        pairs = self.pairs_of(k)
        rows = self.row[pairs]
        active = y[pairs] > 0
        out[self.wsl] += self.X[rows[active]].sum(axis=0) / self.n_each[k]
        if self.j[k] >= 0:
            out[self.j[k]] -= np.count_nonzero(active) / self.n_each[k]


class HingeSource:
    """The data of subproblem (25) whose every f+_i is one hinge average of a data source's rows: the smooth
    objective F (value, gradient, Hessian by passes) and ``parts``, a list of (:class:`HingeAverages`, ``idx``) with
    f+_{idx[f]} = A_f. Its oracles are passes; :meth:`in_memory` gathers every hinge (for small programs and tests)."""

    def __init__(self, objective, parts: list, m: int, D: int):
        self.objective, self.parts, self.m, self.D = objective, parts, m, D
        covered = np.sort(np.concatenate([idx for _, idx in parts])) if parts else np.zeros(0, int)
        if covered.tolist() != list(range(m)):
            raise ValueError("the hinge averages must cover every constraint exactly once")
        self.offsets = np.cumsum([0] + [avg.F for avg, _ in parts])
        self.pieces = sum(avg.pieces for avg, _ in parts)

    def plus(self, v) -> np.ndarray:
        out = np.zeros(self.m)
        for avg, idx in self.parts:
            out[idx] = avg.values(v)
        return out

    def g_values(self, v, anchor, S, c, mu) -> np.ndarray:
        d = v - anchor
        return self.plus(v) - (S @ v + c) + 0.5 * mu * float(d @ d)

    def objective_value(self, v, anchor, mu) -> float:
        d = v - anchor
        return float(self.objective.value(v)) + 0.5 * mu * float(d @ d)

    def max_row_norm(self) -> float:
        """The largest ||E_ir|| over the hinges' rows (w part): sizes the working set from a step."""
        return max((avg.max_row_norm() for avg, _ in self.parts), default=0.0)

    def in_memory(self) -> HingeProgram:
        """The full program with every hinge in memory (:class:`HingeRows` per cell; gathers every row)."""
        blocks = []
        for avg, idx in self.parts:
            for c in np.unique(avg.cell):
                fam = np.flatnonzero(avg.cell == c)
                members = np.flatnonzero(avg.codes == c)
                blocks.append(HingeRows(avg.hinge_rows(members), avg.wsl, idx[fam], avg.j[fam], avg.cut[fam],
                                        None if avg.row_scale is None else avg.factors(members)))
        return HingeProgram(self.objective, blocks, self.m, self.D)


class PairWeights:
    """The hinge weights u of a working set's pairs, by pair key (row x families + family): the warm start of the
    next subproblem's working set."""

    def __init__(self, keys, values):
        order = np.argsort(keys)
        self.keys, self.values = keys[order], values[order]

    def lookup(self, keys, default) -> np.ndarray:
        if self.keys.size == 0:
            return default
        pos = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        return np.where(self.keys[pos] == keys, self.values[pos], default)


class WorkingSet:
    """The kept (row, family) pairs of every part of a :class:`HingeSource`, with the hinge rows scale (x_r, 1) of
    their distinct rows, gathered once each (``data.rows``: only the chunks holding them are read)."""

    def __init__(self, source: HingeSource):
        self.source = source
        P = len(source.parts)
        self.ids = [np.zeros(0, np.int64) for _ in range(P)]                 # distinct rows gathered, in order
        self.X = [np.zeros((0, avg.d_w)) for avg, _ in source.parts]
        self.factors = [np.zeros(0) for _ in range(P)]                       # the rows' weight factors u_r
        self.pos = [np.zeros(0, np.intp) for _ in range(P)]                  # per pair: its row's position in X
        self.families = [np.zeros(0, np.int64) for _ in range(P)]

    @property
    def pairs(self) -> int:
        return sum(f.size for f in self.families)

    @property
    def rows(self) -> int:
        return sum(i.size for i in self.ids)

    def nbytes(self, new_pairs: int = 0, new_rows: int = 0) -> float:
        """The memory of the working set with some more pairs and rows: the rows' features and the interior-point
        method's arrays per pair."""
        d = max((avg.d_w for avg, _ in self.source.parts), default=0)
        return 8.0 * ((self.rows + new_rows) * d + (self.pairs + new_pairs) * PAIR_FLOATS)

    def fresh_rows(self, scans) -> list:
        """Per part, the rows of the scan's pairs not gathered yet (sorted, distinct). A scan holding many pairs
        (IDCA's first steps) is marked in a boolean array over the part's rows, O(n) with a small constant, instead
        of sorted, O(k log k) for its k pairs."""
        out = []
        for (avg, _), scan, ids in zip(self.source.parts, scans, self.ids):
            rows, n = scan["rows"], avg.codes.size
            if rows.size * MARK_SHARE < n:
                out.append(np.setdiff1d(rows, ids))
                continue
            mark = np.zeros(n, dtype=bool)
            mark[rows] = True
            mark[ids] = False
            out.append(np.flatnonzero(mark))
        return out

    def add(self, scans, fresh_rows=None) -> None:
        """Add the scans' pairs (``fresh_rows``: :meth:`fresh_rows` of the scans, when already known)."""
        fresh_rows = self.fresh_rows(scans) if fresh_rows is None else fresh_rows
        for p, ((avg, _), scan, fresh) in enumerate(zip(self.source.parts, scans, fresh_rows)):
            if not scan["rows"].size:
                continue
            if fresh.size:
                self.X[p] = np.vstack([self.X[p], avg.hinge_rows(fresh)])
                self.factors[p] = np.concatenate([self.factors[p], avg.factors(fresh)])
                self.ids[p] = np.concatenate([self.ids[p], fresh])
            # the new pairs in a canonical order (by row, then family), whatever the chunks they came from: the
            # interior-point method then does the same arithmetic on in-memory and chunked rows
            new = np.lexsort((scan["families"], scan["rows"]))
            rows, fams = scan["rows"][new], scan["families"][new]
            order = np.argsort(self.ids[p])
            where = order[np.searchsorted(self.ids[p], rows, sorter=order)]
            self.pos[p] = np.concatenate([self.pos[p], where])
            self.families[p] = np.concatenate([self.families[p], fams])

    def keys(self) -> np.ndarray:
        F = int(self.source.offsets[-1])
        return np.concatenate([ids[pos] * F + f + off for ids, pos, f, off in
                               zip(self.ids, self.pos, self.families, self.source.offsets)])

    def program(self, S, c, scans):
        """The working-set program: the kept pairs as :class:`HingePairs` blocks, the replaced positive hinges folded
        into (S, c). Returns (program, S', c')."""
        src = self.source
        S, c = S.copy(), c.copy()
        blocks = []
        for (avg, idx), scan, fam, pos, X, u in zip(src.parts, scans, self.families, self.pos, self.X, self.factors):
            n = avg.n_each
            S[idx, avg.wsl] -= scan["fold"] / n[:, None]
            jj = np.flatnonzero(avg.has_j)
            np.add.at(S, (idx[jj], avg.j[jj]), scan["fold_count"][jj] / n[jj])
            c[idx] += scan["fold_count"] * avg.cut / n
            if fam.size:
                used, local = np.unique(fam, return_inverse=True)
                blocks.append(HingePairs(X, pos, avg.wsl, idx[used], local, avg.j[used], avg.cut[used], n[used],
                                         None if avg.row_scale is None else u))
        return HingeProgram(src.objective, blocks, src.m, src.D, complete=False), S, c

    def weights(self, u_blocks) -> PairWeights:
        values = np.concatenate(u_blocks) if u_blocks else np.zeros(0)
        return PairWeights(self.keys(), values)

    def warm(self, reduced, anchor, warm):
        """(λ, u per block) from a previous solve's (λ, PairWeights); pairs new to the set start from 1 where the
        hinge is positive at the anchor, else 0 (the weights the replaced hinges had)."""
        lam, pw = warm
        keys = self.keys()
        y = np.concatenate([b.y(anchor) for b in reduced.blocks]) if reduced.blocks else np.zeros(0)
        u = pw.lookup(keys, (y > 0).astype(float))
        sizes = np.cumsum([0] + [b.local.size for b in reduced.blocks])
        return lam, [u[a:b] for a, b in zip(sizes[:-1], sizes[1:])]


def working_set_rounds(source: HingeSource, anchor, S, c, radius: float | None, solve, guard=None):
    """The active-set loop of the module docstring: ``solve(reduced, S', c', ws) -> (x, ok)`` on the working-set
    program, then one scan per part at x; hinges replaced before x whose sign changed at x join the working set
    and ``solve`` runs again (after MAX_ROUNDS rounds every hinge joins). ``guard(nbytes, pairs)`` runs before rows
    are gathered. Returns (x, reduced, S', c', the last scans (at x), ws, rounds, passes)."""
    a = np.asarray(anchor, dtype=float)
    r = np.inf if radius is None else float(radius)
    ws = WorkingSet(source)
    points = []
    scans = [avg.scan(a, points, r) for avg, _ in source.parts]
    passes = len(scans)
    for rounds in range(1, 10 ** 9):
        new = sum(s["rows"].size for s in scans)
        fresh = ws.fresh_rows(scans)
        if guard is not None:
            try:
                guard(ws.nbytes(new, sum(f.size for f in fresh)), ws.pairs + new)
            except WideWorkingSet as wide:
                wide.rows = ws.rows
                raise
        ws.add(scans, fresh)
        reduced, S_r, c_r = ws.program(S, c, scans)
        x, ok = solve(reduced, S_r, c_r, ws)
        points.append(x)
        scans = [avg.scan(a, points, r) for avg, _ in source.parts]
        passes += len(scans)
        if not ok or not any(s["flips"] for s in scans):
            return x, reduced, S_r, c_r, scans, ws, rounds, passes
        if rounds >= MAX_ROUNDS and np.isfinite(r):      # every hinge joins the working set
            r, points, ws = np.inf, [], WorkingSet(source)
            scans = [avg.scan(a, points, r) for avg, _ in source.parts]
            passes += len(scans)


def full_plus(source: HingeSource, scans) -> np.ndarray:
    """f+ of the full program at the last scan's point, from the scan's exact sums."""
    plus = np.zeros(source.m)
    for (avg, idx), scan in zip(source.parts, scans):
        plus[idx] = scan["plus"] / avg.n_each
    return plus


def solve_with_working_set(source: HingeSource, anchor, S, c, mu: float, radius: float | None, *,
                           tol: float = 1e-10, max_iter: int = 100, warm=None, guard=None, centre=None):
    """Solve (25) as :func:`~fairmodel.oracles.dc_ipm.solve_subproblem` does, the interior-point method seeing
    only the hinges with |y(anchor)| <= ``radius`` (every hinge when ``radius`` is None), then the sign changes.

    ``warm``: (λ, :class:`PairWeights`) of a previous solve. ``guard(nbytes, pairs)``: called before rows are
    gathered with the working set's memory (bytes) and size (pairs); it raises to refuse. ``centre``: the point at
    which the hinges are classified (default the anchor; any point gives a relaxation of (25), the sign check
    repairs the rest); ``hinge_change`` is then measured from it.

    Returns ``(x, lam, u, info)``: u the :class:`PairWeights` of the final working set, ``info`` with ``status``,
    ``iterations`` (of the interior-point method, all rounds), the certificate of the full program (``primal``,
    ``dual_bound``, ``gap``, ``max_g``, ``complementarity``), the working set's size (``working_set``: a fraction of
    the hinges, ``working_set_pairs``, ``working_set_rows``, ``working_set_bytes``), ``rounds``, ``passes`` and
    ``hinge_change``, the largest change of a hinge argument from the anchor to x (the next radius).
    """
    a = np.asarray(anchor, dtype=float)
    p = a if centre is None else np.asarray(centre, dtype=float)
    state = {"warm": warm, "iterations": 0}

    def solve(reduced, S_r, c_r, ws):
        warm_r = None if state["warm"] is None else ws.warm(reduced, p, state["warm"])
        x, lam, u_r, info = solve_subproblem(reduced, a, S_r, c_r, mu, tol=tol, max_iter=max_iter, warm=warm_r)
        state.update(iterations=state["iterations"] + info["iterations"], warm=(lam, ws.weights(u_r)), lam=lam,
                     u=u_r, info=info)
        return x, info["status"] == "optimal"

    x, reduced, S_r, c_r, scans, ws, rounds, passes = working_set_rounds(source, p, S, c, radius, solve, guard)
    lam, info = state["lam"], state["info"]
    # the certificate of the last working-set solve (its dual bound is that of the full program: module docstring)
    cert = {k: info[k] for k in ("primal", "dual_bound", "gap")}
    d = x - a
    g = full_plus(source, scans) - (S @ x + c) + 0.5 * mu * float(d @ d)       # the full program's g_i(x), exact
    cert.update(max_g=float(np.max(g, initial=-np.inf)), complementarity=float(np.max(np.abs(lam * g), initial=0.0)))
    return x, lam, state["warm"][1], {**info, **cert, "iterations": state["iterations"], "rounds": rounds,
                                      "passes": passes, "working_set": ws.pairs / max(source.pieces, 1),
                                      "working_set_pairs": ws.pairs, "working_set_rows": ws.rows,
                                      "working_set_bytes": ws.nbytes(),
                                      "hinge_change": max((s["change"] for s in scans), default=0.0)}
