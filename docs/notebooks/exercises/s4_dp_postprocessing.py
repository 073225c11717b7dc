# %% [markdown]
# # Session 4: demographic parity by post-processing (regression)
#
# Chzhen, Hebiri, Taturyan (NeurIPS 2024) post-process a fitted regressor $\hat\eta(x)$ into a randomized
# prediction $\pi(\cdot|x)$ on a grid $y_\ell = \ell B / L$ whose distribution is (within $\varepsilon$) the same
# in every group, without using the sensitive attribute $S$ at prediction time. With
# $t_s(x) = 1 - \hat\tau_s(x)/p_s$ and $\hat\tau_s(x) \approx P(S = s \mid X = x)$, the entropic problem (4) is
#
# $$\min_\pi \; \mathbb{E}\Big[\sum_\ell \pi(\ell|X) (\hat\eta(X) - y_\ell)^2\Big] + \frac{1}{\beta}
# \mathbb{E}[\Psi(\pi(\cdot|X))] \quad \text{s.t.} \quad |\mathbb{E}[\pi(\ell|X)\, t_s(X)]| \le \varepsilon_s
# \;\; \forall \ell, s.$$
#
# The problem file is `examples/problems/dp_postprocessing.toml` (Law School GPA by race: base models fitted on
# 2,000 rows, 2,000 unlabeled points, $L = 20$, $\beta = 100$, $\varepsilon = 0.01$), written as `dp.toml` and
# loaded here; each question names the command that does the same in a terminal. Background: the "DP
# post-processing" page.

# %%
from pathlib import Path

import numpy as np

import fairmodel as fm

DP = """
title = "DP post-processing of GPA on Law School (race)"

[data]
name = "lawschool"
target = "ugpa"
sensitive = "race"
subsample = 4000
seed = 0

[problem]
family = "dp_postprocessing"
train_fraction = 0.5
L = 20
B = 1.0
beta = 100
eps = 0.01

[solve]
seed = 0

[solve.stochastic]
T = 20000
"""
Path("dp.toml").write_text(DP)
prob, data, _ = fm.load_problem("dp.toml")
post = prob.family.post        # the GridPredictor the file built: eta_hat and tau_hat on the unlabeled points
print(data)

# %% [markdown]
# ## Question 1
#
# `fairmodel describe dp.toml`. The predictor never sees the sensitive attribute: where does it enter the problem
# instead?

# %%
print(prob.describe())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 2
#
# Set `beta = 0` (the LP (3)) and solve with `--backend exact`. Then set `beta = 100` again: how far apart are the
# two risks, and why does the entropic term make the prediction randomized but smooth in $x$?

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 3
#
# `fairmodel crosscheck dp.toml`. Which entry measures how far the stochastic dual point is from the exact dual's
# optimum, and why is it never negative, while the stochastic result's own objective $R_\beta$ may fall below the
# exact optimum? (In Python: `fm.crosscheck(prob, seed=0)`.)

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 4
#
# `fairmodel sweep dp.toml --param problem.eps --values 0.005,0.01,0.02,0.05,0.1 --plot eps.png`. Explain the
# shape of the risk-unfairness curve; what does `eps = 1` give? (In Python, `fm.dp_sweep` solves one problem
# per budget.)

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 5
#
# Set `task = "classification"` (copy `dp_postprocessing_multiclass.toml`): the same machinery with a cost
# matrix. Which line of the formulation changed?

# %% [markdown]
# *Your answer:*

# %%
# Your code:
