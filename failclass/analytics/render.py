"""An analysis as Markdown, CSV (Table 7) or JSON; the HTML page is in html.py."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from failclass.analytics.analysis import Analysis
from failclass.analytics.comparison import REASON_HEADERS, TOTAL_HEADERS, reason_cells, total_cells
from failclass.analytics.report import (
    REPEAT_HEADERS,
    TABLE6_HEADERS,
    TABLE7_HEADERS,
    cell,
    repeat_cells,
    table6_cells,
    table7_cells,
)
from failclass.analytics.table7 import Table7Row


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]


def to_markdown(analysis: Analysis) -> str:
    report, scope = analysis.report, analysis.scope
    out = [f"# Failure report: {report.attempts:,} attempts, {report.failed_attempts:,} failed", ""]
    out += [f"Source: {scope.source}. Selection: {scope.selection}. {scope.data_range()}."]
    out += [f"Generated {scope.generated.isoformat(timespec='seconds')}.", ""]
    if not report.attempts:
        return "\n".join([*out, "No attempt matches this selection."]) + "\n"
    if analysis.comparison:
        out += [f"## Compared with {analysis.comparison.period}", ""]
        out += [*_table(TOTAL_HEADERS, total_cells(analysis.comparison)), ""]
        out += [*_table(REASON_HEADERS, reason_cells(analysis.comparison)), ""]
    out += ["## Failures by reason (Table 7)", "", *_table(TABLE7_HEADERS, table7_cells(report))]
    out += ["", "## Jobs by final status (Table 6)", "", *_table(TABLE6_HEADERS, table6_cells(report))]
    out += ["", "## Repeats", "", *_table(REPEAT_HEADERS, repeat_cells(report))]
    return "\n".join(out) + "\n"


def to_csv(analysis: Analysis) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    names = [f.name for f in fields(Table7Row)]
    writer.writerow(names)
    for row in analysis.report.table7:
        writer.writerow([getattr(row, name) for name in names])
    return buffer.getvalue()


def to_json(analysis: Analysis) -> str:
    return json.dumps(analysis.to_dict(), indent=1)
