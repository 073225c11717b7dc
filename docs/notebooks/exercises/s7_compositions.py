# %% [markdown]
# # Session 7: compositions of the atoms
#
# The paper families are reached through their atoms, but atoms also compose by the rules of disciplined convex
# programming: any convex declaration has an exact CVXPY program and a generic stochastic method (variance-reduced
# stochastic mirror-prox on its Lagrangian, the algorithm of ALEG of Yu, Cai, Jiang, Zhang 2024 with several
# simplices), both judged alike. This session declares group DRO under equal opportunity (the linear surrogate of
# Donini, Oneto, Ben-David, Shawe-Taylor, Pontil 2018), checks that equivalent declarations are recognized alike,
# and relates bounded group loss (Agarwal, Dudik, Wu 2019) to group DRO. Law School by race, a 3,000-row subsample
# (`examples/problems/compositions_*.toml` use all 20,800 rows). Background: the "Modeling language" page.

# %%
import numpy as np

import fairmodel as fm

data = fm.datasets.load_lawschool().subsample(3000, seed=0)   # bar passage (+1 / -1), groups = race
w = fm.Weights(data.n_features, radius=5.0, intercept=True)
s = data.score(w)
loss = fm.logistic_loss(s, data.y)
risks = fm.group_mean(loss, data.groups)
eo = fm.Problem(fm.Minimize(fm.max(risks)), [fm.equal_opportunity_gap(s, data) <= 0.05])
print(data)

# %% [markdown]
# ## Question 1
#
# `print(eo.describe())`. Which reductions accept the problem, and why does the group-DRO family decline it? Write
# the equal-opportunity constraint by hand with `fm.group_mean(s, data.groups, where=data.y > 0)`, `fm.max` and
# `fm.min`, and check that it is the same constraint.

# %%
print(eo.describe())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 2
#
# Cross-check the composition: `fm.crosscheck(eo, seed=0)`. Which method does each backend use, and what does the
# Lagrangian gap of the stochastic result bound?

# %%
report = fm.crosscheck(eo, seed=0)
print(report.to_markdown())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 3
#
# Equivalent declarations: solve `fm.max(risks)` and `2 * fm.max(risks) + 1` with the stochastic backend. Which
# family recognizes each, and how are the two optima related?

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 4
#
# Bounded group loss (Agarwal, Dudik, Wu 2019): minimize the mean loss subject to `fm.max(risks) <= r`. What is the
# smallest bound $r$ for which the problem is feasible? Check it with the group-DRO optimum.

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 5
#
# Declare `fm.Problem(fm.Minimize(fm.mean(loss)), [fm.min(risks) >= 0.5])` and read the error. Which rule does the
# declaration break, and why is the feasible set not convex?

# %% [markdown]
# *Your answer:*

# %%
# Your code:
