"""The idle watch: signals for the scheduler about running jobs, from their recent
readings (and logs), by an operator's policy.

- ``warn`` then ``release``: a watched kind of job (interactive by default) whose GPUs
  have all done no work for ``warn_idle_s``, then ``release_idle_s``;
- ``never_used``: a job past its first ``never_used_after_s`` with a GPU it never touched;
- ``release`` an unreleased job: its log said training finished, its GPUs have been idle
  since, for ``unreleased_grace_s``;
- ``hung`` then ``cancel``: a job that did GPU work, then whose GPUs have all done none
  and whose log has not been written to for ``hung_after_s``, then ``hung_cancel_s``
  (the NCCL hang, the dead data loader, the deadlock: neither failed nor idle by choice).
  Cancelled, its attempt ends as a failure, so the scheduler's retry and failclass's
  decision run on it.

A job with no reading for ``stale_after_s`` gets no idle signal: a silent exporter is not
an idle GPU.

Jobs that ended before now (their ``end`` in the jobs file) are not watched.

"No work" is zero utilisation; memory held by an idle notebook's CUDA context does not
count as work (``idle_needs_free_memory`` makes it count, as CloudBrain-I's idle slot does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from failclass.waste.allocation import JobAllocation
from failclass.waste.causes import Cause
from failclass.waste.samples import GpuSamples
from failclass.waste.timeline import Timeline

WARN, RELEASE, NEVER_USED, HUNG, CANCEL = "warn", "release", "never_used", "hung", "cancel"
LAST_LINES = 5  # of a hung job's log, quoted


@dataclass(frozen=True)
class WatchPolicy:
    warn_idle_s: float = 30 * 60
    release_idle_s: float = 60 * 60
    kinds: tuple[str, ...] = ("interactive",)
    never_used_after_s: float = 10 * 60
    unreleased_grace_s: float = 15 * 60
    idle_needs_free_memory: bool = False
    hung_after_s: float = 30 * 60
    hung_cancel_s: float = 60 * 60
    stale_after_s: float = 10 * 60


@dataclass(frozen=True)
class LogActivity:
    """A running job's log: when it was last written to and its last lines."""

    written: float
    last_lines: tuple[str, ...]


@dataclass(frozen=True)
class Signal:
    job: str
    action: str  # warn, release, never_used, hung, cancel
    reason: str  # a sentence for the job's owner and the operator
    gpus: tuple[str, ...]  # node:index
    idle_s: float
    evidence: tuple[str, ...] = ()


def watch(
    samples: GpuSamples,
    jobs: Mapping[str, JobAllocation],
    now: float,
    policy: WatchPolicy,
    finished: Cause | None = None,
    timelines: Mapping[str, Timeline] | None = None,
    activity: Mapping[str, LogActivity] | None = None,
) -> list[Signal]:
    """Signals for the running jobs whose readings are in ``samples`` (readings after
    ``now`` ignored, jobs that ended before it not watched); ``activity``: their logs'."""
    table = samples.take(np.flatnonzero(samples.ts <= now)).sorted()
    signals = []
    for code in np.unique(table.job):
        name = table.jobs[code]
        job = jobs.get(name, JobAllocation(name))
        if not name or job.end < now:
            continue
        rows = np.flatnonzero(table.job == code)
        if now - float(table.ts[rows].max()) > policy.stale_after_s:
            continue
        found = _job_signals(table, rows, job, now, policy, finished, (timelines or {}).get(name))
        hung = _hung(job, table, rows, now, policy, (activity or {}).get(name))
        signals += [*found, hung] if hung is not None and not any(s.action == RELEASE for s in found) else found
    return signals


def _hung(
    job: JobAllocation, table: GpuSamples, rows: np.ndarray, now: float, policy: WatchPolicy, log: LogActivity | None
) -> Signal | None:
    """A job that worked, then stopped: every GPU idle and the log unwritten for ``hung_after_s``."""
    if log is None or job.kind in policy.kinds:  # a watched kind idles by choice: warned and released instead
        return None
    worked = rows[table.util[rows] > 0]
    if not len(worked):
        return None
    idle_s = now - float(table.ts[worked].max())
    silent_s = now - log.written
    stalled = min(idle_s, silent_s)
    if stalled < policy.hung_after_s:
        return None
    gpus = tuple(dict.fromkeys(f"{table.nodes[n]}:{g}" for n, g in zip(table.node[rows], table.gpu[rows], strict=False)))
    action = CANCEL if stalled >= policy.hung_cancel_s else HUNG
    reason = (
        f"no GPU work for {idle_s / 60:.0f} min and no log line for {silent_s / 60:.0f} min after it had worked; "
        f"hung jobs are cancelled after {policy.hung_cancel_s / 60:.0f} min, so that their attempt is decided"
    )
    return Signal(job.job, action, reason, gpus, stalled, log.last_lines)


