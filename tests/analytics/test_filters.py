"""`failclass report` filters and period comparison over manifests and over `failclass
batch` results, checked against the hand counts of report_weeks.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from report_weeks import LAST_WEEK_LOST_H, THIS_WEEK_LOST_H, write_manifest

from failclass.analytics.analysis import FileSource, analyse
from failclass.analytics.selection import parse_comparison, parse_selection
from failclass.errors import InputError
from failclass.matching.taxonomy import builtin_taxonomy

THIS_WEEK = ("--since", "2026-11-09", "--until", "2026-11-16")


def report(*args: str) -> dict[str, Any]:
    done = run_cli("report", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def manifest(tmp_path: Path) -> str:
    return str(write_manifest(tmp_path / "weeks.jsonl"))


@pytest.fixture
def weeks(manifest: str) -> FileSource:
    return FileSource([Path(manifest)])


def test_this_week_against_last(manifest: str) -> None:
    answer = report(manifest, *THIS_WEEK, "--compare-to", "previous")
    assert (answer["attempts"], answer["failed_attempts"], answer["gpu_hours_lost"]) == (6, 5, THIS_WEEK_LOST_H)
    comparison = answer["comparison"]
    assert comparison["period"].startswith("2026-11-02 to 2026-11-09")
    totals = {t["measure"]: t for t in comparison["totals"]}
    assert (totals["attempts"]["now"], totals["attempts"]["before"], totals["attempts"]["delta"]) == (6, 4, 2)
    assert totals["attempts"]["change_pct"] == 50.0
    lost = totals["GPU-h lost to failures"]
    assert (lost["now"], lost["before"], lost["delta"]) == (THIS_WEEK_LOST_H, LAST_WEEK_LOST_H, 58.27)
    reasons = {r["reason_id"]: r for r in comparison["reasons"]}
    assert (reasons["mpi_runtime_failure"]["trials"], reasons["mpi_runtime_failure"]["trials_before"]) == (2, 1)
    assert reasons["mpi_runtime_failure"]["gpu_h_delta"] == round((660 - 240) * 8 / 60, 2)
    assert reasons["syntax_error"]["trials_delta"] == -1 and reasons["gpu_oom"]["trials_before"] == 0
    assert answer["scope"]["first"].startswith("2026-11-10T09:01") and answer["scope"]["last"].startswith("2026-11-13T00:10")


def test_an_explicit_period_compares_like_previous(manifest: str) -> None:
    previous = report(manifest, *THIS_WEEK, "--compare-to", "previous")["comparison"]
    explicit = report(manifest, *THIS_WEEK, "--compare-to", "2026-11-02/2026-11-09")["comparison"]
    assert explicit == previous


@pytest.mark.parametrize(
    ("selection", "attempts", "reasons"),
    [
        ({"users": ["bob"]}, 3, {"mpi_runtime_failure": 3}),
        ({"vcs": ["short"]}, 5, {"syntax_error": 3, "gpu_oom": 1}),
        ({"vcs": ["short", "long"], "users": ["ann", "dee"]}, 5, {"syntax_error": 3, "gpu_oom": 1}),
        ({"reasons": ["syntax_error"]}, 3, {"syntax_error": 3}),
        ({"statuses": ["killed"]}, 1, {"job_preempted": 1}),
        ({"statuses": ["passed"]}, 2, {}),
        ({"users": ["ann"], "since": "2026-11-09", "until": "2026-11-16"}, 1, {"syntax_error": 1}),
        ({"until": "2026-11-04T08:00:00"}, 2, {"syntax_error": 2}),  # the attempt ending 12:00 is after
    ],
)
def test_filters_keep_what_they_name(
    weeks: FileSource, selection: dict[str, Any], attempts: int, reasons: dict[str, int]
) -> None:
    since, until = selection.pop("since", None), selection.pop("until", None)
    answer = analyse(weeks, parse_selection(since, until, **selection), builtin_taxonomy()).report
    assert answer.attempts == attempts
    assert {row.reason_id: row.trials for row in answer.table7} == reasons


def test_the_cli_filters_too(manifest: str) -> None:
    answer = report(manifest, "--partition", "short", "--user", "ann", "--user", "dee", "--status", "failed")
    assert {row["reason_id"]: row["trials"] for row in answer["table7"]} == {"syntax_error": 3, "gpu_oom": 1}


def test_markdown_shows_the_scope_and_the_deltas(manifest: str) -> None:
    text = run_cli("report", manifest, *THIS_WEEK, "--compare-to", "previous").stdout
    assert "Selection: 2026-11-09 to 2026-11-16." in text and "## Compared with 2026-11-02 to 2026-11-09" in text
    assert "| attempts | 6 | 4 | +2 | +50.0% |" in text
    assert "| MPI runtime failure | 2 | 1 | +1 | 88.00 | 32.00 | +56.00 |" in text
    empty = run_cli("report", manifest, "--user", "nobody").stdout
    assert "No attempt matches this selection." in empty and "Table 7" not in empty


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--since", "last tuesday"), "neither an ISO 8601 time nor a span"),
        (("--reason", "gpu_on_fire"), "unknown to the taxonomy: gpu_on_fire"),
        (("--status", "exploded"), "'exploded' is not one of"),
    ],
)
def test_bad_filters_are_refused_with_a_reason(manifest: str, options: tuple[str, ...], message: str) -> None:
    done = run_cli("report", manifest, *options)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"since": "2026-11-16", "until": "2026-11-09"}, "must come before until"),
        ({"statuses": ["exploded"]}, "status: exploded unknown"),
        ({"users": [f"u{i}" for i in range(101)]}, "at most 100 values"),
        ({"vcs": ["x" * 201]}, "at most 200 characters"),
    ],
)
def test_bad_selections_are_refused(given: dict[str, Any], message: str) -> None:
    since, until = given.pop("since", None), given.pop("until", None)
    with pytest.raises(InputError, match=message):
        parse_selection(since, until, **given)


@pytest.mark.parametrize(
    ("compare_to", "since", "message"),
    [("previous", None, "needs --since"), ("2026-11-01", "2026-11-09", "neither 'previous' nor START/END")],
)
def test_bad_comparisons_are_refused(compare_to: str, since: str | None, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_comparison(compare_to, parse_selection(since, None))


def test_spans_before_now_are_read() -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 11, 16, 12, tzinfo=UTC)
    selection = parse_selection("7d", "90m", now=now)
    assert (selection.since, selection.until) == (now - timedelta(days=7), now - timedelta(minutes=90))
    assert parse_selection("2026-11-09", None, now=now).since == datetime(2026, 11, 9, tzinfo=UTC)  # UTC when no zone


def test_filters_over_batch_results(tmp_path: Path) -> None:
    done = run_cli("batch", str(ROOT / "samples/attempts.tar.gz"), "--out", str(tmp_path / "results"), "--processes", "1")
    assert done.returncode == 0, done.stderr
    results = tmp_path / "results" / "results.jsonl"
    classified = [json.loads(line) for line in results.read_text().splitlines()]
    reason = classified[0]["reason"]
    expected = sum(row["reason"] == reason for row in classified)
    answer = report(str(results), "--reason", reason)
    assert answer["attempts"] == expected and [r["reason_id"] for r in answer["table7"]] == [reason]
    # Batch results carry no times: a time range keeps none of them, and says so.
    dated = run_cli("report", str(results), "--since", "2026-11-01")
    assert dated.returncode == 0 and "No attempt matches this selection." in dated.stdout
