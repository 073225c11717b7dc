"""A scikit-learn post-processing estimator for DP regression without the sensitive attribute at inference
(Chzhen, Hebiri, Taturyan, NeurIPS 2024): it wraps ``fm.GridPredictor`` + ``fm.Problem`` and the
stochastic backend (Algorithm 1 with SGD3 + AC-SA^2 by default).

    est = fm.DemographicParityPostProcessor(reg, clf, eps=0.01).fit(X_unlabeled)
    est.predict(X_test)                    # mean of pi(.|x); mode="mode" or "sample" also available
    est.predict_proba(X_test)              # (n, 2L + 1) probabilities over est.grid_

Streams: ``partial_fit(X_batch)`` consumes batches in order; the whole stream length ``T`` and the group
marginals ``p`` must be given up front (the run is planned for T points, as ``stop="budget"``: the estimator
cannot ask the caller for more; a stream cannot be calibrated). When the T points have been used the result is
judged (on the reservoir sample of the stream) and ``status_`` is the judged status; before that it is
``"unverified"``. For the same seed, parameters and order, ``partial_fit`` over chunks gives the same duals as
``fit`` on their concatenation with ``oracle="stream"`` and ``stop="budget"``.
"""
from __future__ import annotations

import math
import time

import numpy as np
from sklearn.base import BaseEstimator

from ..errors import DataError, InfeasibleError, OptionError
from ..expressions.atoms.dp import DPPredictor, dp_gap, group_duals, squared_risk
from ..expressions.grid import GridPredictor
from ..families.dp import CERTIFY_MAX
from ..families.dp_runs import StreamFit, dp_parameters, stop_rule
from ..problem import Minimize, Problem
from ..results.judge import judge_solution
from ..results.result import Result
from ..stochastic.dp_postprocessing import METHODS, ORACLES
from ..utilities.validate import as_generator, check_array_input, check_bool, check_choice, check_int, check_number
from ._base import densify, warn_if_not_ok


class DemographicParityPostProcessor(BaseEstimator):
    """Post-process a fitted regressor and a fitted sensitive-attribute classifier under demographic parity.

    Parameters
    ----------
    regressor : fitted, with ``predict(X)`` (an estimate of E[Y | X]).
    classifier : fitted, with ``predict_proba(X)`` (an estimate of P(S = s | X)); its ``classes_`` name the groups.
    eps : DP tolerance, a number or one per group, in [0, 1].
    pairwise : ``False`` (default): eps bounds each group vs the population, |P(pi = y | S = s) - P(pi = y)|;
        ``True``: eps (one number) bounds the largest pairwise gap max_{s, s'} |P(pi = y | S = s) -
        P(pi = y | S = s')| between any of the groups (the difference fairlearn reports; ``fm.dp_gap``).
    L, beta : grid size (2L + 1 points) and inverse entropic weight; ``None`` uses the paper's rule
        L = floor(sqrt(N)), beta = 0.5 sqrt(N) log2(N) with N the number of unlabeled points (``T`` for streams).
    B : the bound on |eta| (grid range [-B, B]); ``None``: the largest |prediction| on the first data seen.
    p : group marginals ordered like ``classifier.classes_`` (array or ``{label: p}``); ``None`` calibrates them
        on the unlabeled data in ``fit`` (required for ``partial_fit``).
    backend : ``"auto"`` (default): the certified exact dual (L-BFGS-B, eq. (5)) when the points times the grid
        size are at most 5e6 (it is then faster than the stochastic default and exact), the stochastic backend
        above; or ``"exact"`` / ``"stochastic"``.
    method, T, batch_size, oracle, mu, inner, variant, stop : options of the stochastic backend. ``stop="checks"``
        (the default, ``None``, except with ``variant="reference"``): rounds of the method until the judge's checks
        pass, ``T`` a cap on the sampled points (default 1e8), ``batch_size`` doubling from 4 unless given;
        ``stop="budget"`` (the default with ``variant="reference"``, the authors' fixed T): one run of ``T``
        stochastic gradients (default 20,000; required for ``partial_fit``, which always runs its planned T).
    clip : clip the regressor's predictions to [-B, B].
    random_state : seed of the sampling (and of ``predict(mode="sample")``).
    """

    def __init__(self, regressor, classifier, *, eps=0.01, pairwise=False, L=None, B=None, beta=None, p=None, backend="auto",
                 method="sgd3", T=None, batch_size=None, oracle="resample", mu=None, inner="acsa2", variant="paper",
                 stop=None, clip=False, random_state=None):
        self.regressor = regressor
        self.classifier = classifier
        self.eps = eps
        self.pairwise = pairwise
        self.L = L
        self.B = B
        self.beta = beta
        self.p = p
        self.backend = backend
        self.method = method
        self.T = T
        self.batch_size = batch_size
        self.oracle = oracle
        self.mu = mu
        self.inner = inner
        self.variant = variant
        self.stop = stop
        self.clip = clip
        self.random_state = random_state

    # -- construction --------------------------------------------------------------------------------------------
    def _check_params(self) -> None:
        """Every option, whichever backend runs (an option the exact backend does not use is still refused when it
        is invalid, never ignored); eps, pairwise, L, B, beta and p are checked where the problem is built."""
        check_choice(self.backend, "backend", ("auto", "exact", "stochastic"))
        check_choice(self.method, "method (of the stochastic backend)", tuple(METHODS))
        for name in ("T", "batch_size"):
            if getattr(self, name) is not None:
                check_int(getattr(self, name), f"{name} (or None for the default)")
        check_choice(self.oracle, "oracle", ORACLES)
        if self.mu is not None and self.mu != "theory":
            check_number(self.mu, "mu (None: M / T, 'theory': 2 sigma^2 / beta, or a positive number)", low=0.0,
                         strict=True)
        check_choice(self.inner, "inner (the inner solver of SGD3)", ("acsa2", "acsa"))
        stop_rule(self.stop, self.variant)
        check_bool(self.clip, "clip")
        as_generator(self.random_state, "random_state")

    def _problem(self, X, N: int) -> Problem:
        for name, model, attr in (("regressor", self.regressor, "predict"),
                                  ("classifier", self.classifier, "predict_proba")):
            if not callable(getattr(model, attr, None)):
                raise OptionError(f"{name} must be a fitted model with {attr}(X); got {type(model).__name__}")
        rule = dp_parameters("reference", n=max(N, 2))
        L = rule["L"] if self.L is None else self.L
        beta = rule["beta"] if self.beta is None else self.beta
        B = self.B
        if B is None:
            B = float(np.max(np.abs(np.asarray(self.regressor.predict(X), dtype=float))))
            B = B if B > 0 else 1.0
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not (0 < beta < math.inf):
            raise OptionError(f"beta must be a positive finite number; got {beta!r}")
        post = GridPredictor(eta=self.regressor.predict, tau=self.classifier.predict_proba, L=L, B=B, p=self.p,
                             clip=self.clip)
        self.grid_, self.beta_, self.B_ = post.grid, float(beta), B
        return Problem(Minimize(squared_risk(post)), [dp_gap(post, pairwise=self.pairwise) <= self.eps],
                       entropy=1.0 / beta)

    def _options(self) -> dict:
        return {"method": self.method, "batch_size": self.batch_size, "mu": self.mu, "inner": self.inner,
                "variant": self.variant}

    # -- fitting ----------------------------------------------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None):
        """Solve the dual (5) on the unlabeled points ``X`` (``y`` is ignored): exactly or stochastically, see
        ``backend``. A result the judge does not accept (violation or certificate beyond its tolerance) gives a
        ``ConvergenceWarning`` with the numbers; ``status_`` says which."""
        self._check_params()
        X, n = _points(X)
        problem = self._problem(X, n)
        backend = self.backend
        if backend == "auto":
            backend = "exact" if n * len(self.grid_) <= CERTIFY_MAX else "stochastic"
        options = {"method": "lbfgs"} if backend == "exact" else \
            {"seed": self.random_state, "T": self.T, "oracle": self.oracle, "stop": self.stop, **self._options()}
        try:
            self.result_ = problem.solve(backend=backend, data=X, sample_weight=sample_weight, **options)
        except InfeasibleError as exc:
            hint = ("" if self.p is None else " With this estimator: p=None calibrates the marginals on the unlabeled "
                    "data, which makes every eps feasible.")
            raise InfeasibleError(str(exc) + hint) from None
        self._stream = None
        self._set(self.result_.variables["Lambda"] - self.result_.variables["V"], self.result_.metrics["p"], problem)
        self.status_ = self.result_.status
        warn_if_not_ok(self, self.result_)
        return self

    def partial_fit(self, X, y=None):
        """Feed one batch of a stream of unlabeled points (in order); the duals are updated in place."""
        X, _ = _points(X)
        if getattr(self, "_stream", None) is None:
            self._check_params()
            if self.T is None:
                raise OptionError("partial_fit needs T= (the total number of stream points to use): SGD3 and AC-SA^2 "
                                  "plan their stages by it")
            if self.p is None:
                raise OptionError("partial_fit needs p= (the group marginals, ordered like classifier.classes_): a "
                                  "stream cannot be calibrated on points that have not arrived")
            if self.oracle not in ("resample", "stream"):
                raise OptionError("partial_fit reads the stream in order (oracle='stream')")
            problem = self._problem(X, self.T)
            self._stream = StreamFit(problem.family, self.T, seed=self.random_state, stop="budget", **self._options())
            self._problem_ = problem
            self.status_ = "unverified"
        self._stream.push(X)
        self._set(self._stream.run.output[0] - self._stream.run.output[1], self._stream.p, self._problem_)
        if self._stream.run.done and self.status_ == "unverified":   # the planned T points are used: judge once
            self._judge_stream()
        return self

    def _judge_stream(self) -> None:
        """The judged result of the stream run (on the reservoir sample of the points seen), as ``fit`` keeps it."""
        family = self._problem_.family
        start = time.perf_counter()
        solution = self._stream.solution()
        evaluation, checks = judge_solution(family, solution, "stochastic")
        self.result_ = Result.from_parts(backend="stochastic", method=self.method, family=family.name,
                                         seed=self.random_state if isinstance(self.random_state, int) else None,
                                         solution=solution, evaluation=evaluation,
                                         timings={"judge": time.perf_counter() - start},
                                         problem_text=str(self._problem_), checks=[c.to_dict() for c in checks])
        self.status_ = self.result_.status
        warn_if_not_ok(self, self.result_)

    def _set(self, D, p, problem) -> None:
        post = problem.family.post
        self.p_ = np.asarray(p, dtype=float)
        self.dual_ = D = group_duals(D, self.p_.shape[0], problem.family.pairwise)
        self.predictor_ = DPPredictor(post.grid, D, self.p_, self.beta_, post, "regression", post.B)

    # -- prediction -------------------------------------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "predictor_"):
            raise OptionError("this DemographicParityPostProcessor is not fitted yet: call fit(X_unlabeled) or "
                              "partial_fit(X_batch)")

    def predict_proba(self, X) -> np.ndarray:
        """pi(. | x) over the grid ``grid_`` for every row of X: shape (n, 2L + 1) (eq. (7))."""
        self._check_fitted()
        return self.predictor_.predict_proba(_points(X)[0])

    def predict(self, X, mode: str = "mean", seed=None) -> np.ndarray:
        """The mean (default), mode or a sample (seeded by ``seed``, default ``random_state``) of pi(. | x)."""
        self._check_fitted()
        return self.predictor_.predict(_points(X)[0], mode=mode, seed=self.random_state if seed is None else seed)


def _points(X):
    """(X, number of rows) of unlabeled points: a scipy sparse matrix (e.g. a OneHotEncoder's output) is densified
    after the estimators' memory check; anything that is not a table of points is refused naming X."""
    X = densify(X)
    if hasattr(X, "dask") and hasattr(X, "chunks"):       # Dask-backed points: validated by Dataset.from_dask
        return X, int(X.shape[0])
    check_array_input(X, "X")
    shape = np.shape(X)
    if len(shape) != 2 or shape[0] == 0:
        raise DataError(f"X must be a 2-D array of unlabeled points (n_points, n_features) with at least one row; "
                        f"got shape {shape}" + (". Use X.reshape(-1, 1) for a single feature" if len(shape) == 1
                                                else ""))
    return X, shape[0]
