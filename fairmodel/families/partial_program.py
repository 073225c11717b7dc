"""The program object of the partial-fairness reduction (He, Huang, Yao, Lin 2025): the DC program (21) of a
canonical declaration (one block per constraint: models (13) and (17), ramp rate gaps, ``fm.dc(g, h) <= b`` and
convex ``c(w) <= b``), the max-constraint oracle of the switching-subgradient methods, and the checks of the IDCA
options."""
from __future__ import annotations

import numpy as np

from ..errors import ModelError, OptionError
from ..exact.partial import loss_rows, split_objective
from ..expressions import SumSquares, evaluate, value_and_grad
from ..expressions.atoms.partial import DC, PartialDP, WeakPartialDP, check_kappa
from ..expressions.atoms.rates import RampRateGap
from ..oracles.dc import DCProgram, ExprBlock, Layout
from ..oracles.dc_bands import RampBandBlock, WeakBandBlock
from ..oracles.dc_ipm import SmoothObjective
from ..oracles.dc_rates import RampRateBlock
from ..oracles.dc_working_set import HingeSource
from ..oracles.losses import LossSums
from ..oracles.metric import second_moment
from ..utilities.validate import check_int, check_number

# Default proximal weight μ ((μ/2)||x||^2 added to both convex parts of every function; the paper does not state
# its value). Measured on Law School
# subsamples: with μ = 0.01 the exact-inner and SSG-inner paths end in different local solutions (objectives
# 1.1e-3 apart at n = 300); with μ = 0.1 the outer steps are shorter, SSG tracks the exact path and both end
# within 2e-4, at the price of more outer iterations (about 60 to get within 1e-3 of the limit).
MU = 0.1


# SSG on the subproblems (25) steps in scaled coordinates where the columns' curvatures differ by more than this factor
# (the diagonal of the design's second moment plus the proximal weight, largest over smallest); below it the
# Euclidean steps the defaults were measured with are kept (standardized and one-hot columns: at most 11 with mu = 0.1)
SCALE_SPREAD = 100.0


def extrapolate_option(options) -> bool:
    """``extrapolate=`` of both IDCA backends (default True): the anchors move by Nesterov extrapolation where that
    is feasible and no worse (:func:`fairmodel.stochastic.idca.idca`); False runs Algorithm 1 as published."""
    value = options.get("extrapolate", True)
    if not isinstance(value, (bool, np.bool_)):
        raise OptionError(f"extrapolate must be True or False; got {value!r}")
    return bool(value)


def max_constraint(program):
    """v -> (max_i f_i(v), a thunk for a subgradient of the maximizing f_i = g_i - h_i): the oracle of the
    switching-subgradient and Polyak feasibility steps."""
    def constraint(v):
        g, caches = program.plus(v)
        h, jac = program.minus(v)
        f = g - h
        i = int(np.argmax(f))
        return float(f[i]), (lambda: program.plus_grad(v, i, caches) - jac[i])
    return constraint


def positive_int(v, name, minimum=1):
    return check_int(v, name, minimum=minimum)


def nonneg(v, name, strict=False):
    return check_number(v, name, low=0.0, strict=strict)


def schedule(v, name, integer=False):
    """A number, a sequence (one value per outer iteration) or a callable k -> value, validated lazily."""
    check = (lambda x: positive_int(x, name)) if integer else (lambda x: nonneg(x, name, strict=True))
    if callable(v):
        return lambda k: check(v(k))
    if np.ndim(v) == 1:
        arr = [check(x) for x in np.asarray(v).tolist()]
        return lambda k: arr[min(k, len(arr) - 1)]
    value = check(v)
    return lambda k: value


DC_ATOMS = (PartialDP, WeakPartialDP, DC, RampRateGap)     # the atoms this family lowers to DC blocks


