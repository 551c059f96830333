"""Utilisation samples of many GPUs as one columnar table, the contract between the
format readers and the measures.

One row is one reading of one GPU: node, GPU index on the node, time (Unix seconds),
utilisation (percent), framebuffer memory used and total (MiB; NaN when the source has
none) and, when the source names it (DCGM's ``hpc_job`` or ``pod`` label), the job. Beside
the rows, ``totals`` says for each GPU where its memory total came from, or why it has none,
and ``models`` the model each GPU reports where the source names it (nvidia-smi's ``name``,
DCGM's ``modelName``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from failclass.errors import InputError

UNKNOWN_JOB = ""


@dataclass(frozen=True)
class TotalOrigin:
    """Where a GPU's memory total came from (``known``), or why it has none."""

    known: bool
    text: str


@dataclass(frozen=True)
class GpuSamples:
    """Readings as parallel arrays; ``node`` and ``job`` are codes into ``nodes`` and ``jobs``."""

    nodes: tuple[str, ...]
    jobs: tuple[str, ...]
    node: np.ndarray  # int32
    gpu: np.ndarray  # int16
    ts: np.ndarray  # float64, Unix seconds
    util: np.ndarray  # float32, percent
    mem_used: np.ndarray  # float32, MiB
    mem_total: np.ndarray  # float32, MiB
    job: np.ndarray  # int32
    totals: Mapping[tuple[str, int], TotalOrigin] = field(default_factory=dict)  # (node, gpu) -> origin
    models: Mapping[tuple[str, int], str] = field(default_factory=dict)  # (node, gpu) -> the model it reports

    def __len__(self) -> int:
        return len(self.ts)

    def __post_init__(self) -> None:
        n = len(self.ts)
        for name in ("node", "gpu", "util", "mem_used", "mem_total", "job"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"column {name} has {len(getattr(self, name))} rows, ts has {n}")

    @staticmethod
    def from_rows(
        rows: Iterable[tuple[str, int, float, float, float, float, str]],
        source: str,
        totals: Mapping[tuple[str, int], TotalOrigin] | None = None,
        models: Mapping[tuple[str, int], str] | None = None,
    ) -> GpuSamples:
        """Build from (node, gpu, ts, util, mem_used, mem_total, job) tuples, checking ranges."""
        nodes: dict[str, int] = {}
        jobs: dict[str, int] = {UNKNOWN_JOB: 0}
        columns: tuple[list[float], ...] = ([], [], [], [], [], [], [])
        for node, gpu, ts, util, used, total, job in rows:
            for column, value in zip(
                columns,
                (nodes.setdefault(node, len(nodes)), gpu, ts, util, used, total, jobs.setdefault(job, len(jobs))),
                strict=False,
            ):
                column.append(value)
        samples = GpuSamples(
            tuple(nodes),
            tuple(jobs),
            np.asarray(columns[0], dtype=np.int32),
            np.asarray(columns[1], dtype=np.int16),
            np.asarray(columns[2], dtype=np.float64),
            np.asarray(columns[3], dtype=np.float32),
            np.asarray(columns[4], dtype=np.float32),
            np.asarray(columns[5], dtype=np.float32),
            np.asarray(columns[6], dtype=np.int32),
            dict(totals or {}),
            dict(models or {}),
        )
        samples.check(source)
        return samples

    def check(self, source: str) -> None:
        """Refuse readings no GPU can produce: an InputError naming the source and the value."""
        checks = (
            ("utilisation outside 0-100 %", (self.util < 0) | (self.util > 100)),
            ("negative or non-finite memory", (self.mem_used < 0) | np.isinf(self.mem_used)),
            ("negative or non-finite memory total", (self.mem_total < 0) | np.isinf(self.mem_total)),
            ("time outside 1970-2100", ~np.isfinite(self.ts) | (self.ts < 0) | (self.ts > 4_102_444_800)),
            ("GPU index outside 0-1023", (self.gpu < 0) | (self.gpu > 1023)),
        )
        for what, bad in checks:
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise InputError(
                    f"{source}: {what} (reading {row + 1}: node {self.nodes[self.node[row]]}, gpu {self.gpu[row]}, "
                    f"util {self.util[row]}, memory {self.mem_used[row]}/{self.mem_total[row]} MiB, time {self.ts[row]})"
                )

    def sorted(self) -> GpuSamples:
        """Ordered by job, node, GPU and time: the order the measures need."""
        order = np.lexsort((self.ts, self.gpu, self.node, self.job))
        return self.take(order)

    def take(self, rows: np.ndarray) -> GpuSamples:
        return GpuSamples(
            self.nodes,
            self.jobs,
            self.node[rows],
            self.gpu[rows],
            self.ts[rows],
            self.util[rows],
            self.mem_used[rows],
            self.mem_total[rows],
            self.job[rows],
            self.totals,
            self.models,
        )

    def with_jobs(self, jobs: tuple[str, ...], job: np.ndarray) -> GpuSamples:
        return replace(self, jobs=jobs, job=job)


def concat(parts: Sequence[GpuSamples]) -> GpuSamples:
    """One table from several sources, node and job codes merged by name."""
    if not parts:
        node, gpu, ts, util, used, total, job = (np.empty(0, dtype=t) for t in _DTYPES)
        return GpuSamples((), (UNKNOWN_JOB,), node, gpu, ts, util, used, total, job)
    nodes: dict[str, int] = {}
    jobs: dict[str, int] = {UNKNOWN_JOB: 0}
    node_codes, job_codes = [], []
    for part in parts:
        node_map = np.asarray([nodes.setdefault(n, len(nodes)) for n in part.nodes] or [0], dtype=np.int32)
        job_map = np.asarray([jobs.setdefault(j, len(jobs)) for j in part.jobs] or [0], dtype=np.int32)
        node_codes.append(node_map[part.node])
        job_codes.append(job_map[part.job])
    return GpuSamples(
        tuple(nodes),
        tuple(jobs),
        np.concatenate(node_codes),
        np.concatenate([p.gpu for p in parts]),
        np.concatenate([p.ts for p in parts]),
        np.concatenate([p.util for p in parts]),
        np.concatenate([p.mem_used for p in parts]),
        np.concatenate([p.mem_total for p in parts]),
        np.concatenate(job_codes),
        merge_totals([part.totals for part in parts]),
        {key: model for part in parts for key, model in part.models.items()},
    )


def merge_totals(parts: Iterable[Mapping[tuple[str, int], TotalOrigin]]) -> dict[tuple[str, int], TotalOrigin]:
    """One GPU's origins from several sources: a known total wins over a reason for none."""
    merged: dict[tuple[str, int], TotalOrigin] = {}
    for part in parts:
        for key, origin in part.items():
            if origin.known or key not in merged:
                merged[key] = origin
    return merged


_DTYPES = (np.int32, np.int16, np.float64, np.float32, np.float32, np.float32, np.int32)
