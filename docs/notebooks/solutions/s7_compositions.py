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

# %% [markdown] tags=["solution"]
# Only the generic convex program accepts it: the group-DRO family (ALEG) solves $\min_{w \in W} \max_g R_g(w)$
# with the ball as the only constraint, and declines any other constraint. The surrogate of equal opportunity is
# the spread of the groups' mean scores on the positives, $\max_g m_g^+ - \min_g m_g^+$ with
# $m_g^+ = \frac{1}{|\{i \in g: y_i = +1\}|}\sum_{i \in g,\, y_i = +1} x_i \cdot w + b$ (the gap between the groups'
# mean linear losses $1 - y s$ on the positives). By hand, the same problem and the same optimum:

# %% tags=["solution"]
m = fm.group_mean(s, data.groups, where=data.y > 0)
by_hand = fm.Problem(fm.Minimize(fm.max(risks)), [fm.max(m) - fm.min(m) <= 0.05])
a, b = eo.solve(backend="exact"), by_hand.solve(backend="exact")
print(f"optimum: fm.equal_opportunity_gap {a.objective:.8f}, by hand {b.objective:.8f}")
assert abs(a.objective - b.objective) < 1e-6
theta = a.variables["w"]
assert np.isclose(eo.evaluate(w=theta).constraints["c0"]["value"], by_hand.evaluate(w=theta).constraints["c0"]["value"])

# %% [markdown]
# ## Question 2
#
# Cross-check the composition: `fm.crosscheck(eo, seed=0)`. Which method does each backend use, and what does the
# Lagrangian gap of the stochastic result bound?

# %%
report = fm.crosscheck(eo, seed=0)
print(report.to_markdown())

# %% [markdown] tags=["solution"]
# The exact backend lowers the declaration atom by atom to one CVXPY program; the stochastic backend is the generic
# primal-dual method. Its certificate is the Lagrangian gap $\max_y \Phi(w, y) - \min_{w'} \Phi(w', y)$ at the
# returned $(w, y)$ (the inner minimum bounded from below: the Frank-Wolfe bound on a ball, else CVXPY): by weak
# duality $\min_{w'} \Phi(w', y) \le \mathrm{OPT}$, and for a *feasible* $w$ the objective is at most
# $\max_y \Phi(w, y)$, so the gap bounds the suboptimality of a feasible $w$ (an infeasible one must be read with
# its violation).

# %% tags=["solution"]
gap = report.stochastic.certificate["lagrangian_gap"]
print(f"stochastic - exact = {report.stochastic.objective - report.exact.objective:.2e} <= gap {gap:.2e}; "
      f"violation {report.stochastic.max_violation:.1e}")
assert report.ok and report.stochastic.max_violation == 0
assert report.stochastic.objective - report.exact.objective <= gap + 1e-6

# %% [markdown]
# ## Question 3
#
# Equivalent declarations: solve `fm.max(risks)` and `2 * fm.max(risks) + 1` with the stochastic backend. Which
# family recognizes each, and how are the two optima related?

# %% tags=["solution"]
plain = fm.Problem(fm.Minimize(fm.max(risks)))
scaled = fm.Problem(fm.Minimize(2 * fm.max(risks) + 1))
print("families:", plain.family.name, scaled.family.name)
p, q = plain.solve(backend="exact"), scaled.solve(backend="exact")
r = scaled.solve(backend="stochastic", seed=0)
print(f"optima {p.objective:.6f} and {q.objective:.6f} = 2 x {p.objective:.6f} + 1; ALEG on the scaled one "
      f"{r.objective:.6f}, duality gap {r.certificate['duality_gap']:.1e} (in the units of the declared objective)")
assert plain.family.name == scaled.family.name == "gdro" and r.method == "aleg"
assert abs(q.objective - (2 * p.objective + 1)) < 1e-6

# %% [markdown] tags=["solution"]
# Both reach the group-DRO family (and ALEG): problems are recognized on their canonical form, where a positive
# scale and a constant offset of the whole objective move out of the `max`. The optimum of the scaled problem is
# $2\,\mathrm{OPT} + 1$, at the same $w$.

# %% [markdown]
# ## Question 4
#
# Bounded group loss (Agarwal, Dudik, Wu 2019): minimize the mean loss subject to `fm.max(risks) <= r`. What is the
# smallest bound $r$ for which the problem is feasible? Check it with the group-DRO optimum.

# %% tags=["solution"]
opt = p.objective
for bound in (opt + 1e-2, opt - 1e-2):
    bgl = fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(risks) <= bound])
    try:
        result = bgl.solve(backend="exact")
        print(f"r = {bound:.4f}: mean loss {result.objective:.4f}, largest group risk "
              f"{result.constraints['c0']['value']:.4f}")
        assert bound > opt and result.ok
    except fm.InfeasibleError as error:
        print(f"r = {bound:.4f}: infeasible ({error})")
        assert bound < opt

# %% [markdown] tags=["solution"]
# The constraint asks for a $w$ with $\max_g R_g(w) \le r$: one exists exactly when $r$ is at least the group-DRO
# optimum $\min_w \max_g R_g(w)$. Bounded group loss between that optimum and the ERM solution's worst group risk
# trades the average loss against the worst group's.

# %% [markdown]
# ## Question 5
#
# Declare `fm.Problem(fm.Minimize(fm.mean(loss)), [fm.min(risks) >= 0.5])` and read the error. Which rule does the
# declaration break, and why is the feasible set not convex?

# %% tags=["solution"]
try:
    fm.Problem(fm.Minimize(fm.mean(loss)), [fm.min(risks) >= 0.5])
except fm.UnsupportedProblemError as error:
    message = str(error)
    print(message.splitlines()[-1])
    assert "not convex" in message and "min is concave only of concave arguments" in message

# %% [markdown] tags=["solution"]
# A constraint must be convex $\le$ concave; $\min_g R_g \ge 0.5$ is $0.5 - \min_g R_g \le 0$, and $\min_g R_g$ of
# convex risks has no known curvature (min is concave only of concave arguments). The set "every group's risk is
# at least 0.5" is the intersection of the sets $R_g(w) \ge 0.5$, each the outside of a convex sublevel set: not
# convex in general, so no convex program describes it.
