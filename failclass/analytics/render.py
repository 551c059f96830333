"""An analysis as Markdown, CSV (Table 7) or JSON; the HTML page is in html.py."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import fields

from failclass.analytics.analysis import Analysis
from failclass.analytics.table7 import Table7Row
from failclass.analytics.tables import Table, comparison_tables, report_tables


def _markdown(table: Table, level: str) -> list[str]:
    lines = [
        f"{level} {table.title}",
        "",
        "| " + " | ".join(table.headers) + " |",
        "|" + "|".join("---" for _ in table.headers) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    return lines + (["", table.note] if table.note else []) + [""]


def to_markdown(analysis: Analysis) -> str:
    report, scope = analysis.report, analysis.scope
    out = [f"# Failure report: {report.attempts:,} attempts, {report.failed_attempts:,} failed", ""]
    out += [f"Source: {scope.source}. Selection: {scope.selection}. {scope.data_range()}."]
    out += [f"Generated {scope.generated.isoformat(timespec='seconds')}.", ""]
    if not report.attempts:
        return "\n".join([*out, "No attempt matches this selection."]) + "\n"
    if analysis.comparison:
        out += [f"## Compared with {analysis.comparison.period}", ""]
        for table in comparison_tables(analysis.comparison):
            out += _markdown(table, "###")
    for table in report_tables(report, analysis.categories):
        out += _markdown(table, "##")
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
