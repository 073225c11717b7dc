# %% [markdown]
# # Session 5: partial fairness in a score band (DC constraints)
#
# He, Huang, Yao, Lin (2025) ask for demographic parity only among the scores in a band of within-group ranks.
# The rank of a score $\theta$ in group $k$ is the fraction of the group's scores above it,
# $\bar F_k(\theta) = \Pr(s > \theta \mid k)$; for a band $I = [\alpha, \beta)$ of ranks, identity (29) gives the
# distribution of the in-band scores, $G_k(\theta) = (\mathrm{clip}(\bar F_k(\theta), \alpha, \beta) - \alpha) /
# (\beta - \alpha)$, and partial demographic parity (6) is $DP^I = \max_{k, k'} \max_\theta |G_k(\theta) -
# G_{k'}(\theta)|$. The band $[0, 0.3)$ is each group's top 30% of scores; $[0.7, 1]$, the band of the examples
# (Law School, as in the paper's experiments), is each group's bottom 30%. Background: the "Partial fairness" page.

# %%
import numpy as np

import fairmodel as fm

scores = np.array([0.9, 0.8, 0.75, 0.2, 0.1, 0.85, 0.3, 0.25, 0.2, 0.05])
groups = np.array(["a"] * 5 + ["b"] * 5)
print(fm.metrics.partial_dp(scores, groups, band=(0.7, 1.0)))

# %% [markdown]
# ## Question 1
#
# Compute the partial DP gap of the snippet by hand (which scores are in each group's band of ranks
# $[0.7, 1]$, the bottom 30%?), then compare with the printed value. Why does a global-parity metric say nothing
# about this band?

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 2
#
# Write the indicator of "score above the band's threshold" as a difference of two convex ramps. Which part is
# linearized by IDCA at every outer iteration, and why does that make each subproblem convex?

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 3
#
# Run the script [`examples/partial_fairness_crosscheck.py`](../../examples/partial_fairness_crosscheck.py) with
# `--n 300` (below: the same cross-check with one start of the stochastic path and 100 outer iterations for each
# path). Both inner solvers (CVXPY and the switching
# subgradient) start from the same point: do they reach the same objective? Read the Lemma C.1 certificate
# (`nearly_kkt_eps`) and say what it guarantees and what it does not.

# %%
data = fm.datasets.load_lawschool(target="bar1", sensitive="race").subsample(300, seed=0)
data = fm.with_group_interactions(data)              # h_w(xi) = <w, (1, xi, gamma, gamma xi)> (Section 7)
w = fm.Weights(data.n_features, intercept=True)
s = data.score(w)
prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                  [fm.partial_dp(s, data.groups, band=(0.70, 1.00)) <= 0.1])
report = fm.crosscheck(prob, exact_options={"outer": 100, "certificate": True},
                       stochastic_options={"certificate": True, "starts": 1, "outer": 100}, seed=0)
print(report.to_markdown())

# %% [markdown]
# *Your answer:*

# %%
# Your code:

# %% [markdown]
# ## Question 4
#
# Write your own DC constraint `fm.dc(g, h) <= b` ($g - h \le b$ with $g$ and $h$ convex DSL expressions), e.g.
# `fm.dc(fm.sum_squares(w), fm.norm(w)) <= 1.0`, and solve it on both backends. Then pass `-fm.sum_squares(w)` as
# $h$ and read the error message: which part does it name, with which curvature?

# %% [markdown]
# *Your answer:*

# %%
# Your code:
