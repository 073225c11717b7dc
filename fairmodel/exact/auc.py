"""Exact convex programs of AUC maximization under AUC-fairness constraints, for a linear score (Yao, Lin, Yang,
AISTATS 2023).

For h = x . theta and W = {||theta|| <= R} the surrogate problem (6)/(10) is a convex QCQP:

    minimize f0(theta)  subject to  f_k(theta) <= 1 + kappa_k  (k >= 1),  ||theta|| <= R,

with f_k the sum of the pair risks T_i of block k (:class:`fairmodel.fairness.auc.PairRisks`). Three
equivalent lowerings (they agree to solver tolerance when the interval I is valid):

* ``moment`` (default): T_i = c1 c2^2 - 2 c1 c2 Delta_i + c1 (v_S + v_S') + (c1^2 / q) Delta_i^2 with
  Delta_i = (mu_S - mu_S') . theta and v_S = ||R_S theta||^2 (R_S' R_S = population covariance of set S):
  O(p^2) program size whatever n, its data the per-set moments of one pass over the rows (in memory or in chunks);
* ``pairwise``: the literal surrogate (6), (1/(|S||S'|)) sum over all pairs (i, j) in S x S' (i = j
  included) of c1 (h_i - h_j - c2)^2 (with sample weights, the pair weighs w_i w_j / (W_S W_S') instead). The scores h = X theta are lifted as variables so that each pair is
  one sparse row with two entries (memory O(#pairs), not O(#pairs x p)); refused above a memory limit, and on
  data whose rows are not in memory;
* ``lifted``: the x of (10): variables a_i, b_i in I (one pair per pair risk) and the closed-form maximum over
  alpha in I, max_alpha {2 c1 Delta alpha - q alpha^2} = q huber(c1 Delta / q, I); exact for any interval I; the same
  moments as the moment form.

Also: the exact level-set function H(r) of (22) (and H^ of (33) with a proximal term), and the
Lagrangian lower bound on f* that certifies any candidate (the level-set bracket of the judge).
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from ..errors import OptionError, SolverError
from ..expressions.atoms.auc import AUCGap, AUCLoss
from ..expressions.variables import LinearScore
from ..oracles import ipm
from ..oracles.domains import frank_wolfe_gap
from ..oracles.pairs import LinearMoments, PairRisks
from . import budget, solvers
from .domains import ball_constraint
from .lower import LOWERING, LOWERING_CONDITIONS
from .newton import ball_qp_step

FORMS = ("moment", "pairwise", "lifted")
PAIRWISE_BYTES_PER_PAIR = 2500  # peak RSS per pair of the pairwise program, measured (docs/benchmarks.md)
POLISH_TOL = 1e-9               # relative KKT residuals and gap of the moment form's interior-point polish


# ---------------------------------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------------------------------
class AUCPrograms:
    """CVXPY programs of one AUC-fairness problem with a linear score.

    moments : the per-set means and covariances of the design rows (:class:`LinearMoments`, one pass over the rows,
    in memory or in chunks; the moment and lifted forms need nothing else); pairs : the pair table; bounds : 1 +
    kappa_k of every constraint block (block 0 is the objective); radius : R (or None); half_width : I of the interval
    [-I, I] (needed by the lifted form only); design : a callable returning the design matrix (n x p, intercept
    column included) for the pairwise form, the one form with a row per pair of rows (None: that form is refused).
    """

    def __init__(self, moments: LinearMoments, pairs: PairRisks, bounds, radius, half_width, name: str = "w",
                 design=None):
        self.moments, self.pairs, self.radius, self.half_width, self.name = moments, pairs, radius, half_width, name
        self.bounds = np.asarray(bounds, dtype=float)
        self.p = moments.means.shape[1]
        self.design = design

    # -- pair risks as CVXPY expressions -------------------------------------------------------------------
    def _set_variances(self, theta):
        """Vector of v_S = theta' Sigma_S theta for every set, as one vectorized expression."""
        factors = self.moments.factors()
        stacked = np.vstack([f if f.size else np.zeros((1, self.p)) for f in factors])
        rows = [max(f.shape[0], 1) for f in factors]
        owner = np.repeat(np.arange(len(factors)), rows)
        summer = (owner[None, :] == np.arange(len(factors))[:, None]).astype(float)  # dense: at most S x S p
        return summer @ cp.square(stacked @ theta)

    def _deltas(self, theta):
        M = self.moments.means
        return (M[self.pairs.first] - M[self.pairs.second]) @ theta

    def pair_risks(self, theta, form: str, aux: dict | None = None):
        """The vector (T_i) of CVXPY expressions (``aux`` receives the lifted variables)."""
        pr = self.pairs
        c1, c2, q = pr.c1, pr.c2, pr.q
        if form == "pairwise":
            return self._pairwise(theta)
        delta = self._deltas(theta)
        V = self._set_variances(theta)
        common = c1 * c2 ** 2 - cp.multiply(2 * c1 * c2, delta) + cp.multiply(c1, V[pr.first] + V[pr.second])
        if form == "moment":
            return common + cp.multiply(c1 ** 2 / q, cp.square(delta))
        if form != "lifted":
            raise OptionError(f"unknown exact form {form!r}; valid forms are {', '.join(FORMS)}")
        if self.half_width is None:
            raise OptionError("the lifted form needs the interval I: give the Weights a radius (automatic I) or "
                              "interval= in the AUC atoms")
        P, I = pr.n_pairs, self.half_width
        a, b = cp.Variable(P, name="a"), cp.Variable(P, name="b")
        M = self.moments.means
        m, mp = M[pr.first] @ theta, M[pr.second] @ theta
        if aux is not None:
            aux.update(a=a, b=b, box=[a <= I, -a <= I, b <= I, -b <= I])
        return (common + cp.multiply(c1, cp.square(m - a) + cp.square(mp - b))
                + cp.multiply(q, cp.huber(cp.multiply(c1 / q, delta), I)))

    def pairwise_size(self) -> tuple[int, float]:
        """(number of pairs over all pair risks, estimated peak memory in bytes) of the pairwise form."""
        pr = self.pairs
        n_pairs = int(np.sum(pr.sizes[pr.first].astype(np.int64) * pr.sizes[pr.second].astype(np.int64)))
        return n_pairs, float(n_pairs) * PAIRWISE_BYTES_PER_PAIR

    def _pairwise(self, theta):
        pr = self.pairs
        if self.design is None:
            raise OptionError("the pairwise form needs the design matrix; use method='moment' (the same optimum, "
                              "O(p^2) size)")
        X = self.design()
        n = X.shape[0]
        h = cp.Variable(n, name="scores")
        self._score_link = h == X @ theta
        risks = []
        for i in range(pr.n_pairs):  # one second-order cone per pair risk (a handful), each over all its pairs
            S, T = np.flatnonzero(pr.masks[pr.first[i]]), np.flatnonzero(pr.masks[pr.second[i]])
            k = S.size * T.size
            rows = np.arange(k)
            # row (i, j) scaled by sqrt of the pair's weight: 1/sqrt(k), or sqrt(w_i w_j / (W_S W_T)) with sample
            # weights (the scaling also keeps the cone well conditioned: Clarabel stalls otherwise)
            if pr.weights is None:
                scale = np.full(k, 1.0 / np.sqrt(k))
            else:
                wS, wT = pr.weights[S], pr.weights[T]
                scale = np.sqrt(np.outer(wS, wT).ravel() / (wS.sum() * wT.sum()))
            cols = np.concatenate([np.repeat(S, T.size), np.tile(T, S.size)])
            E = sp.csr_matrix((np.concatenate([scale, -scale]),
                               (np.concatenate([rows, rows]), cols)), shape=(k, n))
            risks.append(pr.c1[i] * cp.sum_squares(E @ h - pr.c2[i] * scale))
        return cp.hstack(risks)

    def block_values(self, T):
        pr = self.pairs
        return (np.asarray(pr.block)[None, :] == np.arange(pr.n_blocks)[:, None]).astype(float) @ T

    def _domain(self, theta) -> list:
        return ball_constraint(theta, self.radius)

    def program(self, form: str = "moment"):
        """(problem, theta, constraint on the blocks, aux) of min f0 s.t. f_k <= 1 + kappa_k, ||theta|| <= R."""
        theta = cp.Variable(self.p, name=self.name)
        aux: dict = {}
        f = self.block_values(self.pair_risks(theta, form, aux))
        cons = self._domain(theta) + aux.get("box", [])
        block_con = None
        if self.pairs.n_blocks > 1:
            block_con = f[1:] <= self.bounds[1:]
            cons.append(block_con)
        if form == "pairwise":
            cons.append(self._score_link)
        return cp.Problem(cp.Minimize(f[0]), cons), theta, block_con, aux

    def check_pairwise(self, max_memory_gb: float | None) -> None:
        n_pairs, need = self.pairwise_size()
        budget.check(budget.Estimate("the pairwise form", float(n_pairs), f"{PAIRWISE_BYTES_PER_PAIR} B per pair "
                                     f"row, {n_pairs:,} pair rows", need),
                     "Use method='moment' (the same optimum, O(p^2) size)", max_memory_gb)

    def solve(self, form: str = "moment", solver=None, verbose=False, max_memory_gb: float | None = None,
              **options) -> dict:
        """Solve one form; returns theta, the block duals, lifted a, b (lifted form) and the solver record."""
        if form == "pairwise":
            pr = self.pairs
            if not np.allclose(pr.q, pr.c1):
                raise OptionError("the pairwise form is the literal surrogate (6), which equals the reformulation "
                                  "(10) only with alpha_quad_coef='c1'; use method='moment' or 'lifted' for the "
                                  "paper-literal q = 1")
            self.check_pairwise(max_memory_gb)
        problem, theta, block_con, aux = self.program(form)
        record = solvers.solve(problem, solver, verbose, what=f"the {form}-form AUC-fairness program", **options)
        out = {"theta": np.asarray(theta.value, dtype=float), "record": record,
               "duals": (np.maximum(np.asarray(block_con.dual_value, dtype=float), 0.0)
                         if block_con is not None else np.zeros(0))}
        if form == "moment":
            out.update(self.polish(out["theta"], record))
        if form == "lifted":
            out["a"], out["b"] = np.asarray(aux["a"].value, dtype=float), np.asarray(aux["b"].value, dtype=float)
        return out

    def polish(self, theta0: np.ndarray, record: dict) -> dict:
        """The moment form's optimum to the KKT residuals of :data:`POLISH_TOL` from the conic solver's ``theta0``.

        The conic solver stops at a relative gap of about 1e-8; on a design with nearly flat directions (many
        collinear features) its theta then moves by 1e-5 with a perturbation of the moments at rounding level (their
        sums in another order: other chunks), so the answer would depend on how the rows are stored. The QCQP's
        functions are the quadratics of :meth:`LinearMoments.quadratic`, so the primal-dual interior-point method of
        :mod:`fairmodel.oracles.ipm` (Nocedal and Wright 2006, eq. (19.12)) solves it from ``theta0`` to its
        tolerance in a few Newton steps of size p. Returns theta and the block duals, and marks ``record``; empty
        (the conic answer kept) when that method stops early."""
        pr = self.pairs
        blocks = [self.moments.quadratic(pr, (pr.block == k).astype(float)) for k in range(pr.n_blocks)]
        (A0, g0, c0), rest, R = blocks[0], blocks[1:], self.radius
        ball = [] if R is None else [len(rest)]           # the ball (||theta||^2 - R^2) / (2 R) <= 0 is the last row

        def oracle(x, lam, hessian):
            g = [x @ A @ x + gk @ x + ck - bk for (A, gk, ck), bk in zip(rest, self.bounds[1:])]
            J = [2 * A @ x + gk for A, gk, _ in rest]
            if ball:
                g.append((x @ x - R * R) / (2 * R))
                J.append(x / R)
            H = None
            if hessian:
                H = 2 * A0 + sum(2 * lk * A for lk, (A, _, _) in zip(lam, rest))
                H = H + (lam[-1] / R) * np.eye(x.size) if ball else H
            return ipm.Point(float(x @ A0 @ x + g0 @ x + c0), 2 * A0 @ x + g0, np.array(g, dtype=float),
                             np.array(J, dtype=float).reshape(len(g), x.size), H)
        try:
            result = ipm.solve(oracle, theta0, tol=POLISH_TOL, gap_tol=POLISH_TOL, reset=np.array(ball, dtype=int))
        except SolverError:
            return {}
        if result.status != "optimal":
            return {}
        record["polish"] = {"method": "interior-point", "iterations": result.iterations, "value": result.f}
        return {"theta": result.x, "duals": np.maximum(result.lam[:len(rest)], 0.0)}

    # -- level-set function --------------------------------------------------------------------------------
    def level_set(self, form: str = "moment", rho_hat: float = 0.0, center: np.ndarray | None = None):
        """A callable r -> (H(r), theta_r) for H of (22) (Ĥ of (33) when rho_hat > 0: lifted form, proximal
        term (rho_hat / 2) ||x - x~||^2 on x = (theta, a, b) with ``center`` = x~). r is a cp.Parameter, so
        re-solves at new levels reuse the compiled program (DPP)."""
        theta = cp.Variable(self.p, name=self.name)
        aux: dict = {}
        if rho_hat > 0:
            form = "lifted"
        f = self.block_values(self.pair_risks(theta, form, aux))
        r, t = cp.Parameter(name="r"), cp.Variable(name="t")
        shift = np.concatenate([[0.0], self.bounds[1:]])
        cons = self._domain(theta) + aux.get("box", []) + [f[0] - r <= t]
        if self.pairs.n_blocks > 1:
            cons.append(f[1:] - shift[1:] <= t)
        if form == "pairwise":
            cons.append(self._score_link)
        objective = t
        if rho_hat > 0:
            x = cp.hstack([theta, aux["a"], aux["b"]])
            objective = t + rho_hat / 2 * cp.sum_squares(x - center)
        problem = cp.Problem(cp.Minimize(objective), cons)

        def H(level: float, solver=None):
            r.value = float(level)
            solvers.solve(problem, solver, False, what=f"the level-set program H({level:.6g})")
            return float(problem.value), np.asarray(theta.value, dtype=float)
        return H

    # -- certificate ---------------------------------------------------------------------------------------
    def dual_bound(self, lam0: np.ndarray | None = None) -> dict:
        """Rigorous lower bound on f* by weak duality (the low end of the level-set bracket).

        g(lambda) = min_{||theta|| <= R} f0 + sum_k lambda_k (f_k - 1 - kappa_k) is maximized over lambda >= 0
        (L-BFGS-B; each g is a trust-region quadratic solved exactly by :func:`ball_qp_step`), and the final
        value is certified by the Frank-Wolfe bound, so the result is a lower bound whatever the accuracy.
        Needs a radius and a valid interval I (then every f_k is the quadratic of :meth:`LinearMoments.quadratic`).
        """
        K = self.pairs.n_blocks - 1
        blocks = [self.moments.quadratic(self.pairs, (self.pairs.block == k).astype(float)) for k in range(K + 1)]

        def inner(lam):
            wts = np.concatenate([[1.0], lam])
            A = sum(wk * Ak for wk, (Ak, _, _) in zip(wts, blocks))
            g = sum(wk * gk for wk, (_, gk, _) in zip(wts, blocks))
            theta = ball_qp_step(2 * A, -g, self.radius)
            f = np.array([theta @ Ak @ theta + gk @ theta + ck for Ak, gk, ck in blocks])
            return theta, f[0] + lam @ (f[1:] - self.bounds[1:]), f, A, g

        def negative(lam):
            _, value, f, _, _ = inner(lam)
            return -value, -(f[1:] - self.bounds[1:])

        lam = np.zeros(K) if lam0 is None else np.maximum(np.asarray(lam0, dtype=float), 0.0)
        if K:
            res = minimize(negative, lam, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * K,
                           options={"maxiter": 200, "ftol": 1e-15, "gtol": 1e-10})
            lam = np.maximum(res.x, 0.0)
        theta, value, _, A, g = inner(lam)
        grad = 2 * A @ theta + g
        return {"lower_bound": float(value - frank_wolfe_gap(theta, grad, self.radius)), "lambda": lam, "theta": theta}


