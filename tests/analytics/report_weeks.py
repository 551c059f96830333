"""Two weeks of classified attempts, for the filter, comparison, export and HTML tests;
the expected figures are counted by hand beside them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

LAST_WEEK = datetime(2026, 11, 2, tzinfo=UTC)
THIS_WEEK = datetime(2026, 11, 9, tzinfo=UTC)
NEXT_WEEK = datetime(2026, 11, 16, tzinfo=UTC)

# (job, attempt, user, partition, status, start, minutes run, gpus, reason)
ATTEMPTS = [
    ("a1", 1, "ann", "short", "failed", datetime(2026, 11, 3, 10, 0, tzinfo=UTC), 2, 1, "syntax_error"),
    ("a1", 2, "ann", "short", "failed", datetime(2026, 11, 3, 10, 5, tzinfo=UTC), 3, 1, "syntax_error"),
    ("a2", 1, "bob", "long", "failed", datetime(2026, 11, 4, 8, 0, tzinfo=UTC), 240, 8, "mpi_runtime_failure"),
    ("a3", 1, "cid", "long", "passed", datetime(2026, 11, 5, 0, 0, tzinfo=UTC), 600, 4, None),
    ("b1", 1, "ann", "short", "failed", datetime(2026, 11, 10, 9, 0, tzinfo=UTC), 1, 1, "syntax_error"),
    ("b2", 1, "bob", "long", "failed", datetime(2026, 11, 10, 12, 0, tzinfo=UTC), 300, 8, "mpi_runtime_failure"),
    ("b2", 2, "bob", "long", "failed", datetime(2026, 11, 10, 18, 0, tzinfo=UTC), 360, 8, "mpi_runtime_failure"),
    ("b3", 1, "cid", "long", "killed", datetime(2026, 11, 11, 0, 0, tzinfo=UTC), 30, 4, "job_preempted"),
    ("b4", 1, "dee", "short", "passed", datetime(2026, 11, 12, 0, 0, tzinfo=UTC), 50, 2, None),
    ("b5", 1, "dee", "short", "failed", datetime(2026, 11, 13, 0, 0, tzinfo=UTC), 10, 2, "gpu_oom"),
]
# This week (Nov 9-16): 6 attempts, 5 failed (the preempted one counts), GPU time lost
# 1x1 + (300+360)x8 + 30x4 + 10x2 = 5,421 GPU-min = 90.35 GPU-h.
# Last week (Nov 2-9): 4 attempts, 3 failed, (2+3)x1 + 240x8 = 1,925 GPU-min = 32.08 GPU-h.
THIS_WEEK_LOST_H = round(5421 / 60, 2)
LAST_WEEK_LOST_H = round(1925 / 60, 2)
# The hand-made classification (tests/failures.py) that each reason is recorded with, and a passed run's.
MADE_FOR = {
    "syntax_error": "syntax",
    "mpi_runtime_failure": "nccl_timeout",
    "job_preempted": "preempted",
    "gpu_oom": "gpu_oom",
    None: "passed",
}


def rows() -> list[dict[str, object]]:
    return [
        {
            "job_id": job,
            "attempt": attempt,
            "user": user,
            "vc": vc,
            "status": status,
            "gpus": gpus,
            "reason": reason,
            "start_time": start.isoformat(),
            "end_time": (start + timedelta(minutes=minutes)).isoformat(),
        }
        for job, attempt, user, vc, status, start, minutes, gpus, reason in ATTEMPTS
    ]


def write_manifest(path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows()))
    return path
