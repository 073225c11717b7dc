"""scikit-learn estimators (need the ``sklearn`` extra: scikit-learn and pandas).

Each estimator solves a fairmodel problem in ``fit`` and keeps the judged :class:`fairmodel.Result` as
``result_``. They follow scikit-learn's conventions (parameters in ``__init__``, ``random_state``,
fitted attributes ending with ``_``) and take the sensitive attribute as ``sensitive_features=`` in
``fit``. Exemptions from ``check_estimator`` are listed in ``CHECK_EXEMPTIONS`` with their reasons.
"""
from .gdro import GroupDROClassifier

# estimator class name -> {check name: reason} (passed to check_estimator's expected_failed_checks)
CHECK_EXEMPTIONS: dict = {
    "GroupDROClassifier": {},
}

__all__ = ["GroupDROClassifier", "CHECK_EXEMPTIONS"]
