"""Classified attempts as columns (one Arrow table, SCHEMA), from manifests (CSV, JSON
Lines, Parquet) and from the store.

A manifest (.csv, .jsonl or .parquet) row is one attempt: job_id, attempt, user, vc,
status (passed / failed / killed / unsuccessful), submit_time, start_time, end_time (ISO
8601; one without a zone is UTC), gpus, nodes, exit_code, inputs, logs, and the failure
reason (a taxonomy id) for attempts that did not pass. Only job_id, user and status are
required; lists (nodes, inputs, logs) are JSON lists, or ';'-separated in CSV. Rows of
`failclass batch` results (those with classified_by, evidence_log or error) read the same
way, with their classification (source, rule, confidence); the store's rows bring the
decision too.

JSON Lines and Parquet are read by Arrow in blocks and converted column by column. A file
that does not convert so (a bad row, a value of another type, a time in a form Arrow does
not read) is read again row by row, which either accepts it (a number written as text) or
names the first bad row's line: one error, never a skipped row.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from failclass.errors import InputError

if TYPE_CHECKING:
    from failclass.store.views import StoredAttempt

REQUIRED = ("job_id", "user", "status")
UNKNOWN_USER = "unknown"  # batch results without a manifest: whose attempt it was is not known
BATCH_MARKS = ("classified_by", "evidence_log", "error")  # a row of `failclass batch` results has one
TIME = pa.timestamp("us", tz="UTC")
TEXT, NAMES = pa.string(), pa.list_(pa.string())
NAME = pa.dictionary(pa.int32(), TEXT)  # text of few distinct values: codes into them
SCHEMA = pa.schema(
    [
        ("job_id", TEXT),
        ("attempt", pa.int64()),
        ("user", NAME),
        ("vc", NAME),
        ("status", NAME),
        ("start_time", TIME),
        ("end_time", TIME),
        ("gpus", pa.int64()),
        ("reason", NAME),
        ("submit_time", TIME),
        ("nodes", NAMES),
        ("exit_code", pa.int64()),
        ("inputs", NAMES),
        ("logs", NAMES),
        ("source", NAME),  # what classified it: rule, model, ...
        ("rule_id", NAME),
        ("confidence", pa.float64()),
        ("action", NAME),  # the decision, where one was made
        ("clause", NAME),  # the policy clause behind it
        ("recorded_at", TIME),  # the store's columns from here on
        ("checkpoint_basis", TEXT),  # where the log was read when the attempt was reported
        ("last_checkpoint_at", TIME),
        ("origin_node", TEXT),  # where its failure started, where its logs were read as ranks
        ("origin_gpu", pa.int64()),
    ]
)
MANIFEST_COLUMNS = SCHEMA.names[: SCHEMA.get_field_index("clause") + 1]
TIMES = ("start_time", "end_time", "submit_time")
TEXTS = ("job_id", "user", "vc", "status", "reason", "source", "rule_id", "action", "clause")
# How JSON Lines are parsed: each manifest column as JSON writes it (times and names as text)
JSON_SCHEMA = pa.schema(
    [pa.field(n, TEXT if n in TIMES or n in TEXTS else SCHEMA.field(n).type) for n in MANIFEST_COLUMNS]
    + [pa.field(n, TEXT) for n in ("log", *BATCH_MARKS)]
)
BLOCK = 1 << 20  # bytes of JSON Lines parsed at a time
ROWS = 65536  # rows of Parquet or CSV converted at a time


class NotColumnar(Exception):
    """A block that Arrow's conversion refuses: the file is read row by row."""


