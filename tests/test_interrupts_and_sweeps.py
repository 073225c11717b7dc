"""Sweeps and interrupts: every swept key of a problem file takes effect or is refused with the list of keys; a value
that fails for any reason is recorded and the sweep goes on; Ctrl-C keeps the finished values (sweeps) or the judged
current iterate (a stochastic solve); --out is checked before any solving."""
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.frontends import cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def gdro_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text("""
[data]
name = "adult"
sensitive = "sex"
subsample = 400
[model]
radius = 2.0
[problem]
family = "gdro"
[solve]
backend = "stochastic"
seed = 0
[solve.stochastic]
epochs = 3
""")
    return path


def _frontier(capsys, argv):
    code = cli.main(argv + ["--json"])
    return code, json.loads(capsys.readouterr().out)["frontier"]["rows"]


def test_swept_solver_options_take_effect(gdro_file, capsys):
    code, rows = _frontier(capsys, ["sweep", str(gdro_file), "--param", "solve.stochastic.epochs", "--values", "1,6"])
    assert code in (0, 3) and [r["solve.stochastic.epochs"] for r in rows] == [1, 6]
    times = [r["time"] for r in rows]
    objectives = [r["objective"] for r in rows]
    assert objectives[0] != objectives[1] and times[0] < times[1]
    code, rows = _frontier(capsys, ["sweep", str(gdro_file), "--param", "solve.seed", "--values", "0,1"])
    assert rows[0]["objective"] != rows[1]["objective"]            # the seed reaches the solver
    code, rows = _frontier(capsys, ["sweep", str(gdro_file), "--param", "data.subsample", "--values", "200,300"])
    assert rows[0]["objective"] != rows[1]["objective"]


@pytest.mark.parametrize("param, message", [
    ("solve.exact.method", "sweepable keys are .*problem.loss.*solve.seed"),   # stochastic backend: no effect
    ("problem.kappa", "cannot sweep 'problem.kappa'"),                          # not a key of this family
    ("solve.backend", "cannot sweep"),
])
def test_keys_that_would_not_take_effect_are_refused(gdro_file, capsys, param, message):
    assert cli.main(["sweep", str(gdro_file), "--param", param, "--values", "1,2"]) == cli.EXIT_BAD_INPUT
    assert __import__("re").search(message, capsys.readouterr().err)


def test_a_flag_that_overrides_the_swept_key_is_refused(gdro_file, capsys):
    assert cli.main(["sweep", str(gdro_file), "--param", "solve.seed", "--values", "0,1", "--seed", "3"]) == 2
    assert "override" in capsys.readouterr().err


def test_a_value_failing_for_any_reason_is_recorded_and_the_sweep_goes_on():
    def build(value):
        if value == 2:
            raise ZeroDivisionError("boom")     # not a FairmodelError
        data = fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=[30, 40], seed=value)
        w = fm.Weights(3, radius=1.0)
        return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))
    frontier = fm.sweep(build, [1, 2, 3], param="seed")
    assert frontier.results[0] is not None and frontier.results[2] is not None
    assert frontier.results[1] is None and "ZeroDivisionError: boom" in frontier.errors[1]


def _problem(seed=0):
    data = fm.datasets.make_gdro_synthetic(m=2, d=3, n_per_group=[200, 300], seed=seed)
    w = fm.Weights(3, radius=1.0)
    return fm.Problem(fm.Minimize(fm.max(fm.group_mean(fm.logistic_loss(data.score(w), data.y), data.groups))))


def _ctrl_c_at_epoch(k):
    def callback(info):
        if info["epoch"] == k:
            os.kill(os.getpid(), signal.SIGINT)
        return False
    return callback


def test_ctrl_c_in_a_stochastic_solve_returns_the_judged_current_iterate():
    before = signal.getsignal(signal.SIGINT)        # Python's default, or SIG_IGN in a shell's background job
    res = _problem().solve(backend="stochastic", seed=0, epochs=50, callback=_ctrl_c_at_epoch(1))
    assert res.status == "interrupted" and not res.ok and "Ctrl-C" in res.message
    assert len(res.history) < 10 and np.isfinite(res.objective)
    assert "duality_gap" in res.certificate                        # judged on the full data
    assert signal.getsignal(signal.SIGINT) is before                # the handler is restored


def test_ctrl_c_ends_a_sweep_with_the_finished_values():
    calls = []

    def build(value):
        calls.append(value)
        return _problem(seed=value)
    frontier = fm.sweep(build, [0, 1, 2, 3], param="seed", backend="stochastic",
                        options_for=lambda v: {"epochs": 30, "callback": _ctrl_c_at_epoch(1) if v == 1 else None})
    assert calls == [0, 1] and frontier.interrupted
    assert frontier.results[0].status != "interrupted" and frontier.results[1].status == "interrupted"

    def build_exact(value):                      # Ctrl-C outside a stochastic solve raises KeyboardInterrupt
        if value == 2:
            raise KeyboardInterrupt
        return _problem(seed=value)
    frontier = fm.sweep(build_exact, [0, 1, 2, 3], param="seed")
    assert frontier.values == [0, 1, 2] and frontier.interrupted and frontier.results[2] is None


def test_cli_ctrl_c_exits_130_after_printing_and_saving_what_finished(gdro_file, capsys, tmp_path, monkeypatch):
    from fairmodel import problem as problem_module
    original = problem_module.Problem.solve
    count = []

    def solve(self, *args, **kwargs):
        count.append(1)
        if len(count) == 2:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)
    monkeypatch.setattr(problem_module.Problem, "solve", solve)
    out = tmp_path / "sweep"
    code = cli.main(["sweep", str(gdro_file), "--param", "model.radius", "--values", "1,2,3", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == cli.EXIT_INTERRUPTED and "Traceback" not in captured.err and "interrupted" in captured.err
    assert __import__("re").search(r"^\| 1(\.0)? +\| ", captured.out, __import__("re").M)   # the finished value
    assert (out / "value0.json").exists() and not (out / "value2.json").exists()
    assert json.loads((out / "frontier.json").read_text())["interrupted"] is True
    monkeypatch.setattr(problem_module.Problem, "solve", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    assert cli.main(["solve", str(gdro_file)]) == cli.EXIT_INTERRUPTED
    assert "interrupted" in capsys.readouterr().err


def test_out_is_checked_before_solving(gdro_file, capsys, tmp_path, monkeypatch):
    out = tmp_path / "o"
    assert cli.main(["solve", str(gdro_file), "--out", str(out)]) in (0, 3)
    capsys.readouterr()
    from fairmodel import problem as problem_module
    monkeypatch.setattr(problem_module.Problem, "solve", lambda *a, **k: pytest.fail("solved before checking --out"))
    assert cli.main(["solve", str(gdro_file), "--out", str(out)]) == cli.EXIT_BAD_INPUT
    assert "--force" in capsys.readouterr().err
    monkeypatch.undo()
    assert cli.main(["solve", str(gdro_file), "--out", str(out), "--force"]) in (0, 3)


def test_crosscheck_out_prints_what_it_saved(gdro_file, capsys, tmp_path):
    out = tmp_path / "cc"
    cli.main(["crosscheck", str(gdro_file), "--out", str(out)])
    printed = capsys.readouterr().out
    assert f"saved: {out / 'exact.json'}" in printed and str(out / "crosscheck.md") in printed


def test_a_ctrl_c_request_ends_with_its_solve():
    """A Ctrl-C that stopped one solve must not stop the next method run outside a solve (it did: the request stayed
    set, and a direct OGDA run after an interrupted solve in the same process stopped after one epoch)."""
    from fairmodel.stochastic.ogda import ogda
    from fairmodel.utilities.progress import stop_requested
    res = _problem().solve(backend="stochastic", seed=0, epochs=50, callback=_ctrl_c_at_epoch(1))
    assert res.status == "interrupted"
    assert not stop_requested()
    game = fm.SaddleProblem.matrix_game(np.array([[[1.0, -1.0], [-1.0, 1.0]]] * 3))
    out = ogda(game.oracle(), method="ogda-rr", order=1, epochs=6, seed=0)
    assert out["status"] == "completed" and out["epochs_run"] == 6
