"""The convex IDCA subproblem (25) of a partial-fairness DC program in CVXPY, compiled once.

At an anchor x_k (He, Huang, Yao, Lin 2025, eqs. (25)-(26); the proximal weight μ adds (μ/2)||x||^2 to both
convex parts of every function, which leaves each f_i unchanged and makes the subproblem strongly convex):

    min_{v in W}  f_0(v) + (μ/2) ||v - x_k||^2
    s.t.          f_i+(v) - [f_i-(x_k) + <s_i, v - x_k>] + (μ/2) ||v - x_k||^2 <= 0,   i = 1..m

f_0 and every f_i+ are lowered once (the objective through the core table :mod:`fairmodel.exact.lower`,
the ramp parts of models (13)/(17) vectorized here); the linearization enters as the parameters
``S`` (m x D slopes s_i), ``c`` (m intercepts f_i-(x_k) - <s_i, x_k>) and the anchor ``x_k`` (D). These
are small (m, D are the numbers of constraints and of variables, never per-sample data), so every outer
iteration of IDCA only re-solves the compiled program (DPP). The prox term is one epigraph variable
t >= (μ/2)||v - x_k||^2 shared by the objective and all constraints (one second-order cone).

The constraint duals λ >= 0 give the subproblem KKT checks and the Lemma C.1 certificate of the paper.

Exponential-cone losses (logistic) are solved by Newton's method on the same compiled program
(measured: Clarabel 0.11 and ECOS stop with InsufficientProgress / failure on the exponential-cone form of
(25) for model (13) with >= 6 levels, already at n = 500, while the same constraints with a quadratic or
linear objective solve). Each term ``c * fm.mean(fm.logistic_loss(data.score(w), y))`` of the objective is
replaced by its second-order model at the current point v, ``c [g.(u - v) + 1/2 ||F (u - v)||^2]`` with
F^T F the Hessian (parameters: a D-vector, a D x D factor and F v, never per-sample data); every other
term and every constraint stay exact. A backtracking (Armijo) line search on the true objective of (25)
keeps the iterates feasible (the feasible set is convex and exact) and makes the method globally
convergent; near the solution it converges quadratically. It stops when the predicted decrease is
below ``newton_tol`` (relative); the duals of the last QP are the multipliers of (25).
"""
from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ..expressions import Add, Mean, ScalarMul, evaluate
from ..errors import SolverError, UnsupportedProblemError
from ..oracles.dc import DCProgram, ExprBlock
from ..oracles.dc_bands import RampBandBlock, WeakBandBlock
from ..oracles.dc_hinges import design_rows
from ..oracles.dc_rates import RampRateBlock
from ..oracles.losses import LinearModelLoss, Logistic
from . import solvers
from .lower import LoweringContext, group_average_matrix, lower


def _design(avg) -> np.ndarray:
    """The in-memory design rows (x, 1) of a block's hinge averages (the CVXPY program holds every row)."""
    return design_rows(avg.data.in_memory_X("the CVXPY program of the IDCA subproblem (25)"), avg.intercept)


def _ramp_band(block: RampBandBlock, ctx, aux):
    """f+ of (13): [A-_{k,p} (lower) ; A+_{k,p} (upper)], k major, A+-_{k,p} = (1/n_k) sum_i pos(z_i - θ_p -+ 1/2).

    Vectorized: constant matrices map w and θ to every z_i - θ_p at once (level major: the dense (n |Î|) x d block
    of the design repeated, a sparse -1 per row for θ), and a sparse averaging matrix sums each (k, p) block: two
    ``cp.pos`` of one affine expression, no per-row or per-level expressions.
    """
    X, P, G = _design(block.avg), block.P, block.G
    codes, sizes = block.atom.groups.codes, block.atom.groups.sizes.astype(float)
    n = X.shape[0]
    w = ctx.variable(block.atom.score.w)
    theta = aux[f"theta_{block.name}"]
    Mw = np.tile(X, (P, 1))
    Mt = sp.csr_matrix((-np.ones(n * P), (np.arange(n * P), np.repeat(np.arange(P), n))), shape=(n * P, P))
    rows, cols, vals = [], [], []
    for k in range(G):
        members = np.flatnonzero(codes == k)
        for p in range(P):
            rows.append(np.full(members.size, k * P + p))
            cols.append(p * n + members)
            vals.append(np.full(members.size, 1.0 / sizes[k]))
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(G * P, n * P))
    Z = Mw @ w + Mt @ theta
    return cp.hstack([A @ cp.pos(Z - 0.5), A @ cp.pos(Z + 0.5)])


