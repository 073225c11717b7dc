"""DSL atoms of partial fairness and of difference-of-convex constraints (partial-fairness paper, He,
Huang, Yao, Lin, "Enforcing Fairness Where It Matters", 2025).

* ``fm.partial_dp(score, groups, band=(a, b)) <= kappa``: partial demographic parity (6) inside the rank
  band ``I = [a, b)``; lowered by the partial-fairness family to the data-driven model (13) with a grid of
  levels p and one auxiliary threshold θ_p per level.
* ``fm.weak_partial_dp(score, groups, band=(a, b), threshold=0.0) <= kappa``: weak partial parity (9),
  lowered to model (17) with the rewritten constraint (51).
* ``fm.dc(g, h) <= kappa``: any difference-of-convex constraint g - h <= kappa with g and h convex DSL
  expressions (checked by curvature).

The value of a partial-parity atom is the *true* empirical metric (:mod:`fairmodel.metrics.partial`) of
the current scores; it is a step function without a gradient, so only the family's models (13)/(17),
built with the ramp surrogate of Example B.3, are optimized, and their constraints are what the judge checks
(the true metric is reported beside them and can exceed kappa).
"""
from __future__ import annotations

import warnings

import numpy as np

from ...data.dataset import Dataset, Groups
from ...errors import DataError, ExpressionTypeError, ModelError
from ...metrics.partial import check_band, check_band_groups
from ...metrics.partial import partial_dp as _pdp_metric
from ...metrics.partial import weak_partial_dp as _wpdp_metric
from ...utilities import display
from ...utilities.validate import check_int, check_number
from ..core import Expr, as_expr
from ..notation import wrap
from ..variables import LinearScore

GRIDS = ("default", "in_I", "linspace")
DECOMPOSITIONS = ("paper", "minimal")


# ---------------------------------------------------------------------------------------------------
# Validation shared by the atoms
# ---------------------------------------------------------------------------------------------------
def _number(value, name: str) -> float:
    return check_number(value, name, error=ModelError)


def check_kappa(kappa, kind: str) -> float:
    """kappa in [0, 1] for the partial-parity models (the paper's range); kappa = 1 leaves (13) without levels."""
    kappa = _number(kappa, "kappa")
    if kappa < 0:
        raise ModelError(f"{kind} <= kappa needs kappa >= 0 (the allowed parity gap); got {kappa:g}")
    if kappa > 1:
        raise ModelError(f"{kind} <= kappa needs kappa <= 1 (the gap is a difference of probabilities); "
                         f"got {kappa:g}")
    if kappa == 1 and kind == "partial_dp":
        raise ModelError("partial_dp <= 1 holds for every model, and the level grid [alpha, beta - kappa "
                         "(beta - alpha)) of model (13) is empty; drop the constraint or use kappa < 1")
    if kappa == 0:
        warnings.warn(f"{kind} <= 0: the start w = 0 is feasible but not strictly (no Slater point); "
                      f"IDCA can stall. A small kappa > 0 (e.g. 0.005) is better conditioned.", stacklevel=3)
    return kappa


def _check_score(score, what: str) -> LinearScore:
    if not isinstance(score, LinearScore):
        raise ExpressionTypeError(f"{what} needs the linear score data.score(w) of a fairmodel.Weights; "
                                  f"got {score!r}")
    if score.w.n_outputs is not None:
        raise ModelError(f"{what} needs a scalar score (fm.Weights without n_outputs)")
    return score


def _check_groups(groups, score: LinearScore, band, what: str) -> Groups:
    g = Groups(groups)
    if len(g) != score.size:
        raise DataError(f"groups has {len(g)} entries but the score has {score.size} samples; they must match")
    g.require_nonempty(what)
    if g.n_groups < 2:
        raise DataError(f"{what} compares groups; the sensitive attribute has {g.n_groups} group (need >= 2)")
    check_band_groups(g.sizes, g.names, band, f"the rank band of {what}")
    return g


