"""DSL atoms of DP post-processing for regression without the sensitive attribute at inference (paper:
Chzhen, Hebiri, Taturyan, NeurIPS 2024), and the fitted predictor.

* :class:`GridPredictor` declares the randomized prediction pi(.|x) on a grid that post-processes a base
  regressor eta_hat(x) ~ E[Y|X=x] and a classifier tau_hat(x) ~ (P(S=s|X=x))_s (Section 3, eq. (13));
* ``squared_risk(post)`` is R(pi) = E[sum_j pi(j|X) (eta_hat(X) - y_j)^2] (eq. (3), plug-in (13)),
  ``expected_cost(post)`` its general-cost version E[sum_j pi(j|X) r(X, y_j)] (Remark 2.2: multi-class
  classification under DP with the classes as the grid);
* ``dp_gap(post) <= eps`` is the relaxed DP constraint U_s(pi, j) <= eps_s for every atom j and group s
  (eq. (2) = eq. (15)), with eps a number or one number per group, in [0, 1]: each group **vs the population**,
  |P(pi = y_j | S = s) - P(pi = y_j)|; ``dp_gap(post, pairwise=True) <= eps`` bounds the **largest pairwise** gap
  max_{s, s'} |P(pi = y_j | S = s) - P(pi = y_j | S = s')| instead (K >= 2 groups: the paper's constraint form in
  the pair columns t_s - t_s');
* :class:`DPPredictor` is the fitted pi_z of eq. (7) (``result.predictor()``).
"""
from __future__ import annotations

import numpy as np

from ...errors import ExpressionTypeError, ModelError, OptionError
from ...oracles.dp_dual import pair_contrasts, policy_from_scores
from ...utilities.validate import as_generator, check_bool
from ..core import Constant, Expr, Inequality, Parameter
from ..grid import _LIVE, GridPredictor, check_cost, check_eps, check_eta, check_tau, t_values


# ---------------------------------------------------------------------------------------------------------------
# DSL nodes
# ---------------------------------------------------------------------------------------------------------------
def _check_post(post, what: str) -> GridPredictor:
    if not isinstance(post, GridPredictor):
        raise ExpressionTypeError(f"{what} takes a fm.GridPredictor(...); got {type(post).__name__}")
    return post


class GridRisk(Expr):
    """R(pi) = E[sum_j pi(j|X) r(X, y_j)]: squared loss to eta_hat (eq. (3)) or a general cost (Remark 2.2)."""

    def __init__(self, post: GridPredictor, squared: bool):
        self.post = _check_post(post, "squared_risk" if squared else "expected_cost")
        if squared and post.kind != "regression":
            raise ModelError("squared_risk needs a regression GridPredictor (eta, L, B); use fm.expected_cost(post) "
                             "for a GridPredictor with a cost matrix")
        self.squared = squared

    @property
    def curvature(self):
        return "affine"  # linear in pi

    def variables(self):
        return []

    def render(self, n):
        self.post.define(n)
        if self.squared:
            return n.pick("E[sum_l pi(l|X) (eta(X) - y_l)^2]",
                          "\\mathbb{E}\\left[\\sum_{l} \\pi(l \\mid X)\\,(\\hat\\eta(X) - y_l)^2\\right]")
        return n.pick("E[sum_l pi(l|X) r(X, y_l)]", "\\mathbb{E}\\left[\\sum_{l} \\pi(l \\mid X)\\, r(X, y_l)\\right]")


