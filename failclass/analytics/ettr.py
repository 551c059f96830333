"""GPU time lost and ETTR per job and per user, as failclass.analytics.goodput defines them,
computed over the attempts' columns: the attempts in order of job id and attempt number,
taken a slice of whole jobs at a time (so that a million jobs need no array per job), the
waits between a job's attempts from the previous one's end, and the sums per job and per
user added in that order."""

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
SLICE = 1 << 17  # attempts of the job order taken at a time (whole jobs)
FIGURES = (  # per job, summed per user
    "wall_gpu_h",
    "productive_gpu_h",
    "failures_whole_gpu_h",
    "failures_since_checkpoint_gpu_h",
    "idle_gpu_h",
    "restart_gpu_h",
    "queue_gpu_h",
)
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
class Losses:
    """The failed attempts with a start and an end, in the job order (``at``: their
    positions in it): GPU time lost whole and since the last checkpoint, the basis of that
    (an index in BASES), and the reason (a code into ``reasons``)."""

    at: np.ndarray
    whole: np.ndarray
    since: np.ndarray
    basis: np.ndarray
    reason: np.ndarray
    reasons: list[str]


def losses(attempts: Attempts, failed: Failed, read_logs: bool) -> Losses:
    rows = attempts.by_job[0]
    position = np.empty(len(rows), dtype=np.int32)
    position[rows] = np.arange(len(rows), dtype=np.int32)
    (_, has_start), (end, has_end) = attempts.micros("start_time", failed.rows), attempts.micros("end_time", failed.rows)
    complete = np.flatnonzero(has_start & has_end)
    mine = complete[np.argsort(position[failed.rows[complete]], kind="stable")]  # in the job order
    lost, demand = failed.rows[mine], np.maximum(failed.gpus[mine], 1)
    whole = np.nan_to_num(attempts.rtf_minutes[lost]) / 60 * demand
    taken = pa.array(lost, pa.int64())
    stored = coded(attempts.column("checkpoint_basis").take(taken))
    saved, has_saved = (np.array(a) for a in micros(attempts.column("last_checkpoint_at").take(taken)))
    as_basis = np.array([BASES.index(cast(Basis, name)) for name in stored.names] + [BASES.index("no log")], dtype=np.int64)
    basis = as_basis[stored.codes]  # -1 (none stored): "no log", unless a log is read below
    logged = pc.greater(pc.list_value_length(attempts.column("logs").take(taken)), 0).to_numpy(zero_copy_only=False)
    to_read = np.flatnonzero((stored.codes < 0) & logged) if read_logs else np.zeros(0, dtype=np.int64)
    facts = attempts.table.select(["logs", "start_time", "end_time"]).take(pa.array(lost[to_read], pa.int64()))
    for i, fact in zip(to_read, facts.to_pylist(), strict=True):  # the checkpoint is found where the logs are at hand
        found, moment = last_save(fact["logs"], fact["start_time"], fact["end_time"])
        basis[i] = BASES.index(found)
        if moment is not None:
            saved[i], has_saved[i] = (moment - EPOCH) // timedelta(microseconds=1), True
    since = np.where(has_saved, (end[mine] - saved) / MICROS / HOUR * demand, whole)
    return Losses(position[lost], whole, since, basis, failed.reason.codes[mine], failed.reason.names)


def _slices(job: np.ndarray) -> list[tuple[int, int]]:
    """About SLICE attempts of the job order at a time, cut where a job starts."""
    cuts = np.unique(np.searchsorted(job, job[::SLICE], side="left")).tolist()
    return list(zip(cuts, [*cuts[1:], len(job)], strict=False))


