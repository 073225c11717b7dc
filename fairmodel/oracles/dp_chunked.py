"""The entropic dual of DP post-processing (Chzhen, Hebiri, Taturyan 2024, eqs. (4), (5), (7), (10), (15)) on a
finite distribution too large for its (n, m) cost and policy matrices: every quantity is a sum over the atoms, so
it is computed block by block of rows and the block sums are added in block order.

Only O(n) vectors are held (the base models' values ``first`` (n,) or costs, ``T`` (n, K), the weights);
a block's costs R_b (b, m) and policy P_b (b, m) exist only while that block is summed, so the memory of a pass
is O(block m) whatever n. Each block is a :class:`~fairmodel.oracles.dp_dual.DualProblem` on its rows with the
global (unnormalized) weights of those rows and eps = 0, so the formulas are the ones of ``dp_dual`` (one copy):
F(z) = sum_blocks [sum_i w_i LSE_beta(a_i)] + sum_js (Lambda + V)_js eps_s, E = sum_blocks P_b^T diag(w_b) T_b.
The results equal the one-block :class:`DualProblem` up to summation order (relative rounding ~1e-15).
"""
from __future__ import annotations

import numpy as np

from .dp_dual import DualProblem

BLOCK_ROWS = 65_536


class ChunkedDual:
    """Same members as :class:`DualProblem` that the judge, the feasibility check and the L-BFGS-B reference
    solve use (``value``, ``grad``, ``value_and_grad``, ``stats``, ``mean_t``, ``feasibility_margins``,
    ``sigma2_plugin``, ``smoothness``, ``n``, ``m``, ``K``, ``shape``, ``zeros``), computed by blocks of rows.

    Parameters
    ----------
    costs : callable ``first[block] -> R_b`` (b, m): the cost rows of a block (r_hat of eq. (13)).
    first : (n,) regressor values or (n, m) costs. T : (n, K) t_hat values. eps, beta, weights : as DualProblem.
    block : rows per block (default ``BLOCK_ROWS``, 65,536: a block's (b, m) matrices stay a few MiB).
    """

    def __init__(self, costs, first, T, eps, beta: float, weights=None, block: int | None = None,
                 m: int | None = None):
        self._costs, self.first, self.T = costs, first, T
        n = T.shape[0]
        self.K = T.shape[1]
        self.m = int(costs(first[:1]).shape[1]) if m is None else int(m)
        self.w = np.full(n, 1.0 / n) if weights is None else weights
        self.eps = None if eps is None else np.asarray(eps, dtype=float)
        self.beta = float(beta)
        self.block = int(BLOCK_ROWS if block is None else block)

    @property
    def n(self) -> int:
        return self.T.shape[0]

    @property
    def shape(self) -> tuple[int, int, int]:
        return (2, self.m, self.K)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.shape)

    def blocks(self):
        """The block duals in row order (eps = 0: the linear term of eq. (5) is added once, by the caller)."""
        zero = np.zeros(self.K)
        for start in range(0, self.n, self.block):
            rows = slice(start, min(start + self.block, self.n))
            yield rows, DualProblem(self._costs(self.first[rows]), self.T[rows], zero, self.beta, self.w[rows])

    # -- dual ----------------------------------------------------------------------------------------------
    def linear_term(self, z: np.ndarray) -> float:
        return float(np.sum((z[0] + z[1]) * self.eps))

    def value_and_grad(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """(F(z), grad F(z)) of eqs. (5) and (10): one pass over the blocks."""
        value, grad = 0.0, np.zeros(self.shape)
        for _, dual in self.blocks():
            v, g = dual.value_and_grad(z)
            value += v
            grad += g
        grad[0] += self.eps
        grad[1] += self.eps
        return value + self.linear_term(z), grad

    def value(self, z: np.ndarray) -> float:
        return self.value_and_grad(z)[0]

    def grad(self, z: np.ndarray) -> np.ndarray:
        return self.value_and_grad(z)[1]

    def stats(self, z=None, P=None, grid=None) -> dict:
        """The primal quantities of pi_z (eq. (7)) or of a given policy P (n, m), in one pass: moments E (m, K)
        (U = |E|, eq. (15)), risk R(pi), E[Psi(pi)], R_beta(pi) (eq. (4)) and, for a numeric grid, the mean
        prediction E[sum_j pi(j|X) y_j]."""
        E, risk, negent, mean = np.zeros((self.m, self.K)), 0.0, 0.0, 0.0
        for rows, dual in self.blocks():
            Pb = dual.policy(z) if P is None else P[rows]
            E += dual.moments(Pb)
            risk += dual.risk(Pb)
            negent += dual.neg_entropy(Pb)
            if grid is not None:
                mean += float(dual.w @ (Pb @ grid))
        return _summary(E, risk, negent, mean if grid is not None else None, self.beta, self.eps)

    # -- constants (from the O(n) vectors in memory) ----------------------------------------------------------
    def mean_t(self) -> np.ndarray:
        return self.w @ self.T

    def feasibility_margins(self) -> np.ndarray:
        return self.m * self.eps - np.abs(self.mean_t())

    def sigma2_plugin(self) -> float:
        return float(self.w @ np.einsum("ik,ik->i", self.T, self.T))

    def smoothness(self) -> float:
        return 2.0 * self.beta * self.sigma2_plugin()


def dual_stats(dual: DualProblem, z=None, P=None, grid=None) -> dict:
    """:meth:`ChunkedDual.stats` for an in-memory :class:`DualProblem` (one block: the same numbers as its own
    ``moments``, ``risk``, ``neg_entropy`` and ``regularized_risk``)."""
    if isinstance(dual, ChunkedDual):
        return dual.stats(z, P, grid)
    P = dual.policy(z) if P is None else P
    mean = None if grid is None else float(dual.w @ (P @ grid))
    return _summary(dual.moments(P), dual.risk(P), dual.neg_entropy(P), mean, dual.beta, dual.eps)


def _summary(E, risk, negent, mean, beta, eps) -> dict:
    U = np.abs(E)
    out = {"E": E, "U": U, "risk": risk, "neg_entropy": negent,
           "regularized_risk": risk if np.isinf(beta) else risk + negent / beta, "mean_prediction": mean}
    if eps is not None:
        out["unfairness_excess"] = float(np.sqrt(np.sum(np.maximum(U - eps, 0.0) ** 2)))
    return out