class DPGap(Expr):
    """The per-group DP gap (max_j U_s(pi, j))_s, U_s of eq. (2) = eq. (15), each group vs the population; with
    ``pairwise`` the largest pairwise gap between the groups' prediction distributions. ``<= eps`` makes the
    constraint."""

    kind = "groups"
    __array_ufunc__ = None  # so that ``eps_array >= dp_gap(post)`` reaches __le__

    def __init__(self, post: GridPredictor, pairwise: bool = False):
        self.post = _check_post(post, "dp_gap")
        self.size = post.K or 0
        self.pairwise = check_bool(pairwise, "pairwise")

    @property
    def curvature(self):
        return "convex"  # a max of absolute values of linear functions of pi

    def variables(self):
        return []

    def __le__(self, eps):
        if isinstance(eps, Parameter):  # a scalar budget that Problem.sweep can vary; checked at solve time
            check_eps(eps.value, self.post.K)
            return DPConstraint(self, eps)
        if self.pairwise and np.ndim(eps) != 0:
            raise ModelError("dp_gap(post, pairwise=True) <= eps bounds the largest gap between any two groups: give "
                             "eps as one number")
        return DPConstraint(self, check_eps(eps, self.post.K))

    def __ge__(self, other):
        raise ExpressionTypeError("dp_gap(post) can only be bounded above: write fm.dp_gap(post) <= eps")

    def render(self, n):
        self.post.define(n)
        n.define("t_s", "t_s(x) = 1 - tau_s(x) / p_s: tau_s(x) the estimated probability of group s given x, p_s "
                        "its marginal (eq. (15) of Chzhen, Hebiri, Taturyan 2024)",
                 "$t_s(x) = 1 - \\hat\\tau_s(x) / p_s$: $\\hat\\tau_s(x)$ the estimated probability of group $s$ "
                 "given $x$, $p_s$ its marginal (eq.~(15) of Chzhen, Hebiri, Taturyan 2024)")
        if self.pairwise:
            n.define("pairwise", "the largest pairwise gap: E[pi(l|X) (t_s(X) - t_s'(X))] = P(pi = l | S = s') - "
                                 "P(pi = l | S = s)",
                     "the largest pairwise gap: $\\mathbb{E}[\\pi(l \\mid X)\\, (t_s(X) - t_{s'}(X))] = "
                     "P(\\pi = l \\mid S = s') - P(\\pi = l \\mid S = s)$")
            return n.pick("max_l max_(s, s') |E[pi(l|X) (t_s(X) - t_s'(X))]|  (largest pairwise)",
                          "\\max_{l} \\max_{s, s'} \\left|\\mathbb{E}\\left[\\pi(l \\mid X)\\, (t_s(X) - t_{s'}(X))"
                          "\\right]\\right|\\ \\text{(largest pairwise)}")
        return n.pick("max_l |E[pi(l|X) t_s(X)]|  (vs the population)",
                      "\\max_{l} \\left|\\mathbb{E}\\left[\\pi(l \\mid X)\\, t_s(X)\\right]\\right|"
                      "\\ \\text{(vs the population)}")


