"""The difference-of-convex program (21) of a partial-fairness problem, with NumPy oracles.

``min_x f_0(x)  s.t.  f_i(x) = f_i+(x) - f_i-(x) <= 0,  i = 1..m``   (eq. (21) of the partial-fairness paper)

``x`` stacks every :class:`~fairmodel.expressions.Weights` of the problem and the auxiliary thresholds
θ of each partial-DP constraint (model (13)). One *block* per DSL constraint gives the values of f_i+ and
f_i- and their subgradients:

* ``RampBandBlock``, model (13) with the ramp split of Example B.3 (2 |Î| G constraints), and
  ``WeakBandBlock``, model (17) rewritten with identity (51), split of Example B.5 (``"paper"``) or a minimal
  split (G (G - 1) constraints, the S+ terms that cancel left out): :mod:`fairmodel.oracles.dc_bands`;
* :class:`ExprBlock`, a user's ``fm.dc(g, h) <= b`` (f+ = g, f- = h + b) or a convex ``c(w) <= b``.

Subgradients at kinks are 0 (at a kink the subgradient 0 is chosen): the active sets use strict
inequalities. The objective f_0 is any convex scalar expression (f_0+ = f_0, f_0- = 0); its value and
gradient, and those of the parts of ``fm.dc(g, h)``, come from the ``value_and_grad(expr, assignment)``
function the program is built with (the declarations' own, :func:`fairmodel.expressions.value_and_grad`),
so this module works on any expression without importing the declarations. The program is built from a
declaration by the partial-fairness reduction (:mod:`fairmodel.families.partial`).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError, UnsupportedProblemError
from ..utilities.recent import Recent
from .domains import project_ball

RECENT = 4          # points at which the f_i and their linearization are kept (:class:`DCProgram`)


class Layout:
    """The flat variable x = (every Weights, flattened; then the auxiliary vectors) and its views."""

    def __init__(self, weights: list, aux: list):
        self.weights = list(weights)
        self.slices, self.shapes = {}, {}
        start = 0
        for w in self.weights:
            self.slices[w.name], self.shapes[w.name] = slice(start, start + w.size), w.shape
            start += w.size
        for name, size in aux:
            self.slices[name], self.shapes[name] = slice(start, start + size), (size,)
            start += size
        self.aux_names = [name for name, _ in aux]
        self.D = start

    def split(self, x: np.ndarray) -> dict:
        """``{name: array}`` of every variable (Weights in their own shape)."""
        return {name: x[sl].reshape(self.shapes[name]).copy() for name, sl in self.slices.items()}

    def assignment(self, x: np.ndarray) -> dict:
        return {w: x[self.slices[w.name]].reshape(w.shape) for w in self.weights}

    def flat(self, grads: dict) -> np.ndarray:
        """A flat vector from ``{Weights: gradient}`` (zeros for the other variables)."""
        out = np.zeros(self.D)
        for w, g in grads.items():
            out[self.slices[w.name]] = np.ravel(g)
        return out

    def project(self, x: np.ndarray) -> np.ndarray:
        """Euclidean projection onto W: each Weights onto its ball (identity without a radius); θ is free."""
        out = x
        for w in self.weights:
            sl = self.slices[w.name]
            part = project_ball(x[sl], w.radius)
            if part is not x[sl]:
                out = out.copy() if out is x else out
                out[sl] = part
        return out


class Block:
    """One DSL constraint as ``m`` DC constraints; ``bound + scale * max_i f_i`` is the reported value.

    Subclasses give ``plus(x) -> (f+ values (m,), cache)``, ``plus_grad(x, i, cache) -> (D,)`` (a
    subgradient of f_i+), ``plus_jacobian(x) -> (m, D)`` (all of them) and ``minus(x) -> (f- values (m,), subgradients (m, D))``, the part IDCA
    linearizes (eq. (26)).
    """

    m = 0
    scale = 1.0
    bound = 0.0

    def values(self, x) -> np.ndarray:
        """f_i = f_i+ - f_i- (m,)."""
        return self.plus(x)[0] - self.minus(x)[0]

    def linearize(self, x):
        """(values (m,), slopes (m, D)) of an affine minorant of every f_i- tight at x, the linearization (26) of
        IDCA (default: f_i-(x) and its subgradient)."""
        return self.minus(x)

    def values_and_jacobian(self, x):
        """(f_i (m,), subgradients (m, D)) of f_i = f_i+ - f_i- at x."""
        minus, slopes = self.minus(x)
        return self.plus(x)[0] - minus, self.plus_jacobian(x) - slopes

    def start(self, x) -> None:
        """Fill this block's auxiliary variables of a starting point in place (no-op without any)."""


class ExprBlock(Block):
    """One constraint ``g - h <= b`` from ``fm.dc(g, h) <= b`` (f+ = g, f- = h + b), or ``c(w) <= b`` (h = 0).

    ``value_and_grad(expr, assignment) -> (value, {Weights: gradient})`` evaluates the expressions g and h.
    """

    def __init__(self, g, h, bound: float, name: str, layout: Layout, value_and_grad):
        self.g, self.h, self.name, self.layout = g, h, name, layout
        self.m, self.bound = 1, bound
        self.labels = [name]
        self.value_and_grad = value_and_grad

    def plus(self, x):
        return np.array([float(self.value_and_grad(self.g, self.layout.assignment(x))[0])]), None

    def plus_grad(self, x, i, cache):
        return self.layout.flat(self.value_and_grad(self.g, self.layout.assignment(x))[1])

    def plus_jacobian(self, x) -> np.ndarray:
        return self.plus_grad(x, 0, None)[None, :]

    def minus(self, x):
        if self.h is None:
            return np.array([self.bound]), np.zeros((1, self.layout.D))
        val, grads = self.value_and_grad(self.h, self.layout.assignment(x))
        return np.array([float(val) + self.bound]), self.layout.flat(grads)[None, :]


