"""Numerical oracles: one copy of each formula, in NumPy, with no DSL and no solver.

The declarations (``fairmodel.expressions``) compute their values and gradients through these objects, and
the exact backend, the stochastic algorithms and the judge use the same ones, so each formula exists once:
pointwise losses and the linear-model loss with a design matrix, intercept and sample weights
(:mod:`.losses`), group risks (:mod:`.group_risks`), projections onto domains (:mod:`.domains`), the AUC pair
risks (:mod:`.pairs`), the dual of DP post-processing (:mod:`.dp_dual`), the difference-of-convex program of
partial fairness (:mod:`.dc`), the strategic score and the Wasserstein saddle function (:mod:`.strategic`), and
the oracle protocols that the stochastic algorithms take (:mod:`.protocols`).
"""
