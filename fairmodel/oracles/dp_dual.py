"""The entropic dual of DP post-processing on a finite distribution: the object that the exact programs,
the stochastic oracles and the judge share (paper: Chzhen, Hebiri, Taturyan, "Regression under demographic
parity constraints via unlabeled post-processing", NeurIPS 2024; equation numbers are the paper's).

Notation (the paper's Sections 2-3, on a finite distribution). A finite distribution of n atoms x_i with weights
w_i > 0 (sum 1; the empirical unlabeled sample has w_i = 1/n), a grid of m points y_j, and

* costs ``R`` (n, m): R_ij = (eta_hat(x_i) - y_j)^2 (r_hat of eq. (13)), or any cost r(x_i, y_j) (Remark 2.2);
* ``T`` (n, K): T_is = t_hat_s(x_i) = 1 - tau_hat_s(x_i) / p_s (eq. (15));
* the dual variable z = (Lambda, V), stored as one array of shape (2, m, K): z[0] = Lambda (multipliers of
  -E[pi t] <= eps), z[1] = V (multipliers of E[pi t] <= eps). Only D = Lambda - V enters the policy.

Formulas:

* scores a_ij = <D_j, t_hat(x_i)> - R_ij and the policy pi_z(j | x_i) = softmax_j(beta a_i)   (eq. (7));
* F(z) = sum_i w_i LSE_beta(a_i) + sum_js (Lambda + V)_js eps_s                                  (eq. (5));
* grad F = (E + eps, -E + eps) with E = P^T diag(w) T, E_js = E_w[pi(j|X) t_s(X)]               (eq. (10));
* U_s(pi, j) = |E_js| (eq. (15)); R_beta(pi) = R(pi) + (1/beta) E[Psi(pi)], Psi the negative entropy (eq. (4));
* gradient mapping G_alpha(z) = min(z / alpha, grad F(z)) componentwise                             (eq. (8)).

``beta = inf`` is the unregularized problem (3): LSE becomes the max (the dual LP) and the policy
the arg max with ties split evenly.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import entr

_max, _sum = np.maximum.reduce, np.add.reduce  # the ufunc reductions without ndarray.max's Python wrapper (~1 us)


def sigma2(p: np.ndarray, pairwise: bool = False) -> float:
    """sigma^2 = sum_s (1 - p_s) / p_s (Lemma 3.4): the population bound on E||t(X)||^2 (Lemma F.4). With
    ``pairwise``, the bound (K - 1) sum_s 1 / p_s on E||t(X) C||^2 of the pair columns t_a - t_b (C of
    :func:`pair_contrasts`): t_a - t_b = tau_b / p_b - tau_a / p_a, and E[tau_s^2] <= E[tau_s] = p_s,
    E[tau_a tau_b] >= 0 give E(t_a - t_b)^2 <= 1 / p_a + 1 / p_b; each group lies in K - 1 pairs."""
    p = np.asarray(p, dtype=float)
    if pairwise:
        return float((p.shape[0] - 1) * np.sum(1.0 / p))
    return float(np.sum((1.0 - p) / p))


def group_pairs(K: int) -> list:
    """The pairs (a, b), a < b, of K groups in lexicographic order: the order of the pair columns."""
    return [(a, b) for a in range(K) for b in range(a + 1, K)]


def pair_contrasts(K: int) -> np.ndarray:
    """C (K, K (K - 1) / 2): column (a, b), a < b in lexicographic order, is e_a - e_b. The columns of t(x) C are
    t_a(x) - t_b(x), and E[pi(j|X) (t_a(X) - t_b(X))] = P(pi = y_j | S = b) - P(pi = y_j | S = a) (eq. (15)
    written for both groups), so |E[pi t C]| <= eps is the largest pairwise gap <= eps, the paper's constraint
    form in the pair columns; duals D_pair in these columns act on t as D_pair C^T (rows summing to zero)."""
    pairs = group_pairs(K)
    C = np.zeros((K, len(pairs)))
    for c, (a, b) in enumerate(pairs):
        C[a, c], C[b, c] = 1.0, -1.0
    return C


def policy_in_place(a: np.ndarray, beta: float, weights: np.ndarray | None = None):
    """The DP policy pi(j | x) = softmax_j(beta a_j) of eq. (7), written over the scores ``a`` (..., m) along the
    last axis; for beta = inf the arg max, ties split evenly. With row ``weights`` w (a: (n, m)) returns
    ``(a, sum_i w_i LSE_beta(a_i))``, LSE_beta(a_i) = (1/beta) log sum_j exp(beta a_ij) (the max for beta = inf):
    the first term of F in eq. (5).

    The one copy of the policy: the exact dual, the judge, the fitted predictor and the stochastic gradient (11)
    of every optimizer step call it. The softmax is max-shifted (as scipy.special.softmax does, so beta a ~ 1e4
    does not overflow) and written out with one exponential shared by the policy and the LSE: scipy's logsumexp
    + softmax exponentiate twice (6.4 ms instead of 1.0 ms at n = 800, m = 57), and on one point (m ~ 40, once
    per optimizer step) a scipy call costs ~10 us, more than the rest of the step.
    """
    if math.isinf(beta):   # math's test: np.isinf on a Python float costs ~0.5 us per step
        top = _max(a, axis=-1, keepdims=True)
        ties = a >= top
        np.divide(ties, _sum(ties, axis=-1, keepdims=True), out=a)
        return a if weights is None else (a, float(weights @ top[..., 0]))
    a *= beta
    top = _max(a, axis=-1, keepdims=True)
    a -= top
    np.exp(a, out=a)
    total = _sum(a, axis=-1, keepdims=True)
    a /= total
    return a if weights is None else (a, float(weights @ (np.log(total[..., 0]) + top[..., 0])) / beta)


def policy_from_scores(a: np.ndarray, beta: float) -> np.ndarray:
    """pi(. | x_i) = softmax(beta a_i) row by row (eq. (7)) in a new array (:func:`policy_in_place` on a copy)."""
    return policy_in_place(np.array(a, dtype=float), beta)


def gradient_mapping(z: np.ndarray, grad: np.ndarray, alpha: float) -> np.ndarray:
    """G_alpha(z) = (z - max(z - alpha grad, 0)) / alpha = min(z / alpha, grad) for z >= 0 (eq. (8))."""
    return np.minimum(z / alpha, grad)


def mapping_alpha(dual) -> float:
    """alpha = 1 / M_hat, the gradient-mapping parameter of the KKT residual; a flat dual (M_hat = 0: t_hat = 0 on
    every point, e.g. one point with calibrated marginals) gets the largest finite step instead of a division by 0."""
    return 1.0 / max(dual.smoothness(), 1e-300)


def canonical(z: np.ndarray) -> np.ndarray:
    """(max(D, 0), max(-D, 0)) with D = Lambda - V (z of shape (..., 2, m, K)): the same policy (only D enters
    eq. (7)) with F lower by 2 sum_js min(Lambda, V)_js eps_s (adding C >= 0 to both leaves D unchanged), so never a
    worse dual certificate."""
    D = z[..., 0, :, :] - z[..., 1, :, :]
    return np.stack([np.maximum(D, 0.0), np.maximum(-D, 0.0)], axis=-3)


class DualProblem:
    """F of eq. (5) and the primal quantities of a policy on one finite distribution.

    Parameters
    ----------
    R : (n, m) costs. T : (n, K) t_hat values. eps : (K,) tolerances (``None``: no fairness constraint).
    beta : inverse entropic weight (``inf`` for the LP). weights : (n,) positive, summing to 1 (None: 1/n).
    """

    def __init__(self, R: np.ndarray, T: np.ndarray, eps, beta: float, weights=None):
        self.R, self.T = R, T
        n, self.m = R.shape
        self.K = T.shape[1]
        self.w = np.full(n, 1.0 / n) if weights is None else weights
        self.eps = None if eps is None else np.asarray(eps, dtype=float)
        self.beta = float(beta)
        self._wT = self.w[:, None] * T

    @property
    def n(self) -> int:
        return self.R.shape[0]

    @property
    def shape(self) -> tuple[int, int, int]:
        """The shape (2, m, K) of a dual variable z = (Lambda, V)."""
        return (2, self.m, self.K)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.shape)

    # -- dual ---------------------------------------------------------------------------------------------
    def scores(self, z: np.ndarray) -> np.ndarray:
        """a_ij = <lambda_j - nu_j, t_hat(x_i)> - R_ij (the argument of eq. (7))."""
        return self.T @ (z[0] - z[1]).T - self.R

    def policy(self, z: np.ndarray) -> np.ndarray:
        """P_ij = pi_z(j | x_i) (eq. (7), plug-in (13))."""
        return policy_from_scores(self.scores(z), self.beta)

    def linear_term(self, z: np.ndarray) -> float:
        """sum_js (Lambda + V)_js eps_s (the second term of eq. (5))."""
        return float(np.sum((z[0] + z[1]) * self.eps))

    def value(self, z: np.ndarray) -> float:
        """F(z), eq. (5) (the dual LP objective when beta = inf)."""
        return policy_in_place(self.scores(z), self.beta, self.w)[1] + self.linear_term(z)

    def grad_from_moments(self, E: np.ndarray) -> np.ndarray:
        """(E + eps, -E + eps): the gradient (10) (or its minibatch estimate (11)) from the moments E."""
        return np.stack([E + self.eps, self.eps - E])

    def value_and_grad(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        """(F(z), grad F(z)) with one pass over the atoms and one exponential, eqs. (5) and (10) (the inner loop
        of the L-BFGS-B solver and of the judge)."""
        P, mean_lse = policy_in_place(self.scores(z), self.beta, self.w)
        return mean_lse + self.linear_term(z), self.grad_from_moments(self.moments(P))

    def grad(self, z: np.ndarray) -> np.ndarray:
        return self.value_and_grad(z)[1]

    # -- primal quantities of any policy P (n, m) -----------------------------------------------------------
    def moments(self, P: np.ndarray) -> np.ndarray:
        """E = P^T diag(w) T, E_js = E_w[pi(j|X) t_hat_s(X)]; U_s(pi, j) = |E_js| (eq. (15))."""
        return P.T @ self._wT

    def risk(self, P: np.ndarray) -> float:
        """R(pi) = sum_i w_i sum_j R_ij P_ij: the (discretized) risk with respect to the costs."""
        return float(self.w @ np.einsum("ij,ij->i", self.R, P))

    def neg_entropy(self, P: np.ndarray) -> float:
        """E_w[Psi(pi(.|X))] = -sum_i w_i sum_j entr(P_ij) <= 0 (scipy's entr: 0 log 0 = 0, no NaN)."""
        return -float(self.w @ entr(P).sum(axis=1))

    def regularized_risk(self, P: np.ndarray) -> float:
        """R_beta(pi) = R(pi) + (1/beta) E[Psi(pi)], eq. (4) (= R(pi) for beta = inf)."""
        if np.isinf(self.beta):
            return self.risk(P)
        return self.risk(P) + self.neg_entropy(P) / self.beta

    def unfairness(self, P: np.ndarray) -> np.ndarray:
        """U_s(pi, j) = |E_w[pi(j|X) t_hat_s(X)]| for every (atom j, group s), eq. (15); shape (m, K)."""
        return np.abs(self.moments(P))

    def unfairness_excess(self, P: np.ndarray) -> float:
        """sqrt(sum_js (U_s(pi, j) - eps_s)_+^2): the distance to the constraint set (Lemma 3.5,
        part I: it equals ||(-grad F(z))_+|| at P = pi_z)."""
        return float(np.sqrt(np.sum(np.maximum(self.unfairness(P) - self.eps, 0.0) ** 2)))

    # -- constants -----------------------------------------------------------------------------------------
    def mean_t(self) -> np.ndarray:
        """E_w[t_hat] (K,): zero when p is calibrated on these atoms."""
        return self.w @ self.T

    def feasibility_margins(self) -> np.ndarray:
        """m eps_s - |E_w t_hat_s| per group: the problem is feasible iff all are >= 0 (column s
        of E sums to E_w t_hat_s)."""
        return self.m * self.eps - np.abs(self.mean_t())

    def sigma2_plugin(self) -> float:
        """sigma_hat^2 = E_w ||t_hat(X)||^2 (App. E): the plug-in variance constant."""
        return float(self.w @ np.einsum("ik,ik->i", self.T, self.T))

    def smoothness(self) -> float:
        """M_hat = 2 beta sigma_hat^2, a Lipschitz constant of grad F on these atoms (Lemma 3.4)."""
        return 2.0 * self.beta * self.sigma2_plugin()
