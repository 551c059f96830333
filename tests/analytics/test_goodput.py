"""GPU time lost the field's way (failclass/analytics/goodput.py), on a trace whose every
figure is known by construction (goodput_trace.py)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from goodput_trace import EXPECTED, SAVE, TRAINING, at, trace, waste_report, write_log


def test_the_report_counts_each_users_gpu_time_lost_as_constructed(tmp_path: Path) -> None:
    done = run_cli("report", str(trace(tmp_path)), "--waste", str(waste_report(tmp_path)), "--format", "json")
    assert done.returncode == 0, done.stderr
    got = {row["user"]: row for row in json.loads(done.stdout)["goodput"]}
    for user, figures in EXPECTED.items():
        row = got[user]
        assert row["failures_since_checkpoint_gpu_h"] == figures["since"]
        assert row["failures_whole_gpu_h"] == figures["whole"]
        assert row["idle_gpu_h"] == figures["idle"]
        assert row["restart_gpu_h"] == figures["restart"]
        assert row["queue_gpu_h"] == figures["queue"]
        assert row["ettr"] == figures["ettr"]
        assert (row["counted_from_checkpoint"], row["without_log"]) == figures["counted"]
    assert got["bob"]["lost_by_reason"] == {"gpu_oom": 2.0, "mpi_runtime_failure": 2.0}


def test_without_the_waste_report_idle_is_productive_and_the_markdown_shows_the_table(tmp_path: Path) -> None:
    done = run_cli("report", str(trace(tmp_path)))
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("## GPU time lost per user (ETTR)", 1)[1]
    alice = next(line for line in table.splitlines() if line.startswith("| alice |"))
    assert alice.split(" | ")[3:9] == ["2.00", "7.00", "0.00", "0.50", "2.50", "68.8%"]  # (13 - 2) / 16


def test_each_failed_attempt_is_counted_from_its_last_save_in_its_own_window(tmp_path: Path) -> None:
    from failclass.analytics.goodput import last_save

    log = write_log(tmp_path / "x.log", [(1, SAVE), (3, SAVE), (5, SAVE)])
    assert last_save([log], at(2), at(4)) == ("checkpoint", at(3))  # the save at 5 belongs to a later attempt
    assert last_save([log], at(6), at(7)) == ("no checkpoint", None)
    assert last_save([str(tmp_path / "missing.log")], at(0), at(1)) == ("no log", None)
    (tmp_path / "untimed.log").write_text(SAVE.split(" - ", 3)[-1] + "\n")  # the message alone, no time
    assert last_save([str(tmp_path / "untimed.log")], at(0), at(1)) == ("undated", None)


def test_prometheus_counts_since_the_last_save_and_sets_each_users_figures(tmp_path: Path) -> None:
    from prometheus_client import generate_latest

    from failclass.analytics.columns import Attempts
    from failclass.analytics.records import read_attempts
    from failclass.analytics.report import build_report
    from failclass.attempts import Attempt
    from failclass.classifier import Examination
    from failclass.contracts import Classification
    from failclass.matching.taxonomy import builtin_taxonomy
    from failclass.service.metrics import Metrics
    from failclass.service.routers.attempts import with_checkpoint

    metrics = Metrics()
    log = Path(write_log(tmp_path / "a.log", [(11, SAVE), (13, SAVE)])).read_text()
    failed = Attempt("A", 1, "alice", status="failed", start_time=at(10.5), end_time=at(14), gpus=2)
    oom = Classification("gpu_oom", "GPU out of memory", ("U",), "signature", None, "", 0.9, (), len(log), 2)
    examined = with_checkpoint(Examination(oom, None), failed, log)
    assert examined.checkpoint == ("checkpoint", at(13))
    metrics.attempt_recorded(failed, examined, None)
    metrics.report_built(build_report(Attempts(read_attempts([trace(tmp_path)])), builtin_taxonomy()).goodput)
    text = generate_latest(metrics.registry).decode()
    assert 'failclass_gpu_hours_lost_total{reason="gpu_oom"} 7.0' in text  # 3.5 h x 2
    assert 'failclass_gpu_hours_lost_since_checkpoint_total{reason="gpu_oom"} 2.0' in text  # since 13:00 x 2
    assert 'failclass_user_gpu_hours_lost{lost_to="failures_since_checkpoint",user="bob"} 4.0' in text
    assert 'failclass_user_ettr{user="bob"} 0.4' in text


def test_the_readme_shows_the_table_the_command_prints_for_this_trace(tmp_path: Path) -> None:
    done = run_cli("report", str(trace(tmp_path)), "--waste", str(waste_report(tmp_path)))
    printed = done.stdout.split("## GPU time lost per user (ETTR)\n", 1)[1].strip().split("\n\n")[0]
    readme = (
        (ROOT / "README.md").read_text().split("<!-- goodput_example: begin -->", 1)[1].split("<!-- goodput_example: end -->")[0]
    )
    assert printed in readme, "run benchmarks/goodput_example.py --readme"


@pytest.fixture
def new_york() -> Iterator[None]:
    """The machine's zone is New York's for the test."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.mark.usefixtures("new_york")
