"""Baseline methods that the papers compare against, one module per family (``auc``: AUC fairness)."""
