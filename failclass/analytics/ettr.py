"""GPU time lost and ETTR per job and per user, as failclass.analytics.goodput defines them,
computed over the attempts' columns: each job's attempts in order of job id and attempt
number, the waits between them from the previous attempt's end, and the sums per job and
per user added in that order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from failclass.analytics.columns import MICROS, Attempts, Failed, coded, counts, micros, sums
from failclass.analytics.goodput import HOUR, Basis, UserGoodput, last_save

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BASES: tuple[Basis, ...] = ("checkpoint", "no checkpoint", "undated", "no log")
JOB_COLUMNS = pa.schema(
    [
        ("job_id", pa.string()),
        ("user", pa.string()),
        ("attempts", pa.int64()),
        ("failed_attempts", pa.int64()),
        ("wall_gpu_h", pa.float64()),
        ("productive_gpu_h", pa.float64()),
        ("failures_whole_gpu_h", pa.float64()),
        ("failures_since_checkpoint_gpu_h", pa.float64()),
        ("idle_gpu_h", pa.float64()),
        ("restart_gpu_h", pa.float64()),
        ("queue_gpu_h", pa.float64()),
        ("ettr", pa.float64()),
        ("lost_by_reason", pa.map_(pa.string(), pa.float64())),  # since checkpoint, GPU-hours
    ]
)


@dataclass(frozen=True)
class Ordered:
    """The attempts in order of job id, then attempt number: each one's job (its rank in
    that order), user code, times in microseconds, GPUs (at least 1) and runtime."""

    rows: np.ndarray
    job: np.ndarray
    jobs: pa.Array  # their ids
    user: np.ndarray
    start: np.ndarray
    end: np.ndarray
    complete: np.ndarray  # a start and an end
    demand: np.ndarray
    runs: np.ndarray  # runtime x GPUs, GPU-hours


def ordered(attempts: Attempts) -> Ordered:
    rows, job, jobs = attempts.by_job
    (start, has_start), (end, has_end) = attempts.start, attempts.end
    demand = np.maximum(attempts.array("gpus")[rows], 1).astype(np.int32)
    runs = np.nan_to_num(attempts.rtf_minutes[rows], copy=False)
    np.multiply(np.divide(runs, 60, out=runs), demand, out=runs)
    complete = (has_start & has_end)[rows]
    return Ordered(rows, job, jobs, attempts.users.codes[rows], start[rows], end[rows], complete, demand, runs)


def waits(attempts: Attempts, at: Ordered) -> tuple[np.ndarray, np.ndarray]:
    """(queue, restart) GPU-hours per job: each attempt's from its submission to its start,
    and from the previous attempt's end to its resubmission (its start where not known)."""
    submitted = at.start.copy()  # unknown: the start, no queue
    if attempts.column("submit_time").null_count < len(attempts):
        submit, has_submit = micros(attempts.column("submit_time"))
        known = has_submit[at.rows]
        submitted[known] = submit[at.rows[known]]
        del submit, has_submit, known
    first = np.r_[True, at.job[1:] != at.job[:-1]] if len(at.job) else np.zeros(0, dtype=bool)
    previous_end = np.r_[0, at.end[:-1]] if len(at.end) else at.end
    later = np.flatnonzero(~first)  # resubmitted after the previous attempt's end, before its own start
    submitted[later] = np.minimum(np.maximum(submitted[later], previous_end[later]), at.start[later])
    restart = _hours(submitted - previous_end, at.demand)
    restart[first] = 0.0
    queue = _hours(at.start - submitted, at.demand)
    groups = len(at.jobs)
    return sums(at.job, queue, groups), sums(at.job, restart, groups)


