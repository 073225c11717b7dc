"""Score models beyond the linear score: a two-layer sigmoid network, and the forward/backward adapters that
stochastic methods use for any score model (linear or network).

Declaring a network is like declaring linear weights; its score replaces ``data.score(w)``::

    net = fm.SigmoidMLP(data.n_features, hidden=10, radius=20.0)
    s = data.score(net)          # h(x) = sigmoid(v . sigmoid(W x + b) + c), a per-sample expression

The network's score is not convex in its weights (the weakly convex case of the AUC-fairness paper,
Assumption 4): exact backends refuse it, and the AUC-fairness family solves it with IQRC (Algorithm 3).
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..data.dask_dataset import concatenate_rows
from ..data.dataset import Dataset
from ..data.passes import row_parts
from ..errors import ExpressionTypeError, ModelError
from ..oracles.losses import with_intercept
from ..utilities.validate import as_generator, check_int
from .core import Expr
from .variables import LinearScore, SampleScore, Weights, define_rows

OUTPUTS = ("sigmoid", "linear")


class SigmoidMLP(Weights):
    """Parameters of a two-layer network with ``hidden`` sigmoid units (the weakly convex model of the AUC-fairness
    experiments, Yao, Lin, Yang, AISTATS 2023, Section 6).

    h(x) = sigmoid(v . sigmoid(W x + b) + c) for ``output="sigmoid"`` (scores in (0, 1), the default,
    so that the interval I = [-1, 1] of the AUC-fairness reformulation is valid), or
    v . sigmoid(W x + b) + c for ``output="linear"``.

    The parameters are one flat vector theta = (W (hidden x d, row major), b, v, c) of length
    hidden * (d + 2) + 1; ``radius`` bounds ||theta||_2 (the compact domain of the paper), ``None`` for none.
    """

    def __init__(self, n_features: int, hidden: int = 10, radius: float | None = None, *,
                 output: str = "sigmoid", name: str = "net"):
        check_int(hidden, "hidden (the number of hidden units)", error=ModelError)
        if output not in OUTPUTS:
            raise ModelError(f"output must be one of {', '.join(OUTPUTS)}; got {output!r}")
        check_int(n_features, "n_features", error=ModelError)
        size = int(hidden) * (int(n_features) + 2) + 1
        super().__init__(size, radius, name=name)
        self.n_features = int(n_features)      # the score's input dimension (Weights stores the size)
        self.hidden = int(hidden)
        self.output = output

    # -- DSL ---------------------------------------------------------------------------------------------
    def score_on(self, data: Dataset) -> "MLPScore":
        """The network's score on a dataset (what ``data.score(net)`` returns)."""
        return MLPScore(data, self)

    def domain(self, n) -> str:
        name = n.ident(self.name)
        ball = "" if self.radius is None else n.pick(f", ||{name}||_2 <= {self.radius:g}",
                                                     f",\\ \\|{name}\\|_2 \\le {n.number(self.radius)}")
        return n.pick(f"{name} in R^{self.size}", f"{name} \\in \\mathbb{{R}}^{{{self.size}}}") + ball

    # -- numerics ----------------------------------------------------------------------------------------
    def unpack(self, theta: np.ndarray):
        """(W (hidden x d), b (hidden), v (hidden), c) views of the flat parameter vector."""
        d, H = self.n_features, self.hidden
        W = theta[: H * d].reshape(H, d)
        b = theta[H * d: H * d + H]
        v = theta[H * d + H: H * d + 2 * H]
        return W, b, v, theta[-1]

    def forward(self, theta: np.ndarray, X: np.ndarray):
        """(scores h, cache for :meth:`backward`) on the rows of X."""
        W, b, v, c = self.unpack(theta)
        hidden = expit(X @ W.T + b)
        out = hidden @ v + c
        h = expit(out) if self.output == "sigmoid" else out
        return h, (X, hidden, h)

    def backward(self, theta: np.ndarray, cache, coef: np.ndarray) -> np.ndarray:
        """Gradient of sum_j coef_j h(x_j) with respect to theta (reverse mode through both layers)."""
        X, hidden, h = cache
        W, b, v, c = self.unpack(theta)
        g_out = coef * h * (1.0 - h) if self.output == "sigmoid" else coef
        g_v = hidden.T @ g_out
        g_pre = np.outer(g_out, v) * hidden * (1.0 - hidden)
        g_W = g_pre.T @ X
        return np.concatenate([g_W.ravel(), g_pre.sum(axis=0), g_v, [g_out.sum()]])

    def initial(self, seed=None, scale: float = 1.0) -> np.ndarray:
        """A random initial theta (Glorot-uniform hidden layer, output weights zero: a constant score).

        The constant-score start is the feasible x~(0) of IQRC (Algorithm 3); the random hidden layer breaks
        the symmetry that the paper's x = 0 start never breaks.
        """
        rng = as_generator(seed)
        limit = scale * np.sqrt(6.0 / (self.n_features + self.hidden))
        theta = np.zeros(self.size)
        W, _, _, _ = self.unpack(theta)
        W[...] = rng.uniform(-limit, limit, size=W.shape)
        return self.project(theta)


class MLPScore(SampleScore):
    """The per-sample score h_theta(x_i) of a :class:`SigmoidMLP` on a dataset (not convex in theta)."""

    model_type = SigmoidMLP
    constructor = "SigmoidMLP"

    @property
    def curvature(self):
        return "unknown"

    def _numeric(self, env):    # through the data source: one pass over the rows, or a gather of env.rows
        if env.rows is None:
            return concatenate_rows(row_parts(self.data, _BatchScores(self.w, False, env[self.w])))
        return self.w.forward(env[self.w], self.data.rows(env.rows))[0]

    def backprop(self, env, upstream, grads):
        X = self.data.in_memory_X("the gradient of a network's score") if env.rows is None else \
            self.data.rows(env.rows)
        theta = env[self.w]
        _, cache = self.w.forward(theta, X)
        self.w.backprop(env, self.w.backward(theta, cache, np.asarray(upstream, dtype=float)), grads)

    def render(self, n):
        define_rows(n, self.data)
        name = self.w.render(n)
        sig = self.w.output == "sigmoid"
        text = "v·sigmoid(W x + b) + c"
        tex = "v^\\top \\sigma(W x + b) + c"
        text, tex = (f"sigmoid({text})", f"\\sigma({tex})") if sig else (text, tex)
        what = f"a two-layer network with {self.w.hidden} sigmoid units"
        n.define(("mlp", self.w.name), f"h_{self.w.name}(x) = {text}: {what}, parameters {self.w.name} = (W, b, v, c)",
                 f"$h_{{{name}}}(x) = {tex}$: {what}, parameters ${name} = (W, b, v, c)$")
        return n.pick(f"h_{name}(x_i)", f"h_{{{name}}}(x_i)")


# ---------------------------------------------------------------------------------------------------
# Adapters used by stochastic methods: the same interface for a linear score and a network
# ---------------------------------------------------------------------------------------------------
class _BatchScores:
    """The scores of one chunk's rows (a picklable per-chunk function of a pass): ``net`` a :class:`SigmoidMLP`, or
    None for the linear score x . w (+ b)."""

    def __init__(self, net, intercept: bool, theta):
        self.net, self.intercept, self.theta = net, intercept, np.asarray(theta, dtype=float)

    def __call__(self, batch) -> np.ndarray:
        if self.net is not None:
            return self.net.forward(self.theta, batch.X)[0]
        return batch.X @ self.theta[:-1] + self.theta[-1] if self.intercept else batch.X @ self.theta


class LinearModel:
    """h = X theta (+ b): forward/backward on a design matrix (intercept column appended when present).

    ``X``, the in-memory design, is made on first use (chunked data refuse it: the stochastic methods then take the
    design rows of their minibatches, :meth:`design`, and the judge the scores of a pass, :meth:`batch_scores`)."""

    convex = True

    def __init__(self, score: LinearScore):
        self.w = score.w
        self.shape = score.w.shape      # what the stochastic methods read (ScoreModel protocol), not w
        self.score = score
        self._X = None

    @property
    def X(self) -> np.ndarray:
        if self._X is None:
            self._X = self.score.design()
        return self._X

    def design(self, X) -> np.ndarray:
        """The design rows of feature rows X (a column of ones appended for an intercept)."""
        return with_intercept(X, self.w.intercept)

    def batch_scores(self, theta) -> _BatchScores:
        return _BatchScores(None, self.w.intercept, theta)

    def forward(self, theta, X):
        return X @ theta, X

    def backward(self, theta, cache, coef):
        return cache.T @ coef

    def initial(self, seed=None) -> np.ndarray:
        return np.zeros(self.w.shape)


class NetworkModel:
    """Adapter of a :class:`SigmoidMLP` score (``X``: the in-memory features, refused for chunked data)."""

    convex = False

    def __init__(self, score: MLPScore):
        self.w = score.w
        self.shape = score.w.shape
        self.data = score.data

    @property
    def X(self) -> np.ndarray:
        return self.data.in_memory_X("the network's scores on every row")

    def design(self, X) -> np.ndarray:
        return X

    def batch_scores(self, theta) -> _BatchScores:
        return _BatchScores(self.w, False, theta)

    def forward(self, theta, X):
        return self.w.forward(theta, X)

    def backward(self, theta, cache, coef):
        return self.w.backward(theta, cache, coef)

    def initial(self, seed=None) -> np.ndarray:
        return self.w.initial(seed)


def score_model(score: Expr):
    """The forward/backward adapter of a score expression (linear or network), or an error naming it."""
    if isinstance(score, LinearScore):
        if score.w.n_outputs is not None:
            raise ModelError("a scalar score is needed; got matrix Weights (n_outputs set)")
        return LinearModel(score)
    if isinstance(score, MLPScore):
        return NetworkModel(score)
    raise ExpressionTypeError(f"{score} is not a model score; use data.score(w) with fm.Weights or fm.SigmoidMLP")
