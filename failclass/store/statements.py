"""The statements of one transaction, written once for SQLite and PostgreSQL and run by
the driver itself (sqlite3, psycopg), with the values SQLAlchemy's column types would
bind and read (failclass.store.models): JSON as text on SQLite, times in UTC (on SQLite
as text, ``YYYY-MM-DD HH:MM:SS.ffffff``, which sorts as the times do)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


class Transaction:
    """Statements with ``?`` placeholders, on a cursor of either database; dicts and
    lists are bound as JSON, times as the time columns keep them."""

    def __init__(self, cursor: Any, postgres: bool) -> None:
        self.cursor = cursor
        self.postgres = postgres

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        self._execute(sql, params)
        return list(self.cursor.fetchall())

    def one(self, sql: str, *params: Any) -> tuple[Any, ...] | None:
        self._execute(sql, params)
        row = self.cursor.fetchone()
        return None if row is None else tuple(row)

    def changed(self, sql: str, *params: Any) -> int:
        """Run an UPDATE or DELETE; how many rows it changed."""
        self._execute(sql, params)
        return int(self.cursor.rowcount)

    def add(self, table: str, values: dict[str, Any]) -> None:
        """Insert one row whose id is not needed."""
        self._execute(_insert(table, values), tuple(values.values()))

    def insert(self, table: str, values: dict[str, Any]) -> int:
        """Insert one row; its id."""
        sql = _insert(table, values)
        if not self.postgres:
            self._execute(sql, tuple(values.values()))
            return int(self.cursor.lastrowid)
        self._execute(f"{sql} RETURNING id", tuple(values.values()))
        return int(self.cursor.fetchone()[0])

    def _execute(self, sql: str, params: Sequence[Any]) -> None:
        self.cursor.execute(sql.replace("?", "%s") if self.postgres else sql, [self._bound(p) for p in params])

    def _bound(self, value: Any) -> Any:
        if isinstance(value, dict | list):
            if not self.postgres:
                return json.dumps(value)
            from psycopg.types.json import Json

            return Json(value)
        if isinstance(value, datetime):
            utc = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
            return utc if self.postgres else utc.replace(tzinfo=None).isoformat(" ", "microseconds")
        return value

    @staticmethod
    def json(value: Any) -> Any:
        """A JSON column's value (SQLite gives its text)."""
        return json.loads(value) if isinstance(value, str) else value

    @staticmethod
    def time(value: Any) -> datetime:
        """A time's value (not NULL), aware and in UTC (SQLite gives its text)."""
        if isinstance(value, str):
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _insert(table: str, values: dict[str, Any]) -> str:
    columns = ", ".join(f'"{name}"' for name in values)
    return f"INSERT INTO {table} ({columns}) VALUES ({placeholders(list(values))})"


def placeholders(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))
