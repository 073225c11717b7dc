"""Oracle protocols: what the stochastic algorithms need from a problem, independent of any family.

The algorithms in :mod:`fairmodel.stochastic` take objects of these shapes and never a family's own object:

* :class:`SaddleOracle`: a finite-sum convex-concave function for the OGDA / SGDA methods;
* :class:`GroupRiskOracle`: m group risks of a linear model for ALEG, SMD and two-stage MERO
  (:class:`fairmodel.oracles.group_risks.GroupRisks` implements it).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
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
    w: object                  # the declared weights (``check_value``)
    radius: float | None
    shape: tuple

    def project(self, theta: np.ndarray) -> np.ndarray:
        """Projection onto the domain of the weights."""

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

    def column_second_moments(self) -> np.ndarray:
        """E[x_j^2] of every design column."""

    def lipschitz_constants(self) -> tuple:
        """(G, L): per-sample Lipschitz and smoothness bounds (Assumption 3.4)."""


class SaddleOracle(ABC):
    """What the methods need from ``min_x max_y (1/n) sum_i L_i(u)``, u = (x, y) in R^dim (Maheshwari et al., eq. (1)).

    Subclasses set ``n``, ``d_x``, ``dim``, ``zo`` (integer indices of the coordinates the zeroth-order
    estimator perturbs; the others need exact partial gradients) and implement

    * ``value(i, u, shift)``: L_i at u with ``shift`` (a vector over ``zo``) added to the zo coordinates;
    * ``gradient(i, u, exact_only)``: ``(g_x, y_index, g_y)``, the gradient of L_i at u: the x-part as a
      dense vector, the y-part either dense (``y_index`` None) or on the coordinates ``y_index`` only
      (when L_i depends on a few coordinates of y, as in strategic DRO). With ``exact_only`` only the
      coordinates outside ``zo`` are needed (the rest may be zero);
    * ``project_x(x)``, ``project_y(y)``: Euclidean projections onto X and Y.

    Oracles with a sparse y-part set ``y_box = (lo, hi)`` (Y is a box, so the projection of the few
    coordinates a step changes is a clip): a step then costs O(d_x) instead of O(dim).
    """

    n: int
    d_x: int
    dim: int
    zo: np.ndarray
    y_box = None

    @abstractmethod
    def value(self, i: int, u: np.ndarray, shift) -> float:
        """L_i at u + embed(shift)."""

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
