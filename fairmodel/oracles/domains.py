"""Convex sets with Euclidean projections: the feasible sets of saddle problems.

``fm.Ball``, ``fm.Box``, ``fm.Simplex`` and products of them (``fm.Product(a, b)`` or ``a * b``), plus
the truncated cone ``K_trunc = {(theta, alpha): ||theta||_2 <= r alpha, alpha <= alpha_max}`` of the
strategic DRO problem (Maheshwari et al., eq. (7) and Theorem 5.3; the paper's cone is unbounded, but
Theorem 4.1 needs a compact set, so it is truncated at alpha_max).

Every set is a flat vector space block of dimension ``dim``; ``project(z)`` is the exact Euclidean
projection (Prop. A.1 of the paper: firmly nonexpansive), ``contains(z)`` a membership test,
``diameter`` its diameter D (``inf`` when unbounded)
and ``require_bounded(what)`` the compactness check of Assumption 3.1 with a message naming the bound to add.
The same sets as CVXPY constraints are a table of the exact backend (:mod:`fairmodel.exact.lower`).
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
from scipy.optimize import brentq

from ..errors import ModelError
from ..utilities.validate import check_int, is_real


def _positive_int(v, what: str) -> int:
    return check_int(v, what, error=ModelError)


def _number(v, what: str) -> float:
    if not is_real(v):
        raise ModelError(f"{what} must be a number; got {v!r}")
    return float(v)


def project_ball(z: np.ndarray, radius: float | None, center=None) -> np.ndarray:
    """Euclidean projection onto the ball ||z - center||_2 <= radius (the identity for radius None).

    The norm is taken with ``math.sqrt(vdot)``: cheaper than ``np.linalg.norm`` in the inner loops of the
    stochastic methods, and the same number."""
    if radius is None:
        return z
    d = z if center is None else z - center
    nrm = math.sqrt(float(np.vdot(d, d)))
    if nrm <= radius:
        return z
    return d * (radius / nrm) if center is None else center + d * (radius / nrm)


def check_in_ball(theta, shape: tuple, radius: float | None, what: str, error=ModelError) -> np.ndarray:
    """``theta`` as a finite float array of ``shape`` inside the ball ||theta|| <= radius (None: any), else
    ``error`` naming ``what`` (a declared start or candidate, a stochastic method's start)."""
    try:
        theta = np.asarray(theta, dtype=float)
    except (TypeError, ValueError):
        raise error(f"{what} must be an array of numbers of shape {shape}; got {theta!r:.80}") from None
    if theta.shape != shape:
        raise error(f"{what} must have shape {shape}; got {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise error(f"{what} contains NaN or infinite values")
    if radius is not None and np.linalg.norm(theta) > radius * (1 + 1e-9):
        raise error(f"{what} lies outside the domain: ||w|| = {np.linalg.norm(theta):.6g} > radius {radius:g}")
    return theta


def frank_wolfe_gap(theta: np.ndarray, grad: np.ndarray, radius: float) -> float:
    """max_{||v|| <= radius} <grad, theta - v> = <grad, theta> + radius ||grad||, clipped at 0 (rounding): the
    Frank-Wolfe gap at a point ``theta`` of the ball (any shape; Frobenius norms for matrices).

    For a convex f with gradient ``grad`` at theta, f(v) >= f(theta) + <grad, v - theta> on the ball, so
    f(theta) - gap <= min_{||v|| <= radius} f: a lower bound whatever the accuracy of theta (Frank and Wolfe
    1956; Jaggi 2013, eq. (2)). The one copy of that bound: the certified Newton and first-order methods, the
    group-DRO inner minimum and the AUC dual bound call it."""
    g = np.ravel(grad)
    return max(0.0, float(np.vdot(g, np.ravel(theta))) + radius * math.sqrt(float(np.vdot(g, g))))


class Domain(ABC):
    """Base class: a closed convex subset of R^dim."""

    dim: int = 0

    @abstractmethod
    def project(self, z: np.ndarray) -> np.ndarray:
        """The Euclidean projection of z onto the set."""

    def contains(self, z, tol: float = 1e-9) -> bool:
        z = np.asarray(z, dtype=float)
        return z.shape == (self.dim,) and bool(np.linalg.norm(z - self.project(z)) <= tol * max(1.0, np.linalg.norm(z)))


    @property
    @abstractmethod
    def diameter(self) -> float:
        """sup ||z - z'|| over the set (inf when unbounded)."""

    def unbounded_reason(self) -> str | None:
        """None when compact, else which bound is missing."""
        return None

    def require_bounded(self, what: str) -> None:
        reason = self.unbounded_reason()
        if reason is not None:
            raise ModelError(f"{what} must be compact (Assumption 3.1 of the zeroth-order min-max paper): {reason}")

    def check_point(self, z, what: str) -> np.ndarray:
        """``z`` as a finite float vector of the right length (not necessarily inside the set)."""
        arr = np.asarray(z, dtype=float)
        if arr.shape != (self.dim,):
            raise ModelError(f"{what} must be a vector of length {self.dim}; got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ModelError(f"{what} contains NaN or infinite values")
        return arr

    def center(self) -> np.ndarray:
        """A feasible starting point (the projection of 0)."""
        return self.project(np.zeros(self.dim))

    def tangent(self, v: np.ndarray) -> np.ndarray:
        """The projection of a direction ``v`` onto the directions a move inside the set can take (the linear span of
        the differences of its points): v itself for a full-dimensional set."""
        return v

    def describe(self, z: str = "z", latex: bool = False) -> str:
        """The set in math notation, with ``z`` its point (text, or LaTeX math with ``latex=True``)."""
        return repr(self)

    def __mul__(self, other: "Domain") -> "Product":
        return Product(self, other)


class Ball(Domain):
    """The Euclidean ball ``{z in R^dim : ||z - center||_2 <= radius}``."""

    def __init__(self, dim: int, radius: float, center=None):
        self.dim = _positive_int(dim, "Ball dimension")
        radius = _number(radius, "Ball radius")
        if not radius > 0:
            raise ModelError(f"Ball radius must be positive; got {radius}")
        self.radius = radius
        self.center_ = np.zeros(self.dim) if center is None else self.check_point(center, "Ball center")

    def project(self, z):
        return project_ball(z, self.radius, self.center_)


    @property
    def diameter(self):
        return 2.0 * self.radius

    def unbounded_reason(self):
        return None if np.isfinite(self.radius) else "the Ball has an infinite radius; give a finite radius"

    def describe(self, z="z", latex=False):
        shifted = z if not np.any(self.center_) else f"{z} - c"
        if latex:
            return f"\\{{{z} \\in \\mathbb{{R}}^{{{self.dim}}} : \\|{shifted}\\|_2 \\le {self.radius:g}\\}}"
        return f"{{{z} in R^{self.dim} : ||{shifted}||_2 <= {self.radius:g}}}"

    def __repr__(self):
        return f"Ball({self.dim}, {self.radius:g})"


class Box(Domain):
    """The box ``{z : lo <= z <= hi}`` (bounds are numbers or vectors; ``+-inf`` allowed but not compact)."""

    def __init__(self, lo, hi, size: int | None = None):
        try:
            lo_a, hi_a = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        except (TypeError, ValueError):
            raise ModelError(f"Box bounds must be numbers or vectors of numbers; got lo={lo!r}, hi={hi!r}") from None
        if size is None:
            if lo_a.ndim == 0 and hi_a.ndim == 0:
                raise ModelError("Box needs size= when both bounds are numbers, e.g. fm.Box(-1, 1, size=n)")
            size = max(lo_a.size if lo_a.ndim else 1, hi_a.size if hi_a.ndim else 1)
        self.dim = _positive_int(size, "Box size")
        try:
            self.lo = np.broadcast_to(lo_a, (self.dim,)).astype(float)
            self.hi = np.broadcast_to(hi_a, (self.dim,)).astype(float)
        except ValueError:
            raise ModelError(f"Box bounds must be numbers or vectors of length {self.dim}") from None
        if np.any(np.isnan(self.lo)) or np.any(np.isnan(self.hi)):
            raise ModelError("Box bounds contain NaN")
        bad = np.flatnonzero(self.lo > self.hi)
        if bad.size:
            raise ModelError(f"Box has lo > hi in coordinate {bad[0]} ({self.lo[bad[0]]:g} > {self.hi[bad[0]]:g})")

    def project(self, z):
        return np.clip(z, self.lo, self.hi)

    def tangent(self, v):
        return np.where(self.hi > self.lo, v, 0.0)      # a coordinate with lo == hi cannot move

    @property
    def diameter(self):
        return float(np.linalg.norm(self.hi - self.lo))

    def unbounded_reason(self):
        bad = np.flatnonzero(~(np.isfinite(self.lo) & np.isfinite(self.hi)))
        if bad.size:
            return (f"the Box is unbounded in coordinate {bad[0]} (lo={self.lo[bad[0]]:g}, hi={self.hi[bad[0]]:g}); "
                    f"give finite lo and hi")
        return None

    def describe(self, z="z", latex=False):
        same = np.all(self.lo == self.lo[0]) and np.all(self.hi == self.hi[0])
        lo, hi = (f"{self.lo[0]:g}", f"{self.hi[0]:g}") if same else ("lo", "hi")
        each = "" if same else " (bounds per coordinate)"
        if latex:
            return f"[{lo}, {hi}]^{{{self.dim}}}" + ("" if same else "\\text{" + each + "}")
        return f"[{lo}, {hi}]^{self.dim}{each}"

    def __repr__(self):
        return f"Box(size={self.dim})"


class Simplex(Domain):
    """The probability simplex ``{z >= 0, sum z = 1}`` of R^dim."""

    def __init__(self, dim: int):
        self.dim = _positive_int(dim, "Simplex dimension")
        self._k = np.arange(1.0, self.dim + 1.0)

    def project(self, z):
        """Sort-based projection (Held, Wolfe and Crowder 1974; Duchi et al. 2008), O(dim log dim).

        With u sorted decreasingly, u_j - (sum_{l<=j} u_l - 1)/j > 0 holds exactly for j <= rho, so rho
        is a count; tau = (sum_{l<=rho} u_l - 1)/rho and the projection is max(z - tau, 0).
        """
        u = np.sort(z)[::-1]
        css = np.cumsum(u) - 1.0
        rho = np.count_nonzero(u * self._k > css)
        return np.maximum(z - css[rho - 1] / rho, 0.0)

    def tangent(self, v):
        return v - np.mean(v)               # moves inside the simplex keep the sum: directions of sum zero

    @property
    def diameter(self):
        return float(np.sqrt(2.0)) if self.dim > 1 else 0.0

    def center(self):
        return np.full(self.dim, 1.0 / self.dim)

    def describe(self, z="z", latex=False):
        if latex:
            return f"\\{{{z} \\in \\mathbb{{R}}^{{{self.dim}}} : {z} \\ge 0,\\ \\textstyle\\sum_j {z}_j = 1\\}}"
        return f"{{{z} in R^{self.dim} : {z} >= 0, sum_j {z}_j = 1}}"

    def __repr__(self):
        return f"Simplex({self.dim})"


class TruncatedCone(Domain):
    """``{(theta, alpha) in R^p x R : ||theta||_2 <= slope * alpha, alpha <= alpha_max [, ||theta|| <= radius]}``.

    The feasible set K_trunc of (theta, alpha) in the strategic DRO saddle problem (Maheshwari et al.,
    Theorem 5.3): the slope is r = 1 / (L_phi + c) (corrected: the theorem prints 1/(beta + 1) with beta the
    smoothness of phi, its proof 1/(L + 1); the derivation needs the Lipschitz-type constant L_phi + c), and
    alpha_max truncates the cone (Theorem 4.1 needs compact sets, the cone is unbounded). The vector layout is
    ``[theta_1..theta_p, alpha]``. By rotational symmetry the projection reduces to projecting the 2-D point
    (||theta||, alpha) onto a convex polygon (a triangle, or a quadrilateral with the optional radius cap); theta
    keeps its direction.
    """

    def __init__(self, p: int, slope: float, alpha_max: float, radius: float | None = None):
        self.p = _positive_int(p, "cone dimension")
        self.dim = self.p + 1
        self.slope = _number(slope, "cone slope")
        self.alpha_max = _number(alpha_max, "alpha_max")
        if not self.slope > 0:
            raise ModelError(f"cone slope must be positive; got {slope}")
        if not (self.alpha_max > 0 and np.isfinite(self.alpha_max)):
            raise ModelError(f"alpha_max must be positive and finite (the cone must be truncated "
                             f"to be compact); got {alpha_max}")
        self.radius = None if radius is None else _number(radius, "radius")
        top = self.slope * self.alpha_max
        if self.radius is None or self.radius >= top:
            verts = [(0.0, 0.0), (0.0, self.alpha_max), (top, self.alpha_max)]
        else:
            verts = [(0.0, 0.0), (0.0, self.alpha_max), (self.radius, self.alpha_max),
                     (self.radius, self.radius / self.slope)]
        self._verts = np.array(verts)

    def _project_2d(self, s: float, a: float) -> tuple[float, float]:
        if s <= self.slope * a and a <= self.alpha_max and (self.radius is None or s <= self.radius):
            return s, a
        P = np.array([s, a])
        A = self._verts
        B = np.roll(A, -1, axis=0)
        E = B - A
        t = np.clip(np.einsum("ij,ij->i", P - A, E) / np.einsum("ij,ij->i", E, E), 0.0, 1.0)
        Q = A + t[:, None] * E
        best = Q[np.argmin(np.einsum("ij,ij->i", Q - P, Q - P))]
        return float(best[0]), float(best[1])

    def project(self, z):
        theta, a = z[:-1], z[-1]
        s = float(np.sqrt(theta @ theta))
        s2, a2 = self._project_2d(s, float(a))
        if s2 == s and a2 == a:
            return z
        out = np.empty_like(z)
        out[:-1] = theta * (s2 / s) if s > 0 else 0.0
        out[-1] = a2
        return out


    @property
    def diameter(self):
        v = self._verts
        return float(np.max(np.linalg.norm(v[:, None, :] - v[None, :, :], axis=2)))

    def describe(self, z="z", latex=False):
        return _describe_cone(self, latex, ("\\theta", "\\theta"), ("theta", "theta"))

    def __repr__(self):
        return f"TruncatedCone(p={self.p}, slope={self.slope:g}, alpha_max={self.alpha_max:g})"

    def in_coordinates(self, scale) -> "ScaledTruncatedCone":
        """The same set in coordinates phi in which ||theta|| = ||scale phi|| (``scale`` a positive vector of length
        p): theta = scale phi, or theta = M phi with M'M = diag(scale^2) (a metric's coordinates,
        :class:`~fairmodel.oracles.metric.Coordinates`)."""
        return ScaledTruncatedCone(self, scale)


def _describe_cone(cone, latex: bool, tex: tuple, text: tuple) -> str:
    """The set's text: (the variable, the vector whose norm is bounded) in LaTeX or in plain text."""
    if latex:
        return (f"\\{{({tex[0]}, \\alpha) \\in \\mathbb{{R}}^{{{cone.p}}} \\times \\mathbb{{R}} : "
                f"\\|{tex[1]}\\|_2 \\le {cone.slope:g}\\,\\alpha,\\ \\alpha \\le {cone.alpha_max:g}\\}}")
    return (f"{{({text[0]}, alpha) in R^{cone.p} x R : ||{text[1]}||_2 <= {cone.slope:g} alpha, "
            f"alpha <= {cone.alpha_max:g}}}")


def _secular_root(f, hi: float) -> float:
    """The root in [0, inf) of a function ``f`` with f(0) > 0 that is negative from some t on: the bracket's upper
    end doubles from ``hi`` until f(hi) < 0, then Brent's method."""
    for _ in range(200):
        if f(hi) < 0:
            return float(brentq(f, 0.0, hi, xtol=1e-15, rtol=1e-13))
        hi *= 2.0
    raise ArithmeticError("no sign change of the secular function")     # unreachable for finite input


def project_ellipsoid(a: np.ndarray, scale2: np.ndarray, radius: float) -> np.ndarray:
    """The Euclidean projection of ``a`` onto {phi : ||scale phi|| <= radius} (``scale2`` = scale**2): phi =
    a / (1 + t scale2) with t >= 0 the root of ||scale phi(t)|| = radius (the secular equation of a trust region,
    Moré and Sorensen 1983)."""
    norm = math.sqrt(float(scale2 @ (a * a)))
    if norm <= radius:
        return a
    if radius <= 0:
        return np.zeros_like(a)

    def excess(t):
        return math.sqrt(float(scale2 @ (a / (1.0 + t * scale2)) ** 2)) - radius

    t = _secular_root(excess, (norm / radius) / float(scale2.min()))
    return a / (1.0 + t * scale2)


class ScaledTruncatedCone(Domain):
    """A :class:`TruncatedCone` in coordinates phi in which ||theta|| = ||scale phi||: ``{(phi, alpha) : ||scale
    phi||_2 <= slope alpha, alpha <= alpha_max [, ||scale phi|| <= radius]}`` (an elliptic cone), with its
    Euclidean projection in (phi, alpha).

    A stochastic method that steps in phi steps in theta in a metric (strategic DRO in raw units: the metric of the
    rows' second moment, in whose coordinates every direction's scores move alike). The projection, from the KKT conditions of min ||phi - a||^2 + (alpha - b)^2 over the set:
    phi = a / (1 + t scale^2) for a multiplier t >= 0, on the cone alpha = b + slope t r with r = ||scale phi||, so
    r (1 - slope^2 t) = slope b, one root in t (none when (a, b) lies in the polar cone, slope ||a / scale|| <= -b:
    the apex); when that point's alpha exceeds alpha_max the top is active (phi the projection onto the ellipsoid
    ||scale phi|| <= slope alpha_max), and when its ||scale phi|| exceeds the radius the radius is active (phi the
    projection onto ||scale phi|| <= radius, alpha clipped to [radius / slope, alpha_max]): for a convex set C and
    a convex B, the projection onto C n B lies on the boundary of B when the projection onto C lies outside B.
    """

    def __init__(self, cone: TruncatedCone, scale):
        scale = np.asarray(scale, dtype=float)
        if scale.shape != (cone.p,) or not np.all(np.isfinite(scale)) or not np.all(scale > 0):
            raise ModelError(f"the scale of a cone's coordinates must be {cone.p} positive finite numbers")
        self.cone, self.scale, self._scale2 = cone, scale, scale * scale
        self.p, self.dim = cone.p, cone.dim
        self.slope, self.alpha_max, self.radius = cone.slope, cone.alpha_max, cone.radius

    def _project_cone(self, a: np.ndarray, b: float) -> tuple[np.ndarray, float]:
        k, s2 = self.slope, self._scale2
        if k * math.sqrt(float((a * a) @ (1.0 / s2))) <= -b:
            return np.zeros_like(a), 0.0                       # the polar cone: the apex

        def secular(t):
            return math.sqrt(float(s2 @ (a / (1.0 + t * s2)) ** 2)) * (1.0 - k * k * t) - k * b

        t = _secular_root(secular, 1.0 / (k * k))
        phi = a / (1.0 + t * s2)
        return phi, math.sqrt(float(s2 @ (phi * phi))) / k

    def project(self, z):
        a, b = z[:-1], float(z[-1])
        norm = math.sqrt(float(self._scale2 @ (a * a)))
        if not (math.isfinite(norm) and math.isfinite(b)):
            raise ArithmeticError(f"cannot project a point whose size is {norm:g} (alpha {b:g}): the iterates diverged")
        top = self.slope * self.alpha_max
        cap = top if self.radius is None else min(top, self.radius)
        if norm <= self.slope * b and b <= self.alpha_max and norm <= cap:
            return z
        phi, alpha = (a, b) if norm <= self.slope * b else self._project_cone(a, b)
        if alpha > self.alpha_max:
            phi, alpha = project_ellipsoid(a, self._scale2, top), self.alpha_max
        if self.radius is not None and self.radius < top and \
                math.sqrt(float(self._scale2 @ (phi * phi))) > self.radius * (1 + 1e-12):
            phi = project_ellipsoid(a, self._scale2, self.radius)
            alpha = min(max(b, self.radius / self.slope), self.alpha_max)
        out = np.empty_like(z)
        out[:-1], out[-1] = phi, alpha
        return out

    @property
    def diameter(self):
        """The cone's diameter in phi: the top's widest chord, or an edge from the apex to the top."""
        width = min(self.slope * self.alpha_max, np.inf if self.radius is None else self.radius) / self.scale.min()
        return float(max(2.0 * width, math.hypot(width, self.alpha_max)))

    def describe(self, z="z", latex=False):
        return _describe_cone(self, latex, ("\\phi", "s \\odot \\phi"), ("phi", "s * phi"))

    def __repr__(self):
        return f"ScaledTruncatedCone(p={self.p}, slope={self.slope:g}, alpha_max={self.alpha_max:g})"


class Product(Domain):
    """The Cartesian product of domains; vectors are the concatenation of the parts' vectors."""

    def __init__(self, *parts: Domain):
        flat: list[Domain] = []
        for part in parts:
            if not isinstance(part, Domain):
                raise ModelError(f"Product takes fairmodel domains (Ball, Box, Simplex, ...); "
                                 f"got {type(part).__name__}")
            flat += part.parts if isinstance(part, Product) else [part]
        if not flat:
            raise ModelError("Product needs at least one domain")
        self.parts = tuple(flat)
        self.dim = sum(p.dim for p in self.parts)
        self._cuts = np.cumsum([p.dim for p in self.parts])[:-1]

    def split(self, z):
        return np.split(z, self._cuts)

    def tangent(self, v):
        return np.concatenate([p.tangent(vi) for p, vi in zip(self.parts, self.split(v))])

    def project(self, z):
        return np.concatenate([p.project(zi) for p, zi in zip(self.parts, self.split(z))])


    @property
    def diameter(self):
        return float(np.sqrt(sum(p.diameter ** 2 for p in self.parts)))

    def unbounded_reason(self):
        for i, p in enumerate(self.parts):
            reason = p.unbounded_reason()
            if reason is not None:
                return f"part {i} ({p!r}): {reason}"
        return None

    def center(self):
        return np.concatenate([p.center() for p in self.parts])

    def describe(self, z="z", latex=False):
        return (" \\times " if latex else " x ").join(p.describe("z", latex) for p in self.parts)   # z bound in each

    def __repr__(self):
        return " x ".join(map(repr, self.parts))


def as_domain(domain, what: str) -> Domain:
    if not isinstance(domain, Domain):
        raise ModelError(f"{what} must be a fairmodel domain (fm.Ball, fm.Box, fm.Simplex or a product); "
                         f"got {type(domain).__name__}")
    return domain
