"""Oracle protocols: what the stochastic algorithms need from a problem, independent of any family.

The algorithms in :mod:`fairmodel.stochastic` take objects of these shapes and never a family's own object:

* :class:`SaddleOracle`: a finite-sum convex-concave function for the OGDA / SGDA methods;
* a *group-risk oracle* for ALEG and SMD (:class:`fairmodel.oracles.group_risks.GroupRisks` is the
  reference implementation, :class:`fairmodel.families.lagrangian.LagrangianOracle` the generic one):
  ``m`` blocks of values whose weighted sum is minimized, full passes and variance-reduced minibatch steps.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


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
