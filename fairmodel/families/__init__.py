"""Reductions: one per problem family, each turning a canonical declaration into programs for the exact and
the stochastic backends, and judging candidates. Importing this package registers them all; the registry
(:mod:`.registry`) orders them by priority, not by import order."""
from . import auc, convex, dp, gdro, partial, strategic_dro  # noqa: F401
