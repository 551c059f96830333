"""What every jobs-file reader shares: the answer's shape, times, GPU lists, host lists,
and the checks on the whole file (a job named twice, a field every job lacks)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from failclass.adapters.slurm_jobs import hostnames
from failclass.errors import InputError
from failclass.waste.allocation import KINDS, JobAllocation

UNSET = ("", "unknown", "none", "n/a", "(null)", "none assigned")


@dataclass(frozen=True)
class JobsFile:
    path: Path
    shape: str  # which reader read it: "sacct --json", "scontrol show job -d", "Kubernetes pods", "CSV", ...
    jobs: list[JobAllocation]
    notes: tuple[str, ...] = ()  # warnings about the file: fields no job has, jobs that never ran


def where(path: Path, row: int) -> str:
    return f"{path}: row {row}"


def parse_time(text: object, at: str) -> float | None:
    """Unix seconds, or ISO 8601 (no zone: UTC, as failclass reads nvidia-smi's times); None
    for an empty value or Slurm's ``Unknown``/``None``."""
    if text is None or str(text).strip().lower() in UNSET:
        return None
    value = str(text).strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise InputError(f"{at}: time {value[:40]!r} is neither Unix seconds nor ISO 8601") from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def parse_limit(text: object, at: str) -> float | None:
    """A time limit in seconds from Slurm's forms: minutes (``TimelimitRaw``, sacct's JSON),
    ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``; None for an empty value,
    ``UNLIMITED`` or ``Partition_Limit`` (the job's own limit is not said)."""
    value = "" if text is None else str(text).strip()
    if value.lower() in (*UNSET, "unlimited", "infinite", "partition_limit"):
        return None
    match = _LIMIT.fullmatch(value)
    if match is None:
        raise InputError(f"{at}: time limit {value[:40]!r} is not minutes or [D-]HH:MM:SS")
    days, clock = match.group(1), [int(part) for part in match.group(2).split(":")]
    if days is None and len(clock) < 3:  # MM or MM:SS; after a day, the hours come first
        clock = [0, *clock]
    hours, minutes, seconds = [*clock, 0, 0][:3]
    return float(((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds)


_LIMIT = re.compile(r"(?:(\d+)-)?(\d+(?::\d+){0,2})")


def parse_gpus(text: str, at: str) -> tuple[tuple[str, int], ...]:
    """``node01:0,1 node02:0-3`` to ((node01, 0), (node01, 1), (node02, 0), ...)."""
    gpus: list[tuple[str, int]] = []
    for part in text.split():
        node, _, indices = part.rpartition(":")
        if not node:
            raise InputError(f"{at}: GPUs {part!r} are not node:indices")
        for index in parse_indices(indices, at):
            gpus.append((node, index))
    return tuple(gpus)


def parse_indices(text: str, at: str) -> list[int]:
    """``0,2-3`` to [0, 2, 3]."""
    found: list[int] = []
    for piece in text.split(","):
        low, _, high = piece.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError as exc:
            raise InputError(f"{at}: GPU index {piece!r} is not a number or range") from exc
        if not 0 <= first <= last <= 1023:
            raise InputError(f"{at}: GPU indices {piece!r} outside 0-1023")
        found += range(first, last + 1)
    return found


def node_list(text: str) -> list[str]:
    """A node, a list of them or a Slurm host list (``gpu[01-02],cpu7``); none for Slurm's ``None assigned``."""
    if text.strip().lower() in UNSET:
        return []
    return [name for part in re.split(r"[\s;]+", text.strip()) for name in hostnames(part)]


def spread(total: int, nodes: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """A job's GPU count over its nodes: an equal share each when it divides, else "not said"."""
    share = total // len(nodes) if nodes and total and total % len(nodes) == 0 else 0
    return tuple((node, share) for node in nodes)


def allocation(
    at: str,
    job: str,
    *,
    user: str = "",
    cluster: str = "",
    kind: str = "",
    gpus: tuple[tuple[str, int], ...] = (),
    counts: tuple[tuple[str, int], ...] = (),
    start: float | None = None,
    end: float | None = None,
    log: Path | None = None,
    aliases: tuple[str, ...] = (),
    time_limit_s: float | None = None,
) -> JobAllocation:
    """A checked JobAllocation; empty fields take their defaults (a job of no kind on an
    interactive partition, as sites name them, is interactive)."""
    kind = (kind or ("interactive" if INTERACTIVE_PARTITION.search(cluster) else "batch")).strip().lower()
    if kind not in KINDS:
        raise InputError(f"{at}: kind {kind!r} is not one of {', '.join(KINDS)}")
    low, high = -math.inf if start is None else start, math.inf if end is None else end
    if high < low:
        raise InputError(f"{at}: job {job} ends before it starts")
    return JobAllocation(
        job,
        user or "unknown",
        cluster or "default",
        kind,
        gpus,
        low,
        high,
        log,
        counts,
        tuple(a for a in dict.fromkeys(aliases) if a and a != job),
        time_limit_s=time_limit_s,
    )


INTERACTIVE_PARTITION = re.compile(r"(?i)interactive|jupyter|notebook")
FIELDS = {
    "user": ("a user", "user 'unknown'"),
    "cluster": ("a cluster or partition", "cluster 'default'"),
    "kind": ("a kind", "batch, or interactive on a partition named so"),
    "place": ("GPUs or nodes", "placed only by the readings' job labels"),
    "time": ("a start and end", "held for all time"),
}


def finish(
    path: Path, shape: str, jobs: list[JobAllocation], notes: list[str], lacking: Sequence[str] = (), hint: str = ""
) -> JobsFile:
    """The file's jobs, refused when one is named twice, with one note on the ``lacking``
    fields (of FIELDS) no job has, since the file has nothing under their names (``hint``
    says what it has)."""
    seen: set[str] = set()
    for number, job in enumerate(jobs, 1):
        if job.job in seen:
            raise InputError(f"{where(path, number)}: job {job.job!r} appears twice")
        seen.add(job.job)
    if jobs and lacking:
        fields, effects = (", ".join(FIELDS[name][i] for name in lacking) for i in (0, 1))
        notes.append(f"{path}: none of the {len(jobs)} jobs has {fields}: every job is {effects}{hint}")
    return JobsFile(path, shape, jobs, tuple(notes))
