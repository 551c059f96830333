"""The report as one self-contained HTML page (inline SVG, no script, nothing to fetch),
rendered from a Jinja2 template: where the data comes from and when, the comparison with
another period, the plots with captions computed from the data, and the tables."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from failclass.analytics.analysis import Analysis
from failclass.analytics.captions import gpu_caption, repeats_caption, rtf_caption
from failclass.analytics.plots import gpu_time, repeats_per_user, rtf_cdf
from failclass.analytics.tables import comparison_tables, report_tables
from failclass.matching.taxonomy import Taxonomy

TEMPLATES = Path(__file__).with_name("templates")
TEMPLATE = "report.html.j2"


@dataclass(frozen=True)
class Figure:
    id: str
    svg: str
    caption: str


def _figures(analysis: Analysis, taxonomy: Taxonomy) -> list[Figure]:
    """The plots of a selection with failed attempts."""
    report, failed = analysis.report, analysis.attempts.failed(taxonomy)
    drawn = [
        Figure("rtf", rtf_cdf(failed, report), rtf_caption(failed, taxonomy)),
        Figure("gpu-time", gpu_time(report, taxonomy), gpu_caption(report, taxonomy)),
        Figure("repeats-per-user", repeats_per_user(failed, taxonomy), repeats_caption(failed)),
    ]
    return drawn  # a figure with nothing to draw shows its caption alone


@cache
def _template() -> jinja2.Template:
    """The page's template, parsed once per process (the service renders it per request)."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=jinja2.StrictUndefined
    )
    return environment.get_template(TEMPLATE)


def to_html(analysis: Analysis, taxonomy: Taxonomy) -> str:
    report = analysis.report
    return _template().render(
        report=report,
        scope=analysis.scope,
        comparison=analysis.comparison,
        compared=comparison_tables(analysis.comparison),
        figures=_figures(analysis, taxonomy) if report.failed_attempts else [],
        tables=report_tables(report, analysis.categories),
    )
