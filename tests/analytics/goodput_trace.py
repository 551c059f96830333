"""A small trace whose every GPU-time figure is known by construction, for the goodput tests
and the README's example (benchmarks/goodput_example.py): each log is real lines (an
mmcls run: corpora/waste_logs/, source in its .url) behind a collector's time stamp, as
`failclass waste generate` writes them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
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


def waste_report(folder: Path) -> Path:
    """The shape `failclass waste report --format json` writes: job A idled 1 GPU-hour."""
    path = folder / "waste.json"
    path.write_text(json.dumps({"jobs": [{"job": "A", "user": "alice", "idle_gpu_h": 1.0}]}))
    return path


# By construction, in GPU-hours. alice: lost since the 13:00 save 1 h x 2; whole 3.5 h x 2;
# idle 1 (the waste report); restart 14:00-14:15 x 2; queue (0.5 + 0.75) h x 2; runs
# (3.5 + 3) x 2 = 13, wall 8 h x 2 = 16, productive 13 - 2 - 1 = 10. bob: B whole 2 (no save),
# C whole 0.5 x 4 = 2 (no log); restart 13:00 - 12:30 x 4; runs 2 + 2 + 4 = 8, wall 10,
# productive 8 - 4 = 4.
EXPECTED = {
    "alice": {"since": 2.0, "whole": 7.0, "idle": 1.0, "restart": 0.5, "queue": 2.5, "ettr": 0.625, "counted": (1, 0)},
    "bob": {"since": 4.0, "whole": 4.0, "idle": 0.0, "restart": 2.0, "queue": 0.0, "ettr": 0.4, "counted": (0, 1)},
}
