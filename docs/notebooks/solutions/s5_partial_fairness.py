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

# %% [markdown] tags=["solution"]
# In each group of five, the lowest score has rank $4/5 = 0.8 \in [0.7, 1]$ (four scores above it), the second
# lowest $3/5 = 0.6$: the band holds group a's $0.1$ and group b's $0.05$. $G_k(\theta)$ is 1 below the group's
# lowest score, $(0.8 - 0.7)/0.3 = 1/3$ between its lowest and second lowest score (the clipped rank of the
# empirical distribution), and 0 above. For $\theta \in [0.05, 0.1)$, $G_a = 1$ and $G_b = 1/3$: the gap is
# $2/3$. By hand, over every threshold between the pooled scores:

# %% tags=["solution"]
def in_band_tail(theta, s, band=(0.7, 1.0)):
    """G_k(theta) of identity (29) for one group's scores s."""
    a, b = band
    return (np.clip(np.mean(s > theta), a, b) - a) / (b - a)


thresholds = np.concatenate([[scores.min() - 1], np.sort(np.unique(scores))])
by_hand = max(abs(in_band_tail(t, scores[groups == "a"]) - in_band_tail(t, scores[groups == "b"]))
              for t in thresholds)
print("by hand:", by_hand)
assert np.isclose(by_hand, 2 / 3) and np.isclose(by_hand, fm.metrics.partial_dp(scores, groups, band=(0.7, 1.0)).gap)

# %% [markdown] tags=["solution"]
# A global metric (the band $[0, 1]$: the Kolmogorov-Smirnov distance between the groups' score distributions)
# mixes every rank: changing the scores outside the band changes it, but not the band's gap. Below, group b's
# scores outside the band become group a's: the global metric now calls the groups nearly equal, the band's gap
# is unchanged:

# %% tags=["solution"]
moved = scores.copy()
moved[groups == "b"] = [0.9, 0.8, 0.75, 0.2, 0.05]        # b's scores above its band are now a's
for name, s in (("original", scores), ("b's upper scores moved", moved)):
    print(f"{name:<22} partial (band [0.7, 1]) {fm.metrics.partial_dp(s, groups, band=(0.7, 1.0)).gap:.3f}  "
          f"global (band [0, 1]) {fm.metrics.partial_dp(s, groups, band=(0.0, 1.0)).gap:.3f}")
assert np.isclose(fm.metrics.partial_dp(moved, groups, band=(0.7, 1.0)).gap, by_hand)
assert fm.metrics.partial_dp(moved, groups, band=(0.0, 1.0)).gap < fm.metrics.partial_dp(scores, groups,
                                                                                          band=(0.0, 1.0)).gap

# %% [markdown]
# ## Question 2
#
# Write the indicator of "score above the band's threshold" as a difference of two convex ramps. Which part is
# linearized by IDCA at every outer iteration, and why does that make each subproblem convex?

# %% [markdown] tags=["solution"]
# The indicator $\mathbb{1}(x > 0)$ of $x = s - \theta$ is replaced by the ramp $\sigma(x) = \mathrm{clip}(x + 1/2,
# 0, 1)$, a difference of two convex ramps (Example B.3): $\sigma = \sigma^+ - \sigma^-$ with
# $\sigma^+(x) = \max(x + 1/2, 0)$ and $\sigma^-(x) = \max(x - 1/2, 0)$. Every constraint of model (13) is
# $f_i^+(x) - f_i^-(x) \le 0$ with $f_i^\pm$ convex; IDCA replaces the subtracted convex part $f_i^-$ by its
# linearization at the current iterate (eq. (26)). A convex function minus an affine one is convex, so the
# subproblem (25) is a convex program; and since a convex function lies above its linearization, the linearized
# constraint is stricter than the true one: every iterate stays feasible.

# %% tags=["solution"]
x = np.linspace(-2, 2, 401)
ramp_plus, ramp_minus = np.maximum(x + 0.5, 0), np.maximum(x - 0.5, 0)
assert np.allclose(ramp_plus - ramp_minus, np.clip(x + 0.5, 0, 1))
x0 = 0.7                                                   # linearize sigma^- at x0 (slope 1 there)
linearized = np.maximum(x0 - 0.5, 0) + 1.0 * (x - x0)
assert np.all(ramp_minus >= linearized - 1e-12)            # so sigma^+ - linearized >= sigma: a stricter constraint

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

# %% [markdown] tags=["solution"]
# Yes, up to the tolerance of the check (both are IDCA from the same start; only the inner solver differs). Lemma
# C.1: if the subproblem anchored at the result moves it by little, the result is a *nearly* $\epsilon$-KKT point
# of the DC program, with $\epsilon$ the reported `nearly_kkt_eps`. It certifies approximate stationarity: a
# local property. It says nothing about the global optimum (the constraint set is not convex: another start may
# end at a better local solution), and $\epsilon$ decreases only slowly with the number of outer iterations.

# %% tags=["solution"]
exact, stochastic = report.exact, report.stochastic
print(f"objectives {exact.objective:.6f} / {stochastic.objective:.6f}; nearly-KKT eps "
      f"{exact.certificate['nearly_kkt_eps']:.3g} / {stochastic.certificate['nearly_kkt_eps']:.3g}; "
      f"true DP^I {exact.metrics['c0.gap']:.3f} / {stochastic.metrics['c0.gap']:.3f}")
assert report.ok and abs(exact.objective - stochastic.objective) <= 1e-3 * max(1, abs(exact.objective))
assert exact.max_violation == 0 and stochastic.max_violation == 0

# %% [markdown]
# ## Question 4
#
# Write your own DC constraint `fm.dc(g, h) <= b` ($g - h \le b$ with $g$ and $h$ convex DSL expressions), e.g.
# `fm.dc(fm.sum_squares(w), fm.norm(w)) <= 1.0`, and solve it on both backends. Then pass `-fm.sum_squares(w)` as
# $h$ and read the error message: which part does it name, with which curvature?

# %% tags=["solution"]
own = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))), [fm.dc(fm.sum_squares(w), fm.norm(w)) <= 1.0])
exact_dc = own.solve(backend="exact", outer=30)
stochastic_dc = own.solve(backend="stochastic", outer=30, inner=100)
weights, intercept = w.split(exact_dc.variables["w"])      # the regularizers act on w, not on the intercept b
norm = np.linalg.norm(weights)
print(f"exact {exact_dc.objective:.5f}, stochastic {stochastic_dc.objective:.5f}; ||w||^2 - ||w|| = "
      f"{norm ** 2 - norm:.4f} <= 1 (the judge: {exact_dc.constraints['c0']['value']:.4f})")
assert np.isclose(norm ** 2 - norm, exact_dc.constraints["c0"]["value"]) and norm ** 2 - norm <= 1 + 1e-6
assert abs(exact_dc.objective - stochastic_dc.objective) < 1e-3
try:
    fm.dc(fm.sum_squares(w), -fm.sum_squares(w))
except fm.ModelError as error:
    print(error)
    assert "second part h" in str(error) and "concave" in str(error)

# %% [markdown] tags=["solution"]
# $\|w\|^2 - \|w\| \le 1$ is the set $\|w\| \le (1 + \sqrt 5)/2$, a ball written as a difference of convex
# functions: both backends reach the same objective. With $h = -\|w\|^2$ the error names the *second* part $h$
# and its curvature, concave: a DC decomposition needs both parts convex (move the concave term to $g$ with a
# minus sign).
