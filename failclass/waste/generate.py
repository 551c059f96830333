"""A GPU-cluster trace with planted waste, calibrated to the studies, for the round-trip
test, the benchmark and the bundled sample.

What it plants, in exact quotas (so the measures must give the figures back):
- CloudBrain-I: interactive (debugging) jobs idle 41.62 % of their GPU time in idle
  slots; 24.01 % of multi-GPU jobs leave at least one GPU never used; 38.05 % of jobs
  have several stable phases; 40.41 % of interactive jobs run into the 8-hour limit.
- Gao et al.: the planted causes of the other low jobs follow the paper's shares by
  dimension (data 46.03 %, model 45.18 %, the rest job and library), spread evenly over
  the detectable causes of each dimension (the paper's per-category counts are not used).
- Philly: 75 % of runs reach within 0.1 % of their best loss by 40 % of their time.

The logs are real lines (``failclass/data/waste/lines.yaml``, each with its public source)
behind the time stamp ``kubectl logs --timestamps`` writes.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from failclass.resources import PACKAGE_DATA
from failclass.schema import load
from failclass.waste.allocation import JobAllocation
from failclass.waste.samples import GpuSamples

EPOCH = datetime(2024, 5, 1, tzinfo=UTC).timestamp()
GIB = 1024.0
TOTAL_MIB = 40960.0  # an A100 40GB
LIMIT_S = 8 * 3600.0
INTERACTIVE_IDLE, NEVER_USED_MULTI, SEVERAL_PHASES, AT_LIMIT = 0.4162, 0.2401, 0.3805, 0.4041
DIMENSION_SHARE = {"data": 0.4603, "model": 0.4518, "job+library": 1 - 0.4603 - 0.4518}
PLANTED_BY_DIMENSION = {
    "data": ("external_data_usage", "data_preprocessing", "intermediate_result_upload"),
    "model": ("model_checkpointing", "improper_batch_size", "insufficient_gpu_memory"),
    "job+library": ("unreleased_job", "long_library_installation"),
}
SINGLE_PHASE = {"improper_batch_size", "non_dl_job"}  # their memory pattern is one phase by nature


@dataclass(frozen=True)
class TraceSpec:
    jobs: int = 400
    interval_s: float = 15.0
    seed: int = 1
    interactive_share: float = 0.25
    low_share: float = 0.6  # batch jobs (not oversubscribed) given a planted cause
    nodes: int = 0  # 8-GPU nodes; 0: one per job (no sharing)
    span_days: float = 7.0  # jobs start within this window


@dataclass
class PlantedJob:
    allocation: JobAllocation
    causes: set[str]
    several_phases: bool
    converged_by: float | None  # fraction of the run when the printed loss came within 0.1 % of its best
    log: list[str] = field(default_factory=list)


def plan(spec: TraceSpec) -> list[PlantedJob]:
    """The jobs, their GPUs and times, and what is planted in each (no samples yet)."""
    rng = np.random.default_rng(spec.seed)
    n = spec.jobs
    interactive = _quota(rng, np.arange(n), spec.interactive_share)
    gpus = rng.choice([1, 2, 4, 8], size=n, p=[0.45, 0.2, 0.2, 0.15])
    causes: list[set[str]] = [set() for _ in range(n)]
    for j in interactive:
        causes[j].add("interactive_job")
    multi = np.flatnonzero(gpus > 1)
    batch_multi = np.asarray([j for j in multi if j not in set(interactive)])
    share = NEVER_USED_MULTI * len(multi) / max(len(batch_multi), 1)  # of all multi-GPU jobs, planted in batch ones
    for k, j in enumerate(_quota(rng, batch_multi, share)):
        causes[j].add("non_dl_job" if k % 8 == 7 else "gpu_oversubscription")
    batch = [j for j in range(n) if not causes[j]]
    low = _quota(rng, np.asarray(batch), spec.low_share)
    dimensions = list(DIMENSION_SHARE)
    picks = rng.choice(len(dimensions), size=len(low), p=list(DIMENSION_SHARE.values()))
    for j, d in zip(low, picks, strict=False):
        causes[j].add(str(rng.choice(PLANTED_BY_DIMENSION[dimensions[d]])))
    eligible = np.asarray([j for j in range(n) if not causes[j] & SINGLE_PHASE])
    several = set(_quota(rng, eligible, SEVERAL_PHASES * n / max(len(eligible), 1)).tolist())
    at_limit = set(_quota(rng, interactive, AT_LIMIT).tolist())
    jobs, free_at = [], np.zeros(max(spec.nodes, 1))
    starts = np.sort(rng.uniform(0, spec.span_days * 86400, size=n))
    for j in range(n):
        kind = "interactive" if "interactive_job" in causes[j] else "batch"
        if kind == "interactive":
            duration = LIMIT_S if j in at_limit else float(rng.uniform(1.5, 7.5) * 3600)
        else:
            duration = float(np.clip(rng.lognormal(math.log(2.5 * 3600), 0.6), 1.2 * 3600, 24 * 3600))
        node = j if not spec.nodes else int(np.argmin(free_at))
        start = EPOCH + (starts[j] if not spec.nodes else max(starts[j], free_at[node]))
        if spec.nodes:
            free_at[node] = start - EPOCH + duration + spec.interval_s
        name = f"job{j:06d}"
        allocation = JobAllocation(
            name,
            f"user{int(rng.integers(0, max(n // 8, 1))):03d}",
            f"vc{int(rng.integers(0, 4))}",
            kind,
            tuple((f"node{node:04d}", g) for g in range(int(gpus[j]))),
            float(start),
            float(start + duration),
            None,
        )
        dl = not causes[j] & {"non_dl_job", "interactive_job"}
        converged = float(rng.uniform(0.1, 0.4) if rng.random() < 0.75 else rng.uniform(0.45, 0.95)) if dl else None
        jobs.append(PlantedJob(allocation, causes[j], j in several, converged))
    return jobs


def _quota(rng: np.random.Generator, population: np.ndarray, share: float) -> np.ndarray:
    count = min(len(population), round(share * len(population)))
    return np.sort(rng.choice(population, size=count, replace=False)) if count else np.empty(0, dtype=int)


def samples_of(jobs: list[PlantedJob], spec: TraceSpec) -> Iterator[GpuSamples]:
    """Each job's readings (and, filled into ``job.log``, its log), one table per job."""
    lines = _lines()
    for number, job in enumerate(jobs):
        rng = np.random.default_rng([spec.seed, number])
        yield _job_samples(job, spec, rng, lines)


def _job_samples(job: PlantedJob, spec: TraceSpec, rng: np.random.Generator, lines: dict[str, list[str]]) -> GpuSamples:
    a = job.allocation
    t = a.start + spec.interval_s * np.arange(int((a.end - a.start) // spec.interval_s))
    steps, gpus = len(t), len(a.gpus)
    util = np.clip(rng.normal(88, 4, size=(gpus, steps)), 0, 100)
    mem = TOTAL_MIB - rng.uniform(0.6, 1.6) * GIB + rng.normal(0, 30, size=(gpus, steps))
    log: list[tuple[float, str]] = []

    def when(fraction):
        return int(fraction * steps)

    causes = job.causes
    if "interactive_job" in causes:
        log += [(t[0], line) for line in lines["interactive"]]
        util = np.clip(rng.uniform(15, 75, size=(gpus, steps)), 0, 100)
        _interactive_gaps(util, mem, 2 if job.several_phases else 1, rng)
    if causes & {"gpu_oversubscription"}:
        unused = max(1, gpus // 2)
        _idle(util, mem, (slice(gpus - unused, gpus), slice(None)))
    if "non_dl_job" in causes:
        _idle(util, mem, (slice(None), slice(None)))
    if "improper_batch_size" in causes:
        util = np.clip(rng.normal(30, 5, size=util.shape), 0, 100)
        mem[:] = rng.uniform(0.25, 0.4) * TOTAL_MIB
    if "insufficient_gpu_memory" in causes:
        util = np.clip(rng.normal(35, 5, size=util.shape), 0, 100)
        mem[:] = TOTAL_MIB * 0.97
    prelude = {
        "long_library_installation": ("install", 12, 25),
        "external_data_usage": ("download", 3, 8),
        "data_preprocessing": ("preprocessing", 4, 10),
    }
    for cause, (event, low_min, high_min) in prelude.items():
        if cause in causes:
            end = min(int(rng.uniform(low_min, high_min) * 60 / spec.interval_s), steps // 3)
            _idle(util, mem, (slice(None), slice(0, end)))
            picked = lines[event]
            log += [(t[int(i)], picked[k % len(picked)]) for k, i in enumerate(np.linspace(0, end - 2, len(picked)))]
    periodic = {"model_checkpointing": ("checkpoint", 0.0, 3), "intermediate_result_upload": ("upload", 2.0, 2)}
    for cause, (event, level, minutes) in periodic.items():
        if cause in causes:
            every = int(25 * 60 / spec.interval_s)
            for start in range(every, steps - every // 2, every):
                end = start + int(minutes * 60 / spec.interval_s)
                util[:, start:end] = level
                log.append((t[start], lines[event][0]))
    if "unreleased_job" in causes:
        stop = when(float(rng.uniform(0.6, 0.85)))
        _idle(util, mem, (slice(None), slice(stop, steps)))
        log.append((t[stop - 1], lines["finished"][0]))
    if job.several_phases and "interactive_job" not in causes:
        for fraction in (0.3, 0.6):
            window = (slice(None), slice(when(fraction), when(fraction + 0.08)))
            mem[window] = np.where(mem[window] > 0, mem[window] - rng.uniform(8, 16) * GIB, 0)
    if job.converged_by is not None:
        log += _converging(job, t, rng)
    job.log = [f"{_stamp(ts)} {line}" for ts, line in sorted(log, key=lambda entry: entry[0])]
    return _table(a, t, np.clip(util, 0, 100), np.clip(mem, 0, TOTAL_MIB))


def _interactive_gaps(util: np.ndarray, mem: np.ndarray, gaps: int, rng: np.random.Generator) -> None:
    """Idle gaps (utilisation and memory 0) adding up to CloudBrain-I's 41.62 % of the job."""
    steps = util.shape[1]
    idle_steps = int(INTERACTIVE_IDLE * steps)
    cuts = np.sort(rng.choice(np.arange(1, gaps), size=gaps - 1, replace=False)) if gaps > 1 else np.empty(0, int)
    lengths = np.diff(np.concatenate(([0], cuts * idle_steps // gaps, [idle_steps])))
    position = lead = int(0.1 * steps)
    for length in lengths:
        _idle(util, mem, (slice(None), slice(position, position + length)))
        position += length + (steps - idle_steps - lead) // (gaps + 1)


def _converging(job: PlantedJob, t: np.ndarray, rng: np.random.Generator) -> list[tuple[float, str]]:
    """The loss lines, and ``job.converged_by`` set to when they came within 0.1 % of their best."""
    assert job.converged_by is not None
    losses = _loss_lines(t, job.converged_by, rng)
    best = min(value for _, _, value in losses)
    reached = next(ts for ts, _, value in losses if value <= best * 1.001)
    job.converged_by = float((reached - t[0]) / (job.allocation.end - t[0]))  # as printed: rounded, sampled
    return [(ts, line) for ts, line, _ in losses]


def _idle(util: np.ndarray, mem: np.ndarray, where: tuple[slice, slice]) -> None:
    util[where] = 0.0
    mem[where] = 0.0


def _loss_lines(t: np.ndarray, converged_by: float, rng: np.random.Generator) -> list[tuple[float, str, float]]:
    """Hugging Face Trainer's loss line every ~2 minutes, reaching 0.1 % of the floor at ``converged_by``."""
    floor, height = float(rng.uniform(1.0, 3.0)), float(rng.uniform(2.0, 8.0))
    seconds = t - t[0]
    tau = converged_by * seconds[-1] / math.log(height / (0.001 * floor))
    found = []
    for i in range(0, len(t), max(1, int(120 / max(seconds[1] if len(t) > 1 else 15, 1)))):
        loss = round(floor + height * math.exp(-seconds[i] / tau), 4)
        epoch = 3 * seconds[i] / max(seconds[-1], 1)
        found.append((t[i], f"{{'loss': {loss:.4f}, 'learning_rate': 4.9113474e-05, 'epoch': {epoch}, 'step': {i}}}", loss))
    return found


def _table(a: JobAllocation, t: np.ndarray, util: np.ndarray, mem: np.ndarray) -> GpuSamples:
    gpus, steps = util.shape
    nodes = tuple(dict.fromkeys(node for node, _ in a.gpus))
    node_code = np.repeat(np.asarray([nodes.index(node) for node, _ in a.gpus], dtype=np.int32), steps)
    return GpuSamples(
        nodes,
        ("", a.job),
        node_code,
        np.repeat(np.asarray([g for _, g in a.gpus], dtype=np.int16), steps),
        np.tile(t, gpus),
        util.ravel().astype(np.float32),
        mem.ravel().astype(np.float32),
        np.full(gpus * steps, TOTAL_MIB, dtype=np.float32),
        np.ones(gpus * steps, dtype=np.int32),
    )


def _stamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


@dataclass(frozen=True)
class Line:
    """A real log line and the corpora/waste_logs/ file it was copied from."""

    text: str
    source: str


@dataclass(frozen=True)
class LinesFile:
    events: dict[str, tuple[Line, ...]]  # what a job does -> the lines that show it


def _lines() -> dict[str, list[str]]:
    table = load(PACKAGE_DATA / "waste" / "lines.yaml", LinesFile, "the generator's log lines")
    return {event: [line.text for line in lines] for event, lines in table.events.items()}


def write_trace(spec: TraceSpec, folder: Path, jobs_per_row_group: int = 64) -> list[PlantedJob]:
    """``samples.parquet`` (jobs kept together), ``jobs.csv``, ``logs/<job>.log`` and
    ``planted.json`` (what was planted, for checking a measure against)."""
    from failclass.waste.formats.parquet import write_parquet
    from failclass.waste.samples import concat

    (folder / "logs").mkdir(parents=True, exist_ok=True)
    jobs = plan(spec)
    writer, pending = None, []
    for job, samples in zip(jobs, samples_of(jobs, spec), strict=False):
        pending.append(samples)
        (folder / "logs" / f"{job.allocation.job}.log").write_text("\n".join(job.log) + "\n", encoding="utf-8")
        if len(pending) == jobs_per_row_group:
            writer = write_parquet(concat(pending), folder / "samples.parquet", writer)
            pending = []
    if pending:
        writer = write_parquet(concat(pending), folder / "samples.parquet", writer)
    if writer is not None:
        writer.close()
    with (folder / "jobs.csv").open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["job", "user", "cluster", "kind", "gpus", "start", "end", "log"])
        for job in jobs:
            a = job.allocation
            node = a.gpus[0][0]
            out.writerow(
                [
                    a.job,
                    a.user,
                    a.cluster,
                    a.kind,
                    f"{node}:0-{len(a.gpus) - 1}",
                    _stamp(a.start),
                    _stamp(a.end),
                    f"logs/{a.job}.log",
                ]
            )
    planted = [
        {
            "job": j.allocation.job,
            "causes": sorted(j.causes),
            "several_stable_phases": j.several_phases,
            "converged_by": j.converged_by,
        }
        for j in jobs
    ]
    (folder / "planted.json").write_text(json.dumps({"spec": asdict(spec), "jobs": planted}, indent=1) + "\n", encoding="utf-8")
    return jobs
