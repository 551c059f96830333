"""failclass's own columnar sample table in Parquet: columns node, gpu, ts, util,
mem_used, mem_total and job (strings for node and job, dictionary-encoded on disk), and
where the table has it, model (the name each GPU reports, for right-sizing advice).

Large tables are read a row group at a time by ``iter_parquet``; the writer keeps each
job's rows together, so a measure over batches never splits a job."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from failclass.errors import InputError
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

    return concat(list(iter_parquet(path)))


def iter_parquet(path: Path, batch_rows: int = 4_000_000) -> Iterator[GpuSamples]:
    try:
        handle = pq.ParquetFile(str(path))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from exc
    missing = set(COLUMNS) - set(handle.schema_arrow.names)
    if missing:
        raise InputError(f"{path}: Parquet without the columns {sorted(missing)}")
    try:
        wanted = [*COLUMNS, *([MODEL] if MODEL in handle.schema_arrow.names else [])]
        for batch in handle.iter_batches(batch_size=batch_rows, columns=wanted):
            samples = from_arrow(batch)
            samples.check(str(path))
            yield replace(samples, totals=_origins(samples))
    except pa.ArrowInvalid as exc:
        raise InputError(f"{path}: damaged Parquet: {exc}") from exc


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
