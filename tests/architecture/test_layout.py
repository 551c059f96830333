"""The layout is the architecture: the rules a newcomer can rely on, checked on the
source itself."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "failclass"
GENERATED = {"failclass/store/migrations/versions/0001_initial_schema.py"}  # Alembic's generated blocks
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        yield ".".join(parts), path


def imports_of(path: Path, module: str, top_level_only: bool) -> set[str]:
    """failclass modules imported by ``path`` (at module level, or anywhere)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("failclass")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("failclass"):
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    known = {name for name, _ in modules()}
    return {name for name in found if name in known and name != module}


def test_no_import_cycle() -> None:
    graph = {name: imports_of(path, name, top_level_only=False) for name, path in modules()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycle = trail[trail.index(target) :] + [target] if target in trail else [node, target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_the_store_knows_nothing_of_the_policy() -> None:
    for name, path in modules():
        if name.startswith("failclass.store"):
            policy = {m for m in imports_of(path, name, top_level_only=False) if m.startswith("failclass.policy")}
            assert not policy, f"{name} imports {policy}"


def test_the_library_does_not_import_its_entry_points() -> None:
    """The CLI, the service and the hook call the library, never the other way round."""
    library = ("failclass.logs", "failclass.matching", "failclass.model", "failclass.policy", "failclass.store")
    edges = ("failclass.cli", "failclass.service", "failclass.hook")
    for name, path in modules():
        if name.startswith(library):
            wrong = {m for m in imports_of(path, name, top_level_only=False) if m.startswith(edges)}
            assert not wrong, f"{name} imports {wrong}"


def test_modules_and_functions_stay_small() -> None:
    too_long = []
    for name, path in modules():
        relative = str(path.relative_to(PACKAGE.parent))
        if relative in GENERATED:
            continue
        source = path.read_text()
        if source.count("\n") > MAX_MODULE_LINES:
            too_long.append(f"{relative}: {source.count(chr(10))} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{relative}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, too_long
