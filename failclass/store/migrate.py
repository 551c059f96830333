"""Schema migrations with Alembic, run from code: `failclass db upgrade`, and by the
service at start-up. Several processes may start at once (`failclass serve --workers N`
on a fresh database): one migrates while the others wait, then find the schema at head.
On PostgreSQL the wait is a transaction-scoped advisory lock; on SQLite, an exclusive
lock on a file beside the database."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, text

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
LOCK_KEY = "failclass: schema migrations"  # one advisory lock per database


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database at ``engine`` to ``revision`` (the newest by default), one
    process at a time. A database at the newest schema is only read (it may be read-only)."""
    config = alembic_config(engine.url.render_as_string(hide_password=False))
    if revision == "head" and current(engine) == head():
        return
    with _sqlite_file_lock(engine), engine.begin() as connection:
        _postgres_lock(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def _postgres_lock(connection: Connection) -> None:
    """Held until the migration's transaction ends (so the next one sees its tables)."""
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


def head() -> str:
    """The newest revision of the migrations."""
    from alembic.script import ScriptDirectory

    newest = ScriptDirectory.from_config(alembic_config("")).get_current_head()
    assert newest is not None
    return newest


def current(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
