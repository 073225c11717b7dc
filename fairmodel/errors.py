"""Error types of fairmodel.

Every error a user can cause with bad input is a subclass of ``ValueError`` or ``TypeError`` so that
ordinary ``except ValueError`` code keeps working; the message says what is wrong and how to fix it.
"""
from __future__ import annotations


class FairmodelError(Exception):
    """Base class of all errors raised on purpose by fairmodel."""


class DataError(FairmodelError, ValueError):
    """Invalid data: shapes, lengths, non-finite values, empty groups, labels outside a loss's domain."""


class ModelError(FairmodelError, ValueError):
    """Invalid model or problem declaration (a bad parameter value, a malformed expression)."""


class ExpressionTypeError(FairmodelError, TypeError):
    """An operand of the wrong type was given to a DSL atom or operator."""


class UnsupportedProblemError(FairmodelError, ValueError):
    """The declared problem is valid DSL but no backend supports it; the message names the expression."""


class OptionError(FairmodelError, ValueError):
    """Unknown backend, method, solver or option, or an option with an invalid value."""


class InfeasibleError(FairmodelError, ValueError):
    """The problem has no feasible point (for example a fairness budget that cannot be met)."""


class SolverError(FairmodelError, RuntimeError):
    """A numerical solver failed; ``status`` holds the solver's own status string."""

    def __init__(self, message: str, status: str | None = None):
        super().__init__(message)
        self.status = status


class ResultFileError(FairmodelError, ValueError):
    """A saved result could not be read: missing, corrupt, or not written by fairmodel."""


class SlowSolveWarning(UserWarning):
    """An exact program fits in memory but its solve is estimated to take long; the message says how long and
    names the faster alternative."""


class ResourceLimitError(OptionError):
    """A program would need more memory than this machine has (estimated before anything is allocated); the message
    states the estimate and names the scalable alternative. ``estimate`` holds the estimated bytes."""

    def __init__(self, message: str, estimate: float | None = None):
        super().__init__(message)
        self.estimate = estimate
