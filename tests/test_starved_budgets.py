"""No result is ok while the judge's numbers say otherwise: every stochastic method of every family, run with a
starved budget on a bundled problem, ends not ok (its judged violation or certificate beyond the tolerance), and its
saved file loads back with the same verdict."""
import glob
import json
import warnings
from pathlib import Path

import pytest

import fairmodel as fm
from fairmodel.frontends import problemfile

PROBLEMS = sorted(glob.glob(str(Path(__file__).parents[1] / "examples" / "problems" / "*.toml")))
STARVED = {"aleg": {"max_grad_evals": 50}, "smd": {"max_grad_evals": 50}, "primal_dual": {"epochs": 1, "inner": 1},
           "sfls": {"T": 50, "max_outer": 1}, "iqrc": {"T": 50, "max_outer": 1, "S": 1}, "sgd3": {"T": 50},
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
        # a check that could not be computed is NaN (e.g. the IDCA step of an infeasible point): compare as JSON
        assert back.status == res.status and json.dumps(back.checks) == json.dumps(res.checks)


STARVED_CAPS = {"auc_fairness.toml": ("stochastic", "sfls", {"max_steps": 300}),
                "partial_fairness.toml": ("exact", "idca", {"outer": 1})}


@pytest.mark.parametrize("name", sorted(STARVED_CAPS))
def test_a_starved_cap_of_a_run_that_stops_on_the_checks_is_never_ok(name):
    """Stopping on the judge's checks, the caps are safety limits: a run cut by one is not ok and says what to try."""
    backend, method, options = STARVED_CAPS[name]
    prob = _problem(Path(__file__).parents[1] / "examples" / "problems" / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = prob.solve(backend=backend, method=method, **({"seed": 0} if backend == "stochastic" else {}), **options)
    assert not res.ok and res.failed_checks()
    assert "What to try" in res.message
