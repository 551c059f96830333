"""The waste report as one self-contained HTML page (inline SVG, no script, nothing to
fetch), rendered from a Jinja2 template: the headline figures, the causes with their
fixes, the cluster's heat map, a timeline per wasteful job with its intervals, their
causes and the evidence lines, and the right-sizing advice."""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import UTC, datetime

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from failclass.resources import PACKAGE_DATA
from failclass.waste.heatmap import HeatMap
from failclass.waste.report import KIND_NAMES, UNEXPLAINED, IntervalRow, WasteReport
from failclass.waste.samples import GpuSamples

TEMPLATE = "report.html.j2"
COLOURS = [plt.get_cmap("tab20")(i) for i in range(20)]


@dataclass(frozen=True)
class JobView:
    job: str
    caption: str
    svg: str
    intervals: list[IntervalRow]


def to_html(report: WasteReport, heat: HeatMap, series: GpuSamples, sources: list[str], top: int) -> str:
    names = {c.cause: c.name for c in report.causes}
    colour = {cause: COLOURS[i % len(COLOURS)] for i, cause in enumerate(names)}
    jobs = [_job_view(job.job, report, series, names, colour) for job in report.jobs[:top]]
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(PACKAGE_DATA / "waste")), autoescape=True, undefined=jinja2.StrictUndefined
    )
    span = _span(report)
    return environment.get_template(TEMPLATE).render(
        report=report,
        sources=sources,
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        span=span,
        heatmap=_heatmap(heat),
        jobs=jobs,
        cause_names=names,
        kind_names=KIND_NAMES,
        top=top,
    )


def _span(report: WasteReport) -> str:
    starts = sorted(row.start for row in report.intervals)
    return f"{starts[0]} to {starts[-1]}" if starts else "no low-utilisation interval"


def _svg(figure: plt.Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _heatmap(heat: HeatMap) -> str:
    nodes, hours, cells = heat.grid()
    if not nodes:
        return ""
    figure, axes = plt.subplots(figsize=(10, max(2.0, 0.22 * len(nodes) + 1)))
    image = axes.imshow(np.ma.masked_invalid(cells), aspect="auto", cmap="viridis", vmin=0, vmax=100, interpolation="nearest")
    axes.set_yticks(range(len(nodes)), nodes, fontsize=7)
    ticks = np.linspace(0, len(hours) - 1, min(8, len(hours))).astype(int)
    axes.set_xticks(ticks, [datetime.fromtimestamp(hours[t], UTC).strftime("%m-%d %H:00") for t in ticks], fontsize=8)
    figure.colorbar(image, ax=axes, label="mean GPU utilisation, %")
    return _svg(figure)


def _job_view(job: str, report: WasteReport, series: GpuSamples, names: dict[str, str], colour: dict) -> JobView:
    rows = [row for row in report.intervals if row.job == job]
    mine = np.flatnonzero(np.asarray([name == job for name in series.jobs] or [False])[series.job])
    figure, axes = plt.subplots(figsize=(10, 2.6))
    start = float(series.ts[mine].min()) if len(mine) else 0.0
    for node, gpu in sorted({(int(n), int(g)) for n, g in zip(series.node[mine], series.gpu[mine], strict=False)}):
        rows_of_gpu = mine[(series.node[mine] == node) & (series.gpu[mine] == gpu)]
        order = rows_of_gpu[np.argsort(series.ts[rows_of_gpu])]
        axes.plot((series.ts[order] - start) / 3600, series.util[order], linewidth=0.8, label=f"{series.nodes[node]}:{gpu}")
    shown = set()
    for row in rows:
        begin = (datetime.fromisoformat(row.start).timestamp() - start) / 3600
        label = names.get(row.cause, row.cause) if row.cause not in shown else None
        shown.add(row.cause)
        axes.axvspan(begin, begin + row.minutes / 60, color=colour.get(row.cause, "#999"), alpha=0.25, label=label)
    axes.set_ylim(-2, 102)
    axes.set_xlabel("hours since the first reading")
    axes.set_ylabel("utilisation, %")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    lost = sum(row.minutes for row in rows) / 60
    causes = sorted({names.get(r.cause, r.cause) for r in rows if r.cause != UNEXPLAINED})
    caption = f"{len(rows)} low intervals, {lost:.1f} GPU-hours; causes: {', '.join(causes) or 'none found'}"
    return JobView(job, caption, _svg(figure), sorted(rows, key=lambda r: r.start))
