"""Pareto frontiers of test AUC vs test AUC-fairness gap (reproduction of Figure 1 of the AUC-fairness paper,
Yao, Lin, Yang, AISTATS 2023, Section 6 and App. E).

Data: Adult (a9a-style one-hot encoding, sensitive attribute gender) and Law School (bar passage, sensitive
attribute race); the sensitive attribute is also a feature, as in LIBSVM's a9a. Each is split 60/20/20 into
train / validation / test per seed. Presets: group-AUC, inter-group
(xAUC) and intra-group fairness. Methods, linear scores with ||w|| <= 10, c1 = 0.5, c2 = 1:

* level-set: SFLS + Bregman SMD (``prob.solve(backend="stochastic", method="sfls")``) for every kappa of the grid;
  model selection of App. E.3 among its outer iterates: the best validation AUC among those with
  validation fairness gap (2) <= kappa;
* post-processing (Kallus & Zhou; group and inter presets): the unconstrained surrogate-AUC model, protected scores
  rescored as omega1 h + omega2 on the paper's grid, tuned on validation for each kappa;
* correlation penalty (Beutel et al.; group preset): SGD on the AUC loss + lam |corr(h, gamma)| for several lam,
  iterates selected as above;
* proxy-Lagrangian (after Cotter et al.; all presets): SGD / projected ascent on (2), selected as above.

Run ``python examples/auc_fairness_frontier.py`` (full configuration: 5 seeds, 6 kappas, T = 2000) or with
``--quick`` (3 seeds, 4 kappas, T = 1000). Writes ``auc_fairness_frontier.png`` and ``auc_fairness_frontier.md``
(the tables) into the folder ``--out`` (default ``./fairmodel-output``).
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

import fairmodel as fm
from fairmodel.baselines import auc as B
from fairmodel.metrics.auc import select_by_validation


PRESETS = ("group", "inter", "intra")


def table(header, rows) -> str:
    """A Markdown table."""
    cell = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows])


RADIUS = 10.0
LAMBDAS = (0.0, 0.1, 0.3, 1.0, 3.0)


def load(name: str) -> fm.Dataset:
    if name == "adult":   # LIBSVM's a9a keeps gender among its 123 binary features
        return fm.datasets.load_adult(target="income", sensitive="sex", encoding="a9a", include_sensitive=True)
    return fm.datasets.load_lawschool(target="bar1", sensitive="race", include_sensitive=True)


def test_point(scores_val, scores_test, val, test, kind, kappa):
    """Model selection on validation (App. E.3), then the test AUC and test fairness gap of the choice."""
    pick = select_by_validation(scores_val, val.y, val.groups, kind, kappa)
    t = fm.metrics.auc_fairness_terms(scores_test[pick["index"]], test.y, test.groups, kind)
    return {"test_auc": t["auc"], "test_gap": t["gap"], "val_feasible": pick["feasible"]}


def run_seed(name, seed, cfg, rows):
    data = load(name)
    train, val, test = data.split([0.6, 0.2, 0.2], seed=seed)
    w = fm.Weights(data.n_features, radius=RADIUS)
    s = train.score(w)
    timing = {}
    start = time.perf_counter()
    base = fm.Problem(fm.Minimize(fm.auc_loss(s, train.y))).solve("exact").variables["w"]
    timing["unconstrained (exact)"] = time.perf_counter() - start
    for kind in PRESETS:
        # level-set (SFLS + SMD)
        start = time.perf_counter()
        for kappa in cfg.kappas:
            prob = fm.Problem(fm.Minimize(fm.auc_loss(s, train.y)), [fm.auc_gap(s, train, kind=kind) <= kappa])
            # the paper's protocol (App. E.3): a fixed schedule, then model selection among all outer iterates
            r = prob.solve("stochastic", method="sfls", seed=seed, T=cfg.T, stop="budget")
            cands = list(r.metrics["iterates"])
            rows.append({"dataset": name, "preset": kind, "method": "level-set", "kappa": kappa, "seed": seed,
                         **test_point([val.X @ c for c in cands], [test.X @ c for c in cands], val, test, kind, kappa)})
        timing[f"level-set {kind}"] = time.perf_counter() - start
        # post-processing (not for intra: the paper says its tuning needs the labels)
        if kind != "intra":
            start = time.perf_counter()
            grid = B.rescoring_grid(val.X @ base, val.y, val.groups, kind)
            gamma_test = fm.metrics.auc.signed_groups(test.groups, test.n_samples, None, kind)[0]
            for kappa in cfg.kappas:
                c = B.choose_rescoring(grid, kappa)
                h = B.rescore(test.X @ base, gamma_test, c["omega1"], c["omega2"])
                t = fm.metrics.auc_fairness_terms(h, test.y, test.groups, kind)
                rows.append({"dataset": name, "preset": kind, "method": "post-processing", "kappa": kappa,
                             "seed": seed, "test_auc": t["auc"], "test_gap": t["gap"], "val_feasible": c["feasible"]})
            timing[f"post-processing {kind}"] = time.perf_counter() - start
        # correlation penalty (group preset only, as in the paper)
        if kind == "group":
            start = time.perf_counter()
            cands = []
            for lam in LAMBDAS:
                cands += B.correlation_penalty(s, train, lam, steps=cfg.sgd_steps, seed=seed)["iterates"][1:]
            for kappa in cfg.kappas:
                rows.append({"dataset": name, "preset": kind, "method": "correlation-penalty", "kappa": kappa,
                             "seed": seed, **test_point([val.X @ c for c in cands], [test.X @ c for c in cands],
                                                        val, test, kind, kappa)})
            timing["correlation penalty"] = time.perf_counter() - start
        # proxy-Lagrangian
        start = time.perf_counter()
        for kappa in cfg.kappas:
            cands = B.proxy_lagrangian(s, train, kind, kappa, steps=cfg.sgd_steps, seed=seed)["iterates"][1:]
            rows.append({"dataset": name, "preset": kind, "method": "proxy-Lagrangian", "kappa": kappa, "seed": seed,
                         **test_point([val.X @ c for c in cands], [test.X @ c for c in cands], val, test, kind, kappa)})
        timing[f"proxy-Lagrangian {kind}"] = time.perf_counter() - start
    return timing


def aggregate(rows):
    keys = sorted({(r["dataset"], r["preset"], r["method"], r["kappa"]) for r in rows},
                  key=lambda k: (k[0], PRESETS.index(k[1]), k[2], k[3]))
    out = []
    for key in keys:
        sel = [r for r in rows if (r["dataset"], r["preset"], r["method"], r["kappa"]) == key]
        auc = np.array([r["test_auc"] for r in sel])
        gap = np.array([r["test_gap"] for r in sel])
        se = lambda v: v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else 0.0  # noqa: E731
        out.append({"dataset": key[0], "preset": key[1], "method": key[2], "kappa": key[3], "auc": auc.mean(),
                    "auc_se": se(auc), "gap": gap.mean(), "gap_se": se(gap),
                    "feasible": np.mean([r["val_feasible"] for r in sel])})
    return out


def dominance(agg):
    """Per (dataset, preset): the share of baseline points that some level-set point weakly dominates
    (test gap no larger and test AUC no smaller, each up to one standard error)."""
    lines = []
    for name in sorted({a["dataset"] for a in agg}):
        for kind in PRESETS:
            ls = [a for a in agg if (a["dataset"], a["preset"], a["method"]) == (name, kind, "level-set")]
            base = [a for a in agg if (a["dataset"], a["preset"]) == (name, kind) and a["method"] != "level-set"]
            dom = [any(p["gap"] <= b["gap"] + p["gap_se"] + b["gap_se"]
                       and p["auc"] >= b["auc"] - p["auc_se"] - b["auc_se"] for p in ls) for b in base]
            if base:
                lines.append(f"| {name} | {kind} | {sum(dom)}/{len(dom)} |")
    return "\n".join(["| dataset | preset | baseline points dominated by level-set |", "|---|---|---|"] + lines)


def plot(agg, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = sorted({a["dataset"] for a in agg})
    fig, axes = plt.subplots(len(names), 3, figsize=(13, 4 * len(names)), squeeze=False)
    styles = {"level-set": ("C0", "o"), "post-processing": ("C1", "s"), "correlation-penalty": ("C2", "^"),
              "proxy-Lagrangian": ("C3", "D")}
    for i, name in enumerate(names):
        for j, kind in enumerate(PRESETS):
            ax = axes[i, j]
            for method, (color, marker) in styles.items():
                pts = sorted([a for a in agg if (a["dataset"], a["preset"], a["method"]) == (name, kind, method)],
                             key=lambda a: a["kappa"])     # the path traced as kappa grows
                if pts:
                    ax.errorbar([p["gap"] for p in pts], [p["auc"] for p in pts], xerr=[p["gap_se"] for p in pts],
                                yerr=[p["auc_se"] for p in pts], color=color, marker=marker, label=method, capsize=2)
            ax.set_title(f"{name}: {kind}")
            ax.set_xlabel("test fairness gap (1)")
            ax.set_ylabel("test AUC")
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="3 seeds, 4 kappas, T = 1000 (about a quarter of the time)")
    parser.add_argument("--datasets", nargs="+", default=["adult", "lawschool"],
                        help="data sets to run (default: adult lawschool)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 5, --quick 3)")
    parser.add_argument("--out", default="fairmodel-output", help="folder for the figure and the tables")
    parser.add_argument("--no-write", action="store_true", help="print the tables without writing files")
    cfg = parser.parse_args(argv)
    cfg.seeds = range(cfg.seeds or (3 if cfg.quick else 5))
    cfg.kappas = (0.01, 0.05, 0.2, 0.5) if cfg.quick else (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
    cfg.T = 1000 if cfg.quick else 2000
    cfg.sgd_steps = 2000
    rows, timings, start = [], {}, time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # SFLS halting notes at tiny kappa are part of the result
        for name in cfg.datasets:
            for seed in cfg.seeds:
                for k, v in run_seed(name, seed, cfg, rows).items():
                    timings[(name, k)] = timings.get((name, k), 0.0) + v
                print(f"{name} seed {seed} done ({time.perf_counter() - start:.0f} s)", flush=True)
    agg = aggregate(rows)
    body = [f"Configuration: {'--quick' if cfg.quick else 'full'}; seeds {list(cfg.seeds)}; kappa grid "
            f"{list(cfg.kappas)}; SFLS T = {cfg.T} SMD steps per oracle call (batch 100, eta auto, theta 1.5); "
            f"SGD baselines {cfg.sgd_steps} steps (batch 100); total wall time {time.perf_counter() - start:.0f} s.",
            "", "Mean over seeds (standard error in parentheses); `val feasible` = share of seeds where the selected "
            "model met gap <= kappa on validation.", "",
            table(["dataset", "preset", "method", "kappa", "test AUC", "test gap", "val feasible"],
                  [[a["dataset"], a["preset"], a["method"], a["kappa"], f"{a['auc']:.4f} ({a['auc_se']:.4f})",
                    f"{a['gap']:.4f} ({a['gap_se']:.4f})", f"{a['feasible']:.2f}"] for a in agg]),
            "", dominance(agg), "", "Wall time per dataset and method (all seeds and kappas):", "",
            table(["dataset", "step", "seconds"], [[n, k, v] for (n, k), v in timings.items()])]
    text = "\n".join(body)
    if cfg.no_write:
        print(text)
        return
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "auc_fairness_frontier.md").write_text(text + "\n")
    plot(agg, out / "auc_fairness_frontier.png")
    print(text)
    print(f"saved: {out / 'auc_fairness_frontier.md'}, {out / 'auc_fairness_frontier.png'}")


if __name__ == "__main__":
    main()
