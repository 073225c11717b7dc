"""Every ```python block of README.md and docs/*.md runs (blocks of one file share a namespace, in order).

A block preceded by the line ``<!-- slow -->`` runs only with ``pytest -m slow``.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"(<!-- slow -->\s*\n)?```python\n(.*?)```", re.S)


def _cases():
    for path in FILES:
        blocks = [(bool(m.group(1)), m.group(2)) for m in BLOCK.finditer(path.read_text())]
        if blocks:
            marks = [pytest.mark.slow] if any(slow for slow, _ in blocks) else []
            yield pytest.param(path, [code for _, code in blocks], id=path.name, marks=marks)


@pytest.mark.parametrize("path, blocks", list(_cases()))
def test_snippets_run(path, blocks, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for code in blocks:
        exec(compile(code, str(path), "exec"), namespace)