def test_a_time_without_a_zone_is_read_as_the_logs_are(tmp_path: Path) -> None:
    """A manifest's or the hook's time without a zone and a log's stamp without one are the
    same clock: the save at 13:52 is found whatever the machine's zone (here New York's)."""
    from failclass.analytics.goodput import last_save

    log = tmp_path / "x.log"
    log.write_text(SAVE + "\n")  # mmcls's own stamp, 2021-07-14 13:52:35,974, no zone
    start, end = datetime(2021, 7, 14, 13), datetime(2021, 7, 14, 14)
    assert last_save([str(log)], start, end) == ("checkpoint", datetime(2021, 7, 14, 13, 52, 35, 974000))


def test_the_services_report_opens_no_path_a_client_named(tmp_path: Path) -> None:
    """GET /v1/report reads the store only: every failed attempt counts whole, said so."""
    from failclass.analytics.columns import Attempts
    from failclass.analytics.records import read_attempts
    from failclass.analytics.report import build_report
    from failclass.matching.taxonomy import builtin_taxonomy

    report = build_report(Attempts(read_attempts([trace(tmp_path)])), builtin_taxonomy(), read_logs=False)
    alice = next(u for u in report.goodput if u.user == "alice")
    assert (alice.failures_since_checkpoint_gpu_h, alice.failures_whole_gpu_h, alice.without_log) == (7.0, 7.0, 1)


def test_the_service_keeps_the_last_save_with_the_attempt_and_reports_from_it(tmp_path: Path) -> None:
    """Reported with its log, a failed attempt's last save is stored: GET /v1/report counts
    from it though it opens no log, and a scrape counts the same."""
    import httpx
    from service_server import running_service

    log = Path(write_log(tmp_path / "a.log", [(10.6, TRAINING), (11, SAVE), (13, SAVE), (13.9, TRAINING)])).read_text()
    facts = {"job_id": "A", "attempt": 1, "user": "alice", "status": "failed", "gpus": 2}
    times = {"start_time": at(10.5).isoformat(), "end_time": at(14).isoformat()}
    with running_service(f"sqlite:///{tmp_path / 'failclass.db'}", tmp_path) as base:
        assert httpx.post(f"{base}/v1/attempts", json={**facts, **times, "log": log}, timeout=60).status_code == 201
        (alice,) = httpx.get(f"{base}/v1/report", timeout=60).json()["goodput"]
        scraped = httpx.get(f"{base}/metrics", timeout=30).text
    assert (alice["failures_since_checkpoint_gpu_h"], alice["failures_whole_gpu_h"]) == (2.0, 7.0)
    assert (alice["counted_from_checkpoint"], alice["without_log"]) == (1, 0)
    assert 'failclass_user_gpu_hours_lost{lost_to="failures_since_checkpoint",user="alice"} 2.0' in scraped
