"""failclass's own columnar sample table in Parquet: columns node, gpu, ts, util,
mem_used, mem_total and job (strings for node and job, dictionary-encoded on disk), and
where the table has it, model (the name each GPU reports, for right-sizing advice).

Large tables are read in parts (``parts``, ``read_part``): consecutive row groups of about
``PART_ROWS`` readings, each holding whole jobs. A table whose jobs' rows lie together (as
the writer keeps them) is measured part by part, in one process or many, with the figures
of the whole; a part is never smaller than a row group."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from failclass.errors import InputError
from failclass.waste import PART_ROWS
from failclass.waste.samples import GpuSamples, TotalOrigin

COLUMNS = ("node", "gpu", "ts", "util", "mem_used", "mem_total", "job")
MODEL = "model"  # optional


def write_parquet(samples: GpuSamples, path: Path, writer: pq.ParquetWriter | None = None) -> pq.ParquetWriter:
    """Append ``samples`` as one row group; returns the writer to append more (close it after)."""
    table = to_arrow(samples)
    writer = writer or pq.ParquetWriter(str(path), table.schema, compression="zstd")
    writer.write_table(table)
    return writer


def to_arrow(samples: GpuSamples) -> pa.Table:
    def names(values: tuple[str, ...], codes: np.ndarray) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(values or ("",), pa.string()))

    return pa.table(
        {
            "node": names(samples.nodes, samples.node),
            "gpu": pa.array(samples.gpu, pa.int16()),
            "ts": pa.array(samples.ts, pa.float64()),
            "util": pa.array(samples.util, pa.float32()),
            "mem_used": pa.array(samples.mem_used, pa.float32()),
            "mem_total": pa.array(samples.mem_total, pa.float32()),
            "job": names(samples.jobs, samples.job),
        }
    )


def read_parquet(path: Path) -> GpuSamples:
    from failclass.waste.samples import concat

    return concat([read_part(part) for part in parts(path)])


@dataclass(frozen=True)
class Part:
    """Row groups ``first`` to ``stop`` of one table, as whole jobs: the leading rows of a job
    that began in the group before are the part before's, and the job still running at the
    last group is followed into the groups after."""

    path: Path
    first: int
    stop: int
    rows: int  # readings in its own groups


def parts(path: Path, rows: int = PART_ROWS) -> list[Part]:
    """The table cut into parts of about ``rows`` readings, at row-group boundaries."""
    handle = _open(path)
    found: list[Part] = []
    first = taken = 0
    groups = handle.metadata.num_row_groups
    for group in range(groups):
        taken += handle.metadata.row_group(group).num_rows
        if taken >= rows or group == groups - 1:
            found.append(Part(path, first, group + 1, taken))
            first, taken = group + 1, 0
    return found


def read_part(part: Part) -> GpuSamples:
    """The part's readings, with its jobs whole (see ``Part``)."""
    from failclass.waste.samples import concat

    handle = _open(part.path)
    skip = _job_at(handle, part.path, part.first - 1) if part.first > 0 else ""
    pieces = []
    for group in range(part.first, part.stop):
        samples = _group(handle, part.path, group)
        if skip:
            lead = _leading(samples, skip)
            skip = skip if lead == len(samples) else ""
            samples = samples.take(np.arange(lead, len(samples)))
        pieces.append(samples)
    follow = "" if skip else _job_at(handle, part.path, part.stop - 1)  # a part all of the job before follows nothing
    for group in range(part.stop, handle.metadata.num_row_groups if follow else part.stop):
        samples = _group(handle, part.path, group)
        lead = _leading(samples, follow)
        pieces.append(samples.take(np.arange(lead)))
        if lead < len(samples):
            break
    return concat(pieces)


def _open(path: Path) -> pq.ParquetFile:
    try:
        handle = pq.ParquetFile(str(path))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from exc
    missing = set(COLUMNS) - set(handle.schema_arrow.names)
    if missing:
        raise InputError(f"{path}: Parquet without the columns {sorted(missing)}")
    return handle


def _group(handle: pq.ParquetFile, path: Path, group: int) -> GpuSamples:
    wanted = [*COLUMNS, *([MODEL] if MODEL in handle.schema_arrow.names else [])]
    try:
        samples = from_arrow(handle.read_row_group(group, columns=wanted))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: damaged Parquet: {exc}") from exc
    samples.check(str(path))
    return replace(samples, totals=_origins(samples))


def _job_at(handle: pq.ParquetFile, path: Path, group: int) -> str:
    """The job of a group's last row ("" for a reading of no job: no job runs on)."""
    try:
        column = handle.read_row_group(group, columns=["job"]).column("job")
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: damaged Parquet: {exc}") from exc
    return str(column[-1].as_py() or "") if len(column) else ""


def _leading(samples: GpuSamples, job: str) -> int:
    """How many of the first rows are ``job``'s."""
    theirs = np.asarray([name == job for name in samples.jobs] or [False])[samples.job]
    return len(theirs) if theirs.all() else int(np.argmin(theirs))


def _origins(samples: GpuSamples) -> dict[tuple[str, int], TotalOrigin]:
    """Each GPU's memory total is the table's, where it has one."""
    slot = samples.node.astype(np.int64) * 1024 + samples.gpu
    have = set(np.unique(slot[np.isfinite(samples.mem_total)]).tolist())
    known, empty = TotalOrigin(True, "Parquet mem_total"), TotalOrigin(False, "the Parquet table's mem_total is empty (NaN)")
    return {(samples.nodes[s // 1024], s % 1024): known if s in have else empty for s in np.unique(slot).tolist()}


def from_arrow(batch: pa.RecordBatch | pa.Table) -> GpuSamples:
    def codes(column: pa.Array | pa.ChunkedArray) -> tuple[tuple[str, ...], np.ndarray]:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if not pa.types.is_dictionary(column.type):
            column = column.dictionary_encode()
        return tuple(column.dictionary.to_pylist()), column.indices.to_numpy(zero_copy_only=False).astype(np.int32)

    nodes, node = codes(batch.column("node"))
    jobs, job = codes(batch.column("job"))
    if "" not in jobs:
        jobs, job = ("", *jobs), job + 1

    def numbers(name: str, dtype: type) -> np.ndarray:
        return batch.column(name).to_numpy(zero_copy_only=False).astype(dtype, copy=False)

    gpu = numbers("gpu", np.int16)
    models: dict[tuple[str, int], str] = {}
    if MODEL in batch.schema.names:
        names, model = codes(pc.fill_null(pc.cast(batch.column(MODEL), pa.string()), ""))
        slots = np.unique(np.stack([node.astype(np.int64) * 1024 + gpu, model]), axis=1)
        models = {(nodes[slot // 1024], slot % 1024): names[code] for slot, code in slots.T.tolist() if names[code]}
    return GpuSamples(
        nodes,
        jobs,
        node,
        gpu,
        numbers("ts", np.float64),
        numbers("util", np.float32),
        numbers("mem_used", np.float32),
        numbers("mem_total", np.float32),
        job,
        models=models,
    )
