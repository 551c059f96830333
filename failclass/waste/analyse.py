"""The waste use case: signals and a jobs file in, a ``WasteReport`` out.

Parquet tables stream a batch at a time (a job cut by a batch boundary is carried into
the next batch), and so does a Prometheus server, a time window at a time (a job still
running at a window's end is carried into the next), so a month of a large cluster never
sits in memory at once; the text formats are read whole (they are limited in size at the
edge)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from failclass.waste.allocation import JobAllocation, Matching, assign
from failclass.waste.causes import CAUSES, Cause, load_causes
from failclass.waste.explain import explain
from failclass.waste.formats import read_signals
from failclass.waste.formats.parquet import iter_parquet
from failclass.waste.formats.prometheus_api import PrometheusQuery, fetch
from failclass.waste.heatmap import HeatMap
from failclass.waste.inputs import InputCheck
from failclass.waste.jobfiles import load_jobs, read_jobs
from failclass.waste.joblogs import find_logs
from failclass.waste.loss import Convergence, convergence, has_loss
from failclass.waste.measure import Thresholds, measure
from failclass.waste.report import IntervalRow, WasteReport, build, interval_rows
from failclass.waste.rightsize import Advice, Rules, advise, summarise
from failclass.waste.samples import GpuSamples, concat
from failclass.waste.summary import JobWaste, by_group, headline, job_waste
from failclass.waste.timeline import Timeline, read_timeline

Signals = Sequence[Path] | PrometheusQuery  # signal files, or a Prometheus server's range
LOOKBACK_S = 300.0  # Prometheus's lookback: a series silent this long has ended as queries see it


@dataclass(frozen=True)
class WasteOptions:
    jobs_file: Path | None = None
    causes_file: Path = CAUSES
    thresholds: Thresholds = field(default_factory=Thresholds)
    time_limit_s: float | None = None
    gpu_memory_mib: float | None = None  # the memory total of GPUs whose readings give none
    logs_dir: Path | None = None  # where the logs of jobs whose jobs file names none are found
    rightsize: Rules = field(default_factory=Rules)  # the right-sizing advice's thresholds


def analyse(signals: Signals, options: WasteOptions = WasteOptions(), heat: HeatMap | None = None) -> WasteReport:
    """The report over signal files, a jobs file and the logs it names (and, given one,
    the heat map filled on the way)."""
    jobs_file = load_jobs(options.jobs_file) if options.jobs_file else None
    jobs = {job.job: job for job in (jobs_file.jobs if jobs_file else [])}
    if options.logs_dir is not None:
        found = find_logs(options.logs_dir, (job for job in jobs.values() if job.log is None))
        jobs.update({name: replace(jobs[name], log=path) for name, path in found.items()})
    causes = load_causes(options.causes_file)
    check = InputCheck(jobs_file, options.gpu_memory_mib)
    check.missing_logs = [name for name, job in jobs.items() if job.log and not job.log.is_file()]
    timelines = {name: _timeline(job, causes) for name, job in jobs.items() if job.log and name not in check.missing_logs}
    batches = _batches(signals, list(jobs.values()), check.matching)
    return analyse_batches(batches, jobs, causes, timelines, options, heat, check)


def series_of(signals: Signals, options: WasteOptions, names: set[str]) -> GpuSamples:
    """The readings of some jobs (a second pass, for their timelines)."""
    jobs = read_jobs(options.jobs_file) if options.jobs_file else []
    wanted = []
    for batch in _batches(signals, jobs):
        keep = np.asarray([name in names for name in batch.jobs] or [False])[batch.job]
        wanted.append(batch.take(np.flatnonzero(keep)))
    return concat(wanted)


def analyse_batches(
    batches: Iterable[GpuSamples],
    jobs: Mapping[str, JobAllocation],
    causes: Sequence[Cause],
    timelines: Mapping[str, Timeline],
    options: WasteOptions,
    heat: HeatMap | None = None,
    check: InputCheck | None = None,
) -> WasteReport:
    """The report over readings already tied to jobs, a batch of whole jobs at a time."""
    check = check or InputCheck(gpu_memory_mib=options.gpu_memory_mib)
    wastes: list[JobWaste] = []
    intervals: list[IntervalRow] = []
    advice: list[Advice] = []
    for batch in batches:
        batch = check.memory(batch)
        if heat is not None:
            heat.add(batch)
        measured = measure(batch, options.thresholds)
        wastes += job_waste(measured, jobs, options.thresholds)
        intervals += interval_rows(measured, explain(measured, causes, jobs, timelines))
        advice += advise(measured, jobs, options.rightsize)
    converged = _convergence(wastes, jobs, timelines)
    top = headline(wastes, jobs, options.time_limit_s)
    groups = (by_group(wastes, "user"), by_group(wastes, "cluster"))
    rightsizing = summarise(advice, options.rightsize)
    return build(top, wastes, groups, intervals, causes, converged, check.report(jobs), rightsizing)


def _batches(signals: Signals, jobs: list[JobAllocation], matching: Matching | None = None) -> Iterator[GpuSamples]:
    if isinstance(signals, PrometheusQuery):
        yield from _whole_windows(signals, jobs, matching)
        return
    texts = [path for path in signals if not _is_parquet(path)]
    if texts:
        yield assign(read_signals(texts), jobs, matching)
    for path in signals:
        if _is_parquet(path):
            yield from _whole_jobs(assign(batch, jobs, matching) for batch in iter_parquet(path))


def _whole_jobs(batches: Iterator[GpuSamples]) -> Iterator[GpuSamples]:
    """Batches in which no job is cut: the last job of each batch waits for the next one."""
    carry: GpuSamples | None = None
    for batch in batches:
        if carry is not None:
            batch = concat([carry, batch])
        if not len(batch):
            continue
        last = batch.jobs[batch.job[-1]]
        tail = np.asarray([name == last for name in batch.jobs])[batch.job]
        carry = batch.take(np.flatnonzero(tail))
        if (~tail).any():
            yield batch.take(np.flatnonzero(~tail))
    if carry is not None and len(carry):
        yield carry


def _whole_windows(query: PrometheusQuery, jobs: list[JobAllocation], matching: Matching | None) -> Iterator[GpuSamples]:
    """Prometheus's windows as batches of whole jobs: a job whose allocation ends after a
    window, or whose series were still live at its end, waits for the next window."""
    ends = {job.job: job.end for job in jobs}
    margin = max(LOOKBACK_S, query.step_s)
    carry: GpuSamples | None = None
    for end, window in fetch(query):
        batch = assign(window, jobs, matching)
        batch = batch if carry is None else concat([carry, batch])
        if not len(batch):
            continue
        last = np.full(len(batch.jobs), -np.inf)
        np.maximum.at(last, batch.job, batch.ts)
        held = np.asarray([ends.get(name, math.inf) for name in batch.jobs])
        waits = ((last >= end - margin) | (np.isfinite(held) & (held > end)))[batch.job]
        carry = batch.take(np.flatnonzero(waits))
        if (~waits).any():
            yield batch.take(np.flatnonzero(~waits))
    if carry is not None and len(carry):
        yield carry


def _timeline(job: JobAllocation, causes: Sequence[Cause]) -> Timeline:
    assert job.log is not None
    wanted = [c.log for c in causes if c.log and c.detectable]
    return read_timeline(job.log, lambda line: has_loss(line) or any(log.matches(line) for log in wanted), job.start)


def _convergence(
    wastes: list[JobWaste], jobs: Mapping[str, JobAllocation], timelines: Mapping[str, Timeline]
) -> dict[str, Convergence]:
    found = {}
    for waste in wastes:
        if waste.job in timelines:
            end = jobs[waste.job].end if waste.job in jobs else math.nan
            result = convergence(timelines[waste.job], end, waste.gpus)
            if result is not None:
                found[waste.job] = result
    return found


def _is_parquet(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == b"PAR1"
    except OSError:
        return False
