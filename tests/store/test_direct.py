"""The store opened by its driver alone, as the hook opens it (failclass.store.direct):
connected as SQLAlchemy's engine would connect, writing the rows the ORM reads back, and
SQLAlchemy's Store wherever the schema must be migrated first."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from failures import MADE, examination
from sqlalchemy import create_engine

from failclass.attempts import Attempt
from failclass.contracts import Admitted, Origin
from failclass.policy.config import load_policy
from failclass.store import StoreUnavailable
from failclass.store.direct import DirectRecords, connect_args, open_records
from failclass.store.migrate import HEAD, current, upgrade
from failclass.store.reach import reaching
from failclass.store.repository import Store, make_engine
from failclass.usecases import admit_submission, report_attempt

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:////var/lib/failclass/failclass.db",
        "sqlite:///relative/failclass.db",
        "sqlite+pysqlite:////tmp/with%20space.db",
        "postgresql+psycopg://failclass:s3cret@db:5433/failclass",
        "postgresql+psycopg://fail%40class:p%40ss%3Aword@127.0.0.1/test?options=-csearch_path%3Dx&sslmode=disable",
        "postgresql+psycopg://postgres@[::1]:5432/test",
        "postgresql+psycopg:///test",
    ],
)
def test_the_driver_gets_what_sqlalchemy_would_give_it(url: str) -> None:
    engine = create_engine(url)
    args, kwargs = engine.dialect.create_connect_args(engine.url)
    found = connect_args(url)
    assert found is not None
    driver, given = found
    if driver == "sqlite3":
        assert [os.path.abspath(given["database"])] == args
    else:
        assert given == {key: value for key, value in kwargs.items() if key != "context"}


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:////tmp/failclass.db?timeout=5",
        "postgresql://u@h/db",
        "mysql+pymysql://u@h/db",
        "postgresql+psycopg://u@h/db?host=a&host=b",
    ],
)
def test_other_urls_are_left_to_sqlalchemy(url: str) -> None:
    assert connect_args(url) is None


def test_a_store_at_head_is_opened_by_its_driver_and_one_behind_is_migrated(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine, "0001")
    behind = open_records(database_url)
    assert isinstance(behind, Store) and current(engine) == HEAD
    engine.dispose()
    behind.engine.dispose()
    assert isinstance(open_records(database_url), DirectRecords)


def test_the_rows_the_driver_writes_are_those_the_orm_reads(database_url: str) -> None:
    """Times (given with and without a zone), JSON and ids, as the views show them; the
    views' time filters compare them as they compare the ORM's own."""
    store = Store.open(database_url)
    direct = open_records(database_url)
    assert isinstance(direct, DirectRecords)
    examined = examination("nccl_timeout")
    start = datetime(2026, 11, 2, 10, 0, tzinfo=timezone(timedelta(hours=2)))
    attempt = Attempt("j", 1, "u", start_time=start, end_time=datetime(2026, 11, 2, 8, 30), nodes=("gpu-01",))
    recorded = report_attempt(direct, attempt, examined, load_policy(), now=T0)
    (row,) = store.job("j")
    assert (row.start_time, row.end_time) == (datetime(2026, 11, 2, 8, 0, tzinfo=UTC), datetime(2026, 11, 2, 8, 30, tzinfo=UTC))
    assert (row.recorded_at, row.nodes, row.classification) == (T0, ("gpu-01",), recorded.classification)
    assert row.decision is not None and recorded.decision is not None
    assert row.decision.action == recorded.decision.action == "retry"
    assert [d.action for d in store.decisions(since=T0)] == ["retry"]
    assert store.decisions(since=T0 + timedelta(microseconds=1)) == []
    again = report_attempt(direct, attempt, examined, load_policy(), now=T0 + timedelta(minutes=1))
    assert again.duplicate and again.attempt_id == recorded.attempt_id and again.decision == recorded.decision
    assert direct.last_attempt("j") == 1 and direct.last_attempt("other") == 0
    assert admit_submission(direct, Attempt("j", 2, "u"), load_policy()) == Admitted("enforce")


def test_the_driver_keeps_where_the_ranks_ran_and_where_the_failure_started(database_url: str) -> None:
    """Rank 1 of two, one a node, named an ECC error first: the origin is kept with the
    classification, the facts that placed it with the attempt, and gpu-02 alone is excluded."""
    store = Store.open(database_url)
    direct = open_records(database_url)
    assert isinstance(direct, DirectRecords)
    examined = examination("ecc")
    origin = Origin(1, "gpu-02", 0, MADE["ecc"].log, 1, "the only rank that named a cause")
    pods = {"train-worker-0": "gpu-01", "train-worker-1": "gpu-02"}
    attempt = Attempt("j-ecc", 1, "u", nodes=("gpu-01", "gpu-02"), tasks_per_node=1, pods=pods)
    recorded = report_attempt(direct, attempt, dataclasses.replace(examined, origin=origin), load_policy(), now=T0)
    assert recorded.decision is not None and recorded.decision.effects.implicated_nodes == ("gpu-02",)
    assert recorded.decision.exclude_nodes == ("gpu-02",)
    (row,) = store.job("j-ecc")
    assert (row.tasks_per_node, row.pods, row.origin_rank, row.origin_node, row.origin_gpu) == (1, pods, 1, "gpu-02", 0)
    report_attempt(direct, Attempt("j-plain", 1, "u", nodes=("gpu-01", "gpu-02")), examined, load_policy(), now=T0)
    (plain,) = store.job("j-plain")
    assert (plain.tasks_per_node, plain.pods, plain.origin_rank, plain.origin_node, plain.origin_gpu) == (
        None,
        {},
        None,
        None,
        None,
    )
    assert plain.decision is not None and plain.decision.effects.implicated_nodes == ("gpu-01", "gpu-02")  # no origin: both


def test_the_drivers_errors_are_the_stores_and_a_duplicate_is_not(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    with pytest.raises(StoreUnavailable, match=r"unavailable: no such table: attempts"), reaching(url):
        sqlite3.connect(tmp_path / "f.db").execute("SELECT * FROM attempts")
    connection = sqlite3.connect(tmp_path / "f.db")
    connection.execute("CREATE TABLE t (x UNIQUE)")
    with pytest.raises(sqlite3.IntegrityError), reaching(url):
        connection.executemany("INSERT INTO t VALUES (?)", [(1,), (1,)])
