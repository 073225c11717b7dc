# %% [markdown]
# # Session 1: group DRO on Adult
#
# Group DRO (Yu, Cai, Jiang, Zhang 2024, eq. (2)) minimizes the largest group risk,
# $\min_{w \in W} \max_g R_g(w)$ with $R_g(w) = \frac{1}{n_g} \sum_{i \in g} \ell(x_i \cdot w, y_i)$ and
# $W = \{w : \|w\|_2 \le r\}$. This session reads the formulation, the exact program, the cross-check of the
# two backends, and compares group DRO with plain risk minimization (ERM) and with MERO.
#
# The problem file is `examples/problems/group_dro_adult.toml` on a stratified subsample of 5,000 rows (so that
# every cell runs in seconds); delete the `subsample` line for all 30,162 rows. The notebook writes it as
# `gdro.toml` and loads it; each question names the command that does the same in a terminal
# (`fairmodel describe gdro.toml` prints `prob.describe()` after the file's title and data).

# %%
from pathlib import Path

import numpy as np

import fairmodel as fm

GDRO = """
title = "Group DRO on Adult by race"

[data]
name = "adult"
target = "income"
sensitive = "race"
subsample = 5000
seed = 0

[model]
radius = 5.0

[problem]
family = "gdro"
loss = "logistic"

[solve]
backend = "exact"
seed = 0

[solve.exact]
method = "dual"
"""
Path("gdro.toml").write_text(GDRO)
gdro, data, _ = fm.load_problem("gdro.toml")
print(data)

# %% [markdown]
# ## Question 1
#
# `fairmodel describe gdro.toml`. Write the epigraph program by hand and compare it with the printed program
# structure. Which constraint's dual variables are the group weights $q$? Why do they sum to one?

# %%
print(gdro.describe())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 2
#
# `fairmodel crosscheck gdro.toml`. Read every check of the table: which one certifies that the stochastic
# solution is near-optimal without knowing the optimum? (In Python: `fm.load_problem("gdro.toml").crosscheck()`,
# or `fm.crosscheck(gdro, seed=0, exact_options={"method": "dual"})`.)

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 3
#
# Copy the file and set `[problem] family = "erm"`; solve it and compare the group risks with group DRO's.
# Which group pays for the fairer worst case? (The group-DRO problem judges any weights:
# `gdro.evaluate(w=...)` reports every group's risk.)

# %%
Path("erm.toml").write_text(GDRO.replace('family = "gdro"', 'family = "erm"'))
erm_problem, _, _ = fm.load_problem("erm.toml")
erm = erm_problem.solve(backend="exact")
print(erm.summary())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 4
#
# Sweep the radius: `fairmodel sweep gdro.toml --param model.radius --values 0.5,1,2,5,10 --plot radius.png`.
# Explain why the objective can only decrease as the radius grows. (In Python, `fm.sweep` solves a problem built
# for each value, as the command does with each edited file.)

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 5
#
# Set `family = "mero"`. Which group now has the largest risk, and why does MERO not protect it? (Look at
# `metrics.group_optimal`: its own best risk is already high.)

# %% [markdown]
# *Your answer:*

# %%
# Your code:
