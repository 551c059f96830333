"""The idle watch: signals for the scheduler about running jobs, from their recent
readings (and logs), by the policy file's ``watch:`` section (WatchPolicy).

- ``warn`` (each of an idle rule's ``warn_minutes``, numbered by ``step``) then
  ``release`` (cancel, or requeue): a job that an idle rule covers (its kind, on its
  virtual cluster; interactive jobs by default), past the rule's grace after its start,
  whose GPUs have all done no work for that long;
- ``never_used``: a job past its first ``never_used_after_minutes`` with a GPU it never touched;
- ``release`` an unreleased job: its log said training finished, its GPUs have been idle
  since, for ``unreleased_grace_minutes``;
- ``hung`` then ``cancel``: a job that did GPU work, then whose GPUs have all done none
  and whose log has not been written to for ``hung_after_minutes``, then
  ``hung_cancel_minutes`` (the NCCL hang, the dead data loader, the deadlock: neither
  failed nor idle by choice). Cancelled, its attempt ends as a failure, so the
  scheduler's retry and failclass's decision run on it.

A job with no reading for ``stale_after_minutes`` gets no idle signal: a silent exporter
is not an idle GPU. Each signal names the moment its idle (or hung) stretch began
(``since``), so that whoever carries them out (failclass.waste.enforce) takes each step
once per stretch.

Jobs that ended before now (their ``end`` in the jobs file) are not watched.

"No work" is zero utilisation; memory held by an idle notebook's CUDA context does not
count as work (``idle_needs_free_memory`` makes it count, as CloudBrain-I's idle slot does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from failclass.contracts import CANCEL, HUNG, NEVER_USED, RELEASE, WARN
from failclass.policy.watch import IdleRule, WatchPolicy
from failclass.waste.allocation import JobAllocation
from failclass.waste.causes import Cause
from failclass.waste.formats.prometheus_api import PrometheusQuery, fetch
from failclass.waste.samples import GpuSamples
from failclass.waste.timeline import Timeline

LAST_LINES = 5  # of a hung job's log, quoted


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
    step: int = 1  # which warning (1, 2, ...); 1 for the other actions
    since: float = 0.0  # when the idle (or hung) stretch began, or the job started (never_used): epoch seconds
    release: str = "cancel"  # how a release is carried out (failclass.policy.watch.RELEASES)
    user: str = "unknown"
    cluster: str = "default"


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
        if now - float(table.ts[rows].max()) > policy.stale_after_minutes * 60:
            continue
        found = _job_signals(table, rows, job, now, policy, finished, (timelines or {}).get(name))
        hung = _hung(job, table, rows, now, policy, (activity or {}).get(name))
        signals += [*found, hung] if hung is not None and not any(s.action == RELEASE for s in found) else found
    return signals


def _hung(
    job: JobAllocation, table: GpuSamples, rows: np.ndarray, now: float, policy: WatchPolicy, log: LogActivity | None
) -> Signal | None:
    """A job that worked, then stopped: every GPU idle and the log unwritten for ``hung_after_minutes``."""
    if (
        log is None or policy.rule_for(job.kind, job.cluster) is not None
    ):  # a watched kind idles by choice: warned and released instead
        return None
    worked = rows[table.util[rows] > 0]
    if not len(worked):
        return None
    idle_s = now - float(table.ts[worked].max())
    silent_s = now - log.written
    stalled = min(idle_s, silent_s)
    if stalled < policy.hung_after_minutes * 60:
        return None
    gpus = tuple(dict.fromkeys(f"{table.nodes[n]}:{g}" for n, g in zip(table.node[rows], table.gpu[rows], strict=False)))
    action = CANCEL if stalled >= policy.hung_cancel_minutes * 60 else HUNG
    reason = (
        f"no GPU work for {idle_s / 60:.0f} min and no log line for {silent_s / 60:.0f} min after it had worked; "
        f"hung jobs are cancelled after {policy.hung_cancel_minutes:.0f} min, so that their attempt is decided"
    )
    return Signal(job.job, action, reason, gpus, stalled, log.last_lines, since=now - stalled, user=job.user, cluster=job.cluster)


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
    owner: dict[str, Any] = {"user": job.user, "cluster": job.cluster}
    if never and now - start >= policy.never_used_after_minutes * 60 and len(never) < len(first_seen):
        unused = f"{len(never)} of {len(first_seen)} GPUs unused since the job started"
        found.append(Signal(job.job, NEVER_USED, unused, never, now - start, since=start, **owner))
    done = _finished_line(finished, timeline)
    if done is not None and done[0] <= idle_since + 60 and now - max(done[0], idle_since) >= policy.unreleased_grace_minutes * 60:
        reason = f"training finished at {done[1][:80]!r} and the GPUs have been idle for {idle_s / 60:.0f} min"
        return [*found, Signal(job.job, RELEASE, reason, tuple(first_seen), idle_s, (done[1],), since=idle_since, **owner)]
    rule = policy.rule_for(job.kind, job.cluster)
    if rule is not None and now - start >= rule.grace_minutes * 60:
        signal = _idle_step(rule, job, idle_s / 60)
        if signal is not None:
            action, step, reason = signal
            found.append(Signal(job.job, action, reason, tuple(first_seen), idle_s, (), step, idle_since, rule.release, **owner))
    return found


def _idle_step(rule: IdleRule, job: JobAllocation, idle_min: float) -> tuple[str, int, str] | None:
    """The step of ``rule`` that ``idle_min`` minutes idle reached: (action, step, reason), or None."""
    after = f"{job.kind} jobs are released after {rule.release_minutes:.0f} min idle" if rule.release_minutes else ""
    if rule.release_minutes is not None and idle_min >= rule.release_minutes:
        return RELEASE, 1, f"no GPU work for {idle_min:.0f} min; {after}"
    passed = sum(1 for limit in rule.warn_minutes if idle_min >= limit)
    if not passed:
        return None
    return WARN, passed, f"no GPU work for {idle_min:.0f} min" + (f"; {after}" if after else "")


def _finished_line(finished: Cause | None, timeline: Timeline | None) -> tuple[float, str] | None:
    if finished is None or finished.log is None or timeline is None or not timeline.timed:
        return None
    hits = [(line.ts, line.text) for line in timeline.lines if not math.isnan(line.ts) and finished.log.matches(line.body)]
    return hits[-1] if hits else None


def watch_files(
    signals: Sequence[Path] | PrometheusQuery, jobs: Sequence[JobAllocation], now: float, policy: WatchPolicy
) -> list[Signal]:
    """The watch over signal files (or a Prometheus server's recent window) and the running
    jobs (their logs read for finished-training lines)."""
    from failclass.waste.allocation import assign
    from failclass.waste.causes import load_causes
    from failclass.waste.formats import read_signals
    from failclass.waste.samples import concat
    from failclass.waste.timeline import read_timeline

    finished = next(cause for cause in load_causes() if cause.id == "unreleased_job")
    assert finished.log is not None
    logged = [job for job in jobs if job.log and job.log.is_file()]
    timelines = {job.job: read_timeline(job.log, finished.log.matches) for job in logged if job.log}
    activity = {job.job: log_activity(job.log) for job in logged if job.log}
    by_name = {job.job: job for job in jobs}
    samples = concat([window for _, window in fetch(signals)]) if isinstance(signals, PrometheusQuery) else read_signals(signals)
    return watch(assign(samples, list(jobs)), by_name, now, policy, finished, timelines, activity)


def log_activity(path: Path, tail_bytes: int = 16384) -> LogActivity:
    """When the log was last written (its modification time) and its last lines."""
    with path.open("rb") as stream:
        size = stream.seek(0, 2)
        stream.seek(max(0, size - tail_bytes))
        text = stream.read().decode("utf-8", errors="replace")
        written = path.stat().st_mtime
    lines = [line.rstrip("\r") for line in text.split("\n") if line.strip()]
    return LogActivity(written, tuple(lines[-LAST_LINES:]))
