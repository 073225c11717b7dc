"""The package's layers, read from the source: no import cycle (imports inside functions counted), every import
points down the layer order of docs/architecture.md, and the library never imports its own root package."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "fairmodel"

# bottom to top; a module may import modules of its own group (acyclically) or of groups below it
LAYERS = [
    ("base", ["fairmodel.errors", "fairmodel.utilities", "fairmodel._version"]),
    ("data", ["fairmodel.data"]),
    ("oracles", ["fairmodel.oracles"]),
    ("metrics", ["fairmodel.metrics"]),
    ("declarations", ["fairmodel.expressions"]),
    ("backends", ["fairmodel.exact", "fairmodel.stochastic"]),
    ("reductions", ["fairmodel.families"]),
    ("results", ["fairmodel.results"]),
    ("sweeps", ["fairmodel.sweeps"]),
    ("problem", ["fairmodel.problem"]),
    ("solving", ["fairmodel.crosscheck", "fairmodel.minmax"]),
    ("front ends", ["fairmodel.frontends", "fairmodel.estimators", "fairmodel.baselines", "fairmodel.__main__"]),
    ("public API", ["fairmodel"]),
]
SIBLINGS_APART = [("fairmodel.exact", "fairmodel.stochastic")]   # the two backends never import each other


def _modules():
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


MODULES = _modules()


def _resolve(module: str, is_pkg: bool, node) -> list[str]:
    targets = []
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names if a.name.split(".")[0] == "fairmodel"]
    else:
        if node.level:
            base = module.split(".") if is_pkg else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        elif (node.module or "").split(".")[0] == "fairmodel":
            prefix = node.module
        else:
            return []
        targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
    out = []
    for t in targets:
        while t not in MODULES and "." in t:
            t = t.rsplit(".", 1)[0]
        if t in MODULES and t != module:
            out.append(t)
    return out


def _graph():
    """Every import (module level and inside functions) between modules of the package."""
    edges = {}
    for module, (path, is_pkg) in MODULES.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(module, is_pkg, node):
                    edges.setdefault(module, {}).setdefault(target, node.lineno)
    return edges


GRAPH = _graph()


def _layer(module: str) -> int:
    best = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if module == p or module.startswith(p + "."):
                if best is None or len(p) > best[1]:
                    best = (rank, len(p))
    assert best is not None, f"{module} is in no layer of the table: add it to LAYERS and docs/architecture.md"
    return best[0]


def test_the_import_graph_has_no_cycle():
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in GRAPH.get(m, {}):
            if state.get(t) == "open":
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in MODULES:
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_every_import_points_down_the_layers():
    upward = [f"{m}:{line} imports {t} ({LAYERS[_layer(t)][0]} is above {LAYERS[_layer(m)][0]})"
              for m, targets in GRAPH.items() for t, line in targets.items() if _layer(t) > _layer(m)]
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("a, b", SIBLINGS_APART)
def test_the_backends_do_not_import_each_other(a, b):
    crossing = [(m, t) for m, targets in GRAPH.items() for t in targets
                if (m.startswith(a) and t.startswith(b)) or (m.startswith(b) and t.startswith(a))]
    assert not crossing, crossing


def test_the_library_never_imports_its_root_package():
    offenders = [f"{m}:{line}" for m, targets in GRAPH.items() for t, line in targets.items()
                 if t == "fairmodel" and m != "fairmodel"]
    assert not offenders, offenders


def test_declarations_use_no_cvxpy_and_no_solver():
    for module, (path, _) in MODULES.items():
        if module.startswith(("fairmodel.expressions", "fairmodel.oracles", "fairmodel.data", "fairmodel.metrics")):
            tree = ast.parse(path.read_text())
            names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            names |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            assert "cvxpy" not in names, f"{module} imports cvxpy"


def test_the_checker_finds_a_planted_cycle():
    """The checks can fail: with one edge added back from the declarations to a reduction they do."""
    planted = {m: dict(t) for m, t in GRAPH.items()}
    planted.setdefault("fairmodel.expressions.core", {})["fairmodel.families.gdro"] = 1
    globals()["GRAPH"] = planted
    try:
        with pytest.raises(AssertionError, match="import cycles"):
            test_the_import_graph_has_no_cycle()
        with pytest.raises(AssertionError, match="imports fairmodel.families.gdro"):
            test_every_import_points_down_the_layers()
    finally:
        globals()["GRAPH"] = GRAPH_ORIGINAL


GRAPH_ORIGINAL = GRAPH


def test_the_package_root_holds_the_public_entry_points_only():
    """Modules at the root: the public API (`__init__`), the entry points users name (`Problem`, `crosscheck`,
    `SaddleProblem`, the error classes), the version and `python -m fairmodel`; everything else lives in a package
    named for its concept."""
    root = {p.stem for p in ROOT.glob("*.py")}
    assert root == {"__init__", "__main__", "_version", "errors", "problem", "crosscheck", "minmax"}, root


def _stochastic_imports_of_declarations(graph) -> list:
    return [f"{m}:{line} imports {t}" for m, targets in graph.items() if m.startswith("fairmodel.stochastic")
            for t, line in targets.items() if t.startswith(("fairmodel.expressions", "fairmodel.families"))]


def test_the_stochastic_algorithms_import_no_declaration_and_no_family():
    """The algorithms take the oracle protocols of oracles/protocols.py, never a declaration's or a family's object
    (the declarations are below the backends, so the layer test alone would allow them); with one such import
    planted the check fails."""
    assert not _stochastic_imports_of_declarations(GRAPH)
    planted = {m: dict(t) for m, t in GRAPH.items()}
    planted.setdefault("fairmodel.stochastic.aleg", {})["fairmodel.expressions.variables"] = 1
    assert _stochastic_imports_of_declarations(planted) == [
        "fairmodel.stochastic.aleg:1 imports fairmodel.expressions.variables"]