def rate_bound(eps) -> float:
    """The bound of a ramp rate gap: in (0, 1] (rates are shares; 0 leaves IDCA without a strictly feasible start)."""
    eps = check_number(eps, "the bound of a ramp rate gap", error=ModelError)
    if not 0 < eps <= 1:
        raise ModelError(f"a ramp rate gap <= eps needs 0 < eps <= 1 (a gap of rates; eps = 0 leaves IDCA without a "
                         f"strictly feasible point, use a small eps such as 0.005); got {eps:g}")
    return eps


def constraint_kind(c):
    """The block type of a canonical constraint ``lhs <= rhs`` as a tuple, or a string saying why it is not
    supported."""
    if c.rhs.curvature != "constant":
        return f"constraint {c.name}: the right-hand side {c.rhs} must be a constant"
    lhs = c.lhs
    if isinstance(lhs, PartialDP):
        return ("pdp", lhs, c)
    if isinstance(lhs, WeakPartialDP):
        return ("weak", lhs, c)
    if isinstance(lhs, RampRateGap):
        return ("rate", lhs, c)
    if isinstance(lhs, DC):
        return ("expr", lhs.g, lhs.h, c)
    if any(isinstance(n, DC_ATOMS) for n in lhs.nodes()):
        return (f"constraint {c.name}: partial_dp, weak_partial_dp, dc and the ramp rate gaps must stand alone on "
                f"the left of '<= constant' (got {lhs})")
    if lhs.is_convex():
        return ("expr", lhs, None, c)
    return f"constraint {c.name}: {lhs} has curvature {lhs.curvature!r}; write it as fm.dc(g, h) <= b"


def dc_program(problem, kinds) -> DCProgram:
    """The DC program (21) of a canonical problem whose constraints have the block types ``kinds``."""
    specs, aux = [], []
    for kind in kinds:
        tag, atom, c = kind[0], kind[1], kind[-1]
        if tag in ("pdp", "weak"):
            kappa = check_kappa(c.bound(), "partial_dp" if tag == "pdp" else "weak_partial_dp")
            if tag == "pdp":
                levels = atom.levels(kappa)
                aux.append((f"theta_{c.name}", levels.size))
                specs.append((tag, atom, kappa, levels, c.name))
            else:
                specs.append((tag, atom, kappa, c.name))
        elif tag == "rate":
            aux.append((f"rate_{c.name}", atom.n_strata))
            specs.append((tag, atom, rate_bound(c.bound()), c.name))
        else:
            specs.append((tag, kind[1], kind[2], c.bound(), c.name))
    layout = Layout(problem.canonical.variables(), aux)
    blocks = []
    for tag, *rest in specs:
        if tag == "pdp":
            blocks.append(RampBandBlock(*rest, layout))
        elif tag == "weak":
            blocks.append(WeakBandBlock(*rest, layout))
        elif tag == "rate":
            blocks.append(RampRateBlock(*rest, layout))
        else:
            blocks.append(ExprBlock(*rest, layout, value_and_grad))
    program = DCProgram(problem.canonical.objective, blocks, layout, [k[-1].name for k in kinds], value_and_grad)
    smooth = smooth_objective(program)
    if not isinstance(smooth, str):
        program.smooth = smooth          # the objective by passes over the rows
    return program


def smooth_objective(program):
    """The objective f_0 as a :class:`SmoothObjective` (means of a loss with a Hessian of a linear score, ridge
    terms ``c * fm.sum_squares(w)`` with c >= 0, constants), or a string saying why it is not one."""
    modeled, rest = split_objective(program.objective)
    layout = program.layout
    losses, ridges, constant = [], [], 0.0
    for coef, term in modeled:
        score, loss, rows = loss_rows(term)
        losses.append((LossSums(loss.kernel, score.data, loss.y, score.w.intercept, coef * rows),
                       layout.slices[score.w.name]))
    for coef, term in rest:
        if isinstance(term, SumSquares) and term.w.n_outputs is None and coef >= 0:
            mask = np.ones(term.w.size, dtype=bool)
            if term.w.intercept and not term.include_intercept:
                mask[-1] = False
            ridges.append((coef, layout.slices[term.w.name], mask))
        elif term.curvature == "constant":
            constant += coef * float(evaluate(term, {}))
        else:
            return (f"the objective term {term} is not a mean of a logistic loss of a linear score or a "
                    f"ridge term c * sum_squares(w)")
    return SmoothObjective(program.D, losses, ridges, constant)