class DCProgram:
    """Objective, layout and constraint blocks of (21); every oracle works on the flat vector x."""

    def __init__(self, objective, blocks: list, layout: Layout, names: list, value_and_grad):
        self.objective, self.blocks, self.layout, self.names = objective, blocks, layout, names
        self.value_and_grad = value_and_grad
        self.smooth = None        # the objective as passes (a SmoothObjective), when it is one: set by the builder
        self.D = layout.D
        starts = np.cumsum([0] + [b.m for b in blocks])
        self.ranges = [range(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        self.m = int(starts[-1])
        self.labels = [lab for b in blocks for lab in b.labels]
        # the f_i and their linearization at the last few points (IDCA's record, its extrapolation, its next
        # subproblem and the judge ask at the same iterates: a pass each on chunked rows; f_0 by passes, ``smooth``,
        # keeps its own); the blocks' bounds are part of the key (the true-rate continuation tightens them)
        bounds = (lambda: [b.bound for b in self.blocks])
        self.values = Recent(self._values, RECENT, bounds)
        self.linearize = Recent(self._linearize, RECENT, bounds)

    # -- objective ---------------------------------------------------------------------------------------
    def objective_value(self, x) -> float:
        if self.smooth is not None:
            return float(self.smooth.value(x))
        return float(self.value_and_grad(self.objective, self.layout.assignment(x))[0])

    def objective_value_and_grad(self, x):
        if self.smooth is not None:
            return self.smooth.value_and_grad(x)
        val, grads = self.value_and_grad(self.objective, self.layout.assignment(x))
        return float(val), self.layout.flat(grads)

    # -- constraints -------------------------------------------------------------------------------------
    def plus(self, x):
        parts = [b.plus(x) for b in self.blocks]
        return np.concatenate([p[0] for p in parts]), [p[1] for p in parts]

    def plus_grad(self, x, i, caches) -> np.ndarray:
        for b, r, cache in zip(self.blocks, self.ranges, caches):
            if i in r:
                return b.plus_grad(x, i - r.start, cache)
        raise IndexError(i)

    def plus_jacobian(self, x) -> np.ndarray:
        """Subgradients (m, D) of every f_i+ at x (one pass per block)."""
        return np.vstack([b.plus_jacobian(x) for b in self.blocks])

    def _stacked(self, method: str, x):
        """(values (m,), rows (m, D)) of every block's ``method(x)`` -> (values, rows), stacked in block order."""
        parts = [getattr(b, method)(x) for b in self.blocks]
        return np.concatenate([p[0] for p in parts]), np.vstack([p[1] for p in parts])

    def minus(self, x):
        return self._stacked("minus", x)

    def _values(self, x) -> np.ndarray:
        return np.concatenate([b.values(x) for b in self.blocks])

    def _linearize(self, x):
        """(values, slopes) of the affine minorants of every f_i- at x that IDCA linearizes with (eq. (26)): a
        subgradient, the hinges within a hair of their kink given slope 0 with their value's exact correction
        (:meth:`fairmodel.oracles.dc_hinges.HingeAverages.linearization`), so that the path does not depend on the
        order rows are summed in. One pass per block."""
        return self._stacked("linearize", x)

    def values_and_jacobian(self, x):
        """(f_i (m,), subgradients (m, D)) of every f_i at x (one pass per block where the block has it in one)."""
        return self._stacked("values_and_jacobian", x)

    def max_violation(self, x) -> float:
        return float(np.max(self.values(x), initial=-np.inf))

    def constraint_levels(self, x) -> dict:
        """``{constraint name: bound + scale * max_i f_i}`` (<= bound iff the block is feasible)."""
        return {name: b.bound + b.scale * float(np.max(b.values(x)))
                for name, b in zip(self.names, self.blocks)}

    def project(self, x):
        return self.layout.project(x)

    # -- starting points -----------------------------------------------------------------------------------
    def start(self, values: dict | None = None) -> np.ndarray:
        """x from ``{name: array}`` (missing Weights = 0; missing θ from the block's ``start``)."""
        values = dict(values or {})
        unknown = set(values) - set(self.layout.slices)
        if unknown:
            raise ModelError(f"unknown variable(s) {sorted(unknown)} in the start; the variables are "
                             f"{sorted(self.layout.slices)}")
        x = np.zeros(self.D)
        for w in self.layout.weights:
            if w.name in values:
                x[self.layout.slices[w.name]] = np.ravel(w.check_value(values[w.name], "start"))
        for b in self.blocks:
            aux = getattr(b, "aux_name", f"theta_{b.name}")
            if aux in values:
                theta = np.asarray(values[aux], dtype=float).ravel()
                if theta.shape != (self.layout.slices[aux].stop - self.layout.slices[aux].start,) \
                        or not np.all(np.isfinite(theta)):
                    raise ModelError(f"start value {aux} must be a finite vector with one threshold per level")
                x[self.layout.slices[aux]] = theta
            else:
                b.start(x)
        return x

    def penalty(self, x):
        """Sum of the penalty terms (78)/(83) of the partial-parity blocks and its subgradient."""
        total, grad = 0.0, np.zeros(self.D)
        for b in self.blocks:
            if not hasattr(b, "penalty"):
                raise UnsupportedProblemError(f"constraint {b.name} has no penalty form; the penalty baseline "
                                              f"(78)/(83) covers partial_dp and weak_partial_dp constraints only")
            v, g = b.penalty(x)
            total, grad = total + v, grad + g
        return total, grad
