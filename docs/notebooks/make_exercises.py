"""Write the exercise notebooks from the worked solutions: ``python docs/notebooks/make_exercises.py``.

The notebooks are jupytext percent-format scripts (``# %%`` starts a code cell, ``# %% [markdown]`` a Markdown
cell). A cell whose header carries ``tags=["solution"]`` is part of the worked solution: in ``exercises/`` each run
of consecutive solution cells is replaced by empty cells for the student's answer (one for text, one for code, as
the run had). Every other cell is copied unchanged, so the exercise set is the solution set with the answers
withheld (``tests/test_notebooks.py`` checks that the committed exercises are up to date).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CELL = re.compile(r"(?m)^(?=# %%)")
SOLUTION_TAG = re.compile(r"""\s*tags=\[["']solution["']\]""")
PLACEHOLDER = {"markdown": "# %% [markdown]\n# *Your answer:*\n\n", "code": "# %%\n# Your code:\n\n"}


def exercise_text(solution: str) -> str:
    """The exercise version of a solution notebook (its text)."""
    out, run = [], set()          # run: the kinds of cell in the current run of solution cells
    for cell in CELL.split(solution) + [""]:
        header = cell.split("\n", 1)[0]
        if cell.startswith("# %%") and SOLUTION_TAG.search(header):
            run.add("markdown" if "[markdown]" in header else "code")
            continue
        out.extend(PLACEHOLDER[kind] for kind in ("markdown", "code") if kind in run)
        run = set()
        out.append(cell)
    return "".join(out).rstrip("\n") + "\n"


def main() -> int:
    for path in sorted((HERE / "solutions").glob("*.py")):
        target = HERE / "exercises" / path.name
        target.write_text(exercise_text(path.read_text()))
        print(f"wrote {target.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
