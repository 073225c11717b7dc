"""Fairness atoms of the DSL, one module per problem family (``auc``: AUC-based fairness, ...)."""