def _waits(
    attempts: Attempts, rows: np.ndarray, times: tuple[np.ndarray, np.ndarray], first: np.ndarray, demand: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(queue, restart) GPU-hours of each attempt (``times``: its start and end; ``first``: a
    job's first): from its submission to its start, and from the previous attempt's end to
    its resubmission (its start where not known)."""
    start, end = times
    submit, has_submit = attempts.micros("submit_time", rows)
    submitted = np.where(has_submit, submit, start)  # unknown: the start, no queue
    previous_end = np.r_[0, end[:-1]]
    later = ~first  # resubmitted after the previous attempt's end, before its own start
    submitted[later] = np.minimum(np.maximum(submitted, previous_end), start)[later]
    restart = _hours(submitted - previous_end, demand)
    restart[first] = 0.0
    return _hours(start - submitted, demand), restart


def _hours(span: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """A span of microseconds (at least 0) x GPUs as GPU-hours."""
    hours = span.astype(float)
    np.maximum(np.divide(hours, MICROS, out=hours), 0.0, out=hours)
    return np.multiply(np.divide(hours, HOUR, out=hours), demand, out=hours)


@dataclass(frozen=True)
class Slice:
    """The jobs of a slice of the job order: their figures (FIGURES), whether each counts
    (all its attempts have a start and an end), its user, attempts, and its losses."""

    first_job: int
    figures: dict[str, np.ndarray]
    kept: np.ndarray
    owner: np.ndarray
    attempts: np.ndarray
    lost: slice  # its losses in Losses


def job_slice(attempts: Attempts, span: tuple[int, int], lost: Losses, idle: np.ndarray | None) -> Slice:
    rows, job = attempts.by_job[0][span[0] : span[1]], attempts.by_job[1][span[0] : span[1]]
    local = job - job[0]
    groups = int(local[-1]) + 1
    first = np.r_[True, local[1:] != local[:-1]]
    demand = np.maximum(attempts.gpus[rows], 1)
    (start, has_start), (end, has_end) = attempts.micros("start_time", rows), attempts.micros("end_time", rows)
    runs = sums(local, np.nan_to_num(attempts.rtf_minutes[rows]) / 60 * demand, groups)
    queue, restart = (sums(local, values, groups) for values in _waits(attempts, rows, (start, end), first, demand))
    mine = slice(*np.searchsorted(lost.at, span))
    losing = job[lost.at[mine] - span[0]] - job[0]
    since = sums(losing, lost.since[mine], groups)
    idle_h = idle[job[0] : job[0] + groups] if idle is not None else np.zeros(groups)
    idle_h = np.minimum(idle_h, np.maximum(runs - since, 0.0))
    figures = {
        "wall_gpu_h": runs + queue + restart,
        "productive_gpu_h": np.maximum(runs - since - idle_h, 0.0),
        "failures_whole_gpu_h": sums(losing, lost.whole[mine], groups),
        "failures_since_checkpoint_gpu_h": since,
        "idle_gpu_h": idle_h,
        "restart_gpu_h": restart,
        "queue_gpu_h": queue,
    }
    kept = counts(local[~(has_start & has_end)], groups) == 0
    return Slice(int(job[0]), figures, kept, attempts.users.codes[rows[first]], counts(local, groups), mine)


def goodput(
    attempts: Attempts, failed: Failed, idle: Mapping[str, float] | None = None, read_logs: bool = True, per_job: bool = False
) -> tuple[pa.Table | None, list[UserGoodput]]:
    """Per job (JOB_COLUMNS: the jobs whose attempts all have a start and an end; only
    ``per_job``, for the export) and per user; ``idle``: job -> idle GPU-hours (`failclass
    waste`'s measure); ``read_logs`` False: no log is opened, and a failed attempt without a
    stored checkpoint counts whole."""
    lost = losses(attempts, failed, read_logs)
    width = len(attempts.users.values)
    totals = {name: np.zeros(width) for name in FIGURES}
    jobs = np.zeros(width, dtype=np.int64)
    ids = attempts.job_ids() if idle or per_job else None
    idle_h = _idle(idle, ids) if idle and ids is not None else None
    tables = []
    for span in _slices(attempts.by_job[1]):
        part = job_slice(attempts, span, lost, idle_h)
        owner = part.owner[part.kept]
        for name in FIGURES:
            np.add.at(totals[name], owner, part.figures[name][part.kept])  # in the job order
        jobs += counts(owner, width)
        if ids is not None and per_job:
            tables.append(_job_table(attempts, part, lost, ids))
    table = pa.concat_tables(tables) if tables else JOB_COLUMNS.empty_table() if per_job else None
    return table, _per_user(attempts, totals, jobs, lost)


def _idle(idle: Mapping[str, float], jobs: pa.Array) -> np.ndarray:
    """Each job's idle GPU-hours (0 where not measured), in the job order."""
    hours = np.zeros(len(jobs))
    where = pc.index_in(pa.array(list(idle), pa.string()), value_set=jobs)
    known = pc.is_valid(where).to_numpy(zero_copy_only=False)
    hours[pc.drop_null(where).to_numpy().astype(np.int64)] = np.array(list(idle.values()), dtype=float)[known]
    return hours


def _job_table(attempts: Attempts, part: Slice, lost: Losses, ids: pa.Array) -> pa.Table:
    """A slice's kept jobs: their ids, users, attempts, figures and losses by reason."""
    groups = len(part.kept)
    losing = attempts.by_job[1][lost.at[part.lost]] - part.first_job
    offsets, reasons, hours = _by_pair(losing, lost.reason[part.lost], lost.since[part.lost], groups)
    names = pa.array([lost.reasons[r] for r in reasons], pa.string())
    wall = part.figures["wall_gpu_h"]
    columns = {
        "job_id": ids.slice(part.first_job, groups),
        "user": attempts.users.values.take(pa.array(part.owner, pa.int64())),
        "attempts": part.attempts,
        "failed_attempts": counts(losing, groups),
        **part.figures,
        "ettr": pa.array(
            np.divide(part.figures["productive_gpu_h"], wall, out=np.zeros_like(wall), where=wall != 0), mask=wall == 0
        ),
        "lost_by_reason": pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), names, pa.array(hours, pa.float64())),
    }
    return pa.table([columns[name] for name in JOB_COLUMNS.names], schema=JOB_COLUMNS).filter(pa.array(part.kept))


def _by_pair(group: np.ndarray, reason: np.ndarray, hours: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hours summed per (group, reason), the pairs of a group together in order of first
    appearance: (offsets per group, reasons, hours)."""
    width = int(reason.max(initial=0)) + 1
    pairs, first, inverse = np.unique(group * width + reason, return_index=True, return_inverse=True)
    summed = sums(inverse.reshape(-1), hours, len(pairs))
    order = np.lexsort((first, pairs // width))
    offsets = np.r_[0, np.cumsum(counts(pairs[order] // width, groups))]
    return offsets, pairs[order] % width, summed[order]


def _per_user(attempts: Attempts, per_job: dict[str, np.ndarray], job_count: np.ndarray, lost: Losses) -> list[UserGoodput]:
    """The users' sums over their jobs (those with all times) and their failed attempts."""
    names, width = attempts.users.names, len(attempts.users.names)
    loser = attempts.users.codes[attempts.by_job[0][lost.at]]
    since, whole = sums(loser, lost.since, width), sums(loser, lost.whole, width)
    offsets, reasons, hours = _by_pair(loser, lost.reason, lost.since, width)
    failed_count = counts(loser, width)
    from_checkpoint = counts(loser[lost.basis == BASES.index("checkpoint")], width)
    without_log = counts(loser[np.isin(lost.basis, [BASES.index("no log"), BASES.index("undated")])], width)
    rows = []
    for code in np.flatnonzero((job_count > 0) | (failed_count > 0)):
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
