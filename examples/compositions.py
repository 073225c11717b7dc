"""Compositions no single paper covers, each declared in one line and cross-checked: the default exact method (the
model-space interior-point method; the CVXPY program with prob.solve(method="cvxpy")) against the generic stochastic
lowering (variance-reduced mirror-prox on the Lagrangian), both judged on the full bundled data.

    python examples/compositions.py                    # all four (7 s on 2 busy cores)
    python examples/compositions.py equal_opportunity  # one of: equal_opportunity auc_gap covariance group_loss

* group DRO under equal opportunity, the linear surrogate of Donini et al. 2018 (Law School by race);
* group DRO under an intra-group AUC-fairness gap, Yao, Lin, Yang (Law School by race);
* logistic regression under the decision-boundary covariance constraint of Zafar et al. 2017 (Law School);
* bounded group loss, Agarwal, Dudik, Wu 2019 (Adult by race).

The problem-file twins are examples/problems/compositions_*.toml (``fairmodel crosscheck <file>``).
"""
import argparse
import sys
import time

import fairmodel as fm


def law_school():
    data = fm.datasets.load_lawschool()
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    return data, w, data.score(w)


def equal_opportunity():
    data, w, s = law_school()
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    m = fm.group_mean(s, data.groups, where=data.y > 0)          # mean score of the positives of each group
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.max(m) - fm.min(m) <= 0.05])


def auc_gap():
    data, w, s = law_school()
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.auc_gap(s, data, kind="intra") <= 0.05])


def covariance():
    data, w, s = law_school()
    z = (data.groups.codes == 1).astype(float)                    # 1 for the second group ("white")
    loss = fm.mean(fm.logistic_loss(s, data.y))
    return fm.Problem(fm.Minimize(loss), [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.01])


def group_loss():
    data = fm.datasets.load_adult(sensitive="race")
    w = fm.Weights(data.n_features, radius=5.0, intercept=True)
    loss = fm.logistic_loss(data.score(w), data.y)
    return fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.37])


EXAMPLES = {"equal_opportunity": equal_opportunity, "auc_gap": auc_gap, "covariance": covariance,
            "group_loss": group_loss}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"the compositions to run: {', '.join(EXAMPLES)} (default: all four)")
    names = parser.parse_args(argv).names
    unknown = [n for n in names if n not in EXAMPLES]
    if unknown:
        parser.error(f"unknown composition(s) {', '.join(unknown)}; choose from {', '.join(EXAMPLES)}")
    ok = True
    for name in names or EXAMPLES:
        start = time.perf_counter()
        prob = EXAMPLES[name]()
        print(f"## {name}\n\n{prob}\n\nreduction: {prob.family.title}\n")
        report = fm.crosscheck(prob, seed=0)
        print(report.to_markdown())
        print(f"\n{name}: {'OK' if report.ok else 'NOT OK'} in {time.perf_counter() - start:.1f} s\n")
        ok = ok and report.ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
