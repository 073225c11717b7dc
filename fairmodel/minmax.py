"""Finite-sum convex-concave saddle problems ``min_{x in X} max_{y in Y} (1/n) sum_i L_i(x, y)``, solved by
zeroth-order (value oracle) or first-order OGDA/SGDA with random reshuffling and judged by the duality gap
(Maheshwari, Chiu, Mazumdar, Sastry, Ratliff, AISTATS 2022: Algorithms 1-4, Theorem 4.1).

>>> import numpy as np, fairmodel as fm
>>> A = np.random.default_rng(0).standard_normal((50, 3, 4))
>>> sp = fm.SaddleProblem.matrix_game(A)                       # x^T A_i y on two simplices
>>> res = sp.solve(seed=0)          # first order (the game has gradients); stops when the duality gap passes
>>> res.ok, res.checks[0]["name"]                                # doctest: +SKIP
(True, 'duality gap')

The duality gap ``max_{y'} L(x, y') - min_{x'} L(x', y)`` of a candidate is computed from closed forms
where the structure gives one (``max_y=`` / ``min_x=`` callables; built in for the matrix game and the
quadratic game) and otherwise by two exact CVXPY solves of a user's ``cvxpy_value(x, y)``. The exact backend
solves the built-in games by an LP or a conic program, and a problem given by callables with ``grad=`` and a
computable gap by the extragradient method on the full gradient, stopped when that gap passes the exact tolerance.
The gap decides ``ok`` (:meth:`SaddleProblem.gap_checks`, tolerance relative to the gap at the start) and, by
default, when a stochastic run stops (:class:`~fairmodel.families.stopping.CertifiedStop` on the same check);
without it a result is ``unverified``.
"""
from __future__ import annotations

import numbers
import math
import time
from dataclasses import fields

import numpy as np

from .errors import ModelError, OptionError, UnsupportedProblemError
from .exact import minmax as exact_minmax
from .exact.newton import ball_qp_step
from .expressions.notation import layout
from .families.base import (DESCRIBE_FORMATS, Check, Solution, bound_order, describe_sections, inconsistent,
                             own_tolerance)
from .families.stopping import STOP_RULES, CertifiedStop
from .oracles.domains import Ball, Box, Simplex, as_domain
from .oracles.protocols import SaddleOracle
from .results.judge import Evaluation, verdict
from .results.result import Result
from .stochastic.ogda import METHODS, OGDAOptions, RestartOnStall, ogda
from .stochastic.ogda_estimator import FD_RADIUS, Estimator, NonFiniteValue, auto_steps, mean_operator
from .utilities import display
from .utilities.threads import few_threads
from .utilities.validate import as_generator, check_choice, check_int, check_number, check_options, is_real

# Defaults of SaddleProblem.solve. stop="checks" (the default): the run stops when the judge's duality-gap check
# passes (GAP_RELATIVE below), checked every CHECKS_EVERY epochs and then every 25 % of the run
# (families/stopping.CertifiedStop); the epochs are a cap, CAP_FACTOR x the old fixed budget and at least
# MIN_CAP_STEPS inner steps (one epoch is n steps: a one-component game needs many epochs); anytime steps
# min(eta_max, eta0 / sqrt(t + 1)) from the measured noise and smoothness (ogda_estimator.auto_steps) and the
# average over the tail of the run; with n > 1 components (either order), the variance-reduced estimate
# (variance_reduction, fairmodel.stochastic.ogda_estimator.SnapshotEstimate) with a constant step from the measured
# smoothness.
# stop="budget": the old fixed budget (1000 epochs, constant steps for that budget, the average of the second half of
# the epochs).
BUDGET_DEFAULTS = {"epochs": 1000, "eta0": "auto", "R0": "auto", "chi": 0.05, "schedule": "constant",
                   "output": "suffix"}
CAP_FACTOR, MIN_CAP_STEPS = 10, 10 ** 6
CHECKS_EVERY = BUDGET_DEFAULTS["epochs"] // 4
# A variance-reduced run with its constant step gets to the tolerance in tens of epochs where the plain estimate needs
# thousands (measured in docs/minmax.md): its first check comes after this many epochs (one evaluation of the gap each).
SVRG_CHECKS_EVERY = 10
CHECKS_DEFAULTS = {"eta0": "auto", "R0": "auto", "chi": 0.05, "schedule": "anytime", "output": "tail"}
GAP_RELATIVE, SPREAD_FRACTION, GAP_FLOOR, SCALE_PROBES = 1e-2, 1e-2, 1e-6, 8
GAP_REASON = ("it bounds the suboptimality of both players, max_y L(x, .) - OPT and OPT - min_x L(., y); a saddle "
              "problem has no natural unit, so the tolerance is 1 % of the duality gap at the start (the centre of the "
              "domains: the run must remove 99 % of it), and where the start is nearly a saddle point, of 1 % of the "
              "spread of L over 8 points of the domain around it, plus 1e-6 of that scale, plus the error of the "
              "computed gap itself relative to |L| at the start (1e-10 where both inner problems have closed forms: "
              "rounding; 1e-7 where one is a CVXPY solve: the solver's relative tolerance), so that a constant added "
              "to L does not loosen it")
EXACT_GAP_REASON = ("an exact saddle point has gap 0 up to the LP / conic solver's tolerance (1e-8 in the problem's "
                    "unit), with a margin: 1e-6 of the problem's scale (the duality gap at the centre of the domains, "
                    "or 1 % of the spread of L around it), plus the error of the computed gap relative to |L| (1e-10 "
                    "with closed forms, 1e-7 with CVXPY solves); the extragradient method runs until its gap is below it")
