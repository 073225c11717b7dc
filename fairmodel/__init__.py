"""fairmodel: fair and robust learning with one declaration, two lowerings (exact CVXPY programs and
scalable stochastic methods from the literature), and one judge.

>>> import fairmodel as fm
>>> data = fm.datasets.load_adult(sensitive="race")
>>> w = fm.Weights(data.n_features, radius=5.0)
>>> risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
>>> prob = fm.Problem(fm.Minimize(fm.max(risks)))
"""
from . import datasets, metrics
from .crosscheck import CrossCheckReport, crosscheck
from .data import Batch, Dataset, Groups
from .errors import (DataError, ExpressionTypeError, FairmodelError, InfeasibleError, ModelError, OptionError,
                     ResultFileError, SolverError, UnsupportedProblemError)
from .expressions import (Parameter, Weights, group_mean, group_optimal, hinge_loss, logistic_loss, max, mean, norm,
                          parameter, softmax_loss, squared_loss, sum_squares)
from .judge import Evaluation, judge
from .problem import Inequality, Minimize, Problem
from .results import Result, load_result
from .sweep import Frontier, sweep

# --- DP post-processing exports (issue 3) ---

# --- AUC fairness exports (issue 4) ---
from .fairness.auc import auc_gap, auc_loss
from .models import SigmoidMLP

# --- partial fairness exports (issue 5) ---
from .fairness.partial import dc, partial_dp, weak_partial_dp, with_group_interactions

# --- min-max / strategic DRO exports (issue 6) ---
from .domains import Ball, Box, Product, Simplex, TruncatedCone
from .saddle import SaddleProblem
from .strategic import strategic_score, wasserstein_worst_case

__version__ = "0.1.0"

__all__ = [
    "Batch", "crosscheck", "CrossCheckReport", "DataError", "Dataset", "datasets", "Evaluation",
    "ExpressionTypeError", "FairmodelError", "Frontier", "group_mean", "group_optimal", "Groups", "hinge_loss",
    "Inequality", "InfeasibleError", "judge", "load_result", "logistic_loss", "max", "mean", "metrics",
    "Minimize", "ModelError", "norm", "OptionError", "Parameter", "parameter", "Problem", "Result",
    "ResultFileError", "softmax_loss", "SolverError", "squared_loss", "sum_squares", "sweep",
    "UnsupportedProblemError", "Weights",
]
__all__ += ["Ball", "Box", "Product", "SaddleProblem", "Simplex", "TruncatedCone",  # issue 6
            "strategic_score", "wasserstein_worst_case"]
__all__ += ["SigmoidMLP", "auc_gap", "auc_loss"]  # issue 4
__all__ += ["dc", "partial_dp", "weak_partial_dp", "with_group_interactions"]  # issue 5
