"""Auditing a model with fm.assess (docs/assessment.md): a scikit-learn logistic regression on the bundled Adult
data, assessed by sex x race with bootstrap intervals; then a logistic regression under the equalized-odds
surrogate of Donini et al. (2018) between the sexes, assessed again.

    python examples/assessment.py                 # writes into a fresh temporary folder (printed)
    python examples/assessment.py --out audit     # writes into ./audit (created if needed)

Writes only into the output folder: report.md (the tables), before.png and after.png (per-group bars with 95%
intervals, when matplotlib is installed).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

import fairmodel as fm

METRICS = ["selection_rate", "true_positive_rate", "false_positive_rate", "accuracy", "auc"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: a fresh temporary folder)")
    ap.add_argument("--eps", type=float, default=0.1, help="bound on the equalized-odds surrogate gap")
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap draws of the intervals (default 1000)")
    args = ap.parse_args(argv)
    out = Path(tempfile.mkdtemp(prefix="fairmodel-audit-")) if args.out is None else args.out
    out.mkdir(parents=True, exist_ok=True)

    data = fm.datasets.load_adult(sensitive="sex_race")
    train, test = data.split([0.5, 0.5], seed=0)
    sex_train = np.asarray(train.groups.names)[train.groups.codes][:, 0]
    sex_test = np.asarray(test.groups.names)[test.groups.codes][:, 0]

    # 1. a scikit-learn model, assessed on the test half by sex x race (intersections) and by sex
    clf = LogisticRegression(max_iter=1000).fit(train.X, train.y)
    models = {"logistic regression (scikit-learn)": clf.decision_function(test.X)}

    # 2. the same loss under the equalized-odds surrogate between the sexes, solved exactly
    w = fm.Weights(train.n_features, radius=10.0, intercept=True)
    s = train.score(w)
    prob = fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, train.y))),
                      [fm.equalized_odds_gap(s, y=train.y, groups=sex_train) <= args.eps])
    start = time.perf_counter()
    result = prob.solve(backend="exact")
    print(f"constrained model: {result.status}, objective {result.objective:.4f}, "
          f"violation {result.max_violation:.1e}, {time.perf_counter() - start:.1f} s")
    coef, intercept = w.split(result.variables[w.name])
    models[f"logistic regression, equalized-odds surrogate <= {args.eps:g} (fairmodel)"] = test.X @ coef + intercept

    lines = ["# Audit of two models on the Adult test half", ""]
    for k, (name, scores) in enumerate(models.items()):
        decisions = np.where(scores > 0, 1, -1)
        by_sex = fm.assess(test.y, y_pred=decisions, scores=scores, sensitive_features={"sex": sex_test},
                           metrics=METRICS)
        inter = fm.assess(data=test, y_pred=decisions, scores=scores, metrics=METRICS)
        inter.ci(n_boot=args.n_boot, seed=0)      # kept: to_markdown() and plot() show the intervals
        by_sex.ci(n_boot=args.n_boot, seed=0)
        lines += [f"## {name}", "", "### By sex", "", by_sex.to_markdown(), "", "### By sex x race", "",
                  inter.to_markdown(), ""]
        print(f"\n{name}\n{by_sex}")        # every column: groups, overall, difference and ratio
        try:
            fig = inter.plot()
            fig.savefig(out / ("before.png" if k == 0 else "after.png"), dpi=110)
        except fm.OptionError:            # matplotlib is not installed
            pass
    (out / "report.md").write_text("\n".join(lines))
    print(f"\nwrote {out / 'report.md'}")


if __name__ == "__main__":
    main()
