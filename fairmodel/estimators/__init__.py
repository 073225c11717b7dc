"""scikit-learn style estimators (scikit-learn is an optional dependency: import the submodules on use)."""
