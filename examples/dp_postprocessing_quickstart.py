"""DP post-processing on Law School in a few lines: declare, solve exactly and stochastically, cross-check,
predict, and sweep eps (docs/dp_postprocessing.md walks through this output).

    PYTHONPATH=. python examples/dp_postprocessing_quickstart.py
"""
import argparse

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression

import fairmodel as fm

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.parse_args()   # --help prints the docstring; the example takes no options

# data: GPA in [0, 4] mapped to [-1, 1] (so B = 1), S = race (white / non-white); 2,000 training points for the
# base models, 2,000 unlabeled points for the post-processing, 2,000 test points
data = fm.datasets.load_lawschool(target="ugpa")
y = 2 * (data.y - data.y.min()) / np.ptp(data.y) - 1
s = np.asarray(data.groups.names)[data.groups.codes]
rows = np.random.default_rng(0).permutation(data.n_samples)
train, unlabeled, test = rows[:2000], rows[2000:4000], rows[4000:6000]
reg = LinearRegression().fit(data.X[train], y[train])          # eta_hat ~ E[Y | X]
clf = LogisticRegression().fit(data.X[train], s[train])        # tau_hat ~ P(S = s | X)

# the problem: minimize the squared risk of a randomized prediction on 41 grid points, U_s <= 0.01
post = fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=20, B=1.0)     # p calibrated on the data
prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.01], entropy=1 / 100)
print(prob.describe(), "\n")

X_unl = data.X[unlabeled]
report = fm.crosscheck(prob, data=X_unl, seed=0)                # exact dual (L-BFGS-B) vs SGD3 + AC-SA^2
print(report.to_markdown(), "\n")

# the fitted randomized predictor, on test points (S is never used to predict)
model = report.stochastic.predictor()
P = model.predict_proba(data.X[test])
grid01 = (post.grid + 1) / 2 * 4                                 # back to the GPA scale
y_test = data.y[test]
base = reg.predict(data.X[test])
print(f"test risk (GPA^2): base {fm.metrics.mse(y_test, (base + 1) / 2 * 4):.4f}, "
      f"post-processed {fm.metrics.randomized_risk(y_test, P, grid01):.4f}")
print("KS unfairness, base:          ", fm.metrics.ks_unfairness(s[test], pred=base))
print("KS unfairness, post-processed:", fm.metrics.ks_unfairness(s[test], proba=P))
print("predictions (mean, mode, sample):", model.predict(data.X[test[:3]]),
      model.predict(data.X[test[:3]], mode="mode"), model.predict(data.X[test[:3]], mode="sample", seed=0), "\n")

# a frontier over eps, all eps in one vectorized stochastic run: each eps stops at the round its checks pass
frontier = fm.dp_sweep(prob, [0.1, 0.03, 0.01, 0.003], parallel=True, data=X_unl, seed=0)
print("| eps | status | risk | max_l U_non-white | max_l U_white | rounds |\n|---|---|---|---|---|---|")
for eps, res in zip(frontier.values, frontier.results):
    gaps = res.metrics["dp_gap"]
    print(f"| {eps} | {res.status} | {res.metrics['risk']:.5f} | {gaps['non-white']:.4f} | {gaps['white']:.4f} | "
          f"{res.metrics['rounds']} |")
print(f"the whole grid: {frontier.results[0].timings['grid_solve']:.2f} s")
print()

# the same as a scikit-learn post-processor
est = fm.DemographicParityPostProcessor(reg, clf, eps=0.01, L=20, B=1.0, beta=100, random_state=0).fit(X_unl)
print("estimator:", est.status_, "KS", fm.metrics.ks_unfairness(s[test], proba=est.predict_proba(data.X[test])))
