"""Evaluating declarations: the environment of variable values (and of a minibatch of rows), values and
gradients of expressions for given arrays."""
from __future__ import annotations

import numpy as np

from ..errors import ExpressionTypeError, ModelError
from .rules import kind_text


class Env:
    """Evaluation environment: variable values, an optional row subset, and a cache of node values."""

    def __init__(self, values: dict, rows: np.ndarray | None = None):
        self.values = values
        self.rows = rows
        self.cache: dict[int, object] = {}

    def __getitem__(self, w) -> np.ndarray:
        try:
            return self.values[w]
        except KeyError:
            raise ModelError(f"no value given for the variable {w.name!r}") from None


def environment(assignment: dict, rows=None, anywhere: bool = False) -> Env:
    """An :class:`Env` from ``{variable: array}`` (each value checked by its variable; ``anywhere``: only its shape,
    for the trial points of a method that may step outside the domain, e.g. an infeasible-start interior-point
    method)."""
    values = {}
    for w, v in assignment.items():
        if not hasattr(w, "check_value"):
            raise ExpressionTypeError("assignments map fairmodel.Weights to arrays")
        values[w] = np.asarray(v, dtype=float).reshape(w.shape) if anywhere else w.check_value(v)
    return Env(values, rows)


def evaluate(expr, assignment: dict, rows=None):
    """The NumPy value of ``expr`` with ``assignment`` mapping each Weights to an array."""
    return expr.numeric(environment(assignment, rows))


def value_and_grad(expr, assignment: dict, rows=None, anywhere: bool = False):
    """(value, {Weights: gradient}) of a scalar expression (subgradient where not differentiable)."""
    if expr.kind != "scalar":
        raise ExpressionTypeError(f"value_and_grad needs a scalar expression; got a {kind_text(expr)} one")
    env = environment(assignment, rows, anywhere)
    val = expr.numeric(env)
    grads: dict = {}
    expr.backprop(env, 1.0, grads)
    for w in expr.variables():
        grads.setdefault(w, np.zeros(w.shape))
    return val, grads
