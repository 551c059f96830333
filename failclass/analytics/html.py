"""The report as one self-contained HTML page (inline SVG, no script, nothing to fetch),
rendered from a Jinja2 template: where the data comes from and when, the comparison with
another period, the plots with captions computed from the data, and the tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from failclass.analytics.analysis import Analysis
from failclass.analytics.captions import gpu_caption, repeats_caption, rtf_caption
from failclass.analytics.comparison import REASON_HEADERS, TOTAL_HEADERS, reason_cells, total_cells
from failclass.analytics.plots import gpu_time, repeats_per_user, rtf_cdf
from failclass.analytics.report import (
    REPEAT_HEADERS,
    TABLE6_HEADERS,
    TABLE7_HEADERS,
    cell,
    repeat_cells,
    table6_cells,
    table7_cells,
)
from failclass.matching.taxonomy import Taxonomy

TEMPLATES = Path(__file__).with_name("templates")
TEMPLATE = "report.html.j2"


@dataclass(frozen=True)
class Figure:
    id: str
    svg: str
    caption: str


@dataclass(frozen=True)
class Table:
    id: str
    title: str
    headers: Sequence[str]
    rows: list[list[str]]


def _table(id: str, title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    return Table(id, title, headers, [[cell(value) for value in row] for row in rows])


def _figures(analysis: Analysis, taxonomy: Taxonomy) -> list[Figure]:
    report, records = analysis.report, analysis.records
    drawn = [
        Figure("rtf", rtf_cdf(records, report), rtf_caption(records, taxonomy)),
        Figure("gpu-time", gpu_time(report, taxonomy), gpu_caption(report, taxonomy)),
        Figure("repeats-per-user", repeats_per_user(records, report.reason_names()), repeats_caption(records)),
    ]
    return [figure for figure in drawn if figure.svg]


def to_html(analysis: Analysis, taxonomy: Taxonomy) -> str:
    report = analysis.report
    tables = [
        _table("table7", "Failures by reason (Table 7)", TABLE7_HEADERS, table7_cells(report)),
        _table("table6", "Jobs by final status (Table 6)", TABLE6_HEADERS, table6_cells(report)),
        _table("repeats", "Repeats", REPEAT_HEADERS, repeat_cells(report)),
    ]
    comparison = analysis.comparison
    compared = (
        [
            _table("comparison-totals", "Totals", TOTAL_HEADERS, total_cells(comparison)),
            _table("comparison-reasons", "Per reason", REASON_HEADERS, reason_cells(comparison)),
        ]
        if comparison
        else []
    )
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=jinja2.StrictUndefined
    )
    return environment.get_template(TEMPLATE).render(
        report=report,
        scope=analysis.scope,
        comparison=comparison,
        compared=compared,
        figures=_figures(analysis, taxonomy) if report.failed_attempts else [],
        tables=tables,
    )
