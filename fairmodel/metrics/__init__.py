"""Fairness and accuracy metrics usable on any model's scores or predictions (ours or a user's).

One module per family; this package re-exports their public functions (``fm.metrics.<name>``).
"""

# DP post-processing metrics (issue 3)

# AUC fairness metrics (issue 4)

# partial fairness metrics (issue 5)
from .partial import PartialParity, partial_dp, rank_curve, weak_partial_dp  # noqa: E402,F401

# strategic classification metrics (issue 6)
