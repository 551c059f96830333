"""Schema migrations with Alembic, run from code: `failclass db upgrade`, and by the
service and the hook when a store's schema is behind HEAD (a store at HEAD is opened
without loading Alembic: the hook runs once per finished job). Several processes may
start at once (`failclass serve --workers N` on a fresh database): one migrates while
the others wait, then find the schema at head. On PostgreSQL the wait is a
transaction-scoped advisory lock; on SQLite, an exclusive lock on a file beside the
database."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from failclass.errors import FailclassError

if TYPE_CHECKING:  # SQLAlchemy loads where a migration is checked or run, not for HEAD
    from alembic.config import Config
    from sqlalchemy import Connection, Engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
HEAD = "0008"  # the newest revision in migrations/versions (tests/store checks it against Alembic's)
VERSION_TABLE = "alembic_version"  # where Alembic keeps a database's revision
LOCK_KEY = "failclass: schema migrations"  # one advisory lock per database


class MigrationFailed(FailclassError):
    """Alembic cannot bring the database to the revision asked for (its words)."""


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database at ``engine`` to ``revision`` (the newest by default), one
    process at a time; MigrationFailed when Alembic cannot. A database at the newest schema
    is only read (it may be read-only)."""
    if revision == "head" and current(engine) == HEAD:
        return
    from alembic import command
    from alembic.util import CommandError

    config = alembic_config(engine.url.render_as_string(hide_password=False))
    with _sqlite_file_lock(engine), engine.begin() as connection:
        _postgres_lock(connection)
        config.attributes["connection"] = connection
        try:
            command.upgrade(config, revision)
        except CommandError as exc:
            raise MigrationFailed(str(exc)) from exc


def _postgres_lock(connection: Connection) -> None:
    """Held until the migration's transaction ends (so the next one sees its tables)."""
    from sqlalchemy import text

    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": LOCK_KEY})


@contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def current(engine: Engine) -> str | None:
    """The database's revision, None before the first migration (read as Alembic does:
    its version table, if there is one)."""
    from sqlalchemy import inspect, text

    with engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return None
        return connection.scalar(text(f"SELECT version_num FROM {VERSION_TABLE}"))
