"""Per-job, per-user and per-cluster waste, and the cluster's headline ratios (the
figures CloudBrain-I and Gao et al. report), from the measures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from failclass.waste.allocation import JobAllocation
from failclass.waste.measure import Measured, Thresholds

HOUR = 3600.0


@dataclass(frozen=True)
class JobWaste:
    job: str
    user: str
    cluster: str
    kind: str
    gpus: int
    held_gpu_h: float
    util: float  # U, percent
    idle_gpu_h: float  # in idle slots, never-used GPUs included
    never_used_gpus: int
    never_used_gpu_h: float
    unused_gpu_h: float  # held x (1 - U_i), summed over GPUs
    stable_phases: int  # the most on one of its GPUs
    low: bool
    shape: str  # idle, persistently_low, sudden_drops or "" when not low


@dataclass(frozen=True)
class GroupWaste:
    name: str
    jobs: int
    low_jobs: int
    held_gpu_h: float
    idle_gpu_h: float
    never_used_gpu_h: float
    unused_gpu_h: float


@dataclass(frozen=True)
class Headline:
    jobs: int
    gpus_held_h: float
    low_jobs_pct: float
    interactive_idle_pct: float  # share of interactive jobs' GPU time in idle slots
    batch_idle_pct: float
    multi_gpu_never_used_pct: float  # multi-GPU jobs with at least one never-used GPU
    several_stable_phases_pct: float
    interactive_at_limit_pct: float | None  # interactive jobs that ran into the time limit


def job_waste(measured: Measured, jobs: Mapping[str, JobAllocation], thresholds: Thresholds) -> list[JobWaste]:
    use, names = measured.gpus, measured.samples.jobs
    drops = {int(j) for j, kind in zip(measured.intervals.job, measured.intervals.kind, strict=False) if kind == "sudden_drop"}
    found = []
    for code in np.unique(use.job):
        rows = np.flatnonzero(use.job == code)
        name = names[code]
        job = jobs.get(name, JobAllocation(name))
        held, idle, never = use.held_s[rows], use.idle_s[rows], use.never_used[rows]
        util = float(use.util[rows].mean())
        low = util <= thresholds.low_util_pct
        shape = (
            ""
            if not low
            else ("idle" if idle.sum() >= 0.5 * held.sum() else "sudden_drops" if code in drops else "persistently_low")
        )
        found.append(
            JobWaste(
                name,
                job.user,
                job.cluster,
                job.kind,
                len(rows),
                float(held.sum() / HOUR),
                util,
                float(idle.sum() / HOUR),
                int(never.sum()),
                float(held[never].sum() / HOUR),
                float((held * (1 - use.util[rows] / 100)).sum() / HOUR),
                int(use.stable_phases[rows].max()),
                low,
                shape,
            )
        )
    return found


def by_group(jobs: list[JobWaste], key: str) -> list[GroupWaste]:
    groups: dict[str, list[JobWaste]] = {}
    for job in jobs:
        groups.setdefault(getattr(job, key), []).append(job)
    rows = [
        GroupWaste(
            name,
            len(members),
            sum(j.low for j in members),
            sum(j.held_gpu_h for j in members),
            sum(j.idle_gpu_h for j in members),
            sum(j.never_used_gpu_h for j in members),
            sum(j.unused_gpu_h for j in members),
        )
        for name, members in groups.items()
    ]
    return sorted(rows, key=lambda g: -g.unused_gpu_h)


def headline(jobs: list[JobWaste], allocations: Mapping[str, JobAllocation], time_limit_s: float | None) -> Headline:
    def share(part: float, whole: float) -> float:
        return 100 * part / whole if whole else 0.0

    interactive = [j for j in jobs if j.kind == "interactive"]
    batch = [j for j in jobs if j.kind != "interactive"]
    multi = [j for j in jobs if j.gpus > 1]
    at_limit = None
    if time_limit_s is not None and interactive:
        spans = [allocations[j.job].end - allocations[j.job].start for j in interactive if j.job in allocations]
        at_limit = share(sum(span >= time_limit_s for span in spans), len(spans)) if spans else None
    return Headline(
        len(jobs),
        sum(j.held_gpu_h for j in jobs),
        share(sum(j.low for j in jobs), len(jobs)),
        share(sum(j.idle_gpu_h for j in interactive), sum(j.held_gpu_h for j in interactive)),
        share(sum(j.idle_gpu_h for j in batch), sum(j.held_gpu_h for j in batch)),
        share(sum(j.never_used_gpus > 0 for j in multi), len(multi)),
        share(sum(j.stable_phases > 1 for j in jobs), len(jobs)),
        at_limit,
    )
