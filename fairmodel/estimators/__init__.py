"""scikit-learn estimators (need the ``sklearn`` extra: scikit-learn and pandas).

Each estimator solves a fairmodel problem in ``fit`` and keeps the judged :class:`fairmodel.Result` as
``result_``. They follow scikit-learn's conventions (parameters in ``__init__``, ``random_state``,
fitted attributes ending with ``_``) and take the sensitive attribute as ``sensitive_features=`` in
``fit``. Exemptions from ``check_estimator`` are listed in ``CHECK_EXEMPTIONS`` with their reasons.

* ``GroupDROClassifier``: group DRO or MERO with the logistic loss (``docs/gdro.md``).
* ``FairAUCClassifier``: AUC maximization under an AUC-fairness constraint; ``predict`` thresholds the score
  at the threshold of best training accuracy, no ``predict_proba``; ``fit`` takes ``sample_weight`` (pair (i, j)
  weighted by w_i w_j) (``docs/auc_fairness.md``).
* ``PartialFairnessClassifier``: regularized logistic regression under (weak) partial demographic parity in
  a rank band (``docs/partial_fairness.md``).
* ``FairLogisticRegression``: weighted logistic regression under the equal-opportunity or equalized-odds
  surrogate of Donini et al. 2018; ``fit`` takes ``sample_weight`` (``docs/assessment.md``).
* ``StrategicRobustClassifier``: logistic classifier robust to strategic responses and Wasserstein shifts; it
  has no sensitive attribute and refuses ``sensitive_features``; ``fit`` takes ``sample_weight`` (the ball around
  the weighted empirical distribution) (``docs/minmax.md``).

* ``FairRateClassifier``: weighted logistic regression whose decisions meet a bound on the true (0/1) gap of the
  groups' selection, true-positive or false-positive rates (the ramp surrogate solved by IDCA, its bound lowered
  until the true training rates meet eps); K groups, intersections, ``sample_weight`` on the loss and the rates
  (``docs/assessment.md``).

``DemographicParityPostProcessor`` is a post-processor of fitted models: it never sees S (only unlabeled
points in ``fit``), and its constructor takes the fitted models, so ``check_estimator`` does not apply.

``GroupThresholdPostProcessor`` post-processes any classifier's scores by group-specific randomized thresholds
(Hardt, Price, Srebro 2016), an exact LP; unlike the DP post-processor it needs ``sensitive_features=`` in
``predict`` as well as in ``fit`` (``docs/thresholds.md``).
"""
from .auc import FairAUCClassifier
from .dp import DemographicParityPostProcessor
from .gdro import GroupDROClassifier
from .logistic import FairLogisticRegression
from .partial import PartialFairnessClassifier
from .rates import FairRateClassifier
from .strategic import StrategicRobustClassifier
from .thresholds import GroupThresholdPostProcessor

# estimator class name -> {check name: reason} (passed to check_estimator's expected_failed_checks).
# None is needed: check_estimator calls fit(X, y) without sensitive_features, and then FairAUCClassifier and
# PartialFairnessClassifier fit their documented unconstrained models (AUC maximization; regularized logistic
# regression); their constrained paths are tested in tests/test_estimators.py.
CHECK_EXEMPTIONS: dict = {
    "GroupDROClassifier": {
        "check_sample_weight_equivalence_on_dense_data":
            "weighted group risks are solved by the generic convex reduction and repeated rows by ALEG: with the "
            "default stochastic backend the two fits agree to the methods' optimization accuracy, not to 1e-7; "
            "tests/test_assessment_estimators.py checks the equivalence of the exact programs at 1e-4"},
    "FairAUCClassifier": {
        "check_sample_weight_equivalence_on_dense_data":
            "weights and repeated rows give the same moment-form program (the weighted means and covariances are "
            "equal); the conic solver reaches both to about 1e-7 relative, not to the check's 1e-7 with atol 1e-9; "
            "tests/test_weighted_auc.py checks the programs and the judge at 1e-8"},
    "FairLogisticRegression": {
        "check_sample_weight_equivalence_on_dense_data":
            "fits with weights and with repeated rows agree to the conic solver's accuracy (about 1e-5 relative on "
            "predict_proba), not to the check's 1e-7; tests/test_assessment_estimators.py checks the equivalence at "
            "1e-4"},
    "PartialFairnessClassifier": {
        "check_sample_weight_equivalence_on_dense_data":
            "without groups the fit is one CVXPY program: weights and repeated rows agree to the conic solver's "
            "accuracy, not to 1e-7; tests/test_assessment_estimators.py checks the equivalence at 1e-4"},
    "StrategicRobustClassifier": {
        "check_sample_weight_equivalence_on_dense_data":
            "the weighted and the repeated-row programs (E1) have the same optimum; the conic solver reaches both to "
            "about 1e-6 in the weights, not to the check's 1e-7; tests/test_weighted_strategic.py checks the "
            "equivalence of the fits at 1e-5 and of the programs solved tightly at 1e-7"},
    "FairRateClassifier": {},    # passes every check
}
# the sparse variant of the weight-equivalence check fails for the same reason (sparse X is densified)
for _checks in CHECK_EXEMPTIONS.values():
    if "check_sample_weight_equivalence_on_dense_data" in _checks:
        _checks["check_sample_weight_equivalence_on_sparse_data"] = (
            _checks["check_sample_weight_equivalence_on_dense_data"] + " (sparse X is densified first)")

__all__ = ["DemographicParityPostProcessor", "FairAUCClassifier", "FairLogisticRegression", "GroupDROClassifier",
           "PartialFairnessClassifier", "StrategicRobustClassifier", "CHECK_EXEMPTIONS"]
__all__ += ["FairRateClassifier", "GroupThresholdPostProcessor"]
