"""Lowering of declarations to CVXPY: one rule per node type, kept in a table apart from the atoms.

Data enter CVXPY as constants (never ``cp.Parameter``: a per-sample parameter made compilation take seconds
and tens of GiB); expressions are vectorized (``X @ w``, ``cp.logistic``, group averaging as one sparse
matrix). Family atoms whose math has a convex program register their rule in ``LOWERING`` from their own
exact module (e.g. the moment form of the AUC atoms, :mod:`fairmodel.exact.auc`), so they can sit in any
convex program.
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ..expressions import (Abs, Add, Constant, Expr, GroupMean, GroupOptimal, LinearScore, Loss, Max, Mean, Min,
    Multiply, Norm, Parameter, Pos, ScalarMul, Sum, SumSquares, Weights)
from ..errors import UnsupportedProblemError
from ..oracles.losses import Exponential, Hinge, Huber, Logistic, Softmax, Squared, SquaredHinge
from .domains import ball_constraint


class LoweringContext:
    """Maps every :class:`Weights` to a ``cp.Variable`` and memoizes lowered nodes."""

    def __init__(self):
        self.variables: dict = {}
        self.memo: dict = {}
        self.nodes: list = []

    def variable(self, w: Weights) -> cp.Variable:
        if w not in self.variables:
            self.variables[w] = cp.Variable(w.shape, name=w.name)
        return self.variables[w]

    def update_parameters(self) -> None:
        """Copy the current values of the declared parameters into their CVXPY parameters (before a re-solve)."""
        for node in self.parameter_nodes:
            self.memo[("parameter", node.name)].value = node.value

    @property
    def parameter_nodes(self) -> list:
        return [n for n in self.nodes if isinstance(n, Parameter)]

    def domain_constraints(self) -> list:
        return [c for w, v in self.variables.items() for c in ball_constraint(v, w.radius)]


def lower(expr: Expr, ctx: LoweringContext):
    """The CVXPY expression of a declared expression (raises, naming the node, when there is none)."""
    key = id(expr)
    if key not in ctx.memo:
        rule = rule_of(expr)
        if rule is None:
            raise UnsupportedProblemError(f"{type(expr).__name__} ({expr}) has no generic CVXPY lowering; "
                                          f"it is handled only by its own family's exact backend")
        ctx.memo[key] = rule(expr, ctx)
        ctx.nodes.append(expr)
    return ctx.memo[key]


def rule_of(node: Expr):
    """The lowering rule of a node: the table's entry for its type or the nearest base class (a loss's rule is the
    one of :class:`Loss`, which lowers its kernel through ``LOSS_LOWERING``)."""
    return next((LOWERING[cls] for cls in type(node).__mro__ if cls in LOWERING), None)


def unlowerable(expr: Expr) -> str | None:
    """Why ``expr`` has no CVXPY form (its first node without a rule, or a rule's condition), or None."""
    for node in expr.nodes():
        if rule_of(node) is None:
            return f"{type(node).__name__} ({node}) has no generic CVXPY lowering"
        if isinstance(node, Loss) and lowering_of_loss(node.kernel) is None:
            return f"the {node.kernel.name} loss has no CVXPY form"
        condition = LOWERING_CONDITIONS.get(type(node))
        reason = condition(node) if condition is not None else None
        if reason is not None:
            return reason
    return None


def group_average_matrix(codes: np.ndarray, sizes: np.ndarray, weights=None) -> sp.csr_matrix:
    """The sparse m x n matrix A with A[g, i] = 1/n_g for i in group g (rows with code -1 left out), or u_i/n_g with
    relative row ``weights`` u."""
    n = codes.shape[0]
    keep = np.flatnonzero(codes >= 0)
    entries = 1.0 / sizes[codes[keep]] if weights is None else weights[keep] / sizes[codes[keep]]
    return sp.csr_matrix((entries, (codes[keep], keep)), shape=(sizes.shape[0], n))


def linear_score(X: np.ndarray, theta, intercept: bool):
    """``X @ w + b`` in CVXPY for the stored parameter layout of :class:`Weights` (intercept last)."""
    if intercept:
        return X @ theta[:-1] + (theta[-1] if theta.ndim == 1 else cp.reshape(theta[-1], (1, -1), order="C"))
    return X @ theta


def _onehot(y: np.ndarray, n_classes: int) -> np.ndarray:
    out = np.zeros((y.shape[0], n_classes))
    out[np.arange(y.shape[0]), y] = 1.0
    return out


# loss kernel -> its CVXPY form (kernel, score z, labels y) -> per-sample loss vector
LOSS_LOWERING = {
    Logistic: lambda k, z, y: cp.logistic(cp.multiply(-y, z)),
    Hinge: lambda k, z, y: cp.pos(1 - cp.multiply(y, z)),
    Squared: lambda k, z, y: cp.square(z - y),
    SquaredHinge: lambda k, z, y: cp.square(cp.pos(1 - cp.multiply(y, z))),
    Huber: lambda k, z, y: cp.huber(z - y, M=k.delta),
    Exponential: lambda k, z, y: cp.exp(cp.multiply(-y, z)),
    Softmax: lambda k, z, y: cp.log_sum_exp(z, axis=1) - cp.sum(cp.multiply(_onehot(y, z.shape[1]), z), axis=1),
}


def lowering_of_loss(kernel: type):
    """The CVXPY form of a loss kernel (its entry in ``LOSS_LOWERING`` or its nearest base class's), or None."""
    return next((LOSS_LOWERING[cls] for cls in kernel.__mro__ if cls in LOSS_LOWERING), None)


def lower_loss(kernel: type, z, y):
    """The CVXPY per-sample loss vector of a pointwise loss kernel, a CVXPY score vector ``z`` and labels ``y``."""
    rule = lowering_of_loss(kernel)
    if rule is None:
        raise UnsupportedProblemError(f"the {kernel.name} loss has no CVXPY form; add it to LOSS_LOWERING")
    return rule(kernel, z, y)


def _score(e: LinearScore, ctx):
    return linear_score(e.data.in_memory_X("the exact (CVXPY) program (a row per sample; method='model_space' solves "
                                           "smooth compositions by passes over the chunks)"),
                        ctx.variable(e.w), e.w.intercept)


def _loss(e: Loss, ctx):
    return lower_loss(e.kernel, lower(e.score, ctx), e.y)


def _mean(e: Mean, ctx):
    inner = lower(e.expr, ctx)
    if e.where is None:
        return cp.sum(inner) / e.expr.size
    return (e.where.astype(float) / e.count) @ inner


def _group_mean(e: GroupMean, ctx):
    return group_average_matrix(e.codes, e.sizes) @ lower(e.expr, ctx)


def _sum(e: Sum, ctx):
    return cp.sum(lower(e.expr, ctx))


def _max(e: Max, ctx):
    if e.vector:
        return cp.max(lower(e.args[0], ctx))
    return cp.maximum(*[lower(a, ctx) for a in e.args])


def _min(e: Min, ctx):
    if e.vector:
        return cp.min(lower(e.args[0], ctx))
    return cp.minimum(*[lower(a, ctx) for a in e.args])


def _constant(e: Constant, ctx):
    return e.constant_value()


def _parameter(e: Parameter, ctx):
    key = ("parameter", e.name)
    if key not in ctx.memo:
        ctx.memo[key] = cp.Parameter(name=e.name, value=e.value, nonneg=e.nonneg)
    ctx.memo[key].value = e.value
    return ctx.memo[key]


def _sum_squares(e: SumSquares, ctx):
    theta = ctx.variable(e.w)
    core = theta[:-1] if e.w.intercept and not e.include_intercept else theta
    return cp.sum_squares(core)


def _norm(e: Norm, ctx):
    theta = ctx.variable(e.w)
    core = theta[:-1] if e.w.intercept else theta
    return cp.norm(cp.vec(core, order="F") if core.ndim == 2 else core, e.p)


def _add(e: Add, ctx):
    out = lower(e.args[0], ctx)
    for a in e.args[1:]:
        out = out + lower(a, ctx)
    return out


# family atoms add their rules (and the conditions under which a rule applies) from their exact modules,
# e.g. the moment form of the AUC atoms in fairmodel.exact.auc; fairmodel/exact/__init__.py imports them all
LOWERING_CONDITIONS: dict = {}
LOWERING = {
    LinearScore: _score, Loss: _loss,
    Mean: _mean, GroupMean: _group_mean, Sum: _sum, Max: _max, Min: _min, Constant: _constant,
    Parameter: _parameter, GroupOptimal: lambda e, ctx: e.constant_value(), SumSquares: _sum_squares,
    Norm: _norm, Add: _add, ScalarMul: lambda e, ctx: e.c * lower(e.expr, ctx),
    Multiply: lambda e, ctx: cp.multiply(e.a, lower(e.expr, ctx)),
    Abs: lambda e, ctx: cp.abs(lower(e.expr, ctx)), Pos: lambda e, ctx: cp.pos(lower(e.expr, ctx)),
    Weights: lambda e, ctx: ctx.variable(e),
}
