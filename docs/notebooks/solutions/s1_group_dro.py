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

# %% [markdown] tags=["solution"]
# The epigraph program is
#
# $$\min_{t,\, w} \; t \quad \text{s.t.} \quad R_g(w) \le t \;\; (g = 1, \dots, m), \qquad \|w\|_2 \le r,$$
#
# the printed structure: the variables $t$ (scalar) and $w$, one inequality row per group (the logistic
# loss) and one row for the norm. The group weights $q_g \ge 0$ are the duals of the $m$ rows
# $R_g(w) \le t$: the Lagrangian $t + \sum_g q_g (R_g(w) - t)$ is bounded below in the free variable $t$ only
# when $1 - \sum_g q_g = 0$, so the duals lie in the simplex and the dual problem is the saddle form (3),
# $\max_{q \in \Delta} \min_{w \in W} \sum_g q_g R_g(w)$. Complementary slackness: $q_g > 0$ only for the groups
# whose risk attains the maximum. The exact solution's `q` shows both.

# %% tags=["solution"]
exact = gdro.solve(backend="exact", method="dual")
q = np.asarray(exact.variables["q"])
risks = exact.metrics["group_risks"]
print("q =", {g: round(float(q_g), 4) for g, q_g in zip(risks, q)}, " sum =", q.sum())
assert abs(q.sum() - 1) < 1e-8 and q.min() >= 0
worst = max(risks.values())
for (group, risk), q_g in zip(risks.items(), q):
    if q_g > 1e-4:   # an active group: its risk is the maximum (up to the solver's tolerance)
        assert worst - risk < 1e-5, (group, risk, worst)

# %% [markdown]
# ## Question 2
#
# `fairmodel crosscheck gdro.toml`. Read every check of the table: which one certifies that the stochastic
# solution is near-optimal without knowing the optimum? (In Python: `fm.load_problem("gdro.toml").crosscheck()`,
# or `fm.crosscheck(gdro, seed=0, exact_options={"method": "dual"})`.)

# %% tags=["solution"]
report = fm.crosscheck(gdro, seed=0, exact_options={"method": "dual"})
print(report.to_markdown())

# %% [markdown] tags=["solution"]
# The duality gap of the stochastic result (certificate (13) of Yu et al. 2024). For any $w$ and any
# $q \in \Delta$, $\min_{w'} \sum_g q_g R_g(w') \le \mathrm{OPT} \le \max_g R_g(w)$ (weak duality), so the gap
# $\max_g R_g(w) - \min_{w'} \sum_g q_g R_g(w')$ is an upper bound on the suboptimality $\max_g R_g(w) -
# \mathrm{OPT}$ (inequality (14)); it is computed from $(w, q)$ alone. The other checks compare with the exact
# optimum, which a large problem may not have. Below: the bound holds against the exact optimum.

# %% tags=["solution"]
gap = report.stochastic.certificate["duality_gap"]
suboptimality = report.stochastic.objective - report.exact.objective
print(f"stochastic suboptimality {suboptimality:.2e} <= duality gap {gap:.2e}")
assert report.ok and suboptimality <= gap + 1e-8

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

# %% tags=["solution"]
erm_risks = gdro.evaluate(w=erm.variables["w"]).metrics["group_risks"]
gdro_risks = exact.metrics["group_risks"]
change = {g: gdro_risks[g] - erm_risks[g] for g in gdro_risks}
sizes = dict(zip(data.groups.names, data.group_sizes.tolist()))
for g in gdro_risks:
    print(f"{g:<20} n = {sizes[g]:>5}  ERM {erm_risks[g]:.4f}  group DRO {gdro_risks[g]:.4f}  "
          f"change {change[g]:+.4f}")
payer = max(change, key=change.get)
print("pays the most:", payer, "  mean risk: ERM", round(erm.objective, 4), "group DRO",
      round(erm_problem.evaluate(w=exact.variables["w"]).objective, 4))
# group DRO minimizes the worst group risk, ERM the average risk: each is best at its own objective
assert max(gdro_risks.values()) <= max(erm_risks.values()) + 1e-6
assert gdro_risks[payer] - max(gdro_risks.values()) < -1e-4   # the payer is not a worst-off group
assert erm.objective <= erm_problem.evaluate(w=exact.variables["w"]).objective + 1e-6

# %% [markdown] tags=["solution"]
# Group DRO lowers the risk of the groups at the maximum and raises the risk of the others: the group printed
# above pays the most (a group whose risk ERM had already made low). The worst case goes down, the average risk
# (ERM's objective, dominated by the largest group) goes up.

# %% [markdown]
# ## Question 4
#
# Sweep the radius: `fairmodel sweep gdro.toml --param model.radius --values 0.5,1,2,5,10 --plot radius.png`.
# Explain why the objective can only decrease as the radius grows. (In Python, `fm.sweep` solves a problem built
# for each value, as the command does with each edited file.)

# %% tags=["solution"]
def gdro_with_radius(radius):
    w = fm.Weights(data.n_features, radius=radius)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))


frontier = fm.sweep(gdro_with_radius, [0.5, 1, 2, 5, 10], param="radius", method="dual")
frontier.plot().savefig("radius.png")
print(frontier.to_markdown())

# %% [markdown] tags=["solution"]
# The balls are nested: every $w$ with $\|w\| \le r$ also satisfies $\|w\| \le r'$ for $r' > r$, so the minimum
# over the larger ball is at most the minimum over the smaller one. Checked on the judged objectives:

# %% tags=["solution"]
optima = frontier.column("objective")
assert frontier.column("status") == ["optimal"] * 5
assert all(b <= a + 1e-7 for a, b in zip(optima, optima[1:]))

# %% [markdown]
# ## Question 5
#
# Set `family = "mero"`. Which group now has the largest risk, and why does MERO not protect it? (Look at
# `metrics.group_optimal`: its own best risk is already high.)

# %% tags=["solution"]
Path("mero.toml").write_text(GDRO.replace('family = "gdro"', 'family = "mero"'))
mero = fm.load_problem("mero.toml")[0].solve(backend="exact")
mero_risks, optimal = mero.metrics["group_risks"], mero.metrics["group_optimal"]
largest = max(mero_risks, key=mero_risks.get)
for g in mero_risks:
    print(f"{g:<20} risk {mero_risks[g]:.4f}  own optimum {optimal[g]:.4f}  excess {mero_risks[g] - optimal[g]:.4f}")
print("largest risk:", largest)
# MERO equalizes the excess risk R_g - R*_g, not the risk: the group with the largest risk has the largest
# own optimum, so its excess is no larger than the others' maximum
assert optimal[largest] == max(optimal.values())

# %% [markdown] tags=["solution"]
# MERO (eq. (4)) minimizes the largest *excess* risk $R_g(w) - R_g^*$, where $R_g^*$ is the best risk any model
# of the class reaches on group $g$ alone. The group with the largest risk is the one whose own optimum is
# highest (its labels are the hardest to predict from the features): MERO does not spend accuracy of the other
# groups on a risk that no model can lower.
