"""The waste use case: signals and a jobs file in, a ``WasteReport`` out.

Readings are measured a batch of whole jobs at a time, and each batch gives a ``Partial``
(its jobs' waste, intervals, advice and convergence, and what checking its inputs met);
the report combines them. A Parquet table is cut into parts of whole jobs, measured in this
process or, given an executor, in a local process pool or on a Dask cluster (the workers
read the table, the jobs file and the logs from the same paths), with the same figures. A
Prometheus server streams a time window at a time (a job still running at a window's end is
carried into the next), so a month of a large cluster never sits in memory at once; the
text formats are read whole (they are limited in size at the edge)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from failclass.executors import Executor, run_all
from failclass.waste import PART_ROWS
from failclass.waste.allocation import JobAllocation, Matching, assign
from failclass.waste.causes import CAUSES, Cause, any_cause, load_causes
from failclass.waste.explain import explain
from failclass.waste.formats import read_signals
from failclass.waste.formats.parquet import Part, parts, read_part
from failclass.waste.formats.prometheus_api import PrometheusQuery, fetch
from failclass.waste.heatmap import HeatMap
from failclass.waste.inputs import InputCheck
from failclass.waste.jobfiles import JobsFile, load_jobs
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
    part_rows: int = PART_ROWS  # readings per part of a Parquet table (whole row groups; the figures do not change)


@dataclass
class Partial:
    """What measuring some of the readings gave (it crosses processes: plain data only)."""

    check: InputCheck
    heat: HeatMap | None = None
    wastes: list[JobWaste] = field(default_factory=list)
    intervals: list[IntervalRow] = field(default_factory=list)
    advice: list[Advice] = field(default_factory=list)
    converged: dict[str, Convergence] = field(default_factory=dict)


def analyse(
    signals: Signals, options: WasteOptions = WasteOptions(), heat: HeatMap | None = None, executor: Executor | None = None
) -> WasteReport:
    """The report over signal files, a jobs file and the logs it names (and, given one,
    the heat map filled on the way); a Parquet table's parts on ``executor`` where given."""
    jobs_file, jobs, causes = _inputs(options, _versions(options))
    check = InputCheck(jobs_file, options.gpu_memory_mib)
    check.missing_logs = [name for name, job in jobs.items() if job.log and not job.log.is_file()]
    pieces = list(_pieces(signals, options.part_rows))
    partials = [
        measure_batches(_batches(piece, list(jobs.values()), check.matching), jobs, causes, options, heat, check)
        for piece in pieces
        if not isinstance(piece, Part)
    ]
    tables = [piece for piece in pieces if isinstance(piece, Part)]
    if executor is not None and len(tables) > 1:
        partials += run_all(executor, measure_part, [(part, options, heat is not None) for part in tables])
    else:
        partials += [measure_part(part, options, heat is not None) for part in tables]
    return combine(partials, jobs, causes, options, heat, check)


def measure_part(part: Part, options: WasteOptions, with_heat: bool) -> Partial:
    """One part of a Parquet table measured (in any process that can read the paths)."""
    _, jobs, causes = _inputs(options, _versions(options))
    check = InputCheck(gpu_memory_mib=options.gpu_memory_mib)
    batch = assign(read_part(part), list(jobs.values()), check.matching)
    return measure_batches([batch], jobs, causes, options, HeatMap() if with_heat else None, check)


@lru_cache(maxsize=2)
def _inputs(
    options: WasteOptions, versions: tuple[tuple[int, int], ...]
) -> tuple[JobsFile | None, dict[str, JobAllocation], tuple[Cause, ...]]:
    """The jobs file (with the logs found for its jobs) and the causes, read once per process
    while the files stay the same (``versions``, the cache key; every part of a table asks)."""
    jobs_file = load_jobs(options.jobs_file) if options.jobs_file else None
    jobs = {job.job: job for job in (jobs_file.jobs if jobs_file else [])}
    if options.logs_dir is not None:
        found = find_logs(options.logs_dir, (job for job in jobs.values() if job.log is None))
        jobs.update({name: replace(jobs[name], log=path) for name, path in found.items()})
    return jobs_file, jobs, load_causes(options.causes_file)


def _versions(options: WasteOptions) -> tuple[tuple[int, int], ...]:
    """The modification time and size of the files and folder ``_inputs`` reads."""

    def version(path: Path | None) -> tuple[int, int]:
        try:
            status = path.stat() if path is not None else None
        except OSError:
            return (0, 0)  # reading it says why
        return (status.st_mtime_ns, status.st_size) if status else (0, 0)

    return tuple(version(path) for path in (options.jobs_file, options.causes_file, options.logs_dir))


def series_of(signals: Signals, options: WasteOptions, names: set[str]) -> GpuSamples:
    """The readings of some jobs (a second pass, for their timelines; the jobs file as the
    first pass read it)."""
    jobs = list(_inputs(options, _versions(options))[1].values())
    wanted = []
    for piece in _pieces(signals, options.part_rows):
        for batch in _batches(piece, jobs):
            keep = np.asarray([name in names for name in batch.jobs] or [False])[batch.job]
            wanted.append(batch.take(np.flatnonzero(keep)))
    return concat(wanted)


def measure_batches(
    batches: Iterable[GpuSamples],
    jobs: Mapping[str, JobAllocation],
    causes: Sequence[Cause],
    options: WasteOptions,
    heat: HeatMap | None = None,
    check: InputCheck | None = None,
    read_logs: bool = True,
) -> Partial:
    """Readings already tied to jobs, a batch of whole jobs at a time, with their jobs' logs
    (unless ``read_logs`` is false)."""
    found = Partial(check or InputCheck(gpu_memory_mib=options.gpu_memory_mib), heat)
    for batch in batches:
        batch = found.check.memory(batch)
        if heat is not None:
            heat.add(batch)
        timelines = _timelines(batch, jobs, causes) if read_logs else {}
        measured = measure(batch, options.thresholds)
        wastes = job_waste(measured, jobs, options.thresholds)
        found.wastes += wastes
        found.intervals += interval_rows(measured, explain(measured, causes, jobs, timelines))
        found.advice += advise(measured, jobs, options.rightsize)
        found.converged.update(_convergence(wastes, jobs, timelines))
    return found


def analyse_batches(
    batches: Iterable[GpuSamples],
    jobs: Mapping[str, JobAllocation],
    causes: Sequence[Cause],
    options: WasteOptions,
    check: InputCheck | None = None,
    read_logs: bool = True,
) -> WasteReport:
    """The report over readings already tied to jobs, in this process."""
    found = measure_batches(batches, jobs, causes, options, None, check, read_logs)
    return combine([found], jobs, causes, options, None, found.check)


def combine(
    partials: Sequence[Partial],
    jobs: Mapping[str, JobAllocation],
    causes: Sequence[Cause],
    options: WasteOptions,
    heat: HeatMap | None = None,
    check: InputCheck | None = None,
) -> WasteReport:
    """One report from every part's."""
    check = check or InputCheck(gpu_memory_mib=options.gpu_memory_mib)
    for partial in partials:
        if partial.check is not check:
            check.absorb(partial.check)
        if heat is not None and partial.heat is not None and partial.heat is not heat:
            heat.absorb(partial.heat)
    wastes = [waste for partial in partials for waste in partial.wastes]
    converged = {job: found for partial in partials for job, found in partial.converged.items()}
    top = headline(wastes, jobs, options.time_limit_s)
    groups = (by_group(wastes, "user"), by_group(wastes, "cluster"))
    rightsizing = summarise([advice for partial in partials for advice in partial.advice], options.rightsize)
    intervals = [row for partial in partials for row in partial.intervals]
    return build(top, wastes, groups, intervals, causes, converged, check.report(jobs), rightsizing)


def _pieces(signals: Signals, part_rows: int) -> Iterator[Signals | Part]:
    """The Prometheus range, the text files together, and each Parquet table's parts."""
    if isinstance(signals, PrometheusQuery):
        yield signals
        return
    texts = [path for path in signals if not _is_parquet(path)]
    if texts:
        yield texts
    for path in signals:
        if _is_parquet(path):
            yield from parts(path, part_rows)


def _batches(piece: Signals | Part, jobs: list[JobAllocation], matching: Matching | None = None) -> Iterator[GpuSamples]:
    if isinstance(piece, PrometheusQuery):
        yield from _whole_windows(piece, jobs, matching)
    elif isinstance(piece, Part):
        yield assign(read_part(piece), jobs, matching)
    else:
        yield assign(read_signals(piece), jobs, matching)


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


def _timelines(batch: GpuSamples, jobs: Mapping[str, JobAllocation], causes: Sequence[Cause]) -> dict[str, Timeline]:
    """The logs of the batch's jobs, timed, with the lines the causes and the loss look for."""
    wanted = [c.log for c in causes if c.log and c.detectable]
    maybe = any_cause(list(causes))

    def keep(line: str) -> bool:
        return has_loss(line) or bool(maybe and maybe.search(line) and any(log.matches(line) for log in wanted))

    logged = [jobs[name] for name in batch.jobs if name in jobs and jobs[name].log]
    return {job.job: read_timeline(job.log, keep, job.start) for job in logged if job.log and job.log.is_file()}


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
