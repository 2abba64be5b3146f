"""The core's structure: its modules import each other without a cycle, and the model reaches
no module that reads or writes files (the loader owns all I/O)."""

from __future__ import annotations

import ast
from pathlib import Path

import tracetui.trace

PACKAGE = Path(tracetui.trace.__file__).parent
# The extension is a module whether or not it was built (its stub and source always ship).
MODULES = {p.stem for p in PACKAGE.glob("*.py")} | {p.name.split(".")[0] for p in PACKAGE.glob("_scan*")}
IO_MODULES = {"source", "cache", "loader", "prefetch"}


def imports_of(module: str) -> set[str]:
    """Modules of the package that ``module`` imports anywhere (lazy and type-only imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            names = [f"{base}.{alias.name}" for alias in node.names] if base == "tracetui.trace" else [base]
        else:
            continue
        for name in names:
            if name.startswith("tracetui.trace."):
                part = name.split(".")[2]
                found.add(part if part in MODULES else "__init__")
            elif name == "tracetui.trace":
                found.add("__init__")
    return found - {module}


GRAPH = {module: imports_of(module) for module in MODULES if (PACKAGE / f"{module}.py").is_file()}


def reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in GRAPH.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_graph_is_read() -> None:
    assert {"model", "loader", "cache", "decode", "repair"} <= GRAPH.keys()
    assert "cache" in GRAPH["loader"] and "repair" in GRAPH["decode"]


def test_no_module_of_the_core_imports_itself_back() -> None:
    cycles = sorted(module for module in GRAPH if module in reachable(module))
    assert cycles == []


def test_the_model_and_the_decoder_do_no_io() -> None:
    for module in ("model", "decode", "repair", "decoded", "args", "native", "frames", "stats"):
        assert not reachable(module) & IO_MODULES, module