def ssg_scales(program, mu: float):
    """The scales p of the coordinates u = p * x in which SSG solves the subproblems (25), or None (Euclidean steps).

    SSG's steps (Algorithm 2) are subgradient steps: with features on scales 1e-3 to 1e3 (raw data: incomes beside
    ages and indicators) the step allowed along the largest moves nothing along the others, and IDCA + SSG ended at
    its start. In the coordinates u = P^(1/2) x of the diagonal P_jj = E[z_j^2] + mu (the design rows' second moments,
    one pass per data set; the curvature of (25) along w_j up to the loss's; 1 + mu for the intercept and the
    auxiliary variables) the columns have comparable scales, as with standardized features; SSG is the same method
    in the metric ||x||_P (subgradient methods allow any Euclidean metric), the subproblem is unchanged. None where
    the weights have a radius (the ball's projection is Euclidean in x) or where P's diagonal spreads at most
    SCALE_SPREAD (SSG's steps are invariant to a common scale)."""
    if any(w.radius is not None for w in program.layout.weights):
        return None
    # every linear score of the program: (data, its weights' slice of x, intercept), each data set read once
    sources = [(loss.data, sl, loss.intercept) for loss, sl in (program.smooth.losses if program.smooth else [])]
    sources += [(b.avg.data, b.wsl, b.avg.intercept) for b in program.blocks if hasattr(b, "avg")]
    scores = {(id(data), sl.start): (data, sl, intercept) for data, sl, intercept in sources}
    P = np.full(program.D, np.nan)
    for data, sl, intercept in scores.values():
        moment = second_moment(data, intercept, full=False)
        if moment.size == sl.stop - sl.start:          # a linear score of these weights (one output)
            P[sl] = np.fmax(P[sl], moment)
    P = np.where(np.isfinite(P) & (P > 0), P, 1.0) + mu
    return np.sqrt(P) if P.max() > SCALE_SPREAD * P.min() else None


def hinge_program(program):
    """The data of the interior-point solver of (25) (:mod:`fairmodel.oracles.dc_ipm`, with the working set of
    :mod:`fairmodel.oracles.dc_working_set`) for a DC program whose constraints are all partial_dp (model (13)) or
    ramp rate gaps on unbounded vector weights, with a smooth objective: a
    :class:`~fairmodel.oracles.dc_working_set.HingeSource` (every f+_i one hinge average, by passes over the rows),
    or a string saying why not."""
    if any(w.radius is not None or w.n_outputs is not None for w in program.layout.weights):
        return "weights with a radius (a ball domain) or several outputs"
    for b in program.blocks:
        if not isinstance(b, (RampBandBlock, RampRateBlock)):
            return f"constraint {b.name} is neither a partial_dp constraint (model (13)) nor a ramp rate gap"
    if program.smooth is None:
        return smooth_objective(program)
    # each block's family i is its constraint i (f+_i = A_i)
    parts = [(b.avg, np.arange(r.start, r.stop)) for r, b in zip(program.ranges, program.blocks)]
    return HingeSource(program.smooth, parts, program.m, program.D)


def subproblem_g(program, v, anchor, mu: float) -> np.ndarray:
    """g_i(v) of the subproblem (25) anchored at ``anchor`` (exact NumPy oracles; for the KKT checks)."""
    vals, S = program.linearize(anchor)
    d = v - anchor
    return program.plus(v)[0] - (S @ v + vals - S @ anchor) + 0.5 * mu * float(d @ d)
