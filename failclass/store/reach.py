"""Reaching a store: its default URL, its name with the password masked, and what goes
wrong reaching it as StoreUnavailable; without SQLAlchemy, which the scheduler hook does
not load to record an attempt (failclass.store.direct)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from failclass.resources import user_data_dir
from failclass.store import StoreUnavailable
from failclass.store.migrate import MigrationFailed

# A database library's errors, and of them the constraint violations that stay the
# store's own business; a library that is not loaded raised none of them.
ERRORS = {"sqlalchemy.exc": "SQLAlchemyError", "sqlite3": "Error", "psycopg": "Error"}


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
    from sqlalchemy import make_url
    from sqlalchemy.exc import ArgumentError

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
    except Exception as exc:
        loaded = {module: root for name, root in ERRORS.items() if (module := sys.modules.get(name)) is not None}
        if any(isinstance(exc, module.IntegrityError) for module in loaded):
            raise
        if isinstance(exc, (MigrationFailed, OSError, *(getattr(module, root) for module, root in loaded.items()))):
            raise StoreUnavailable(f"store {masked(url)} unavailable: {cause(exc)}") from exc
        raise
