"""Smoothing of the non-smooth pointwise losses, for certified lower bounds by smooth methods.

A convex loss phi (in the score z, for a fixed label) is the supremum of its tangent lines l_g(z) = g z - phi*(g), g in
the range of its subgradients (phi* the convex conjugate). Replacing every non-smooth term of a function Phi by one of
its tangent lines gives a function Phi_lin <= Phi wherever those terms have non-negative weights (a convex
declaration), convex, and linear in the replaced terms: its Frank-Wolfe bound on a ball is a rigorous lower bound on
min Phi. The tangent chosen for a row is the slope of a smooth approximation phi_mu at the row's score at a point
theta_mu that minimizes the smoothed function: Phi_lin then has the smoothed function's gradient at theta_mu (a small
Frank-Wolfe gap), and it loses against Phi only on the rows whose score is within a few mu of a kink.

The smoothing of the hinge max(0, m), m = 1 - y z, is the softplus mu log(1 + e^(m / mu)) (between phi and
phi + mu log 2; Nesterov 2005 smooths maxima by entropy the same way): its curvature is positive everywhere, so a
Newton method on it behaves as on a logistic loss, where the Moreau envelope (Huber) has zero curvature off its
kink's mu-neighbourhood and leaves a projected Newton step undetermined there. Its slope is g = -y a with
a = sigmoid(m / mu) in (0, 1), and the tangent of slope g is a m = a (1 - y z) (phi*(-y a) = -a on a in [0, 1]).
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit


class HingeSmoothing:
    """The softplus smoothing of max(0, 1 - y z) (labels +-1) and its tangent lines."""

    @staticmethod
    def smooth(z, y, mu):
        """(phi_mu, d phi_mu / dz, d^2 phi_mu / dz^2) of the softplus mu log(1 + exp((1 - y z) / mu))."""
        t = (1.0 - y * z) / mu
        a = expit(t)
        return mu * np.logaddexp(0.0, t), -y * a, a * (1.0 - a) / mu

    @staticmethod
    def tangent(z, y, mu):
        """(l(z), l'): the tangent line of the hinge whose slope is the smoothed slope at z, at z."""
        a = expit((1.0 - y * z) / mu)
        return a * (1.0 - y * z), -y * a


SMOOTHINGS = {"hinge": HingeSmoothing}     # kernel name -> its smoothing and tangent lines
STEPS = (1e-1, 1e-2, 1e-3, 1e-4)           # the smoothing parameters a certificate tries in turn (score units),
                                           # each minimum the warm start of the next


def smoothable(kernel) -> bool:
    """Whether ``kernel`` is non-smooth with a smoothing here (a smooth kernel is used as it is)."""
    return kernel is not None and not kernel.smooth() and kernel.name in SMOOTHINGS


def _kernel(name, symbol, binary, curvature: float, values, second: bool):
    """A kernel class (phi, dphi, d2phi or None, its smoothness) from ``values(z, y)`` -> (phi, dphi[, d2phi])."""
    return type(name, (), {
        "name": name, "symbol": symbol, "binary": binary,
        "smoothness": staticmethod(lambda z_bound, y_bound: curvature),
        "smooth": staticmethod(lambda: bool(np.isfinite(curvature))),
        "phi": staticmethod(lambda z, y: values(z, y)[0]),
        "dphi": staticmethod(lambda z, y: values(z, y)[1]),
        "d2phi": staticmethod(lambda z, y: values(z, y)[2]) if second else None})


def smoothed(kernel, mu: float):
    """The smoothing phi_mu of a non-smooth ``kernel`` as a kernel (phi, dphi, d2phi; smoothness 1/(4 mu)); any
    other kernel as it is."""
    if not smoothable(kernel):
        return kernel
    s = SMOOTHINGS[kernel.name]
    return _kernel(f"{kernel.name}_smoothed", f"{kernel.symbol}_mu", kernel.binary, 0.25 / mu,
                   lambda z, y: s.smooth(z, y, mu), second=True)


def minorant(kernel, mu: float):
    """The kernel whose value and derivative at a score z are those of the tangent line of a non-smooth ``kernel``
    with the smoothed slope at z: evaluated at theta_mu, the value and gradient of Phi_lin (module docstring). Any
    other kernel as it is."""
    if not smoothable(kernel):
        return kernel
    s = SMOOTHINGS[kernel.name]
    return _kernel(f"{kernel.name}_tangent", f"{kernel.symbol}_lin", kernel.binary, np.inf,
                   lambda z, y: s.tangent(z, y, mu), second=False)
