"""Benchmark of ``fm.GroupThresholdPostProcessor`` (Hardt, Price, Srebro 2016, the exact LP) against fairlearn's
``ThresholdOptimizer`` on Adult by sex and Law School by race (bundled data, 70/30 split, seed 0), a scikit-learn
logistic regression's probabilities as the score.

For equalized odds, equal opportunity and demographic parity and bounds 0.1, 0.05, 0.02, 0.01: the expected
accuracy and the true largest pairwise gap of the compared rates (the expected rates of the randomized predictions,
from ``predict_proba``) on the training and the test rows, the time of ``fit`` on the prefit classifier, and the
judge's status. fairlearn (``tol=eps``; its equalized odds has no tolerance, so one run at 0) is measured the same
way (its ``_pmf_predict``); "at equal gap" refits ours with eps set to fairlearn's training gap and reports our
training accuracy minus theirs.

Run ``python benchmarks/threshold_postprocessing.py`` (writes its section of docs/benchmarks.md); ``--no-write``
only prints.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from _report import table, write_section  # noqa: E402

import numpy as np  # noqa: E402

import fairmodel as fm  # noqa: E402

BOUNDS = (0.1, 0.05, 0.02, 0.01)
RATES = {"equalized_odds": ("tpr", "fpr"), "equal_opportunity": ("tpr",), "demographic_parity": ("sel",)}
FAIRLEARN = {"equalized_odds": "equalized_odds", "equal_opportunity": "true_positive_rate_parity",
             "demographic_parity": "demographic_parity"}


def split(name):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    data = fm.datasets.load_adult(sensitive="sex") if name == "adult" else fm.datasets.load_lawschool(
        sensitive="race")
    g = np.asarray(data.groups.names, dtype=object)[data.groups.codes]
    y = (data.y == 1).astype(int)
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(data.X, y, g, test_size=0.3, random_state=0)
    clf = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
    return clf, (Xtr, ytr, gtr), (Xte, yte, gte)


def measure(q, y, g, constraint):
    """(expected accuracy, largest pairwise gap of the compared rates) of randomized predictions P(1) = q."""
    member = {"tpr": y == 1, "fpr": y == 0, "sel": np.ones_like(y, dtype=bool)}
    gaps = []
    for rate in RATES[constraint]:
        values = [q[member[rate] & (g == k)].mean() for k in np.unique(g)]
        gaps.append(max(values) - min(values))
    return float(np.mean(np.where(y == 1, q, 1 - q))), float(max(gaps))


def ours(clf, train, test, constraint, eps):
    start = time.perf_counter()
    post = fm.GroupThresholdPostProcessor(clf, constraint=constraint, eps=eps, prefit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post.fit(*train[:2], sensitive_features=train[2])
    elapsed = time.perf_counter() - start
    tr = measure(post.predict_proba(train[0], sensitive_features=train[2])[:, 1], train[1], train[2], constraint)
    te = measure(post.predict_proba(test[0], sensitive_features=test[2])[:, 1], test[1], test[2], constraint)
    return tr, te, elapsed, post.result_.status


def fairlearn_run(clf, train, test, constraint, tol):
    from fairlearn.postprocessing import ThresholdOptimizer
    start = time.perf_counter()
    to = ThresholdOptimizer(estimator=clf, constraints=FAIRLEARN[constraint], prefit=True,
                            predict_method="predict_proba", tol=tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to.fit(*train[:2], sensitive_features=train[2])
        elapsed = time.perf_counter() - start
        qtr = to._pmf_predict(train[0], sensitive_features=train[2])[:, 1]
        qte = to._pmf_predict(test[0], sensitive_features=test[2])[:, 1]
    return measure(qtr, train[1], train[2], constraint), measure(qte, test[1], test[2], constraint), elapsed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print the tables without writing docs/benchmarks.md")
    ap.add_argument("--datasets", default="adult,lawschool", help="comma-separated: adult, lawschool")
    args = ap.parse_args(argv)
    try:
        import fairlearn
    except ImportError:
        fairlearn = None
    load = os.getloadavg()[0]
    sections, worst = [], 0.0
    for name in args.datasets.split(","):
        clf, train, test = split(name)
        base_tr = {c: measure(clf.predict_proba(train[0])[:, 1] >= 0.5, train[1], train[2], c) for c in RATES}
        rows = []
        for constraint in RATES:
            rows.append([constraint.replace("_", " "), "none (LR, 0.5)", f"{base_tr[constraint][0]:.4f}",
                         f"{base_tr[constraint][1]:.4f}", "", "", "", "", "", "", "", ""])
            for eps in BOUNDS:
                tr, te, t, status = ours(clf, train, test, constraint, eps)
                row = ["", eps, f"{tr[0]:.4f}", f"{tr[1]:.4f}", f"{te[0]:.4f}", f"{te[1]:.4f}", f"{t:.2f}", status]
                if fairlearn is not None and constraint != "equalized_odds":
                    ftr, fte, ft = fairlearn_run(clf, train, test, constraint, eps)
                    eq = ours(clf, train, test, constraint, ftr[1])[0]
                    worst = max(worst, abs(eq[0] - ftr[0]))
                    row += [f"{ftr[0]:.4f} / {ftr[1]:.4f}", f"{fte[0]:.4f} / {fte[1]:.4f}", f"{ft:.2f}",
                            f"{eq[0] - ftr[0]:+.4f}"]
                else:
                    row += ["", "", "", ""]
                rows.append(row)
            if fairlearn is not None and constraint == "equalized_odds":
                ftr, fte, ft = fairlearn_run(clf, train, test, constraint, None)
                eq = ours(clf, train, test, constraint, ftr[1])
                worst = max(worst, abs(eq[0][0] - ftr[0]))
                rows.append(["", f"{ftr[1]:.4f} (fairlearn's gap; its EO has no tol)", f"{eq[0][0]:.4f}",
                             f"{eq[0][1]:.4f}", f"{eq[1][0]:.4f}", f"{eq[1][1]:.4f}", f"{eq[2]:.2f}", eq[3],
                             f"{ftr[0]:.4f} / {ftr[1]:.4f}", f"{fte[0]:.4f} / {fte[1]:.4f}", f"{ft:.2f}",
                             f"{eq[0][0] - ftr[0]:+.4f}"])
        n = train[1].size + test[1].size
        title = "Adult by sex" if name == "adult" else "Law School by race (white / non-white)"
        sections.append(f"### {title} ({n:,} rows: {train[1].size:,} train, {test[1].size:,} test)\n\n" + table(
            ["constraint", "eps", "train acc", "train gap", "test acc", "test gap", "fit (s)", "status",
             "fairlearn train acc / gap", "fairlearn test acc / gap", "fairlearn fit (s)",
             "acc at equal gap: ours - fairlearn"], rows))
    version = fairlearn.__version__ if fairlearn is not None else "not installed"
    body = ("## Group-specific thresholds (`benchmarks/threshold_postprocessing.py`)\n\n"
            "`fm.GroupThresholdPostProcessor` (the exact LP of Hardt, Price, Srebro 2016 on the ROC hull vertices, "
            "HiGHS) on a scikit-learn logistic regression's probabilities, 70/30 split, seed 0. Gaps are the "
            "**largest pairwise** gap of the compared rates (true-positive and false-positive rates for equalized "
            "odds, true-positive rates for equal opportunity, selection rates for demographic parity) of the "
            "expected (randomized) predictions; accuracies are expected accuracies. The training gap is at most eps "
            "(the judge's check, 1e-9); the test gap is what a new sample sees. fairlearn "
            f"{version} `ThresholdOptimizer` (`tol=eps`; its equalized odds takes no tolerance, so one run) on the "
            "same classifier; the last column refits ours with eps = fairlearn's training gap. "
            f"Largest |accuracy difference| at equal gap: {worst:.4f}. Load average at the start: {load:.1f} "
            "(2 cores shared with other jobs).\n\n" + "\n\n".join(sections))
    print(body)
    if not args.no_write:
        write_section("threshold_postprocessing", body)


if __name__ == "__main__":
    main()
