"""Fairness and accuracy metrics usable on any model's scores or predictions (ours or a user's).

One module per family; this package re-exports their public functions (``fm.metrics.<name>``).
"""

# DP post-processing metrics
from .dp import ks_unfairness, mse, pmf_unfairness, randomized_risk  # noqa: F401

# AUC fairness metrics
from .auc import (auc_between, auc_fairness, auc_fairness_terms, auc_score, auc_sets,  # noqa: F401,E402
                  select_by_validation)

# partial fairness metrics
from .partial import PartialParity, partial_dp, rank_curve, weak_partial_dp  # noqa: E402,F401

# strategic classification metrics
from .strategic import (strategic_accuracy, strategic_margin, worst_case_accuracy,  # noqa: F401
                        worst_case_margin)

# group metrics and the one-call assessment
from .rates import (accuracy, balanced_accuracy, false_negative_rate, false_positive_rate, mae,  # noqa: F401,E402
                    mean_squared_error, precision, roc_auc, selection_rate, true_positive_rate)
from .assessment import Assessment, Intervals, assess  # noqa: F401,E402
from .auc_groups import GroupAUCFairness, auc_fairness_groups  # noqa: F401,E402
from .summaries import (demographic_parity_difference, demographic_parity_ratio,  # noqa: F401,E402
                        equal_opportunity_difference, equalized_odds_difference, equalized_odds_ratio)

from . import assessment as _assessment, auc_groups as _auc_groups, chunked as _chunked  # noqa: E402
from . import chunked_auc as _chunked_auc  # noqa: E402

_assessment.CHUNKED.update(_chunked.CHUNKED_ASSESS)   # fm.assess on Dask-backed inputs: sums over chunks
_auc_groups.CHUNKED.update(_chunked_auc.CHUNKED_AUC_GROUPS)   # auc_fairness_groups on Dask inputs
