"""The failure report over classified attempts: Table 7, Table 6 and repetition per
reason, rendered as Markdown, CSV (Table 7) or JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from failclass.analytics.records import AttemptRecord
from failclass.analytics.repetition import ReasonRepetition, repetition
from failclass.analytics.status import Table6Row, table6_of
from failclass.analytics.table7 import Table7Row, table7
from failclass.matching.taxonomy import Taxonomy

FINAL_STATUS = {"passed": "passed", "killed": "killed", "failed": "unsuccessful", "unsuccessful": "unsuccessful"}


@dataclass(frozen=True)
class Report:
    attempts: int
    failed_attempts: int
    table7: list[Table7Row]
    table6: list[Table6Row]
    repetition: list[ReasonRepetition]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_failure(record: AttemptRecord) -> bool:
    """What Table 7 counts: attempts that failed, and killed ones that were preempted; a
    job killed by its user is no failure (it counts in Table 6)."""
    return record.status in ("failed", "unsuccessful") or (record.status == "killed" and record.reason == "job_preempted")


def build_report(records: Sequence[AttemptRecord], taxonomy: Taxonomy) -> Report:
    failed = [r for r in records if is_failure(r)]
    attempts = [r.failed() for r in failed]
    last: dict[str, AttemptRecord] = {}
    gpu_minutes: dict[str, float] = {}
    for record in sorted(records, key=lambda r: (r.job_id, r.attempt)):
        last[record.job_id] = record
        gpu_minutes[record.job_id] = gpu_minutes.get(record.job_id, 0.0) + record.gpus * (record.rtf_minutes or 0.0)
    jobs = [(FINAL_STATUS.get(r.status, "unsuccessful"), gpu_minutes[job]) for job, r in last.items()]
    return Report(len(records), len(failed), table7(attempts, taxonomy), table6_of(jobs), repetition(attempts))


def cell(value: Any) -> str:
    """How a table shows a value: thousands separators, two decimals, "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


TABLE7_HEADERS = [
    "reason",
    "cat.",
    "trials",
    "jobs",
    "users",
    "RTF p50",
    "p90",
    "p95 (min)",
    "RTF %",
    "1 GPU",
    "2-4",
    ">4",
    "RTF x GPUs (GPU-min)",
    "%",
]
TABLE6_HEADERS = ["status", "jobs", "jobs %", "GPU time %"]
REPEAT_HEADERS = ["reason", "trials", "per job", "per user", "top users (trials)", "their share"]


def table7_cells(report: Report) -> list[list[Any]]:
    return [
        [
            r.reason_name,
            r.categories or "-",
            r.trials,
            r.jobs,
            r.users,
            r.rtf_p50_min,
            r.rtf_p90_min,
            r.rtf_p95_min,
            r.rtf_total_pct,
            r.demand_1,
            r.demand_2_4,
            r.demand_gt4,
            r.rtf_x_demand_gpu_min,
            r.rtf_x_demand_pct,
        ]
        for r in report.table7
    ]


def table6_cells(report: Report) -> list[list[Any]]:
    return [[r.status, r.jobs, r.jobs_pct, r.gpu_time_pct] for r in report.table6]


def repeat_cells(report: Report) -> list[list[Any]]:
    return [
        [
            r.reason_id,
            r.trials,
            r.trials_per_job,
            r.trials_per_user,
            ", ".join(f"{u} ({n})" for u, n in r.top_users),
            f"{100 * r.top_users_share:.1f}%",
        ]
        for r in report.repetition
    ]


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]


def to_markdown(report: Report) -> str:
    out = [f"# Failure report: {report.attempts:,} attempts, {report.failed_attempts:,} failed", ""]
    out += ["## Failures by reason (Table 7)", "", *_table(TABLE7_HEADERS, table7_cells(report))]
    out += ["", "## Jobs by final status (Table 6)", "", *_table(TABLE6_HEADERS, table6_cells(report))]
    out += ["", "## Repeats", "", *_table(REPEAT_HEADERS, repeat_cells(report))]
    return "\n".join(out) + "\n"


def to_csv(report: Report) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    names = [f.name for f in fields(Table7Row)]
    writer.writerow(names)
    for row in report.table7:
        writer.writerow([getattr(row, name) for name in names])
    return buffer.getvalue()


def to_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=1)
