"""The attempts as columns for the report's group-bys: the Arrow table of
failclass.analytics.records with the arrays its tables group by (names as integer codes,
times as microseconds, runtime to failure in minutes), and the failed ones as Table 7
counts them.

Sums run in the attempts' order (numpy's bincount adds one value after another), so a
figure is the same float whatever groups it: the order the report has always summed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from failclass.matching.taxonomy import NO_SIGNATURE, Taxonomy

MICROS = 1e6


@dataclass(frozen=True)
class Coded:
    """A text column as codes into its distinct values, in order of first appearance (-1: none)."""

    codes: np.ndarray
    values: pa.Array

    @cached_property
    def names(self) -> list[str]:
        return self.values.to_pylist()


def coded(column: pa.ChunkedArray | pa.Array, missing: str | None = None) -> Coded:
    """Codes of text or of names (dictionary-encoded text); ``missing``: the name of a null."""
    if not len(column):
        return Coded(np.zeros(0, dtype=np.int32), pa.array([], pa.string()))
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)  # each chunk's dictionary holds the ones before it
    elif isinstance(column, pa.ChunkedArray):
        column = pa.table({"names": column}).unify_dictionaries().column(0)
    chunks = [chunk for chunk in getattr(column, "chunks", [column]) if len(chunk)]
    codes = np.concatenate([pc.fill_null(c.indices, -1).to_numpy(zero_copy_only=False) for c in chunks]).astype(np.int32)
    values = chunks[-1].dictionary
    if missing is not None and (codes < 0).any():
        at = pc.index_in(pa.scalar(missing), value_set=values).as_py()
        codes[codes < 0] = len(values) if at is None else at
        values = values if at is not None else pa.concat_arrays([values, pa.array([missing], values.type)])
    found, first = np.unique(codes, return_index=True)
    kept = found >= 0
    order = found[kept][np.argsort(first[kept], kind="stable")]  # in order of first appearance
    renumbered = np.full(len(values) + 1, -1, dtype=np.int32)  # the last: a null's (-1) code
    renumbered[order] = np.arange(len(order), dtype=np.int32)
    return Coded(renumbered[codes], values.take(pa.array(order, pa.int64())))


def sums(codes: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    """Per group the sum of its values, added in order."""
    return np.bincount(codes, weights=values, minlength=groups)[:groups].astype(float, copy=False)


def counts(codes: np.ndarray, groups: int) -> np.ndarray:
    return np.bincount(codes, minlength=groups)[:groups]


def distinct(codes: np.ndarray, other: np.ndarray, groups: int) -> np.ndarray:
    """Per group, how many distinct ``other`` codes it holds."""
    pairs = np.unique(codes * (int(other.max(initial=0)) + 1) + other)
    return counts(pairs // (int(other.max(initial=0)) + 1), groups)


def most_common(codes: np.ndarray, names: list[str], top: int | None = None) -> list[tuple[str, int]]:
    """(name, count) most first, ties in order of first appearance (as Counter.most_common)."""
    found, first, seen = np.unique(codes, return_index=True, return_counts=True)
    order = np.lexsort((first, -seen))[:top]
    return [(names[int(found[i])], int(seen[i])) for i in order]


def micros(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A time column as microseconds since the epoch (anything where unknown) and where it is known."""
    chunks = [chunk for chunk in column.cast(pa.int64()).chunks if len(chunk)]
    values = [np.frombuffer(c.buffers()[1], np.int64, len(c), c.offset * 8) for c in chunks]
    known = pc.is_valid(column).to_numpy(zero_copy_only=False).astype(bool)
    return (np.concatenate(values) if values else np.zeros(0, dtype=np.int64)), known


@dataclass(frozen=True)
class Failed:
    """The failed attempts as arrays: reason, job and user as codes (reasons without one
    are "No signature"), runtime to failure (NaN without a start and an end), GPUs, rows."""

    reason: Coded
    job: np.ndarray
    user: Coded
    rtf_minutes: np.ndarray
    gpus: np.ndarray
    rows: np.ndarray  # their rows in the attempts' table

    def __len__(self) -> int:
        return len(self.rows)

    def demand(self) -> np.ndarray:
        """GPUs as Table 7 counts them: at least one."""
        return np.maximum(self.gpus, 1)


class Attempts:
    """Attempts as columns (failclass.analytics.records.SCHEMA), in their manifests' order."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __len__(self) -> int:
        return self.table.num_rows

    def column(self, name: str) -> pa.ChunkedArray:
        return self.table.column(name)

    def micros(self, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A time column at these rows: microseconds, and where known."""
        return micros(self.column(name).take(pa.array(rows, pa.int64())))

    @cached_property
    def gpus(self) -> np.ndarray:
        return self.column("gpus").cast(pa.int32()).to_numpy()

    @cached_property
    def rtf_minutes(self) -> np.ndarray:
        """Runtime (to failure) in minutes: end - start, at least 0; NaN without both."""
        (start, has_start), (end, has_end) = micros(self.column("start_time")), micros(self.column("end_time"))
        np.subtract(end, start, out=end)
        minutes = end.astype(float)
        del end, start
        np.maximum(np.divide(minutes, MICROS, out=minutes), 0.0, out=minutes)
        np.divide(minutes, 60, out=minutes)
        minutes[~(has_start & has_end)] = np.nan
        return minutes

    @cached_property
    def by_job(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows in order of job id, then attempt number (as they come where those tie),
        and each one's job as its rank in that order."""
        keys = [("job_id", "ascending"), ("attempt", "ascending")]
        order = pc.sort_indices(self.table.select(["job_id", "attempt"]), sort_keys=keys)
        ids = self.column("job_id").take(order)
        started = pc.not_equal(ids.slice(1), ids.slice(0, max(len(ids) - 1, 0))).to_numpy(zero_copy_only=False)
        del ids
        job = np.zeros(len(order), dtype=np.int32)
        np.cumsum(started, out=job[1:])
        return order.to_numpy().astype(np.int32), job

    def job_codes(self) -> np.ndarray:
        """Each row's job as its rank in the job order."""
        rows, job = self.by_job
        codes = np.empty(len(rows), dtype=np.int32)
        codes[rows] = job
        return codes

    def job_count(self) -> int:
        return int(self.by_job[1][-1]) + 1 if len(self) else 0

    def job_ids(self) -> pa.Array:
        """The job ids in the job order."""
        rows, job = self.by_job
        firsts = rows[np.r_[True, job[1:] != job[:-1]]] if len(rows) else rows
        return self.column("job_id").take(pa.array(firsts, pa.int64())).combine_chunks()

    @cached_property
    def users(self) -> Coded:
        return coded(self.column("user"))

    def reasons(self) -> pa.ChunkedArray:
        """Each attempt's reason, "No signature" where it has none."""
        return pc.fill_null(self.column("reason").cast(pa.string()), NO_SIGNATURE)

    def failure(self, taxonomy: Taxonomy) -> np.ndarray:
        """What Table 7 counts: attempts that failed, and killed ones that were preempted; a
        job killed by its user is no failure (it counts in Table 6)."""
        status = self.column("status")
        preempted = pc.is_in(self.column("reason"), pa.array(sorted(taxonomy.preemptions), pa.string()))
        killed = pc.and_(pc.equal(status, "killed"), pc.fill_null(preempted, False))
        return pc.or_(pc.is_in(status, pa.array(["failed", "unsuccessful"])), killed).to_numpy(zero_copy_only=False)

    def failed(self, taxonomy: Taxonomy) -> Failed:
        rows = np.flatnonzero(self.failure(taxonomy))
        taken = pa.array(rows, pa.int64())
        return Failed(
            reason=coded(self.column("reason").take(taken), missing=NO_SIGNATURE),
            job=self.job_codes()[rows],
            user=coded(self.column("user").take(taken)),
            rtf_minutes=self.rtf_minutes[rows],
            gpus=self.gpus[rows],
            rows=rows,
        )

    def filter(self, mask: pa.ChunkedArray | np.ndarray) -> Attempts:
        return Attempts(self.table.filter(mask))

    def times(self) -> pa.ChunkedArray:
        """When each attempt happened, for time ranges: its end, else start, submission, recording."""
        return pc.coalesce(*(self.column(name) for name in ("end_time", "start_time", "submit_time", "recorded_at")))

    def span(self) -> tuple[datetime | None, datetime | None]:
        """The first and last attempt times."""
        bounds = pc.min_max(self.times())
        return bounds["min"].as_py(), bounds["max"].as_py()


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)
MMAP_ABOVE = 256 * 1024  # blocks this large are mapped apart, and unmapped when freed


def give_back_freed_memory() -> None:
    """Allocate so that freed memory goes back to the system at once: Arrow's tables from
    the system allocator rather than its own pool, and (on glibc) large blocks, numpy's
    arrays among them, mapped apart. A million-attempt report then peaks near what it
    holds (under 280 MB, not 400: benchmarks/analytics_scale.py), for a little more time."""
    import ctypes
    import ctypes.util

    pa.set_memory_pool(pa.system_memory_pool())
    libc = ctypes.util.find_library("c")
    if libc and hasattr(ctypes.CDLL(libc), "mallopt"):
        ctypes.CDLL(libc).mallopt(M_MMAP_THRESHOLD, MMAP_ABOVE)
