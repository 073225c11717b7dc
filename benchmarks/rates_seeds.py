"""Benchmark: the ramp method's test accuracy against ExponentiatedGradient's at equal test gap, over split seeds.

``benchmarks/rates.py`` compares the two methods on one 70/30 split (seed 0), where the spread it can quote for
ExponentiatedGradient is that of its randomized predictions (draws from one fitted mixture). This script repeats the
comparison over several split seeds (``--seeds``), all training rows of each split: per seed and declaration, the
ramp method's accuracy at ExponentiatedGradient's test gap (on the ramp frontier of that seed: the four bounds and the
unconstrained model, linear between the two points that bracket the gap, as in ``rates.py``) minus
ExponentiatedGradient's accuracy (its draw of seed 0). The table gives, per data set, rate and bound, the mean of these
paired differences over the seeds where the frontier brackets the gap, and ExponentiatedGradient's seed-to-seed spread:
the standard deviation of its test accuracy over the split seeds. Same protocol as ``rates.py`` otherwise.

    python benchmarks/rates_seeds.py --datasets lawschool --seeds 0 1 2          # writes its section
    python benchmarks/rates_seeds.py --rows run1.jsonl run2.jsonl                  # the table from printed rows
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_report_options, printed_rows, table, write_section  # noqa: E402
from rates import BOUNDS, CONSTRAINTS, DATASETS, accuracy_at, run_eg, run_ramp, run_unconstrained  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["adult", "lawschool", "lawschool_gender", "communities"],
                    choices=list(DATASETS))
    ap.add_argument("--constraints", nargs="+", default=list(CONSTRAINTS), choices=list(CONSTRAINTS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--width", type=float, default=0.5, help="ramp width")
    add_report_options(ap)
    args = ap.parse_args(argv)
    rows = printed_rows(args.rows)
    for name in ([] if args.rows else args.datasets):
        data = DATASETS[name]()
        for seed in args.seeds:
            train, test = data.split([0.7, 0.3], seed=seed)
            for kind in args.constraints:
                base = run_unconstrained(train, test, kind)
                ramps = {eps: run_ramp(train, test, kind, eps, args.width) for eps in BOUNDS}
                frontier = [(r["test_gap"], r["accuracy"]) for r in ramps.values()]
                frontier.append((base["test_gap"], base["accuracy"]))
                for eps in BOUNDS:
                    eg = run_eg(train, test, kind, eps)
                    at = accuracy_at(frontier, eg["test_gap"])
                    row = {"dataset": name, "seed": seed, "kind": kind, "eps": eps, "eg_accuracy": eg["accuracy"],
                           "eg_test_gap": eg["test_gap"], "eg_time": eg["time"], "ramp_time": ramps[eps]["time"],
                           "ramp_train_gap": ramps[eps]["train_gap"], "ramp_status": ramps[eps]["status"],
                           "ramp_at_eg_gap": at}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    text = report(rows)
    print(text)
    if not args.no_write:
        write_section("rates_seeds", text)
    return rows


def report(rows) -> str:
    keys = list(dict.fromkeys((r["dataset"], r["kind"], r["eps"]) for r in rows))
    body, within, compared = [], 0, 0
    for key in keys:
        group = [r for r in rows if (r["dataset"], r["kind"], r["eps"]) == key]
        spread = float(np.std([r["eg_accuracy"] for r in group], ddof=1)) if len(group) > 1 else float("nan")
        diffs = [r["ramp_at_eg_gap"] - r["eg_accuracy"] for r in group if r["ramp_at_eg_gap"] is not None]
        mean = float(np.mean(diffs)) if diffs else None
        if mean is not None and np.isfinite(spread):
            compared += 1
            within += mean >= -spread
        met = sum(r["ramp_train_gap"] <= r["eps"] + 1e-3 for r in group)
        ratio = np.median([r["eg_time"] / r["ramp_time"] for r in group])
        body.append([*key, len(group), f"{met} / {len(group)}", len(diffs), "-" if mean is None else mean,
                     "-" if not diffs else min(diffs), spread, f"{ratio:.1f}x"])
    seeds = sorted({r["seed"] for r in rows})
    return ("## True-rate constraints over split seeds: accuracy at equal test gap\n\n"
            f"`python benchmarks/rates_seeds.py` (split seeds {', '.join(map(str, seeds))}; every split's training rows; "
            "otherwise the protocol of the full-size table above). Per row: the split seeds run; those whose ramp "
            "answer's true training gap is within eps + 1e-3; `paired`: the seeds where the ramp frontier brackets "
            "ExponentiatedGradient's test gap; `mean (ramp - EG)`: the mean over those seeds of the ramp method's test "
            "accuracy at ExponentiatedGradient's test gap minus ExponentiatedGradient's; `worst`: the smallest of "
            "these differences; `EG sd over seeds`: the standard deviation of ExponentiatedGradient's test accuracy "
            "over the split seeds (its seed-to-seed spread); the median of ExponentiatedGradient's time over the ramp "
            f"method's. The mean difference is at least minus that spread in {within} of {compared} rows.\n\n"
            + table(["data", "rate", "bound", "seeds", "true gap within eps + 1e-3", "paired", "mean (ramp - EG)",
                     "worst", "EG sd over seeds", "EG time / ramp time"], body))


if __name__ == "__main__":
    main()
