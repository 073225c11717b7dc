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

# %% [markdown] tags=["solution"]
# Through the estimated $\hat\tau(x) = P(S = s \mid X = x)$ in $t_s = 1 - \hat\tau_s/p_s$ (eq. (15)): since
# $\mathbb{E}[\pi(\ell|X) \mid S = s] - \mathbb{E}[\pi(\ell|X)] = \mathbb{E}[\pi(\ell|X)\, t_s(X)]$ when
# $\hat\tau$ is the true posterior, the constraint measures demographic parity without $S$. Below, the judge's
# unfairness matrix is recomputed from $\hat\tau$ alone, and compared with the demographic-parity gap measured with
# the true groups of the unlabeled points (the rows the file did not train on: the same seeded split).

# %% tags=["solution"]
exact = prob.solve(backend="exact")
P = exact.predictor().predict_proba(eta=post.eta, tau=post.tau)          # pi(l | x_i), an (n, m) array
tau = np.asarray(post.tau)
p = tau.mean(axis=0)                                                     # p = "calibrated"
t = 1 - tau / p
U = np.abs(P.T @ t / len(P))                                             # (m, K): |E[pi(l|X) t_s(X)]|
judged = np.asarray(exact.metrics["unfairness"])
print("max |U by hand - judge's U| =", np.abs(U - judged).max())
assert np.allclose(U, judged, atol=1e-10)

_, unlabeled = data.split([0.5, 0.5], seed=0)                            # the file's split: train, unlabeled
assert unlabeled.n_samples == len(P)
true_gap = {name: float(np.abs(P[unlabeled.groups.codes == k].mean(axis=0) - P.mean(axis=0)).max())
            for k, name in enumerate(unlabeled.groups.names)}
print("constraint (through tau_hat):", {g: round(c["value"], 4) for g, c in exact.constraints.items()})
print("DP gap with the true groups:  ", {g: round(v, 4) for g, v in true_gap.items()})

# %% [markdown] tags=["solution"]
# The two differ by the estimation error of $\hat\tau$ (a logistic regression of race on the features): the
# guarantee is for the estimated groups; the closer $\hat\tau$ is to the true posterior, the closer the gaps.

# %% [markdown]
# ## Question 2
#
# Set `beta = 0` (the LP (3)) and solve with `--backend exact`. Then set `beta = 100` again: how far apart are the
# two risks, and why does the entropic term make the prediction randomized but smooth in $x$?

# %% tags=["solution"]
lp_problem = prob.replace(entropy=0.0)      # the file with beta = 0: no entropic term (the LP (3), HiGHS)
lp = lp_problem.solve(backend="exact")
m = post.m
risk_lp, risk_beta = lp.metrics["risk"], exact.metrics["risk"]
print(f"risk: LP {risk_lp:.6f}, beta = 100 {risk_beta:.6f}, difference {risk_beta - risk_lp:.2e} "
      f"<= log(m)/beta = {np.log(m) / 100:.3f}")
# pi_beta is feasible for the LP and minimizes R + Psi/beta with -log m <= Psi <= 0
assert -1e-6 <= risk_beta - risk_lp <= np.log(m) / 100 + 1e-6
P_lp = np.asarray(lp.variables["P"])
randomized = {"LP": float(np.mean(P_lp.max(axis=1) < 0.99)), "beta = 100": float(np.mean(P.max(axis=1) < 0.99))}
print("share of points whose prediction is randomized (largest probability < 0.99):", randomized)
assert randomized["LP"] < randomized["beta = 100"]

# %% [markdown] tags=["solution"]
# $0 \le R(\pi_\beta) - R_{LP} \le \log(m)/\beta$: $\pi_\beta$ is feasible for the LP, and it minimizes
# $R + \Psi/\beta$ with $-\log m \le \Psi \le 0$. The LP's solution is a vertex: almost every point gets one grid
# value, and a small change of $x$ can move it to another (a jump). With the entropy, eq. (7) gives
# $\pi(\ell|x) = \mathrm{softmax}_\ell(\beta(\langle \lambda_\ell - \nu_\ell, t(x)\rangle - r_\ell(x)))$: every grid
# point has positive probability and the probabilities are smooth functions of $\hat\eta(x)$ and $\hat\tau(x)$.

# %% [markdown]
# ## Question 3
#
# `fairmodel crosscheck dp.toml`. Which entry measures how far the stochastic dual point is from the exact dual's
# optimum, and why is it never negative, while the stochastic result's own objective $R_\beta$ may fall below the
# exact optimum? (In Python: `fm.crosscheck(prob, seed=0)`.)

# %% tags=["solution"]
report = fm.crosscheck(prob, seed=0, stochastic_options={"T": 20000})
print(report.to_markdown())

