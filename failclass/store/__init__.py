"""The store (failclass.store.repository). StoreUnavailable is here, without SQLAlchemy,
so that every entry point can name it."""

from __future__ import annotations

from failclass.errors import FailclassError


class StoreUnavailable(FailclassError):
    """The store cannot be opened or used (refused, not a database, a read-only folder):
    the message names it (password masked) and the cause, in one line."""
