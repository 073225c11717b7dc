"""Multi-class classification under demographic parity with the same machinery (Remark 2.2 of the DP
post-processing paper): the grid is the set of classes and the cost of predicting class c at x is the
expected 0-1 loss 1 - P(Y = c | x), estimated by any probabilistic classifier.

    PYTHONPATH=. python examples/dp_postprocessing_multiclass.py
"""
import argparse

import numpy as np
from sklearn.linear_model import LogisticRegression

import fairmodel as fm

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.parse_args()   # --help prints the docstring; the example takes no options

rng = np.random.default_rng(0)
n = 6000
X = rng.normal(size=(n, 4))
s = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)                 # the sensitive attribute
y = np.digitize(X[:, 1] + 0.8 * s + 0.5 * rng.normal(size=n), [-0.5, 0.8])  # 3 classes, more 2's when s = 1
train, unl, test = np.split(rng.permutation(n), [2000, 4000])
clf_y = LogisticRegression().fit(X[train], y[train])
clf_s = LogisticRegression().fit(X[train], s[train])

post = fm.GridPredictor(cost=lambda Z: 1.0 - clf_y.predict_proba(Z), tau=clf_s.predict_proba, grid=clf_y.classes_)
prob = fm.Problem(fm.Minimize(fm.expected_cost(post)), [fm.dp_gap(post) <= 0.005], entropy=1 / 200)
res = prob.solve(data=X[unl])                                       # exact dual (L-BFGS-B)
fast = prob.solve(backend="stochastic", data=X[unl], seed=0)       # SGD3 + AC-SA^2 rounds until the checks pass
print(f"expected 0-1 loss on the unlabeled points: exact {res.objective:.4f}, stochastic {fast.objective:.4f} "
      f"({fast.status}); max violation {res.max_violation:.1e} / {fast.max_violation:.1e}")

model = res.predictor()
for name, pred in (("argmax of P(Y|x)", clf_y.predict(X[test])),
                   ("DP post-processed (mode)", model.predict(X[test], mode="mode"))):
    rates = np.array([[np.mean(pred[s[test] == g] == c) for c in clf_y.classes_] for g in (0, 1)])
    print(f"{name:>26}: accuracy {np.mean(pred == y[test]):.3f}; class rates group 0 {np.round(rates[0], 3)}, "
          f"group 1 {np.round(rates[1], 3)}")
P = model.predict_proba(X[test])
print("randomized prediction: accuracy", np.round(np.mean(P[np.arange(len(test)), y[test]]), 3),
      "; class rates per group", [np.round(P[s[test] == g].mean(axis=0), 3) for g in (0, 1)])