# the computed duality gap's own error relative to |L|: rounding where both inner problems have closed forms, the CVXPY
# solvers' relative tolerance (about 1e-8, with a margin) where either is a solve of cvxpy_value
ROUNDING_RELATIVE, INNER_RELATIVE = 1e-10, 1e-7
# The exact backend of a problem given by callables: the extragradient method on the full gradient, the judge's gap
# checked after EXACT_CHECK_EVERY steps (then every 25 % of the run), at most EXACT_MAX_STEPS steps (max_steps=).
EXACT_MAX_STEPS, EXACT_CHECK_EVERY = 10_000, 10
# The fail-fast rule never stops the extragradient method before this share of its cap: where the problem has an error
# bound its gap falls linearly after a transient, and a power-law rate measured in the transient underestimates the
# rate to come (a robust least-squares game of 100 components: the rate 1 from 20 to 40 steps projected 120,000 steps;
# it passes after 300, in 1.1 s). A hopeless run costs at most this share of the cap.
EXACT_EARLIEST = 0.1
EXACT_METHOD = ("the extragradient method (Korpelevich 1976) on the full gradient (1/n) sum_i grad L_i (from grad=, or "
                "by central differences of the values along the coordinate axes), stopped when the judge's duality gap "
                "passes the exact tolerance")
OGDA_OPTIONS = [f.name for f in fields(OGDAOptions) if f.name not in ("method", "order")] + \
    ["callback", "max_queries", "max_time", "store_iterates"]


def _method_for_backend(method, backend) -> str:
    """The method of a ``backend=`` choice, as ``Problem.solve`` takes it: ``"exact"`` or an OGDA/SGDA method."""
    if backend is None:
        return method or "ogda-rr"
    check_choice(backend, "backend", ("exact", "stochastic"))
    if backend == "exact" and method not in (None, "exact"):
        raise OptionError(f"the exact backend of a saddle problem has one method, 'exact' (the default); got "
                          f"{method!r}")
    if backend == "stochastic" and method == "exact":
        raise OptionError(f"method='exact' is the exact backend; the stochastic methods are {', '.join(METHODS)}")
    return "exact" if backend == "exact" else method or "ogda-rr"


class _CallableOracle(SaddleOracle):
    """The SaddleOracle of user callables value(x, y, i) and grad(x, y, i) -> (g_x, g_y)."""

    def __init__(self, sp: "SaddleProblem"):
        self.sp = sp
        self.n, self.d_x, self.dim = sp.n, sp.d_x, sp.d_x + sp.d_y
        self.zo = np.flatnonzero(sp.zo_mask)

    def value(self, i, u, shift):
        up = u.copy()
        up[self.zo] += shift
        out = self.sp.value_fn(up[:self.d_x], up[self.d_x:], i)
        if not is_real(out) and not (isinstance(out, np.ndarray) and out.shape == () and out.dtype.kind in "biuf"):
            raise ModelError(f"value(x, y, i) must return one number (the component L_i); got "
                             f"{type(out).__name__} {np.shape(out) if hasattr(out, 'shape') else ''}".rstrip())
        return float(out)

    def gradient(self, i, u, exact_only):
        gx, gy = self.sp.grad_fn(u[:self.d_x], u[self.d_x:], i)
        gx, gy = np.array(gx, dtype=float).ravel(), np.array(gy, dtype=float).ravel()
        if gx.shape != (self.d_x,) or gy.shape != (self.dim - self.d_x,):
            raise ModelError(f"grad(x, y, i) must return (a vector of length {self.d_x}, a vector of length "
                             f"{self.dim - self.d_x}); got shapes {gx.shape}, {gy.shape}")
        if not (np.all(np.isfinite(gx)) and np.all(np.isfinite(gy))):
            raise NonFiniteValue(f"the gradient oracle returned non-finite values for component {i} at "
                                 f"x = {np.array2string(u[:self.d_x], threshold=12, precision=4)}, "
                                 f"y = {np.array2string(u[self.d_x:], threshold=12, precision=4)}")
        return gx, None, gy

    def project_x(self, x):
        return self.sp.x_domain.project(x)

    def project_y(self, y):
        return self.sp.y_domain.project(y)

    def tangent(self, v):
        return np.concatenate([self.sp.x_domain.tangent(v[:self.d_x]), self.sp.y_domain.tangent(v[self.d_x:])])


class _GapJudge:
    """The judge of a saddle problem in the interface of a reduction (``evaluate(variables)``, ``acceptance``), so
    that :class:`~fairmodel.families.stopping.CertifiedStop` stops a run on the very check that decides ``ok``."""

    def __init__(self, sp: "SaddleProblem", solver=None, target=None):
        self.sp, self.solver, self.target = sp, solver, target

    def evaluate(self, variables: dict) -> Evaluation:
        return self.sp.evaluate(variables["x"], variables["y"], self.solver)

    def acceptance(self, evaluation: Evaluation, backend: str) -> list[Check]:
        return self.sp.gap_checks(evaluation, backend, self.target, self.solver)


def _callable(f, what):
    if f is not None and not callable(f):
        raise ModelError(f"{what} must be a callable; got {type(f).__name__}")
    return f


