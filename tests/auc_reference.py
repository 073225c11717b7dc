"""The reference solution of the AUC-fairness test problem, computed independently of the library's AUC code.

The problem (the surrogate problem (6) of Yao, Lin, Yang, AISTATS 2023, intra preset, on
``fm.datasets.make_auc_synthetic()``, linear score, ||w|| <= 3, c1 = 1/2, c2 = 1):

    min L(D+, D-)  s.t.  L(G1', G1) + L(G2, G2') <= 1 + kappa,  L(G2', G2) + L(G1, G1') <= 1 + kappa

with L(S, S') = (1/(|S||S'|)) sum_{i in S, j in S'} c1 ((x_i - x_j).w - c2)^2 (pairs i = j included). Every L is
a convex quadratic w'Qw + g'w + c whose coefficients are formed here from the explicit differences of every pair
(brute force, not the library's moment form), and the program is written in CVXPY by hand. The sets come from the
labels and the group codes directly.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cvxpy as cp
import numpy as np

import fairmodel as fm

C1, C2, RADIUS, KAPPA = 0.5, 1.0, 3.0, 0.05


def pair_quadratic(X, S, T, c1=C1, c2=C2):
    """(Q, g, c) with L(S, T)(w) = w'Qw + g'w + c, from every pair's difference x_i - x_j."""
    D = (X[S][:, None, :] - X[T][None, :, :]).reshape(-1, X.shape[1])
    return c1 * D.T @ D / D.shape[0], -2 * c1 * c2 * D.mean(axis=0), c1 * c2 ** 2


def quad_value(q, w) -> float:
    Q, g, c = q
    return float(w @ Q @ w + g @ w + c)


@dataclass(frozen=True)
class Reference:
    f_star: float
    w_star: np.ndarray
    lam: np.ndarray            # the multipliers of the two constraints
    f0: tuple                  # (Q, g, c) of L(D+, D-)
    f1: tuple                  # the two quadratics of the first constraint
    f2: tuple                  # ... and of the second
    sets: dict                 # boolean masks D+, D-, G1, G1', G2, G2'

    def blocks(self, w) -> np.ndarray:
        """(f0, f1, f2) at w: the objective and the two constraint sums."""
        return np.array([quad_value(self.f0, w), sum(quad_value(q, w) for q in self.f1),
                         sum(quad_value(q, w) for q in self.f2)])


def _sets(data):
    y = data.y
    gamma = np.asarray(data.groups.names, dtype=float)[data.groups.codes]    # the groups are coded +1 / -1
    pos, neg = y > 0, y < 0
    return {"D+": pos, "D-": neg, "G1": pos & (gamma > 0), "G1'": neg & (gamma > 0), "G2": pos & (gamma < 0),
            "G2'": neg & (gamma < 0)}


def _as_cvxpy(q, theta):
    Q, g, c = q
    lam, V = np.linalg.eigh(Q)
    F = np.sqrt(np.clip(lam, 0, None))[:, None] * V.T
    return cp.sum_squares(F @ theta) + g @ theta + c


@lru_cache(maxsize=None)
def reference(kappa: float = KAPPA) -> Reference:
    """f*, w* and the constraint multipliers of the problem above, by CLARABEL on the hand-written program."""
    data = fm.datasets.make_auc_synthetic()
    X, S = data.X, _sets(data)
    f0 = pair_quadratic(X, S["D+"], S["D-"])
    f1 = (pair_quadratic(X, S["G1'"], S["G1"]), pair_quadratic(X, S["G2"], S["G2'"]))
    f2 = (pair_quadratic(X, S["G2'"], S["G2"]), pair_quadratic(X, S["G1"], S["G1'"]))
    theta = cp.Variable(X.shape[1])
    cons = [sum(_as_cvxpy(q, theta) for q in f1) <= 1 + kappa, sum(_as_cvxpy(q, theta) for q in f2) <= 1 + kappa]
    value = cp.Problem(cp.Minimize(_as_cvxpy(f0, theta)), cons + [cp.norm(theta) <= RADIUS]).solve(solver="CLARABEL")
    lam = np.array([float(np.ravel(c.dual_value)[0]) for c in cons])
    return Reference(float(value), np.asarray(theta.value), lam, f0, f1, f2, S)


@lru_cache(maxsize=None)
def level_set_value(r: float, kappa: float = KAPPA) -> float:
    """H(r) = min_{||w|| <= 3} max{f0(w) - r, f1(w) - 1 - kappa, f2(w) - 1 - kappa} (the level-set function (22)),
    by CLARABEL on the hand-written epigraph program."""
    ref = reference(kappa)
    theta, t = cp.Variable(ref.w_star.size), cp.Variable()
    cons = [_as_cvxpy(ref.f0, theta) - r <= t,
            sum(_as_cvxpy(q, theta) for q in ref.f1) - 1 - kappa <= t,
            sum(_as_cvxpy(q, theta) for q in ref.f2) - 1 - kappa <= t, cp.norm(theta) <= RADIUS]
    return float(cp.Problem(cp.Minimize(t), cons).solve(solver="CLARABEL"))


def pair_auc(h, S, T, t=0.5) -> float:
    """AUC(S, T) of Definition 1 by the double sum (ties t, pairs i = j included)."""
    a, b = h[S][:, None], h[T][None, :]
    return float(np.mean((a > b) + t * (a == b)))
