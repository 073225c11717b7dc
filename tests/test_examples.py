"""Every example runs to exit 0 from a fresh folder and writes only where it is told (``--out``), never into the
source tree: each runs in a subprocess with a temporary working directory, and ``git status`` of the repository
is the same before and after. Examples that take more than about 20 s here are marked slow (reduced sizes)."""
import ast
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
slow = pytest.mark.slow

# example file -> (extra arguments, marks); "{out}" is replaced by a temporary output folder
CASES = {
    "assessment.py": (["--n-boot", "50", "--out", "{out}"], []),
    "assessment_thresholds.py": ([], []),
    "dp_postprocessing_quickstart.py": ([], []),
    "dp_postprocessing_multiclass.py": ([], []),
    "group_dro_adult.py": ([], [slow]),
    "auc_fairness_crosscheck.py": ([], [slow]),
    "compositions.py": (["covariance"], [slow]),
    "dp_postprocessing_reproduction.py": (["--splits", "1", "--datasets", "lawschool"], [slow]),
    "auc_fairness_frontier.py": (["--quick", "--seeds", "1", "--datasets", "lawschool", "--out", "{out}"], [slow]),
    "partial_fairness.py": (["--datasets", "lawschool", "--splits", "1", "--outer", "5", "--inner", "20",
                             "--max-train", "600", "--out", "{out}"], [slow]),
    "partial_fairness_crosscheck.py": (["--n", "200", "--starts", "1"], [slow]),
    "strategic_dro.py": (["--fast", "--out", "{out}"], [slow]),
    "ramp_rates.py": (["--n", "600", "--bounds", "0.05"], []),
}


def test_every_example_has_a_case():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(CASES)


def _git_status():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                         text=True)
    return out.stdout if out.returncode == 0 else None


@pytest.mark.parametrize("name", [pytest.param(n, marks=m) for n, (_, m) in CASES.items()])
def test_example_runs_and_writes_only_to_its_folder(name, tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    args = [a.replace("{out}", str(out)) for a in CASES[name][0]]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "MPLBACKEND": "Agg"}
    before = _git_status()
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=3600)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert _git_status() == before, f"{name} changed the source tree"
    if "--out" in args:
        assert any(out.iterdir()), f"{name} wrote nothing into --out"


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_help_prints_its_whole_description_and_runs_nothing(name, capsys, monkeypatch):
    """`--help` exits 0 at once (run in this process: SystemExit comes from argparse before any work) with the
    example's docstring in full (no sentence cut at a line end) and a help text for every option."""
    pytest.importorskip("sklearn")
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    assert info.value.code == 0 and out.startswith("usage: ")
    doc = ast.get_docstring(ast.parse((EXAMPLES / name).read_text()))
    flat = " ".join(out.split())
    for paragraph in doc.split("\n\n"):
        assert " ".join(paragraph.split()) in flat, f"{name}: --help lacks {paragraph[:60]!r}"
    lines = out.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("  -") and "show this help" not in line:
            inline = re.search(r"\S\s{2,}\S", line.strip())
            below = k + 1 < len(lines) and lines[k + 1].startswith(" " * 8) and not lines[k + 1].strip().startswith("-")
            assert inline or below, f"{name}: the option {line.split()[0]} has no help text"


def test_compositions_example_refuses_an_unknown_name(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["compositions.py", "nonsense"])
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(EXAMPLES / "compositions.py"), run_name="__main__")
    assert info.value.code == 2 and "choose from equal_opportunity" in capsys.readouterr().err
