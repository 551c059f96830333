"""Status-level analytics over jobs: Table 6 of the Philly study (jobs and GPU time by
final status) and how failures repeat per user (the chance that a user's next job
fails given that the previous one did, and the users who hold most failures)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from failclass.analytics.columns import counts, sums
from failclass.analytics.table7 import percent
from failclass.analytics.traces import TraceJob

ORDER = ("passed", "killed", "unsuccessful")


@dataclass(frozen=True)
class Table6Row:
    status: str
    jobs: int
    jobs_pct: float | None  # None of no jobs, or of no GPU time (no start and end times)
    gpu_time_pct: float | None
    gpu_hours: float


def table6(jobs: Sequence[TraceJob]) -> list[Table6Row]:
    status = np.array([ORDER.index(job.status) for job in jobs], dtype=np.int64)
    return table6_of(status, np.array([job.gpu_seconds / 3600 for job in jobs], dtype=float))


def table6_of(status: np.ndarray, gpu_hours: np.ndarray) -> list[Table6Row]:
    """Table 6 from each job's final status (its index in ORDER) and GPU-hours."""
    jobs, gpu = counts(status, len(ORDER)), sums(status, gpu_hours, len(ORDER))
    seen = np.flatnonzero(jobs)
    first = [int(np.argmax(status == s)) for s in seen]  # where each status is first seen
    total_jobs, total_gpu = len(status), sum(float(gpu[s]) for s in seen[np.argsort(first)])  # as first seen
    rows = [
        Table6Row(s, int(jobs[i]), percent(int(jobs[i]), total_jobs), percent(float(gpu[i]), total_gpu), round(float(gpu[i]), 2))
        for i, s in enumerate(ORDER)
    ]
    return [
        *rows,
        Table6Row("total", total_jobs, percent(total_jobs, total_jobs), percent(total_gpu, total_gpu), round(total_gpu, 2)),
    ]


@dataclass(frozen=True)
class UserRepetition:
    failure_rate: float  # of all jobs
    next_fails_after_failure: float  # P(a user's next job fails | the previous one failed)
    next_fails_after_success: float
    top_users: list[tuple[str, int]]  # users with the most failures, most first
    top_share: float  # of all failures, held by top_users


def user_repetition(jobs: Sequence[TraceJob], top: int = 5, failing: tuple[str, ...] = ("unsuccessful",)) -> UserRepetition:
    """Jobs taken in submission order within each user; a job "fails" when its status is
    in ``failing`` (by default unsuccessful only: a killed job is mostly a user's cancel)."""
    previous: dict[str, bool] = {}
    after = {True: [0, 0], False: [0, 0]}  # previous failed? -> [next failed, pairs]
    for job in sorted(jobs, key=lambda j: j.submit_seconds):
        failed = job.status in failing
        if job.user in previous:
            pair = after[previous[job.user]]
            pair[0] += failed
            pair[1] += 1
        previous[job.user] = failed
    failures = Counter(job.user for job in jobs if job.status in failing)
    leaders = failures.most_common(top)
    total = sum(failures.values()) or 1
    return UserRepetition(
        failure_rate=round(sum(failures.values()) / (len(jobs) or 1), 4),
        next_fails_after_failure=round(after[True][0] / (after[True][1] or 1), 4),
        next_fails_after_success=round(after[False][0] / (after[False][1] or 1), 4),
        top_users=leaders,
        top_share=round(sum(n for _, n in leaders) / total, 4),
    )
