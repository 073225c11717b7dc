"""Benchmark: saddle problems of many components drawn at random, defaults only, both backends.

Forty games (``--cases``) drawn from one seed (``--seed``): matrix games (the built-in G2) of 2-300 components of 2 x 2 to 14 x 14
normal payoffs, scaled by 0.01, 1 or 100 and some with a mean of 1; quadratic games (the built-in G1) of 2-300
components; and the robust least-squares game of docs/minmax.md (given by callables, its gap by CVXPY) with 10-100
components on balls of radius 0.5-10; and (``--values-only``, ten by default) matrix games of 2-100 components of
2 x 2 to 8 x 8 payoffs given by their values only (no ``grad=``: zeroth order), whose exact side is the LP of the same
game. Each case solves with ``backend="exact"`` and with the default stochastic method
(``sp.solve(seed=0)``) in a fresh process with one BLAS thread, and is ok when both results are ok and their values
agree within the sum of their duality gaps (each bounds its distance to the saddle value). ``--baseline DIR`` also
runs every case with the code in DIR (another checkout), one after the other per case, for a before / after table.

    python benchmarks/saddle_wide.py --baseline ../old-checkout        # writes its section of docs/benchmarks.md
    python benchmarks/saddle_wide.py --rows run.jsonl                   # the table from printed rows
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_report_options, printed_rows, run_in_tree, table, write_section  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("matrix", "matrix", "quadratic", "least squares")


def cases(count: int, seed: int = 2026, values_only: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for j in range(count):
        kind, n = KINDS[j % 4], int(rng.choice([2, 5, 10, 30, 100, 300]))
        if kind == "matrix":
            out.append(dict(kind=kind, n=n, m=int(rng.integers(2, 15)), k=int(rng.integers(2, 15)),
                            scale=float(rng.choice([1.0, 1.0, 100.0, 0.01])), mean=float(rng.choice([0.0, 0.0, 1.0])),
                            seed=seed + 1000 + j))
        elif kind == "quadratic":
            out.append(dict(kind=kind, n=n, q=int(rng.integers(1, 5)), d=int(rng.integers(2, 9)),
                            m=int(rng.integers(1, 6)), mu=float(rng.choice([0.01, 0.1, 1.0])),
                            rho=float(rng.choice([0.5, 2.0, 10.0])), seed=seed + 1000 + j))
        else:
            out.append(dict(kind=kind, n=min(n, 100), d=int(rng.integers(2, 8)),
                            radius=float(rng.choice([0.5, 2.0, 10.0])), seed=seed + 1000 + j))
    rng = np.random.default_rng(seed + 1)      # its own stream: the same games whatever --cases says
    for j in range(values_only):
        out.append(dict(kind="matrix, values only", n=int(rng.choice([2, 5, 10, 30, 100])), m=int(rng.integers(2, 9)),
                        k=int(rng.integers(2, 9)), scale=float(rng.choice([1.0, 100.0, 0.01])), mean=0.0,
                        seed=seed + 2000 + j))
    return out


# one case in a fresh process of the tree given as its first argument (so that a baseline imports its own code)
RUN = r'''
import json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import cvxpy as cp
import numpy as np
import fairmodel as fm
c = json.loads(sys.argv[2])
rng = np.random.default_rng(c["seed"])
if c["kind"].startswith("matrix"):
    sp = fm.SaddleProblem.matrix_game(c["mean"] + c["scale"] * rng.standard_normal((c["n"], c["m"], c["k"])))
elif c["kind"] == "quadratic":
    n, q, d, m = c["n"], c["q"], c["d"], c["m"]
    sp = fm.SaddleProblem.quadratic(rng.standard_normal((n, q, d)), rng.standard_normal((n, q)),
                                    rng.standard_normal((n, m, d)), rng.standard_normal((n, m)), c["mu"], c["rho"])
else:
    n, d = c["n"], c["d"]
    a, b, cc = rng.standard_normal((n, d)), rng.standard_normal(n), rng.standard_normal((n, d))
    sp = fm.SaddleProblem(
        value=lambda x, y, i: 0.5 * (a[i] @ x - b[i]) ** 2 + y[i] * (cc[i] @ x) - 0.5 * y[i] ** 2,
        n=n, x_domain=fm.Ball(d, c["radius"]), y_domain=fm.Box(-1, 1, size=n),
        grad=lambda x, y, i: ((a[i] @ x - b[i]) * a[i] + y[i] * cc[i], np.eye(n)[i] * (cc[i] @ x - y[i])),
        cvxpy_value=lambda x, y: (0.5 * cp.sum_squares(a @ x - b) + y @ (cc @ x) - 0.5 * cp.sum_squares(y)) / n)
start = time.perf_counter()
exact = sp.solve(method="exact")
exact_s = time.perf_counter() - start
if c["kind"] == "matrix, values only":          # the same game without grad=: the stochastic side of zeroth order
    A = c["mean"] + c["scale"] * np.random.default_rng(c["seed"]).standard_normal((c["n"], c["m"], c["k"]))
    Abar = A.mean(axis=0)
    sp = fm.SaddleProblem(lambda x, y, i: float(x @ A[i] @ y), c["n"], fm.Simplex(c["m"]), fm.Simplex(c["k"]),
                          max_y=lambda x: float(np.max(Abar.T @ x)), min_x=lambda y: float(np.min(Abar @ y)))
start = time.perf_counter()
stochastic = sp.solve(seed=0)
stochastic_s = time.perf_counter() - start
gaps = stochastic.certificate.get("duality_gap", np.inf) + exact.certificate.get("duality_gap", np.inf)
agree = bool(abs(stochastic.objective - exact.objective) <= gaps + 1e-9 * max(1.0, abs(exact.objective)))
print(json.dumps({"exact_ok": bool(exact.ok), "stochastic_ok": bool(stochastic.ok), "agree": agree,
                  "exact_s": exact_s, "stochastic_s": stochastic_s, "epochs": stochastic.metrics.get("epochs_run"),
                  "estimator": stochastic.solver.get("options", {}).get("estimator", "one-point")}))
'''


def run(tree: Path, case: dict) -> dict:
    out = run_in_tree(RUN, tree, json.dumps(case))
    if "error" not in out:
        out["ok"] = out["exact_ok"] and out["stochastic_ok"] and out["agree"]
    return out


def run_both(case: dict, baseline: Path | None) -> dict:
    """One case with this code and, if given, the baseline's; printed as one JSON row."""
    row = {"case": case, "this": run(ROOT, case)}
    if baseline is not None:
        row["baseline"] = run(baseline.resolve(), case)
    print(json.dumps(row), flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--seed", type=int, default=2026, help="the seed the cases are drawn from")
    ap.add_argument("--values-only", type=int, default=10, help="matrix games given by their values only")
    ap.add_argument("--note", default="", help="a sentence added under the table (how the rows were measured)")
    ap.add_argument("--baseline", type=Path, help="another checkout: every case also runs with its code")
    add_report_options(ap)
    args = ap.parse_args(argv)
    rows = printed_rows(args.rows) if args.rows else [run_both(case, args.baseline)
                                                       for case in cases(args.cases, args.seed, args.values_only)]
    text = report(rows) + (f"\n{args.note}\n" if args.note else "")
    print(text)
    if not args.no_write:
        write_section("saddle_wide", text)
    return rows


def _summary(results: list[dict]) -> list:
    ok = [r.get("ok", False) for r in results]
    return [f"{sum(ok)} / {len(ok)}", f"{sum(r.get('stochastic_ok', False) for r in results)}",
            f"{sum(r.get('exact_ok', False) for r in results)}",
            f"{sum(r.get('stochastic_s', 0.0) for r in results):.1f}",
            f"{max((r.get('epochs') or 0 for r in results), default=0):,}"]


def report(rows) -> str:
    sides = ["this"] + (["baseline"] if any("baseline" in r for r in rows) else [])
    body = []
    for kind in dict.fromkeys(r["case"]["kind"] for r in rows):
        group = [r for r in rows if r["case"]["kind"] == kind]
        for side in sides:
            body.append([kind, len(group), "this code" if side == "this" else "baseline",
                         *_summary([r[side] for r in group])])
    for side in sides:
        body.append(["all", len(rows), "this code" if side == "this" else "baseline",
                     *_summary([r[side] for r in rows])])
    failed = [f"{r['case']} ({side}: exact {r[side].get('exact_ok')}, stochastic {r[side].get('stochastic_ok')}, "
              f"agree {r[side].get('agree')}{', ' + r[side]['error'] if 'error' in r[side] else ''})"
              for r in rows for side in sides if not r[side].get("ok")]
    return ("## Saddle problems of many components, drawn at random (`benchmarks/saddle_wide.py`)\n\n"
            "Defaults only, one BLAS thread, a fresh process per case and code; ok: both results ok and their values "
            "within the sum of their duality gaps. Stochastic seconds: the default stochastic solves, summed; epochs: "
            "the longest stochastic run.\n\n"
            + table(["games", "cases", "code", "ok", "stochastic ok", "exact ok", "stochastic s", "epochs (max)"],
                    body)
            + "\n\nNot ok:\n\n" + ("\n".join(f"- {f}" for f in failed) if failed else "- none") + "\n")


if __name__ == "__main__":
    main()
