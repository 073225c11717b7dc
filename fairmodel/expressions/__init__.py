"""The declaration language: variables, atoms and their facts; no CVXPY and no solver.

:mod:`.core` holds the node base class, constants, parameters and the arithmetic (sums, scalar and data-vector
products, absolute values, constraints); :mod:`.variables` the model parameters and their scores;
:mod:`.models` the network score; :mod:`.atoms` one module per group of atoms; :mod:`.canonicalize` the
normal form on which problems are recognized.
"""
from .atoms.aggregates import (GroupMean, GroupOptimal, Max, Mean, Min, Pos, Sum, group_mean, group_optimal, max,
                               mean, min, pos, sum)
from .atoms.fairness import equal_opportunity_gap, equalized_odds_gap
from .atoms.fairness import selection_rate_gap
from .atoms import losses as _losses
from .atoms.losses import *  # noqa: F401,F403  (the loss constructors: losses.__all__)
from .atoms.losses import HingeLoss, LogisticLoss, Loss, SoftmaxLoss, SquaredLoss
from .atoms.norms import Norm, SumSquares, norm, sum_squares
from .core import (Abs, Add, Constant, Expr, Inequality, Minimize, Multiply, Parameter, ScalarMul, abs, as_expr,
                   multiply, parameter)
from .evaluate import Env, evaluate, value_and_grad
from .variables import LinearScore, SampleScore, Weights

__all__ = [
    "Abs", "abs", "Add", "as_expr", "Constant", "Env", "equal_opportunity_gap", "equalized_odds_gap", "evaluate",
    "Expr", "group_mean", "group_optimal",
    "GroupMean", "GroupOptimal", "HingeLoss", "Inequality", "LinearScore",
    "LogisticLoss", "Loss", "max", "Max", "mean", "Mean", "min", "Min", "Minimize", "multiply", "Multiply", "norm",
    "Norm", "parameter", "Parameter", "pos", "Pos", "SampleScore", "ScalarMul", "SoftmaxLoss",
    "SquaredLoss", "sum", "Sum", "sum_squares", "SumSquares", "value_and_grad", "Weights", *_losses.__all__,
    "selection_rate_gap",
]
