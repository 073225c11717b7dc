"""Lowering of DSL expressions to CVXPY: one function per node type, kept in a table.

Data enter CVXPY as constants (never ``cp.Parameter``: a per-sample parameter made compilation take
seconds and tens of GiB, see DESIGN.md); expressions are vectorized (``X @ w``, ``cp.logistic``,
group averaging as one sparse matrix).
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from .. import expressions as E
from ..errors import UnsupportedProblemError


class LoweringContext:
    """Maps every :class:`Weights` to a ``cp.Variable`` and memoizes lowered nodes."""

    def __init__(self):
        self.variables: dict = {}
        self.memo: dict = {}
        self.nodes: list = []

    def variable(self, w: E.Weights) -> cp.Variable:
        if w not in self.variables:
            self.variables[w] = cp.Variable(w.shape, name=w.name)
        return self.variables[w]

    def update_parameters(self) -> None:
        """Copy the current values of the DSL parameters into their CVXPY parameters (before a re-solve)."""
        for node in self.parameter_nodes:
            self.memo[("parameter", node.name)].value = node.value

    @property
    def parameter_nodes(self) -> list:
        return [n for n in self.nodes if isinstance(n, E.Parameter)]

    def domain_constraints(self) -> list:
        return [cp.norm(v, "fro" if v.ndim == 2 else 2) <= w.radius
                for w, v in self.variables.items() if w.radius is not None]


def lower(expr: E.Expr, ctx: LoweringContext):
    """The CVXPY expression of a DSL expression (raises, naming the node, when there is none)."""
    key = id(expr)
    if key not in ctx.memo:
        rule = LOWERING.get(type(expr))
        if rule is None:
            raise UnsupportedProblemError(f"{type(expr).__name__} ({expr}) has no generic CVXPY lowering; "
                                          f"it is handled only by its own family's exact backend")
        ctx.memo[key] = rule(expr, ctx)
        ctx.nodes.append(expr)
    return ctx.memo[key]


def group_average_matrix(codes: np.ndarray, sizes: np.ndarray) -> sp.csr_matrix:
    """The sparse m x n matrix A with A[g, i] = 1/n_g for i in group g (group means as one product)."""
    n = codes.shape[0]
    return sp.csr_matrix((1.0 / sizes[codes], (codes, np.arange(n))), shape=(sizes.shape[0], n))


def linear_score(X: np.ndarray, theta, intercept: bool):
    """``X @ w + b`` in CVXPY for the stored parameter layout of :class:`Weights` (intercept last)."""
    if intercept:
        return X @ theta[:-1] + (theta[-1] if theta.ndim == 1 else cp.reshape(theta[-1], (1, -1), order="C"))
    return X @ theta


def _score(e: E.LinearScore, ctx):
    return linear_score(e.data.X, ctx.variable(e.w), e.w.intercept)


def _onehot(y: np.ndarray, n_classes: int) -> np.ndarray:
    out = np.zeros((y.shape[0], n_classes))
    out[np.arange(y.shape[0]), y] = 1.0
    return out


LOSS_LOWERING = {
    E.LogisticLoss: lambda z, y: cp.logistic(cp.multiply(-y, z)),
    E.HingeLoss: lambda z, y: cp.pos(1 - cp.multiply(y, z)),
    E.SquaredLoss: lambda z, y: cp.square(z - y),
    E.SoftmaxLoss: lambda z, y: cp.log_sum_exp(z, axis=1) - cp.sum(cp.multiply(_onehot(y, z.shape[1]), z), axis=1),
}


def lower_loss(loss_type: type, z, y):
    """The CVXPY per-sample loss vector of a loss class, a CVXPY score vector ``z`` and labels ``y``."""
    return LOSS_LOWERING[loss_type](z, y)


def _loss(e: E.Loss, ctx):
    return lower_loss(type(e), lower(e.score, ctx), e.y)


def _mean(e: E.Mean, ctx):
    inner = lower(e.expr, ctx)
    return cp.sum(inner) / e.expr.size


def _group_mean(e: E.GroupMean, ctx):
    return group_average_matrix(e.groups.codes, e.groups.sizes) @ lower(e.expr, ctx)


def _max(e: E.Max, ctx):
    if e.vector:
        return cp.max(lower(e.args[0], ctx))
    return cp.maximum(*[lower(a, ctx) for a in e.args])


def _constant(e: E.Constant, ctx):
    return e.constant_value()


def _parameter(e: E.Parameter, ctx):
    key = ("parameter", e.name)
    if key not in ctx.memo:
        ctx.memo[key] = cp.Parameter(name=e.name, value=e.value, nonneg=e.nonneg)
    ctx.memo[key].value = e.value
    return ctx.memo[key]


def _group_optimal(e: E.GroupOptimal, ctx):
    return e.constant_value()


def _sum_squares(e: E.SumSquares, ctx):
    theta = ctx.variable(e.w)
    core = theta[:-1] if e.w.intercept and not e.include_intercept else theta
    return cp.sum_squares(core)


def _norm(e: E.Norm, ctx):
    theta = ctx.variable(e.w)
    core = theta[:-1] if e.w.intercept else theta
    return cp.norm(cp.vec(core, order="F") if core.ndim == 2 else core, e.p)


def _add(e: E.Add, ctx):
    return lower(e.args[0], ctx) + lower(e.args[1], ctx)


def _scalar_mul(e: E.ScalarMul, ctx):
    return e.c * lower(e.expr, ctx)


def _weights(e: E.Weights, ctx):
    return ctx.variable(e)


LOWERING = {
    E.LinearScore: _score, **{loss: _loss for loss in LOSS_LOWERING}, E.Mean: _mean, E.GroupMean: _group_mean,
    E.Max: _max, E.Constant: _constant, E.Parameter: _parameter, E.GroupOptimal: _group_optimal,
    E.SumSquares: _sum_squares, E.Norm: _norm, E.Add: _add,
    E.ScalarMul: _scalar_mul, E.Weights: _weights,
}
