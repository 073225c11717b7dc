"""Evaluating declarations: the environment of variable values (and of a minibatch of rows), values and
gradients of expressions for given arrays."""
from __future__ import annotations

import numpy as np

from ..data.passes import row_sums
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


class FormSums:
    """One chunk's per-code sums of per-sample expressions of one linear score x . w + b: a picklable per-chunk
    function of a pass (:func:`fairmodel.data.passes.row_sums`). ``sizes``: the number of codes of each expression;
    ``coded``: whether it has per-row codes (else every row is in code 0). The arguments are the chunk's rows, then
    per expression its codes (when coded) and its :class:`~fairmodel.expressions.score_forms.PerSample` part."""

    def __init__(self, w, b: float, sizes: list, coded: list):
        self.w, self.b, self.sizes, self.coded = np.asarray(w, dtype=float), float(b), sizes, coded

    def __call__(self, batch, *parts):
        z = batch.X @ self.w + self.b
        out, k = [], 0
        for m, coded in zip(self.sizes, self.coded):
            codes = parts[k] if coded else None
            form = parts[k + coded]
            k += 1 + coded
            value = np.broadcast_to(form.value_and_slope(z)[0], z.shape)
            if codes is None:
                out.append(np.array([value.sum()]))
            else:
                keep = codes >= 0
                out.append(np.bincount(codes[keep], weights=value[keep], minlength=m))
        return tuple(out)


def aggregates_by_pass(env: Env, exprs) -> None:
    """Fill ``env``'s cache with the value of every aggregate over all rows (mean, group mean, sum: the fact
    :meth:`~fairmodel.expressions.Expr.aggregated_rows`) in ``exprs`` whose argument is a per-sample expression of one
    linear score on chunked data (its fact ``score_form()``): one pass per score returns only the per-code sums, so
    that walking ``exprs`` afterwards never holds a value per row of those arguments in this process. Does nothing
    for a minibatch environment or in-memory data (there a walk computes the same numbers)."""
    if env.rows is not None:
        return
    by_score: dict = {}
    for expr in exprs:
        for node in expr.nodes():
            spec = node.aggregated_rows()
            if spec is None or id(node) in env.cache or not any(
                    getattr(getattr(n, "data", None), "is_chunked", False) for n in node.args[0].nodes()):
                continue
            form = node.args[0].score_form()
            if form is None or form.score is None or not getattr(form.score.data, "is_chunked", False):
                continue
            entry = by_score.setdefault(id(form.score), (form.score, {}))
            entry[1][id(node)] = (node, spec, form.per_sample)
    for score, found in by_score.values():
        w, b = score.w.split(env[score.w])
        nodes = list(found.values())
        per_row = [a for _, (codes, _), form in nodes for a in ((form,) if codes is None else (codes, form))]
        fn = FormSums(w, b, [m for _, (_, m), _ in nodes], [codes is not None for _, (codes, _), _ in nodes])
        for (node, _, _), sums in zip(nodes, row_sums(score.data, fn, *per_row)):
            env.cache[id(node)] = node.value_from_row_sums(sums)
