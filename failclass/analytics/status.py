"""Status-level analytics over jobs: Table 6 of the Philly study (jobs and GPU time by
final status) and how failures repeat per user (the chance that a user's next job
fails given that the previous one did, and the users who hold most failures)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

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
    return table6_of([(job.status, job.gpu_seconds / 3600) for job in jobs])


def table6_of(jobs: Sequence[tuple[str, float]]) -> list[Table6Row]:
    """Table 6 from (final status, GPU-hours) per job."""
    counts = Counter(status for status, _ in jobs)
    gpu: dict[str, float] = defaultdict(float)
    for status, gpu_time in jobs:
        gpu[status] += gpu_time
    total_jobs, total_gpu = len(jobs), sum(gpu.values())
    rows = [Table6Row(s, counts[s], percent(counts[s], total_jobs), percent(gpu[s], total_gpu), round(gpu[s], 2)) for s in ORDER]
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