def _hours(span: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """A span of microseconds (at least 0) x GPUs as GPU-hours."""
    hours = span.astype(float)
    np.maximum(np.divide(hours, MICROS, out=hours), 0.0, out=hours)
    return np.multiply(np.divide(hours, HOUR, out=hours), demand, out=hours)


@dataclass(frozen=True)
class Losses:
    """The failed attempts with a start and an end (positions in the job order): GPU time
    lost whole and since the last checkpoint, the basis of that (an index in BASES), reason."""

    at: np.ndarray
    whole: np.ndarray
    since: np.ndarray
    basis: np.ndarray
    reason: np.ndarray
    reasons: list[str]


def losses(attempts: Attempts, failed: Failed, at: Ordered, read_logs: bool) -> Losses:
    reason = np.full(len(attempts), -1, dtype=np.int32)
    reason[failed.rows] = failed.reason.codes
    reason = reason[at.rows]
    lost = np.flatnonzero((reason >= 0) & at.complete)
    rows = pa.array(at.rows[lost], pa.int64())
    whole = np.nan_to_num(attempts.rtf_minutes[at.rows[lost]]) / 60 * at.demand[lost]
    stored = coded(attempts.column("checkpoint_basis").take(rows))
    saved, has_saved = (np.array(a) for a in micros(attempts.column("last_checkpoint_at").take(rows)))
    as_basis = np.array([BASES.index(cast(Basis, name)) for name in stored.names] + [BASES.index("no log")], dtype=np.int64)
    basis = as_basis[stored.codes]  # -1 (none stored): "no log", unless a log is read below
    logged = pc.greater(pc.list_value_length(attempts.column("logs").take(rows)), 0).to_numpy(zero_copy_only=False)
    to_read = np.flatnonzero((stored.codes < 0) & logged) if read_logs else np.zeros(0, dtype=np.int64)
    facts = attempts.table.select(["logs", "start_time", "end_time"]).take(pa.array(at.rows[lost][to_read], pa.int64()))
    for i, fact in zip(to_read, facts.to_pylist(), strict=True):  # the checkpoint is found where the logs are at hand
        found, moment = last_save(fact["logs"], fact["start_time"], fact["end_time"])
        basis[i] = BASES.index(found)
        if moment is not None:
            saved[i], has_saved[i] = (moment - EPOCH) // timedelta(microseconds=1), True
    since = np.where(has_saved, (at.end[lost] - saved) / MICROS / HOUR * at.demand[lost], whole)
    return Losses(lost, whole, since, basis, reason[lost], failed.reason.names)


def _by_pair(group: np.ndarray, reason: np.ndarray, hours: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hours summed per (group, reason), the pairs of a group together in order of first
    appearance: (offsets per group, reasons, hours)."""
    width = int(reason.max(initial=0)) + 1
    pairs, first, inverse = np.unique(group * width + reason, return_index=True, return_inverse=True)
    summed = sums(inverse.reshape(-1), hours, len(pairs))
    order = np.lexsort((first, pairs // width))
    offsets = np.r_[0, np.cumsum(counts(pairs[order] // width, groups))]
    return offsets, pairs[order] % width, summed[order]


def goodput(
    attempts: Attempts, failed: Failed, idle: Mapping[str, float] | None = None, read_logs: bool = True, per_job: bool = False
) -> tuple[pa.Table | None, list[UserGoodput]]:
    """Per job (JOB_COLUMNS: the jobs whose attempts all have a start and an end; only
    ``per_job``, for the export) and per user; ``idle``: job -> idle GPU-hours (`failclass
    waste`'s measure); ``read_logs`` False: no log is opened, and a failed attempt without a
    stored checkpoint counts whole."""
    at = ordered(attempts)
    groups = len(at.jobs)
    kept = counts(at.job[~at.complete], groups) == 0  # jobs whose attempts all have a start and an end
    queue, restart = waits(attempts, at)
    lost = losses(attempts, failed, at, read_logs)
    runs, since = sums(at.job, at.runs, groups)[kept], sums(at.job[lost.at], lost.since, groups)[kept]
    idle_h = np.minimum(_idle(idle or {}, at.jobs)[kept], np.maximum(runs - since, 0.0))
    jobs = {
        "wall_gpu_h": runs + queue[kept] + restart[kept],
        "productive_gpu_h": np.maximum(runs - since - idle_h, 0.0),
        "failures_whole_gpu_h": sums(at.job[lost.at], lost.whole, groups)[kept],
        "failures_since_checkpoint_gpu_h": since,
        "idle_gpu_h": idle_h,
        "restart_gpu_h": restart[kept],
        "queue_gpu_h": queue[kept],
    }
    starts = np.flatnonzero(np.r_[True, at.job[1:] != at.job[:-1]]) if groups else np.zeros(0, dtype=np.int64)
    owner = at.user[starts]
    table = _job_table(at, lost, jobs, attempts.users.values, owner, kept) if per_job else None
    return table, _per_user(attempts.users.names, owner[kept], jobs, at, lost)


def _idle(idle: Mapping[str, float], jobs: pa.Array) -> np.ndarray:
    """Each job's idle GPU-hours (0 where not measured)."""
    hours = np.zeros(len(jobs))
    where = pc.index_in(pa.array(list(idle), pa.string()), value_set=jobs)
    known = pc.is_valid(where).to_numpy(zero_copy_only=False)
    hours[pc.drop_null(where).to_numpy().astype(np.int64)] = np.array(list(idle.values()), dtype=float)[known]
    return hours


def _job_table(
    at: Ordered, lost: Losses, jobs: dict[str, np.ndarray], users: pa.Array, owner: np.ndarray, kept: np.ndarray
) -> pa.Table:
    """The kept jobs' figures (``jobs``: theirs), their ids, users, attempts and losses by reason."""
    job = np.cumsum(kept)[at.job[lost.at]] - 1  # a lost attempt's job among the kept ones
    mine = kept[at.job[lost.at]]
    offsets, reasons, hours = _by_pair(job[mine], lost.reason[mine], lost.since[mine], int(kept.sum()))
    names = pa.array([lost.reasons[r] for r in reasons], pa.string())
    wall = jobs["wall_gpu_h"]
    columns = {
        "job_id": at.jobs.filter(pa.array(kept)),
        "user": users.take(pa.array(owner[kept], pa.int64())),
        "attempts": counts(at.job, len(at.jobs))[kept],
        "failed_attempts": counts(at.job[lost.at], len(at.jobs))[kept],
        **jobs,
        "ettr": pa.array(np.divide(jobs["productive_gpu_h"], wall, out=np.zeros_like(wall), where=wall != 0), mask=wall == 0),
        "lost_by_reason": pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), names, pa.array(hours, pa.float64())),
    }
    return pa.table([columns[name] for name in JOB_COLUMNS.names], schema=JOB_COLUMNS)


def _per_user(names: list[str], owner: np.ndarray, jobs: dict[str, np.ndarray], at: Ordered, lost: Losses) -> list[UserGoodput]:
    """The users' sums over their jobs (those with all times) and their failed attempts."""
    width = len(names)
    loser = at.user[lost.at]
    per_job = {key: sums(owner, values, width) for key, values in jobs.items()}
    since, whole = sums(loser, lost.since, width), sums(loser, lost.whole, width)
    offsets, reasons, hours = _by_pair(loser, lost.reason, lost.since, width)
    job_count, failed_count = counts(owner, width), counts(loser, width)
    from_checkpoint = counts(loser[lost.basis == BASES.index("checkpoint")], width)
    without_log = counts(loser[np.isin(lost.basis, [BASES.index("no log"), BASES.index("undated")])], width)
    rows = []
    for code in np.union1d(owner, loser).astype(np.int64):
        mine = range(offsets[code], offsets[code + 1])
        by_reason = sorted(((lost.reasons[reasons[i]], float(hours[i])) for i in mine), key=lambda kv: -kv[1])
        productive, wall = float(per_job["productive_gpu_h"][code]), float(per_job["wall_gpu_h"][code])
        rows.append(
            UserGoodput(
                user=names[code],
                jobs=int(job_count[code]),
                failed_attempts=int(failed_count[code]),
                failures_since_checkpoint_gpu_h=round(float(since[code]), 3),
                failures_whole_gpu_h=round(float(whole[code]), 3),
                idle_gpu_h=round(float(per_job["idle_gpu_h"][code]), 3),
                restart_gpu_h=round(float(per_job["restart_gpu_h"][code]), 3),
                queue_gpu_h=round(float(per_job["queue_gpu_h"][code]), 3),
                productive_gpu_h=round(productive, 3),
                wall_gpu_h=round(wall, 3),
                ettr=round(productive / wall, 4) if wall else None,
                lost_by_reason={reason: round(h, 3) for reason, h in by_reason},
                counted_from_checkpoint=int(from_checkpoint[code]),
                without_log=int(without_log[code]),
            )
        )
    return sorted(rows, key=lambda row: (-row.failures_since_checkpoint_gpu_h - row.idle_gpu_h, row.user))