class _PartialAtom(Expr):
    """Common part of the two partial-parity atoms: a scalar, nonconvex, without a gradient."""

    metric_name = ""

    def __init__(self, score, groups, band):
        self.score = _check_score(score, self.metric_name)
        self.band = check_band(band)
        self.groups = _check_groups(groups, self.score, self.band, self.metric_name)
        self.args = (self.score,)

    @property
    def curvature(self):
        return "unknown"

    def _codes(self, env):
        return self.groups.codes if env.rows is None else self.groups.codes[env.rows]

    def backprop(self, env, upstream, grads):
        raise ModelError(f"{self.metric_name} is a step function of the scores and has no gradient; the "
                         f"partial-fairness family optimizes its ramp-surrogate model instead")


class PartialDP(_PartialAtom):
    """max_{k,k'} DP^I_{k,k'} of the scores (eq. (6)), empirical form (identity (29) on the
    empirical ranks).

    ``levels``, ``grid``: the finite grid Î of model (13): ``"default"`` = ``levels`` equally
    spaced points ``alpha + j (beta' - alpha) / levels`` with ``beta' = beta - kappa (beta - alpha)`` (inside
    the domain of Lemma 5.1), ``"in_I"`` = ``alpha + j (beta - alpha) / levels``, ``"linspace"`` =
    ``np.linspace(alpha, beta, levels)``, or an explicit array of levels.
    """

    metric_name = "partial_dp"

    def __init__(self, score, groups, band, levels: int = 10, grid="default"):
        super().__init__(score, groups, band)
        check_int(levels, "levels (the size of the grid of model (13))", error=ModelError)
        if isinstance(grid, str):
            if grid not in GRIDS:
                raise ModelError(f"grid must be one of {', '.join(GRIDS)} or an array of levels; got {grid!r}")
            self.grid_spec = grid
        else:
            self.grid_spec = self._check_levels(np.asarray(grid, dtype=float).ravel())
        self.n_levels = int(levels)

    def _check_levels(self, levels: np.ndarray) -> np.ndarray:
        alpha, beta = self.band
        if levels.size == 0:
            raise ModelError("the grid of levels of model (13) is empty")
        if not np.all(np.isfinite(levels)) or levels.min() < alpha or levels.max() > beta:
            raise ModelError(f"grid levels must lie in the band [{alpha:g}, {beta:g}]; got "
                             f"[{levels.min():g}, {levels.max():g}]")
        return np.unique(levels)

    def levels(self, kappa: float) -> np.ndarray:
        """The grid Î for the budget kappa (warns for levels outside Lemma 5.1's domain)."""
        alpha, beta = self.band
        top = beta - kappa * (beta - alpha)
        L = self.n_levels
        if isinstance(self.grid_spec, np.ndarray):
            levels = self.grid_spec
        elif self.grid_spec == "default":
            levels = alpha + np.arange(L) * (top - alpha) / L
        elif self.grid_spec == "in_I":
            levels = alpha + np.arange(L) * (beta - alpha) / L
        else:
            levels = np.linspace(alpha, beta, L)
        if np.any(levels >= top + 1e-12):
            warnings.warn(f"{int(np.sum(levels >= top + 1e-12))} grid level(s) lie outside [alpha, beta - kappa "
                          f"(beta - alpha)) = [{alpha:g}, {top:g}), the domain of Lemma 5.1; the "
                          f"constraints at those levels are stricter than partial parity needs", stacklevel=3)
        return np.asarray(levels, dtype=float)

    def _numeric(self, env):
        return self.measure(self.score.numeric(env), self._codes(env)).gap

    def measure(self, scores, codes=None):
        codes = self.groups.codes if codes is None else codes
        return _pdp_metric(scores, Groups(codes, names=self.groups.names), self.band)

    def render(self, n):
        _define_band(n, self)
        n.define("pDP", "pDP_I(h) = max over groups k, k' and thresholds theta of |G_k(theta) - G_k'(theta)| (the "
                        "largest pairwise gap): partial demographic parity in the rank band I (eq. (6) of He, Huang, "
                        "Yao, Lin 2025)",
                 "$\\mathrm{pDP}_I(h) = \\max_{k, k'} \\max_\\theta |G_k(\\theta) - G_{k'}(\\theta)|$ (the "
                 "largest pairwise gap): partial demographic parity in the rank band $I$ (eq.~(6) of He, Huang, Yao, "
                 "Lin 2025)")
        return _band_call(n, "pDP", self.band, self.score.render(n))


