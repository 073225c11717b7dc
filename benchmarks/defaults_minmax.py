"""The defaults of the min-max family on problems they were not tuned on (Maheshwari, Chiu, Mazumdar, Sastry,
Ratliff, AISTATS 2022): with defaults only, strategic Wasserstein DRO must cross-check ok (``fm.crosscheck``) and a
SaddleProblem's stochastic result must be ok (its duality gap within the judge's tolerance) and agree with the exact
saddle value within that gap, on

* strategic DRO: the paper's synthetic data at other sizes (300 to 10,000 rows), dimensions, radii (0.02 to 0.3),
  label costs, strategic powers and noise levels, imbalanced labels, badly scaled and collinear features, no
  strategic feature, sample weights, and the bundled Adult, Law School and Communities data with other targets and
  strategic features;
* saddle problems: matrix games of 2 x 2 to 30 x 20 with 1 to 20 components, rock-paper-scissors (whose start is
  the saddle point), badly scaled payoffs, and quadratic games (the built-in G1) of several shapes.

Each case is a named builder; the runner prints one row per case: ok, the exact and stochastic times, and what
failed (the failed checks, the message's advice).

    python benchmarks/defaults_minmax.py              # every case
    python benchmarks/defaults_minmax.py --quick      # the fast subset (the one tests/test_minmax_defaults.py runs)
    python benchmarks/defaults_minmax.py -k adult     # the cases whose name contains "adult"
    python benchmarks/defaults_minmax.py --speed      # time to ok on the bundled problems: fixed budget vs stopping
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fairmodel as fm  # noqa: E402


# -- strategic Wasserstein DRO ---------------------------------------------------------------------------------
def _wdrsc(data, radius=0.1, features=range(5), zeta=0.05, label_cost=0.5, sample_weight=None):
    w = fm.Weights(data.n_features)
    loss = fm.logistic_loss(fm.strategic_score(data, w, strategic_features=features, zeta=zeta), data.y,
                            sample_weight=sample_weight)
    return fm.Problem(fm.Minimize(fm.wasserstein_worst_case(loss, radius=radius, label_cost=label_cost)))


def _synthetic(n=1000, p=10, n_strategic=5, noise_var=0.1, seed=1):
    return fm.datasets.make_strategic_synthetic(n=n, p=p, n_strategic=n_strategic, noise_var=noise_var, seed=seed)


def _balanced(data, rows_per_class, seed=0, columns=None):
    rng = np.random.default_rng(seed)
    rows = np.concatenate([rng.choice(np.flatnonzero(data.y == c), rows_per_class, replace=False) for c in (1.0, -1.0)])
    rng.shuffle(rows)
    cols = list(range(data.n_features)) if columns is None else [data.feature_names.index(c) for c in columns]
    return fm.Dataset(data.X[np.ix_(rows, cols)], data.y[rows], feature_names=[data.feature_names[c] for c in cols],
                      name=f"{data.name}-sample")


def _scaled(seed=2):
    data = _synthetic(n=1000, seed=seed)
    X = data.X * np.array([30.0, 1.0, 0.03, 1.0, 1.0, 5.0, 1.0, 1.0, 0.2, 1.0])
    return fm.Dataset(X, data.y, feature_names=data.feature_names, name="synthetic-badly-scaled")


def _collinear(seed=3):
    data = _synthetic(n=1000, p=6, n_strategic=3, seed=seed)
    rng = np.random.default_rng(seed)
    X = np.hstack([data.X, data.X[:, :3] + 1e-3 * rng.standard_normal((data.n_samples, 3))])
    names = list(data.feature_names) + [f"copy{j}" for j in range(3)]
    return fm.Dataset(X, data.y, feature_names=names, name="synthetic-collinear")


def _imbalanced(seed=4):
    data = _synthetic(n=3000, seed=seed)
    neg, pos = np.flatnonzero(data.y < 0), np.flatnonzero(data.y > 0)
    rows = np.sort(np.concatenate([neg[:1200], pos[:300]]))
    return data.take(rows)


def _adult():
    return fm.datasets.load_adult(target="income", sensitive="sex")


def _lawschool():
    return fm.datasets.load_lawschool()


def _communities():
    data = fm.datasets.load_communities()
    y = np.where(data.y > np.median(data.y), -1.0, 1.0)        # +1: a low crime rate
    return fm.Dataset(data.X[:, :20], y, feature_names=data.feature_names[:20], name="communities-binary")


ADULT6 = ["age", "fnlwgt", "education.num", "capital.gain", "capital.loss", "hours.per.week"]
STRATEGIC_CASES = {
    "wdrsc synthetic n=300": lambda: _wdrsc(_synthetic(n=300)),
    "wdrsc synthetic n=1000 seed 1": lambda: _wdrsc(_synthetic()),
    "wdrsc synthetic n=3000": lambda: _wdrsc(_synthetic(n=3000, seed=5)),
    "wdrsc synthetic n=10000": lambda: _wdrsc(_synthetic(n=10000, seed=6)),
    "wdrsc radius 0.02": lambda: _wdrsc(_synthetic(seed=7), radius=0.02),
    "wdrsc radius 0.05": lambda: _wdrsc(_synthetic(seed=8), radius=0.05),
    "wdrsc radius 0.2": lambda: _wdrsc(_synthetic(seed=9), radius=0.2),
    "wdrsc radius 0.3": lambda: _wdrsc(_synthetic(seed=10), radius=0.3),
    "wdrsc p=4, 2 strategic": lambda: _wdrsc(_synthetic(p=4, n_strategic=2, seed=11), features=range(2)),
    "wdrsc p=25, 12 strategic": lambda: _wdrsc(_synthetic(p=25, n_strategic=12, seed=12), features=range(12)),
    "wdrsc no strategic feature": lambda: _wdrsc(_synthetic(seed=13), features=None),
    "wdrsc zeta=0.5": lambda: _wdrsc(_synthetic(seed=14), zeta=0.5),
    "wdrsc label cost 0.2": lambda: _wdrsc(_synthetic(seed=15), label_cost=0.2),
    "wdrsc label cost 2": lambda: _wdrsc(_synthetic(seed=16), label_cost=2.0),
    "wdrsc noisy labels": lambda: _wdrsc(_synthetic(noise_var=2.0, seed=17)),
    "wdrsc imbalanced 80/20": lambda: _wdrsc(_imbalanced()),
    "wdrsc badly scaled features": lambda: _wdrsc(_scaled(), features=[0, 2, 5]),
    "wdrsc collinear features": lambda: _wdrsc(_collinear(), features=[0, 1, 6]),
    "wdrsc sample weights": lambda: _wdrsc(_synthetic(seed=18), sample_weight=np.random.default_rng(18).integers(
        1, 4, 1000).astype(float)),
    "wdrsc adult balanced 2000, radius 0.05": lambda: _wdrsc(_balanced(_adult(), 1000, columns=ADULT6), radius=0.05,
                                                             features=["education.num", "capital.gain",
                                                                       "hours.per.week"]),
    "wdrsc adult 3000 rows, 20 features": lambda: _wdrsc(_first_columns(_adult().take(np.arange(3000)), 20),
                                                         radius=0.05, features=[2, 3, 5]),
    "wdrsc lawschool 4000 rows": lambda: _wdrsc(_first_columns(_lawschool().take(np.arange(4000)), 8), radius=0.05,
                                                features=[1, 2]),
    "wdrsc communities": lambda: _wdrsc(_communities(), radius=0.05, features=[8, 9]),
}


def _first_columns(data, k):
    return fm.Dataset(data.X[:, :k], data.y, feature_names=data.feature_names[:k], name=f"{data.name}[:, :{k}]")


# -- generic saddle problems --------------------------------------------------------------------------------------
def _matrix(n, m, k, seed, scale=1.0):
    return fm.SaddleProblem.matrix_game(scale * np.random.default_rng(seed).standard_normal((n, m, k)))


def _rps():
    A = np.array([[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]])
    return fm.SaddleProblem.matrix_game(A)


def _quadratic(n, q, d, m, mu, rho, seed):
    rng = np.random.default_rng(seed)
    return fm.SaddleProblem.quadratic(rng.standard_normal((n, q, d)), rng.standard_normal((n, q)),
                                      rng.standard_normal((n, m, d)), rng.standard_normal((n, m)), mu, rho)


def _robust_least_squares(n=40, d=3, radius=5.0, seed=0):
    """The user-defined saddle problem of docs/minmax.md (its gap by two CVXPY solves; no exact method)."""
    import cvxpy as cp
    rng = np.random.default_rng(seed)
    a, b, c = rng.standard_normal((n, d)), rng.standard_normal(n), rng.standard_normal((n, d))
    return fm.SaddleProblem(
        value=lambda x, y, i: 0.5 * (a[i] @ x - b[i]) ** 2 + y[i] * (c[i] @ x) - 0.5 * y[i] ** 2,
        n=n, x_domain=fm.Ball(d, radius), y_domain=fm.Box(-1, 1, size=n),
        grad=lambda x, y, i: ((a[i] @ x - b[i]) * a[i] + y[i] * c[i], np.eye(n)[i] * (c[i] @ x - y[i])),
        cvxpy_value=lambda x, y: (0.5 * cp.sum_squares(a @ x - b) + y @ (c @ x) - 0.5 * cp.sum_squares(y)) / n)


SADDLE_CASES = {
    "matrix 4x4 n=1 seed 0": lambda: _matrix(1, 4, 4, 0),
    "matrix 4x4 n=1 seed 3": lambda: _matrix(1, 4, 4, 3),
    "matrix 2x2 n=1": lambda: _matrix(1, 2, 2, 1),
    "matrix 3x7 n=1": lambda: _matrix(1, 3, 7, 2),
    "matrix 10x10 n=1": lambda: _matrix(1, 10, 10, 4),
    "matrix 30x20 n=1": lambda: _matrix(1, 30, 20, 5),
    "matrix 4x4 n=5": lambda: _matrix(5, 4, 4, 6),
    "matrix 5x3 n=20": lambda: _matrix(20, 5, 3, 7),
    "matrix 4x4 n=1 payoffs x 1000": lambda: _matrix(1, 4, 4, 8, scale=1000.0),
    "matrix 4x4 n=1 payoffs x 0.001": lambda: _matrix(1, 4, 4, 9, scale=1e-3),
    "rock-paper-scissors": _rps,
    "quadratic n=10 d=3 m=2": lambda: _quadratic(10, 2, 3, 2, 0.5, 2.0, 0),
    "quadratic n=30 d=5 m=4 mu=0.1": lambda: _quadratic(30, 3, 5, 4, 0.1, 5.0, 1),
    "quadratic n=1 d=8 m=8 rho=20": lambda: _quadratic(1, 8, 8, 8, 1.0, 20.0, 2),
    "matrix 10x10 n=50": lambda: _matrix(50, 10, 10, 10),
    "robust least squares (docs), n=40": lambda: _robust_least_squares(),
    "robust least squares, n=100, d=6, radius 1": lambda: _robust_least_squares(100, 6, 1.0, 1),
}
QUICK = ("wdrsc synthetic n=300", "wdrsc radius 0.2", "wdrsc no strategic feature", "matrix 4x4 n=1 seed 0",
         "matrix 4x4 n=5", "rock-paper-scissors", "quadratic n=10 d=3 m=2")


def run_case(name: str) -> dict:
    """Solve one case with defaults only; returns ok, the times, what failed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in STRATEGIC_CASES:
            report = fm.crosscheck(STRATEGIC_CASES[name](), seed=0)
            failed = [c for c in report.checks if not c.passed] + \
                [c for r in (report.exact, report.stochastic) for c in _failed(r)]
            stochastic = report.stochastic
            return {"case": name, "ok": report.ok, "exact_s": report.exact.timings.get("total", np.nan),
                    "stochastic_s": stochastic.timings.get("total", np.nan),
                    "epochs": stochastic.metrics.get("epochs_run"), "failed": _why(failed, stochastic)}
        sp = SADDLE_CASES[name]()
        exact = sp.solve(method="exact") if sp._exact is not None else None
        stochastic = sp.solve(seed=0)
        gap = stochastic.certificate.get("duality_gap", np.inf)
        # max_y L(x, .) >= OPT >= min_x L(., y): the stochastic objective is within its gap of the exact value
        agree = exact is None or abs(stochastic.objective - exact.objective) <= gap + 1e-9 * max(1.0, abs(exact.objective))
        ok = (exact is None or exact.ok) and stochastic.ok and agree
        failed = (_failed(exact) if exact is not None else []) + _failed(stochastic)
        return {"case": name, "ok": ok, "exact_s": exact.timings["total"] if exact is not None else np.nan,
                "stochastic_s": stochastic.timings["total"],
                "epochs": stochastic.metrics.get("epochs_run"),
                "failed": _why(failed, stochastic) + ("" if agree else " values disagree beyond the gap")}


def _failed(result) -> list:
    return [c for c in result.failed_checks()] if not result.ok else []


def _why(failed, stochastic) -> str:
    if not failed:
        return "" if stochastic.ok else stochastic.message[:160]
    parts = []
    for c in failed:
        name, value, tol = (c.name, c.value, c.tolerance) if hasattr(c, "name") else (c["name"], c["value"],
                                                                                       c["tolerance"])
        parts.append(f"{name} = {value:.3g} > {tol:.3g}")
    advice = stochastic.message[stochastic.message.find("What to try"):] if "What to try" in stochastic.message else ""
    return "; ".join(parts) + (f". {advice}" if advice else "")


def _bundled():
    """The bundled strategic problems: the problem file and the cases of examples/strategic_dro.py."""
    from fairmodel.frontends import problemfile
    path = Path(__file__).resolve().parent.parent / "examples" / "problems" / "strategic_dro_synthetic.toml"
    spec = problemfile.read(str(path))
    adult = _balanced(_adult(), 1000, columns=ADULT6)
    return {"strategic_dro_synthetic.toml (n=1000, radius 0.1)":
            problemfile.build_problem(spec, problemfile.load_data(spec)),
            "example part 4: synthetic train 1000, seed 1": _wdrsc(_synthetic(n=1800).take(np.arange(1000))),
            "example part 5: Adult balanced train 1000, radius 0.05": _wdrsc(
                adult.take(np.arange(1000)), radius=0.05, features=["education.num", "capital.gain", "hours.per.week"])}


def speed(seeds=(0, 1, 2)):
    """Time to an ok stochastic result, the old fixed budget (stop="budget") against stopping on the checks, in one
    process, interleaved; the median over seeds."""
    print("| bundled problem | old: fixed budget (s, ok) | new: stop on the checks (s, ok, epochs) | new / old |")
    print("|---|---|---|---|")
    ratios = []
    for name, prob in _bundled().items():
        old, new = [], []
        for seed in seeds:
            for rule, out in (("budget", old), ("checks", new)):
                res = prob.solve(backend="stochastic", seed=seed, stop=rule)
                out.append((res.timings["total"], res.ok, res.metrics["epochs_run"]))
        t_old, t_new = np.median([t for t, _, _ in old]), np.median([t for t, _, _ in new])
        ratios.append(t_new / t_old)
        print(f"| {name} | {t_old:.2f} ({sum(ok for _, ok, _ in old)}/{len(seeds)} ok) | {t_new:.2f} "
              f"({sum(ok for _, ok, _ in new)}/{len(seeds)} ok, {int(np.median([e for _, _, e in new]))} epochs) | "
              f"{t_new / t_old:.2f} |", flush=True)
    print(f"\nmedian new / old: {np.median(ratios):.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the fast subset")
    parser.add_argument("-k", default="", help="only the cases whose name contains this")
    parser.add_argument("--speed", action="store_true", help="old fixed budget against the new rule, bundled problems")
    args = parser.parse_args(argv)
    if args.speed:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            speed()
        return
    names = [n for n in (*STRATEGIC_CASES, *SADDLE_CASES) if (not args.quick or n in QUICK) and args.k in n]
    print("| case | ok | exact s | stochastic s | epochs | what failed |")
    print("|---|---|---|---|---|---|")
    n_ok = 0
    for name in names:
        start = time.perf_counter()
        try:
            row = run_case(name)
        except Exception as exc:         # a case that raises is a failure of the defaults, reported as such
            row = {"case": name, "ok": False, "exact_s": np.nan, "stochastic_s": time.perf_counter() - start,
                   "epochs": None, "failed": f"{type(exc).__name__}: {exc}"[:200]}
        n_ok += bool(row["ok"])
        print(f"| {row['case']} | {'ok' if row['ok'] else 'NOT OK'} | {row['exact_s']:.2f} | {row['stochastic_s']:.2f} "
              f"| {row['epochs']} | {row['failed']} |", flush=True)
    print(f"\n{n_ok} / {len(names)} ok ({100.0 * n_ok / max(len(names), 1):.0f} %)")


if __name__ == "__main__":
    main()
