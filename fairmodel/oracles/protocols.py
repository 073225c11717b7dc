"""Oracle protocols: what the stochastic algorithms need from a problem, independent of any family.

The algorithms in :mod:`fairmodel.stochastic` take objects of these shapes and never a family's own object:

* :class:`SaddleOracle`: a finite-sum convex-concave function for the OGDA / SGDA methods
  (:class:`fairmodel.oracles.strategic.WDRSCOracle` and the callables of ``fm.SaddleProblem`` subclass it);
* :class:`GroupRiskOracle`: m group risks of a linear model for ALEG, SMD and two-stage MERO
  (:class:`fairmodel.oracles.group_risks.GroupRisks` implements it);
* :class:`PrimalDualOracle`: the saddle form of a convex declaration for the generic primal-dual method
  (the generic reduction's ``LagrangianOracle`` implements it);
* :class:`PairRiskOracle` and :class:`ScoreModel`: the pair table of the AUC constraints and the score model
  h(theta; x) for Bregman SMD (:class:`fairmodel.oracles.pairs.PairRisks`, the score adapters of the declarations);
* :class:`DCProgramOracle`: the DC program of partial fairness for IDCA and SSG (:class:`fairmodel.oracles.dc.DCProgram`);
* :class:`DualBatchSource`: unlabeled batches (t_hat, costs, weights) for the DP dual optimizers (SGD3, AC-SA,
  AC-SA^2, SGD take the gradients (11) computed from them; :class:`fairmodel.stochastic.dp_postprocessing.Pool`).

The objects hold plain arrays and numbers (shapes, radii, names), never a declared ``Weights``.
"""
from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from typing import Protocol

import numpy as np


class GroupRiskOracle(Protocol):
    """What ALEG (Yu, Cai, Jiang, Zhang 2024, Algorithm 1), SMD and two-stage MERO need from the group risks
    R_i(w) = mean over group i of phi(x_j . w, y_j), i = 1..m."""

    m: int                     # number of groups
    n_samples: int
    names: list                # group names (for messages)
    loss: object               # the pointwise loss kernel: phi, dphi, smoothness (fairmodel.oracles.losses)
    data: object               # the data source (``is_chunked``)
    radius: float | None       # the ball ||theta|| <= radius (None: unbounded)
    shape: tuple               # of theta: (d,) or (d, C)

    def project(self, theta: np.ndarray) -> np.ndarray:
        """Projection onto the domain of the weights."""

    def check_start(self, theta, what: str) -> np.ndarray:
        """A user's starting point as a finite array of ``shape`` inside the domain (ModelError otherwise)."""

    def risks(self, theta: np.ndarray) -> np.ndarray:
        """R(theta): the m group risks, one full pass."""

    def risks_and_grad(self, theta: np.ndarray, q: np.ndarray, keep_scores: bool = True):
        """(R(theta), sum_i q_i grad R_i(theta), the scores X theta or None): one full pass."""

    def sampler(self, batch_size: int, rng, prefetch: bool = True):
        """A sampler whose ``draw(k)`` returns a Batch of k rows per group, group by group."""

    def batch(self, batch) -> tuple:
        """(design rows, labels) of a Batch."""

    def single_group(self, i: int) -> "GroupRiskOracle":
        """The oracle of group i alone (m = 1)."""

    def row_norm_stats(self) -> tuple:
        """(mean, max) of the squared norms of the design rows."""

    def second_moment(self, full: bool = False) -> np.ndarray:
        """The design's second moment: D x D with ``full``, else the vector E[x_j^2] of its diagonal."""

    def lipschitz_constants(self) -> tuple:
        """(G, L): per-sample Lipschitz and smoothness bounds (Assumption 3.4)."""


