"""DP post-processing for regression without the sensitive attribute at inference (paper: Chzhen, Hebiri,
Taturyan, "Regression under demographic parity constraints via unlabeled post-processing", NeurIPS 2024).

Declaration recognized::

    post = fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=20, B=1.0)
    fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= eps], entropy=1 / beta)

(or ``fm.expected_cost(post)`` for a GridPredictor with a cost matrix, Remark 2.2). ``entropy`` = 1/beta >= 0
is the weight of the negative entropy in (4); 0 (the default) is the LP (3). Solve-time options:
``data=`` the unlabeled points (an array / DataFrame / Dataset for a pool, an iterator of chunks for a
stream), ``sample_weight=`` weights of a finite distribution.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import DataError, OptionError, ResourceLimitError, SolverError, UnsupportedProblemError
from ..exact import dp as exact_dp
from ..expressions.atoms.dp import DPConstraint, DPPredictor, GridRisk
from ..expressions.grid import GridPredictor, t_values
from ..oracles.dp_chunked import ChunkedDual, dual_stats
from ..oracles.dp_dual import DualProblem, gradient_mapping, group_pairs, mapping_alpha, sigma2
from ..stochastic.dp_postprocessing import METHODS, ORACLES, Pool, Restarts
from ..utilities.display import latex_number as display_number
from ..utilities.progress import Progress
from ..utilities.validate import as_generator, check_options
from .base import Check, Evaluation, Reduction, Solution, by_group, cap_tip, constraint_record, group_label
from .dp_runs import (
    DEFAULT_CAP,
    DEFAULT_T,
    JUDGE_SIZE,
    Prepared,
    RoundJudge,
    StreamFit,
    is_chunked,
    refuse_chunked,
    round_check,
    run_solution,
    smoothness_constant,
    start_run,
    stop_rule,
    with_progress,
)
from .registry import register

POOL_R_MAX = 20_000_000  # precompute the (n, m) cost matrix of a pool up to this many entries (160 MB)
CERTIFY_MAX = 5_000_000  # n m up to which the judge solves the exact dual (L-BFGS-B) for the dual suboptimality
RELATIVE, FLOOR = 2e-2, 1e-6   # accuracy of a stochastic result: 2% of |risk| + |entropy term|, plus 1e-6
ACCURACY_REASON = ("the tolerance is 2% of the objective's size (|risk| + |entropy term|, which do not cancel) plus "
                   "1e-6: the objective to two significant digits, a small part of the entropic smoothing 1/beta "
                   "the problem declares, and about the statistical error of an empirical risk on 2,500 points "
                   "(relative error ~1/sqrt(n))")

FALLBACK = {"lbfgs": "dual", "lp": "dual_lp"}   # the other exact program of the same problem, when the default fails
EXACT_LP = {"lp": "the LP (3) in the policy P (n x m), two one-sided inequalities per (grid point, group); "
                  "duals of the constraints give (Lambda, V) (CVXPY; default HiGHS interior point)",
            "dual_lp": "the dual LP (the beta -> inf limit of (5)); the policy is read from the duals of its "
                       "constraints (CVXPY)"}
EXACT_ENTROPIC = {"lbfgs": "the dual (5) minimized by scipy L-BFGS-B under z >= 0 to a KKT residual <= 1e-7 (with "
                           "restarts); the policy is pi_z of eq. (7) (default: ~0.5 s at n = 2000, m = 41, where the "
                           "CVXPY programs take ~35 s)",
                  "primal": "the entropic program (4), an exponential-cone program in P (CVXPY, Clarabel); "
                            "duals of the constraints give (Lambda, V)",
                  "dual": "the log-sum-exp dual (5) (CVXPY, Clarabel); the policy is pi_z of eq. (7)"}


@register
class DPPostProcessing(Reduction):
    name = "dp_postprocessing"
    title = "DP post-processing for regression (unaware)"
    paper = "Chzhen, Hebiri, Taturyan, regression under demographic parity via unlabeled post-processing"
    supported = ("fm.Minimize(fm.squared_risk(post) or fm.expected_cost(post)) of a fm.GridPredictor with at "
                 "most one fm.dp_gap(post) <= eps; option entropy=1/beta >= 0")

    priority = 10
    judge_options = ("data", "sample_weight", "certify", "prepared")

    def __init__(self, problem, structure):
        super().__init__(problem)
        risk, constraint = structure
        check_options(problem.options, ("entropy",), "DP post-processing (fm.Problem options)")
        entropy = problem.options.get("entropy", 0.0)
        if isinstance(entropy, bool) or not isinstance(entropy, (int, float, np.integer, np.floating)) \
                or not math.isfinite(entropy) or entropy < 0:
            raise OptionError(f"entropy must be a finite number >= 0 (entropy = 1/beta; 0 is the LP (3)); "
                              f"got {entropy!r}")
        self.post: GridPredictor = risk.post
        self.constraint = constraint
        self.entropy = float(entropy)
        self.beta = math.inf if entropy == 0 else 1.0 / entropy
        self.solverless_methods = ("lbfgs",)
        self.exact_methods = EXACT_LP if math.isinf(self.beta) else EXACT_ENTROPIC
        self.stochastic_methods = METHODS

    @classmethod
    def accepts(cls, problem):
        expr = problem.canonical.objective
        if not isinstance(expr, GridRisk):
            return "the objective must be fm.squared_risk(post) or fm.expected_cost(post) of a fm.GridPredictor"
        cons = problem.canonical.constraints
        bad = [c for c in cons if not isinstance(c, DPConstraint)]
        if bad:
            return f"only fm.dp_gap(post) <= eps constraints are supported; got {bad[0]}"
        if len(cons) > 1:
            return "give one fm.dp_gap(post) <= eps (a vector eps sets one tolerance per group)"
        if cons and cons[0].gap.post is not expr.post:
            return "the objective and fm.dp_gap(...) must use the same fm.GridPredictor"
        return expr, (cons[0] if cons else None)

    @property
    def display_name(self) -> str:
        return "DP post-processing" + (" (classification)" if self.post.kind != "regression" else "")

    # -- description -------------------------------------------------------------------------------------------
    def objective_regularizer(self, n) -> str:
        """The entropy term of the entropic problem (4): R_beta(pi) = R(pi) + (1/beta) E[sum_l pi(l|X) log pi(l|X)]
        (Chzhen, Hebiri, Taturyan 2024), what the solvers minimize when beta < inf."""
        if math.isinf(self.beta):
            return ""
        beta = f"{self.beta:g}"
        n.define("beta", f"beta = {beta}: 1/beta weighs the negative entropy sum_l pi(l|x) log pi(l|x) <= 0 (the "
                         f"entropic regularization of problem (4) of Chzhen, Hebiri, Taturyan 2024); the objective "
                         f"R_beta is the risk plus this term, and results report the risk alone as metrics['risk']",
                 f"$\\beta = {display_number(self.beta)}$: $1/\\beta$ weighs the negative entropy "
                 f"$\\sum_{{l}} \\pi(l \\mid x) \\log \\pi(l \\mid x) \\le 0$ (the entropic regularization of "
                 f"problem~(4) of Chzhen, Hebiri, Taturyan 2024); the objective $R_{{\\beta}}$ is the risk plus this "
                 f"term, and results report the risk alone as \\texttt{{metrics['risk']}}", order=60)
        return n.pick(" + (1/beta) E[sum_l pi(l|X) log pi(l|X)]",
                      " + \\frac{1}{\\beta}\\,\\mathbb{E}\\left[\\sum_{l} \\pi(l \\mid X) \\log \\pi(l \\mid X)\\right]")

    def describe_extra(self) -> list:
        post = self.post
        num = display_number
        if post.kind == "regression":
            grid = f"grid y_l = l B / L, l = -L..L, with L = {post.L}, B = {post.B:g} (m = {post.m} points)"
            grid_tex = (f"grid $y_{{l}} = l B / L$, $l = -L, \\dots, L$, with $L = {post.L}$, $B = {num(post.B)}$ "
                        f"($m = {post.m}$ points)")
        else:
            grid = f"grid of m = {post.m} labels with a cost matrix r(x, y_j)"
            grid_tex = f"grid of $m = {post.m}$ labels with a cost matrix $r(x, y_{{j}})$"
        if math.isinf(self.beta):
            beta, beta_tex = "inf (LP (3))", "$\\beta = \\infty$ (LP (3))"
        else:
            beta, beta_tex = f"{self.beta:g} (entropic problem (4))", f"$\\beta = {num(self.beta)}$ (entropic problem (4))"
        if isinstance(post.p_spec, str):
            p = "calibrated: mean of tau_hat over the unlabeled points"
            p_tex = "$p$ calibrated: the mean of $\\hat\\tau(x)$ over the unlabeled points"
        else:
            p = np.array2string(post.p_spec, precision=4)
            p_tex = "$p = (" + ",\\ ".join(num(v) for v in np.ravel(post.p_spec)) + ")$"
        U = "U_{s}(\\pi, l) = \\left|\\mathbb{E}\\left[\\pi(l \\mid X)\\, t_{s}(X)\\right]\\right|"
        inner = "\\langle \\lambda_{l} - \\nu_{l}, t(X)\\rangle - r_{l}(X)"
        constraint = ("Constraint: U_s(pi, l) = |E[pi(l|X) t_s(X)]| <= eps_s for all l, s, with t_s = 1 - tau_s / p_s "
                      "(15)",
                      f"Constraint: ${U} \\le \\epsilon_{{s}}$ for all $l$, $s$, with $t_{{s}} = 1 - "
                      f"\\hat\\tau_{{s}} / p_{{s}}$ (15)")
        if self.pairwise:
            constraint = ("Constraint (largest pairwise): |E[pi(l|X) (t_a(X) - t_b(X))]| = |P(pi = l | S = b) - "
                          "P(pi = l | S = a)| <= eps for all l and pairs a < b, with t_s = 1 - tau_s / p_s (15): the "
                          "dual below in these pair columns (t(X) stands for (t_a(X) - t_b(X))_(a < b))",
                          "Constraint (largest pairwise): $\\left|\\mathbb{E}\\left[\\pi(l \\mid X)\\, (t_{a}(X) - "
                          "t_{b}(X))\\right]\\right| = \\left|P(\\pi = l \\mid S = b) - P(\\pi = l \\mid S = a)\\right| "
                          "\\le \\epsilon$ for all $l$ and pairs $a < b$, with $t_{s} = 1 - \\hat\\tau_{s} / p_{s}$ (15): "
                          "the dual below in these pair columns ($t(X)$ stands for $(t_{a}(X) - t_{b}(X))_{a < b}$)")
        return ["",
                (f"Structure: {grid}; beta = {beta}; p = {p}", f"Structure: {grid_tex}; {beta_tex}; {p_tex}"),
                constraint,
                ("Dual (5): min_(Lambda, V >= 0) E[LSE_beta(<lambda_l - nu_l, t(X)> - r_l(X))_l] + "
                 "sum_l <lambda_l + nu_l, eps>",
                 f"Dual (5): $\\min_{{\\Lambda, V \\ge 0}}\\ \\mathbb{{E}}\\left[\\mathrm{{LSE}}_{{\\beta}}"
                 f"\\left(({inner})_{{l}}\\right)\\right] + \\sum_{{l}} \\langle \\lambda_{{l}} + \\nu_{{l}}, "
                 f"\\epsilon\\rangle$, with $z = (\\Lambda, V)$, $\\Lambda = (\\lambda_{{l}})_{{l}}$, "
                 f"$V = (\\nu_{{l}})_{{l}}$ and $r_{{l}}(x)$ the cost of $y_{{l}}$ at $x$"),
                ("Prediction (7): pi_z(l|x) = softmax_l(beta (<lambda_l - nu_l, t(x)> - r_l(x)))",
                 f"Prediction (7): $\\pi_{{z}}(l \\mid x) = \\mathrm{{softmax}}_{{l}}\\left(\\beta\\,"
                 f"({inner.replace('X', 'x')})\\right)$"),
                ("Judge: R_beta, risk, U_s per (grid point, group), dual value, KKT residual ||G_alpha(z)||, "
                 "duality gap R_beta(pi_z) + F(z), suboptimality F(z) - F* against the exact dual, identity residual "
                 "R_beta + F - <z, grad F> (Lemma 3.5)",
                 "Judge: $R_{\\beta}$, the risk, $U_{s}$ per (grid point, group), the dual value $F(z)$, the KKT "
                 "residual $\\|G_{\\alpha}(z)\\|$, the duality gap $R_{\\beta}(\\pi_{z}) + F(z)$, the suboptimality "
                 "$F(z) - F^{*}$ against the exact dual, the identity residual $R_{\\beta} + F - \\langle z, "
                 "\\nabla F\\rangle$ (Lemma 3.5)")]

    def to_cvxpy(self, data=None, sample_weight=None):
        """The primal CVXPY program (3) / (4) on ``data`` (default: the points of the most recent solve)."""
        refuse_chunked(data, "the CVXPY program of DP post-processing")
        prep = self._points(data, sample_weight)
        if prep.eps is None:
            raise UnsupportedProblemError("without a fairness constraint the optimum is explicit (pi_(0,0), "
                                          "Remark 3.2)")
        dual = self._dual(prep)
        exact_dp.guard(dual)
        return exact_dp.primal_program(dual)[0]

    # -- data ------------------------------------------------------------------------------------------------------
    def _prepare(self, data, sample_weight=None, p=None) -> Prepared:
        first, tau = self.post.values(data)
        weights = None
        if sample_weight is not None:
            weights = np.asarray(sample_weight, dtype=float)
            if weights.shape != (tau.shape[0],) or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
                raise DataError(f"sample_weight must hold {tau.shape[0]} positive finite numbers (one per point)")
            weights = weights / weights.sum()
        p = self.post.resolve_p(tau, weights) if p is None else p
        eps = None if self.constraint is None else self.constraint.eps(tau.shape[1])
        return Prepared(first, tau, p, self.columns(tau, p), weights, eps, is_chunked(data))

    def columns(self, tau: np.ndarray, p: np.ndarray) -> np.ndarray:
        """The dual's columns on the points: t_hat = 1 - tau_hat / p (eq. (15)), or its pair differences for
        ``dp_gap(post, pairwise=True)`` (:meth:`DPConstraint.columns`)."""
        T = t_values(tau, p)
        return T if self.constraint is None else self.constraint.columns(T)

    @property
    def pairwise(self) -> bool:
        return self.constraint is not None and self.constraint.pairwise

    def column_names(self, K: int) -> list:
        """A name per dual column: the groups', or "a vs b" per pair of groups (pairwise)."""
        names = self.post.group_names(K)
        if not self.pairwise:
            return names
        labels = [group_label(g) for g in names]
        return [f"{labels[a]} vs {labels[b]}" for a, b in group_pairs(K)]

    def sigma2(self, p: np.ndarray) -> float:
        """The population bound on E||t||^2 in the dual's columns (Lemma 3.4; :func:`~fairmodel.oracles.dp_dual.sigma2`)."""
        return sigma2(p, self.pairwise)

    def _points(self, data, sample_weight=None) -> Prepared:
        if data is None and self.post.callable:
            raise OptionError("pass the unlabeled points: data=X_unlabeled (the base models are callables, so the "
                              "points are not part of the declaration)")
        return self._prepare(data, sample_weight)

    def _dual(self, prep: Prepared, beta: float | None = None) -> DualProblem | ChunkedDual:
        """The dual (5) on the points: in memory, or by blocks of rows for Dask-backed points."""
        if prep.chunked:
            return ChunkedDual(self.post.costs, prep.first, prep.T, prep.eps, self.beta if beta is None else beta,
                               prep.weights, m=self.post.m)
        return DualProblem(self.post.costs(prep.first), prep.T, prep.eps, self.beta if beta is None else beta,
                           prep.weights)

    def _z0(self, z0, K: int) -> np.ndarray:
        shape = (2, self.post.m, K)
        if z0 is None:
            return np.zeros(shape)
        if hasattr(z0, "variables"):
            z0 = z0.variables
        if isinstance(z0, dict):
            z0 = np.stack([np.asarray(z0["Lambda"], dtype=float), np.asarray(z0["V"], dtype=float)])
        z0 = np.asarray(z0, dtype=float)
        if z0.shape != shape or not np.all(np.isfinite(z0)) or np.any(z0 < 0):
            raise OptionError(f"z0 (a warm start) must be a result, {{'Lambda', 'V'}} or an array of shape "
                              f"{shape} with finite entries >= 0")
        return z0.copy()

    def _p_is_calibrated(self) -> bool:
        return isinstance(self.post.p_spec, str)

    def check_feasible(self, dual, K: int) -> float:
        """The feasibility margin of the constraints on the dual's points (:func:`exact_dp.check_feasible`), the
        columns named by pair of groups for a pairwise constraint (``K`` groups)."""
        names = [f"the pair {c}" for c in self.column_names(K)] if self.pairwise else None
        return exact_dp.check_feasible(dual, self._p_is_calibrated(), names)

    # -- exact backend ---------------------------------------------------------------------------------------------
    def solve_exact(self, method, solver, verbose, data=None, sample_weight=None, z0=None, certify=None, **options):
        """The exact program of ``method``; when the default method (``lbfgs``, or ``lp`` for beta = inf) fails, the
        other program of the same problem (``dual``, ``dual_lp``) is solved instead and the result says so."""
        chunked = is_chunked(data)
        if chunked and method != "lbfgs":     # L-BFGS-B on the dual (5) sums the points by blocks, like the judge
            refuse_chunked(data, f"the exact DP post-processing program {method!r} (the (n, m) policy or dual in "
                                 f"memory; method='lbfgs', the entropic dual (5) by L-BFGS-B, runs on chunked "
                                 f"points when entropy > 0)")
        requested = method
        prep = self._prepare(data, sample_weight)
        dual = self._dual(prep)
        K = prep.T.shape[1]
        certificate = {}
        if prep.eps is None:  # no constraint: pi_(0,0) of Remark 3.2 is optimal
            z = np.zeros(dual.shape)
            record = {"name": "closed form (no constraint)", "status": "optimal"}
        else:
            certificate["feasibility_margin"] = self.check_feasible(dual, prep.tau.shape[1])
            try:
                P, z, record = self._exact_method(method, dual, solver, verbose, z0, K, options)
            except SolverError as exc:
                # the default method fell short: the other exact program of the same problem, said in the result
                fallback = FALLBACK.get(method)
                if fallback is None or options or solver is not None or chunked:
                    raise
                try:
                    P, z, record = self._exact_method(fallback, dual, None, verbose, None, K, {})
                except (SolverError, ResourceLimitError) as second:
                    raise SolverError(f"{exc}; the fallback method {fallback!r} failed too: {second}",
                                      status=exc.status) from None
                record["message"] = (f"the default method {method!r} failed ({exc}); solved with method {fallback!r} "
                                     f"instead")
                method = fallback
        variables = {"Lambda": z[0], "V": z[1]}
        if prep.eps is not None and method in ("lp", "primal", "dual_lp"):
            variables["P"] = P
        timings = {k: record.pop(k) for k in ("compile", "solve") if k in record}
        record["grid_predictor"] = self.post.key
        record["method"] = method
        return Solution(variables=variables, status=record["status"], solver=record, timings=timings,
                        certificate=certificate, judge_context={"prepared": prep, "certify": certify},
                        message=record.get("message", "") if method != requested else "")

    def _exact_method(self, method, dual, solver, verbose, z0, K, options):
        """(P or None, z, record) of one exact method on the dual problem's points."""
        if method in ("lp", "primal"):
            return exact_dp.solve_primal(dual, solver, verbose, **options)
        if method in ("dual_lp", "dual"):
            z, P, record = exact_dp.solve_dual(dual, solver, verbose, **options)
            return P, z, record
        check_options(options, ("tol", "maxiter", "restarts"), "method 'lbfgs'")
        if solver is not None:
            raise OptionError("method 'lbfgs' uses scipy's L-BFGS-B; solver= chooses a CVXPY solver for the "
                              "methods 'primal' and 'dual'")
        z, record = exact_dp.solve_lbfgs(dual, self._z0(z0, K), **options)
        return None, z, record

    # -- stochastic backend ------------------------------------------------------------------------------------------
    def solve_stochastic(self, method, seed, verbose, data=None, sample_weight=None, T=None, batch_size=None,
                         oracle=None, mu=None, inner="acsa2", variant="paper", smoothness=None, step=None,
                         tail=1.0, z0=None, history_every=0, callback=None, judge_size=JUDGE_SIZE, certify=None,
                         stop=None):
        """Algorithm 1 with ``method`` on the dual (5). ``stop="checks"`` (default, except with
        ``variant="reference"``, whose default is ``"budget"``, the authors' fixed T): rounds of the method, each a
        complete run of it (Algorithm 4, 3 or 2, or projected SGD) warm-started at the previous round's output,
        with the gradient steps and the minibatch doubling from round to round (1,000 steps of 4 points first), and
        the judge's checks (the constraint violations and the duality gap of (pi_z, z), and the dual
        suboptimality when certified) after every round: the run stops when they pass; ``T`` caps the points
        sampled by all rounds (default 1e8). ``stop="budget"``: one run of ``T`` stochastic gradients (default
        20,000) as printed in Algorithm 1."""
        if math.isinf(self.beta):
            raise UnsupportedProblemError("the stochastic backend minimizes the smooth dual (5), which needs "
                                          "entropy > 0: declare fm.Problem(..., entropy=1/beta), e.g. beta = 100 "
                                          "(the paper: fm.dp_parameters('reference', n=N))")
        stop = stop_rule(stop, variant)
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                                       or batch_size < 1):
            raise OptionError(f"batch_size must be a positive integer (or None: 1 with stop='budget', doubling from 4 "
                              f"with stop='checks'); got {batch_size!r}")
        stream = data is not None and hasattr(data, "__next__")
        oracle = ("stream" if stream else "resample") if oracle is None else oracle
        if oracle not in ORACLES:
            raise OptionError(f"oracle must be one of {', '.join(ORACLES)}; got {oracle!r}")
        if stream and oracle != "stream":
            raise OptionError("data is an iterator of chunks (a stream): it can only be read once, in order "
                              "(oracle='stream')")
        rng = as_generator(seed)
        if stream:
            fit = StreamFit(self, T, batch_size=batch_size, method=method, mu=mu, inner=inner, variant=variant,
                            smoothness=smoothness, step=step, tail=tail, z0=z0, history_every=history_every,
                            callback=callback, judge_size=judge_size, seed=rng, stop=stop, certify=certify)
            with Progress(None, "DP post-processing (stream)", verbose) as bar:
                for chunk in data:
                    fit.push(chunk)
                    bar.update(len(chunk))
                    if fit.run.done:
                        break
            return fit.solution(certify)
        prep = self._prepare(data, sample_weight)
        if prep.eps is None:     # no constraint: pi_(0,0) of Remark 3.2 is optimal, as on the exact backend
            z = np.zeros((2, self.post.m, prep.T.shape[1]))
            return Solution(variables={"Lambda": z[0], "V": z[1]}, status="completed",
                            message="no fairness constraint: the optimum is pi_(0,0) of Remark 3.2 (z = 0), no run",
                            solver={"name": method, "grid_predictor": self.post.key},
                            metrics={"samples_used": 0, "rounds": 0},
                            judge_context={"prepared": prep, "certify": certify})
        self.check_feasible(self._dual(prep), prep.tau.shape[1])
        judge = RoundJudge(self, {"prepared": prep, "certify": certify}, enabled=stop == "checks", verbose=verbose)
        run, info = self._pool_run(prep, prep.eps, self._z0(z0, prep.T.shape[1]), rng, oracle, T, batch_size, method,
                                   mu, inner, variant, smoothness, step, tail, history_every, callback, verbose,
                                   stop=stop, judges=[judge])
        solution = run_solution(self, run, info, method, prep, oracle, certify)
        judge.finish(solution, cap=f"T={info['T']}")
        return solution

    def _pool_run(self, prep: Prepared, eps, z0, rng, oracle, T, batch_size, method, mu, inner, variant, smoothness,
                  step, tail, history_every, callback, verbose, stop="budget", judges=()) -> tuple[Restarts, dict]:
        """The run on a stored pool; ``eps`` (K,) or stacked (E, 1, K) with z0 (E, 2, m, K); with stop="checks"
        ``judges`` holds the :class:`RoundJudge` of each dual."""
        if oracle in ("stream", "epochs") and prep.weights is not None:
            raise OptionError(f"oracle={oracle!r} reads points with equal weights; use 'resample' or 'exact' with "
                              f"sample_weight")
        if T is None and stop == "checks" and oracle == "stream":
            T = prep.n     # each point once
        R = self.post.costs(prep.first) if prep.n * self.post.m <= POOL_R_MAX or self.post.kind == "cost" else None
        pool = Pool(prep.T, R, prep.first if R is None else None, self.post.grid, prep.weights)
        if smoothness is None:   # pools: the Lipschitz constant measured on the points (App. E), unless a fixed budget
            smoothness = "plugin" if stop == "checks" else "sigma2"
        M = smoothness_constant(smoothness, self.beta, self.sigma2(prep.p), lambda: self._dual(prep).sigma2_plugin())
        run = start_run(method, z0, M, mu, T, batch_size, inner, variant, step, tail, self.beta, eps, history_every,
                        callback, stop=stop, check=round_check(list(judges)) if stop == "checks" else None,
                        max_batch=prep.n)
        for judge in judges:        # the fail-fast rule compares its projection with the cap on sampled points
            judge.stop.cap = run.cap
        with Progress(None, "DP post-processing", verbose) as bar:
            run.run_pool(pool, oracle, rng, wrap=lambda batches: with_progress(batches, bar, 1000))
        info = {"M": M, "T": (DEFAULT_T if stop == "budget" else DEFAULT_CAP) if T is None else T, "stop": stop,
                "smoothness": smoothness if isinstance(smoothness, str) else "given", "pool_size": prep.n,
                "passes": run.samples / prep.n, "distinct_points": int(pool.seen.sum())}
        return run, info

    # -- judge -------------------------------------------------------------------------------------------------------
    def evaluate(self, variables: dict, prepared: Prepared | None = None, data=None, sample_weight=None,
                 certify: bool | None = None) -> Evaluation:
        variables = dict(variables)
        data = variables.pop("data", data)
        prep = prepared if prepared is not None and data is None else self._points(data, sample_weight)
        unknown = set(variables) - {"Lambda", "V", "P"}
        if unknown or not ({"Lambda", "V"} <= set(variables) or "P" in variables):
            raise OptionError(f"a DP post-processing candidate has 'Lambda' and 'V' (the duals, shape (m, K)) and/or "
                              f"'P' (the policy on the points, shape (n, m)); got {sorted(variables)}")
        dual = self._dual(prep)
        m, K = dual.m, dual.K
        z = None
        if "Lambda" in variables:
            z = np.stack([np.asarray(variables["Lambda"], dtype=float), np.asarray(variables["V"], dtype=float)])
            if z.shape != (2, m, K) or not np.all(np.isfinite(z)) or z.min() < -1e-9:
                raise OptionError(f"Lambda and V must be finite arrays of shape ({m}, {K}) with entries >= 0")
            z = np.maximum(z, 0.0)
        if "P" in variables:
            P = np.asarray(variables["P"], dtype=float)
            if P.shape != (prep.n, m) or not np.all(np.isfinite(P)) or P.min() < -1e-9 \
                    or np.abs(P.sum(axis=1) - 1).max() > 1e-6:
                raise OptionError(f"P must hold one probability vector over the {m} grid points per point, shape "
                                  f"({prep.n}, {m})")
        else:
            P = None
        names = self.column_names(prep.tau.shape[1])
        # one pass over the points (by blocks of rows for Dask-backed points): the policy's moments and risks
        stats = dual_stats(dual, z, P, self.post.grid if self.post.numeric_grid else None)
        U = stats["U"]
        objective = stats["regularized_risk"]
        constraints = {}
        if prep.eps is not None and self.pairwise:
            # the pair columns: U = |E[pi(l|X) (t_a - t_b)]| = |P(l | b) - P(l | a)|, one bound eps for every pair
            constraints[f"{self.constraint.name} (largest pairwise)"] = constraint_record(U.max(), prep.eps[0])
        elif prep.eps is not None:
            cname = self.constraint.name
            for s in range(K):
                constraints[f"{cname}[{names[s]}]"] = constraint_record(U[:, s].max(), prep.eps[s])   # vs the population
        risk = "the squared risk" if self.post.kind == "regression" else "the expected cost"
        kind = (f"R_beta = {risk} + the entropy term (the entropic problem (4) of Chzhen, Hebiri, Taturyan 2024; it "
                f"can be negative): compare the risk" if not math.isinf(self.beta) else f"{risk} (the LP (3))")
        metrics = {"objective_kind": kind, "risk": stats["risk"], "entropy_term": objective - stats["risk"],
                   "dp_gap": by_group(U.max(axis=0), names),
                   "dp_gap_comparison": "largest pairwise" if self.pairwise else "vs the population",
                   "unfairness": U, "grid": self.post.grid,
                   "grid_kind": self.post.kind, "L": self.post.L, "B": self.post.B, "beta": self.beta, "p": prep.p,
                   "n_points": prep.n, "sigma2": self.sigma2(prep.p), "sigma2_plugin": dual.sigma2_plugin()}
        if self.post.numeric_grid:
            metrics["mean_prediction"] = stats["mean_prediction"]
        certificate = {}
        if prep.eps is not None:
            metrics["unfairness_excess"] = stats["unfairness_excess"]
            metrics["feasibility_margin"] = float(dual.feasibility_margins().min())
        if z is not None and prep.eps is not None:
            certificate.update(self._certificate(dual, z, P, stats if P is None else None, prep, certify))
        elif z is not None and not math.isinf(self.beta):
            # no constraint, so no multiplier: the dual value is E[LSE_beta(-r)] = -R_beta(pi_(0,0)) (Remark 3.2),
            # and the gap R_beta(pi_z) - R_beta(pi_(0,0)) >= 0 is the suboptimality of pi_z
            base = stats if not np.any(z) else dual_stats(dual, np.zeros_like(z))
            certificate["duality_gap"] = objective - base["regularized_risk"]
        return Evaluation(objective=objective, constraints=constraints, metrics=metrics, certificate=certificate)

    def _certificate(self, dual, z: np.ndarray, P, stats_z, prep: Prepared, certify) -> dict:
        """Dual value, KKT residual, identity residual (R_beta(pi_z) + F(z) = <z, grad F(z)>: Lemma 3.5
        part II with the sign corrected, the paper prints -grad F), the duality gap R_beta(P) + F(z) of the pair
        (P, z) (P = pi_z for a candidate with duals only), and the gap F(z) - F* against the exact dual (solved here
        by L-BFGS-B once per problem and points: cached on the points for the checks of a run)."""
        value, grad = dual.value_and_grad(z)
        out = {"dual_value": value}
        if P is not None:
            # >= 0 when P is feasible (weak duality)
            out["duality_gap"] = dual_stats(dual, None, P)["regularized_risk"] + value
        if math.isinf(self.beta):
            return out
        stats_z = dual_stats(dual, z) if stats_z is None else stats_z
        alpha = mapping_alpha(dual)
        out["kkt_residual"] = float(np.linalg.norm(gradient_mapping(z, grad, alpha)))
        # = the unfairness excess of pi_z (Lemma 3.5 part I)
        out["dual_unfairness_excess"] = float(np.linalg.norm(np.maximum(-grad, 0.0)))
        out["identity_residual"] = stats_z["regularized_risk"] + value - float(np.sum(z * grad))
        if P is None:
            # the pair (pi_z, z): R_beta(pi_z) - R_beta(pi*) <= R_beta(pi_z) + F(z) and F(z) - F* <= R_beta(pi_z) + F(z)
            # when pi_z is feasible (weak duality (17)); it equals <z, grad F(z)> (Lemma 3.5 II), 0 at the optimum
            out["duality_gap"] = stats_z["regularized_risk"] + value
        if certify is None:
            certify = dual.n * dual.m <= CERTIFY_MAX
        if certify:
            key = ("F*", self.post.key, self.beta, None if prep.eps is None else prep.eps.tobytes())
            f_star = prep.cache.get(key)
            if f_star is None:
                f_star = exact_dp.reference_value(dual, z)
                if math.isnan(f_star):     # the candidate is kept and judged; only this certificate is missing
                    warnings.warn("the dual suboptimality F(z) - F* is not certified (reported as nan): the judge's "
                                  "reference solve of the dual (5) failed from the candidate and from z = 0",
                                  UserWarning, stacklevel=4)
                    out["optimal_value"] = out["dual_suboptimality"] = math.nan
                    return out
                prep.cache[key] = f_star
            f_star = min(f_star, value)
            out["optimal_value"] = -f_star
            out["dual_suboptimality"] = value - f_star
        return out

    def violation_tolerance(self, bound: float, backend: str) -> tuple[float, str]:
        if backend == "exact":
            return super().violation_tolerance(bound, backend)
        return 0.2 * bound + 1e-6, ("20% of eps (plus 1e-6): pi_z of an approximate dual is feasible up to the "
                                    "dual's optimization error (Theorem 5.1 of Chzhen, Hebiri, Taturyan 2024; Lemma 3.5 part I: the excess is "
                                    "||(-grad F(z))_+||), which the rounds drive down until this holds")

    @staticmethod
    def accuracy(evaluation: Evaluation) -> float:
        """The accuracy asked of a stochastic result, in objective units: RELATIVE times the size of the objective's
        two terms (the risk and the entropy term, both of one sign, so no cancellation), plus FLOOR."""
        m = evaluation.metrics
        return RELATIVE * (abs(m["risk"]) + abs(m["entropy_term"])) + FLOOR

    def certificate_checks(self, evaluation, backend) -> list[Check]:
        cert = evaluation.certificate
        if backend == "exact":
            key = "duality_gap" if "duality_gap" in cert else "kkt_residual"
            if key not in cert:
                return []
            return [Check(f"{key} of the exact solution", abs(cert[key]), 1e-6, "strong duality (eq. (17) of Chzhen, "
                          "Hebiri, Taturyan 2024) / the KKT conditions (their eq. (8)) hold at the optimum up to the solver's tolerance", "certificate")]
        checks = []
        tol = self.accuracy(evaluation)
        if "duality_gap" in cert:
            checks.append(Check("duality gap R_beta(pi_z) + F(z)", cert["duality_gap"], tol,
                                "with the constraints met, it bounds the excess regularized risk of pi_z and the "
                                "dual suboptimality (weak duality, eq. (17) of Chzhen, Hebiri, Taturyan 2024); " + ACCURACY_REASON, "certificate"))
        if "dual_suboptimality" in cert:
            checks.append(Check("dual suboptimality F(z) - F*", cert["dual_suboptimality"], tol,
                                "against the exact dual (L-BFGS-B, KKT residual <= 1e-7); " + ACCURACY_REASON,
                                "certificate"))
        return checks

    def advice(self, backend, solution, failing) -> str:
        if backend == "exact":
            return super().advice(backend, solution, failing)
        m = solution.metrics
        if m.get("stop") == "budget":
            return ("What to try: a larger T (the gradients of the one run), or stop='checks' (the default of solve "
                    "and fit, except with variant='reference'), which runs rounds of the method until the judge's "
                    "checks pass; or the certified exact dual (backend='exact', method='lbfgs').")
        used = (f" (this run sampled {m['samples_used']:,} points in {m.get('rounds', 1)} round(s))"
                if "samples_used" in m else "")
        tip = cap_tip(solution, f"a larger cap T= lets the rounds continue until the checks pass{used}")
        return (f"What to try: {tip}; the certified exact dual (backend='exact', method='lbfgs'), fast while the "
                f"points times the grid size fit in memory; a larger eps or a smaller beta (a looser or smoother "
                f"problem) converges in fewer rounds.")

    def crosscheck_checks(self, exact, stochastic, data=None, sample_weight=None, **context) -> list[Check]:
        """Agreement checks implied by the two results' own certificates (so two ok results pass them):
        with z* the exact duals and U the stochastic policy's unfairness, weak duality (17) gives
        R_beta(pi_z) >= R_beta* - sum (lambda* + nu*) (U - eps)_+ and the duality gap of the stochastic pair
        gives R_beta(pi_z) <= R_beta* + gap; the policies are close because (4) is (1/beta)-strongly convex in
        the mean squared total variation (Pinsker): E ||pi_z - pi*||_1^2 <= 2 beta (F(z) - F*)."""
        exact_tol = 1e-6 * max(1.0, abs(exact.objective))
        stoch_eval = Evaluation(objective=stochastic.objective, metrics=stochastic.metrics)
        accuracy = self.accuracy(stoch_eval)
        diff = stochastic.objective - exact.objective
        slack = 0.0
        z_star = np.stack([exact.variables["Lambda"], exact.variables["V"]]) if "Lambda" in exact.variables else None
        eps = np.array([c["bound"] for c in exact.constraints.values()])
        U = np.asarray(stochastic.metrics.get("unfairness", np.zeros((0, 0))), dtype=float)
        if self.pairwise and "p" in stochastic.metrics:
            eps = self.constraint.eps(len(stochastic.metrics["p"]))   # one bound per pair column of U
        if z_star is not None and U.shape == z_star.shape[1:] and eps.size == U.shape[1]:
            slack = float(np.sum((z_star[0] + z_star[1]) * np.maximum(U - eps, 0.0)))
        checks = [
            Check("R_beta(stochastic) - R_beta(exact)", diff, accuracy + exact_tol,
                  "at most the duality gap of the stochastic pair (pi_z, z), which an ok result keeps below its "
                  "accuracy: " + ACCURACY_REASON),
            Check("R_beta(exact) - R_beta(stochastic)", -diff, slack + exact_tol,
                  "weak duality (17) with the exact duals: at most sum (lambda* + nu*) (U - eps)_+ over the "
                  "stochastic policy's violations"),
            Check("max constraint violation (stochastic)", stochastic.max_violation,
                  max((0.2 * c["bound"] + 1e-6 for c in exact.constraints.values()), default=1e-6),
                  "20% of eps, as for a stochastic result alone: pi_z of an approximate dual is feasible up to the "
                  "dual's optimization error (Theorem 5.1 of Chzhen, Hebiri, Taturyan 2024)"),
            Check("max constraint violation (exact)", exact.max_violation, 1e-6,
                  "the exact optimum is feasible (Lemma 3.2 of Chzhen, Hebiri, Taturyan 2024) up to the solver "
                  "tolerance"),
        ]
        if "duality_gap" in exact.certificate:
            checks.append(Check("primal-dual gap of the exact solution", abs(exact.certificate["duality_gap"]), 1e-6,
                                "strong duality (eq. (17) of Chzhen, Hebiri, Taturyan 2024): the primal and dual "
                                "values agree to the solver's tolerance"))
        elif "kkt_residual" in exact.certificate:
            checks.append(Check("KKT residual of the exact dual", exact.certificate["kkt_residual"], 1e-6,
                                "G_alpha(z*) = 0 at a minimizer of the dual (eqs. (5) and (8) of Chzhen, Hebiri, "
                                "Taturyan 2024); method 'lbfgs' stops at 1e-7"))
        f_exact = exact.certificate.get("dual_value", -exact.objective)
        delta = stochastic.certificate.get("dual_value", math.nan) - f_exact
        if math.isfinite(delta):
            checks.append(Check("F(z) of the stochastic duals - F* of the exact backend", delta,
                                accuracy + slack + exact_tol,
                                "the dual suboptimality is the duality gap minus the excess risk, so at most the "
                                "accuracy plus the weak-duality slack above"))
        if self.post.numeric_grid and (data is not None or not self.post.callable) and not math.isinf(self.beta):
            dual = self._dual(self._points(data, sample_weight))
            diff_y = self._prediction_gap(dual, exact, stochastic)
            half = float(np.ptp(self.post.grid)) / 2
            bound = half * (math.sqrt(2 * self.beta * max(delta if math.isfinite(delta) else accuracy + slack, 0.0))
                            + math.sqrt(2 * self.beta * exact_tol))
            checks.append(Check("mean |E_pi[Y] exact - E_pi[Y] stochastic| over the points", diff_y, bound,
                                "predictions are compared, not duals (the dual minimizer is not unique): E ||pi_z - "
                                "pi*||_1^2 <= 2 beta (F(z) - F*) (the entropic problem (4) is (1/beta)-strongly convex "
                                "in total variation, Pinsker), times half the grid's range"))
        return checks

    def warm_start(self, result) -> dict:
        """Start a stochastic solve from the duals of a previous result (used by sweeps)."""
        return {"z0": result} if result.family == self.name and "Lambda" in result.variables else {}

    def _prediction_gap(self, dual, a, b) -> float:
        """sum_i w_i |E_pi_a[Y | x_i] - E_pi_b[Y | x_i]| of two results' policies (a primal policy P when the result
        has one, else pi_z of its duals, eq. (7)), block by block of points on chunked data (:class:`ChunkedDual`)."""
        blocks = dual.blocks() if hasattr(dual, "blocks") else [(slice(None), dual)]
        total = 0.0
        for rows, part in blocks:
            pa, pb = (self._policy_of(r, part, rows, dual.n) for r in (a, b))
            total += float(part.w @ np.abs((pa - pb) @ self.post.grid))
        return total

    @staticmethod
    def _policy_of(result, dual: DualProblem, rows=slice(None), n: int | None = None) -> np.ndarray:
        if "P" in result.variables and np.shape(result.variables["P"]) == (n or dual.n, dual.m):
            return np.asarray(result.variables["P"])[rows]
        return dual.policy(np.stack([result.variables["Lambda"], result.variables["V"]]))

    @classmethod
    def predictor(cls, result) -> DPPredictor:
        """The fitted randomized predictor pi_z of eq. (7) (base models attached when the problem is alive)."""
        return DPPredictor.from_result(result)
