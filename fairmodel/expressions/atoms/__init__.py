"""Atoms, one module per group: losses, aggregates, norms, and the atoms of the paper families."""