class SaddleOracle(Protocol):
    """What the methods need from ``min_x max_y (1/n) sum_i L_i(u)``, u = (x, y) in R^dim (Maheshwari et al., eq. (1)).

    Subclasses set ``n``, ``d_x``, ``dim``, ``zo`` (integer indices of the coordinates the zeroth-order
    estimator perturbs; the others need exact partial gradients) and implement

    * ``value(i, u, shift)``: L_i at u with ``shift`` (a vector over ``zo``) added to the zo coordinates;
      ``values(i, u, shifts)`` the same at the rows of ``shifts`` (one value each; a loop over ``value`` by
      default, one vectorized evaluation where an oracle overrides it);
    * ``gradient(i, u, exact_only)``: ``(g_x, y_index, g_y)``, the gradient of L_i at u: the x-part as a
      dense vector, the y-part either dense (``y_index`` None) or on the coordinates ``y_index`` only
      (when L_i depends on a few coordinates of y, as in strategic DRO). With ``exact_only`` only the
      coordinates outside ``zo`` are needed (the rest may be zero);
    * ``project_x(x)``, ``project_y(y)``: Euclidean projections onto X and Y.

    Oracles with a sparse y-part set ``y_box = (lo, hi)`` (Y is a box, so the projection of the few
    coordinates a step changes is a clip): a step then costs O(d_x) instead of O(dim). ``prepare_epoch(order)``
    is told the components of each epoch before its steps (an oracle on chunked rows gathers their rows ahead).
    """

    n: int
    d_x: int
    dim: int
    zo: np.ndarray
    y_box = None

    @abstractmethod
    def value(self, i: int, u: np.ndarray, shift) -> float:
        """L_i at u + embed(shift)."""

    def values(self, i: int, u: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        """L_i at u + embed(s) for each row s of ``shifts``."""
        return np.array([self.value(i, u, s) for s in shifts], dtype=float)

    @abstractmethod
    def gradient(self, i: int, u: np.ndarray, exact_only: bool):
        """(g_x, y_index, g_y): the gradient of L_i at u."""

    @abstractmethod
    def project_x(self, x: np.ndarray) -> np.ndarray:
        """Projection onto X."""

    @abstractmethod
    def project_y(self, y: np.ndarray) -> np.ndarray:
        """Projection onto Y."""

    def project(self, u: np.ndarray) -> np.ndarray:
        return np.concatenate([self.project_x(u[:self.d_x]), self.project_y(u[self.d_x:])])

    def tangent(self, v: np.ndarray) -> np.ndarray:
        """The projection of a direction v onto the directions a move inside X x Y can take (v itself by default)."""
        return v

    def prepare_epoch(self, order: np.ndarray) -> None:
        """The components of the coming epoch, in the order the steps take them (nothing to do by default)."""


class PrimalDualOracle(Protocol):
    """What the generic primal-dual method (:func:`fairmodel.stochastic.primal_dual.primal_dual`) needs from
    min_w max_{y in Y} Phi(w, y) = a(w) + sum_b <y_b, v_b(w)>, Y a product of simplices."""

    shape: tuple               # of w (the method's coordinates: the oracle may precondition, w = M u)
    blocks: list               # the sizes of the simplices y_b
    n_samples: int
    rows_per_step: int         # rows one minibatch reads (the gradient-evaluation count)
    block_steps: int           # inner steps whose minibatches are drawn and prepared at once
    epoch_steps: int | None    # inner steps per epoch by default (None: one pass's worth of minibatches)

    def project(self, u: np.ndarray) -> np.ndarray:
        """Projection onto the domain, in the method's coordinates."""

    def snapshot(self, w: np.ndarray, ys: list):
        """An exact full pass at (w, ys): ``values`` (v_b(w) per block), ``grad`` (grad_w Phi), ``objective``
        (max_y Phi(w, y)) and whatever :meth:`estimate` needs."""

    def draw(self, rng, n_steps: int) -> list:
        """The minibatches of ``n_steps`` inner steps."""

    def estimate(self, rows, w: np.ndarray, ys: list, snap) -> tuple:
        """The variance-reduced estimate (grad_w Phi, [v_b]) at (w, ys) from one minibatch and the snapshot."""

    def default_steps(self, w0: np.ndarray, y0: list) -> tuple:
        """(step_w, [step_y per block]) measured from the data at (w0, y0)."""


class PairRiskOracle(Protocol):
    """The pair table of the AUC constraints (Yao, Lin, Yang 2023, eq. (8)): pairs i of row sets (S_i, S'_i) with
    the constants c1, c2 of their quadratic surrogate, grouped in blocks (block 0 the objective)."""

    n_pairs: int
    n_blocks: int
    masks: np.ndarray          # (sets, n) membership of every row in every set
    set_weights: np.ndarray    # total (sample) weight of every set
    weights: np.ndarray | None # sample weights (n,) or None
    first: np.ndarray          # set index of S_i per pair
    second: np.ndarray         # set index of S'_i per pair
    block: np.ndarray          # block of every pair
    c1: np.ndarray
    c2: np.ndarray
    q: np.ndarray              # the weights of the pairs in their block


class ScoreModel(Protocol):
    """A score h(theta; x) with its backward pass: the linear score or a network (Bregman SMD, the AUC baselines)."""

    X: np.ndarray
    shape: tuple               # of theta

    def forward(self, theta: np.ndarray, X: np.ndarray) -> tuple:
        """(h(theta; X) (rows,), a cache for :meth:`backward`)."""

    def backward(self, theta: np.ndarray, cache, coef: np.ndarray) -> np.ndarray:
        """sum_j coef_j grad_theta h(theta; x_j)."""


class DCProgramOracle(Protocol):
    """The DC program min f_0(x) s.t. f_i(x) = f_i^+(x) - f_i^-(x) <= 0 (He, Huang, Yao, Lin 2025, eq. (21)) for IDCA and SSG."""

    labels: list               # one per constraint, for messages

    def project(self, x: np.ndarray) -> np.ndarray:
        """Projection onto the domain of x."""

    def objective_value(self, x: np.ndarray) -> float:
        """f_0(x)."""

    def objective_value_and_grad(self, x: np.ndarray) -> tuple:
        """(f_0(x), a (sub)gradient)."""

    def plus(self, x: np.ndarray) -> tuple:
        """(f^+ values (m,), a cache for :meth:`plus_grad`)."""

    def plus_grad(self, x: np.ndarray, i: int, caches) -> np.ndarray:
        """A subgradient of f_i^+ at x."""

    def minus(self, x: np.ndarray) -> tuple:
        """(f^- values (m,), subgradients (m, D)): the part IDCA linearizes (eq. (26))."""

    def linearize(self, x: np.ndarray) -> tuple:
        """(values (m,), slopes (m, D)) of affine minorants of the f^- tight at x: the linearization (26) IDCA
        uses."""

    def values(self, x: np.ndarray) -> np.ndarray:
        """f_i(x) (m,)."""

    def max_violation(self, x: np.ndarray) -> float:
        """max_i f_i(x)."""


class DualBatchSource(Protocol):
    """Unlabeled points for the stochastic gradient (11) of the DP dual (Chzhen, Hebiri, Taturyan 2024)."""

    def batches(self, oracle: str, batch_size: int, steps: int, rng) -> Iterator[tuple]:
        """``steps`` batches (t_hat (b, K), costs (b, m), weights (b,) or None)."""
