"""The LP of the group-specific randomized thresholds of Hardt, Price, Srebro 2016 (predictors derived
from a score, with a tolerance): minimize the expected weighted error of a post-processed score subject to a
bound ``eps`` on the largest pairwise gap of the compared rates.

Formulation: for every group g, a point ``lambda_g`` of the simplex over the vertices of the convex hull of the
group's ROC points (``oracles/thresholds.py``); every rate and the error are linear in the lambdas, so

    minimize    sum_g <c_g, lambda_g>                         (expected weighted error)
    subject to  r_g(lambda_g) - r_h(lambda_h) <= eps          for every compared rate r, every ordered pair g != h
                lambda_g >= 0, sum_j lambda_g,j = 1           for every group g.

The pairwise rows bound the largest pairwise gap ``max_g r_g - min_g r_g`` (the comparison fairlearn's
``between_groups`` reports). The optimum is a monotone randomized threshold per group: the mixture of the
vertices' rules (Hardt, Price, Srebro 2016). The certificate is the LP's duality gap, the primal value
minus the Lagrangian bound of the solver's multipliers (``oracles/thresholds.lagrangian_bound``).
"""
from __future__ import annotations

import itertools

import cvxpy as cp
import numpy as np

from ..oracles.thresholds import lagrangian_bound
from .solvers import solve

# the solvers' feasibility and optimality tolerances (HiGHS's default 1e-7, Clarabel's 1e-8) tightened: rates are
# O(1) numbers, and the judge holds the true gap to eps + 1e-9
SOLVER_OPTIONS = {"HIGHS": {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
                  "CLARABEL": {"tol_feas": 1e-12, "tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12}}


def pairwise_rows(rocs, rates):
    """The constraint matrix in blocks: A_g (rows, m_g), one row per (rate, ordered pair g != h) with +r_g on
    block g and -r_h on block h; and the rows' labels ``(rate, g, h)``."""
    K = len(rocs)
    per_group = [roc.rate_rows(rates) for roc in rocs]          # (len(rates), m_g)
    labels = [(r, g, h) for r in range(len(rates)) for g, h in itertools.permutations(range(K), 2)]
    blocks = [np.zeros((len(labels), roc.fp.size)) for roc in rocs]
    for i, (r, g, h) in enumerate(labels):
        blocks[g][i] += per_group[g][r]
        blocks[h][i] -= per_group[h][r]
    return blocks, [(rates[r], g, h) for r, g, h in labels]


def error_costs(rocs, costs) -> list[np.ndarray]:
    """c_g: the expected weighted error ``(c_fp FP + c_fn FN) / W`` of each of group g's rules."""
    total = sum(roc.W for roc in rocs)
    return [(costs[0] * roc.fp + costs[1] * (roc.P - roc.tp)) / total for roc in rocs]


def solve_thresholds(rocs, rates, eps: float, costs=(1.0, 1.0), solver: str | None = None, verbose=False) -> dict:
    """Solve the LP for the groups' ROC points ``rocs`` (hull vertices or all points); return the mixture weights
    per group, the solver's record, the multipliers of the pairwise rows, the primal value, the Lagrangian bound and
    the duality gap."""
    c = error_costs(rocs, costs)
    A, labels = pairwise_rows(rocs, rates)
    lam = [cp.Variable(roc.fp.size, nonneg=True) for roc in rocs]
    cons = [cp.sum(v) == 1 for v in lam]
    fair = None
    if labels:
        fair = sum(A_g @ v for A_g, v in zip(A, lam)) <= eps
        cons.append(fair)
    prob = cp.Problem(cp.Minimize(sum(c_g @ v for c_g, v in zip(c, lam))), cons)
    name = "HIGHS" if solver is None else solver
    options = SOLVER_OPTIONS.get(str(name).upper(), {})
    record = solve(prob, solver=name, verbose=verbose, needs="lp",
                   what="the LP of group-specific thresholds (Hardt, Price, Srebro 2016)", **options)
    weights = [np.clip(np.asarray(v.value, dtype=float), 0.0, None) for v in lam]
    weights = [w / w.sum() for w in weights]            # the solver's simplex rows hold to its tolerance
    y = np.zeros(len(labels)) if fair is None else np.asarray(fair.dual_value, dtype=float).ravel()
    primal = float(sum(c_g @ w for c_g, w in zip(c, weights)))
    bound = lagrangian_bound(c, A, eps, y)
    return {"weights": weights, "record": record, "multipliers": y, "labels": labels, "primal": primal,
            "dual_bound": bound, "duality_gap": primal - bound}
