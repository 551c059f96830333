"""Shared fixtures: the built-in rules compiled once per test session, databases."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from failclass.classifier import Classifier

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def classifier() -> Classifier:
    return Classifier()


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command line, as an operator would."""
    return subprocess.run(
        [sys.executable, "-m", "failclass.cli", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )


POSTGRES_URL = os.environ.get("FAILCLASS_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
# Without a PostgreSQL server its half of the store and service tests skip, saying why;
# CI sets this so that they fail instead (.ci/run).
REQUIRE_POSTGRES = os.environ.get("FAILCLASS_REQUIRE_POSTGRES") == "1"

# A clean environment, as CI's and a new user's: output that a test reads through a pipe
# must be flushed by the program, not by a variable of the developer's shell.
os.environ.pop("PYTHONUNBUFFERED", None)
# Debian puts the daemons the suite starts (slurmctld, munged) in sbin, which a minimal
# PATH (`env -i PATH=/usr/bin:/bin`) leaves out.
os.environ["PATH"] = os.pathsep.join(
    [os.environ.get("PATH", ""), *(d for d in ("/usr/sbin", "/sbin") if d not in os.environ.get("PATH", "").split(os.pathsep))]
)


def postgres_schema_url() -> Iterator[str]:
    """A fresh schema on the test PostgreSQL server, dropped afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    schema = f"failclass_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL)
    try:
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError as exc:
        problem = f"PostgreSQL at {POSTGRES_URL} is not reachable (set FAILCLASS_TEST_POSTGRES): {str(exc).splitlines()[0]}"
        if REQUIRE_POSTGRES:
            pytest.fail(problem)
        pytest.skip(problem)
    separator = "&" if "?" in POSTGRES_URL else "?"
    yield f"{POSTGRES_URL}{separator}options=-csearch_path%3D{schema}"
    with admin.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each store and service test runs on the embedded default and on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'failclass.db'}"
    else:
        yield from postgres_schema_url()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`make test` runs on every core (pytest-xdist, ``--dist loadgroup``): a module's tests
    stay on one worker, so that its module fixtures (a wheel, a venv, a server) are built
    once, unless the module names its group; the modules that start a Slurm all name
    "slurm", so that two clusters never share this host."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and item.module is not None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
