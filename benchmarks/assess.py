"""Benchmark of ``fm.assess``: the bundled Adult data by sex x race (30,162 rows, 10 groups), a scikit-learn
logistic regression's decisions and scores, the default metrics (selection rate, accuracy, balanced accuracy,
TPR, FPR, FNR, precision, AUC), point estimates and 1,000 stratified bootstrap draws. Target: under 5 s.

Side by side, in the same process, fairlearn's ``MetricFrame`` on the same decisions and scores (two frames:
fairlearn passes one prediction vector to every metric, so AUC needs its own frame), point estimates and its own
bootstrap (``n_boot``), when fairlearn is importable (it is not a dependency of fairmodel). The largest
difference between the two by-group tables is reported. fairlearn's bootstrap re-runs the whole frame per draw,
so it is timed on fewer draws (``--fairlearn-draws``) and the per-draw time is scaled to 1,000 draws (marked).

Run ``python benchmarks/assess.py`` (writes its section of docs/benchmarks.md); ``--no-write`` only prints.
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
from _report import median_time, table, write_section  # noqa: E402

import numpy as np  # noqa: E402

import fairmodel as fm  # noqa: E402

N_BOOT = 1000


def setup():
    from sklearn.linear_model import LogisticRegression
    data = fm.datasets.load_adult(sensitive="sex_race")
    clf = LogisticRegression(max_iter=1000).fit(data.X, data.y)
    sex = np.array([g[0] for g in np.asarray(data.groups.names, dtype=object)[data.groups.codes]])
    race = np.array([g[1] for g in np.asarray(data.groups.names, dtype=object)[data.groups.codes]])
    return data, (data.y > 0).astype(int), (clf.predict(data.X) > 0).astype(int), clf.decision_function(data.X), \
        sex, race


def ours(y, p, s, sf, n_boot=None):
    a = fm.assess(y, y_pred=p, scores=s, sensitive_features=sf)
    if n_boot:
        a.ci(n_boot=n_boot, seed=0)
    return a


def fairlearn_frames(y, p, s, sf, n_boot=None):
    import fairlearn.metrics as flm
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, precision_score, roc_auc_score
    decisions = {"selection_rate": flm.selection_rate, "accuracy": accuracy_score,
                 "balanced_accuracy": balanced_accuracy_score, "true_positive_rate": flm.true_positive_rate,
                 "false_positive_rate": flm.false_positive_rate, "false_negative_rate": flm.false_negative_rate,
                 "precision": precision_score}
    boot = {} if not n_boot else {"n_boot": n_boot, "ci_quantiles": [0.025, 0.975], "random_state": 0}
    with warnings.catch_warnings():   # draws where a small group has no positive: scikit-learn warns
        warnings.simplefilter("ignore")
        f1 = flm.MetricFrame(metrics=decisions, y_true=y, y_pred=p, sensitive_features=sf, **boot)
        f2 = flm.MetricFrame(metrics={"auc": roc_auc_score}, y_true=y, y_pred=s, sensitive_features=sf, **boot)
    return f1, f2


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fairlearn-draws", type=int, default=50)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    import pandas as pd
    data, y, p, s, sex, race = setup()
    sf = pd.DataFrame({"sex": sex, "race": race})
    load = os.getloadavg()
    a = ours(y, p, s, sf)
    t_point = median_time(lambda: ours(y, p, s, sf), args.repeat)
    t_boot = median_time(lambda: ours(y, p, s, sf, N_BOOT), args.repeat)
    rows = [["fairmodel `fm.assess` (point estimates)", f"{t_point:.3f}", "-", ""],
            [f"fairmodel `fm.assess(...).ci(n_boot={N_BOOT})` (stratified)", f"{t_boot:.2f}", "-", ""]]
    notes = []
    try:
        import fairlearn
    except ImportError:
        fairlearn = None
        notes.append("fairlearn is not importable here: no side-by-side numbers.")
    if fairlearn is not None:
        f1, f2 = fairlearn_frames(y, p, s, sf)
        theirs = pd.concat([f1.by_group, f2.by_group], axis=1).loc[a.by_group.index, list(a.metrics)]
        diff = float(np.nanmax(np.abs(theirs.to_numpy() - a.by_group.to_numpy())))
        fl_point = median_time(lambda: fairlearn_frames(y, p, s, sf), args.repeat)
        start = time.perf_counter()
        fairlearn_frames(y, p, s, sf, args.fairlearn_draws)
        fl_draws = time.perf_counter() - start
        fl_1000 = fl_draws / args.fairlearn_draws * N_BOOT
        rows[0][2:] = [f"{fl_point:.3f}", f"{fl_point / t_point:.0f}x"]
        rows[1][2:] = [f"{fl_1000:.0f} (scaled from {args.fairlearn_draws} draws: {fl_draws:.1f} s)",
                       f"{fl_1000 / t_boot:.0f}x"]
        notes.append(f"fairlearn {fairlearn.__version__} (installed from PyPI for this comparison only; not a "
                     f"dependency of fairmodel): largest |difference| between the two by-group tables "
                     f"(10 groups x 8 metrics): {diff:.1e}. fairlearn's bootstrap resamples all rows (not by "
                     f"group) and re-runs both frames per draw.")
    body = ("## Assessment (`benchmarks/assess.py`)\n\n"
            f"Adult by sex x race ({a.n_samples:,} rows, {len(a.groups)} groups), a scikit-learn logistic "
            f"regression's decisions and scores, the default metrics ({', '.join(a.metrics)}). Median of "
            f"{args.repeat} runs, same process; target for the 1,000-draw run: under 5 s. Machine load average "
            f"at the start: {load[0]:.1f} (2 cores shared with other jobs).\n\n"
            + table(["computation", "fairmodel (s)", "fairlearn MetricFrame (s)", "fairlearn / fairmodel"],
                    rows) + "\n\n" + " ".join(notes))
    print(body)
    if not args.no_write:
        write_section("assess", body)


if __name__ == "__main__":
    main()
