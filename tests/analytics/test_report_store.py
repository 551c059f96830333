"""The report's filters and comparison over the store (SQLite and PostgreSQL), where the
Selection becomes SQL: the same answers as over the manifest of the same attempts, and
the hand counts of report_weeks.py. The attempts are recorded by the real use case, each
with a hand-made classification of its reason (report_weeks.MADE_FOR)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import run_cli
from failures import examination
from report_weeks import ATTEMPTS, LAST_WEEK_LOST_H, MADE_FOR, THIS_WEEK, THIS_WEEK_LOST_H, write_manifest

from failclass.analytics.analysis import FileSource, StoreSource, analyse
from failclass.analytics.selection import Selection, parse_comparison, parse_selection
from failclass.attempts import Attempt
from failclass.matching.taxonomy import builtin_taxonomy
from failclass.policy.config import load_policy
from failclass.store.repository import Store
from failclass.usecases import report_attempt

SELECTIONS = [
    Selection(),
    parse_selection("2026-11-09", "2026-11-16"),
    parse_selection(None, None, users=["bob"]),
    parse_selection(None, None, vcs=["short"]),
    parse_selection(None, None, reasons=["syntax_error", "gpu_oom"]),
    parse_selection(None, None, statuses=["killed", "passed"]),
    parse_selection(None, "2026-11-04T08:00:00", users=["ann", "bob"]),
]


@pytest.fixture
def store(database_url: str) -> Store:
    opened = Store.open(database_url)
    policy = load_policy()
    for job, attempt, user, vc, status, start, minutes, gpus, reason in ATTEMPTS:
        examined = examination(MADE_FOR[reason])
        facts = Attempt(job, attempt, user, vc, status, start_time=start, end_time=start + timedelta(minutes=minutes), gpus=gpus)
        report_attempt(opened, facts, examined, policy, now=start + timedelta(minutes=minutes))
    return opened


def tables(analysis: object) -> dict[str, object]:
    answer = analysis.to_dict()  # type: ignore[attr-defined]
    return {key: value for key, value in answer.items() if key != "scope"}


@pytest.mark.parametrize("selection", SELECTIONS, ids=lambda s: s.describe())
def test_the_store_filters_as_the_manifest_does(store: Store, tmp_path: Path, selection: Selection) -> None:
    taxonomy = builtin_taxonomy()
    files = FileSource([write_manifest(tmp_path / "weeks.jsonl")])
    from_store = analyse(StoreSource(store, "store"), selection, taxonomy)
    assert tables(from_store) == tables(analyse(files, selection, taxonomy))
    assert from_store.report.attempts == len(selection.apply(from_store.attempts)) > 0


def test_this_week_against_last_over_the_store(store: Store) -> None:
    selection = parse_selection(THIS_WEEK.isoformat(), "2026-11-16")
    analysis = analyse(StoreSource(store, "store"), selection, builtin_taxonomy(), parse_comparison("previous", selection))
    assert analysis.comparison is not None
    totals = {t.measure: t for t in analysis.comparison.totals}
    assert (totals["attempts"].now, totals["attempts"].before) == (6, 4)
    lost = totals["GPU-h lost to failures"]
    assert (lost.now, lost.before) == (THIS_WEEK_LOST_H, LAST_WEEK_LOST_H)
    # Decisions come with the attempts: every failed one was decided by the policy.
    decided = {(r["job_id"], r["attempt"]): r["action"] for r in analysis.attempts.table.to_pylist()}
    assert all(action for (job, _), action in decided.items() if job != "b4") and decided[("b4", 1)] is None
    assert asdict(analysis.comparison) == json.loads(json.dumps(asdict(analysis.comparison)))


def test_the_cli_reads_the_store_with_filters(store: Store, database_url: str) -> None:
    done = run_cli("report", "--database-url", database_url, "--user", "bob", "--since", "2026-11-09", "--format", "json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [(r["reason_id"], r["trials"]) for r in answer["table7"]] == [("mpi_runtime_failure", 2)]
    assert answer["scope"]["source"].startswith("store ") and "bob" in answer["scope"]["selection"]


def test_the_export_from_the_store_carries_classification_and_decision(store: Store, tmp_path: Path) -> None:
    from pyarrow import parquet

    from failclass.analytics.export import export

    taxonomy = builtin_taxonomy()
    analysis = analyse(StoreSource(store, "store"), parse_selection(None, None, users=["bob"]), taxonomy)
    export(analysis, taxonomy, tmp_path / "out")
    rows = parquet.read_table(tmp_path / "out" / "attempts.parquet").to_pylist()
    assert [(r["job_id"], r["attempt"]) for r in rows] == [("a2", 1), ("b2", 1), ("b2", 2)]
    for row, record in zip(rows, analysis.attempts.table.to_pylist(), strict=True):
        assert row["reason"] == "mpi_runtime_failure" and row["classified_by"] == record["source"] == "signature"
        assert row["rule_id"] == record["rule_id"] and row["rule_id"] and 0 < row["confidence"] <= 1
        assert row["action"] == record["action"] and row["policy_clause"] == record["clause"] and row["policy_clause"]


def test_the_source_names_the_database_without_its_password() -> None:
    from failclass.analytics.analysis import database_label

    label = database_label("postgresql+psycopg://ops:s3cret@db.example:5432/failclass")
    assert label == "store postgresql+psycopg://ops:***@db.example:5432/failclass" and "s3cret" not in label
