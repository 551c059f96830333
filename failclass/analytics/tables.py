"""The report's tables as cells, once, for every rendering (Markdown, the HTML page)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from failclass.analytics.comparison import REASON_HEADERS, TOTAL_HEADERS, Comparison, reason_cells, total_cells
from failclass.analytics.report import (
    GOODPUT_HEADERS,
    GPU_HEADERS,
    GPU_NOTE,
    NODE_HEADERS,
    NODE_NOTE,
    REPEAT_HEADERS,
    RIGHTSIZE_HEADERS,
    TABLE6_HEADERS,
    TABLE7_HEADERS,
    Report,
    cell,
    goodput_cells,
    gpu_cells,
    node_cells,
    repeat_cells,
    rightsize_cells,
    table6_cells,
    table7_cells,
)


@dataclass(frozen=True)
class Table:
    id: str
    title: str
    headers: Sequence[str]
    rows: list[list[str]]
    note: str = ""  # what the table's marks mean


def _table(id: str, title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> Table:
    return Table(id, title, headers, [[cell(value) for value in row] for row in rows])


NO_TIMES = "{} a start and end time: no runtime or GPU time to count, and no share of it (-)."


GOODPUT_NOTE = (
    "Lost since checkpoint: from each failed attempt's last checkpoint save in its log to its end, x GPUs (the whole"
    " attempt where the log has none, or is not at hand); whole attempts: runtime x GPUs (Table 7). Idle: as"
    " `failclass waste` measured it (--waste). Restarts: from one attempt's end to the next one's submission or start;"
    " queue: submission to start. ETTR: productive GPU time over wall GPU time (failclass/analytics/goodput.py)."
)


RIGHTSIZE_NOTE = (
    "From `failclass waste report` (--waste): a MIG slice where a job's peak memory and utilisation, with headroom,"
    " fit one (the GPU-hours held beyond the slice); fewer GPUs where some were never used; a shorter time limit where"
    " a job ended far before it (GPU-hours the scheduler reserved, not held) (failclass/waste/rightsize.py)."
)


def report_tables(report: Report, categories: Mapping[str, str]) -> list[Table]:
    """Table 7 (its category marks spelt out below it), Table 6, the repeats, GPU time lost
    per user, right-sizing advice per user (given a waste report that has it) and, where
    attempts were read as ranks, the nodes and GPUs where failures started;
    below a table whose GPU time is zero, why (the attempts have no times)."""
    marks = "cat.: " + ", ".join(f"{mark} {name}" for mark, name in categories.items())
    if report.table7 and not report.gpu_hours_lost:
        marks += ". " + NO_TIMES.format("No failed attempt has")
    jobs_note = NO_TIMES.format("No job has") if report.jobs and not report.table6[-1].gpu_hours else ""
    return [
        replace(_table("table7", "Failures by reason (Table 7)", TABLE7_HEADERS, table7_cells(report)), note=marks),
        replace(_table("table6", "Jobs by final status (Table 6)", TABLE6_HEADERS, table6_cells(report)), note=jobs_note),
        _table("repeats", "Repeats", REPEAT_HEADERS, repeat_cells(report)),
        replace(_table("goodput", "GPU time lost per user (ETTR)", GOODPUT_HEADERS, goodput_cells(report)), note=GOODPUT_NOTE),
        *(
            [
                replace(
                    _table("rightsizing", "Right-sizing per user", RIGHTSIZE_HEADERS, rightsize_cells(report)),
                    note=RIGHTSIZE_NOTE,
                )
            ]
            if report.rightsizing
            else []
        ),
        *(
            [replace(_table("nodes", "Where failures started (lemon nodes)", NODE_HEADERS, node_cells(report)), note=NODE_NOTE)]
            if report.nodes
            else []
        ),
        *(
            [replace(_table("gpus", "Where failures started, per GPU", GPU_HEADERS, gpu_cells(report)), note=GPU_NOTE)]
            if report.gpus
            else []
        ),
    ]


def comparison_tables(comparison: Comparison | None) -> list[Table]:
    """The totals and the reasons against the compared period (none without one)."""
    if comparison is None:
        return []
    return [
        _table("comparison-totals", "Totals", TOTAL_HEADERS, total_cells(comparison)),
        _table("comparison-reasons", "Per reason", REASON_HEADERS, reason_cells(comparison)),
    ]