def _weak_band(block: WeakBandBlock, ctx, aux):
    """f+ of (17) over the ordered pairs: M_alpha(k) + M_beta(k') [+ S+_k + S+_k' for the paper's split]."""
    atom = block.atom
    z = lower(atom.score, ctx) - atom.threshold
    A = group_average_matrix(atom.groups.codes, atom.groups.sizes.astype(float))
    s_plus, s_minus = A @ cp.pos(z + 0.5), A @ cp.pos(z - 0.5)
    m_alpha = cp.maximum(s_minus + block.alpha, s_plus)
    m_beta = cp.maximum(s_minus + block.beta, s_plus)
    k, l = (np.array(v) for v in zip(*block.pairs))
    out = m_alpha[k] + m_beta[l]
    return out + s_plus[k] + s_plus[l] if block.paper else out


def _ramp_rates(block: RampRateBlock, ctx, aux):
    """f+ of the ramp rate gaps: [A+_j (upper) ; A-_j (lower)] over the cells j, A+-_j = (1/n_j) sum f_i pos(u_i +- 1/2),
    u_i = (x_i . w - t) / width, f_i the row's weight factor (1 without sample weights): one affine expression over
    the rows in a cell and a sparse averaging matrix."""
    w = ctx.variable(block.atom.score.w)
    avg = block.avg
    inside = np.flatnonzero(avg.codes >= 0)
    X = avg.scale * _design(avg)[inside]
    cells = avg.codes[inside].astype(np.intp)
    A = sp.csr_matrix((avg.factors(inside) / avg.sizes[cells], (cells, np.arange(inside.size))),
                      shape=(block.C, inside.size))
    u = X @ w - avg.cut[0] - 0.5                 # the upper families' cut is t / width - 1/2
    return cp.hstack([A @ cp.pos(u + 0.5), A @ cp.pos(u - 0.5)])


def _expr(block: ExprBlock, ctx, aux):
    return cp.reshape(lower(block.g, ctx), (1,), order="C")


BLOCK_LOWERING = {RampBandBlock: _ramp_band, WeakBandBlock: _weak_band, RampRateBlock: _ramp_rates, ExprBlock: _expr}


EXP_CONE_KERNELS = (Logistic,)
DPP_LIMIT = 2e8


def loss_rows(term):
    """(linear score node, loss term, per-row weights of the term's mean) when ``term`` is the mean over all rows
    of u_i phi(z_i, y_i), phi an exp-cone loss kernel of the linear score z of a vector of weights and u_i >= 0
    (``sample_weight=``, ``fm.multiply``, multiples: the loss term of its fact ``score_form()``); else None."""
    if not isinstance(term, Mean) or term.where is not None:
        return None
    form = term.expr.score_form()
    if form is None or form.score is None or len(form.per_sample.terms) != 1:
        return None
    loss = form.per_sample.terms[0]
    if loss.kernel not in EXP_CONE_KERNELS or np.any(form.per_sample.const != 0) or np.any(loss.coef < 0):
        return None
    return form.score, loss, np.ones(term.expr.size) * loss.coef / term.expr.size


def split_objective(expr, coef: float = 1.0, out=None):
    """``(modeled, exact)``: lists of (coefficient, term) of a sum; modeled terms are (weighted) means of
    exp-cone losses of a linear score (:func:`loss_rows`; solved by Newton's method), every other term is
    lowered exactly."""
    out = ([], []) if out is None else out
    if isinstance(expr, Add):
        for a in expr.args:
            split_objective(a, coef, out)
    elif isinstance(expr, ScalarMul):
        split_objective(expr.expr, coef * expr.c, out)
    elif loss_rows(expr) is not None:
        out[0].append((coef, expr))
    else:
        out[1].append((coef, expr))
    return out


