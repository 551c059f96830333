"""GPU time lost the field's way, on a trace whose every figure is known by construction:
each log is real lines (a Hugging Face-free mmcls run: corpora/waste_logs/, source in its
.url) behind a collector's time stamp, as `failclass waste generate` writes them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

MMCLS = (ROOT / "corpora/waste_logs/checkpoint--mmcv-mmcls-saving-checkpoint-epochs.log").read_text().splitlines()
TRAINING, SAVE = MMCLS[1], MMCLS[4]  # "... Epoch [1][10/35] lr: ..." and "... Saving checkpoint at 1 epochs"
DAY = datetime(2026, 11, 10, tzinfo=UTC)


def at(hours: float) -> datetime:
    return DAY + timedelta(hours=hours)


def write_log(path: Path, lines: list[tuple[float, str]]) -> str:
    """A log of (hour, line): each line behind the collector's stamp (kubectl logs --timestamps)."""
    path.write_text("".join(f"{at(h).strftime('%Y-%m-%dT%H:%M:%S.%fZ')} {text}\n" for h, text in lines))
    return str(path)


def trace(folder: Path) -> Path:
    """alice's job A (2 GPUs): submitted 10:00, started 10:30, failed 14:00 (saves at 11:00 and
    13:00, training to the end); resubmitted 14:15, started 15:00, passed 18:00.
    bob's job B (1 GPU): 9:00 to 11:00, failed, a log with no save. bob's job C (4 GPUs):
    12:00 to 12:30 failed, its log gone; 13:00 to 14:00 passed, no submit time."""
    a_log = write_log(folder / "a-1.log", [(10.6, TRAINING), (11, SAVE), (12, TRAINING), (13, SAVE), (13.9, TRAINING)])
    b_log = write_log(folder / "b-1.log", [(9.5, TRAINING), (10.9, TRAINING)])
    rows: list[dict[str, Any]] = [
        {"job_id": "A", "attempt": 1, "user": "alice", "status": "failed", "gpus": 2, "reason": "gpu_oom",
         "submit_time": at(10), "start_time": at(10.5), "end_time": at(14), "logs": [a_log]},
        {"job_id": "A", "attempt": 2, "user": "alice", "status": "passed", "gpus": 2,
         "submit_time": at(14.25), "start_time": at(15), "end_time": at(18)},
        {"job_id": "B", "attempt": 1, "user": "bob", "status": "failed", "gpus": 1, "reason": "gpu_oom",
         "start_time": at(9), "end_time": at(11), "logs": [b_log]},
        {"job_id": "C", "attempt": 1, "user": "bob", "status": "failed", "gpus": 4, "reason": "mpi_runtime_failure",
         "start_time": at(12), "end_time": at(12.5), "logs": [str(folder / "gone.log")]},
        {"job_id": "C", "attempt": 2, "user": "bob", "status": "passed", "gpus": 4, "start_time": at(13), "end_time": at(14)},
    ]  # fmt: skip
    manifest = folder / "attempts.jsonl"
    manifest.write_text("".join(json.dumps(row, default=datetime.isoformat) + "\n" for row in rows))
    return manifest


# By construction, in GPU-hours. alice: lost since the 13:00 save 1 h x 2; whole 3.5 h x 2;
# idle 1 (the waste report); restart 14:00-14:15 x 2; queue (0.5 + 0.75) h x 2; runs
# (3.5 + 3) x 2 = 13, wall 8 h x 2 = 16, productive 13 - 2 - 1 = 10. bob: B whole 2 (no save),
# C whole 0.5 x 4 = 2 (no log); restart 13:00 - 12:30 x 4; runs 2 + 2 + 4 = 8, wall 10,
# productive 8 - 4 = 4.
EXPECTED = {
    "alice": {"since": 2.0, "whole": 7.0, "idle": 1.0, "restart": 0.5, "queue": 2.5, "ettr": 0.625, "counted": (1, 0)},
    "bob": {"since": 4.0, "whole": 4.0, "idle": 0.0, "restart": 2.0, "queue": 0.0, "ettr": 0.4, "counted": (0, 1)},
}


@pytest.fixture
def waste_report(tmp_path: Path) -> Path:
    """The shape `failclass waste report --format json` writes (its jobs' idle GPU-hours)."""
    path = tmp_path / "waste.json"
    path.write_text(json.dumps({"jobs": [{"job": "A", "user": "alice", "idle_gpu_h": 1.0}]}))
    return path


def test_the_report_counts_each_users_gpu_time_lost_as_constructed(tmp_path: Path, waste_report: Path) -> None:
    done = run_cli("report", str(trace(tmp_path)), "--waste", str(waste_report), "--format", "json")
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

    from failclass.analytics.goodput import goodput
    from failclass.analytics.records import read_records
    from failclass.attempts import Attempt
    from failclass.contracts import Classification
    from failclass.service.metrics import Metrics

    metrics = Metrics()
    log = Path(write_log(tmp_path / "a.log", [(11, SAVE), (13, SAVE)])).read_text()
    failed = Attempt("A", 1, "alice", status="failed", start_time=at(10.5), end_time=at(14), gpus=2)
    oom = Classification("gpu_oom", "GPU out of memory", ("U",), "signature", None, "", 0.9, (), len(log), 2)
    metrics.attempt_recorded(failed, oom, None, log)
    records = read_records([trace(tmp_path)])
    failures = {(r.job_id, r.attempt): r.reason or "" for r in records if r.status == "failed"}
    metrics.report_built(goodput(records, failures)[1])
    text = generate_latest(metrics.registry).decode()
    assert 'failclass_gpu_hours_lost_total{reason="gpu_oom"} 7.0' in text  # 3.5 h x 2
    assert 'failclass_gpu_hours_lost_since_checkpoint_total{reason="gpu_oom"} 2.0' in text  # since 13:00 x 2
    assert 'failclass_user_gpu_hours_lost{lost_to="failures_since_checkpoint",user="bob"} 4.0' in text
    assert 'failclass_user_ettr{user="bob"} 0.4' in text
