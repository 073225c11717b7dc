"""Verified past memory: exact model-space methods, stochastic methods, the judge and the cross-check on a Parquet data
set larger than any worker's memory, on a dask.distributed LocalCluster of worker processes. Written into
docs/benchmarks.md (section "past_memory"; the other data sets in sections of their own).

A data set (``--dataset``: the bundled Law School data, 20,800 rows, 9 standardized features, bar passage label,
race, by default; Adult by sex; Communities and Crime by race; a synthetic one with four groups of skewed sizes) is
replicated ``--copies`` times (by default enough copies for 2e7 rows) and shuffled, then written as Parquet files of
``--file-rows`` rows (one Dask chunk each). Replicating the rows leaves every mean, rate and AUC of the data unchanged,
so every declaration has the same solution on the replicated files as on the original in-memory rows: each exact answer on the cluster is compared with the exact answer on the
original data (relative difference of the objective and of the weights), and each declaration is cross-checked
(``fm.crosscheck``: the exact and the stochastic backend, both judged on the full replicated data).

Per declaration: ok, the passes over the data (the exact solve; the stochastic solve with both judgments), wall times, the peak
resident memory of each worker process (sampled every 0.2 s) against the data's in-memory size, and the peak of
this (client) process.

    PYTHONPATH=. python benchmarks/past_memory.py                         # 962 copies: 20,009,600 rows
    PYTHONPATH=. python benchmarks/past_memory.py --copies 20 --only covariance   # a quick check
    PYTHONPATH=. python benchmarks/past_memory.py --dataset adult --copies 5 --file-rows 50000
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import psutil      # a dependency of dask.distributed, which this benchmark runs on

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fairmodel as fm  # noqa: E402
from _report import table, write_section  # noqa: E402
from fairmodel.data.passes import gathers_of, passes_of  # noqa: E402

ROWS, FILE_ROWS = 20_000_000, 250_000      # by default the copies that make at least ROWS rows
RADIUS = 5.0


# -- the data ----------------------------------------------------------------------------------------------------
def communities():
    """Communities and Crime by race (118 features in [0, 1]); the label: a violent-crime rate above its median."""
    data = fm.datasets.load_communities()
    y = np.where(data.y > np.median(data.y), 1.0, -1.0)
    return fm.Dataset(data.X, y, np.asarray(data.groups.names)[data.groups.codes],
                      feature_names=data.feature_names, name="communities")


def synthetic(n: int = 10_000, seed: int = 0):
    """Four groups of shares 70 / 20 / 7 / 3 % (``fm.datasets.make_skewed_synthetic``)."""
    return fm.datasets.make_skewed_synthetic(n, seed=seed)


# per data set: the loader (labels +1 / -1, groups, features), its description, and the DP post-processing's
# regression target (a numeric feature the base model predicts from the others)
DATASETS = {"lawschool": (fm.datasets.load_lawschool, "The bundled Law School rows", "ugpa"),
            "adult": (fm.datasets.load_adult, "The bundled Adult rows (by sex, one-hot categories)", "age"),
            "communities": (communities, "The bundled Communities and Crime rows (by race; label: a violent-crime "
                                         "rate above its median)", "medIncome"),
            "synthetic": (synthetic, "Synthetic rows (four groups of shares 70 / 20 / 7 / 3 %, two binary "
                                     "features)", "x0")}
DATASET = "lawschool"      # set by --dataset
VERBOSE = False            # set by --verbose


def original():
    return DATASETS[DATASET][0]()


def write_parquet(path: Path, copies: int, file_rows: int, seed: int = 0) -> int:
    """The original rows replicated ``copies`` times in a random order, in Parquet files; returns the rows."""
    import pandas as pd
    data = original()
    names = np.asarray(data.groups.names, dtype=object)[data.groups.codes]
    n = data.n_samples * copies
    order = np.random.default_rng(seed).permutation(n) % data.n_samples
    path.mkdir(parents=True, exist_ok=True)
    for k, start in enumerate(range(0, n, file_rows)):
        rows = order[start:start + file_rows]
        frame = pd.DataFrame(data.X[rows], columns=list(data.feature_names))
        frame.assign(label=data.y[rows], group=names[rows]).to_parquet(path / f"part-{k:05d}.parquet", index=False)
    return n


# -- the declarations -------------------------------------------------------------------------------------------
def _score(data):
    w = fm.Weights(data.n_features, radius=RADIUS, intercept=True)
    return w, data.score(w)


def covariance(data):
    """Logistic regression under the decision-boundary covariance constraint of Zafar et al. 2017."""
    w, s = _score(data)
    z = (data.groups.codes == 1).astype(float)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y))),
                      [fm.abs(fm.mean((z - z.mean()) * s)) <= 0.01])


def equal_opportunity(data):
    """Group DRO under an equal-opportunity bound (the linear surrogate of Donini et al. 2018)."""
    w, s = _score(data)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    m = fm.group_mean(s, data.groups, where=data.y > 0)
    return fm.Problem(fm.Minimize(fm.max(risks)), [fm.max(m) - fm.min(m) <= 0.05])


def group_loss(data):
    """Bounded group loss (Agarwal, Dudik, Wu 2019): the mean loss with every group's loss at most 0.5."""
    w, s = _score(data)
    loss = fm.logistic_loss(s, data.y)
    return fm.Problem(fm.Minimize(fm.mean(loss)), [fm.max(fm.group_mean(loss, data.groups)) <= 0.5])


def mero(data):
    """Minimax excess risk (Yu, Cai, Jiang, Zhang 2024)."""
    w, s = _score(data)
    risks = fm.group_mean(fm.logistic_loss(s, data.y), data.groups)
    return fm.Problem(fm.Minimize(fm.max(risks - fm.group_optimal(risks))))


def auc_gap(data):
    """AUC maximization under an intra-group AUC gap (Yao, Lin, Yang 2023). Radius 2: the ball is inactive at the
    optimum (the same optimum as radius 5), and SFLS's interval and Bregman constant grow with the radius; at radius
    5 its stochastic run does not reach its tolerance on Law School in memory either (docs/large_data.md). With more
    than two groups, the smallest one is the protected group (gamma = +1) against all the others."""
    w = fm.Weights(data.n_features, radius=2.0, intercept=True)
    s = data.score(w)
    names = data.groups.names
    protected = None if len(names) == 2 else names[int(np.argmin(data.groups.sizes))]
    return fm.Problem(fm.Minimize(fm.auc_loss(s, data.y)),
                      [fm.auc_gap(s, data, kind="intra", protected=protected) <= 0.05])


def ramp_rates(data):
    """A bound on the true selection-rate gap through its ramp surrogate (He, Huang, Yao, Lin 2025)."""
    w = fm.Weights(data.n_features, intercept=True)
    s = data.score(w)
    return fm.Problem(fm.Minimize(fm.mean(fm.logistic_loss(s, data.y)) + 1e-3 * fm.sum_squares(w)),
                      [fm.selection_rate_gap(s, data, surrogate="ramp") <= 0.05])


# DP post-processing (Chzhen, Hebiri, Taturyan 2024): the base models predict a numeric feature of the other
# declarations (the data set's DP target: Law School's undergraduate GPA) and the group from the other features; the
# replicated files are the unlabeled points
def dp_target() -> str:
    return DATASETS[DATASET][2]


def dp_features(data) -> list:
    return [f for f in data.feature_names if f != dp_target()]


def dp_base_models(reference):
    from sklearn.linear_model import LinearRegression, LogisticRegression
    cols = [reference.feature_names.index(f) for f in dp_features(reference)]
    X, target = reference.X[:, cols], reference.X[:, reference.feature_names.index(dp_target())]
    scaled = 2 * (target - target.min()) / np.ptp(target) - 1            # in [-1, 1]: the grid's range B = 1
    group = np.asarray(reference.groups.names)[reference.groups.codes]
    return LinearRegression().fit(X, scaled), LogisticRegression(max_iter=1000).fit(X, group), cols


def dp_postprocessing(points, reference):
    reg, clf, cols = dp_base_models(reference)
    post = fm.GridPredictor(eta=reg.predict, tau=clf.predict_proba, L=20, B=1.0)
    prob = fm.Problem(fm.Minimize(fm.squared_risk(post)), [fm.dp_gap(post) <= 0.02], entropy=1 / 100)
    return prob, {"data": points if points is not None else reference.X[:, cols]}


def thresholds(data, reference):
    """Group-specific randomized thresholds under equalized odds (Hardt, Price, Srebro 2016) on a logistic
    regression fitted on the original rows."""
    from sklearn.linear_model import LogisticRegression
    model = LogisticRegression(max_iter=1000).fit(reference.X, reference.y)
    post = fm.GroupThresholdPostProcessor(model, constraint="equalized_odds", eps=0.02, prefit=True)
    return post.fit(data) if data is not None else post.fit(reference.X, reference.y,
                                                           sensitive_features=np.asarray(reference.groups.names)[
                                                               reference.groups.codes])


CASES = {"thresholds": thresholds, "covariance": covariance, "group_loss": group_loss,
         "equal_opportunity": equal_opportunity, "mero": mero, "dp_postprocessing": dp_postprocessing,
         "auc_gap": auc_gap, "ramp_rates": ramp_rates}     # roughly cheapest first
ESTIMATORS = ("thresholds",)       # fitted estimators (an exact LP judged on the data), not problems
ON_POINTS = ("dp_postprocessing",)  # problems whose data are given at solve (the unlabeled points)
# options of the in-memory reference solve: the chunked rows' default start for IDCA on a ramp rate gap, w = 0 (in
# memory it starts from the quadratic penalty's minimizer, whose last digits depend on how the rows were summed)
REFERENCE_OPTIONS = {"ramp_rates": {"start": "zero"}}


# -- measuring ----------------------------------------------------------------------------------------------------
CLIENT = "client"


class Memory:
    """The peak resident memory of each worker process and of this (client) process, sampled every ``every``
    seconds while in the block."""

    def __init__(self, client, every: float = 0.2):
        self.processes = {addr: psutil.Process(pid) for addr, pid in client.run(os.getpid).items()}
        self.processes[CLIENT] = psutil.Process()
        self.every, self.peak = every, {}

    def _sample(self):
        while not self.done.wait(self.every):
            for addr, proc in self.processes.items():
                try:
                    self.peak[addr] = max(self.peak.get(addr, 0), proc.memory_info().rss)
                except Exception:       # a worker restarted by the nanny: measured again when it is back
                    pass

    def __enter__(self):
        self.peak, self.done = {}, threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()

    def workers_mib(self) -> list:
        return [self.peak[a] / 2 ** 20 for a in sorted(self.peak) if a != CLIENT]

    def client_mib(self) -> float:
        return self.peak.get(CLIENT, 0) / 2 ** 20


def relative(a, b) -> float:
    a, b = np.ravel(np.asarray(a, dtype=float)), np.ravel(np.asarray(b, dtype=float))
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def kept_or_solved(path, side, prob, source, client, row, solve):
    """The result of one backend: read from ``path`` (``Result.save``'s files) with the measures of the run that
    solved it (into ``row``), or ``solve()`` now, measured (passes, gathers, seconds, peak memory), and saved at
    ``path`` with its measures when ``path`` is given."""
    measures = None if path is None else path.with_suffix(".row.json")
    if measures is not None and measures.exists():
        row.update(json.loads(measures.read_text()))
        return fm.load_result(path, problem=prob)
    with Memory(client) as memory:
        p0, g0, start = passes_of(source), gathers_of(source), time.perf_counter()
        result = solve()
        row[f"{side} passes"], row[f"{side} (s)"] = passes_of(source) - p0, time.perf_counter() - start
    row[f"{side} gathers"] = gathers_of(source) - g0
    row[f"{side} worker peaks (MiB)"], row[f"{side} client peak (MiB)"] = memory.workers_mib(), memory.client_mib()
    if measures is not None:
        result.save(path, overwrite=True)
        measures.write_text(json.dumps({k: v for k, v in row.items() if k.startswith(side)}))
    return result


def peaks(row, memory=None) -> dict:
    """The row's worker and client peaks: the largest of its backends' (and of ``memory``, the comparison's)."""
    sides = [side for side in ("exact", "stochastic") if f"{side} client peak (MiB)" in row]
    workers = [row[f"{side} worker peaks (MiB)"] for side in sides]
    clients = [row[f"{side} client peak (MiB)"] for side in sides]
    if memory is not None:
        workers.append(memory.workers_mib())
        clients.append(memory.client_mib())
    row["worker peaks (MiB)"] = [max(each) for each in zip(*[w for w in workers if w])]   # a short phase: no sample
    row["client peak (MiB)"] = max(clients, default=float("nan"))
    return row


def compare_exact(name, prob, exact, ref, row):
    """The exact answer on the chunked rows against the one on the original rows (relative differences)."""
    row["rel. diff objective"] = abs(exact.objective - ref.objective) / max(abs(ref.objective), 1e-300)
    if name in ON_POINTS:      # the duals are not unique: compare what they decide, the constraint values
        row["rel. diff weights"] = max(abs(exact.constraints[k]["value"] - c["value"]) for k, c in
                                       ref.constraints.items())
    else:
        w = next(v.name for v in prob.variables())
        row["rel. diff weights"] = relative(exact.variables[w], ref.variables[w])


def run_case(name, data, points, reference, client, keep=None, only=None) -> dict:
    """Solve ``name`` exactly on the original in-memory rows and on the chunked ``data`` (``points``: the chunked
    unlabeled points of DP post-processing), compare the answers, cross-check on the chunked data; passes, gathers,
    times and the workers' peak memory. ``keep``: a directory where each backend's result is saved (``Result.save``)
    with its measures, and from which a later run reads it instead of solving again; ``only``: "exact" or
    "stochastic" solves that backend alone (the two long solves of a large data set in two processes, then a run
    that reads both and compares)."""
    build = CASES[name]
    row = {"case": name}
    if name in ESTIMATORS:
        start = time.perf_counter()
        ref = build(None, reference)
        row["in-memory exact (s)"] = time.perf_counter() - start
        with Memory(client) as memory:
            p0, start = passes_of(data), time.perf_counter()
            fitted = build(data, reference)
            row["exact passes"], row["exact (s)"] = passes_of(data) - p0, time.perf_counter() - start
        result = fitted.result_
        row["rel. diff objective"] = abs(result.objective - ref.result_.objective) / max(abs(ref.result_.objective),
                                                                                          1e-300)
        row["rel. diff weights"] = max(relative(a, b) for a, b in zip(fitted.weights_, ref.weights_))
        row["ok"] = result.ok
        row["exact"] = f"{result.status} (LP)"
        row["stochastic"] = "- (an exact method)"
        row["stochastic passes"], row["stochastic (s)"], row["stochastic gathers"] = 0, 0.0, 0
        row["worker peaks (MiB)"], row["client peak (MiB)"] = memory.workers_mib(), memory.client_mib()
        row["failed"] = "" if result.ok else result.message[:200]
        return row
    source = points if name in ON_POINTS else data
    start = time.perf_counter()
    if name in ON_POINTS:
        (ref_prob, ref_kwargs), (prob, kwargs) = build(None, reference), build(points, reference)
    else:
        (ref_prob, ref_kwargs) = build(reference), REFERENCE_OPTIONS.get(name, {})
        prob, kwargs = build(data), {}
    ref = ref_prob.solve(backend="exact", **ref_kwargs)
    row["in-memory exact (s)"] = time.perf_counter() - start
    kept = None if keep is None else keep / f"{DATASET}-{name}-{source.n_samples}"
    if only != "stochastic":
        exact = kept_or_solved(kept, "exact", prob, source, client, row,
                               lambda: prob.solve(backend="exact", **kwargs))
        compare_exact(name, prob, exact, ref, row)
    if only == "exact":
        return peaks(row)
    stochastic = kept_or_solved(None if kept is None else kept.with_name(kept.name + "-stochastic"), "stochastic",
                                prob, source, client, row,
                                lambda: prob.solve(backend="stochastic", seed=0, verbose=VERBOSE, **kwargs))
    if only == "stochastic":
        return peaks(row)
    with Memory(client) as memory:
        p0, start = passes_of(source), time.perf_counter()
        report = fm.crosscheck(prob, exact=exact, stochastic=stochastic, **kwargs)    # both judged, compared
        row["comparison passes"], row["comparison (s)"] = passes_of(source) - p0, time.perf_counter() - start
    peaks(row, memory)
    row["ok"] = report.ok
    row["exact"] = f"{report.exact.status} ({report.exact.solver.get('name', '')})"
    row["stochastic"] = report.stochastic.status
    row["failed"] = "; ".join(f"{c.name} = {c.value:.3g} > {c.tolerance:.3g}" for c in report.failed())
    return row


def main():
    global DATASET, VERBOSE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=list(DATASETS), default=DATASET, help="the data set replicated")
    ap.add_argument("--copies", type=int, help="copies of the data set's rows (default: enough for 2e7 rows)")
    ap.add_argument("--file-rows", type=int, default=FILE_ROWS, help="rows per Parquet file (one chunk each)")
    ap.add_argument("--worker-memory", default="1GiB", help="memory limit of each of the 2 worker processes")
    ap.add_argument("--only", nargs="*", help="declarations to run (default: all)")
    ap.add_argument("--dir", help="where to write the Parquet files (default: a temporary directory); files already "
                                  "there are read, not written again")
    ap.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    ap.add_argument("--keep", help="a directory for the results: each backend's result saved there with its "
                                   "measures, and read from there (not solved again) by a later run on the same rows")
    ap.add_argument("--only-backend", choices=("exact", "stochastic"),
                    help="solve this backend alone and keep its results (needs --keep; no cross-check): the two "
                         "long solves of a large data set in two processes, then a run that compares them")
    ap.add_argument("--verbose", action="store_true", help="the stochastic solves' progress lines")
    args = ap.parse_args()
    DATASET, VERBOSE = args.dataset, args.verbose
    keep = Path(args.keep) if args.keep else None
    if args.only_backend and keep is None:
        ap.error("--only-backend needs --keep (the directory its results are kept in)")
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    reference = original()
    args.copies = args.copies or -(-ROWS // reference.n_samples)
    section = "past_memory" if DATASET == "lawschool" else f"past_memory_{DATASET}"
    from dask.distributed import Client, LocalCluster
    from dask.utils import parse_bytes
    warnings.simplefilter("ignore")
    names = args.only or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        ap.error(f"unknown declaration(s) {unknown}; choose from {list(CASES)}")
    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="fairmodel-past-memory-"))
    try:
        start = time.perf_counter()
        written = sorted((directory / "data").glob("part-*.parquet"))
        if args.dir and written:       # another run's files (perhaps being read now): never rewritten
            import pyarrow.parquet as pq
            n = sum(pq.ParquetFile(f).metadata.num_rows for f in written)
            if n != reference.n_samples * args.copies:
                ap.error(f"{directory / 'data'} holds {n:,} rows, not {args.copies} copies of the data set; give "
                         f"another --dir")
        else:
            n = write_parquet(directory / "data", args.copies, args.file_rows)
        write_time = time.perf_counter() - start
        in_memory = n * (reference.n_features + 2) * 8
        limit = parse_bytes(args.worker_memory)
        print(f"{n:,} rows {'found' if args.dir and written else 'written'} in {write_time:.0f} s; in memory the data "
              f"would take {in_memory / 2 ** 30:.2f} GiB; "
              f"worker memory limit {limit / 2 ** 30:.2f} GiB", flush=True)
        rows = []
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=limit,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            start = time.perf_counter()
            data = fm.Dataset.from_parquet(str(directory / "data"), target="label", sensitive="group")
            open_time = time.perf_counter() - start
            start = time.perf_counter()
            data.matvec(np.ones(data.n_features))
            pass_time = time.perf_counter() - start
            opened_mib = psutil.Process().memory_info().rss / 2 ** 20
            print(f"opened in {open_time:.0f} s ({data.n_chunks} chunks); one pass {pass_time:.1f} s; client "
                  f"{opened_mib:.0f} MiB", flush=True)
            points = fm.Dataset.from_parquet(str(directory / "data"), features=dp_features(reference)) \
                if any(n in ON_POINTS for n in names) else None
            load = os.getloadavg()[0]
            for name in names:
                try:
                    row = run_case(name, data, points, reference, client, keep, args.only_backend)
                except Exception as exc:       # a declaration that cannot run is reported, not hidden
                    row = {"case": name, "ok": False, "failed": f"{type(exc).__name__}: {str(exc)[:300]}"}
                rows.append(row)
                print({k: (f"{v:.3g}" if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
                text = report(rows, args, n, reference, data.n_chunks, in_memory, limit, open_time, pass_time, load,
                              opened_mib)
                if args.write:             # after every declaration: a long run stopped early keeps what it measured
                    write_section(section, text)
    finally:
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)
    print(text)


def report(rows, args, n, reference, n_chunks, in_memory, limit, open_time, pass_time, load, opened_mib) -> str:
    head = ["declaration", "cross-check", "exact method", "stochastic", "exact passes", "exact (s)",
            "stochastic passes / gathers", "stochastic (s)", "comparison passes / s",
            "rel. diff objective / weights vs in memory", "worker peaks (MiB)", "client peak (MiB)", "what failed"]

    def cell(row, key, fmt="{:.3g}"):
        return fmt.format(row[key]) if key in row else "-"
    body = table(head, [[r["case"], {True: "ok", False: "NOT OK"}.get(r.get("ok"), "- (one backend run)"),
                         r.get("exact", "-"), r.get("stochastic", "-"),
                         cell(r, "exact passes", "{}"), cell(r, "exact (s)"),
                         f"{cell(r, 'stochastic passes', '{}')} / {cell(r, 'stochastic gathers', '{}')}",
                         cell(r, "stochastic (s)"), f"{cell(r, 'comparison passes', '{}')} / {cell(r, 'comparison (s)')}",
                         f"{cell(r, 'rel. diff objective')} / {cell(r, 'rel. diff weights')}",
                         ", ".join(f"{m:.0f}" for m in r.get("worker peaks (MiB)", [])),
                         cell(r, "client peak (MiB)", "{:.0f}"), r.get("failed", "")[:200]]
                        for r in rows])
    client_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    title = "" if DATASET == "lawschool" else f" on {DATASET} (`--dataset {DATASET}`)"
    return (f"## Verified past memory{title} (`benchmarks/past_memory.py`)\n\n"
            f"{DATASETS[DATASET][1]} replicated {args.copies} times and shuffled: {n:,} rows x "
            f"{reference.n_features} features in {n_chunks} Parquet files ({in_memory / 2 ** 30:.2f} GiB as "
            f"NumPy features, labels and codes), read by a `dask.distributed` LocalCluster of 2 worker processes "
            f"(1 thread each) with a memory limit of {limit / 2 ** 30:.2f} GiB per worker. Opening (validation, "
            f"group names and codes) took {open_time:.0f} s, one pass over the files {pass_time:.1f} s (load average "
            f"{load:.1f} on the machine's 2 cores when the run started: other work shared them). Every exact "
            f"answer is compared with the exact answer on the original {reference.n_samples:,} in-memory rows (replication leaves every "
            f"mean, rate and AUC unchanged); every cross-check judges both backends on the full replicated data. Peak "
            f"resident memory of the client process: {opened_mib:.0f} MiB after opening the data, {client_peak:.0f} MiB at most so far. Declarations in the order run"
            f"{'' if len(rows) == len(args.only or CASES) else ' (the run is still going or stopped: the rows finished)'}"
            f".\n\n{body}")


if __name__ == "__main__":
    main()