def _time(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        return [part for part in value.split(";") if part]
    return [str(part) for part in value]


def row_values(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One manifest row as the table's manifest columns; a missing or bad value names ``where``."""
    if any(mark in row for mark in BATCH_MARKS):
        row = {"user": UNKNOWN_USER, "status": "failed", **{k: v for k, v in row.items() if v not in (None, "")}}
    missing = [key for key in REQUIRED if not row.get(key)]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    try:
        return {
            "job_id": str(row["job_id"]),
            "attempt": int(row.get("attempt") or 1),
            "user": str(row["user"]),
            "vc": str(row.get("vc") or "default"),
            "status": str(row["status"]),
            "gpus": int(row.get("gpus") or 0),
            "reason": _text(row.get("reason")),
            "exit_code": int(row["exit_code"]) if row.get("exit_code") not in (None, "") else None,
            "logs": _list(row.get("logs") or row.get("log")),
            "confidence": float(row["confidence"]) if row.get("confidence") not in (None, "") else None,
            **{name: _time(row.get(name)) for name in TIMES},
            **{name: _list(row.get(name)) for name in ("nodes", "inputs")},
            **{name: _text(row.get(name)) for name in ("source", "rule_id", "action", "clause")},
        }
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"{where}: bad value ({exc})") from None


def table_of(values: Iterable[Mapping[str, Any]]) -> pa.Table:
    """The table of rows given as its columns' Python values (missing columns null, missing
    lists empty)."""
    batches = []
    chunk: list[Mapping[str, Any]] = []
    for value in values:
        chunk.append(value)
        if len(chunk) == ROWS:
            batches.append(pa.Table.from_pylist(chunk, schema=SCHEMA))
            chunk = []
    batches.append(pa.Table.from_pylist(chunk, schema=SCHEMA))
    table = pa.concat_tables(batches).unify_dictionaries()
    for name in ("nodes", "inputs", "logs"):
        table = table.set_column(SCHEMA.get_field_index(name), SCHEMA.field(name), _names(table.column(name)))
    return table


def _nonempty(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Text with "" as null (the same array where it has no "")."""
    text = column.cast(TEXT)
    empty = pc.equal(text, "")
    return pc.if_else(empty, pa.scalar(None, TEXT), text) if pc.any(empty).as_py() else text


def _filled(column: pa.ChunkedArray, value: Any) -> pa.ChunkedArray:
    """Nulls as ``value`` (the same array where it has none)."""
    return pc.fill_null(column, value) if column.null_count else column


def _times(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_timestamp(column.type):
        return column.cast(TIME) if column.type.tz else pc.assume_timezone(column, "UTC").cast(TIME)
    text = _nonempty(column)
    try:
        return text.cast(TIME)
    except pa.ArrowInvalid:
        return pc.assume_timezone(text.cast(pa.timestamp("us")), "UTC").cast(TIME)  # no zone: UTC


@cache
def _zeros() -> pa.Buffer:
    """Zeros for every block's columns without values: a JSON Lines row is at least 3 bytes."""
    return pa.py_buffer(np.zeros(max(BLOCK // 3, ROWS) * 8 + 8, dtype=np.uint8))


def _absent(size: int, kind: pa.DataType) -> pa.Array:
    """A column without values (all null; lists empty), on a zeroed buffer that the columns
    of that many rows share."""
    zeros = _zeros() if size * 8 + 8 <= _zeros().size else pa.py_buffer(np.zeros(size * 8 + 8, dtype=np.uint8))
    if pa.types.is_list(kind):
        return pa.Array.from_buffers(kind, size, [None, zeros], children=[pa.array([], kind.value_type)])
    if pa.types.is_string(kind):
        return pa.Array.from_buffers(kind, size, [zeros, zeros, pa.py_buffer(b"")], null_count=size)
    if pa.types.is_dictionary(kind):
        return pa.DictionaryArray.from_arrays(_absent(size, kind.index_type), pa.array([], kind.value_type))
    return pa.Array.from_buffers(kind, size, [zeros, zeros], null_count=size)


def _names(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Lists of names: JSON lists as they are, text ';'-separated (converted value by value)."""
    if column.null_count == len(column):
        return pa.chunked_array([_absent(len(column), NAMES)])
    if pa.types.is_list(column.type):
        return pc.if_else(column.is_null(), _absent(len(column), NAMES), column.cast(NAMES))
    return pa.chunked_array([pa.array([_list(value) for value in column.to_pylist()], NAMES)])


def _text_columns(column: Callable[[str], pa.ChunkedArray], size: int) -> dict[str, pa.ChunkedArray]:
    """The text columns, "" as null; a row of batch results without user or status is
    an unknown user's failed attempt."""
    text = {name: _nonempty(column(name)) for name in TEXTS}
    marked = [pc.is_valid(column(mark)) for mark in BATCH_MARKS]
    batch = pc.or_(pc.or_(marked[0], marked[1]), marked[2])
    if size and pc.any(batch).as_py():
        text["user"] = pc.if_else(pc.and_(batch, text["user"].is_null()), UNKNOWN_USER, text["user"])
        text["status"] = pc.if_else(pc.and_(batch, text["status"].is_null()), "failed", text["status"])
    if any(text[name].null_count for name in REQUIRED):
        raise NotColumnar
    return text


def columns_of(block: pa.Table) -> pa.Table:
    """A block of manifest rows (of any column types Arrow casts) as the table's columns;
    NotColumnar where a row lacks a required value or a value does not cast."""
    size = block.num_rows

    def column(name: str) -> pa.ChunkedArray:
        return block.column(name) if name in block.column_names else pa.chunked_array([pa.nulls(size)])

    try:
        text = _text_columns(column, size)
        attempt = _filled(column("attempt").cast(pa.int64()), 1)
        logs = _names(column("logs"))
        unlisted = pc.equal(pc.list_value_length(logs), 0)
        values = {
            **text,
            "vc": _filled(text["vc"], "default"),
            "attempt": pc.if_else(pc.equal(attempt, 0), 1, attempt) if pc.any(pc.equal(attempt, 0)).as_py() else attempt,
            "gpus": _filled(column("gpus").cast(pa.int64()), 0),
            "exit_code": column("exit_code").cast(pa.int64()),
            "confidence": column("confidence").cast(pa.float64()),
            "logs": pc.if_else(unlisted, _names(column("log")), logs) if pc.any(unlisted).as_py() else logs,
            **{name: _names(column(name)) for name in ("nodes", "inputs")},
            **{name: _times(column(name)) for name in TIMES},
        }
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise NotColumnar from exc
    return pa.table(
        [_kept(values.get(name), size, field.type) for name, field in zip(SCHEMA.names, SCHEMA, strict=True)], schema=SCHEMA
    )


def _has_values(column: pa.ChunkedArray | pa.Array, kind: pa.DataType) -> bool:
    """Whether a column holds a value (one not null, a list not empty)."""
    if column.null_count == len(column):
        return False
    return not pa.types.is_list(kind) or bool(pc.max(pc.list_value_length(column)).as_py())


def _kept(column: pa.ChunkedArray | None, size: int, kind: pa.DataType) -> pa.ChunkedArray | pa.Array:
    """A converted column (names as codes); one without values costs nothing."""
    if column is None or not _has_values(column, kind):
        return _absent(size, kind)
    return column.dictionary_encode() if pa.types.is_dictionary(kind) else column


def compact(table: pa.Table) -> pa.Table:
    """The table with each chunk that holds no value on the shared zeros again, as
    ``columns_of`` made it (a table read back from Arrow's IPC holds them in full)."""
    return pa.table(
        [
            pa.chunked_array(
                [c if _has_values(c, f.type) else _absent(len(c), f.type) for c in table.column(f.name).chunks], f.type
            )
            for f in SCHEMA
        ],
        schema=SCHEMA,
    )


def manifest_rows(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(where, row) for each row of a CSV, JSON Lines or Parquet manifest."""
    if path.suffix == ".jsonl":
        with path.open() as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        yield f"{path}: line {number}", json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise InputError(f"{path}: line {number}: not JSON ({exc.msg})") from None
    elif path.suffix == ".csv":
        with path.open(newline="") as handle:
            for number, row in enumerate(csv.DictReader(handle), start=2):
                yield f"{path}: line {number}", row
    elif path.suffix == ".parquet":
        number = 0
        for batch in parquet_file(path).iter_batches(batch_size=ROWS):
            for row in batch.to_pylist():
                number += 1
                yield f"{path}: row {number}", row
    else:
        raise InputError(f"{path}: a manifest is .csv, .jsonl or .parquet")


def parquet_file(path: Path) -> Any:
    from pyarrow import parquet

    try:
        return parquet.ParquetFile(path)
    except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def _with_values(file: Any) -> list[str]:
    """The Parquet file's columns that hold a value, by its statistics: one without (a null,
    or an empty list, in every row) is not read."""
    empty: dict[str, bool] = {}
    meta = file.metadata
    for group in range(meta.num_row_groups):
        chunks = meta.row_group(group)
        for index in range(chunks.num_columns):
            chunk = chunks.column(index)
            stats = chunk.statistics
            none = stats is not None and stats.has_null_count and stats.null_count == chunks.num_rows
            name = chunk.path_in_schema.split(".")[0]
            empty[name] = empty.get(name, True) and none
    return [name for name in file.schema_arrow.names if not empty.get(name, False)]


def _blocks(path: Path, span: tuple[int, int] | None = None) -> Iterator[pa.Table]:
    """A JSON Lines or Parquet manifest in blocks, as Arrow reads them (``span``: only its
    row groups ``range(*span)``, or its bytes from ``span[0]`` up to ``span[1]``)."""
    if path.suffix == ".parquet":
        file = parquet_file(path)
        groups = range(*span) if span else None
        for batch in file.iter_batches(batch_size=ROWS, row_groups=groups, columns=_with_values(file)):
            yield pa.Table.from_batches([batch])
        return
    from pyarrow import json as pa_json

    source: Path | pa.BufferReader = path
    if span is not None:
        with path.open("rb") as handle:
            handle.seek(span[0])
            source = pa.BufferReader(handle.read(span[1] - span[0]))
    parse = pa_json.ParseOptions(explicit_schema=JSON_SCHEMA, unexpected_field_behavior="ignore")
    for batch in pa_json.open_json(source, read_options=pa_json.ReadOptions(block_size=BLOCK), parse_options=parse):
        yield pa.Table.from_batches([batch])


def columnar(path: Path, span: tuple[int, int] | None = None) -> pa.Table:
    """A JSON Lines or Parquet manifest (or a span of it, as ``_blocks``) converted in Arrow's
    blocks; NotColumnar or ArrowInvalid where a block does not convert so."""
    return pa.concat_tables([columns_of(block) for block in _blocks(path, span)]).unify_dictionaries()


def read_manifest(path: Path) -> pa.Table:
    """One manifest's attempts: in Arrow's blocks where it converts so, else row by row."""
    if path.suffix in (".jsonl", ".parquet"):
        try:
            return columnar(path)
        except (NotColumnar, pa.ArrowInvalid):
            pass  # read again row by row: the first bad row is named, or the odd values read
    return table_of(row_values(row, where) for where, row in manifest_rows(path))


def read_file(path: Path) -> pa.Table:
    """``read_manifest``, a file that cannot be read an InputError."""
    try:
        return read_manifest(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None


def joined(tables: list[pa.Table]) -> pa.Table:
    """Manifests' tables (or their parts'), in order, as one."""
    pa.default_memory_pool().release_unused()  # the blocks' pages, freed, go back: the report's arrays come next
    return pa.concat_tables(tables).unify_dictionaries() if tables else SCHEMA.empty_table()


def read_attempts(paths: Iterable[Path]) -> pa.Table:
    """The attempts of manifests or `failclass batch` results, one table."""
    return joined([read_file(path) for path in paths])


def store_attempts(rows: Iterable[StoredAttempt]) -> pa.Table:
    """From `Store.attempt_rows()`."""
    return table_of({name: getattr(row, name) for name in SCHEMA.names} for row in rows)
