# %% [markdown]
# # Session 3: AUC under AUC-based fairness constraints
#
# Yao, Lin, Yang (AISTATS 2023) maximize the AUC under a constraint on the difference of two AUCs between
# subsets of the data. With the square surrogate $\ell(t) = c_1 (t - c_2)^2$ and
# $L(S, S') = \frac{1}{|S||S'|} \sum_{i \in S} \sum_{j \in S'} \ell(h_i - h_j)$, the surrogate problem (6) is
#
# $$\min_{\|w\| \le R} L(D^+, D^-) \quad \text{s.t.} \quad L(G_1', G_1) + L(G_2, G_2') \le 1 + \kappa, \quad
# L(G_2', G_2) + L(G_1, G_1') \le 1 + \kappa.$$
#
# The problem file is `examples/problems/auc_fairness.toml` (Adult by sex, intra-group AUC gap at most 0.05) on a
# 2,000-row subsample instead of 5,000, with a shorter stochastic budget (`T = 500` steps per level-set
# oracle call) so that the session runs in seconds. The notebook writes it as `auc.toml` and loads it; each
# question names the command that does the same in a terminal. Background: the "AUC fairness" page.

# %%
from pathlib import Path

import numpy as np

import fairmodel as fm

AUC = """
title = "AUC under intra-group AUC fairness on Adult (kappa = 0.05)"

[data]
name = "adult"
target = "income"
sensitive = "sex"
subsample = 2000
seed = 0

[model]
radius = 10.0

[problem]
family = "auc_fairness"
kind = "intra"
kappa = 0.05
c1 = 0.5
c2 = 1.0

[solve]
backend = "exact"
seed = 0

[solve.stochastic]
method = "sfls"
T = 500
"""
Path("auc.toml").write_text(AUC)
prob, data, _ = fm.load_problem("auc.toml")
print(data)


def auc_problem(radius, kappa=0.05, c1=0.5, c2=1.0):
    """The file's problem declared in Python on the same data (its [problem] table is this declaration)."""
    s = data.score(fm.Weights(data.n_features, radius=radius))
    return fm.Problem(fm.Minimize(fm.auc_loss(s, data.y, c1=c1, c2=c2)),
                      [fm.auc_gap(s, data, kind="intra", c1=c1, c2=c2) <= kappa])

# %% [markdown]
# ## Question 1
#
# `fairmodel describe auc.toml`. The exact program has only 3 scalar constraints (the norm ball and the pair
# (6)), whatever the number of positive-negative pairs the surrogate sums over. Which identity turns the pairwise
# square loss into group means and covariances (the "moment form")? Why would the hinge loss not allow it?

# %%
print(prob.describe())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 2
#
# The printed interval $I$ bounds the auxiliary variables $a, b, \alpha$. Derive the bound from $\|w\| \le R$ and
# the group means, then change `[model] radius` and check that $I$ scales with it.

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 3
#
# `fairmodel crosscheck auc.toml`. The stochastic method (SFLS) solves a sequence of level-set problems; explain why
# the bracket `[f*_lower, f0(w)]` it reports is a certificate, and which of its two ends comes from weak duality.
# (In Python: `fm.crosscheck(prob, seed=0, stochastic_options={"method": "sfls"})`.)

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 4
#
# Sweep the budget: `fairmodel sweep auc.toml --param problem.kappa --values 0.02,0.05,0.1,0.2 --plot kappa.png`.
# Compare the surrogate gap (the constraint column) with the **true** intra-group AUC gap (`fairmodel solve
# auc.toml --json`, field `result.metrics["c0:intra"]`). When can the surrogate be satisfied while the true gap
# is not? (In Python, a budget declared with `fm.parameter` is swept by `prob.sweep`, re-solving the compiled
# program.)

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 5
#
# Set `c2 = 2.0` with `c1 = 0.5` and `kappa = 0.0`. The solve now stops with an infeasibility error: check the
# condition $2 c_1 c_2^2 < 1 + \kappa$ by hand (the "AUC fairness" page, "When the surrogate is infeasible").

# %%
try:
    auc_problem(10.0, kappa=0.0, c1=0.5, c2=2.0)   # the file with c2 = 2.0 and kappa = 0.0
except fm.InfeasibleError as error:
    print("InfeasibleError:", error)
else:
    raise AssertionError("the problem should be refused")

# %% [markdown]
# *Your answer:*

# %%
# Your code:
