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

# %% [markdown] tags=["solution"]
# The corrected saddle function subtracts $\kappa\alpha$ only inside the sum over the $+1$ samples (only those
# labels may flip, Assumption B.1); eq. (7) subtracts it for every sample, $\alpha(\delta - \kappa)$, i.e. it is
# the corrected function minus $\kappa \alpha\, n_-/n$. Its coefficient of $\alpha$ is then negative whenever
# $\delta < \kappa n_-/n$, and $\alpha$ is unbounded above in the cone $K$: the objective goes to $-\infty$. The
# library refuses the paper's variant below that radius and warns above it:

# %% tags=["solution"]
n_minus = int(np.sum(data.y < 0))
threshold = 0.5 * n_minus / data.n_samples
print(f"kappa n_-/n = {threshold:.3f}")
try:
    strategic_problem(radius=0.1, variant="paper")
except fm.FairmodelError as error:
    print(f"delta = 0.1 < {threshold:.3f}: refused: {type(error).__name__}: {error}")
else:
    raise AssertionError("the paper's variant below kappa n_-/n should be refused")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    strategic_problem(radius=0.4, variant="paper")
print(f"delta = 0.4: warning: {caught[0].message}")
assert 0.1 < threshold < 0.4 and caught

# %% [markdown]
# ## Question 2
#
# `fairmodel crosscheck` (here `fm.crosscheck`). The stochastic method only queries function values (zeroth
# order). Read the duality gap of its output; how many function queries did it use?

# %%
report = fm.crosscheck(prob, seed=0)
print(report.to_markdown())

# %% [markdown] tags=["solution"]
# The duality gap $\max_{\gamma'} L(w, \alpha, \gamma') - \min_{(w', \alpha') \in K} L(w', \alpha', \gamma)$ at the
# output bounds the suboptimality of its worst-case risk; the queries are in the result's metrics. Each step of
# OGDA-RR queries its component at the perturbed current point and, for the optimistic correction, the previous
# step's component at the same point ($n$ steps per epoch; the first step of the run has no previous component).
# Each estimate costs one query with the paper's one-point estimator, or $2k$ with the two-point estimator along
# $k$ random directions, which the default chooses when probes at the start measure the one-point estimator as
# noisier per query (the result's `solver['options']` name the choice):

# %% tags=["solution"]
zo = report.stochastic
print(f"duality gap {zo.certificate['duality_gap']:.4f}; objective gap to the exact optimum "
      f"{zo.objective - report.exact.objective:.4f}")
print(f"function queries {zo.metrics['queries']}, agent queries {zo.metrics['agent_queries']}, "
      f"epochs {zo.metrics['epochs_run']}, n = {data.n_samples}")
assert report.ok and zo.objective - report.exact.objective <= zo.certificate["duality_gap"] + 1e-9
options = zo.solver["options"]
per_estimate = 2 * options["directions"] if options["estimator"] == "two-point" else 1
print(f"estimator {options['estimator']}, {options['directions']} direction(s): {per_estimate} queries an estimate")
assert zo.metrics["queries"] == per_estimate * (2 * zo.metrics["epochs_run"] * data.n_samples - 1)

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

# %% [markdown] tags=["solution"]
# At $w = 0$ every score is 0 and every loss is $\log 2$ whatever the label, so no shift of the data changes the
# risk: $w = 0$ has worst-case risk $\log 2$ at every radius. For $w \ne 0$ the adversary's budget buys label flips
# and feature moves that raise the risk, more as $\delta$ grows; the robust model is $w = 0$ from the radius where
# every $w \ne 0$ has worst-case risk at least $\log 2$. The optimal value never exceeds $\log 2$ and increases
# with $\delta$:

# %% tags=["solution"]
values = frontier.column("objective")
zero_from = next(radius for radius, norm in zip(radii, norms) if norm < 1e-4)
print(f"w* = 0 from delta = {zero_from} on (value {values[radii.index(zero_from)]:.6f}, log 2 = {np.log(2):.6f})")
assert all(v <= np.log(2) + 1e-6 for v in values) and all(a <= b + 1e-6 for a, b in zip(values, values[1:]))
assert abs(values[radii.index(zero_from)] - np.log(2)) < 1e-4 and norms[0] > 0.5

# %% [markdown]
# ## Question 4
#
# Increase `zeta` (the agents' strategic power) and compare the accuracy on strategically shifted data of the
# robust model with that of plain logistic regression (see
# [`examples/strategic_dro.py`](../../examples/strategic_dro.py); here on the 800 held-out points,
# `fm.metrics.strategic_accuracy`).

# %% tags=["solution"]
from fairmodel.metrics import strategic_accuracy

robust = report.exact.variables["w"]
w = fm.Weights(data.n_features)
plain = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(data.score(w), data.y)) + 1e-4 * fm.sum_squares(w)))
erm = plain.solve(backend="exact").variables["w"]
zetas = [0.0, 0.05, 0.2, 0.5, 1.0, 2.0]
acc = {name: strategic_accuracy(theta, test, zeta=zetas, strategic_features=range(5))
       for name, theta in (("robust (delta = 0.1)", robust), ("logistic regression", erm))}
for name, values in acc.items():
    print(f"{name:<22} ||w|| = {np.linalg.norm(robust if 'robust' in name else erm):6.3f}  "
          + "  ".join(f"zeta={z}: {a:.3f}" for z, a in zip(zetas, values)))
assert acc["robust (delta = 0.1)"][-1] > acc["logistic regression"][-1]

# %% [markdown] tags=["solution"]
# Without strategic behaviour ($\zeta = 0$) both classify about equally well. Plain logistic regression has a
# large $\|w\|$, so the agents' move $\zeta\|Mw\|^2$ is large and its accuracy collapses as $\zeta$ grows; the
# robust model has a small norm (the Wasserstein ball penalizes it, $\alpha \ge (L_\phi + c)\|w\|$) and degrades
# gracefully.
