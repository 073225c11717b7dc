# %% [markdown]
# # Session 6: strategic classification, robust to distribution shift
#
# Maheshwari et al. (AISTATS 2022) train a classifier against agents who respond to it: an agent labelled $-1$
# moves its strategic features to $b(x; w) = x + \zeta M w$, so its score is $\langle b(x; w), w\rangle =
# \langle x, w \rangle + \zeta \|Mw\|^2$. The learner minimizes the worst-case logistic risk over a type-1
# Wasserstein ball of radius $\delta$ around the shifted data (cost $\|x - x'\| + \kappa |y - y'|$), a
# convex-concave saddle problem (Theorem 5.3, corrected) that a zeroth-order method solves by querying the agents'
# responses only.
#
# The problem is that of `examples/problems/strategic_dro_synthetic.toml` (the paper's synthetic data, the first
# five features strategic, $\zeta = 0.05$, $\delta = 0.1$, $\kappa = 0.5$), declared in Python on 300 points
# instead of 1,000 so that the session runs in seconds (the file is its command-line form:
# `fairmodel describe examples/problems/strategic_dro_synthetic.toml`). Background: the "Min-max and strategic
# DRO" page.

# %%
import warnings

import numpy as np

import fairmodel as fm

points = fm.datasets.make_strategic_synthetic(n=1100, seed=0)
data, test = points.take(np.arange(300)), points.take(np.arange(300, 1100))   # 300 to train, 800 held out


def strategic_problem(radius=0.1, zeta=0.05, variant="corrected"):
    w = fm.Weights(data.n_features)
    score = fm.strategic_score(data, w, strategic_features=range(5), zeta=zeta)
    loss = fm.logistic_loss(score, data.y)
    return fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=radius, label_cost=0.5, variant=variant)))


prob = strategic_problem()
print(data)

# %% [markdown]
# ## Question 1
#
# `fairmodel describe` (here `prob.describe()`). The paper's eq. (7) is unbounded below for a small radius: find the
# term the corrected saddle function adds, and check with `variant = "paper"` that the library warns.

# %%
print(prob.describe())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 2
#
# `fairmodel crosscheck` (here `fm.crosscheck`). The stochastic method only queries function values (zeroth
# order). Read the duality gap of its output; how many function queries did it use?

# %%
report = fm.crosscheck(prob, seed=0)
print(report.to_markdown())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 3
#
# Sweep the radius: `fairmodel sweep my.toml --param problem.wasserstein_radius --values 0.05,0.1,0.2,0.3,0.4`. At
# which radius does the robust model become $w = 0$, and why (compare the worst-case risk with $\log 2$)?

# %%
radii = [0.05, 0.1, 0.2, 0.3, 0.4]
frontier = fm.sweep(strategic_problem, radii, param="radius")
norms = [float(np.linalg.norm(r.variables["w"])) for r in frontier.results]
print({radius: (round(r.objective, 4), round(norm, 3)) for radius, r, norm in zip(radii, frontier.results, norms)})

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 4
#
# Increase `zeta` (the agents' strategic power) and compare the accuracy on strategically shifted data of the
# robust model with that of plain logistic regression (see
# [`examples/strategic_dro.py`](../../examples/strategic_dro.py); here on the 800 held-out points,
# `fm.metrics.strategic_accuracy`).

# %% [markdown]
# *Your answer:*

# %%
# Your code:
