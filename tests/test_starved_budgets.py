"""No result is ok while the judge's numbers say otherwise: every stochastic method of every family, run with a
starved budget on a bundled problem, ends not ok (its judged violation or certificate beyond the tolerance), and its
saved file loads back with the same verdict."""
import glob
import warnings
from pathlib import Path

import numpy as np
import pytest

import fairmodel as fm
from fairmodel.frontends import problemfile

PROBLEMS = sorted(glob.glob(str(Path(__file__).parents[1] / "examples" / "problems" / "*.toml")))
STARVED = {"aleg": {"max_grad_evals": 50}, "smd": {"max_grad_evals": 50}, "primal_dual": {"epochs": 1, "inner": 1},
           "sfls": {"T": 50, "max_outer": 1}, "iqrc": {"T": 50, "max_outer": 1}, "sgd3": {"T": 50},
           "acsa2": {"T": 50}, "acsa": {"T": 50}, "sgd": {"T": 50}, "idca": {"outer": 1},
           "ssg": {"iterations": 50}, "penalty": {"iterations": 50, "lam": 1.0},
           **{m: {"max_queries": 50} for m in ("ogda-rr", "ogda-wr", "sgda-rr", "sgda-wr")}}


def _problem(path, rows=600):
    spec = problemfile.read(path)
    spec.doc["data"]["subsample"] = min(spec.doc["data"].get("subsample", rows), rows)
    return problemfile.build_problem(spec, problemfile.load_data(spec))


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda p: Path(p).stem)
def test_no_starved_stochastic_run_is_ok(path, tmp_path):
    prob = _problem(path)
    assert prob.family.stochastic_methods, "every bundled problem has a stochastic method"
    for method in prob.family.stochastic_methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = prob.solve(backend="stochastic", method=method, seed=0, **STARVED[method])
        assert not res.ok, f"{method}: starved run reported {res.status} ({res.checks})"
        assert res.failed_checks(), f"{method}: not ok without a failing check ({res.status}: {res.message})"
        assert "the judge's checks failed" in res.message
        back = fm.load_result(res.save(tmp_path / method)[0])
        assert back.status == res.status and back.checks == res.checks


@pytest.mark.parametrize("order", [0, 1])
def test_no_starved_saddle_problem_run_is_ok(order, tmp_path):
    """fm.SaddleProblem (not a declaration): every OGDA / SGDA variant with a starved budget is judged by its duality
    gap and is not ok, also after a save and load."""
    sp = fm.SaddleProblem.matrix_game(np.random.default_rng(0).standard_normal((20, 3, 3)))
    for method in ("ogda-rr", "ogda-wr", "sgda-rr", "sgda-wr"):
        res = sp.solve(method=method, order=order, seed=0, **STARVED[method])
        assert not res.ok and res.failed_checks() and "the judge's checks failed" in res.message
        back = fm.load_result(res.save(tmp_path / f"{method}-{order}")[0])
        assert back.status == res.status and back.checks == res.checks
