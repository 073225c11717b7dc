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

from ..errors import UnsupportedProblemError
from ..exact import budget
from ..expressions import (
    Abs,
    Add,
    Constant,
    Expr,
    GroupMean,
    GroupOptimal,
    Max,
    Mean,
    Min,
    Multiply,
    Norm,
    Parameter,
    Pos,
    ScalarMul,
    SquaredLoss,
    Sum,
    SumSquares,
    value_and_grad,
)
from ..expressions.atoms.auc import AUCGap, AUCLoss
from ..expressions.variables import LinearScore
from ..oracles.pairs import set_means

MAX_PIECES = 10_000     # a constraint's product expansion beyond this size is refused (state the sizes)


class NotPiecewise(UnsupportedProblemError):
    """The declaration is convex but not a piecewise-linear function of means and exact terms."""


@dataclass
class SampleLeaf:
    """(1/|S|) sum_{i in S} e_i(w) for the per-sample node ``expr`` and the row mask ``rows`` (None: all)."""

    expr: Expr
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
    low_rank: bool = False          # a smooth quadratic of low rank given by value_grad only, possibly indefinite
                                    # (the AUC atoms' mean products at many parameters): no Hessian is formed

    def key(self):
        return ("exact", id(self.node), self.label)

    def hessian(self) -> np.ndarray | None:
        """The Hessian of a smooth exact leaf in its variable: A + A' of a quadratic theta' A theta + g' theta + c,
        2 diag(mask) of a sum of squares of the weights; None for a term that is not twice differentiable."""
        if self.lipschitz is not None or self.low_rank:
            return None
        if self.quadratic is not None:
            A = self.quadratic[0]
            return A + A.T
        if isinstance(self.node, SumSquares):
            mask = self.node._mask()
            return 2.0 * np.diag(mask if mask.ndim == 1 else mask[:, 0])     # a matrix of weights: per row
        return None

    def hessian_diagonal(self) -> np.ndarray | None:
        """The diagonal of :meth:`hessian` without forming the matrix (high-dimensional weights)."""
        if self.lipschitz is not None or self.low_rank:
            return None
        if self.quadratic is not None:
            return 2.0 * np.diag(self.quadratic[0])
        if isinstance(self.node, SumSquares):
            mask = self.node._mask()
            return 2.0 * np.asarray(mask if mask.ndim == 1 else mask[:, 0], dtype=float)
        return None


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

    # -- the walk: one rule per node type, in the tables SCALAR_RULES and VECTOR_RULES below -------------------
    def scalar(self, e: Expr, s: float) -> PL:
        """The piecewise form of s * e (which must be convex)."""
        if s == 0:
            return PL()
        rule = _rule(SCALAR_RULES, e)
        if rule is None:
            return self._refuse(e, "it has no stochastic lowering")
        return rule(self, e, s)

    def vector(self, e: Expr, s: float) -> list:
        """One piecewise form per entry of s * e (a per-group or constant vector)."""
        rule = _rule(VECTOR_RULES, e)
        if rule is None:
            return self._refuse(e, "it has no stochastic lowering as a vector")
        return rule(self, e, s)

    def check_sign(self, e, s):
        if (s > 0 and not e.is_convex()) or (s < 0 and not e.is_concave()):
            self._refuse(e, f"{'-' if s < 0 else ''}({e}) is not convex (curvature {e.curvature})")

    def mean_leaf(self, e: Mean, s: float) -> PL:
        self.check_sign(e.expr, s)
        label = f"mean {e.expr}" + ("" if e.where is None else " [where]")
        return PL(self.leaf(SampleLeaf(e.expr, e.where, e.count, label)).scaled(s))

    def _refuse(self, e, why: str):
        raise NotPiecewise(f"{type(e).__name__} ({e}) cannot be lowered to the stochastic primal-dual method: "
                           f"{why}")


def _rule(table: dict, e):
    """The rule of ``e``'s type or of its nearest base class in ``table``."""
    return next((table[cls] for cls in type(e).__mro__ if cls in table), None)


# -- scalar rules: (builder, e, s) -> PL of s * e ----------------------------------------------------------------
def _constant(b: Builder, e, s):
    return PL(Affine({}, s * float(e.constant_value())))


