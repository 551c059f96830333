"""The database: engines, sessions, and transactions that hold advisory locks.

Concurrency: on PostgreSQL, a transaction first takes advisory locks on its keys (the
job, the user, the input paths; in sorted order: no deadlock), so that two reports about
one job or one user are decided one after the other and every attempt is counted exactly
once (the unique (job, attempt) and idempotency-key constraints back this up). SQLite
serialises writers itself; within one process a lock keeps the read-decide-write
sequence whole.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.exc import ArgumentError, IntegrityError, InterfaceError, InternalError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from failclass.resources import user_data_dir
from failclass.store import StoreUnavailable
from failclass.store.migrate import HEAD, MigrationFailed, current, upgrade

# What a store that cannot be reached, written or used now raises (a server down, a
# read-only or full disk, a read-only transaction); not a fault of the query.
UNAVAILABLE = (OperationalError, InternalError, InterfaceError)


def default_database_url() -> str:
    """The embedded default: a SQLite file in the user's data folder (StoreUnavailable
    for a user without one: no XDG_DATA_HOME, no HOME and no passwd entry)."""
    try:
        folder = user_data_dir()
    except RuntimeError:  # Path.home() found no home
        raise StoreUnavailable(
            "no default store: no XDG_DATA_HOME and no home folder; give --database-url or FAILCLASS_DATABASE_URL"
        ) from None
    return f"sqlite:///{folder / 'failclass.db'}"


def masked(url: str) -> str:
    """``url`` with its password shown as ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def cause(exc: Exception) -> str:
    """The driver's or the system's own words, on one line."""
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    said = str(getattr(exc, "orig", None) or exc)
    return " ".join(line.strip() for line in said.splitlines() if line.strip())


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """Errors of reaching the database at ``url`` (refused, no such database, not a
    database, a read-only folder, a schema this code does not know) as StoreUnavailable;
    a constraint violation stays the store's own business."""
    try:
        yield
    except IntegrityError:
        raise
    except (SQLAlchemyError, MigrationFailed, OSError) as exc:
        raise StoreUnavailable(f"store {masked(url)} unavailable: {cause(exc)}") from exc


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created when missing."""
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        return create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


class Database:
    """Sessions over one engine, and serialised transactions."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self.postgres = engine.dialect.name == "postgresql"
        self._local_lock = threading.Lock()

    def ping(self) -> None:
        """Raise if the database does not answer."""
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def check_writable(self) -> None:
        """Raise unless the store can record now: a write in a transaction, rolled back."""
        with self.engine.connect() as connection, connection.begin() as transaction:
            connection.execute(text("UPDATE alembic_version SET version_num = version_num"))
            transaction.rollback()

    @contextmanager
    def serialised(self, keys: Sequence[str]) -> Iterator[Session]:
        """A transaction that holds the locks of ``keys`` until it ends."""
        with self.sessions() as session, session.begin():
            if self.postgres:
                for key in sorted(set(keys)):
                    session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key})
                yield session
            else:
                with self._local_lock:
                    yield session


def open_engine(url: str, migrate: bool = True) -> Engine:
    """An engine on ``url`` whose schema is at the newest revision: found there, else
    migrated there (``migrate``); StoreUnavailable when that cannot be done."""
    with reaching(url):
        engine = make_engine(url)
        found = current(engine)
        if found != HEAD and migrate:
            upgrade(engine)
            return engine
    if found != HEAD:
        engine.dispose()
        raise StoreUnavailable(
            f"store {masked(url)} unavailable: its schema is at revision {found or 'none'}, this failclass reads {HEAD}: "
            "run `failclass db upgrade`"
        )
    return engine
