"""The ``fairmodel`` command line.

Exit codes: 0 success, 1 a cross-check that is not ok, 2 bad input (with the message), 3 solver failure.
"""
from __future__ import annotations

import argparse
import sys
import time

from . import datasets
from .errors import FairmodelError, SolverError

EXIT_OK, EXIT_NOT_OK, EXIT_BAD_INPUT, EXIT_SOLVER = 0, 1, 2, 3


def _demo(args) -> int:
    import fairmodel as fm

    start = time.perf_counter()
    data = fm.datasets.load_adult(sensitive=args.groups)
    w = fm.Weights(data.n_features, radius=args.radius)
    risks = fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups)
    if args.problem == "mero":
        prob = fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))))
    else:
        prob = fm.Problem(fm.Minimize(fm.max(risks)))
    print(f"fairmodel demo: {args.problem.upper()} on Adult ({data.n_samples} rows, {data.n_features} features), "
          f"groups = {args.groups} {dict(zip(data.groups.names, data.group_sizes.tolist()))}, logistic loss, "
          f"||w|| <= {args.radius:g}\n")
    report = fm.crosscheck(prob, seed=args.seed, exact_options={"method": args.exact_method},
                           verbose=args.verbose)
    print(report.to_markdown())
    print("\nGroup risks (judge, full data):")
    for label, res in (("exact", report.exact), ("stochastic", report.stochastic)):
        risks_txt = ", ".join(f"{k}: {v:.4f}" for k, v in res.metrics["group_risks"].items())
        print(f"  {label:<10} {risks_txt}")
    print(f"\n{'OK' if report.ok else 'NOT OK'}: {time.perf_counter() - start:.1f} s in all")
    return EXIT_OK if report.ok else EXIT_NOT_OK


def _datasets(args) -> int:
    print("| name | rows | features | target | sensitive attribute (groups) | description |")
    print("|---|---|---|---|---|---|")
    for name, (loader, text) in datasets.BUNDLED.items():
        data = loader()
        groups = ", ".join(f"{g} ({s})" for g, s in zip(data.groups.names, data.group_sizes))
        print(f"| {name} | {data.n_samples} | {data.n_features} | {data.target_name} | "
              f"{data.sensitive_name}: {groups} | {text} |")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairmodel", description="Fair and robust learning: exact and stochastic "
                                     "solvers with a shared judge.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="cross-check group DRO on the bundled Adult data (exact CVXPY program vs ALEG)",
                          description="Solve group DRO (or MERO) on the bundled Adult data with the exact backend "
                                      "and with ALEG, judge both on the full data and print the cross-check.")
    demo.add_argument("--problem", choices=("gdro", "mero"), default="gdro", help="group DRO (default) or MERO")
    demo.add_argument("--groups", choices=("sex", "race", "sex_race"), default="sex", help="sensitive attribute")
    demo.add_argument("--radius", type=float, default=5.0, help="radius of the weight ball (default 5)")
    demo.add_argument("--exact-method", choices=("epigraph", "dual"), default="epigraph",
                      help="exact method: the CVXPY epigraph program (default) or the certified dual method")
    demo.add_argument("--seed", type=int, default=0, help="seed of the stochastic solver")
    demo.add_argument("--verbose", action="store_true", default=None, help="show progress bars")
    demo.set_defaults(func=_demo)
    ds = sub.add_parser("datasets", help="list the bundled data sets", description="List the bundled data sets "
                        "with their shapes, targets and sensitive attributes.")
    ds.set_defaults(func=_datasets)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except SolverError as exc:
        print(f"fairmodel: solver failure: {exc}", file=sys.stderr)
        return EXIT_SOLVER
    except (FairmodelError, ValueError, TypeError, OSError) as exc:
        print(f"fairmodel: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