def _add(b: Builder, e, s):
    out = PL()
    for t in e.args:
        out = out.plus(b.scalar(t, s))
    return out


def _extremum(b: Builder, e, s):
    if (e.own_curvature == "convex") != (s > 0):      # max of s > 0, or min of s < 0: a max of pieces
        return b._refuse(e, f"{'-' if s < 0 else ''}{type(e).__name__.lower()} is concave here")
    entries = b.vector(e.args[0], s) if e.vector else [b.scalar(a, s) for a in e.args]
    return PL(Affine(), [[p for entry in entries for p in entry.pieces()]])


def _pos(b: Builder, e, s):
    if s < 0:
        return b._refuse(e, "-pos(x) is concave")
    return PL(Affine(), [b.scalar(e.expr, s).pieces() + [Affine()]])


def _abs(b: Builder, e, s):
    if s < 0:
        return b._refuse(e, "-|x| is concave")
    return PL(Affine(), [b.scalar(e.expr, s).pieces() + b.scalar(e.expr, -s).pieces()])


def _sum(b: Builder, e, s):
    if e.expr.kind == "samples":
        return b.mean_leaf(Mean(e.expr), s * e.expr.size)
    out = PL()
    for entry in b.vector(e.expr, s):
        out = out.plus(entry)
    return out


def _exact_node(b: Builder, e, s):
    """A norm of the weights: a deterministic leaf, exact at every step."""
    b.check_sign(e, s)
    if e.w is not b.w:
        b._refuse(e, "it is a function of another variable")

    def value_grad(theta, node=e, w=b.w):
        value, grads = value_and_grad(node, {w: theta}, anywhere=True)    # an IPM trial point may leave the ball
        return float(value), grads[w]
    return PL(b.leaf(DeterministicLeaf(value_grad, str(e), node=e, lipschitz=e.lipschitz)).scaled(s))


# -- vector rules: (builder, e, s) -> one PL per entry of s * e ----------------------------------------------------
def _constant_vector(b: Builder, e, s):
    return [PL(Affine({}, s * float(v))) for v in np.asarray(e.constant_value(), dtype=float)]


def _group_optimal(b: Builder, e, s):
    if e.resolved:
        return _constant_vector(b, e, s)
    if not b.structure_only:
        b._refuse(e, "its values R*_g are not computed yet")
    return [PL() for _ in range(e.size)]


def _group_mean(b: Builder, e, s):
    b.check_sign(e.expr, s)
    out = []
    for g, name in enumerate(e.groups.names):
        rows = e.codes == g
        leaf = SampleLeaf(e.expr, rows, int(rows.sum()), f"mean {e.expr} [group {name}]")
        out.append(PL(b.leaf(leaf).scaled(s)))
    return out


def _add_vector(b: Builder, e, s):
    out = [PL() for _ in range(e.size)]
    for t in e.args:
        parts = [b.scalar(t, s)] * e.size if t.kind == "scalar" else b.vector(t, s)
        out = [x.plus(y) for x, y in zip(out, parts)]
    return out


def _multiply_vector(b: Builder, e, s):
    """A data vector times a per-group vector: entry g scaled by s a_g."""
    signed = {}
    for sign in {1.0 if s * a >= 0 else -1.0 for a in e.a}:
        signed[sign] = b.vector(e.expr, sign)
    return [signed[1.0 if s * a >= 0 else -1.0][g].scaled(abs(s * a)) for g, a in enumerate(e.a)]


def _max_of_two(b: Builder, e, s, other: list):
    """max(s e_g, other_g) per entry: pos (other 0) and abs (other -s e_g) of a vector."""
    if s < 0:
        return b._refuse(e, "a negative multiple of pos / abs is concave")
    return [PL(Affine(), [x.pieces() + y.pieces()]) for x, y in zip(b.vector(e.expr, s), other)]


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
    if builder.w.shape[0] > budget.DENSE_PARAMETERS:
        return _auc_blocks_by_samples(builder, atom)
    pairs = atom.pairs
    moments = atom.linear_moments()             # one pass over the rows (in memory or in chunks), once per atom
    out = []
    for k in range(pairs.n_blocks):
        A, g, c = moments.quadratic(pairs, (pairs.block == k).astype(float))

        def value_grad(theta, A=A, g=g, c=c):
            At = A @ theta
            return float(theta @ At + g @ theta + c), 2.0 * At + g
        leaf = DeterministicLeaf(value_grad, f"{atom} block {k}", node=atom, quadratic=(A, g, c))
        out.append(builder.leaf(leaf))
    return out


