"""fairmodel: fair and robust learning with one declaration, two lowerings (exact CVXPY programs and
scalable stochastic methods from the literature), and one judge.

>>> import fairmodel as fm
>>> data = fm.datasets.load_adult(sensitive="race")
>>> w = fm.Weights(data.n_features, radius=5.0)
>>> risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
>>> prob = fm.Problem(fm.Minimize(fm.max(risks)))

This module only re-exports the public names; docs/architecture.md shows the layers they come from.
"""
from . import metrics
from .data import datasets
from .utilities.threads import set_threads, thread_limit, threads
from ._version import __version__ as __version__
from .crosscheck import CrossCheckReport, crosscheck
from .data.dataset import Batch, Dataset, Groups
from .data.dask_dataset import DaskDataset  # registers Dataset.from_dask / from_parquet (Dask itself loads on first use)
from .sweeps.dp import dp_sweep
from .errors import (DataError, ExpressionTypeError, FairmodelError, InfeasibleError, ModelError, OptionError,
                     ResourceLimitError, ResultFileError, SlowSolveWarning, SolverError, UnsupportedProblemError)
from .expressions import (Constant, Parameter, Weights, abs, equal_opportunity_gap, equalized_odds_gap, group_mean,
                          group_optimal, max, mean, min, multiply, norm, parameter, pos, sum, sum_squares)
from .expressions.atoms import losses as _losses
from .expressions.atoms.losses import *  # noqa: F401,F403  (every loss constructor: fm.logistic_loss, ...)
from .expressions.atoms.auc import auc_gap, auc_loss
from .expressions.atoms.fairness import selection_rate_gap
from .expressions.atoms.dp import DPPredictor, dp_gap, expected_cost, squared_risk
from .expressions.atoms.partial import dc, partial_dp, weak_partial_dp, with_group_interactions
from .expressions.atoms.strategic import strategic_score, wasserstein_worst_case
from .expressions.grid import GridPredictor
from .expressions.models import SigmoidMLP
from .families.dp_runs import dp_parameters
from .results.judge import judge
from .metrics.assessment import Assessment, assess
from .families.base import Evaluation
from .oracles.domains import Ball, Box, Product, Simplex, TruncatedCone
from .problem import Inequality, Minimize, Problem
from .results.result import Result, load_result
from .minmax import SaddleProblem
from .sweeps.frontier import Frontier, sweep
from .frontends.problemfile import ProblemFile, load_problem


_ESTIMATORS = ("DemographicParityPostProcessor", "FairAUCClassifier", "FairLogisticRegression", "GroupDROClassifier",
               "PartialFairnessClassifier", "StrategicRobustClassifier")
_ESTIMATORS += ("FairRateClassifier", "GroupThresholdPostProcessor")


def __getattr__(name):
    """scikit-learn is an optional extra: the estimators load from ``fairmodel.estimators`` on first use."""
    if name in _ESTIMATORS:
        from . import estimators   # an optional dependency (scikit-learn), not a cycle: estimators import below
        return getattr(estimators, name)
    raise AttributeError(f"module 'fairmodel' has no attribute {name!r}")


__all__ = [
    # data and results
    "Batch", "DaskDataset", "Dataset", "datasets", "Groups", "load_result", "Result",
    # problem files (the TOML files of the command line)
    "load_problem", "ProblemFile",
    # the language: variables, losses, atoms, problems
    "abs", "Constant", "dc", "equal_opportunity_gap", "equalized_odds_gap", "group_mean", "group_optimal",
    "Inequality", "max", "mean", "min", "Minimize", "multiply", "norm", "Parameter",
    "parameter", "pos", "Problem", "SigmoidMLP", "sum", "sum_squares", "Weights", *_losses.__all__,
    # family atoms
    "auc_gap", "auc_loss", "DPPredictor", "dp_gap", "dp_parameters", "dp_sweep", "expected_cost", "GridPredictor",
    "partial_dp", "squared_risk", "strategic_score", "wasserstein_worst_case", "weak_partial_dp",
    "with_group_interactions",
    "selection_rate_gap",
    # min-max problems and their domains
    "Ball", "Box", "Product", "SaddleProblem", "Simplex", "TruncatedCone",
    # assessment of any model
    "assess", "Assessment",
    # judging, cross-checks, sweeps
    "crosscheck", "CrossCheckReport", "Evaluation", "Frontier", "judge", "metrics", "sweep",
    # BLAS/OpenMP threads of the solvers and the judge
    "set_threads", "thread_limit", "threads",
    # errors
    "DataError", "ExpressionTypeError", "FairmodelError", "InfeasibleError", "ModelError", "OptionError",
    "ResourceLimitError", "ResultFileError", "SlowSolveWarning", "SolverError", "UnsupportedProblemError",
    # scikit-learn estimators (optional extra, imported lazily)
    *_ESTIMATORS,
]
