"""A convex declaration as a piecewise-linear function of *leaves*: the structure of its Lagrangian saddle form.

Every convex declaration the generic lowering accepts is, once its nonlinearities over expectations are
named, a sum of maxima of affine functions of leaves:

* a **sample leaf** is a mean over a set of rows S of a per-sample expression e_i(w) (``fm.mean(e, where=)``,
  one entry of ``fm.group_mean(e, groups, where=)``, ``fm.sum`` of a per-sample expression): it has unbiased
  minibatch estimates from rows drawn in S;
* a **deterministic leaf** is computed exactly at every step: a norm of the weights, or a quadratic of the
  weights such as the pair risks of the AUC atoms of a linear score (from per-set means and covariances).

``max`` over a vector or over scalars, ``pos`` and ``abs`` of affine arguments, and ``-min`` become maxima of
pieces; sums of maxima are kept as separate terms in the objective (each gets its own simplex of weights in the
saddle form) and expanded into one list of pieces in a constraint (each piece gets its own multiplier).
Nonlinear functions of expectations (e.g. the square of a mean) are refused with the node named.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from .. import expressions as E
from ..errors import UnsupportedProblemError
from ..expressions.atoms.auc import AUCGap, AUCLoss
from ..expressions.variables import LinearScore

MAX_PIECES = 10_000     # a constraint's product expansion beyond this size is refused (state the sizes)


class NotPiecewise(UnsupportedProblemError):
    """The declaration is convex but not a piecewise-linear function of means and exact terms."""


@dataclass
class SampleLeaf:
    """(1/|S|) sum_{i in S} e_i(w) for the per-sample node ``expr`` and the row mask ``rows`` (None: all)."""

    expr: E.Expr
    rows: np.ndarray | None
    count: int
    label: str

    def key(self):
        return ("sample", id(self.expr), None if self.rows is None else self.rows.tobytes())


@dataclass
class DeterministicLeaf:
    """A term computed exactly at every step: ``value_grad(theta) -> (value, gradient)`` of one variable."""

    value_grad: object
    label: str
    node: object = None            # the declared node it stands for (lowered to CVXPY by the certificate)
    quadratic: tuple | None = None  # (A, g, c): theta' A theta + g' theta + c, when it is a quadratic
    lipschitz: float | None = None  # for a non-smooth term (a norm): its Lipschitz constant, else None

    def key(self):
        return ("exact", id(self.node), self.label)


@dataclass
class Affine:
    """const + sum_k coef[k] * leaf_k."""

    coef: dict = field(default_factory=dict)
    const: float = 0.0

    def scaled(self, s: float) -> "Affine":
        return Affine({k: s * v for k, v in self.coef.items()}, s * self.const)

    def plus(self, other: "Affine") -> "Affine":
        coef = dict(self.coef)
        for k, v in other.coef.items():
            coef[k] = coef.get(k, 0.0) + v
        return Affine(coef, self.const + other.const)


@dataclass
class PL:
    """affine + sum over terms of max over pieces: a convex piecewise-linear function of the leaves."""

    affine: Affine = field(default_factory=Affine)
    terms: list = field(default_factory=list)      # list of lists of Affine

    def scaled(self, s: float) -> "PL":
        assert s >= 0
        return PL(self.affine.scaled(s), [[p.scaled(s) for p in t] for t in self.terms])

    def plus(self, other: "PL") -> "PL":
        return PL(self.affine.plus(other.affine), self.terms + other.terms)

    def pieces(self) -> list:
        """The expansion into one max of affine pieces (sums of maxima distribute over the maxima)."""
        size = int(np.prod([len(t) for t in self.terms])) if self.terms else 1
        if size > MAX_PIECES:
            raise NotPiecewise(f"the expansion of a constraint into pieces has {size} > {MAX_PIECES} pieces; "
                               f"split the constraint into several constraints")
        out = []
        for combo in itertools.product(*self.terms):
            a = self.affine
            for p in combo:
                a = a.plus(p)
            out.append(a)
        return out


class Builder:
    """Walks a canonical declaration and records its leaves (deduplicated) and its piecewise form."""

    def __init__(self, weights, structure_only: bool = False):
        self.w = weights
        self.structure_only = structure_only        # unresolved constants as zeros: to check lowerability only
        self.leaves: list = []
        self._index: dict = {}

    def leaf(self, leaf) -> Affine:
        key = leaf.key()
        if key not in self._index:
            self._index[key] = len(self.leaves)
            self.leaves.append(leaf)
        return Affine({self._index[key]: 1.0})

    # -- scalars ---------------------------------------------------------------------------------------
    def scalar(self, e: E.Expr, s: float) -> PL:
        """The piecewise form of s * e (which must be convex)."""
        if s == 0:
            return PL()
        if isinstance(e, (E.Constant, E.Parameter)):
            return PL(Affine({}, s * float(e.constant_value())))
        if isinstance(e, E.Add):
            out = PL()
            for t in e.args:
                out = out.plus(self.scalar(t, s))
            return out
        if isinstance(e, E.ScalarMul):
            return self.scalar(e.expr, s * e.c)
        if isinstance(e, (E.Max, E.Min)):
            convex_side = isinstance(e, E.Max) == (s > 0)
            if not convex_side:
                return self._refuse(e, f"{'-' if s < 0 else ''}{type(e).__name__.lower()} is concave here")
            entries = self.vector(e.args[0], s) if e.vector else [self.scalar(a, s) for a in e.args]
            return PL(Affine(), [[p for entry in entries for p in entry.pieces()]])
        if isinstance(e, E.Pos):
            if s < 0:
                return self._refuse(e, "-pos(x) is concave")
            return PL(Affine(), [self.scalar(e.expr, s).pieces() + [Affine()]])
        if isinstance(e, E.Abs):
            if s < 0:
                return self._refuse(e, "-|x| is concave")
            return PL(Affine(), [self.scalar(e.expr, s).pieces() + self.scalar(e.expr, -s).pieces()])
        if isinstance(e, E.Sum):
            if e.expr.kind == "samples":
                return self._mean_leaf(E.Mean(e.expr), s * e.expr.size)
            out = PL()
            for entry in self.vector(e.expr, s):
                out = out.plus(entry)
            return out
        if isinstance(e, E.Mean):
            return self._mean_leaf(e, s)
        if isinstance(e, (E.SumSquares, E.Norm)):
            return self._exact_node(e, s)
        rule = FAMILY_ATOMS.get(type(e))
        if rule is not None:
            return rule(self, e, s)
        return self._refuse(e, "it has no stochastic lowering")

    def _check_sign(self, e, s):
        if (s > 0 and not e.is_convex()) or (s < 0 and not e.is_concave()):
            self._refuse(e, f"{'-' if s < 0 else ''}({e}) is not convex (curvature {e.curvature})")

    def _mean_leaf(self, e: E.Mean, s: float) -> PL:
        self._check_sign(e.expr, s)
        label = f"mean {e.expr}" + ("" if e.where is None else " [where]")
        return PL(self.leaf(SampleLeaf(e.expr, e.where, e.count, label)).scaled(s))

    def _exact_node(self, e, s: float) -> PL:
        self._check_sign(e, s)
        if e.w is not self.w:
            self._refuse(e, "it is a function of another variable")

        def value_grad(theta, node=e, w=self.w):
            value, grads = E.value_and_grad(node, {w: theta})
            return float(value), grads[w]
        # norms are Lipschitz but not smooth: ||.||_1 is sqrt(size)-Lipschitz in l2, ||.||_2 and ||.||_inf 1-Lipschitz
        lipschitz = None if isinstance(e, E.SumSquares) else (np.sqrt(e.w.size) if e.p == 1 else 1.0)
        return PL(self.leaf(DeterministicLeaf(value_grad, str(e), node=e, lipschitz=lipschitz)).scaled(s))

    # -- vectors ---------------------------------------------------------------------------------------
    def vector(self, e: E.Expr, s: float) -> list:
        """One piecewise form per entry of s * e (a per-group or constant vector)."""
        if isinstance(e, E.GroupOptimal) and not e.resolved:
            if not self.structure_only:
                self._refuse(e, "its values R*_g are not computed yet")
            return [PL() for _ in range(e.size)]
        if isinstance(e, (E.Constant, E.GroupOptimal)):
            return [PL(Affine({}, s * float(v))) for v in np.asarray(e.constant_value(), dtype=float)]
        if isinstance(e, E.GroupMean):
            self._check_sign(e.expr, s)
            out = []
            for g, name in enumerate(e.groups.names):
                rows = e.codes == g
                leaf = SampleLeaf(e.expr, rows, int(rows.sum()), f"mean {e.expr} [group {name}]")
                out.append(PL(self.leaf(leaf).scaled(s)))
            return out
        if isinstance(e, E.Add):
            out = [PL() for _ in range(e.size)]
            for t in e.args:
                parts = [self.scalar(t, s)] * e.size if t.kind == "scalar" else self.vector(t, s)
                out = [a.plus(b) for a, b in zip(out, parts)]
            return out
        if isinstance(e, E.ScalarMul):
            return self.vector(e.expr, s * e.c)
        if isinstance(e, E.Multiply):      # a data vector times a per-group vector: entry g scaled by s a_g
            signed = {}
            for sign in {1.0 if s * a >= 0 else -1.0 for a in e.a}:
                signed[sign] = self.vector(e.expr, sign)
            return [signed[1.0 if s * a >= 0 else -1.0][g].scaled(abs(s * a)) for g, a in enumerate(e.a)]
        if isinstance(e, (E.Pos, E.Abs)):
            inner = [self.vector(e.expr, s), self.vector(e.expr, -s)] if isinstance(e, E.Abs) else \
                [self.vector(e.expr, s), [PL() for _ in range(e.size)]]
            if s < 0:
                return self._refuse(e, "a negative multiple of pos / abs is concave")
            return [PL(Affine(), [a.pieces() + b.pieces()]) for a, b in zip(*inner)]
        return self._refuse(e, "it has no stochastic lowering as a vector")

    def _refuse(self, e, why: str):
        raise NotPiecewise(f"{type(e).__name__} ({e}) cannot be lowered to the stochastic primal-dual method: "
                           f"{why}")


# ---------------------------------------------------------------------------------------------------------
# Family atoms with a piecewise form: the AUC atoms of a linear score are quadratics of the weights
# ---------------------------------------------------------------------------------------------------------
def _auc_blocks(builder: Builder, atom) -> list:
    """One exact quadratic leaf per block of the atom's pair risks (moment form, Yao, Lin, Yang eq. (7))."""
    score = atom.score
    if not isinstance(score, LinearScore) or score.w is not builder.w:
        builder._refuse(atom, "the AUC atoms lower to quadratics only for the linear score of the weights")
    if atom.surrogate.half_width is not None or atom.surrogate.alpha_quad_coef != "c1":
        builder._refuse(atom, "the quadratic (pairwise) form needs interval=None and alpha_quad_coef='c1'")
    pairs = atom.pairs
    moments = pairs.linear_moments(score.design())
    out = []
    for k in range(pairs.n_blocks):
        A, g, c = moments.quadratic(pairs, (pairs.block == k).astype(float))

        def value_grad(theta, A=A, g=g, c=c):
            At = A @ theta
            return float(theta @ At + g @ theta + c), 2.0 * At + g
        leaf = DeterministicLeaf(value_grad, f"{atom} block {k}", node=atom, quadratic=(A, g, c))
        out.append(builder.leaf(leaf))
    return out


