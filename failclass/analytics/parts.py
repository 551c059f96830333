"""Manifests read in parts, on a local process pool or the workers of a Dask cluster: the
workers read and convert (the costly part), the report's group-bys run here.

A JSON Lines manifest is cut into byte ranges that end at a line's end, a Parquet one into
runs of whole row groups, each about ``part_bytes``; a CSV manifest (read row by row), or
one that fits in a part, is one part. Each worker reads its part from the same path and
gives back its attempts' columns; they are joined in the manifests' order, so the table,
and every figure summed over it, is the one a single process reads. A part that does not
convert in Arrow's blocks (a bad row, a value of another type) or cannot be read sends its
whole manifest back to be read here as one process reads it: the same rows, or the same
error, naming the same line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from failclass.analytics import PART_BYTES
from failclass.analytics.records import (
    NotColumnar,
    columnar,
    compact,
    joined,
    parquet_file,
    read_attempts,
    read_file,
    read_manifest,
)
from failclass.errors import InputError

if TYPE_CHECKING:
    from failclass.executors import Executor


@dataclass(frozen=True)
class Part:
    """A manifest's rows: its bytes or row groups ``range(*span)``; all of them without one."""

    path: Path
    span: tuple[int, int] | None = None


def line_spans(path: Path, part_bytes: int) -> list[tuple[int, int]]:
    """A JSON Lines file's byte ranges of about ``part_bytes``, each ending at a line's end."""
    size = path.stat().st_size
    cuts = [0]
    with path.open("rb") as handle:
        while cuts[-1] + part_bytes < size:
            handle.seek(cuts[-1] + part_bytes - 1)
            handle.readline()  # to the end of the line holding the byte before the cut
            if handle.tell() >= size:
                break
            cuts.append(handle.tell())
    return list(zip(cuts, [*cuts[1:], size], strict=True))


def group_spans(path: Path, part_bytes: int) -> list[tuple[int, int]]:
    """A Parquet file's runs of whole row groups, each of about ``part_bytes`` of data."""
    meta = parquet_file(path).metadata
    cuts, held = [0], 0
    for group in range(meta.num_row_groups):
        held += meta.row_group(group).total_byte_size
        if held >= part_bytes and group + 1 < meta.num_row_groups:
            cuts.append(group + 1)
            held = 0
    return list(zip(cuts, [*cuts[1:], meta.num_row_groups], strict=True))


def parts(path: Path, part_bytes: int = PART_BYTES) -> list[Part]:
    """The manifest's parts, in order (one, the whole file, where it is not cut), named by
    its absolute path (a worker's working directory is another)."""
    cut = {".jsonl": line_spans, ".parquet": group_spans}.get(path.suffix)
    try:
        spans = cut(path, part_bytes) if cut else []
    except (OSError, InputError):
        spans = []  # reading it whole says why it cannot be read
    return [Part(path.absolute(), span) for span in spans] if len(spans) > 1 else [Part(path.absolute())]


def read_part(part: Part) -> bytes | None:
    """A part's attempts (in any process that can read the path) as an Arrow IPC stream (its
    buffers cut to its rows, compressed); None where it does not convert or cannot be read:
    its manifest is then read whole by the one that asked."""
    try:
        table = read_manifest(part.path) if part.span is None else columnar(part.path, part.span)
    except (NotColumnar, pa.ArrowInvalid, InputError, OSError):
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as stream:
        stream.write_table(table)
    return sink.getvalue().to_pybytes()


def read_in_parts(paths: Sequence[Path], executor: Executor | None, part_bytes: int = PART_BYTES) -> pa.Table:
    """``read_attempts(paths)``, the parts read by ``executor``'s workers where there are several."""
    cut = [parts(path, part_bytes) for path in paths]
    if executor is None or sum(len(pieces) for pieces in cut) < 2:
        return read_attempts(paths)
    from failclass.executors import run_all

    answers = iter(run_all(executor, read_part, [(part,) for pieces in cut for part in pieces]))
    tables: list[pa.Table] = []
    for path, pieces in zip(paths, cut, strict=True):
        sent = [next(answers) for _ in pieces]
        read = [compact(pa.ipc.open_stream(data).read_all()) for data in sent if data is not None]
        tables += read if len(read) == len(pieces) else [read_file(path)]
    return joined(tables)
