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
                cycle = [*trail[trail.index(target) :], target] if target in trail else [node, target]
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
    for _name, path in modules():
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


# Modules no test imports by name, each with the test that exercises it and a text of that
# test which shows it does (checked below): commands run as real processes, routes called
# over HTTP, modules reached through the one that uses them.
TESTED_THROUGH: dict[str, tuple[str, str]] = {
    "failclass": ("tests/packaging/test_wheel.py", "--version"),
    "failclass.__main__": ("tests/packaging/test_wheel.py", "--version"),
    "failclass.cli.__main__": ("tests/conftest.py", '"-m", "failclass.cli"'),
    "failclass.cli.analytics": ("tests/analytics/test_simulate.py", '"simulate"'),
    "failclass.cli.classify": ("tests/cli/test_cli.py", '"classify"'),
    "failclass.cli.common": ("tests/cli/test_waste.py", "returncode == 1"),
    "failclass.cli.model": ("tests/model/test_training.py", '"evaluate"'),
    "failclass.cli.rules": ("tests/cli/test_cli.py", '"lint"'),
    "failclass.cli.serve": ("tests/service_server.py", '"serve"'),
    "failclass.adapters.slurm_install": ("tests/hook/test_hook.py", '"slurm-install"'),
    "failclass.hook.evidence": ("tests/adapters/test_protocol.py", "evidence"),
    "failclass.batch.collect": ("tests/batch/test_batch.py", "an attempt was written twice"),
    "failclass.executors": ("tests/batch/test_batch.py", '"--executor",'),
    "failclass.batch.output": ("tests/batch/test_batch.py", "results.parquet"),
    "failclass.batch.workers": ("tests/batch/test_batch.py", "classified_by"),
    "failclass.analytics.comparison": ("tests/analytics/test_filters.py", "compare"),
    "failclass.analytics.ettr": ("tests/analytics/test_goodput.py", "ettr"),
    "failclass.analytics.plots": ("tests/analytics/test_html.py", "<svg"),
    "failclass.analytics.render": ("tests/analytics/test_report.py", "markdown"),
    "failclass.analytics.repetition": ("tests/analytics/test_html.py", "repeats"),
    "failclass.analytics.table7": ("tests/analytics/test_report.py", "table7"),
    "failclass.analytics.tables": ("tests/service/test_report_service.py", 'format="markdown"'),
    "failclass.contracts": ("tests/service/test_api_contract.py", "Decision"),
    "failclass.matching.exceptions": ("tests/logs/test_tracebacks.py", "exception"),
    "failclass.matching.patterns": ("tests/matching/test_lint.py", "patterns:"),
    "failclass.matching.safety": ("tests/matching/test_loader.py", "catastrophic"),
    "failclass.matching.scaffold": ("tests/matching/test_loader.py", '"rules", "new"'),
    "failclass.matching.structure": ("tests/logs/test_tracebacks.py", "exception"),
    "failclass.resources": ("tests/packaging/test_wheel.py", "classify"),
    "failclass.yamlload": ("tests/matching/test_loader.py", "duplicate"),
    "failclass.waste.formats.nvidia_smi": ("tests/waste/test_formats.py", "nvidia_smi"),
    "failclass.waste.heatmap": ("tests/cli/test_waste.py", "heat_map"),
    "failclass.waste.jobfiles.common": ("tests/waste/test_jobfiles.py", "appears twice"),
    "failclass.waste.jobfiles.kubernetes": ("tests/waste/test_jobfiles.py", '"Kubernetes pods"'),
    "failclass.waste.jobfiles.sacct": ("tests/waste/test_jobfiles.py", '"sacct --json"'),
    "failclass.waste.jobfiles.scontrol": ("tests/waste/test_jobfiles.py", "scontrol_show_job_d"),
    "failclass.waste.jobfiles.table": ("tests/waste/test_jobfiles.py", "sacct -P (|-separated)"),
    "failclass.store.database": ("tests/store/test_store.py", "Store.open"),
    "failclass.store.models": ("tests/store/test_store.py", "idempotency"),
    "failclass.store.views": ("tests/service/test_service.py", "/v1/jobs"),
    "failclass.store.records": ("tests/store/test_store.py", "report_attempt"),
    "failclass.store.statements": ("tests/store/test_direct.py", "the_rows_the_driver_writes_are_those_the_orm_reads"),
    "failclass.store.steps": ("tests/waste/test_enforce.py", "store.watch_steps"),
    "failclass.service.routers.operations": ("tests/service/test_service.py", "/readyz"),
    **{
        f"failclass.service.{name}": ("tests/service/test_api_contract.py", "schemathesis")
        for name in (
            "app",
            "auth",
            "bodies",
            "deps",
            "docs",
            "errors",
            "fields",
            "limits",
            "openapi",
            "protocol",
            "responses",
            "schemas",
            "settings",
        )
    },
    **{
        f"failclass.service.routers.{name}": ("tests/service/test_service.py", f"/v1/{path}")
        for name, path in (
            ("attempts", "attempts"),
            ("classify", "classify"),
            ("history", "jobs"),
            ("labels", "labels"),
            ("state", "blacklist"),
        )
    },
}


def _has_code(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in tree.body)


def test_every_module_has_a_test_or_says_which_test_exercises_it() -> None:
    root = PACKAGE.parent
    tests = {path: path.read_text() for path in (root / "tests").rglob("*.py")}
    named = {path.stem for path in tests}
    every = "\n".join(tests.values())
    untested, unshown = [], []
    for name, path in modules():
        if "migrations" in name or (path.name == "__init__.py" and not _has_code(path)):
            continue
        parent, _, leaf = name.rpartition(".")
        imported = f"import {name}\n" in every or f"from {name} import" in every
        from_parent = any(
            leaf in line.split(" import ", 1)[1] for line in every.splitlines() if line.startswith(f"from {parent} import ")
        )
        if imported or from_parent or any(stem.startswith(f"test_{leaf}") for stem in named):
            continue
        if name not in TESTED_THROUGH:
            untested.append(name)
            continue
        test, shows = TESTED_THROUGH[name]
        if not (root / test).is_file() or shows not in (root / test).read_text():
            unshown.append(f"{name}: {test} does not show {shows!r}")
    assert not untested, f"modules with no test and no stated one (add a test, or a TESTED_THROUGH entry): {untested}"
    assert not unshown, unshown


def test_the_stated_tests_are_needed() -> None:
    """An entry for a module that is gone is dead weight."""
    known = {name for name, _ in modules()}
    assert set(TESTED_THROUGH) <= known, sorted(set(TESTED_THROUGH) - known)


def test_reason_ids_are_data_not_code() -> None:
    """Which reason does what (consequences, preemptions, a scheduler's words, the policy)
    is in taxonomy.yaml and the policy file; no module names a reason, but the taxonomy's
    one constant for "No signature"."""
    import yaml

    taxonomy = yaml.safe_load((PACKAGE / "data" / "signatures" / "taxonomy.yaml").read_text())
    ids = {reason["id"] for reason in taxonomy["reasons"]}
    named = []
    for name, path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in ids:
                named.append(f"{name}:{node.lineno} {node.value!r}")
    assert named == ["failclass.matching.taxonomy:14 'no_signature'"], named