# %% [markdown] tags=["solution"]
# `dual_suboptimality` $= F(z) - F^*$, with $F$ the dual function (5) evaluated by the judge on all the unlabeled
# points and $F^* = \min F = -R_\beta(\pi^*)$ (strong duality (17)): it is nonnegative because $F^*$ is the
# minimum. The primal objective of the stochastic result is that of $\pi_z$ (eq. (7)), which is feasible only up
# to the dual's optimization error (its constraint rows may exceed $\varepsilon$): an infeasible policy can have
# a smaller $R_\beta$ than the optimum without contradicting weak duality, which bounds the objective of
# *feasible* policies only.

# %% tags=["solution"]
stochastic = report.stochastic
F, F_star = stochastic.certificate["dual_value"], report.exact.certificate["dual_value"]
print(f"F(z) = {F:.6f} >= F* = {F_star:.6f}; dual_suboptimality {stochastic.certificate['dual_suboptimality']:.2e}")
print(f"stochastic max violation {stochastic.max_violation:.2e}, objective {stochastic.objective:.6f} "
      f"(exact {report.exact.objective:.6f})")
assert stochastic.certificate["dual_suboptimality"] >= 0 and F >= F_star - 1e-12
assert abs(F_star + report.exact.objective) < 1e-6        # strong duality at the exact optimum

# %% [markdown]
# ## Question 4
#
# `fairmodel sweep dp.toml --param problem.eps --values 0.005,0.01,0.02,0.05,0.1 --plot eps.png`. Explain the
# shape of the risk-unfairness curve; what does `eps = 1` give? (In Python, `fm.dp_sweep` solves one problem
# per budget.)

# %% tags=["solution"]
budgets = [1.0, 0.1, 0.05, 0.02, 0.01, 0.005]          # from the loosest to the tightest
frontier = fm.dp_sweep(prob, budgets, backend="exact")
frontier.plot(y="metric:risk").savefig("eps.png")
for row in frontier.rows():
    print({key: row[key] for key in ("eps", "status", "objective", "metric:risk", "max_violation")})

# %% [markdown] tags=["solution"]
# The feasible sets grow with $\varepsilon$, so the optimal value never increases as the budget loosens; and it
# is a convex function of $\varepsilon$ (the value function of a convex program whose constraints' right-hand
# side moves): steep for small $\varepsilon$, flat once the constraint stops binding. At $\varepsilon = 1$ no constraint
# binds: the duals are zero and the prediction is $\mathrm{softmax}_\ell(-\beta(\hat\eta(x) - y_\ell)^2)$, the most
# accurate and most unfair one (Remark 3.2).

# %% tags=["solution"]
objectives = frontier.column("objective")
assert all(a <= b + 1e-9 for a, b in zip(objectives, objectives[1:]))   # tighter budget, larger optimum
eps_up, values_up = budgets[::-1], objectives[::-1]                       # increasing eps
slopes = [(v1 - v0) / (e1 - e0) for e0, e1, v0, v1 in zip(eps_up, eps_up[1:], values_up, values_up[1:])]
print("slopes of the optimal value between consecutive budgets:", np.round(slopes, 5))
assert all(s0 <= s1 + 1e-5 for s0, s1 in zip(slopes, slopes[1:]))       # convex in eps (solver accuracy)
loose = frontier.results[0]
unconstrained = fm.Problem(fm.Minimize(fm.squared_risk(post)), entropy=1 / 100).solve(backend="exact")
print(f"eps = 1: R_beta {loose.objective:.6f}, without the constraint {unconstrained.objective:.6f}; "
      f"largest dual {np.abs(loose.variables['Lambda'] - loose.variables['V']).max():.1e}")
assert abs(loose.objective - unconstrained.objective) < 1e-6

# %% [markdown]
# ## Question 5
#
# Set `task = "classification"` (copy `dp_postprocessing_multiclass.toml`): the same machinery with a cost
# matrix. Which line of the formulation changed?

# %% tags=["solution"]
MULTICLASS = """
title = "Classification under DP: income on Adult (sex)"

[data]
name = "adult"
target = "income"
sensitive = "sex"
subsample = 2000
seed = 0

[problem]
family = "dp_postprocessing"
task = "classification"
beta = 100
eps = 0.01
"""
Path("multiclass.toml").write_text(MULTICLASS)
classification, _, _ = fm.load_problem("multiclass.toml")
regression_lines = prob.describe(program=False).splitlines()
classification_lines = classification.describe(program=False).splitlines()
changed = [line for line in classification_lines if line not in regression_lines]
print("\n".join(changed))
assert any(line.startswith("minimize") for line in changed)              # the objective changed
assert not any(line.strip().startswith("c0:") for line in changed)       # the constraint did not

# %% [markdown] tags=["solution"]
# The objective: $\mathbb{E}[\sum_j \pi(j|X)\, r(X, y_j)]$ with the cost $r(x, c) = 1 - P(Y = c \mid x)$ of a
# classifier instead of the squared distance $(\hat\eta(x) - y_\ell)^2$, and the grid is the set of classes
# (Remark 2.2). The constraint, the dual (5) with $r$ in place of the squared distance and the prediction (7) are
# the same.
