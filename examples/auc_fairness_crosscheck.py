"""AUC maximization under an intra-group AUC-fairness constraint on Adult: exact QCQP, SFLS, cross-check.

The cross-check of the AUC-fairness family on real data (Yao, Lin, Yang, AISTATS 2023): Adult, 5,000-row
subsample, intra-group preset, kappa = 0.05, c1 = 0.5, c2 = 1, ||w|| <= 10. Run
``python examples/auc_fairness_crosscheck.py``.
"""
import argparse

import numpy as np

import fairmodel as fm

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.parse_args()   # --help prints the docstring; the example takes no options

data = fm.datasets.load_adult(target="income", sensitive="sex").subsample(5000, seed=0)
w = fm.Weights(data.n_features, radius=10.0)
s = data.score(w)
prob = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y, c1=0.5, c2=1.0)),
                  [fm.auc_gap(s, data, kind="intra", c1=0.5, c2=1.0) <= 0.05])
print(prob.describe())

report = fm.crosscheck(prob, seed=0)
print()
print(report.to_markdown())

fast = report.stochastic
print()
print("SFLS levels r_k and estimates U(r_k):")
for rec in fast.history[:3] + fast.history[-3:]:
    print(f"  k = {rec['outer']:2.0f}  r = {rec['level']:.5f}  U = {rec['U']:+.5f}  f0(x_k) = {rec['track_f0']:.5f}")
for name, res in (("exact", report.exact), ("SFLS", fast)):
    m = res.metrics["c0:intra"]
    print(f"{name:5s}: train AUC {res.metrics['auc']:.4f}, intra-group AUCs {m['auc_1']:.4f} (Female) vs "
          f"{m['auc_2']:.4f} (Male), true gap {m['true_gap']:.4f}, surrogate gap {m['surrogate_gap']:.4f}")

# the metrics work on any model's scores, e.g. an unconstrained fit
free = fm.Problem(fm.Minimize(fm.auc_loss(s, data.y))).solve("exact")
h = data.X @ free.variables["w"]
print(f"unconstrained: AUC {fm.metrics.auc_score(h, data.y):.4f}, intra gap "
      f"{fm.metrics.auc_fairness(h, data.y, data.groups, kind='intra'):.4f}, group-AUC gap "
      f"{fm.metrics.auc_fairness(h, data.y, data.groups, kind='group'):.4f}, "
      f"||w|| = {np.linalg.norm(free.variables['w']):.3f}")
