"""Per-sample expressions of one linear score as data: the value of the atoms' fact ``Expr.score_form()``.

A per-sample expression built from one linear score z_i = x_i . w + b by losses, sums, scalar multiples and
products with fixed data vectors (the covariance of Zafar et al. 2017, the sample weights of an aggregate) is

    e_i(w) = c_i + sum_t a_{t,i} f_t(z_i, y_i),

f_t either the score itself or a pointwise loss kernel of :mod:`fairmodel.oracles.losses` (the kernel the loss atom
evaluates). Each atom states its form from its arguments' forms (a loss of the bare score, a multiple, a sum with
constants: :meth:`ScoreForm.scaled`, :meth:`ScoreForm.plus`), or None when it is not of this form; the tree
combines them as it combines curvatures. The form's :class:`PerSample` part is the expression's *jet* in the score:
its value and its first and second derivatives in z_i, row by row (:meth:`PerSample.jet`), with no walk over the
tree: what the compiled sample leaves of the generic stochastic lowering and the model-space method evaluate.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Term:
    """a_i f(z_i, y_i): ``kernel`` None for the score itself (f = z)."""

    coef: float | np.ndarray
    kernel: object = None
    y: np.ndarray | None = None


@dataclass
class PerSample:
    """e_i = const_i + sum_t a_{t,i} f_t(z_i, y_i) of one linear score z: data vectors and kernels only (no
    expression nodes, so that a chunk's part ships alone in a pass over chunked data)."""

    terms: list
    const: float | np.ndarray = 0.0

    def take(self, rows) -> "PerSample":
        """The expression restricted to ``rows`` (any shape of indices): its data vectors gathered once."""
        def at(v):
            return v[rows] if isinstance(v, np.ndarray) else v
        return PerSample([Term(at(t.coef), t.kernel, None if t.y is None else t.y[rows]) for t in self.terms],
                         at(self.const))

    def substituted(self, kernel_map) -> "PerSample":
        """The expression with every kernel k replaced by ``kernel_map(k)`` (e.g. a smoothed hinge)."""
        return PerSample([Term(t.coef, None if t.kernel is None else kernel_map(t.kernel), t.y) for t in self.terms],
                         self.const)

    def row_slice(self, start: int, stop: int) -> "PerSample":
        """The expression on the rows [start, stop) (views of the data vectors): a chunk's part in a pass."""
        return self.take(slice(start, stop))

    def scaled(self, c) -> "PerSample":
        """c e (a number, or one factor per row)."""
        return PerSample([Term(t.coef * c, t.kernel, t.y) for t in self.terms], self.const * c)

    @property
    def twice_differentiable(self) -> bool:
        """Every kernel has a second derivative (``d2phi``): :meth:`jet` applies (the model-space method's
        condition)."""
        return all(t.kernel is None or t.kernel.d2phi is not None for t in self.terms)

    def jet(self, z):
        """(e, de/dz, d^2e/dz^2) at the scores z of the rows the data vectors hold (every kernel has ``d2phi``)."""
        value, slope, curvature = np.zeros_like(z), np.zeros_like(z), np.zeros_like(z)
        for t in self.terms:
            if t.kernel is None:
                value += t.coef * z
                slope += t.coef
                continue
            value += t.coef * t.kernel.phi(z, t.y)
            slope += t.coef * t.kernel.dphi(z, t.y)
            curvature += t.coef * t.kernel.d2phi(z, t.y)
        return value + self.const, slope, curvature

    def value_and_slope(self, z, rows=None):
        """(e, de/dz) on the rows whose scores are z. ``rows`` indexes the data vectors (row indices, or the
        index of a minibatch in a :meth:`take` of several; None: the vectors as they are)."""
        def at(v):
            return v[rows] if isinstance(v, np.ndarray) and rows is not None else v

        def plus(total, part):          # total + part, skipping the additions and products of a plain sum
            return part if total is None else total + part
        value, slope = None, None
        for t in self.terms:
            a = at(t.coef)
            if t.kernel is None:
                f, df = z, 1.0
            else:
                y = at(t.y)
                f, df = t.kernel.phi(z, y), t.kernel.dphi(z, y)
            one = not isinstance(a, np.ndarray) and a == 1.0
            value, slope = plus(value, f if one else a * f), plus(slope, df if one else a * df)
        const = at(self.const)
        if isinstance(const, np.ndarray) or const != 0.0:
            value = value + const
        return value, slope       # value has the shape of z; slope may be a number (an affine expression)


@dataclass
class ScoreForm:
    """A per-sample expression as :class:`PerSample` ``per_sample`` of the linear score node ``score`` (None: the
    expression is a constant)."""

    score: object
    per_sample: PerSample

    @classmethod
    def constant(cls, value) -> "ScoreForm":
        """The form of a constant (a number, or one value per row)."""
        return cls(None, PerSample([], float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=float)))

    @property
    def bare(self) -> bool:
        """Whether the expression is the score z itself (what a loss takes)."""
        terms, const = self.per_sample.terms, self.per_sample.const
        return (self.score is not None and len(terms) == 1 and terms[0].kernel is None
                and not isinstance(terms[0].coef, np.ndarray) and terms[0].coef == 1.0
                and not isinstance(const, np.ndarray) and const == 0.0)

    def scaled(self, c) -> "ScoreForm":
        return ScoreForm(self.score, self.per_sample.scaled(c))

    def plus(self, other: "ScoreForm") -> "ScoreForm | None":
        """The form of the sum; None when the two are of the scores of two data sets or of two weights."""
        if self.score is not None and other.score is not None and \
                (self.score.data is not other.score.data or self.score.w is not other.score.w):
            return None
        score = self.score if self.score is not None else other.score
        mine, theirs = self.per_sample, other.per_sample
        return ScoreForm(score, PerSample(mine.terms + theirs.terms, mine.const + theirs.const))