class _LossModel:
    """Gradient and Hessian (in x-space) of c * mean_i u_i phi(x_i . w, y_i): the linear-model loss of the term."""

    def __init__(self, coef, term: Mean, layout):
        score, loss, rows = loss_rows(term)
        self.loss = LinearModelLoss(loss.kernel, score.data.in_memory_X("the CVXPY program of (25)"), loss.y,
                                    score.w.intercept, sample_weight=coef * rows)
        self.sl = layout.slices[score.w.name]

    def add_to(self, x, grad, hess):
        _, g, h = self.loss.value_gradient_hessian(x[self.sl])
        grad[self.sl] += g
        hess[self.sl, self.sl] += h


class Subproblem:
    """The compiled subproblem (25) of ``program`` for a fixed μ >= 0; :meth:`solve` re-solves at an anchor."""

    def __init__(self, program: DCProgram, mu: float, solver: str | None = None, newton_tol: float = 1e-10,
                 max_newton: int = 30):
        self.program, self.mu = program, float(mu)
        self.solver = solvers.check_solver(solver)
        self.newton_tol, self.max_newton = newton_tol, max_newton
        start = time.perf_counter()
        ctx = LoweringContext()
        layout = program.layout
        aux = {name: cp.Variable(layout.shapes[name], name=name) for name in layout.aux_names}
        parts = []
        for w in layout.weights:
            v = ctx.variable(w)
            parts.append(cp.vec(v, order="C") if v.ndim == 2 else v)
        parts += [aux[name] for name in layout.aux_names]
        self.x = cp.hstack(parts)
        modeled, exact_terms = split_objective(program.objective)
        self.models = [_LossModel(c, t, layout) for c, t in modeled]
        self.exact_terms = exact_terms
        m, D = program.m, program.D
        try:
            objective = sum((c * lower(t, ctx) for c, t in exact_terms), start=cp.Constant(0.0))
            fplus = cp.hstack([BLOCK_LOWERING[type(b)](b, ctx, aux) for b in program.blocks])
        except UnsupportedProblemError as exc:
            raise UnsupportedProblemError(f"the exact IDCA backend lowers the objective and every f+ to CVXPY: "
                                          f"{exc}") from None
        if self.models:
            self.grad, self.factor = cp.Parameter(D, name="model_grad"), cp.Parameter((D, D), name="model_factor")
            self.shift = cp.Parameter(D, name="model_shift")
            objective = objective + self.grad @ self.x + 0.5 * cp.sum_squares(self.factor @ self.x - self.shift)
        self.S, self.c = cp.Parameter((m, D), name="slopes"), cp.Parameter(m, name="intercepts")
        self.anchor = cp.Parameter(D, name="anchor")
        extra = []
        prox = 0.0
        if self.mu > 0:
            t = cp.Variable(name="prox")
            extra = [t >= (self.mu / 2.0) * cp.sum_squares(self.x - self.anchor)]
            prox = t
        self.constraint = fplus - (self.S @ self.x + self.c) + prox <= 0
        self.problem = cp.Problem(cp.Minimize(objective + prox), [self.constraint] + extra + ctx.domain_constraints())
        self.ctx, self.aux = ctx, aux
        # DPP compiles once in time ~ (#variables x #parameter entries), which for the 2 |Î| n epigraph variables
        # of the ramp sums is 45 s at n = 1e4 (measured); above DPP_LIMIT every solve recompiles with the
        # parameters as constants instead (8.8 s at n = 1e4, linear in the number of nonzeros)
        n_param = sum(p.size for p in self.problem.parameters())
        n_var = sum(v.size for v in self.problem.variables()) + sum(
            b.avg.pieces for b in program.blocks if isinstance(b, RampBandBlock))
        self.ignore_dpp = n_var * n_param > DPP_LIMIT
        self.compile_time = time.perf_counter() - start
        self.solves = 0

    def linearize(self, anchor: np.ndarray):
        """(S, c) of the linearization of every f_i- at the anchor (eq. (26))."""
        vals, jac = self.program.linearize(anchor)
        return jac, vals - jac @ anchor

    def set_anchor(self, anchor: np.ndarray, center: np.ndarray | None = None) -> None:
        """Set the linearization at ``anchor`` and the quadratic loss model at ``center`` (default: anchor)."""
        S, c = self.linearize(anchor)
        self.S.value, self.c.value, self.anchor.value = S, c, anchor
        if self.models:
            self._set_model(anchor if center is None else center)

    def _set_model(self, v):
        D = self.program.D
        grad, hess = np.zeros(D), np.zeros((D, D))
        for model in self.models:
            model.add_to(v, grad, hess)
        vals, vecs = np.linalg.eigh(0.5 * (hess + hess.T))
        factor = np.sqrt(np.maximum(vals, 0.0))[:, None] * vecs.T
        self.grad.value, self.factor.value, self.shift.value = grad, factor, factor @ v
        return grad, factor

    def _true(self, v, anchor) -> float:
        """The objective of (25) in NumPy: f_0(v) + (μ/2)||v - x_k||^2."""
        return self.program.objective_value(v) + 0.5 * self.mu * float(np.sum((v - anchor) ** 2))

    def _exact_part(self, v, anchor) -> float:
        assignment = self.program.layout.assignment(v)
        value = sum(c * float(evaluate(t, assignment)) for c, t in self.exact_terms)
        return value + 0.5 * self.mu * float(np.sum((v - anchor) ** 2))

    def _qp(self, verbose, options):
        if self.ignore_dpp:
            options = {**options, "ignore_dpp": True}
        record = solvers.solve(self.problem, self.solver, verbose,
                               what=f"the convex IDCA subproblem (25) (solve {self.solves})", **options)
        self.solves += 1
        layout = self.program.layout
        u = np.zeros(self.program.D)
        for w, v in self.ctx.variables.items():
            u[layout.slices[w.name]] = np.ravel(np.asarray(v.value, dtype=float))
        for name, v in self.aux.items():
            u[layout.slices[name]] = np.asarray(v.value, dtype=float)
        lam = np.maximum(np.asarray(self.constraint.dual_value, dtype=float).ravel(), 0.0)
        return layout.project(u), lam, record

    def solve(self, anchor: np.ndarray, verbose=False, **options):
        """(x_hat, λ, record): the minimizer of (25) at ``anchor``, the constraint duals, the solver record."""
        self.set_anchor(anchor)
        if not self.models:
            return self._qp(verbose, options)
        v, f_v = anchor.copy(), self._true(anchor, anchor)
        total = {"solve": 0.0, "compile": 0.0, "iterations": 0}
        for newton in range(1, self.max_newton + 1):
            grad, factor = self._set_model(v)
            u, lam, record = self._qp(verbose, options)
            for key in total:
                total[key] += record.get(key) or 0
            d = u - v
            quad = grad @ d + 0.5 * float(np.sum((factor @ d) ** 2))
            pred = (self._exact_part(v, anchor) - self._exact_part(u, anchor)) - quad
            if pred <= self.newton_tol * max(1.0, abs(f_v)):
                record.update(total, newton_steps=newton, predicted_decrease=float(max(pred, 0.0)))
                return v, lam, record
            step = 1.0
            while step > 1e-12:
                trial = v + step * d
                f_trial = self._true(trial, anchor)
                if f_trial <= f_v - 1e-4 * step * pred:
                    break
                step *= 0.5
            else:
                raise SolverError(f"the Newton line search on subproblem (25) made no progress (predicted decrease "
                                  f"{pred:.3g}); the quadratic model is inconsistent with the objective",
                                  status="line_search_failed")
            v, f_v = trial, f_trial
        record.update(total, newton_steps=self.max_newton, predicted_decrease=float(pred),
                      status="optimal_inaccurate")
        return v, lam, record

    def g_values(self, v: np.ndarray, anchor: np.ndarray) -> np.ndarray:
        """g_i(v) of (25) at the anchor, evaluated in NumPy (for KKT checks)."""
        S, c = self.linearize(anchor)
        return self.program.plus(v)[0] - (S @ v + c) + 0.5 * self.mu * float(np.sum((v - anchor) ** 2))
