"""AUC maximization under AUC-based fairness constraints (paper: Yao, Lin, Yang, "Stochastic Methods for AUC
Optimization subject to AUC-based Fairness Constraints", AISTATS 2023).

Declaration recognized::

    s = data.score(w)                       # w = fm.Weights(d, radius=R), or a network fm.SigmoidMLP(d, ...)
    fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)),
               [fm.auc_gap(s, data, kind="intra") <= kappa, ...])      # zero or more constraints

Backends: exact (linear score only) = the moment-form QCQP (default), the pairwise form or the lifted form
(:mod:`fairmodel.exact.auc`); stochastic = SFLS (Algorithm 1) with the Bregman SMD oracle (Algorithm 2,
:mod:`fairmodel.stochastic.bregman_smd`), or IQRC (Algorithm 3) for the weakly convex network case. The judge
evaluates the surrogate objective and constraints exactly (closed forms in the group means and variances of the
scores, which follow from Lemma 1), the true AUC and the true fairness gaps (2), and, for a linear score, the
level-set bracket [f*_lower, f0(w)] on the optimum.

Data in memory or in chunks (Dask): a linear score's pair risks are quadratics in the per-set moments of the design
rows, computed once by one pass (:meth:`fairmodel.oracles.pairs.LinearMoments.of`); the moment and lifted forms, the
judge's closed forms and its bracket use only them. The judge's true AUCs take the scores of one pass (8 bytes a row
in the client, each set sorted there); SFLS and IQRC take minibatches gathered by the data's sampler. Only the
pairwise form (a row per pair of rows) needs the rows in memory.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from ..data.dask_dataset import concatenate_rows
from ..data.passes import row_parts, row_sums
from ..errors import (DataError, InfeasibleError, ModelError, OptionError, ResourceLimitError, SolverError,
                      UnsupportedProblemError)
from ..exact import budget
from ..exact.auc import AUCPrograms
from ..expressions import LinearScore
from ..expressions.atoms.auc import AUCGap, AUCLoss
from ..expressions.models import MLPScore, SigmoidMLP, score_model
from ..metrics.auc import auc_between, sets_terms
from ..oracles.losses import with_intercept
from ..oracles.metric import Coordinates, step_coordinates
from ..oracles.pairs import PairRisks
from ..stochastic.bregman_smd import AUCSaddle
from ..utilities.validate import check_options
from .auc_runs import solve_sfls
from .base import Check, Evaluation, Reduction, Solution, bound_order, cap_tip, constraint_record
from .registry import register

EXACT = {"moment": "moment-form QCQP: group means and covariance factors, O(p^2) size",
         "pairwise": "the literal pairwise surrogate (6) over all |S||S'| pairs, O(n^2) size",
         "lifted": "the reformulation (10) with variables a_i, b_i in I and the closed-form max over alpha"}
FALLBACK = ("lifted", "pairwise")    # the default (moment) form's fallbacks, in order (pairwise: within memory)
SFLS_DOC = "stochastic feasible level-set method (Algorithm 1) with the Bregman SMD oracle (Algorithm 2)"
IQRC_DOC = "IQRC (Algorithm 3): SFLS + SMD on proximally regularized subproblems (weakly convex models)"
BRACKET_ROUNDING = 1e-9    # constraint violation accepted for the upper end of the level-set bracket
RELATIVE, FLOOR = 1e-2, 1e-2   # accuracy of a stochastic result: 1 % of f0, at least 1 % of f0 of a constant score
ACCURACY_REASON = ("the bracket width f0(w) - (a weak-duality lower bound on f*) bounds the suboptimality of w; the "
                   "tolerance is 1 % of the surrogate objective (at least 1e-4 of f0 of a constant score, c1 c2^2), "
                   "finer than the statistical error of an empirical pair risk on fewer than 10,000 rows per set "
                   "(1/sqrt(n) > 1e-2)")


def _parse(problem):
    """(loss atom, [gap atoms]) or a reason string, on the canonical problem."""
    canonical = problem.canonical
    obj = canonical.objective
    if not isinstance(obj, AUCLoss):
        return "the objective must be fm.auc_loss(score, y)"
    gaps = []
    for c in canonical.constraints:
        if not isinstance(c.lhs, AUCGap) or c.rhs.curvature != "constant" or c.rhs.kind != "scalar":
            return f"constraint {c.name} ({c}) must be fm.auc_gap(score, data, kind=...) <= kappa"
        gaps.append(c.lhs)
    for atom in [obj] + gaps:
        other = atom.score
        if getattr(other, "w", None) is not getattr(obj.score, "w", None) or \
                getattr(other, "data", None) is not getattr(obj.score, "data", None):
            return "the AUC loss and every fairness gap must use the same score data.score(w)"
    w0 = obj.sample_weight
    if any((g.sample_weight is None) != (w0 is None) or (w0 is not None and not np.array_equal(g.sample_weight, w0))
           for g in gaps):
        return "the AUC loss and every fairness gap must have the same sample_weight"
    if not isinstance(obj.score, (LinearScore, MLPScore)):
        return f"the score {obj.score} must be data.score(w) (linear) or data.score(net) (fm.SigmoidMLP)"
    if isinstance(obj.score, LinearScore) and obj.score.w.shape[0] > budget.DENSE_PARAMETERS:
        return (f"the linear score has {obj.score.w.shape[0]:,} parameters, more than {budget.DENSE_PARAMETERS:,}: "
                f"the moment form, the judge's closed forms and its bracket need a D x D covariance per set; the "
                f"generic lowering solves it from minibatches (means of the squared score per set)")
    if isinstance(obj.score, LinearScore) and getattr(obj.score.data, "is_sparse", False):
        return ("the design is sparse (CSR): the SFLS steps take dense rows; the generic lowering reads CSR rows "
                "(the same pair risks as quadratics of the per-set moments)")
    if canonical.options:
        return f"no family options are accepted; got {sorted(canonical.options)}"
    return obj, gaps


@register
class AUCFairness(Reduction):
    name = "auc_fairness"
    title = "AUC maximization under AUC-based fairness constraints"
    display_name = "AUC fairness"
    paper = "Yao, Lin, Yang: stochastic methods for AUC optimization subject to AUC-based fairness constraints"
    supported = ("fm.Minimize(fm.auc_loss(s, y)) with constraints fm.auc_gap(s, data, kind=...) <= kappa, "
                 "for s = data.score(w) (linear) or data.score(fm.SigmoidMLP(...))")

    priority = 10

    def __init__(self, problem, structure):
        super().__init__(problem)
        loss, gaps = structure
        self.loss, self.gaps = loss, gaps
        self.check_kappas()
        self.score = loss.score
        self.w = self.score.w
        self.model = score_model(self.score)
        self.linear = self.model.convex
        self.data = self.score.data
        self.pairs = PairRisks.concat([loss.pairs] + [g.pairs for g in gaps])
        # a linear score's pair risks are quadratics in the per-set moments of the design rows: one pass over the
        # rows (in memory or in chunks) here serves the exact forms, the judge's closed forms and its certificate
        self.moments = self.pairs.linear_moments(self.data, self.w.intercept) if self.linear else None
        self.required_half_width = self._required_half_width()
        self.half_width, self.interval_note = self._interval()
        self.exact_methods = dict(EXACT)
        self.stochastic_methods = ({"sfls": SFLS_DOC, "iqrc": IQRC_DOC} if self.linear else
                                   {"iqrc": IQRC_DOC, "sfls": SFLS_DOC + " (no guarantee: the network is not convex)"})
        self._programs = None

    @classmethod
    def accepts(cls, problem):
        return _parse(problem)

    # -- the budgets kappa (constants or fm.parameter, read at every solve so that sweeps see new values) ----
    @property
    def kappas(self) -> list[float]:
        return [c.bound() for c in self.problem.canonical.constraints]

    @property
    def bounds(self) -> np.ndarray:
        """1 + kappa of every constraint block (block 0, the objective, is nan)."""
        return np.array([np.nan] + [1 + k for k in self.kappas for _ in (0, 1)])

    def check_kappas(self) -> None:
        """kappa >= 0 and strict feasibility 2 c1 c2^2 < 1 + kappa (Assumption 3, Lemma 2) for every constraint."""
        for gap, kappa, c in zip(self.gaps, self.kappas, self.problem.canonical.constraints):
            s = gap.surrogate
            if not kappa >= 0:
                raise ModelError(f"constraint {c.name}: the fairness budget kappa must be >= 0; got {kappa:g}")
            if 2 * s.c1 * s.c2 ** 2 >= 1 + kappa:
                raise InfeasibleError(
                    f"constraint {c.name}: the surrogate problem has no strictly feasible point because "
                    f"2 c1 c2^2 = {2 * s.c1 * s.c2 ** 2:g} >= 1 + kappa = {1 + kappa:g} (f1 + f2 >= "
                    f"4 c1 c2^2 for every model, and a constant score gives f1 = f2 = 2 c1 c2^2). Use c1 < "
                    f"{(1 + kappa) / (2 * s.c2 ** 2):g} for c2 = {s.c2:g} (e.g. c1 = 0.5, c2 = 1 needs kappa > 0), "
                    f"or kappa > {2 * s.c1 * s.c2 ** 2 - 1:g}")

    def warm_start(self, result) -> dict:
        """Start the stochastic method from a previous result's model (used by ``prob.sweep``)."""
        return {"x0": np.asarray(result.variables[self.w.name], dtype=float)}

    # -- the interval I (eq. (9)) --------------------------------------------------------------------------
    def _required_half_width(self, shift=None):
        """The smallest I valid for every w in W (eq. (9)), or None when it cannot be bounded; ``shift``: for the
        design with the row ``shift`` subtracted from every row (scores shifted by -shift.w)."""
        pr = self.pairs
        ratio = np.max(pr.c1 / pr.q)
        if not self.linear:
            return max(1.0, ratio) if self.w.output == "sigmoid" else None
        if self.w.radius is None:
            return None
        means = self.moments.means
        if shift is not None:
            means = means - shift
        mu_s, mu_t = means[pr.first], means[pr.second]
        need = np.maximum.reduce([np.linalg.norm(mu_s, axis=1), np.linalg.norm(mu_t, axis=1),
                                  pr.c1 / pr.q * np.linalg.norm(mu_s - mu_t, axis=1)])
        return float(self.w.radius * need.max())

    def _interval(self):
        """(I, how it was chosen): the largest interval given to an atom, else the automatic one."""
        given = [a.surrogate.half_width for a in [self.loss] + self.gaps if a.surrogate.half_width is not None]
        need = self.required_half_width
        if not given:
            if need is None:
                return None, "none"
            return need, ("automatic: R max(||mu_S||, ||mu_S'||, (c1/q) ||mu_S - mu_S'||)" if self.linear else
                          "automatic: [-1, 1] for a sigmoid output (times c1/q if larger)")
        I = max(given)
        if need is not None and I < need * (1 - 1e-12):
            warnings.warn(f"the interval I = {I:g} is smaller than the one valid for every model in W ({need:g}); "
                          f"Lemma 1's identity may fail where group means or gaps leave I (eq. (9))",
                          UserWarning, stacklevel=4)
        return I, "given"

    @property
    def interval_valid(self) -> bool:
        need = self.required_half_width
        return need is not None and self.half_width is not None and self.half_width >= need * (1 - 1e-12)

    @property
    def certified(self) -> bool:
        """True when the judge computes the level-set bracket (a linear score on a ball with a valid I)."""
        return self.linear and self.w.radius is not None and self.interval_valid

    @property
    def constant_objective(self) -> float:
        """f0 of a constant score (every Delta and variance 0): the sum of c1 c2^2 over the objective's pairs; the
        start level r(0) of SFLS and the loss's natural unit."""
        pr = self.pairs
        return float(np.sum((pr.c1 * pr.c2 ** 2)[pr.block == 0]))

    def accuracy_value(self, objective: float) -> float:
        """The accuracy asked of a stochastic result whose surrogate objective is ``objective``: RELATIVE times
        max(|objective|, FLOOR x f0 of a constant score)."""
        return RELATIVE * max(abs(objective), FLOOR * self.constant_objective)

    # -- describe ------------------------------------------------------------------------------------------
    def describe_extra(self) -> list[str]:
        lines = ["", f"Score: {self.score} ({self.w.describe_domain()})",
                 f"Pairs (reformulation (10)-(17)): {self.pairs.n_pairs} pairwise risks in {self.pairs.n_blocks} "
                 f"blocks; interval I = [-{self.half_width:g}, {self.half_width:g}] ({self.interval_note})"
                 if self.half_width else "interval I: not available (give the weights a radius or interval=)"]
        for gap, kappa in zip(self.gaps, self.kappas):
            sizes = ", ".join(f"{k} {v}" for k, v in gap.sets.sizes.items())
            lines.append(f"Constraint {gap.preset} (protected group {gap.sets.protected!r}), kappa = {kappa:g}: "
                         f"L(G1', G1) + L(G2, G2') <= 1 + kappa and L(G2', G2) + L(G1, G1') <= 1 + kappa; "
                         f"sizes {sizes}")
        lines += ["Square surrogate ell(t) = c1 (t - c2)^2; alpha^2 coefficient q = c1 (exact) unless "
                  "alpha_quad_coef='paper_literal' (Lemma 1 prints q = 1, exact only for c1 = 1).",
                  "Judge: surrogate f0, f1, f2 in closed form (group means and variances), true AUC and true fairness "
                  "gap (2) with ties 1/2; level-set bracket [f*_lower, f0(w)] by weak duality (linear score)."]
        return lines

    def to_cvxpy(self):
        return self.programs().program("moment")[0]

    # -- exact backend --------------------------------------------------------------------------------------
    def programs(self) -> AUCPrograms:
        if not self.linear:
            raise UnsupportedProblemError(
                f"the score {self.score} of a neural network is not convex in its weights (the weakly convex case, "
                f"Assumption 4), so there is no exact convex program; use backend='stochastic', method='iqrc'")
        if self._programs is None:
            self._programs = AUCPrograms(self.moments, self.pairs, self.bounds, self.w.radius, self.half_width,
                                         self.w.name, design=self._design)
        self._programs.bounds = self.bounds      # kappa may be a parameter changed since the last call
        return self._programs

    def _design(self) -> np.ndarray:
        """The in-memory design matrix, for the pairwise form (a row per pair of rows); chunked data refuse it."""
        if self.data.is_chunked:
            raise DataError(f"the pairwise form of the surrogate (6) has a row per pair of rows and needs the "
                            f"features in memory, but this Dataset is backed by Dask ({self.data.n_samples} rows in "
                            f"{self.data.n_chunks} chunks). Use method='moment' (the default: the same optimum from "
                            f"the per-set means and covariances of the rows, computed by one pass over the chunks; "
                            f"its size does not depend on n) or method='lifted', or solve an in-memory sample "
                            f"data.subsample(n, seed=0)")
        return self.model.X

    def solve_exact(self, method, solver, verbose, **options):
        """Solve the ``method`` form. The default form (moment) falls back to the other forms that apply (lifted,
        then pairwise within its memory limit, on in-memory data) when its solve fails or ends inaccurate without
        the judge's bracket confirming it; the result's message says so."""
        check_options(options, ("max_memory_gb",), f"the exact {method!r} form")
        self.check_kappas()
        if method == "pairwise":
            self._design()                    # chunked data: refused before anything is built
        fallback = [f for f in FALLBACK if f != "pairwise" or not self.data.is_chunked]
        forms = [method] + (fallback if method == next(iter(EXACT)) else [])
        failures = []
        for form in forms:
            try:
                solution = self._solve_form(form, solver, verbose, options)
            except (SolverError, ResourceLimitError) as exc:
                if len(forms) == 1:
                    raise
                failures.append(f"the {form} form failed ({exc})")
                if form == forms[-1]:
                    raise SolverError("every exact form failed: " + "; ".join(failures),
                                      status=getattr(exc, "status", None)) from None
                continue
            if solution.status != "optimal" and self.certified:
                solution.evaluation = self.evaluate(dict(solution.variables))
                checks = self.certificate_checks(solution.evaluation, "exact")
                if form != forms[-1] and not all(c.passed for c in checks):
                    failures.append(f"the {form} form ended {solution.status} and the bracket does not confirm it "
                                    f"(width {checks[0].value:.3g})")
                    continue
            if failures:
                solution.message = "; ".join(failures) + f"; solved by the {form} form instead"
                solution.solver["form_fallback_from"] = failures
            return solution

    def _solve_form(self, method, solver, verbose, options) -> Solution:
        if method == "lifted" and self.half_width is None:
            raise SolverError("the lifted form needs the interval I (a radius or interval=)", status="not_applicable")
        programs = self.programs()
        start = time.perf_counter()
        out = programs.solve(method, solver, verbose, **options)
        record = out["record"]
        theta = self.w.project(out["theta"])
        variables = {self.w.name: theta}
        lam = out["duals"]
        if lam.size:
            variables["lambda"] = lam
        if method == "lifted":
            variables["a"], variables["b"] = out["a"], out["b"]
        timings = {"compile": record.pop("compile"), "solver": record.pop("solve")}
        timings["build"] = max(0.0, time.perf_counter() - start - timings["compile"] - timings["solver"])
        record["form"] = method
        self._warn_outside_interval(theta)
        return Solution(variables=variables, status=record["status"], solver=record, timings=timings,
                        certificate={"solver_optimum": record["value"]})

    def _warn_outside_interval(self, theta) -> None:
        if self.half_width is None:
            return
        t = self.pairs.closed_forms(*self.moments.score_moments(theta))
        worst = max(np.max(np.abs(t["m"])), np.max(np.abs(t["m_prime"])), np.max(np.abs(t["alpha"])))
        if worst > self.half_width:
            warnings.warn(f"at the solution a group mean or gap ({worst:.4g}) leaves I = [-{self.half_width:g}, "
                          f"{self.half_width:g}]; the exact forms then differ from the reformulation (10) (eq. (9))",
                          UserWarning, stacklevel=3)

    # -- stochastic backend ---------------------------------------------------------------------------------
    def saddle(self) -> AUCSaddle:
        """The saddle function of Bregman SMD; on chunked data without rows in memory (``X`` None): its minibatches
        are gathered by the run, their design rows made by ``saddle.batch_design``."""
        if self.half_width is None:
            raise OptionError("the stochastic methods need a bounded interval I: give the weights a radius "
                              "(fm.Weights(d, radius=R)) or set interval= in fm.auc_loss / fm.auc_gap")
        if not self._centered:
            saddle = AUCSaddle(self.model, self.pairs, self.bounds, self.half_width, *self._design_rows(None))
            saddle.batch_design = _CenteredDesign(self.model, None)
            return saddle
        # Every pair risk depends on differences of scores (within and between sets) only, so shifting all scores
        # by the constant -mean(x).w changes none of them (with an unclipped, valid I): SMD runs on the centered
        # design, an exact reformulation whose interval I (hence Bregman constant C) is smaller and whose steps are
        # better scaled (measured on the unscaled Communities features: I = 43.8 uncentered). The mean is weighted
        # by the sample weights, so weighted rows and repeated rows give the same saddle function.
        mean = self.moments.mean_all
        saddle = AUCSaddle(self.model, self.pairs, self.bounds, self._required_half_width(mean),
                           *self._design_rows(mean))
        saddle.score_shift = mean
        saddle.batch_design = _CenteredDesign(self.model, mean)
        return saddle

    @property
    def _centered(self) -> bool:
        """Whether the stochastic method runs on the centered design (a linear score with the automatic interval)."""
        return self.linear and self.interval_note.startswith("automatic")

    def coordinates(self) -> Coordinates | None:
        """The preconditioned coordinates of a linear score's weights for SMD (:mod:`fairmodel.oracles.metric`; None
        for a network, or when P is well conditioned: :func:`~fairmodel.oracles.metric.step_coordinates`): P is the
        second moment of the design rows SMD runs on (the covariance of all rows when they are centered), from the
        moments of the one pass already made, plus a relative ridge. The Hessian of a pair
        risk in w is 2 c1 (Sigma_S + Sigma_S' + delta delta') (its closed form from eq. (8)), a sum of second
        moments of the design, so features of very different scales (1e-3 to 1e3: a curvature ratio of 1e12) and
        nearly collinear ones no longer make the Euclidean steps allowed by the largest direction crawl along the
        smallest; the ball, U(r) and the output stay in the user's parametrization."""
        if not self.linear or self.w.radius is None:
            return None
        S = self.moments.cov_all if self._centered else \
            self.moments.cov_all + np.outer(self.moments.mean_all, self.moments.mean_all)
        return step_coordinates(S, self.w.radius)

    def _design_rows(self, center) -> tuple:
        """(the design rows minus ``center`` in memory, None) or, on chunked data, (None, their mean square norm by
        one pass): the rows and the step scale of the saddle function."""
        if not self.data.is_chunked:
            X = self.model.X
            return (X if center is None else X - center), None
        total = row_sums(self.data, _SquaredNorms(_CenteredDesign(self.model, center)))
        return None, total / self.data.n_samples

    def scores(self, theta) -> np.ndarray:
        """The scores h of every row, by one pass over the rows (in memory or in chunks; 8 bytes a row)."""
        return concatenate_rows(row_parts(self.data, self.model.batch_scores(theta)))

    def block_values(self, theta, h=None) -> np.ndarray:
        """f_k(theta) on the full data, in closed form (with the family's interval) from the per-set means and
        variances of the scores: for a linear score those of the design moments (mu_S . theta, theta' Sigma_S
        theta; no pass), for a network those of the scores ``h`` (one pass when not given)."""
        if self.linear:
            m, v = self.moments.score_moments(theta)
        else:
            m, v = self.pairs.moments(self.scores(theta) if h is None else h)
        return self.pairs.block_values(self.pairs.closed_forms(m, v, self.half_width)["T"])

    def solve_stochastic(self, method, seed, verbose, stop="checks", **options):
        return solve_sfls(self, method, seed, verbose, options, stop=stop)

    # -- judge ---------------------------------------------------------------------------------------------
    def evaluate(self, variables: dict, **context) -> Evaluation:
        name = self.w.name
        optional = {"a", "b", "alpha", "y_tilde", "lambda"}
        if name not in variables or set(variables) - optional - {name}:
            raise OptionError(f"an AUC-fairness candidate has the variable {name!r} (required) and optionally "
                              f"{sorted(optional)}; got {sorted(variables)}")
        theta = self.w.check_value(variables[name], "candidate")
        h = self.scores(theta)       # for the true AUCs (ranks) and a network's closed forms: one pass
        f = self.block_values(theta, h)
        constraints, metrics = {}, {"surrogate_blocks": f, "score_model": self._model_spec()}
        for j, (gap, kappa, c) in enumerate(zip(self.gaps, self.kappas, self.problem.canonical.constraints)):
            f1, f2 = f[2 * j + 1], f[2 * j + 2]
            constraints[c.name] = constraint_record(max(f1, f2) - 1.0, kappa)
            terms = sets_terms(h, gap.sets, sample_weight=self.pairs.weights)
            metrics[f"{c.name}:{gap.preset}"] = {"true_gap": terms["gap"], "auc_1": terms["auc_1"],
                                               "auc_2": terms["auc_2"], "surrogate_gap": max(f1, f2) - 1.0,
                                               "f1": f1, "f2": f2, "protected": gap.sets.protected}
        metrics["auc"] = auc_between(h, self.loss.y > 0, self.loss.y < 0, sample_weight=self.pairs.weights)
        evaluation = Evaluation(objective=float(f[0]), constraints=constraints, metrics=metrics)
        if self.linear and self.w.radius is not None and self.interval_valid:
            evaluation.certificate = self._bracket(float(f[0]), evaluation.max_violation, variables.get("lambda"))
        return evaluation

    def _bracket(self, f0: float, violation: float, lam) -> dict:
        """Level-set bracket: f* lies in [lower, f0(w)] (H(r) > 0 below lower by weak duality; H(f0(w)) <= 0).

        f0(w) bounds f* from above when w is feasible; a violation up to BRACKET_ROUNDING (a conic solver's
        rounding) is accepted: it bounds the optimum of the constraints relaxed by that much, which differs from
        f* by at most (multiplier x violation), orders of magnitude below the bracket's tolerances. For any w
        (feasible or not) ``suboptimality_bound`` = f0(w) - lower bounds f0(w) - f* (the constraint checks bound
        the violation separately)."""
        bound = self.programs().dual_bound(lam)
        upper = f0 if violation <= BRACKET_ROUNDING else float("nan")
        return {"f_star_lower": bound["lower_bound"], "f_star_upper": upper,
                "suboptimality_bound": f0 - bound["lower_bound"]}

    def certificate_checks(self, evaluation, backend) -> list[Check]:
        cert = evaluation.certificate
        width = cert.get("suboptimality_bound")
        if width is None:
            return []
        # the bracket's ends in order (f* in [lower, f0(w)]), where f0(w) is an upper end: w feasible
        consistent = [bound_order("f* lower bound", cert["f_star_lower"], "f0(w)", cert["f_star_upper"])] \
            if cert["f_star_upper"] == cert["f_star_upper"] else []
        if backend == "exact":
            return [Check("level-set bracket width", width, 1e-5 * max(1.0, abs(evaluation.objective)),
                          "the weak-duality lower bound meets the exact optimum up to the solver's tolerance",
                          "certificate"), *consistent]
        return [Check("level-set bracket width", width, self.accuracy_value(evaluation.objective), ACCURACY_REASON,
                      "certificate"), *consistent]

    def advice(self, backend, solution, failing) -> str:
        if backend == "exact":
            return super().advice(backend, solution, failing)
        if not self.certified:
            return ("What to try: more IQRC stages (S=) or SMD steps (T=); smaller steps (eta=, tau_scale=) if the "
                    "constraint is violated.")
        eig = np.linalg.eigvalsh(self.moments.cov_all)
        positive = eig[eig > 1e-12 * max(eig.max(), 1e-300)]
        condition = float(positive.max() / positive.min()) if positive.size else 1.0
        scaling = (f" The features' covariance has condition number {condition:.2g}: SMD, a first-order method, "
                   f"moves slowly along its flat directions; standardized or decorrelated features (e.g. PCA) or the "
                   f"exact backend help most." if condition > 1e4 else "")
        return ("What to try: " + cap_tip(solution, "a larger cap (max_steps=, max_outer=) lets SFLS double its SMD "
                                                    "steps per oracle call until the bracket passes")
                + "; if the run halted at its first levels or the constraint is "
                "violated, smaller steps (eta=, tau_scale=); a smaller radius of the weights shrinks the interval I "
                "and the Bregman constant C, which slow SMD; the exact backend (backend='exact') solves this "
                "linear score directly." + scaling)

    def crosscheck_checks(self, exact, stochastic, **context) -> list[Check]:
        gap = stochastic.objective - exact.objective
        exact_tol = 1e-5 * max(1.0, abs(exact.objective))
        lam = np.asarray(exact.variables.get("lambda", np.zeros(0)), dtype=float)
        violations = np.array([stochastic.constraints[c.name]["violation"] for c in self.problem.canonical.constraints])
        slack = float(lam @ violations) if lam.size == violations.size else 0.0
        checks = [
            Check("surrogate objective gap (stochastic vs exact)", abs(gap),
                  self.accuracy_value(stochastic.objective) + exact_tol,
                  "an ok stochastic result's bracket bounds its suboptimality by its tolerance (" + ACCURACY_REASON
                  + "), plus the exact bracket's tolerance"),
            Check("exact optimum is a lower bound (exact - stochastic)", -gap, 1e-6 * max(1.0, abs(exact.objective))
                  + slack, "no point beats the exact optimum beyond the solver's tolerance, except by the exact "
                  "multipliers times the stochastic violation (sensitivity of a convex program)"),
        ]
        for res, backend in ((stochastic, "stochastic"), (exact, "exact")):
            worst = max(((rec["violation"], rec["bound"]) for rec in res.constraints.values()), default=(0.0, 0.0))
            tolerance, reason = self.violation_tolerance(worst[1], backend)
            checks.append(Check(f"{backend} constraint violation", worst[0], tolerance,
                                f"the judge's tolerance for an ok {backend} result: {reason}"))
        width = exact.certificate.get("suboptimality_bound")
        if width is not None:
            checks.append(Check("level-set bracket width at the exact optimum", width, 1e-5,
                                "the judge's weak-duality lower bound certifies the exact optimum independently of "
                                "the conic solver"))
        return checks

    @classmethod
    def predictor(cls, result):
        """Scores of the fitted model on new rows, ``result.predictor()(X)`` (from the result alone)."""
        spec = dict(result.metrics.get("score_model", {}))
        name = spec.pop("name", "w")
        if name not in result.variables:
            raise OptionError("this result has no model description (metrics['score_model']); re-solve it")
        return ScorePredictor(spec, np.asarray(result.variables[name], dtype=float))

    def _model_spec(self) -> dict:
        if self.linear:
            return {"name": self.w.name, "kind": "linear", "intercept": self.w.intercept}
        return {"name": self.w.name, "kind": "mlp", "n_features": self.w.n_features, "hidden": self.w.hidden,
                "output": self.w.output}


