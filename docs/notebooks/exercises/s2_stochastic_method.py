# %% [markdown]
# # Session 2: the stochastic method
#
# ALEG (Yu, Cai, Jiang, Zhang 2024, Algorithm 1) solves the saddle form (3) of group DRO,
# $\min_{w \in W} \max_{q \in \Delta} \sum_g q_g R_g(w)$, by variance-reduced stochastic mirror-prox: a full pass
# at a snapshot each epoch, then minibatch steps whose gradient estimate
# $g = \nabla F(z; \xi) - \nabla F(z^s; \xi) + \nabla F(z^s)$ (eq. (22)) is exact at the snapshot $z^s$. The
# baseline is stochastic mirror descent (SMD). Group DRO on Adult by race, on a stratified subsample of 5,000 rows
# (`data.subsample(...)`: drop it for all 30,162 rows; the same cells take a few times longer).

# %%
import time

import numpy as np

import fairmodel as fm
from fairmodel.results.plotting import plot_convergence

data = fm.datasets.load_adult(sensitive="race").subsample(5000, seed=0)
w = fm.Weights(data.n_features, radius=5.0)
prob = fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
opt = prob.solve(method="dual").objective
# stop="budget": run the 40 epochs whatever the judge's checks say (a convergence study; by default a run stops
# as soon as its duality gap passes the judge's tolerance)
runs = {name: prob.solve(backend="stochastic", method=name, seed=0, epochs=40, track_output=True, stop="budget")
        for name in ("aleg", "smd")}
fig = plot_convergence(runs, x="grad_evals", y="output_objective", optimum=opt)
fig.savefig("convergence.png")

# %% [markdown]
# ## Question 1
#
# Which method reaches a max-risk gap of $10^{-3}$ with fewer gradient evaluations? Relate the answer to the
# variance of the two gradient estimators (ALEG's estimate is exact at the snapshot).

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 2
#
# Run ALEG with `batch_size=1` and with `batch_size=64` at the same number of gradient evaluations. Which is
# cheaper in wall time, and why (see the Benchmarks page, "Group DRO and MERO")?

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 3
#
# Run ALEG with `schedule_mode="theory"`. How large is the theoretical step compared with the default one, and what
# does that say about worst-case constants?

# %% [markdown]
# *Your answer:*

# %%
# Your code:
