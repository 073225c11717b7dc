"""The cost of one epoch of the generic stochastic lowering against one pass over the data, written into
docs/benchmarks.md (section "generic_epoch").

For every case (the compositions of examples/compositions.py, the composition problem files of
examples/problems/ that are not their twins, and group DRO under equal opportunity on the synthetic task of
benchmarks/generic.py at n = 1e4 .. 1e6), in one process and side by side:

* **pass**: the judge's full-data value and gradient of the same declaration (the objective and every
  constraint's left-hand side walked on all rows: ``fm.expressions.value_and_grad``);
* **X w + X'v**: one product of the features with a vector and one of their transpose;
* **epoch, before**: one epoch of the method (a snapshot, then one pass of minibatches of about 32 rows per
  step) as the lowering was before its compiled evaluators: the oracle and the method of commit ``--before``
  (default BEFORE, read with ``git show`` and loaded next to the current modules);
* **epoch, tree walk**: the current method with the per-sample expressions evaluated by walking the expression
  tree at every step (``LagrangianOracle(..., compiled=False)``, what expressions outside the compiled form get);
* **epoch, compiled**: the same epoch with the compiled leaf evaluators (the default): the same minibatches, the
  same numbers up to rounding.

The steps are measured once (``default_steps``) and fixed, so that both epochs run the same iterations. Medians of
``--repeat`` runs, interleaved, with one BLAS thread and with the default threads. cProfile of one epoch of one
case in both modes says where the time goes.

    python benchmarks/generic_epoch.py            # all cases (about 10 minutes here)
    python benchmarks/generic_epoch.py --quick    # the Law School cases only, to check the script
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))

import fairmodel as fm  # noqa: E402
from fairmodel.families.lagrangian import LagrangianOracle  # noqa: E402
from fairmodel.frontends import problemfile  # noqa: E402
from fairmodel.stochastic.primal_dual import primal_dual  # noqa: E402

import compositions  # noqa: E402
from _report import table, write_section  # noqa: E402
from generic import equal_opportunity, synthetic  # noqa: E402

MIN_SAMPLE = 0.05     # seconds: a timing sample of a short operation repeats it at least this long
BEFORE = "9fcbcdb3d4d6c417610fcd658fafbfb4ae13b7db"    # the last commit before the compiled leaf evaluators


def load_before(commit: str) -> tuple | None:
    """(LagrangianOracle, primal_dual) of the generic lowering at ``commit``: its two modules read with git and
    executed as modules of the current package. None (with the reason printed) when git or the modules they import
    (moved since) are not there: the tree walk under the current method then stands for "before"."""
    try:
        return _load_before(commit)
    except (OSError, subprocess.CalledProcessError, ImportError) as e:
        print(f"the lowering of commit {commit[:7]} cannot be loaded here ({type(e).__name__}: {e}); the tree walk "
              f"stands for it", file=sys.stderr)
        return None


def _load_before(commit: str) -> tuple:
    out = []
    for name, path in (("fairmodel.families._lagrangian_before", "fairmodel/families/lagrangian.py"),
                       ("fairmodel.stochastic._primal_dual_before", "fairmodel/stochastic/primal_dual.py")):
        source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True,
                                text=True, check=True).stdout
        module = types.ModuleType(name)
        module.__package__, module.__file__ = name.rsplit(".", 1)[0], f"{commit[:7]}:{path}"
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        out.append(module)
    return out[0].LagrangianOracle, out[1].primal_dual


def cases(quick: bool):
    """(label, problem) pairs."""
    out = [(f"compositions.{name}", build) for name, build in compositions.EXAMPLES.items()]
    if quick:
        return [(label, build()) for label, build in out if "group_loss" not in label]
    out = [(label, build()) for label, build in out]
    out.append(("problems/assessment.toml", problemfile.load(ROOT / "examples/problems/assessment.toml")[0]))
    for n in (10_000, 100_000, 1_000_000):
        out.append((f"synthetic EO, n = {n:.0e}", equal_opportunity(synthetic(n))))
    return out


class Case:
    """The oracles (tree walk and compiled) of a problem's generic lowering, and the timed operations."""

    def __init__(self, prob, before):
        red, _ = prob.reduction_for("stochastic", "primal_dual")
        self.prob, self.red = prob, red
        self.form = red.form()
        coords = red.coordinates(self.form)
        bound = red._default_bound(self.form, None) if self.form.constraint_pieces else 0.0
        self.oracles = {mode: LagrangianOracle(self.form, red.w, bound, None, coords, compiled=mode == "compiled")
                        for mode in ("tree", "compiled")}
        b = self.oracles["compiled"].b
        self.oracles["compiled x4"] = LagrangianOracle(self.form, red.w, bound, 4 * b, coords)
        old_oracle, self.old_method = before or (None, primal_dual)
        self.oracles["before"] = self.oracles["tree"] if before is None else \
            old_oracle(self.form, red.w, bound, None, coords)
        assert self.oracles["compiled"].kernels is not None, "the case's leaves are not compiled"
        self.steps = self.oracles["compiled"].default_steps()
        rng = np.random.default_rng(0)
        self.theta = 0.5 * red.w.project(rng.standard_normal(red.w.shape))
        data = next(n.data for n in prob.canonical.objective.nodes() if isinstance(n, fm.expressions.LinearScore))
        self.X = data.X
        self.v = rng.standard_normal(self.X.shape[0])
        self.exprs = [prob.canonical.objective] + [c.lhs for c in prob.canonical.constraints]

    def data_pass(self):
        for e in self.exprs:
            fm.expressions.value_and_grad(e, {self.red.w: self.theta})

    def matvec(self):
        return self.X @ self.theta[:self.X.shape[1]] + 0.0, self.X.T @ self.v

    def epoch(self, mode):
        step_w, step_y = self.steps
        method = self.old_method if mode == "before" else primal_dual
        return method(self.oracles[mode], epochs=1, step_w=step_w, step_y=step_y[0], seed=0)

    def check_same_iterates(self) -> tuple:
        """(the largest difference of the epoch's output w between before, tree walk and compiled, the difference
        that a relative change of 1e-15 in the w-step makes): the three compute the same iterates up to rounding,
        and a long epoch amplifies rounding (measured: 1.4e-3 at 27,778 steps on the synthetic task at n = 1e6,
        1e-15 at 2,778 steps), so the first must stay within a few times the second or within 1e-8."""
        ws = [self.epoch(mode)["w"] for mode in ("before", "tree", "compiled")]
        diff = max(float(np.max(np.abs(w - ws[0]))) for w in ws[1:])
        step_w, step_y = self.steps
        nudged = primal_dual(self.oracles["compiled"], epochs=1, step_w=step_w * (1 + 1e-15), step_y=step_y[0],
                             seed=0)["w"]
        rounding = float(np.max(np.abs(nudged - ws[2])))
        assert diff <= max(1e-8 * max(1.0, float(np.max(np.abs(ws[0])))), 10.0 * rounding), \
            f"the epochs differ by {diff:.2g}, more than rounding explains ({rounding:.2g})"
        return diff, rounding

    def epoch_steps(self, mode):
        o = self.oracles[mode]
        return max(50, -(-o.n_samples // o.rows_per_step))


def timed(fn, times: int = 1) -> float:
    """The mean wall time of ``times`` calls of fn."""
    start = time.perf_counter()
    for _ in range(times):
        fn()
    return (time.perf_counter() - start) / times


def measure(case: Case, repeat: int, threads) -> dict:
    """Median times of the operations, interleaved; the short ones (a pass, a product) repeated within each sample
    to at least MIN_SAMPLE seconds, so that one slice of a busy machine's scheduler does not decide them."""
    ops = {"pass": case.data_pass, "matvec": case.matvec, "before": lambda: case.epoch("before"),
           "tree": lambda: case.epoch("tree"),
           "compiled": lambda: case.epoch("compiled"), "compiled x4": lambda: case.epoch("compiled x4")}
    times = {k: [] for k in ops}
    with threadpool_limits(limits=threads):
        inner = {k: max(1, int(MIN_SAMPLE / max(timed(op), 1e-6))) for k, op in ops.items()}   # and warm up
        for _ in range(repeat):
            for k, op in ops.items():
                times[k].append(timed(op, inner[k]))
    return {k: statistics.median(v) for k, v in times.items()}


def profile(case: Case, mode: str, top: int = 8) -> list:
    """The functions with the largest own time in one epoch: (function, share of the epoch)."""
    prof = cProfile.Profile()
    prof.enable()
    case.epoch(mode)
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO())
    total = sum(v[2] for v in stats.stats.values())
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    out = []
    for (file, line, name), v in rows:
        where = f"{Path(file).parent.name}/{Path(file).name}:{name}" if file != "~" else name
        out.append((where.replace("|", "/"), v[1], v[2] / total))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with (default: %(default)s)")
    args = parser.parse_args()
    before = load_before(args.before)
    rows, profiled, checks = [], None, []
    for label, prob in cases(args.quick):
        case = Case(prob, before)
        diff, rounding = case.check_same_iterates()
        checks.append(f"{label}: {diff:.1e} ({rounding:.1e})")
        print(checks[-1], flush=True)
        o = case.oracles["compiled"]
        repeat = args.repeat if o.n_samples < 500_000 else max(3, args.repeat // 2)
        for threads in (1, None):
            t = measure(case, repeat, threads)
            rows.append([label, f"{o.n_samples:,}", case.X.shape[1], o.rows_per_step, case.epoch_steps("compiled"),
                         "1" if threads == 1 else "default", f"{1e3 * t['pass']:.2f}", f"{1e3 * t['matvec']:.2f}",
                         f"{1e3 * t['before']:.1f}", f"{1e3 * t['tree']:.1f}", f"{1e3 * t['compiled']:.1f}",
                         f"{t['before'] / t['pass']:.1f}", f"{t['compiled'] / t['pass']:.1f}",
                         f"{t['compiled'] / t['matvec']:.1f}", f"{t['before'] / t['compiled']:.2f}",
                         f"{t['compiled x4'] / t['pass']:.1f}"])
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
        if label == "compositions.equal_opportunity":
            with threadpool_limits(limits=1):
                profiled = (label, {mode: profile(case, mode) for mode in ("before", "compiled")})
    body = ["## The cost of an epoch of the generic lowering (`benchmarks/generic_epoch.py`)",
            "One epoch of the generic stochastic lowering (a full-data snapshot, then one pass over the data in "
            "minibatches of about 32 rows per step, each step two evaluations of the sample leaves on its rows) "
            "against one pass over the data of the same declaration (the judge's full-data value and gradient of "
            "the objective and of every constraint) and against one X w + X'v. *Tree walk*: the per-sample "
            "expressions evaluated by walking the expression tree at every step (the lowering before its compiled "
            "evaluators, with the current method); *before*: "
            + (f"the oracle and the method of commit {args.before[:7]} (before this work)" if before else
               f"the tree walk (commit {args.before[:7]} could not be loaded in this checkout)")
            + "; *compiled*: the compiled leaf evaluators and the snapshot's side of the estimates computed for a "
            "block of steps at once (the default). Same steps, same minibatches, same iterates up to rounding; the "
            f"speed-up is before / compiled. Medians of {args.repeat} interleaved runs in one process (3 at "
            "n = 1e6; a pass and a "
            f"product repeated within each run to at least {MIN_SAMPLE:g} s); times in ms. The last column is the "
            "same epoch with 4 times the rows per step (`batch_size=`; a quarter of the steps, not the default: "
            "it changes the method's iterates), which shows the part of the cost that is per step.",
            table(["case", "n", "d", "rows / step", "steps / epoch", "BLAS threads", "pass", "X w + X'v",
                   "epoch, before", "epoch, tree walk", "epoch, compiled", "epoch / pass, before",
                   "epoch / pass, compiled",
                   "epoch / (X w + X'v), compiled", "speed-up", "epoch / pass, compiled, 4x rows / step"], rows)]
    body.append("The largest difference of an epoch's output w between before, tree walk and compiled (in parentheses, "
                "the difference made by a relative change of 1e-15 in the w-step: a long epoch amplifies rounding): "
                + "; ".join(checks) + ".")
    if profiled:
        label, by_mode = profiled
        for mode, top in by_mode.items():
            body.append(f"Where one epoch's time goes ({label}, {mode}, one thread, cProfile own time):\n\n"
                        + table(["function", "calls", "share of the epoch"],
                                [[f, c, f"{100 * s:.0f} %"] for f, c, s in top]))
    body.append(
        "Reading the profiles. Before, every step walked each distinct per-sample expression twice (at the half "
        "iterate and at the snapshot), evaluating every node and backpropagating through it, and every linear "
        "score node gathered its rows X[rows] anew in each walk (8 gathers per step here); the snapshot's side "
        "of the estimate was recomputed at every step although the snapshot is fixed for the epoch. Compiled: no "
        "walk, one gather per block of steps, the snapshot's side once per block, all simplices in one vector. "
        "What remains is a fixed number of small NumPy calls per step (about 80 function calls on 32 rows: the "
        "interpreter's cost, not arithmetic), which is why an epoch still costs several to tens of data passes "
        "when the features are few and why 4x the rows per step costs a fraction of it. Bringing an epoch down to "
        "a few passes needs larger minibatches (another method: the rows per step were chosen for the accuracy "
        "per epoch, see `ROWS_PER_STEP` in `families/lagrangian.py`) or a compiled inner loop (a JIT compiler: a "
        "new dependency).")
    text = "\n\n".join(body)
    if not args.quick:
        write_section("generic_epoch", text)
    print(text)


if __name__ == "__main__":
    main()
