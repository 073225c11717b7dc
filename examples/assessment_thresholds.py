"""Group-specific randomized thresholds (Hardt, Price, Srebro 2016) on a fitted model, judged and audited
(docs/thresholds.md): a scikit-learn logistic regression on the bundled Adult data (70/30 split, seed 0), then
fm.GroupThresholdPostProcessor under equalized odds, equal opportunity and demographic parity between the sexes,
each an exact LP whose training rates the judge checks (largest pairwise gap <= eps) with its duality gap; the
test decisions (drawn with a seed) are audited by fm.assess.

The post-processor needs the sex of every row when predicting, as well as in fit: its thresholds are one per group.

    python examples/assessment_thresholds.py              # eps = 0.02
    python examples/assessment_thresholds.py --eps 0.05

Prints only; writes nothing.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

import fairmodel as fm

METRICS = ["selection_rate", "true_positive_rate", "false_positive_rate", "accuracy"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eps", type=float, default=0.02, help="bound on the largest pairwise gap of the rates")
    args = ap.parse_args(argv)

    data = fm.datasets.load_adult(sensitive="sex")
    sex = np.asarray(data.groups.names, dtype=object)[data.groups.codes]
    y = (data.y == 1).astype(int)
    X_tr, X_te, y_tr, y_te, sex_tr, sex_te = train_test_split(data.X, y, sex, test_size=0.3, random_state=0)
    clf = LogisticRegression(max_iter=1000).fit(X_tr, y_tr)
    before = fm.assess(y_te, y_pred=clf.predict(X_te), sensitive_features={"sex": sex_te}, metrics=METRICS)
    print("logistic regression, test rows\n", before, sep="")

    for constraint in ("equalized_odds", "equal_opportunity", "demographic_parity"):
        post = fm.GroupThresholdPostProcessor(clf, constraint=constraint, eps=args.eps, prefit=True)
        start = time.perf_counter()
        post.fit(X_tr, y_tr, sensitive_features=sex_tr)
        elapsed = time.perf_counter() - start
        r = post.result_
        print(f"\n{constraint.replace('_', ' ')}, eps = {args.eps:g}: {r.status} (ok: {r.ok}) in {elapsed:.2f} s; "
              f"expected training accuracy {r.metrics['accuracy']:.4f}; LP duality gap "
              f"{r.certificate['duality_gap']:.1e}")
        for name, c in r.constraints.items():
            print(f"  training {name}: {c['value']:.4f} <= {c['bound']:g}")
        decisions = post.predict(X_te, sensitive_features=sex_te, random_state=0)
        after = fm.assess(y_te, y_pred=decisions, sensitive_features={"sex": sex_te}, metrics=METRICS)
        print("test rows (one draw of the randomized decisions)\n", after.difference("between_groups"), sep="")


if __name__ == "__main__":
    main()
