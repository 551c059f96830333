"""The report as one self-contained HTML page: the tables, and plots a person would
rather look at than read (inline SVG, no external file or script):

- runtime to failure, CDF per reason (the reasons with most trials), log scale;
- GPU time lost (RTF x GPUs) by reason and by category;
- failed attempts of the users with most failures, by reason.
"""

from __future__ import annotations

import html
import io
from collections import Counter, defaultdict
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from failclass.analytics.records import AttemptRecord
from failclass.analytics.report import (
    REPEAT_HEADERS,
    TABLE6_HEADERS,
    TABLE7_HEADERS,
    Report,
    cell,
    is_failure,
    repeat_cells,
    table6_cells,
    table7_cells,
)
from failclass.matching.taxonomy import Taxonomy

TOP_REASONS = 8
TOP_USERS = 15
CATEGORY_NAMES = {"IF": "Infrastructure", "AE": "AI Engine", "U": "User"}
STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}figure{margin:1.5em 0}figcaption{font-size:13px;color:#555}"""


def _svg(figure: plt.Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def rtf_cdf(records: Sequence[AttemptRecord], report: Report) -> str:
    figure, axes = plt.subplots(figsize=(9, 4.5))
    for row in report.table7[:TOP_REASONS]:
        values = np.sort(
            [r.rtf_minutes for r in records if is_failure(r) and (r.reason or "no_signature") == row.reason_id and r.rtf_minutes]
        )
        if values.size:
            axes.step(
                values, np.arange(1, values.size + 1) / values.size, where="post", label=f"{row.reason_name} ({row.trials:,})"
            )
    axes.set_xscale("log")
    axes.set_xlabel("runtime to failure (minutes, log scale)")
    axes.set_ylabel("share of trials")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    return _svg(figure)


def gpu_time(report: Report) -> str:
    figure, (by_reason, by_category) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    rows = sorted(report.table7, key=lambda r: r.rtf_x_demand_gpu_min)
    by_reason.barh([r.reason_name for r in rows], [r.rtf_x_demand_gpu_min / 60 for r in rows], color="#4c72b0")
    by_reason.set_xlabel("GPU hours lost (RTF x GPUs)")
    by_reason.tick_params(axis="y", labelsize=8)
    categories: dict[str, float] = defaultdict(float)
    for row in report.table7:
        for mark in filter(None, row.categories.split(";")):
            categories[CATEGORY_NAMES.get(mark, mark)] += row.rtf_x_demand_gpu_min / 60
    by_category.bar(list(categories), list(categories.values()), color="#dd8452")
    by_category.set_ylabel("GPU hours")
    by_category.tick_params(axis="x", labelsize=8)
    return _svg(figure)


def repeats_per_user(records: Sequence[AttemptRecord]) -> str:
    failed = [r for r in records if is_failure(r)]
    leaders = [user for user, _ in Counter(r.user for r in failed).most_common(TOP_USERS)]
    reasons = [reason for reason, _ in Counter(r.reason or "no_signature" for r in failed if r.user in leaders).most_common(6)]
    figure, axes = plt.subplots(figsize=(9, 4))
    bottom = np.zeros(len(leaders))
    for reason in [*reasons, "other"]:
        counts = np.array(
            [
                sum(
                    1
                    for r in failed
                    if r.user == user
                    and (
                        (r.reason or "no_signature") == reason
                        or (reason == "other" and (r.reason or "no_signature") not in reasons)
                    )
                )
                for user in leaders
            ]
        )
        axes.bar(leaders, counts, bottom=bottom, label=reason)
        bottom += counts
    axes.set_ylabel("failed attempts")
    axes.tick_params(axis="x", labelrotation=60, labelsize=8)
    axes.legend(fontsize=8)
    return _svg(figure)


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def to_html(report: Report, records: Sequence[AttemptRecord], taxonomy: Taxonomy) -> str:
    table7 = _table(TABLE7_HEADERS, table7_cells(report))
    table6 = _table(TABLE6_HEADERS, table6_cells(report))
    repeats = _table(REPEAT_HEADERS, repeat_cells(report))
    figures = [
        (
            "Runtime to failure per reason: user errors fail in minutes, infrastructure errors after hours.",
            rtf_cdf(records, report),
        ),
        (
            "Where the GPU time went: runtime to failure times GPUs, by reason and by category (a reason counts in each of its categories).",
            gpu_time(report),
        ),
        ("Who fails again and again: failed attempts of the users with most failures.", repeats_per_user(records)),
    ]
    plots = "".join(f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>" for caption, svg in figures)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>failclass report</title><style>{STYLE}</style></head><body>"
        f"<h1>Failure report</h1><p>{report.attempts:,} attempts, {report.failed_attempts:,} failed.</p>{plots}"
        f"<h2>Failures by reason (Table 7)</h2>{table7}<h2>Jobs by final status (Table 6)</h2>{table6}"
        f"<h2>Repeats</h2>{repeats}</body></html>\n"
    )