class DPConstraint(Inequality):
    """``dp_gap(post) <= eps``: U_s(pi, j) <= eps_s for every grid point j and group s (eq. (3)). ``eps`` is a
    number, one number per group, or a :class:`fairmodel.Parameter` (``prob.sweep(name, values)``)."""

    def __init__(self, gap: DPGap, eps, name: str | None = None):
        self.gap, self.eps_spec, self.name = gap, eps, name
        self.lhs, self.rhs = gap, (eps if isinstance(eps, Parameter) else Constant(eps))

    def named(self, name: str) -> "DPConstraint":
        return DPConstraint(self.gap, self.eps_spec, name)

    @property
    def expr(self) -> Expr:
        return self.gap

    @property
    def pairwise(self) -> bool:
        return self.gap.pairwise

    def eps(self, K: int) -> np.ndarray:
        """eps as a vector of bounds, one per column of :meth:`columns` (a parameter's current value, checked to lie
        in [0, 1]): (K,) bounds on U_s, or the one pairwise bound repeated for the K (K - 1) / 2 pairs."""
        value = self.eps_spec.value if isinstance(self.eps_spec, Parameter) else self.eps_spec
        eps = check_eps(value, None if self.pairwise else K)
        return np.broadcast_to(eps, (K * (K - 1) // 2 if self.pairwise else K,)).astype(float)

    def columns(self, T: np.ndarray) -> np.ndarray:
        """The constraint's columns from t_hat (n, K): t_hat itself (U_s = |E[pi t_s]|, eq. (15)), or with
        ``pairwise`` the pair differences t_a - t_b (n, K (K - 1) / 2), whose |E[pi(j|X) (t_a - t_b)]| =
        |P(pi = y_j | S = a) - P(pi = y_j | S = b)|. The pairwise problem is then the paper's problem (3) / (4) in
        these columns, with the same dual (5), policy (7) and certificates (Lemmas 3.2-3.5)."""
        return T @ pair_contrasts(T.shape[1]) if self.pairwise else T

    def render(self, n):
        if isinstance(self.eps_spec, Parameter):
            bound = n.ident(self.eps_spec.name)
        elif np.ndim(self.eps_spec) == 0:
            bound = n.number(self.eps_spec)
        else:
            bound = n.pick("eps_s", "\\epsilon_s")
            n.define("eps_s", "eps_s: the budget of group s, " + ", ".join(f"{v:g}" for v in np.ravel(self.eps_spec)),
                     "$\\epsilon_s$: the budget of group $s$, $" + ",\\ ".join(n.number(v) for v in
                                                                    np.ravel(self.eps_spec)) + "$")
        every = n.pick("  for every group s", "\\quad \\text{for every group } s")
        return f"{self.gap.render(n)} {n.le()} {bound}{every}"


def squared_risk(post: GridPredictor) -> GridRisk:
    """R(pi) = E[sum_j pi(j|X) (eta_hat(X) - y_j)^2], the objective of eq. (3) (plug-in (13))."""
    return GridRisk(post, squared=True)


def expected_cost(post: GridPredictor) -> GridRisk:
    """E[sum_j pi(j|X) r(X, y_j)] for a GridPredictor declared with a cost matrix (Remark 2.2)."""
    return GridRisk(post, squared=False)


def dp_gap(post: GridPredictor, pairwise: bool = False) -> DPGap:
    """The DP gap of the randomized prediction.

    ``fm.dp_gap(post) <= eps`` (the default, **vs the population**) bounds U_s(pi, j) =
    |P(pi = y_j | S = s) - P(pi = y_j)| by eps_s for every grid point j and group s (eq. (2) of Chzhen, Hebiri,
    Taturyan 2024). ``fm.dp_gap(post, pairwise=True) <= eps`` bounds the **largest pairwise** gap
    max_{s, s'} |P(pi = y_j | S = s) - P(pi = y_j | S = s')| (the difference fairlearn reports, max - min over the
    groups) by one number eps, for any K >= 2 groups. With t_s = 1 - tau_s / p_s (eq. (15)),
    E[pi(j|X) (t_s(X) - t_s'(X))] = P(pi = y_j | S = s') - P(pi = y_j | S = s), so the pairwise constraint is the
    paper's constraint (eq. (3)) with the K (K - 1) / 2 pair columns t_s - t_s' in place of t and eps for each:
    every backend (the LP, the entropic dual (5) by L-BFGS-B or CVXPY, the stochastic methods) solves it with the
    same dual, policy (eq. (7), the duals D_pair acting on t as D_pair C^T, whose rows sum to zero) and
    certificates, and the judge checks the largest pairwise gap against eps. For two groups it is the constraint
    U_s <= (1 - p_s) eps (t_1 - t_2 = t_1 / p_2 when the marginals and tau's rows sum to 1)."""
    return DPGap(post, pairwise)


# ---------------------------------------------------------------------------------------------------------------
# The fitted predictor
# ---------------------------------------------------------------------------------------------------------------
def group_duals(D: np.ndarray, K: int, pairwise: bool) -> np.ndarray:
    """The duals D (m, K) that act on t_hat in eq. (7), from the duals Lambda - V of the constraint's columns: the
    same, or for a pairwise constraint D_pair C^T (C of :func:`~fairmodel.oracles.dp_dual.pair_contrasts`, so that
    <D_j, t> = <D_pair_j, t C>; the rows of D sum to zero)."""
    return D @ pair_contrasts(K).T if pairwise else D


class DPPredictor:
    """The fitted randomized prediction pi_z(.|x) = softmax(beta (<D_j, t_hat(x)> - r_j(x)))_j of eq. (7).

    ``D = Lambda - V`` (m, K) are the dual variables of a result, ``p`` the group marginals used to build
    t_hat, ``beta = inf`` gives the arg max (ties split evenly: the beta -> inf limit, used for LP results).
    ``post`` (a :class:`GridPredictor` with callables) lets ``predict_proba(X)`` run the base models;
    without it, pass their values: ``predict_proba(eta=..., tau=...)`` (or ``cost=...``).
    """

    def __init__(self, grid, D, p, beta: float, post: GridPredictor | None = None, kind: str = "regression",
                 B: float | None = None):
        self.grid = np.asarray(grid)
        self.D = np.asarray(D, dtype=float)
        self.p = np.asarray(p, dtype=float)
        self.beta = float(beta)
        self.clip = bool(post is not None and post.clip)
        self.post = post if post is not None and post.callable else None
        self.kind, self.B = kind, B

    @classmethod
    def from_result(cls, result, post: GridPredictor | None = None) -> "DPPredictor":
        """The predictor of a DP post-processing result (``post`` supplies the base models, if any)."""
        if result.family != "dp_postprocessing":
            raise OptionError(f"this result comes from the {result.family!r} family, not DP post-processing")
        v, info = result.variables, result.metrics
        if post is None:
            post = _LIVE.get(result.solver.get("grid_predictor", ""))
        kind = info["grid_kind"]
        D = group_duals(np.asarray(v["Lambda"]) - np.asarray(v["V"]), len(info["p"]),
                        info.get("dp_gap_comparison") == "largest pairwise")
        return cls(info["grid"], D, info["p"], info["beta"], post, kind, info.get("B") if kind == "regression" else None)

    def _base(self, X, eta, tau, cost):
        if X is not None:
            if self.post is None:
                raise OptionError("this predictor has no base models (the GridPredictor held arrays, or the result was "
                                  "loaded from disk): pass their values, predict_proba(eta=reg.predict(X), "
                                  "tau=clf.predict_proba(X)), or DPPredictor.from_result(result, "
                                  "post=GridPredictor(...))")
            return self.post.values(X)
        first = eta if self.kind == "regression" else cost
        if first is None or tau is None:
            need = "eta= and tau=" if self.kind == "regression" else "cost= and tau="
            raise OptionError(f"pass X (with base models attached) or the base models' values {need}")
        if self.kind == "regression":
            first = check_eta(first, None, self.B, clip=self.clip)
        else:
            first = check_cost(first, None, self.grid.shape[0])
        return first, check_tau(tau, first.shape[0], self.p.shape[0])

    def predict_proba(self, X=None, *, eta=None, tau=None, cost=None) -> np.ndarray:
        """pi(. | x) for every point: an (n, m) array of probabilities over the grid (eq. (7))."""
        first, tau_v = self._base(X, eta, tau, cost)
        R = (first[:, None] - self.grid[None, :]) ** 2 if self.kind == "regression" else first
        return policy_from_scores(t_values(tau_v, self.p) @ self.D.T - R, self.beta)

    def predict(self, X=None, mode: str = "mean", seed=None, **base) -> np.ndarray:
        """Predictions: ``"mean"`` (sum_j y_j pi(j|x)), ``"mode"`` (the most likely grid point) or ``"sample"``
        (a draw y ~ pi(.|x), the method as analysed; seeded by ``seed``)."""
        if mode not in ("mean", "mode", "sample"):
            raise OptionError(f"mode must be 'mean', 'mode' or 'sample'; got {mode!r}")
        P = self.predict_proba(X, **base)
        if mode == "mean":
            if not np.issubdtype(self.grid.dtype, np.number):
                raise OptionError("mode='mean' needs a numeric grid; use mode='mode' or 'sample' for labels")
            return P @ self.grid
        if mode == "mode":
            return self.grid[np.argmax(P, axis=1)]
        u = as_generator(seed).random(P.shape[0])
        idx = np.minimum((np.cumsum(P, axis=1) < u[:, None]).sum(axis=1), P.shape[1] - 1)
        return self.grid[idx]