class ScorePredictor:
    """Scores of a fitted model on new rows: ``predictor(X)`` (the intercept column is added when needed)."""

    def __init__(self, spec: dict, theta: np.ndarray):
        self.spec, self.theta = spec, theta
        self.net = (SigmoidMLP(spec["n_features"], spec["hidden"], output=spec["output"])
                    if spec.get("kind") == "mlp" else None)

    def __call__(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if self.net is not None:
            return self.net.forward(self.theta, X)[0]
        if self.spec.get("intercept"):
            return X @ self.theta[:-1] + self.theta[-1]
        return X @ self.theta


class _CenteredDesign:
    """The design rows of feature rows X minus ``center`` (None: the design rows): the rows the saddle function of
    Bregman SMD takes (a picklable per-chunk function of a pass, and the design of a gathered minibatch)."""

    def __init__(self, model, center):
        self.intercept = bool(getattr(model.w, "intercept", False)) and model.convex
        self.center = center

    def __call__(self, X) -> np.ndarray:
        Z = with_intercept(X, self.intercept)
        if self.center is None:
            return Z
        if Z is X:                  # no copy made yet: never change the caller's rows
            return X - self.center
        Z -= self.center
        return Z


class _SquaredNorms:
    """sum of ||z_i||^2 over a chunk's rows z_i = design(x_i) (a picklable per-chunk function)."""

    def __init__(self, design: _CenteredDesign):
        self.design = design

    def __call__(self, batch) -> float:
        Z = self.design(batch.X)
        return float(np.einsum("ij,ij->", Z, Z))
