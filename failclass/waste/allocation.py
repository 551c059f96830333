"""Which job held which GPU when: the allocation table that ties GPU readings to jobs.

A job names its GPUs exactly (``gpus``: node and index), or only how many it held on a
node (``counts``; ``sacct`` and Kubernetes give no index), or nothing at all when the
readings name their job themselves (DCGM's ``hpc_job`` or pod labels; ``aliases`` are the
other names the readings may use, such as an array task's ``1234_7`` or a pod of a
multi-pod job). The jobs files that give these are read by ``failclass.waste.jobfiles``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from failclass.waste.samples import UNKNOWN_JOB, GpuSamples

KINDS = ("batch", "interactive")
_SLOT = 1024  # GPU indices are below this (samples.check)


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
    counts: tuple[tuple[str, int], ...] = ()  # (node, GPUs held there, 0: not said) without their indices
    aliases: tuple[str, ...] = ()
    parts: tuple[JobAllocation, ...] = ()  # pieces held over spans of their own (a Job's pods), placed each over its span
    time_limit_s: float | None = None  # the time limit it asked for, where the jobs file says


@dataclass
class Matching:
    """What tying readings to jobs found, over every batch: the makings of the warnings."""

    readings: int = 0
    dropped: int = 0  # readings that named no job and lay on no job's GPU
    dropped_gpus: set[tuple[str, int]] = field(default_factory=set)
    matched: set[str] = field(default_factory=set)  # jobs of the jobs file that got readings
    labelled: set[str] = field(default_factory=set)  # job names the readings carried themselves
    reading_nodes: set[str] = field(default_factory=set)
    ambiguous: dict[str, str] = field(default_factory=dict)  # job -> why its count could not be placed
    whole_nodes: set[str] = field(default_factory=set)  # jobs that named nodes but no GPU count: given their free GPUs
    span: tuple[float, float] = (math.inf, -math.inf)

    def absorb(self, other: Matching) -> None:
        """Add what another part of the readings found."""
        self.readings += other.readings
        self.dropped += other.dropped
        for name in ("dropped_gpus", "matched", "labelled", "reading_nodes", "whole_nodes"):
            getattr(self, name).update(getattr(other, name))
        self.ambiguous.update(other.ambiguous)
        self.span = (min(self.span[0], other.span[0]), max(self.span[1], other.span[1]))


def assign(samples: GpuSamples, jobs: Sequence[JobAllocation], matching: Matching | None = None) -> GpuSamples:
    """Tag each reading that names no job with the job that held its GPU at that time;
    readings that named their job (or one of its aliases) keep it. Readings of no job are dropped."""
    matching = matching if matching is not None else Matching()
    renamed = _aliases(jobs)
    final = [renamed.get(name, name) for name in samples.jobs]
    index = {name: code for code, name in enumerate(dict.fromkeys(final))}
    names = list(index)
    job = np.asarray([index[name] for name in final] or [0], dtype=np.int32)[samples.job]
    matching.labelled |= set(names) - {UNKNOWN_JOB}
    unknown = np.asarray([name == UNKNOWN_JOB for name in names] or [True])[job]
    if unknown.any():
        rows = np.flatnonzero(unknown)
        for number, positions in _placements(samples.take(rows), jobs, names, matching):
            job[rows[positions]] = number
    kept = np.asarray([name != UNKNOWN_JOB for name in names])[job]
    _tally(samples, job, kept, names, jobs, matching)
    return samples.with_jobs(tuple(names), job).take(np.flatnonzero(kept))


def node_names(reading_nodes: Sequence[str]) -> dict[str, int]:
    """Reading node name -> its code, and each short name (no domain, no port) and each
    ``_``-separated part of the name where only one reading node has it: a jobs file's
    ``gpu01`` finds DCGM's ``gpu01.cluster.local`` and the log ``nvidia-smi_gpu01.csv``."""
    codes = {name: code for code, name in enumerate(reading_nodes)}
    short: dict[str, set[int]] = {}
    for code, name in enumerate(reading_nodes):
        for key in {_short(name), *(part for part in name.split("_") if part)}:
            short.setdefault(key, set()).add(code)
    return {**{name: found.pop() for name, found in short.items() if len(found) == 1}, **codes}


def find_node(name: str, known: dict[str, int]) -> int | None:
    return known.get(name, known.get(_short(name)))


def _short(name: str) -> str:
    host = re.sub(r":\d+$", "", name)
    return host if re.fullmatch(r"[\d.]+", host) else host.split(".", 1)[0]


def _aliases(jobs: Sequence[JobAllocation]) -> dict[str, str]:
    return {alias: job.job for job in jobs for alias in job.aliases if alias != job.job}


def _placements(
    samples: GpuSamples, jobs: Sequence[JobAllocation], names: list[str], matching: Matching
) -> Iterator[tuple[int, np.ndarray]]:
    """(job code, positions in ``samples``) for each placed job that overlaps the readings;
    new job names are appended to ``names``. GPUs named by index go first; a job that says
    only how many GPUs it held on a node takes the GPUs of that node no one else held then,
    when that leaves no doubt which they are."""
    slot = samples.node.astype(np.int64) * _SLOT + samples.gpu
    order = np.lexsort((samples.ts, slot))
    slots, times = slot[order], samples.ts[order]
    known = node_names(samples.nodes)
    code = {name: index for index, name in enumerate(names)}
    low, high = float(samples.ts.min()), float(samples.ts.max())
    taken = np.zeros(len(order), dtype=bool)
    live = [(job.job, part) for job in jobs for part in (job.parts or (job,)) if not (part.end < low or part.start > high)]

    def rows(key: int, job: JobAllocation) -> np.ndarray:
        first, last = np.searchsorted(slots, key, "left"), np.searchsorted(slots, key, "right")
        lo = first + np.searchsorted(times[first:last], job.start, "left")
        hi = first + np.searchsorted(times[first:last], job.end, "right")
        return np.arange(lo, hi)[~taken[lo:hi]]

    def place(name: str, job: JobAllocation, keys: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
        for key in keys:
            found = rows(key, job)
            if len(found):
                taken[found] = True
                if name not in code:
                    code[name] = len(names)
                    names.append(name)
                yield code[name], order[found]

    for name, job in live:
        keys = [node * _SLOT + gpu for node, gpu in ((find_node(n, known), g) for n, g in job.gpus) if node is not None]
        yield from place(name, job, keys)
    present = np.unique(slots)
    for name, job in live:
        keys = []
        for node_name, count in job.counts:
            node = find_node(node_name, known)
            if node is None:
                continue
            free = [k for k in present[(present // _SLOT) == node].tolist() if len(rows(k, job))]
            if count and len(free) > count:
                matching.ambiguous[name] = (
                    f"{count} GPUs on {node_name} without their indices, and {len(free)} of its GPUs held by no other job then"
                )
                continue
            if not count and free:
                matching.whole_nodes.add(name)
            keys += free
        yield from place(name, job, keys)


def _tally(
    samples: GpuSamples, job: np.ndarray, kept: np.ndarray, names: list[str], jobs: Sequence[JobAllocation], matching: Matching
) -> None:
    matching.readings += len(samples)
    matching.dropped += int((~kept).sum())
    for node, gpu in set(zip(samples.node[~kept].tolist(), samples.gpu[~kept].tolist(), strict=False)):
        matching.dropped_gpus.add((samples.nodes[node], gpu))
    present = {names[c] for c in np.unique(job[kept]).tolist()}
    matching.matched |= {j.job for j in jobs if j.job in present}
    matching.reading_nodes |= set(samples.nodes)
    if len(samples):
        matching.span = (min(matching.span[0], float(samples.ts.min())), max(matching.span[1], float(samples.ts.max())))