# ---------------------------------------------------------------------------------------------------
# The AUC atoms in any convex program (the lowering table of fairmodel.exact.lower)
# ---------------------------------------------------------------------------------------------------
def _linear_score_reason(atom) -> str | None:
    if not isinstance(atom.score, LinearScore):
        return f"{atom} has no convex program: its score {atom.score} is not the linear score of a Weights"
    if atom.surrogate.half_width is not None:
        return (f"{atom} clips to the interval I = {atom.surrogate.half_width:g}; inside a generic convex program "
                f"the pairwise (unclipped) form is used: declare the atom with interval=None")
    return None


def _auc_blocks(atom, ctx):
    """The block values f_k of the atom's pair risks (moment form) on the lowering context's variable."""
    programs = AUCPrograms(atom.linear_moments(), atom.pairs, np.full(atom.pairs.n_blocks, np.nan),
                           atom.score.w.radius, None, atom.score.w.name)
    return programs.block_values(programs.pair_risks(ctx.variable(atom.score.w), "moment"))


LOWERING[AUCLoss] = lambda atom, ctx: _auc_blocks(atom, ctx)[0]
LOWERING[AUCGap] = lambda atom, ctx: cp.max(_auc_blocks(atom, ctx)) - 1.0
LOWERING_CONDITIONS[AUCLoss] = LOWERING_CONDITIONS[AUCGap] = _linear_score_reason