def _job_signals(
    table: GpuSamples,
    rows: np.ndarray,
    job: JobAllocation,
    now: float,
    policy: WatchPolicy,
    finished: Cause | None,
    timeline: Timeline | None,
) -> list[Signal]:
    idle = table.util[rows] == 0
    if policy.idle_needs_free_memory:
        idle &= np.nan_to_num(table.mem_used[rows]) == 0
    gpus = [f"{table.nodes[n]}:{g}" for n, g in zip(table.node[rows], table.gpu[rows], strict=False)]
    last_work: dict[str, float] = {}
    first_seen: dict[str, float] = {}
    touched: dict[str, bool] = {}
    for gpu, ts, is_idle, mem in zip(gpus, table.ts[rows], idle, np.nan_to_num(table.mem_used[rows]), strict=False):
        first_seen.setdefault(gpu, ts)
        touched[gpu] = touched.get(gpu, False) or not is_idle or mem > 0
        if not is_idle:
            last_work[gpu] = ts
    idle_since = max((last_work.get(g, first_seen[g]) for g in first_seen), default=now)
    idle_s = now - idle_since
    start = job.start if math.isfinite(job.start) else min(first_seen.values())
    found = []
    never = tuple(g for g in first_seen if not touched[g])
    if never and now - start >= policy.never_used_after_s and len(never) < len(first_seen):
        found.append(
            Signal(
                job.job, NEVER_USED, f"{len(never)} of {len(first_seen)} GPUs unused since the job started", never, now - start
            )
        )
    done = _finished_line(finished, timeline)
    if done is not None and done[0] <= idle_since + 60 and now - max(done[0], idle_since) >= policy.unreleased_grace_s:
        reason = f"training finished at {done[1][:80]!r} and the GPUs have been idle for {idle_s / 60:.0f} min"
        return [*found, Signal(job.job, RELEASE, reason, tuple(first_seen), idle_s, (done[1],))]
    if job.kind in policy.kinds and idle_s >= policy.warn_idle_s:
        action = RELEASE if idle_s >= policy.release_idle_s else WARN
        limit = policy.release_idle_s / 60
        reason = f"no GPU work for {idle_s / 60:.0f} min; {job.kind} jobs are released after {limit:.0f} min idle"
        found.append(Signal(job.job, action, reason, tuple(first_seen), idle_s))
    return found


def _finished_line(finished: Cause | None, timeline: Timeline | None) -> tuple[float, str] | None:
    if finished is None or finished.log is None or timeline is None or not timeline.timed:
        return None
    hits = [(line.ts, line.text) for line in timeline.lines if not math.isnan(line.ts) and finished.log.matches(line.body)]
    return hits[-1] if hits else None


def watch_files(signals: Sequence[Path], jobs: Sequence[JobAllocation], now: float, policy: WatchPolicy) -> list[Signal]:
    """The watch over signal files and the running jobs (their logs read for finished-training lines)."""
    from failclass.waste.allocation import assign
    from failclass.waste.causes import load_causes
    from failclass.waste.formats import read_signals
    from failclass.waste.timeline import read_timeline

    finished = next(cause for cause in load_causes() if cause.id == "unreleased_job")
    assert finished.log is not None
    logged = [job for job in jobs if job.log and job.log.is_file()]
    timelines = {job.job: read_timeline(job.log, finished.log.matches) for job in logged if job.log}
    activity = {job.job: log_activity(job.log) for job in logged if job.log}
    by_name = {job.job: job for job in jobs}
    return watch(assign(read_signals(signals), list(jobs)), by_name, now, policy, finished, timelines, activity)


def log_activity(path: Path, tail_bytes: int = 16384) -> LogActivity:
    """When the log was last written (its modification time) and its last lines."""
    with path.open("rb") as stream:
        size = stream.seek(0, 2)
        stream.seek(max(0, size - tail_bytes))
        text = stream.read().decode("utf-8", errors="replace")
        written = path.stat().st_mtime
    lines = [line.rstrip("\r") for line in text.split("\n") if line.strip()]
    return LogActivity(written, tuple(lines[-LAST_LINES:]))
