"""Which job held which GPU when: the allocation table that ties GPU readings to jobs.

A jobs file (CSV with a header, or JSON Lines) has one row per job: ``job``, ``user``,
``cluster`` (virtual cluster or partition), ``kind`` (``batch`` or ``interactive``),
``gpus`` (``node01:0,1 node02:0-3``), ``start`` and ``end`` (ISO 8601 or Unix seconds)
and ``log`` (the job's output, relative to the jobs file). Readings that already name
their job (DCGM's ``hpc_job`` or pod labels) need only the row's metadata.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from failclass.errors import InputError
from failclass.limits import LIMITS
from failclass.waste.samples import UNKNOWN_JOB, GpuSamples

KINDS = ("batch", "interactive")


@dataclass(frozen=True)
class JobAllocation:
    job: str
    user: str = "unknown"
    cluster: str = "default"
    kind: str = "batch"
    gpus: tuple[tuple[str, int], ...] = ()
    start: float = -math.inf
    end: float = math.inf
    log: Path | None = None


def read_jobs(path: Path) -> list[JobAllocation]:
    try:
        if path.stat().st_size > LIMITS.waste_jobs_file_bytes:
            raise InputError(f"{path}: a jobs file over {LIMITS.waste_jobs_file_bytes:,} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc
    if path.suffix == ".jsonl":
        rows = [_json_row(line, path, number) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    else:
        rows = list(csv.DictReader(text.splitlines()))
    jobs = [_allocation(row, path, number) for number, row in enumerate(rows, 2)]
    seen: set[str] = set()
    for job in jobs:
        if job.job in seen:
            raise InputError(f"{path}: job {job.job!r} appears twice")
        seen.add(job.job)
    return jobs


def assign(samples: GpuSamples, jobs: Sequence[JobAllocation]) -> GpuSamples:
    """Tag each reading that names no job with the job that held its GPU at that time;
    readings that named their job keep it. Readings of no job are dropped."""
    unknown = np.asarray([name == UNKNOWN_JOB for name in samples.jobs] or [True])[samples.job]
    names = list(samples.jobs)
    job = samples.job.copy()
    if unknown.any():
        rows = np.flatnonzero(unknown)
        for number, positions in _placements(samples.take(rows), jobs, names):
            job[rows[positions]] = number
    kept = np.asarray([name != UNKNOWN_JOB for name in names])[job]
    return samples.with_jobs(tuple(names), job).take(np.flatnonzero(kept))


def _placements(samples: GpuSamples, jobs: Sequence[JobAllocation], names: list[str]) -> Iterator[tuple[int, np.ndarray]]:
    """(job code, positions in ``samples``) for each placed job that overlaps the readings;
    new job names are appended to ``names``."""
    slot = samples.node.astype(np.int64) * 1024 + samples.gpu
    order = np.lexsort((samples.ts, slot))
    slots, times = slot[order], samples.ts[order]
    node_code = {name: index for index, name in enumerate(samples.nodes)}
    code = {name: index for index, name in enumerate(names)}
    low, high = float(samples.ts.min()), float(samples.ts.max())
    for allocation in jobs:
        if allocation.end < low or allocation.start > high:
            continue
        for node, gpu in allocation.gpus:
            if node not in node_code:
                continue
            key = node_code[node] * 1024 + gpu
            first, last = np.searchsorted(slots, key, "left"), np.searchsorted(slots, key, "right")
            lo = first + np.searchsorted(times[first:last], allocation.start, "left")
            hi = first + np.searchsorted(times[first:last], allocation.end, "right")
            if hi > lo:
                if allocation.job not in code:
                    code[allocation.job] = len(names)
                    names.append(allocation.job)
                yield code[allocation.job], order[lo:hi]


def _json_row(line: str, path: Path, number: int) -> dict[str, str]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{number}: not JSON: {exc}") from exc
    if not isinstance(row, dict):
        raise InputError(f"{path}:{number}: a job is a JSON object")
    return {key: "" if value is None else str(value) for key, value in row.items()}


def _allocation(row: dict[str, str], path: Path, number: int) -> JobAllocation:
    where = f"{path}:{number}"
    if not row.get("job"):
        raise InputError(f"{where}: a job row without `job`")
    kind = (row.get("kind") or "batch").strip()
    if kind not in KINDS:
        raise InputError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    start, end = _time(row.get("start"), -math.inf, where), _time(row.get("end"), math.inf, where)
    if end < start:
        raise InputError(f"{where}: job {row['job']} ends before it starts")
    log = (path.parent / row["log"]) if row.get("log") else None
    return JobAllocation(
        row["job"],
        row.get("user") or "unknown",
        row.get("cluster") or "default",
        kind,
        _gpus(row.get("gpus") or "", where),
        start,
        end,
        log,
    )


def _gpus(text: str, where: str) -> tuple[tuple[str, int], ...]:
    """``node01:0,1 node02:0-3`` to ((node01, 0), (node01, 1), (node02, 0), ...)."""
    gpus: list[tuple[str, int]] = []
    for part in text.split():
        node, _, indices = part.rpartition(":")
        if not node:
            raise InputError(f"{where}: GPUs {part!r} are not node:indices")
        for piece in indices.split(","):
            low, _, high = piece.partition("-")
            try:
                first, last = int(low), int(high or low)
            except ValueError as exc:
                raise InputError(f"{where}: GPU index {piece!r} is not a number or range") from exc
            if not 0 <= first <= last <= 1023:
                raise InputError(f"{where}: GPU indices {piece!r} outside 0-1023")
            gpus.extend((node, index) for index in range(first, last + 1))
    return tuple(gpus)


def _time(text: str | None, default: float, where: str) -> float:
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InputError(f"{where}: time {text[:40]!r} is neither Unix seconds nor ISO 8601") from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
