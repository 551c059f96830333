"""`failclass report --export DIR`: every table and the attempts as Parquet and CSV, read
back with pyarrow and checked against the report's own JSON and the hand counts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from conftest import run_cli
from pyarrow import csv as pa_csv
from pyarrow import parquet
from report_weeks import write_manifest

THIS_WEEK = ("--since", "2026-11-09", "--until", "2026-11-16")
TABLES = [
    "table7",
    "table6",
    "repeats",
    "attempts",
    "goodput_users",
    "goodput_jobs",
    "nodes",
    "gpus",
    "comparison_totals",
    "comparison_reasons",
]


def exported(tmp_path: Path, *options: str) -> tuple[dict[str, Any], Path]:
    folder = tmp_path / "export"
    done = run_cli("report", str(write_manifest(tmp_path / "weeks.jsonl")), *options, "--format", "json", "--export", str(folder))
    assert done.returncode == 0, done.stderr
    assert f"to {folder}" in done.stderr
    return json.loads(done.stdout), folder


def test_every_table_reads_back_as_the_report_says(tmp_path: Path) -> None:
    report, folder = exported(tmp_path, *THIS_WEEK, "--compare-to", "previous")
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{t}.{ext}" for t in TABLES for ext in ("csv", "parquet"))
    assert parquet.read_table(folder / "table7.parquet").to_pylist() == report["table7"]
    assert parquet.read_table(folder / "table6.parquet").to_pylist() == report["table6"]
    users = [
        {**u, "lost_by_reason": json.loads(u["lost_by_reason"])}
        for u in parquet.read_table(folder / "goodput_users.parquet").to_pylist()
    ]
    assert users == report["goodput"]
    assert parquet.read_table(folder / "comparison_totals.parquet").to_pylist() == report["comparison"]["totals"]
    assert parquet.read_table(folder / "comparison_reasons.parquet").to_pylist() == report["comparison"]["reasons"]
    repeats = parquet.read_table(folder / "repeats.parquet").to_pylist()
    assert (repeats[0]["reason_name"], repeats[0]["top_users"], repeats[0]["top_users_trials"]) == (
        "MPI runtime failure",
        ["bob"],
        [2],
    )
    for table in TABLES:  # CSV holds the same rows as Parquet (lists ';'-joined)
        from_csv = pa_csv.read_csv(folder / f"{table}.csv")
        assert from_csv.num_rows == parquet.read_metadata(folder / f"{table}.parquet").num_rows
    csv7 = pa_csv.read_csv(folder / "table7.csv").to_pylist()
    assert [(r["reason_name"], r["rtf_x_demand_gpu_h"]) for r in csv7] == [
        (r["reason_name"], r["rtf_x_demand_gpu_h"]) for r in report["table7"]
    ]


def test_the_attempts_with_their_classification(tmp_path: Path) -> None:
    _, folder = exported(tmp_path, *THIS_WEEK)
    table = parquet.read_table(folder / "attempts.parquet")
    assert table.schema.field("end_time").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("nodes").type == pa.list_(pa.string())
    rows = {(r["job_id"], r["attempt"]): r for r in table.to_pylist()}
    assert len(rows) == 6
    b2 = rows[("b2", 2)]
    assert (b2["reason"], b2["reason_name"], b2["categories"], b2["failure"]) == (
        "mpi_runtime_failure",
        "MPI runtime failure",
        "IF",
        True,
    )
    assert (b2["rtf_minutes"], b2["gpu_hours"]) == (360.0, 48.0)  # 360 min x 8 GPUs
    assert b2["end_time"] == datetime(2026, 11, 11, 0, 0, tzinfo=UTC)
    assert rows[("b3", 1)]["failure"] is True and rows[("b4", 1)]["failure"] is False  # preempted; passed
    assert rows[("b4", 1)]["reason"] is None
    as_csv = {(r["job_id"], r["attempt"]): r for r in pa_csv.read_csv(folder / "attempts.csv").to_pylist()}
    assert as_csv[("b2", 2)]["gpu_hours"] == 48.0 and as_csv[("b2", 2)]["reason_name"] == "MPI runtime failure"


def test_an_empty_selection_still_writes_the_columns(tmp_path: Path) -> None:
    _, folder = exported(tmp_path, "--user", "nobody")
    attempts = parquet.read_table(folder / "attempts.parquet")
    assert attempts.num_rows == 0 and "policy_clause" in attempts.column_names


def test_an_export_folder_that_cannot_be_made_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the folder would go")
    done = run_cli("report", str(write_manifest(tmp_path / "weeks.jsonl")), "--export", str(tmp_path / "taken" / "out"))
    assert done.returncode == 1 and "cannot create the export folder" in done.stderr
