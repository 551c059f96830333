"""The store: Store opens a database with SQLAlchemy (migrated to the newest schema),
reads it (failclass.store.views) and records attempts and admissions through its
engine's connections (failclass.store.records, the code the hook runs without
SQLAlchemy)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.exc import DBAPIError

from failclass.store.database import make_engine, open_engine
from failclass.store.models import AttemptRow
from failclass.store.reach import default_database_url
from failclass.store.records import Recorded, Records, RequestIdentity
from failclass.store.views import StoreViews

__all__ = ["Recorded", "RequestIdentity", "Store", "default_database_url", "make_engine"]


class Store(StoreViews, Records):
    @classmethod
    def open(cls, url: str, migrate: bool = True) -> Store:
        return cls(open_engine(url, migrate))

    def has_attempt(self, attempt_id: int) -> bool:
        with self.sessions() as session:
            return session.get(AttemptRow, attempt_id) is not None

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """A connection of the engine's pool, returned to it afterwards."""
        connection = self.engine.raw_connection()
        try:
            yield connection
        finally:
            connection.close()

    @contextmanager
    def _driver_errors(self) -> Iterator[None]:
        """The driver's errors as SQLAlchemy's, which the service answers (503 for a store
        it cannot reach or write now) and failclass.store.reach names, as elsewhere."""
        try:
            yield
        except self.driver.Error as exc:
            raise DBAPIError.instance(None, None, exc, self.driver.Error, dialect=self.engine.dialect) from exc
