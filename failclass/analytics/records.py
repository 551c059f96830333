"""Classified attempt records from manifests (CSV or JSON Lines) and from the store.

A manifest (.csv, .jsonl or .parquet) row is one attempt: job_id, attempt, user, vc,
status (passed / failed / killed / unsuccessful), submit_time, start_time, end_time (ISO
8601), gpus, nodes, exit_code, inputs, logs, and the failure reason (a taxonomy id) for
attempts that did not pass. Only job_id, user and status are required; lists (nodes,
inputs, logs) are JSON lists, or ';'-separated in CSV. A bad value is reported with its
line. Rows of `failclass batch` results read the same way, with their classification
(source, rule, confidence); the store's rows bring the decision too.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from failclass.analytics.table7 import FailedAttempt
from failclass.errors import InputError
from failclass.matching.taxonomy import NO_SIGNATURE

if TYPE_CHECKING:
    from failclass.store.views import StoredAttempt

REQUIRED = ("job_id", "user", "status")
UNKNOWN_USER = "unknown"  # batch results without a manifest: whose attempt it was is not known


@dataclass(frozen=True)
class AttemptRecord:
    job_id: str
    attempt: int
    user: str
    vc: str
    status: str
    start_time: datetime | None
    end_time: datetime | None
    gpus: int
    reason: str | None
    submit_time: datetime | None = None
    nodes: tuple[str, ...] = ()
    exit_code: int | None = None
    inputs: tuple[str, ...] = ()
    logs: tuple[str, ...] = ()
    source: str | None = None  # what classified it: rule, model, ...
    rule_id: str | None = None
    confidence: float | None = None
    action: str | None = None  # the decision, where one was made
    clause: str | None = None  # the policy clause behind it
    recorded_at: datetime | None = None
    checkpoint_basis: str | None = None  # where the log was read when the attempt was reported (the store)
    last_checkpoint_at: datetime | None = None
    origin_node: str | None = None  # where its failure started, where its logs were read as ranks (the store)
    origin_gpu: int | None = None  # the GPU of that node, where the logs or facts tell it

    @property
    def time(self) -> datetime | None:
        """When the attempt happened, for time ranges: its end, else start, submission, recording."""
        return self.end_time or self.start_time or self.submit_time or self.recorded_at

    @property
    def rtf_minutes(self) -> float | None:
        if self.start_time is None or self.end_time is None:
            return None
        return max((self.end_time - self.start_time).total_seconds(), 0.0) / 60

    def failed(self) -> FailedAttempt:
        return FailedAttempt(self.reason or NO_SIGNATURE, self.job_id, self.user, self.rtf_minutes, self.gpus)


def _time(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _list(value: Any) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        return tuple(part for part in value.split(";") if part)
    return tuple(str(part) for part in value)


def record_of(row: Mapping[str, Any], where: str) -> AttemptRecord:
    if "classified_by" in row or "evidence_log" in row:  # a row of `failclass batch` results
        row = {"user": UNKNOWN_USER, "status": "failed", **{k: v for k, v in row.items() if v not in (None, "")}}
    missing = [key for key in REQUIRED if not row.get(key)]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    try:
        return AttemptRecord(
            job_id=str(row["job_id"]),
            attempt=int(row.get("attempt") or 1),
            user=str(row["user"]),
            vc=str(row.get("vc") or "default"),
            status=str(row["status"]),
            start_time=_time(row.get("start_time")),
            end_time=_time(row.get("end_time")),
            gpus=int(row.get("gpus") or 0),
            reason=str(row["reason"]) if row.get("reason") else None,
            submit_time=_time(row.get("submit_time")),
            nodes=_list(row.get("nodes")),
            exit_code=int(row["exit_code"]) if row.get("exit_code") not in (None, "") else None,
            inputs=_list(row.get("inputs")),
            logs=_list(row.get("logs") or row.get("log")),
            source=_text(row.get("source")),
            rule_id=_text(row.get("rule_id")),
            confidence=float(row["confidence"]) if row.get("confidence") not in (None, "") else None,
            action=_text(row.get("action")),
            clause=_text(row.get("clause")),
        )
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: bad value ({exc})") from None


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
        from pyarrow import parquet

        try:
            table = parquet.ParquetFile(path)
        except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
        number = 0
        for batch in table.iter_batches(batch_size=65536):
            for row in batch.to_pylist():
                number += 1
                yield f"{path}: row {number}", row
    else:
        raise InputError(f"{path}: a manifest is .csv, .jsonl or .parquet")


def read_records(paths: Iterable[Path]) -> list[AttemptRecord]:
    records: list[AttemptRecord] = []
    for path in paths:
        try:
            records.extend(record_of(row, where) for where, row in manifest_rows(path))
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc}") from None
    return records


def store_records(rows: Iterable[StoredAttempt]) -> list[AttemptRecord]:
    """From `Store.attempt_rows()`."""
    return [
        AttemptRecord(
            job_id=row.job_id,
            attempt=row.attempt,
            user=row.user,
            vc=row.vc,
            status=row.status,
            start_time=row.start_time,
            end_time=row.end_time,
            gpus=row.gpus,
            reason=row.reason,
            submit_time=row.submit_time,
            nodes=row.nodes,
            exit_code=row.exit_code,
            inputs=row.inputs,
            logs=row.logs,
            source=row.source,
            rule_id=row.rule_id,
            confidence=row.confidence,
            action=row.action,
            clause=row.clause,
            recorded_at=row.recorded_at,
            checkpoint_basis=row.checkpoint_basis,
            last_checkpoint_at=row.last_checkpoint_at,
            origin_node=row.origin_node,
            origin_gpu=row.origin_gpu,
        )
        for row in rows
    ]
