"""`failclass report --export DIR`: every table of the report, and the attempts with their
classification and decision, as Parquet and CSV for pandas, DuckDB or a spreadsheet.

Each table is NAME.parquet (typed: integers, floats, UTC timestamps, lists) and NAME.csv
(lists ';'-separated, as manifests read them; times ISO 8601). The column types are
fixed, so an empty selection still writes tables with their columns.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyarrow import csv as pa_csv
from pyarrow import parquet

from failclass.analytics.analysis import Analysis
from failclass.analytics.comparison import ReasonChange, TotalChange
from failclass.analytics.goodput import JobGoodput, UserGoodput
from failclass.analytics.nodes import NodeFailures
from failclass.analytics.records import AttemptRecord
from failclass.analytics.report import is_failure, reason_of
from failclass.analytics.status import Table6Row
from failclass.analytics.table7 import Table7Row
from failclass.errors import InputError
from failclass.matching.taxonomy import Taxonomy

TIMESTAMP = pa.timestamp("us", tz="UTC")
SCALARS: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    datetime: TIMESTAMP,
    tuple[str, ...]: pa.list_(pa.string()),
    tuple[int, ...]: pa.list_(pa.int64()),
    dict[str, float]: pa.string(),  # as a JSON object: CSV has no maps
}


@dataclass(frozen=True)
class AttemptExport:
    """One attempt as the analyst gets it: facts, classification, decision."""

    job_id: str
    attempt: int
    user: str
    vc: str
    status: str
    failure: bool  # counted as a failure by Table 7
    submit_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    rtf_minutes: float | None
    gpus: int
    gpu_hours: float  # runtime x GPUs
    nodes: tuple[str, ...]
    exit_code: int | None
    inputs: tuple[str, ...]
    logs: tuple[str, ...]
    reason: str | None
    reason_name: str | None
    categories: str | None
    classified_by: str | None  # rule, model, ...
    rule_id: str | None
    confidence: float | None
    action: str | None
    policy_clause: str | None


@dataclass(frozen=True)
class RepeatExport:
    reason_id: str
    reason_name: str
    trials: int
    trials_per_job: float
    trials_per_user: float
    top_users: tuple[str, ...]
    top_users_trials: tuple[int, ...]
    top_users_share: float


def _schema(cls: type) -> pa.Schema:
    hints = typing.get_type_hints(cls)
    columns = []
    for field in fields(cls):
        hint = hints[field.name]
        if isinstance(hint, types.UnionType):  # X | None
            hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
        columns.append(pa.field(field.name, SCALARS[hint]))
    return pa.schema(columns)


def attempt_export(record: AttemptRecord, taxonomy: Taxonomy) -> AttemptExport:
    failure = is_failure(record, taxonomy)
    reason = taxonomy[reason_of(record)] if record.reason or failure else None
    return AttemptExport(
        job_id=record.job_id,
        attempt=record.attempt,
        user=record.user,
        vc=record.vc,
        status=record.status,
        failure=failure,
        submit_time=record.submit_time,
        start_time=record.start_time,
        end_time=record.end_time,
        rtf_minutes=round(record.rtf_minutes, 4) if record.rtf_minutes is not None else None,
        gpus=record.gpus,
        gpu_hours=round(record.gpus * (record.rtf_minutes or 0.0) / 60, 4),
        nodes=record.nodes,
        exit_code=record.exit_code,
        inputs=record.inputs,
        logs=record.logs,
        reason=reason.id if reason else None,
        reason_name=reason.name if reason else None,
        categories=";".join(reason.categories) if reason else None,
        classified_by=record.source,
        rule_id=record.rule_id,
        confidence=record.confidence,
        action=record.action,
        policy_clause=record.clause,
    )


def _tables(analysis: Analysis, taxonomy: Taxonomy) -> dict[str, tuple[type, Sequence[Any]]]:
    report = analysis.report
    names = report.reason_names()
    repeats = [
        RepeatExport(
            r.reason_id,
            names.get(r.reason_id, r.reason_id),
            r.trials,
            r.trials_per_job,
            r.trials_per_user,
            tuple(u for u, _ in r.top_users),
            tuple(n for _, n in r.top_users),
            r.top_users_share,
        )
        for r in report.repetition
    ]
    tables: dict[str, tuple[type, Sequence[Any]]] = {
        "table7": (Table7Row, report.table7),
        "table6": (Table6Row, report.table6),
        "repeats": (RepeatExport, repeats),
        "attempts": (AttemptExport, [attempt_export(r, taxonomy) for r in analysis.records]),
        "goodput_users": (UserGoodput, report.goodput),
        "goodput_jobs": (JobGoodput, report.job_goodput),
        "nodes": (NodeFailures, report.nodes),
        "gpus": (NodeFailures, report.gpus),
    }
    if report.rightsizing:
        from failclass.waste.rightsize import UserRightsizing

        tables["rightsizing_users"] = (UserRightsizing, report.rightsizing)
    if analysis.comparison:
        tables["comparison_totals"] = (TotalChange, analysis.comparison.totals)
        tables["comparison_reasons"] = (ReasonChange, analysis.comparison.reasons)
    return tables


def _value(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict) else value


def _csv_ready(table: pa.Table) -> pa.Table:
    """Lists as ';'-separated text: CSV has no lists."""
    for index, field in enumerate(table.schema):
        if pa.types.is_list(field.type):
            joined = pa.array([";".join(map(str, v)) for v in table.column(index).to_pylist()], pa.string())
            table = table.set_column(index, field.name, joined)
    return table


def export(analysis: Analysis, taxonomy: Taxonomy, folder: Path) -> list[Path]:
    """Write every table as Parquet and CSV; the paths written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{folder}: cannot create the export folder: {exc}") from None
    written = []
    for name, (cls, rows) in _tables(analysis, taxonomy).items():
        schema = _schema(cls)
        table = pa.Table.from_pylist([{f.name: _value(getattr(row, f.name)) for f in fields(cls)} for row in rows], schema=schema)
        try:
            parquet.write_table(table, folder / f"{name}.parquet")
            pa_csv.write_csv(_csv_ready(table), folder / f"{name}.csv")
        except OSError as exc:
            raise InputError(f"{folder}: cannot write {name}: {exc}") from None
        written += [folder / f"{name}.parquet", folder / f"{name}.csv"]
    return written
