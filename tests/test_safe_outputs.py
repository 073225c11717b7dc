"""Nothing is lost when a command is interrupted or runs beside another: the real command line is started as a
process and sent Ctrl-C (SIGINT) or SIGTERM at many moments (a seeded schedule, and at the moments that used to lose
data: between two values of a sweep, between the two files of a saved pair), or started several times at once; after
each run the files are checked: the earlier output is intact, or the new one is whole and every file of it loads;
never a mix, never a temporary file. The default suite runs a few representative moments; the campaign of 50 seeded
timings and the concurrent writers of every command are marked slow."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.utilities.outputs import save_files

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}      # the code of this checkout, whatever is installed
OK_CODES = (0, 1, 3)                                # finished: ok, cross-check not ok, result not ok
WRITERS = 8                                         # concurrent writers
SWEEP = ["--param", "model.radius"]
PROBLEM = """
[data]
name = "adult"
sensitive = "sex"
subsample = {rows}
[model]
radius = 2.0
[problem]
family = "gdro"
[solve]
backend = "stochastic"
seed = 0
[solve.stochastic]
epochs = {epochs}
stop = "budget"
"""
# A signal sent from inside the process right after its k-th move of a file into place (os.link / os.replace): the
# moment between two files of one output, where an interrupt used to leave a mixed pair or a temporary directory.
AT_MOVE = """
import os, signal, sys
real = {name: getattr(os, name) for name in ("link", "replace")}
moves = []
def moving(name):
    def move(*args, **kwargs):
        out = real[name](*args, **kwargs)
        moves.append(name)
        if len(moves) == AT:
            os.kill(os.getpid(), SIGNAL)
        return out
    return move
for name in real:
    setattr(os, name, moving(name))
"""


def command(args, signal_at_move=None):
    """The argv of the ``fairmodel`` command (its entry point, fairmodel_cli) with ``args``; ``signal_at_move``:
    (signal, k) sends the signal after the k-th file move."""
    code = "import sys; from fairmodel_cli import main; sys.exit(main(sys.argv[1:]))"
    if signal_at_move is not None:
        sig, k = signal_at_move
        code = AT_MOVE.replace("SIGNAL", str(int(sig))).replace("AT", str(k)) + code
    return [sys.executable, "-c", code, *map(str, args)]


def run(args, cwd, signal_at_move=None, timeout=600):
    proc = subprocess.run(command(args, signal_at_move), cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def args_of(kind, problem, out, *extra):
    values = {"solve": [], "crosscheck": [], "sweep": SWEEP + ["--values", "1,2,3,4"]}[kind]
    return [kind, problem, *values, "--out", out, *extra]


# -- what a run may leave -------------------------------------------------------------------------------------------
def snapshot(out: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out.is_dir() else {}


def temporaries(base: Path) -> list:
    return [str(p) for p in base.rglob(".*")]


def whole(kind: str, out: Path) -> None:
    """``out`` holds one whole output of ``kind``: exactly its files, each result loading."""
    names = sorted(p.name for p in out.iterdir())
    if kind == "solve":
        expected = ["result.json", "result.npz"]
    elif kind == "crosscheck":
        expected = ["crosscheck.md", "exact.json", "exact.npz", "stochastic.json", "stochastic.npz"]
    else:
        rows = json.loads((out / "frontier.json").read_text())["rows"]
        expected = sorted(["frontier.json", "frontier.md"] + [f"value{i}.{e}" for i, r in enumerate(rows)
                                                              if r["status"] != "error" for e in ("json", "npz")])
    assert names == expected, f"{out} holds {names}, not a whole {kind} output {expected}"
    for p in out.glob("*.json"):
        if p.name != "frontier.json":
            fm.load_result(p)


def check_left(kind: str, base: Path, out: Path, old: dict, code: int, err: str) -> str:
    """The invariant after any run: no temporary, no traceback, an expected exit code, and ``out`` holds the earlier
    output byte for byte or a whole new one (or nothing, where there was nothing). Returns which.

    A signal while Python itself starts (before the command's entry point has run) or while it shuts down (after the
    command has returned) takes its default action: the process ends by the signal (a negative code); the files are
    checked all the same."""
    assert not temporaries(base), f"temporaries left: {temporaries(base)}"
    if code >= 0:
        assert "Traceback" not in err, err
        assert code in OK_CODES + (130, 143), (code, err)
    else:
        assert -code in (signal.SIGINT, signal.SIGTERM), (code, err)
    now = snapshot(out)
    if now == old:
        return "old" if old else "none"
    if not now and not old:
        return "none"            # an --out directory created for the run, with nothing saved
    whole(kind, out)
    return "new"


# -- fixtures -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_problem(tmp_path_factory):
    base = tmp_path_factory.mktemp("problem")
    path = base / "p.toml"
    path.write_text(PROBLEM.format(rows=400, epochs=20))
    return path


class Earlier(dict):
    """Outputs of earlier runs (seed 1, other radii), as a user would have them: kind -> directory, each made on first
    use."""

    def __init__(self, problem, base):
        super().__init__()
        self.problem, self.base = problem, base

    def __missing__(self, kind):
        self[kind] = earlier_output(kind, self.problem, self.base)
        return self[kind]


@pytest.fixture(scope="module")
def earlier(small_problem, tmp_path_factory):
    return Earlier(small_problem, tmp_path_factory.mktemp("earlier"))


def earlier_output(kind, problem, base) -> Path:
    """An output of ``kind`` saved in ``base`` by the command line (in this process: only the runs under test pay
    for a process of their own)."""
    from fairmodel.frontends import cli
    args = args_of(kind, problem, base / kind, "--seed", "1", "--json")
    if kind == "sweep":
        args[args.index("1,2,3,4")] = "5,6,7,8"
    assert cli.main([str(a) for a in args]) in OK_CODES
    return base / kind


def scenario(tmp_path, earlier, kind, with_old=True):
    base = tmp_path / f"{kind}-{len(list(tmp_path.iterdir()))}"
    base.mkdir()
    out = base / "out"
    if with_old:
        shutil.copytree(earlier[kind], out)
    return base, out, snapshot(out)


# -- representative moments (default suite) ---------------------------------------------------------------------------
def test_ctrl_c_in_a_forced_sweep_keeps_the_earlier_sweep(small_problem, earlier, tmp_path):
    """sweep --force over an earlier 4-value sweep, Ctrl-C while the second value solves (seen in the progress bar):
    the interrupted run replaces nothing; the finished value is printed, the earlier sweep kept whole."""
    base, out, old = scenario(tmp_path, earlier, "sweep")
    proc = subprocess.Popen(command(args_of("sweep", small_problem, out, "--force", "--verbose")), cwd=base, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen, start = b"", time.time()
    while b"1/4" not in seen:
        chunk = os.read(proc.stderr.fileno(), 4096)
        assert chunk and time.time() - start < 300, seen.decode(errors="replace")
        seen += chunk
    proc.send_signal(signal.SIGINT)
    out_text, err = proc.communicate(timeout=300)
    err = (seen + err).decode(errors="replace")
    assert proc.returncode == 130, err
    assert check_left("sweep", base, out, old, proc.returncode, err) == "old"
    assert "earlier results" in err and "| 1 |" in out_text.decode().replace("| 1.0 |", "| 1 |")


@pytest.mark.parametrize("kind, sig", [("crosscheck", signal.SIGINT), ("sweep", signal.SIGTERM)])
def test_a_signal_between_two_files_of_an_output(small_problem, earlier, tmp_path, kind, sig):
    """The signal arrives right after the first file of the output is moved into place (the moment a cross-check
    used to leave a result pair from two saves, and SIGTERM a sweep's temporary directory beside --out): the output
    is the whole new one, with no temporary left."""
    base, out, old = scenario(tmp_path, earlier, kind)
    code, _, err = run(args_of(kind, small_problem, out, "--force"), base, signal_at_move=(sig, 1))
    assert code == (130 if sig == signal.SIGINT else 143), err
    assert check_left(kind, base, out, old, code, err) == "new"


# Concurrent writers: one process loads the command line, then forks the writers, which start at the same moment
# (each runs the command's entry point, fairmodel_cli.main, with its own standard output and error files).
FORK = """
import os, sys
from fairmodel_cli import main
import fairmodel.frontends.cli
n, args = int(sys.argv[1]), sys.argv[2:]
pids = []
for k in range(n):
    pid = os.fork()
    if pid == 0:
        for fd, name in ((1, f"writer{k}.out"), (2, f"writer{k}.err")):
            os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        code = main(args)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    pids.append(pid)
print(" ".join(str(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1])) for p in pids))
"""


def writers(kind, problem, base, out, n, *extra):
    """(exit code, standard output, standard error) of ``n`` runs of ``kind`` started at once."""
    proc = subprocess.run([sys.executable, "-c", FORK, str(n), *map(str, args_of(kind, problem, out, *extra))],
                          cwd=base, env=ENV, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    codes = [int(c) for c in proc.stdout.split()]
    return [(code, (base / f"writer{k}.out").read_text(), (base / f"writer{k}.err").read_text())
            for k, code in enumerate(codes)]


def check_writers(kind, base, out, runs, force):
    """Without --force one writer saves and the others fail with "already exist(s)" (exit 2); with --force all
    save, one after the other. Either way ``out`` holds one whole output and no temporary."""
    saved = [r for r in runs if r[0] in OK_CODES]
    assert all("Traceback" not in r[2] for r in runs)
    if force:
        assert len(saved) == len(runs), runs
    else:
        assert len(saved) == 1 and all(r[0] == 2 and "already exist" in r[2] for r in runs if r not in saved), runs
    assert "saved:" in saved[0][1]
    assert not temporaries(base)
    whole(kind, out)


def test_concurrent_solves_never_overwrite_each_other(small_problem, tmp_path):
    """Eight ``solve --out run`` started at once without --force: one saves, seven are told the result already
    exists (they used to all print "saved:" while only one result survived)."""
    out = tmp_path / "run"
    check_writers("solve", tmp_path, out, writers("solve", small_problem, tmp_path, out, WRITERS), force=False)


def test_concurrent_saves_of_one_result(tmp_path):
    """Result.save from eight threads at once: one saves, the others get ResultFileError; with overwrite=True all
    save and the pair left is one save's."""
    res = fm.SaddleProblem.matrix_game(np.random.default_rng(0).standard_normal((5, 2, 2))).solve(method="exact")

    def save(path, overwrite, barrier, outcomes):
        barrier.wait()
        try:
            res.save(path, overwrite=overwrite)
            outcomes.append("saved")
        except fm.ResultFileError as exc:
            outcomes.append(str(exc))
    for overwrite in (False, True):
        outcomes, barrier = [], threading.Barrier(8)
        threads = [threading.Thread(target=save, args=(tmp_path / str(overwrite) / "run", overwrite, barrier, outcomes))
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outcomes.count("saved") == (8 if overwrite else 1), outcomes
        assert all("already exist" in o for o in outcomes if o != "saved")
        assert fm.load_result(tmp_path / str(overwrite) / "run").objective == res.objective
        assert not temporaries(tmp_path)


def test_save_files_replaces_a_unit_and_its_stale_files(tmp_path):
    save_files(tmp_path, {"a1": lambda f: f.write(b"1"), "a2": lambda f: f.write(b"2"), "b": lambda f: f.write(b"")})
    with pytest.raises(fm.ResultFileError, match="a2 already exist"):
        save_files(tmp_path, {"c": lambda f: f.write(b"new"), "a2": lambda f: f.write(b"new")})
    assert not (tmp_path / "c").exists()                  # all or nothing
    save_files(tmp_path, {"a1": lambda f: f.write(b"new")}, replace=True, stale=re.compile(r"a\d"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a1", "b"] and (tmp_path / "a1").read_bytes() == b"new"

    def broken(f):
        f.write(b"half")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        save_files(tmp_path, {"a1": lambda f: f.write(b"x"), "b": broken}, replace=True)
    assert (tmp_path / "a1").read_bytes() == b"new" and not temporaries(tmp_path)


# -- the campaign (slow) ----------------------------------------------------------------------------------------------
CAMPAIGN_SEED, TIMINGS = 20240611, 50


@pytest.fixture(scope="module")
def campaign_problem(tmp_path_factory):
    """A problem whose runs last several seconds after the imports (the signal can land in any phase)."""
    path = tmp_path_factory.mktemp("campaign") / "p.toml"
    path.write_text(PROBLEM.format(rows=3000, epochs=40))
    return path


@pytest.mark.slow
def test_signal_campaign(campaign_problem, tmp_path):
    """50 seeded timings over solve, crosscheck and sweep (with and without --force over an earlier output), each
    sent SIGINT or SIGTERM after a delay drawn uniformly over the command's whole run (its duration measured first,
    imports included); the invariant is checked after every run."""
    outs, duration = Earlier(campaign_problem, tmp_path / "earlier"), {}
    for kind in ("solve", "crosscheck", "sweep"):      # how long a whole run takes, imports included
        start = time.perf_counter()
        code, _, err = run(args_of(kind, campaign_problem, tmp_path / "timing" / kind), tmp_path)
        duration[kind] = time.perf_counter() - start
        assert code in OK_CODES, err
    rng = np.random.default_rng(CAMPAIGN_SEED)
    tally = []
    for k in range(TIMINGS):
        kind = ("solve", "crosscheck", "sweep")[k % 3]
        sig = (signal.SIGINT, signal.SIGTERM)[int(rng.integers(2))]
        force = bool(rng.integers(2))
        delay = float(rng.uniform(0.0, 1.05 * duration[kind]))
        base, out, old = scenario(tmp_path, outs, kind, with_old=force)
        extra = ["--force"] if force else []
        with open(base / "stdout", "w") as so, open(base / "stderr", "w") as se:
            proc = subprocess.Popen(command(args_of(kind, campaign_problem, out, *extra)), cwd=base, env=ENV,
                                    stdout=so, stderr=se)
            time.sleep(delay)
            proc.send_signal(sig)
            code = proc.wait(timeout=600)
        err = (base / "stderr").read_text()
        (base / "stdout").unlink()
        (base / "stderr").unlink()
        try:
            left = check_left(kind, base, out, old, code, err)
        except AssertionError as exc:          # every timing is run and reported; the test fails after
            left = f"FAILED: {exc}"
        tally.append((kind, signal.Signals(sig).name, force, round(delay, 2), code, left))
    print("\n".join(map(str, tally)))
    failed = [t for t in tally if str(t[-1]).startswith("FAILED")]
    assert len(tally) == TIMINGS and not failed, failed


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["solve", "crosscheck", "sweep"])
@pytest.mark.parametrize("force", [False, True])
def test_concurrent_writers(small_problem, earlier, tmp_path, kind, force):
    """Eight runs of one command saving into one --out at once, into a new directory or with --force over an earlier
    output."""
    base, out, _ = scenario(tmp_path, earlier, kind, with_old=force)
    extra = ["--force"] if force else []
    check_writers(kind, base, out, writers(kind, small_problem, base, out, WRITERS, *extra), force)
