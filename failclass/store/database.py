"""The database through SQLAlchemy: engines opened at the newest schema, and sessions
(the transactions that record attempts are failclass.store.records's)."""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.exc import InterfaceError, InternalError, OperationalError
from sqlalchemy.orm import sessionmaker

from failclass.store import StoreUnavailable
from failclass.store.migrate import HEAD, current, upgrade
from failclass.store.reach import masked, reaching

# What a store that cannot be reached, written or used now raises (a server down, a
# read-only or full disk, a read-only transaction); not a fault of the query.
UNAVAILABLE = (OperationalError, InternalError, InterfaceError)
# PostgreSQL connections a process keeps (a service worker: `serve --workers N` holds at
# most N times as many). A request finds one free, or waits for one: a transaction holds
# its connection for a few statements only, and a connection opened past the pool (and
# closed once returned) cost a new server backend per request under load.
POOL_SIZE = 10


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created when missing."""
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        return create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
    return create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=0)


class Database:
    """Sessions over one engine, and its driver (the DB-API module)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self.driver = engine.dialect.loaded_dbapi
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