class WeakPartialDP(_PartialAtom):
    """max_{k,k'} WDP^I_{k,k'} of the scores at ``threshold`` θ̂ (eq. (9)), empirical form
    (identity (29) at θ̂).

    ``decomposition``: ``"paper"`` (Example B.5, keeps the S+ terms) or ``"minimal"`` (drops the S+ terms, which cancel
    in f); both give
    the same constraint function, different convex subproblems.
    """

    metric_name = "weak_partial_dp"

    def __init__(self, score, groups, band, threshold: float = 0.0, decomposition: str = "paper"):
        super().__init__(score, groups, band)
        self.threshold = _number(threshold, "threshold")
        if decomposition not in DECOMPOSITIONS:
            raise ModelError(f"decomposition must be one of {', '.join(DECOMPOSITIONS)}; got {decomposition!r}")
        self.decomposition = decomposition

    def _numeric(self, env):
        return self.measure(self.score.numeric(env), self._codes(env)).gap

    def measure(self, scores, codes=None):
        codes = self.groups.codes if codes is None else codes
        return _wpdp_metric(scores, Groups(codes, names=self.groups.names), self.band, threshold=self.threshold)

    def render(self, n):
        _define_band(n, self)
        t = n.number(self.threshold)
        n.define(("wpDP", t), f"wpDP_I(h > {t}) = max over groups k, k' of |G_k({t}) - G_k'({t})| (the largest "
                              f"pairwise gap): weak partial parity at the decision threshold {t} (eq. (9) of He, "
                              f"Huang, Yao, Lin 2025)",
                 f"$\\mathrm{{wpDP}}_I(h > {t}) = \\max_{{k, k'}} |G_k({t}) - G_{{k'}}({t})|$ (the largest "
                 f"pairwise gap): weak partial parity at the decision threshold ${t}$ (eq.~(9) of He, Huang, Yao, "
                 f"Lin 2025)")
        return _band_call(n, "wpDP", self.band, self.score.render(n) + n.pick(" > ", " > ") + t)


def _define_band(n, atom) -> None:
    names = ", ".join(map(str, atom.groups.names))
    n.define("G_k(theta)", f"G_k(theta) = (clip(F_k(theta), a, b) - a) / (b - a) for the band I = [a, b), F_k(theta) "
                           f"the share of group k's scores above theta (identity (29)); groups k: {names}",
             "$G_k(\\theta) = (\\mathrm{clip}(\\bar F_k(\\theta), a, b) - a) / (b - a)$ for the band $I = [a, b)$, "
             "$\\bar F_k(\\theta)$ the share of group $k$'s scores above $\\theta$ (identity (29)); groups $k$: "
             + display.latex_text(names))


def _band_call(n, name: str, band, body: str) -> str:
    a, b = (n.number(v) for v in band)
    return n.pick(f"{name}_[{a},{b})({body})", f"\\mathrm{{{name}}}_{{[{a},\\, {b})}}\\left({body}\\right)")