def _auc_gap(builder: Builder, atom: AUCGap, s: float) -> PL:
    if s < 0:
        builder._refuse(atom, "a negative multiple of the AUC gap is concave")
    f1, f2 = _auc_blocks(builder, atom)
    return PL(Affine({}, -s), [[f1.scaled(s), f2.scaled(s)]])      # max(f1, f2) - 1


def _auc_loss(builder: Builder, atom: AUCLoss, s: float) -> PL:
    if s < 0:
        builder._refuse(atom, "a negative multiple of the AUC loss is concave")
    return PL(_auc_blocks(builder, atom)[0].scaled(s))


FAMILY_ATOMS = {AUCGap: _auc_gap, AUCLoss: _auc_loss}


@dataclass
class SaddleForm:
    """min_w max_{y} affine(w) + sum_t <y_t, pieces_t(w)> + bound * <mu, (C(w), 0)>: the Lagrangian with an
    exact penalty (one simplex per objective term, one scaled simplex over the constraint pieces and a slack)."""

    leaves: list
    affine: Affine
    objective_terms: list        # list of lists of Affine
    constraint_pieces: list      # list of Affine (each <= 0)
    constraint_labels: list


def saddle_form(canonical, weights, structure_only: bool = False) -> SaddleForm:
    """The saddle form of a canonical convex problem (raises :class:`NotPiecewise` naming the node);
    ``structure_only`` checks that it exists without computing constants such as R*_g."""
    b = Builder(weights, structure_only)
    objective = b.scalar(canonical.objective, 1.0)
    pieces, labels = [], []
    for c in canonical.constraints:
        form = b.scalar(c.lhs, 1.0).plus(b.scalar(c.rhs, -1.0)) if not isinstance(c.rhs, (E.Constant,
                                                                                          E.Parameter)) \
            else b.scalar(c.lhs, 1.0).plus(PL(Affine({}, -float(c.rhs.constant_value()))))
        expanded = form.pieces()
        pieces += expanded
        labels += [c.name if len(expanded) == 1 else f"{c.name}[{j}]" for j in range(len(expanded))]
    return SaddleForm(b.leaves, objective.affine, objective.terms, pieces, labels)
