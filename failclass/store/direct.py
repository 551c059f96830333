"""The store as the scheduler hook opens it, once per finished job: with the database
driver alone (sqlite3 for a SQLite file, psycopg for a ``postgresql+psycopg`` URL) when
its schema is at HEAD. SQLAlchemy, and Alembic, load only to migrate a store that is
behind, or for a URL this module leaves to SQLAlchemy's engine (another driver, SQLite in
memory or with options, several hosts); either way failclass.store.records does the
recording."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote

from failclass.store.migrate import HEAD, VERSION_TABLE
from failclass.store.records import Records

# A database URL's parts, as SQLAlchemy reads them (sqlalchemy.engine.url._parse_url).
URL = re.compile(
    r"""
    (?P<name>[\w\+]+)://
    (?:(?P<username>[^:/]*)(?::(?P<password>[^@]*))?@)?
    (?:(?:\[(?P<ipv6host>[^/\?]+)\]|(?P<ipv4host>[^/:\?]+))?(?::(?P<port>[^/\?]*))?)?
    (?:/(?P<database>[^\?]*))?
    (?:\?(?P<query>.*))?
    """,
    re.VERBOSE,
)
SQLITE = ("sqlite", "sqlite+pysqlite")
POSTGRES = "postgresql+psycopg"


def connect_args(url: str) -> tuple[str, dict[str, Any]] | None:
    """The driver and the arguments SQLAlchemy's engine would connect to ``url`` with,
    for the URLs opened here; None for the others."""
    found = URL.match(url)
    if found is None:
        return None
    parts = found.groupdict()
    database = unquote(parts["database"]) if parts["database"] is not None else None
    host = parts["ipv4host"] or parts["ipv6host"]
    if parts["name"] in SQLITE:
        served = parts["username"] is not None or host or parts["port"] or parts["query"] is not None
        return None if served or not database or database == ":memory:" else ("sqlite3", {"database": database})
    query = parse_qsl(parts["query"] or "")
    if parts["name"] != POSTGRES or len({key for key, _ in query}) < len(query) or not (parts["port"] or "0").isdigit():
        return None
    given = {
        "host": host,
        "dbname": database,
        "user": unquote(parts["username"] or ""),
        "password": unquote(parts["password"] or ""),
        "port": int(parts["port"] or 0),
    }
    return "psycopg", {**{key: value for key, value in given.items() if value}, **dict(query)}


class DirectRecords(Records):
    """Records over one connection of the driver itself, for one process's life."""

    def __init__(self, connection: Any, driver: ModuleType, postgres: bool) -> None:
        self.connection = connection
        self.driver = driver
        self.postgres = postgres
        self._local_lock = threading.Lock()

    @classmethod
    def connect(cls, driver: str, args: dict[str, Any]) -> DirectRecords:
        """Connected as SQLAlchemy's engine connects (failclass.store.database.make_engine):
        a SQLite file's folder made when missing, SQLite waiting up to 30 s for a writer."""
        if driver == "sqlite3":
            import sqlite3

            Path(args["database"]).parent.mkdir(parents=True, exist_ok=True)
            return cls(sqlite3.connect(args["database"], timeout=30, check_same_thread=False), sqlite3, postgres=False)
        import psycopg

        return cls(psycopg.connect(**args), psycopg, postgres=True)

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        yield self.connection

    def revision(self) -> str | None:
        """The schema's revision, None before the first migration (read as Alembic does:
        its version table, if there is one)."""
        with self._transaction() as db:
            if self.postgres:
                found = db.one("SELECT to_regclass(?) IS NOT NULL", VERSION_TABLE)
            else:
                found = db.one("SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?", VERSION_TABLE)
            if not (found and found[0]):
                return None
            version = db.one(f"SELECT version_num FROM {VERSION_TABLE}")
            return None if version is None else str(version[0])


def open_records(url: str) -> Records:
    """The store at ``url``, to record in: by its driver alone where the URL allows and
    the schema is at HEAD, else SQLAlchemy's Store (which migrates it)."""
    how = connect_args(url)
    if how is not None:
        records = DirectRecords.connect(*how)
        if records.revision() == HEAD:
            return records
        records.connection.close()
    from failclass.store.repository import Store

    return Store.open(url)