class SaddleProblem:
    """``min_{x in x_domain} max_{y in y_domain} (1/n) sum_{i=0}^{n-1} L_i(x, y)``, L_i convex in x, concave in y.

    Parameters
    ----------
    value : ``value(x, y, i) -> float``, the component L_i (defined on all of R^d: zeroth-order queries
        land outside the domains).
    n : the number of components.
    x_domain, y_domain : ``fm.Ball``, ``fm.Box``, ``fm.Simplex`` or products (``fm.Product`` / ``*``);
        compact for the stochastic methods (Assumption 3.1).
    grad : optional ``grad(x, y, i) -> (grad_x L_i, grad_y L_i)``; needed by ``order=1`` and, with a
        ``zo_mask``, for the coordinates the zeroth-order estimator does not perturb.
    zo_mask : boolean over the d_x + d_y coordinates of (x, y): which ones the zeroth-order estimator
        perturbs (default all, the theory's setting; the block mode of the paper's experiments otherwise).
    cvxpy_value : optional ``cvxpy_value(x, y) -> cvxpy expression`` of the mean L, where one argument is
        a CVXPY variable and the other a constant array; gives the duality gap by exact CVXPY solves.
    max_y, min_x : optional closed forms ``max_y(x) = max_{y in Y} L(x, y)`` and ``min_x(y) = min_{x in X}
        L(x, y)`` (they take precedence over ``cvxpy_value``).
    saddle_point : optional known (x*, y*): the judge then also reports Delta(x, y) = L(x, y*) - L(x*, y)
        (eq. (4), the paper's suboptimality).
    """

    def __init__(self, value, n: int, x_domain, y_domain, grad=None, *, zo_mask=None, cvxpy_value=None,
                 max_y=None, min_x=None, saddle_point=None, name: str = "saddle"):
        if not callable(value):
            raise ModelError(f"value must be a callable value(x, y, i) -> float; got {type(value).__name__}")
        if isinstance(n, bool) or not isinstance(n, (numbers.Integral, np.integer)) or n < 1:
            raise ModelError(f"n (the number of components) must be a positive integer; got {n!r}")
        self.value_fn, self.n, self.name = value, int(n), str(name)
        self.x_domain, self.y_domain = as_domain(x_domain, "x_domain"), as_domain(y_domain, "y_domain")
        self.d_x, self.d_y = self.x_domain.dim, self.y_domain.dim
        self.grad_fn = _callable(grad, "grad")
        self.cvxpy_value = _callable(cvxpy_value, "cvxpy_value")
        self.max_y, self.min_x = _callable(max_y, "max_y"), _callable(min_x, "min_x")
        d = self.d_x + self.d_y
        if zo_mask is None:
            self.zo_mask = np.ones(d, dtype=bool)
        else:
            mask = np.asarray(zo_mask)
            if mask.dtype != bool or mask.shape != (d,):
                raise ModelError(f"zo_mask must be a boolean array over the {d} coordinates of (x, y)")
            if not mask.all() and grad is None:
                raise ModelError("a zo_mask that leaves coordinates out needs grad= for their exact partial "
                                 "derivatives")
            self.zo_mask = mask.copy()
        self.saddle_point = None
        if saddle_point is not None:
            xs, ys = saddle_point
            self.saddle_point = (self.x_domain.check_point(xs, "saddle_point x"),
                                 self.y_domain.check_point(ys, "saddle_point y"))
        self._mean_value = None   # vectorized mean of L (built-in problems)
        self._exact = None        # exact saddle solver (built-in problems): solver -> (value, x, y, record)
        self._scale = None        # (scale of the gap tolerance, |L| at the start): gap_scale()
        self._formula = None      # L_i in text and LaTeX (built-in problems)
        self.title = None         # names results, cross-checks and plots (problem files set it)

    def __repr__(self):
        return f"SaddleProblem({self.name!r}, n={self.n}, X={self.x_domain!r}, Y={self.y_domain!r})"

    def __str__(self):
        return (f"min_(x in {self.x_domain!r}) max_(y in {self.y_domain!r}) (1/{self.n}) sum_i L_i(x, y)"
                f"  [{self.name}]")

    @property
    def label(self) -> str:
        """What the problem is, for results, cross-check headings and plots."""
        kind = f"min-max: {self.name}"
        return f"{self.title} ({kind})" if self.title else kind

    def describe(self, format: str = "text") -> str:
        """The problem in math notation (the domains, the components L_i when known), the methods of both backends
        and how the judge certifies a candidate; ``format``: ``"text"``, ``"markdown"`` or ``"latex"``."""
        check_choice(format, "format", DESCRIBE_FORMATS)
        tex = format != "text"
        objective = (f"\\max_{{y \\in Y}} \\frac{{1}}{{{self.n}}}\\sum_{{i=1}}^{{{self.n}}} L_i(x, y)" if tex
                     else f"max_(y in Y) (1/{self.n}) sum_i L_i(x, y)")
        over = ["x \\in X" if tex else "x in X"]
        user = f"L_i(x, y): the value callable given to SaddleProblem, i = 1..{self.n}"
        formula = self._formula or (user, display.latex_prose(user))
        where = [f"X = {self.x_domain.describe('x', False)}, Y = {self.y_domain.describe('y', False)}", formula[0]]
        if tex:
            where = [f"$X = {self.x_domain.describe('x', True)}$, $Y = {self.y_domain.describe('y', True)}$",
                     formula[1]]
        body = layout("minimize", objective, over, [], where, format)
        gap = ("duality gap max_y L(x, .) - min_x L(., y), both from closed forms" if
               self.max_y is not None and self.min_x is not None else "duality gap max_y L(x, .) - min_x L(., y) by "
               "two exact CVXPY solves of cvxpy_value" if self.cvxpy_value is not None else f"no duality gap (give "
               f"{self.gap_needs()}): the judge reports L(x, y)")
        exact = ("the exact saddle point (an LP for the matrix game, a Huber program for the quadratic game)"
                 if self._exact else EXACT_METHOD if self.exact_missing() is None else None)
        methods = [("Exact backend", {"exact": exact} if exact else {}),
                   ("Stochastic backend", METHODS)]
        head = f"Min-max problem: {self.title or self.name} (Maheshwari, Chiu, Mazumdar, Sastry, Ratliff 2022)"
        return describe_sections(head, body, methods, [f"Judge certificate: {gap}"], format)

    # -- values and the judge ---------------------------------------------------------------------------
    def value(self, x, y) -> float:
        """L(x, y) = (1/n) sum_i L_i(x, y)."""
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if self._mean_value is not None:
            return float(self._mean_value(x, y))
        return float(np.mean([self.value_fn(x, y, i) for i in range(self.n)]))

    def primal(self, x, solver=None):
        """max_{y in Y} L(x, y) (closed form, else CVXPY; None when neither is available)."""
        if self.max_y is not None:
            return float(self.max_y(np.asarray(x, dtype=float)))
        if self.cvxpy_value is not None:
            return exact_minmax.inner_by_cvxpy(self.cvxpy_value, np.asarray(x, dtype=float), self.y_domain, "max",
                                               solver)
        return None

    def dual(self, y, solver=None):
        """min_{x in X} L(x, y) (closed form, else CVXPY; None when neither is available)."""
        if self.min_x is not None:
            return float(self.min_x(np.asarray(y, dtype=float)))
        if self.cvxpy_value is not None:
            return exact_minmax.inner_by_cvxpy(self.cvxpy_value, np.asarray(y, dtype=float), self.x_domain, "min",
                                               solver)
        return None

    @few_threads
    def evaluate(self, x, y, solver=None) -> Evaluation:
        """The judge: objective (max_y L(x, .) when computable, else L(x, y)), the duality gap and Delta."""
        x = self.x_domain.check_point(x, "x")
        y = self.y_domain.check_point(y, "y")
        for point, dom, what in ((x, self.x_domain, "x"), (y, self.y_domain, "y")):
            if not dom.contains(point, tol=1e-7):
                raise ModelError(f"the candidate {what} is outside its domain {dom!r}; project it first")
        L = self.value(x, y)
        primal, dual = self.primal(x, solver), self.dual(y, solver)
        certificate = {"saddle_value": L}
        if primal is not None:
            certificate["primal"] = primal
        if dual is not None:
            certificate["dual"] = dual
        if primal is not None and dual is not None:
            certificate["duality_gap"] = primal - dual
        if self.saddle_point is not None:
            xs, ys = self.saddle_point
            certificate["delta"] = self.value(x, ys) - self.value(xs, y)
        metrics = {"objective_kind": "primal max_y L(x, y)" if primal is not None else
                   "saddle value L(x, y) (give max_y= or cvxpy_value= for the primal value and the duality gap)"}
        return Evaluation(objective=primal if primal is not None else L, metrics=metrics, certificate=certificate)

    # -- the checks that decide ok ------------------------------------------------------------------------
    def gap_needs(self) -> str:
        """What the judge's duality gap still needs, in words: the closed forms not given (both, or the one missing),
        or ``cvxpy_value=``."""
        missing = [name for name, given in (("max_y=", self.max_y), ("min_x=", self.min_x)) if given is None]
        given = "" if len(missing) == 2 else f" ({'max_y=' if missing == ['min_x='] else 'min_x='} is given)"
        forms = " and ".join(missing)
        return f"the closed form{'s' if len(missing) == 2 else ''} {forms}{given}, or cvxpy_value="

    def has_gap(self) -> bool:
        """True when the judge can compute the duality gap (closed forms or ``cvxpy_value``)."""
        return (self.max_y is not None or self.cvxpy_value is not None) and \
            (self.min_x is not None or self.cvxpy_value is not None)

    def gap_scale(self, solver=None) -> tuple[float, float]:
        """(scale, |L| at the start) of the stochastic gap tolerance: the larger of the duality gap at the centre u_c
        of the domains and SPREAD_FRACTION times the spread max - min of L over u_c and SCALE_PROBES points projected
        from u_c + (D/2) v (fixed directions v: the same for every run)."""
        if self._scale is None:
            xc, yc = self.x_domain.center(), self.y_domain.center()
            D = float(np.hypot(self.x_domain.diameter, self.y_domain.diameter))
            dirs = np.random.default_rng(0).standard_normal((SCALE_PROBES, self.d_x + self.d_y))
            dirs *= 0.5 * D / np.linalg.norm(dirs, axis=1, keepdims=True)
            values = [self.value(xc, yc)] + [self.value(self.x_domain.project(xc + v[:self.d_x]),
                                                        self.y_domain.project(yc + v[self.d_x:])) for v in dirs]
            gap = self.primal(xc, solver) - self.dual(yc, solver)
            self._scale = (max(gap, SPREAD_FRACTION * (max(values) - min(values))), abs(values[0]))
        return self._scale

    def gap_checks(self, evaluation: Evaluation, backend: str, target=None, solver=None) -> list[Check]:
        """The checks that decide ``ok``: the duality gap within its tolerance (none when it is not computable), and
        the certificate's consistency: ``min_x L(., y) <= L(x, y) <= max_y L(x, .)`` up to rounding
        (:func:`~fairmodel.families.base.bound_order`); a gap below zero beyond rounding proves a closed form
        (``max_y=``, ``min_x=``) or ``cvxpy_value`` wrong, and fails."""
        cert = evaluation.certificate
        gap = cert.get("duality_gap")
        if gap is None:
            return []
        consistent = [bound_order("L(x, y)", cert["saddle_value"], "max_y L(x, .)", cert["primal"]),
                      bound_order("min_x L(., y)", cert["dual"], "L(x, y)", cert["saddle_value"])]
        if target is not None and backend != "exact":
            return [Check("duality gap", gap, float(target), "the target_gap asked for", "certificate"), *consistent]
        scale, level = self.gap_scale(solver)
        unit = scale or level or 1.0           # L constant: every point is a saddle point
        closed = self.max_y is not None and self.min_x is not None
        error = ROUNDING_RELATIVE if closed else INNER_RELATIVE
        if backend == "exact":
            return [Check("duality gap", gap, 1e-6 * unit + error * max(abs(evaluation.objective), level),
                          EXACT_GAP_REASON, "certificate"), *consistent]
        return [Check("duality gap", gap, GAP_RELATIVE * scale + GAP_FLOOR * unit + error * level, GAP_REASON,
                      "certificate"), *consistent]

    def advice(self, backend: str, order: int, failing=(), stopped_early: bool = False) -> str:
        """What usually fixes a result that is not ok (``stopped_early``: the fail-fast rule stopped the run, so the
        measured rate says a larger cap would not do)."""
        if inconsistent(failing):
            return ("What to fix: the certificate contradicts itself, so the inner solutions it was computed from are "
                    "wrong: max_y= must return max over y in Y of L(x, y), min_x= the min over x in X (the mean of "
                    "value(x, y, i) over i), and cvxpy_value= the same function as value.")
        if not self.has_gap():
            return (f"What to try: give {self.gap_needs()} (a CVXPY expression of L) so that the judge can compute "
                    "the duality gap.")
        if backend == "exact":
            return "What to try: another CVXPY solver (solver=)."
        cap = "a larger cap (epochs=) lets the run continue until the gap passes"
        if order == 0:       # the noise of value-only estimates is what usually stops these runs: what avoids it first
            tips = ["order=1 (exact gradients; give grad=) or estimator='two-point' (far less noise)"
                    if self.grad_fn is None else "order=1: exact gradients are available (grad=)"]
            if stopped_early:
                tips[0] = ("order=0 cannot reach this tolerance before the cap at the rate measured (the noise of "
                           "value-only estimates); " + tips[0])
            tips += [tip for tip in (self._exact_tip(),) if tip]
            tips += ["if the gap stalls, a smaller query radius R0= (its smoothing bias is of order ell R0)", cap]
        else:
            tips = [cap, "if the gap stalls, a smaller step (eta0=, eta_max=)"]
            tips += [tip for tip in (self._exact_tip(),) if tip]
        return "What to try: " + "; ".join(tips) + "."

    def _exact_tip(self) -> str | None:
        """The exact backend as advice: what it runs, or that grad= would open it (None when it cannot)."""
        if self._exact is not None:
            return "backend='exact' (the exact saddle point)"
        if self.exact_missing() is None:
            return "backend='exact' (the extragradient method on the full gradient: no sampling noise)"
        return None

    def exact_missing(self) -> str | None:
        """None when the exact backend can solve this problem; else why not and what to give (the message of its
        refusal). The built-in games have exact programs; a problem given by callables is solved exactly by the
        extragradient method on the full gradient (from ``grad=``, or without it by central differences of the values
        along the coordinate axes, 2 d n queries a gradient: no sampling noise), certified by the judge's duality gap,
        which needs ``max_y=`` and ``min_x=`` or ``cvxpy_value=``."""
        if self._exact is not None:
            return None
        missing = []
        if not self.has_gap():
            missing.append(f"no duality gap for the judge (no exact result can be certified without it): give "
                           f"{self.gap_needs()} (a CVXPY expression of the mean L, DCP: convex in x, concave in y)")
        if not missing:
            return None
        return (f"the exact backend of a saddle problem given by callables is {EXACT_METHOD}; this problem has "
                + "; and ".join(missing) + f". Without {'it' if len(missing) == 1 else 'them'}, solve with the stochastic backend alone (sp.solve()), "
                "whose result is judged " + ("by the duality gap" if self.has_gap() else "as unverified"))

    # -- solving ------------------------------------------------------------------------------------------
    def oracle(self) -> SaddleOracle:
        return _CallableOracle(self)

    @few_threads
    def solve(self, method: str | None = None, order: int | None = None, seed=0, *, backend: str | None = None,
              verbose=None, solver=None, x0=None, y0=None, stop: str = "checks", **options) -> Result:
        """Solve with ``method`` in ``ogda-rr`` (default), ``ogda-wr``, ``sgda-rr``, ``sgda-wr``, or with the exact
        backend (``backend="exact"``, or ``method="exact"``: the exact program of a built-in game, the extragradient
        method on the full gradient for a problem given by callables with ``grad=`` and a computable gap, option
        ``max_steps``); returns an ``fm.Result`` judged by the duality gap (``ok`` only when it passes).

        ``order``: 1 (exact gradients, the default when ``grad=`` was given: on smooth problems it reaches a small
        gap orders of magnitude faster) or 0 (values only: the paper's zeroth-order methods, the default without
        ``grad=``). ``stop="checks"`` (default) stops the run when the judge's duality-gap check passes (epochs are
        a cap; ``check_every=`` epochs between the first checks; ``target_gap=`` replaces the default tolerance);
        ``stop="budget"`` runs ``epochs`` (default 1000) with the constant steps for that budget. Without a
        computable gap the run uses the budget and the result is ``unverified``.

        Options of the stochastic methods (see :func:`fairmodel.stochastic.ogda.ogda`): epochs, eta0, R0, chi,
        schedule, eta_max, estimator, directions, variance_reduction (default True with more than one component: the
        snapshot estimate of SVRG, Johnson and Zhang 2013), y_step_scale, output, first_step, boundary, ell, callback,
        max_queries, max_time, store_iterates. ``solver`` is the CVXPY solver of the exact program and of the judge.
        """
        method = _method_for_backend(method, backend)
        if order is None:
            order = 1 if self.grad_fn is not None else 0
        if method == "exact":
            check_options(options, () if self._exact else ("max_steps",), "the exact method of a saddle problem")
            return self._solve_exact(solver, verbose, **options)
        if method not in METHODS:
            raise OptionError(f"unknown method {method!r}; valid methods are {', '.join(METHODS)} "
                              f"(and 'exact', the exact backend)")
        check_options(options, OGDA_OPTIONS + ["check_every", "target_gap"], f"the stochastic method {method!r}")
        stop = check_choice(stop, "stop", STOP_RULES)
        if options.get("callback") is not None and not callable(options["callback"]):
            raise OptionError(f"callback must be a callable f(info) or None; got {type(options['callback']).__name__}")
        self.x_domain.require_bounded("x_domain")
        self.y_domain.require_bounded("y_domain")
        if order == 1 and self.grad_fn is None:
            raise OptionError("order=1 needs gradients: pass grad=lambda x, y, i: (grad_x, grad_y) to SaddleProblem")
        check_every, target = options.pop("check_every", None), options.pop("target_gap", None)
        if (check_every is not None or target is not None) and not self.has_gap():
            raise OptionError(f"check_every= and target_gap= need the duality gap: give SaddleProblem "
                              f"{self.gap_needs()}")
        if target is not None:
            check_number(target, "target_gap", low=0.0, strict=True)
        if check_every is not None:
            check_int(check_every, "check_every")
        u0 = None
        if x0 is not None or y0 is not None:
            x0 = self.x_domain.center() if x0 is None else self.x_domain.check_point(x0, "x0")
            y0 = self.y_domain.center() if y0 is None else self.y_domain.check_point(y0, "y0")
            u0 = np.concatenate([x0, y0])
        certified = stop == "checks" and self.has_gap()
        d_zo = int(np.count_nonzero(self.zo_mask))      # the coordinates of the zeroth-order estimates
        if certified and target is None:
            self.gap_scale(solver)          # the tolerance's unit, once per problem (not a cost of the checks)
        if certified:
            cap = max(CAP_FACTOR * BUDGET_DEFAULTS["epochs"], -(-MIN_CAP_STEPS // self.n))
            opts = {**CHECKS_DEFAULTS, "epochs": cap, "variance_reduction": self.n > 1, **options}
            if order == 0 and opts["variance_reduction"]:
                # two-point estimates (far less noise in the difference at u and at the snapshot) along d_zo / 3
                # directions each: an epoch's 3n estimates then cost as many queries as its snapshot's 2 d_zo n, and
                # the directions' noise is 3x that of exact gradients whatever d_zo (along one direction it was d_zo
                # times, and a 3 x 4 game of two components stalled at twice its tolerance)
                opts.setdefault("estimator", "two-point")
                opts.setdefault("directions", max(1, math.ceil(d_zo / 3)))
        else:
            opts = {**BUDGET_DEFAULTS, **options}
        start = time.perf_counter()
        auto = {}
        if "auto" in (str(opts["eta0"]), str(opts["R0"])):
            probe_rng = (np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
                         if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else as_generator(seed))
            anytime = opts["schedule"] == "anytime"
            try:
                auto = auto_steps(self.oracle(), order, opts.get("estimator", "one-point"), method=method,
                                  epochs=None if anytime else opts["epochs"], rng=probe_rng,
                                  diameter=np.hypot(self.x_domain.diameter, self.y_domain.diameter),
                                  smoothness=anytime and (self.grad_fn is not None or opts["variance_reduction"]))
            except NonFiniteValue as exc:     # the probe of the automatic steps met it: failed, as in the run
                u = np.concatenate([self.x_domain.center(), self.y_domain.center()]) if u0 is None else u0
                solution = Solution(variables={"x": u[:self.d_x], "y": u[self.d_x:]}, status="failed",
                                    message=f"stopped before the first epoch, while probing the automatic steps "
                                            f"(eta0, R0): {exc}")
                return self._judged(solution, "stochastic", method, start, time.perf_counter(), seed,
                                    _GapJudge(self, solver, target), order)
            opts = {**opts, **{k: auto[k] for k in ("eta0", "R0") if str(opts[k]) == "auto"}}
            if anytime and "eta_max" not in options:
                opts["eta_max"] = auto["eta_max"]
            if anytime and opts.get("variance_reduction") and auto["eta_max"] is not None:
                # no noise floor to step down from: the constant step of the smoothness (Theorem 4.1's hypothesis); at
                # order 0 divided by sqrt(d_zo / k): the mean of estimates d_zo (F . v) v along k directions has
                # d_zo / k times the variance of F, so its mean-square Lipschitz constant is sqrt(d_zo / k) ell
                if str(options.get("eta0", "auto")) == "auto":
                    spread = d_zo / opts.get("directions", 1) if order == 0 else 1.0
                    opts["eta0"] = auto["eta_max"] / math.sqrt(max(spread, 1.0))
                if "schedule" not in options:
                    opts["schedule"] = "constant"
            else:
                if anytime and "schedule" not in options:
                    opts["schedule"] = auto["schedule"]  # constant without noise (one component, gradients)
                if anytime and "noise" not in options and auto["sigma_x"] > 0:
                    opts["noise"] = auto["sigma_x"]      # the steps shrink if the noise grows along the run
        judge = _GapJudge(self, solver, target)
        d_x, variance_reduced = self.d_x, bool(opts.get("variance_reduction"))
        # With the variance-reduced estimate and a constant step the iterates themselves converge (near a saddle point
        # the run is deterministic OGDA, whose last iterate converges linearly on matrix games: Wei, Lee, Zhang, Luo,
        # ICLR 2021), the average only as 1/T: a checkpoint whose average fails also judges the last iterate. Such a run
        # has no noise floor, but a step too large for the problem (ell_hat comes from a few components; at order 0
        # the directions add their noise) still stalls it, which halving the step cures. Its checks come early because
        # it often passes early, not because its rate shows early (the tail average jumps as its window moves): a stall
        # counts from the epoch of the plain estimate's first check on, and the fail-fast rule waits for twice that
        # (after a first halving).
        stopper = CertifiedStop(judge, lambda info: {"x": info["u"][:d_x], "y": info["u"][d_x:],
                                                     "x_last": info["u_last"][:d_x], "y_last": info["u_last"][d_x:]},
                                every=check_every or (SVRG_CHECKS_EVERY if variance_reduced else CHECKS_EVERY),
                                enabled=certified, cap=opts["epochs"], verbose=verbose,
                                second_opinion=(lambda v: {**v, "x": v["x_last"], "y": v["y_last"]})
                                if variance_reduced else None,
                                earliest=min(1.0, 2 * CHECKS_EVERY / opts["epochs"]) if variance_reduced else 0.0)
        out = ogda(self.oracle(), method=method, order=order, seed=seed, verbose=verbose, u0=u0,
                   stop=RestartOnStall(stopper, after=CHECKS_EVERY if variance_reduced else 0) if certified else None,
                   **opts)
        solved = time.perf_counter()
        u, u_last = out["u"], out["u_last"]
        metrics = {"queries": out["queries"], "gradients": out["gradients"], "epochs_run": out["epochs_run"],
                   **{k: v for k, v in out["steps"].items() if v is not None},
                   **({"G_estimate": auto["G"]} if auto else {}),
                   **{k: auto[k] for k in ("sigma", "ell") if auto.get(k) is not None},
                   **({"eta_max": opts["eta_max"]} if opts.get("eta_max") is not None else {}),
                   **({"step_probe_queries": auto["probe_queries"], "step_probe_gradients": auto["probe_gradients"]}
                      if auto else {})}
        variables = {"x": u[:d_x], "y": u[d_x:], "x_last": u_last[:d_x], "y_last": u_last[d_x:]}
        if stopper.passed:          # the candidate that passed: the average, or the last iterate (second opinion)
            variables = dict(stopper.last[0])
        solution = Solution(variables=variables,
                            status=out["status"], message=out["message"], history=out["history"], metrics=metrics,
                            solver={"name": method, "order": order,
                                    "options": {k: v for k, v in opts.items() if isinstance(v, (int, float, str))}})
        stopper.finish(solution, cap=f"epochs={opts['epochs']}")
        return self._judged(solution, "stochastic", method, start, solved, seed, judge, order)

    def _judged(self, solution: Solution, backend: str, method: str, start: float, solved: float, seed, judge,
                order: int = 0) -> Result:
        """The judge's evaluation, checks and verdict of a solution (a failed run is reported as such)."""
        evaluation, checks = solution.evaluation, []
        if solution.status == "failed":
            evaluation = Evaluation(objective=float("nan"))
        else:
            if evaluation is None:
                evaluation = judge.evaluate(solution.variables)
            checks = judge.acceptance(evaluation, backend)
        failing = [c for c in checks if c.computed and not c.passed]
        advice = (self.advice(backend, order, failing, "certificate_rate" in solution.metrics)
                  if failing or not checks else "")
        solution.status, solution.message = verdict(solution.status, checks, solution.message, advice)
        timings = {"solve": solved - start, "judge": time.perf_counter() - solved,
                   "total": time.perf_counter() - start, **solution.timings}
        return Result.from_parts(backend=backend, method=method, family="minmax", seed=seed, solution=solution,
                                 evaluation=evaluation, timings=timings, problem_text=str(self),
                                 checks=[c.to_dict() for c in checks], name=self.label)

    def crosscheck_checks(self, exact: Result, stochastic: Result, **common) -> tuple[list, str]:
        """The checks of ``fm.crosscheck`` on the two judged results, and the family name: the stochastic duality gap
        at the tolerance that decides its ``ok`` bounds its primal suboptimality, so the primal values agree within
        it."""
        tolerance = own_tolerance(stochastic, "duality gap", np.nan)
        exact_tolerance = own_tolerance(exact, "duality gap", 1e-6 * max(1.0, abs(exact.objective)))
        gap = stochastic.objective - exact.objective
        return [Check("primal value: stochastic - exact", gap, tolerance,
                      "the stochastic duality gap (at most this tolerance for an ok result) bounds the primal "
                      "suboptimality max_y L(x, .) - OPT"),
                Check("exact optimum is a lower bound (exact - stochastic)", -gap, exact_tolerance,
                      "no x has a primal value below the saddle value by more than the exact result's duality-gap "
                      "tolerance"),
                Check("duality gap of the stochastic result", stochastic.certificate.get("duality_gap", np.inf),
                      tolerance, GAP_REASON),
                Check("duality gap of the exact result", exact.certificate.get("duality_gap", np.inf),
                      exact_tolerance, EXACT_GAP_REASON)], "minmax"

    def _solve_exact(self, solver, verbose=None, max_steps=EXACT_MAX_STEPS) -> Result:
        """The exact program of a built-in game, else the extragradient method on the full gradient (refused, with
        what is missing, where it cannot run: :meth:`exact_missing`)."""
        missing = self.exact_missing()
        if missing is not None:
            raise UnsupportedProblemError(missing)
        judge, start = _GapJudge(self, solver), time.perf_counter()
        if self._exact is not None:
            value, x, y, record = self._exact(solver)
            solution = Solution(variables={"x": x, "y": y}, status=record["status"], solver=record,
                                metrics={"solver_optimum": value})
            return self._judged(solution, "exact", "exact", start, time.perf_counter(), None, judge)
        max_steps = check_int(max_steps, "max_steps")
        self.x_domain.require_bounded("x_domain")
        self.y_domain.require_bounded("y_domain")
        oracle, d_x = self.oracle(), self.d_x

        # F(u) = (grad_x L, -grad_y L) of the mean L from the n components' gradients, or central differences of their
        # values along the axes with the step of a central difference (the cube root of eps in the domain's units:
        # truncation and rounding balanced, Nocedal and Wright 2006, Section 8.1), exact for bilinear and quadratic L
        components = Estimator(oracle, 0 if self.grad_fn is None else 1, "two-point")
        step = FD_RADIUS * 0.5 * float(np.hypot(self.x_domain.diameter, self.y_domain.diameter))

        def operator(u):
            return np.concatenate(mean_operator(components, u, step))

        stopper = CertifiedStop(judge, lambda info: {"x": info["u"][:d_x], "y": info["u"][d_x:]}, backend="exact",
                                every=EXACT_CHECK_EVERY, cap=max_steps, unit="extragradient steps", verbose=verbose,
                                earliest=EXACT_EARLIEST)
        u0 = np.concatenate([self.x_domain.center(), self.y_domain.center()])
        try:
            out = exact_minmax.extragradient(operator, oracle.project, u0, stopper, max_steps, verbose)
        except NonFiniteValue as exc:
            solution = Solution(variables={"x": u0[:d_x], "y": u0[d_x:]}, status="failed", message=str(exc))
            return self._judged(solution, "exact", "exact", start, time.perf_counter(), None, judge)
        solution = Solution(variables={"x": out["u"][:d_x], "y": out["u"][d_x:]}, status=out["status"],
                            message=out["message"], solver={"name": "extragradient", "max_steps": max_steps},
                            metrics={"steps": out["steps"], "gradients": components.gradients,
                                     "queries": components.queries,
                                     "step_size": out["step_size"]})
        solved = time.perf_counter()
        stopper.finish(solution, cap=f"max_steps={max_steps}")
        return self._judged(solution, "exact", "exact", start, solved, None, judge)

    # -- built-in test problems (not from the paper) --------------------------------------------------------
    @classmethod
    def matrix_game(cls, A) -> "SaddleProblem":
        """G2: L_i(x, y) = x^T A_i y with x, y on probability simplices; ``A`` of shape (n, m, k) or (m, k).

        Closed forms: max_y L(x, .) = max_j (A^T x)_j and min_x L(., y) = min_i (A y)_i with A the mean
        A_i; the exact saddle point is an LP. SGDA's last iterate cycles here; OGDA is built for it.
        """
        A = np.asarray(A, dtype=float)
        A = A[None] if A.ndim == 2 else A
        if A.ndim != 3 or not np.all(np.isfinite(A)):
            raise ModelError("A must be a finite array of shape (n, m, k) or (m, k)")
        Abar = A.mean(axis=0)
        sp = cls(lambda x, y, i: float(x @ A[i] @ y), A.shape[0], Simplex(A.shape[1]), Simplex(A.shape[2]),
                 grad=lambda x, y, i: (A[i] @ y, A[i].T @ x),
                 max_y=lambda x: float(np.max(Abar.T @ x)), min_x=lambda y: float(np.min(Abar @ y)),
                 name="matrix game")
        sp._mean_value = lambda x, y: x @ Abar @ y
        sp._exact = lambda solver: exact_minmax.matrix_game_lp(Abar, solver)
        sp._formula = (f"L_i(x, y) = x^T A_i y, i = 1..{A.shape[0]}, A_i in R^({A.shape[1]} x {A.shape[2]}): a matrix "
                       f"game (G2)", f"$L_i(x, y) = x^\\top A_i y$, $i = 1, \\dots, {A.shape[0]}$, $A_i \\in "
                       f"\\mathbb{{R}}^{{{A.shape[1]} \\times {A.shape[2]}}}$: a matrix game (G2)")
        return sp

    @classmethod
    def quadratic(cls, A, b, B, e, mu: float, rho: float) -> "SaddleProblem":
        """G1: L_i(x, y) = ||A_i x - b_i||^2 / 2 + y^T (B_i x - e_i) - mu ||y||^2 / 2 on ||x|| <= rho, y in [-1, 1]^m.

        Shapes: A (n, q, d), b (n, q), B (n, m, d), e (n, m); mu > 0. Smooth, strongly concave in y.
        Closed forms: max over y through h_mu (the Huber function); min over x a ball-constrained QP
        (exact secular-equation solve). Exact saddle point: the Huber program.
        """
        A, b, B, e = (np.asarray(v, dtype=float) for v in (A, b, B, e))
        if A.ndim != 3 or b.shape != A.shape[:2] or B.ndim != 3 or B.shape[0] != A.shape[0] \
                or B.shape[2] != A.shape[2] or e.shape != B.shape[:2]:
            raise ModelError("shapes must be A (n, q, d), b (n, q), B (n, m, d), e (n, m)")
        mu, rho = float(mu), float(rho)
        if not mu > 0:
            raise ModelError(f"mu must be positive (strong concavity in y); got {mu}")
        n, d, m = A.shape[0], A.shape[2], B.shape[1]
        H = np.einsum("iqd,iqe->de", A, A) / n
        Atb = np.einsum("iqd,iq->d", A, b) / n
        c0 = float(np.sum(b * b)) / (2 * n)
        Bm, em = B.mean(axis=0), e.mean(axis=0)

        def fit(x):
            return 0.5 * x @ H @ x - Atb @ x + c0

        def huber(s):
            a = np.abs(s)
            return np.where(a <= mu, s * s / (2 * mu), a - mu / 2)

        def min_x(y):
            xs = ball_qp_step(H, Atb - Bm.T @ y, rho)
            return float(fit(xs) + y @ (Bm @ xs - em) - mu / 2 * y @ y)

        sp = cls(lambda x, y, i: float(0.5 * np.sum((A[i] @ x - b[i]) ** 2) + y @ (B[i] @ x - e[i]) - mu / 2 * y @ y),
                 n, Ball(d, rho), Box(-1.0, 1.0, size=m),
                 grad=lambda x, y, i: (A[i].T @ (A[i] @ x - b[i]) + B[i].T @ y, B[i] @ x - e[i] - mu * y),
                 max_y=lambda x: float(fit(x) + np.sum(huber(Bm @ x - em))), min_x=min_x, name="quadratic game")
        sp._mean_value = lambda x, y: fit(x) + y @ (Bm @ x - em) - mu / 2 * y @ y
        sp._exact = lambda solver: exact_minmax.quadratic_game_program(A, b, B, e, mu, rho, solver)
        sp._formula = (f"L_i(x, y) = ||A_i x - b_i||^2 / 2 + y^T (B_i x - e_i) - mu ||y||^2 / 2, mu = {mu:g}, "
                       f"i = 1..{n}: the quadratic game (G1)",
                       f"$L_i(x, y) = \\|A_i x - b_i\\|^2 / 2 + y^\\top (B_i x - e_i) - \\mu \\|y\\|^2 / 2$, "
                       f"$\\mu = {mu:g}$, $i = 1, \\dots, {n}$: the quadratic game (G1)")
        return sp
