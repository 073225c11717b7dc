"""The fast subset of the defaults benchmarks of AUC fairness and partial fairness (benchmarks/defaults_auc.py,
benchmarks/defaults_partial.py): problems the defaults were not tuned on, cross-checked with the defaults only."""
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import defaults_auc  # noqa: E402
import defaults_partial  # noqa: E402
from _crosscheck_cases import run_case  # noqa: E402

FAST = [c for module in (defaults_auc, defaults_partial) for c in module.CASES if "fast" in c.tags]


@pytest.mark.parametrize("case", FAST, ids=lambda c: c.name)
def test_defaults_crosscheck_ok_on_cases_they_were_not_tuned_on(case):
    row = run_case(case)
    assert row["ok"], f"{case.name} ({case.note}): {row['failed']}"
