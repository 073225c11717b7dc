"""The fast subset of the defaults suite (benchmarks/defaults.py, cases tagged "quick"): problem x data
combinations the defaults were not tuned on, solved with the defaults only and judged by ``fm.crosscheck``.

Each case asserts ``report.ok`` and prints the failed checks when it is not. The cases that fail on today's code
are marked ``xfail(strict=True)`` with what fails: when the library is fixed they pass, strict xfail turns that
into a failure, and the mark is removed. The full suite (about 70 cases) is ``python benchmarks/defaults.py``.
"""
import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "defaults.py"
_spec = importlib.util.spec_from_file_location("benchmarks_defaults", _PATH)
suite = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = suite
_spec.loader.exec_module(suite)

# What fails today (the judge's numbers of the baseline run, docs/benchmarks.md section "defaults").
XFAIL: dict[str, str] = {}


def _params():
    for name in suite.select(quick=True):
        marks = [pytest.mark.xfail(strict=True, reason=XFAIL[name])] if name in XFAIL else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(_params()))
def test_defaults_case(name):
    record = suite.run_case(name)
    assert record["ok"], f"{name} is not ok with the defaults:\n  " + "\n  ".join(suite.failures(record))


def test_registry_is_wide():
    """The suite covers every family with many cases; the fast subset is a small diverse part of it."""
    cases = suite.CASES.values()
    assert len(suite.CASES) >= 50
    assert {c.family for c in cases} == {"gdro", "auc", "dp", "partial", "strategic", "saddle", "convex"}
    assert {"logistic", "hinge", "squared"} <= {c.loss for c in cases}
    assert {"adult", "lawschool", "communities", "synthetic"} <= {c.source for c in cases}
    quick = [suite.CASES[n] for n in suite.select(quick=True)]
    assert 8 <= len(quick) <= 14 and len({c.family for c in quick}) >= 6
    assert set(XFAIL) <= {c.name for c in quick}
