"""The extras: pyproject.toml declares every library failclass imports (the core or an
extra), failclass/cli/extras.py names the same extras, and a command whose extra is
missing says which one in one line (exit status 2) instead of an ImportError."""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from collections.abc import Iterable
from importlib import metadata

import click
import pytest
from click.testing import CliRunner
from conftest import ROOT

from failclass.cli import extras
from failclass.cli.extras import EXTRAS, needs

pytestmark = pytest.mark.e2e

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
REQUIREMENT = re.compile(r"\s*([A-Za-z0-9._-]+)\s*(?:\[([^\]]*)\])?")
EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parsed(requirement: str) -> tuple[str, set[str]]:
    found = REQUIREMENT.match(requirement)
    assert found, requirement
    return normal(found[1]), {normal(e) for e in (found[2] or "").split(",") if e.strip()}


def distributions(requirements: Iterable[str]) -> set[str]:
    """The distributions these requirements install, through failclass's own extras and
    the installed libraries' requirements (with the extras they are asked for)."""
    seen: set[str] = set()
    pending = [parsed(r) for r in requirements]
    while pending:
        name, wanted = pending.pop()
        if name == "failclass":
            pending += [parsed(r) for extra in wanted for r in PROJECT["optional-dependencies"][extra]]
            continue
        fresh = name not in seen
        seen.add(name)
        try:
            required = metadata.requires(name) or []
        except metadata.PackageNotFoundError:  # a requirement of another Python or platform
            continue
        for requirement in required:
            marker = EXTRA_MARKER.search(requirement.partition(";")[2])
            if (marker is None and fresh) or (marker is not None and normal(marker[1]) in wanted):
                pending.append(parsed(requirement.partition(";")[0]))
    return seen


@functools.cache
def installed_modules() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def distribution_of(module: str) -> set[str]:
    return {normal(name) for name in installed_modules().get(module, [])}


def imported_libraries() -> set[str]:
    """Every top-level module outside the standard library that failclass/ imports."""
    found = set()
    for path in (ROOT / "failclass").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"failclass", "__future__"}


def test_the_extras_of_the_code_are_those_of_pyproject_and_install_their_modules() -> None:
    assert set(EXTRAS) <= set(PROJECT["optional-dependencies"])
    for extra, modules in EXTRAS.items():
        installed = distributions([f"failclass[{extra}]"])
        for module in modules:
            assert distribution_of(module) & installed, f"{module} is not installed by failclass[{extra}]"
    everything = distributions(["failclass[all]"])
    assert distributions([f"failclass[{extra}]" for extra in EXTRAS]) == everything


def test_every_library_failclass_imports_is_in_the_core_or_named_by_an_extra() -> None:
    core = distributions(PROJECT["dependencies"])
    for module in imported_libraries():
        in_core = bool(distribution_of(module) & core)
        named = [extra for extra, modules in EXTRAS.items() if module in modules]
        assert in_core or named, f"{module}: imported by failclass, in no extra and not in the core"
        assert not (in_core and named), f"{module}: in the core, yet named by the extras {named}"


def test_the_core_leaves_out_the_heavy_libraries() -> None:
    core = distributions(PROJECT["dependencies"])
    assert not core & {"matplotlib", "pyarrow", "dask", "distributed", "fastapi", "uvicorn", "scikit-learn", "scipy"}


@click.command()
@click.option("--missing", default="")
@needs("service", reaches=("postgres",))
def command(missing: str) -> None:
    if missing:
        raise ModuleNotFoundError(f"No module named '{missing}'", name=missing)
    click.echo("ran")


@pytest.mark.parametrize(
    ("absent", "raised", "extra"),
    [("uvicorn", "", "service"), ("", "psycopg.pq", "postgres"), ("", "fastapi", "service")],
)
def test_a_missing_extra_is_one_line_naming_it_with_exit_status_2(
    monkeypatch: pytest.MonkeyPatch, absent: str, raised: str, extra: str
) -> None:
    real = extras.importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None if name == absent else real(name))
    done = CliRunner().invoke(command, ["--missing", raised], prog_name="failclass serve")
    assert (done.exit_code, done.output) == (
        2,
        f"Error: failclass serve needs the '{extra}' extra: pip install 'failclass[{extra}]'\n",
    )


def test_a_module_of_no_declared_extra_is_not_hidden() -> None:
    done = CliRunner().invoke(command, ["--missing", "kubernetes"])
    assert isinstance(done.exception, ModuleNotFoundError)
    assert CliRunner().invoke(command, []).output == "ran\n"
    with pytest.raises(ValueError, match="unknown extras"):
        needs("services")
