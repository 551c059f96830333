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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv as pa_csv
from pyarrow import parquet

from failclass.analytics.analysis import Analysis
from failclass.analytics.columns import Attempts
from failclass.analytics.comparison import ReasonChange, TotalChange
from failclass.analytics.goodput import UserGoodput
from failclass.analytics.nodes import NodeFailures
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


def attempts_table(attempts: Attempts, taxonomy: Taxonomy) -> pa.Table:
    """Each attempt as AttemptExport: its facts, whether Table 7 counts it, its reason's name."""
    failure = attempts.failure(taxonomy)
    reason = pc.if_else(pa.array(failure), attempts.reasons(), attempts.column("reason").cast(pa.string()))
    known = [r for r in pc.unique(reason.drop_null()).to_pylist()]
    names = pa.array([taxonomy[r].name for r in known], pa.string())
    categories = pa.array([";".join(taxonomy[r].categories) for r in known], pa.string())
    where = pc.index_in(reason, value_set=pa.array(known, pa.string()))
    rtf = pa.array(attempts.rtf_minutes, from_pandas=True)
    gpu_hours = np.nan_to_num(attempts.rtf_minutes) * attempts.gpus / 60
    columns = {
        **{name: attempts.column(name) for name in ("job_id", "attempt", "user", "vc", "status", "submit_time")},
        "failure": pa.array(failure),
        **{name: attempts.column(name) for name in ("start_time", "end_time")},
        "rtf_minutes": pc.round(rtf, 4),
        "gpus": attempts.column("gpus"),
        "gpu_hours": pc.round(pa.array(gpu_hours), 4),
        **{name: attempts.column(name) for name in ("nodes", "exit_code", "inputs", "logs")},
        "reason": reason,
        "reason_name": names.take(where),
        "categories": categories.take(where),
        "classified_by": attempts.column("source"),
        **{name: attempts.column(name) for name in ("rule_id", "confidence", "action")},
        "policy_clause": attempts.column("clause"),
    }
    schema = _schema(AttemptExport)
    return pa.table([columns[name].cast(field.type) for name, field in zip(schema.names, schema, strict=True)], schema=schema)


def _jobs_table(jobs: pa.Table) -> pa.Table:
    """The per-job goodput with each job's GPU-hours lost by reason as a JSON object."""
    by_reason = [json.dumps(dict(pairs)) for pairs in jobs.column("lost_by_reason").to_pylist()]
    return jobs.set_column(jobs.schema.get_field_index("lost_by_reason"), "lost_by_reason", pa.array(by_reason, pa.string()))


def _tables(analysis: Analysis) -> dict[str, tuple[type, Sequence[Any]]]:
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
        "goodput_users": (UserGoodput, report.goodput),
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
    tables = {
        name: pa.Table.from_pylist(
            [{f.name: _value(getattr(row, f.name)) for f in fields(cls)} for row in rows], schema=_schema(cls)
        )
        for name, (cls, rows) in _tables(analysis).items()
    }
    tables["attempts"] = attempts_table(analysis.attempts, taxonomy)
    if analysis.report.job_goodput is not None:  # built where the analysis was asked for it (per_job)
        tables["goodput_jobs"] = _jobs_table(analysis.report.job_goodput)
    written = []
    for name, table in tables.items():
        try:
            parquet.write_table(table, folder / f"{name}.parquet")
            pa_csv.write_csv(_csv_ready(table), folder / f"{name}.csv")
        except OSError as exc:
            raise InputError(f"{folder}: cannot write {name}: {exc}") from None
        written += [folder / f"{name}.parquet", folder / f"{name}.csv"]
    return written
