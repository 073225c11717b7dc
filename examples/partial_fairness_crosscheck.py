"""Worked example of docs/partial_fairness.md: partial demographic parity on Law School, both IDCA paths and
the cross-check.

    python examples/partial_fairness_crosscheck.py            # a 500-row stratified subsample, 5 starts (about 1 min)
    python examples/partial_fairness_crosscheck.py --n 0 --starts 1   # all 20,800 rows, one start (about 4 min)
"""
import argparse
import time

import fairmodel as fm

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n", type=int, default=500, help="stratified subsample size (0: all rows)")
parser.add_argument("--starts", type=int, default=5, help="starting points of the stochastic path")
args = parser.parse_args()

data = fm.datasets.load_lawschool(target="bar1", sensitive="race")
if args.n:
    data = data.subsample(args.n, seed=0)
data = fm.with_group_interactions(data)              # h_w(ξ) = <w, (1, ξ, γ, γξ)>
w = fm.Weights(data.n_features, intercept=True)
s = data.score(w)
prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                  [fm.partial_dp(s, data.groups, band=(0.70, 1.00)) <= 0.1])
print(prob.describe())

start = time.perf_counter()
report = fm.crosscheck(prob, exact_options={"outer": 100, "certificate": True},
                       stochastic_options={"certificate": True, "starts": args.starts}, seed=0)
print(report.to_markdown())
print("local solutions of the stochastic path:",
      [round(r["objective"], 6) for r in report.stochastic.metrics.get("local_solutions", [])])
for res in (report.exact, report.stochastic):
    print(f"{res.backend}: true DP^I on the training data {res.metrics['c0.gap']:.4f} "
          f"(fairness {res.metrics['c0.fairness']:.4f}), accuracy {res.metrics['accuracy']:.4f}")
print(f"total {time.perf_counter() - start:.0f} s")