class DC(Expr):
    """g - h with g and h convex scalar expressions: a difference-of-convex function (eq. (21))."""

    def __init__(self, g, h):
        parts = []
        for label, e in (("first part g", g), ("second part h", h)):
            e = as_expr(e)
            if e.kind != "scalar":
                raise ExpressionTypeError(f"fm.dc(g, h): the {label} = {e} must be a scalar expression; it is a "
                                          f"{e.kind} vector (aggregate it with fm.mean or fm.max)")
            if not e.is_convex():
                raise ModelError(f"fm.dc(g, h) needs two convex parts; the {label} = {e} has curvature "
                                 f"{e.curvature!r}. Move concave terms to the other part with a minus sign "
                                 f"(g - h = g' - h' with g' = g + (-h_concave), ...)")
            parts.append(e)
        self.g, self.h = parts
        self.args = (self.g, self.h)

    def copy(self, args):
        return DC(*args)

    @property
    def curvature(self):
        if self.h.curvature in ("constant", "affine"):
            return self.g.curvature if self.g.curvature != "constant" else self.h.curvature
        return "unknown"

    def _numeric(self, env):
        return float(self.g.numeric(env) - self.h.numeric(env))

    def backprop(self, env, upstream, grads):
        self.g.backprop(env, upstream, grads)
        self.h.backprop(env, -upstream, grads)

    def render(self, n):
        return self.g.render(n) + " - " + wrap(self.h.render(n), n, self.h)


# ---------------------------------------------------------------------------------------------------
# Public constructors
# ---------------------------------------------------------------------------------------------------
def partial_dp(score, groups, band=(0.0, 1.0), *, levels: int = 10, grid="default") -> PartialDP:
    """Partial demographic parity of a linear score inside the rank band ``band = (alpha, beta)``: the **largest
    pairwise** gap max_{k, k'} between the groups (never a comparison with the population).

    Use as ``fm.partial_dp(s, data.groups, band=(0.7, 1.0)) <= kappa``: model (13) of the partial-fairness
    paper (ramp surrogate, ``levels`` grid levels p, one auxiliary threshold θ_p per level). The judge checks
    model (13)'s constraints, which bound the ramp surrogate; the true DP^I (this atom's value, a step function of
    the scores) is reported (metric ``<name>.gap``) and can exceed kappa.
    """
    return PartialDP(score, groups, band, levels, grid)


def weak_partial_dp(score, groups, band=(0.0, 1.0), *, threshold: float = 0.0,
                    decomposition: str = "paper") -> WeakPartialDP:
    """Weak partial demographic parity at the decision threshold ``threshold`` inside the rank band: the **largest
    pairwise** gap max_{k, k'} between the groups.

    Use as ``fm.weak_partial_dp(s, data.groups, band=(0.05, 0.3)) <= kappa``: model (17) with the DC split
    of Example B.5 built on identity (51). The judge checks model (17)'s constraint, the ramp surrogate of WDP^I;
    the true WDP^I (this atom's value) is reported (metric ``<name>.gap``) and can exceed kappa.
    """
    return WeakPartialDP(score, groups, band, threshold, decomposition)


def dc(g, h) -> DC:
    """The difference-of-convex function g - h (g, h convex scalar expressions), e.g. ``fm.dc(g, h) <= kappa``."""
    return DC(g, h)


def with_group_interactions(data: Dataset) -> Dataset:
    """The features of the paper's model ``h_w(ξ) = <w, (1, ξ, γ, γ ξ)>`` (Section 7) for two groups.

    Returns a dataset with columns ``(ξ, γ, γ·ξ)``, γ the 0/1 indicator of the second group (an affine
    recoding of the paper's γ in {1, 2}, so the model class is the same); add the constant with
    ``fm.Weights(..., intercept=True)``.
    """
    if not isinstance(data, Dataset):
        raise ExpressionTypeError(f"with_group_interactions needs a fairmodel.Dataset with groups; got "
                                  f"{type(data).__name__}")
    g = data.groups
    if g.n_groups != 2:
        raise DataError(f"with_group_interactions needs two groups; got {g.n_groups}")
    gamma = g.codes.astype(float)[:, None]
    X = np.hstack([data.X, gamma, gamma * data.X])
    names = list(data.feature_names) + [f"group={g.names[1]}"] + [f"group={g.names[1]}*{f}" for f in data.feature_names]
    return Dataset(X, data.y, g, feature_names=names,
                   name=data.name, target_name=data.target_name, sensitive_name=data.sensitive_name)