def _auc_blocks_by_samples(builder: Builder, atom) -> list:
    """The blocks of an AUC atom without D x D moments (more than budget.DENSE_PARAMETERS parameters, e.g. a sparse design).
    With q = c1 and no interval, a pair risk is c1 [(m_S - m_S' - c2)^2 + v_S + v_S'] (Lemma 1, eq. (7), at its
    optimal a = m_S, b = m_S', alpha = m_S - m_S'), that is

        c1 [E_S h^2 + E_S' h^2] + c1 [c2^2 - 2 c2 (m_S - m_S') - 2 m_S m_S'],

    the means of the squared score over the sets (sample leaves: minibatch estimates) plus a quadratic of rank two in
    the score means m_S = mu_S . theta, exact from the per-set mean design rows mu_S (one pass, O(sets x D))."""
    pairs, score = atom.pairs, atom.score
    means = set_means(score.data, pairs, builder.w.intercept)
    square = SquaredLoss(score, np.zeros(score.size))
    found = {}

    def mean_square(s: int) -> Affine:
        if s not in found:
            mask = pairs.masks[s]
            expr = square if pairs.weights is None else \
                Multiply(pairs.weights * (mask.sum() / pairs.set_weights[s]), square)
            found[s] = builder.leaf(SampleLeaf(expr, mask, int(mask.sum()), f"mean h^2 [{type(atom).__name__} set {s}]"))
        return found[s]
    out = []
    for k in range(pairs.n_blocks):
        i = np.flatnonzero(pairs.block == k)
        first, second, c1, c2 = pairs.first[i], pairs.second[i], pairs.c1[i], pairs.c2[i]
        block = Affine()
        for f, t, c in zip(first, second, c1):
            block = block.plus(mean_square(f).scaled(c)).plus(mean_square(t).scaled(c))

        def value_grad(theta, first=first, second=second, c1=c1, c2=c2):
            m = means @ theta
            mf, mt = m[first], m[second]
            value = float(np.sum(c1 * (c2 ** 2 - 2.0 * c2 * (mf - mt) - 2.0 * mf * mt)))
            dm = np.bincount(first, c1 * (-2.0 * c2 - 2.0 * mt), len(means)) + \
                np.bincount(second, c1 * (2.0 * c2 - 2.0 * mf), len(means))
            return value, dm @ means
        leaf = DeterministicLeaf(value_grad, f"{type(atom).__name__} block {k}: products of means", node=atom, low_rank=True)
        out.append(block.plus(builder.leaf(leaf)))
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


SCALAR_RULES = {
    Constant: _constant, Parameter: _constant, Add: _add,
    ScalarMul: lambda b, e, s: b.scalar(e.expr, s * e.c),
    Max: _extremum, Min: _extremum, Pos: _pos, Abs: _abs, Sum: _sum,
    Mean: lambda b, e, s: b.mean_leaf(e, s), SumSquares: _exact_node, Norm: _exact_node,
    AUCGap: _auc_gap, AUCLoss: _auc_loss,
}
VECTOR_RULES = {
    Constant: _constant_vector, GroupMean: _group_mean, Add: _add_vector,
    ScalarMul: lambda b, e, s: b.vector(e.expr, s * e.c), Multiply: _multiply_vector,
    GroupOptimal: _group_optimal,
    Pos: lambda b, e, s: _max_of_two(b, e, s, [PL() for _ in range(e.size)]),
    Abs: lambda b, e, s: _max_of_two(b, e, s, b.vector(e.expr, -s)),
}


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
        form = b.scalar(c.lhs, 1.0).plus(b.scalar(c.rhs, -1.0))
        expanded = form.pieces()
        pieces += expanded
        labels += [c.name if len(expanded) == 1 else f"{c.name}[{j}]" for j in range(len(expanded))]
    return SaddleForm(b.leaves, objective.affine, objective.terms, pieces, labels)
