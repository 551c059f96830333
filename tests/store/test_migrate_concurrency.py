"""Several processes migrating one fresh database at once (`failclass serve --workers N`
starts that way): each waits its turn, all end at the newest revision, none fails."""

from __future__ import annotations

import multiprocessing
import traceback
from multiprocessing.synchronize import Barrier

import pytest

from failclass.store.migrate import HEAD, current, upgrade
from failclass.store.repository import make_engine

PROCESSES = 4


def _migrate(url: str, start: Barrier, failures: multiprocessing.Queue[str]) -> None:
    engine = make_engine(url)
    start.wait()
    try:
        upgrade(engine)
    except Exception:
        failures.put(traceback.format_exc())
    finally:
        engine.dispose()


@pytest.mark.e2e
def test_concurrent_migrations_of_a_fresh_database(database_url: str) -> None:
    context = multiprocessing.get_context("fork")
    start = context.Barrier(PROCESSES)
    failures: multiprocessing.Queue[str] = context.Queue()
    workers = [context.Process(target=_migrate, args=(database_url, start, failures)) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    found = [failures.get() for _ in range(failures.qsize())]
    assert not found, found[0]
    assert all(worker.exitcode == 0 for worker in workers)
    engine = make_engine(database_url)
    assert current(engine) == HEAD
    engine.dispose()
