"""The report's plots as inline SVG (no external file or script), reasons by their names
and GPU time in GPU-hours:

- runtime to failure, CDF per reason (the reasons with most trials), log scale;
- GPU-hours lost (RTF x GPUs) by reason and by category, the values on the bars;
- failed attempts of the users with most failures, by reason.
"""

from __future__ import annotations

import io
from collections import Counter

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from failclass.analytics.captions import category_hours, failures_per_user
from failclass.analytics.columns import Failed, most_common
from failclass.analytics.report import Report
from failclass.matching.taxonomy import Taxonomy

TOP_REASONS = 8
STACKED_REASONS = 6
OTHER = "other reasons"


def _svg(figure: plt.Figure) -> str:
    """Text stays text (<text> elements, not glyph paths): readable, searchable, smaller."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _hours(value: float) -> str:
    """A bar's value: two decimals below 10 GPU-h (0.33, not 0.3), one above."""
    return f"{value:,.2f}" if value < 10 else f"{value:,.1f}"


def rtf_cdf(failed: Failed, report: Report) -> str:
    """ "" when no failed attempt has a runtime to failure."""
    timed = np.nan_to_num(failed.rtf_minutes) > 0
    runs = {reason: failed.rtf_minutes[timed & (failed.reason.codes == code)] for code, reason in enumerate(failed.reason.names)}
    runs = {reason: values for reason, values in runs.items() if values.size}
    drawn = [(row, np.sort(runs[row.reason_id])) for row in report.table7[:TOP_REASONS] if row.reason_id in runs]
    if not drawn:
        return ""
    figure, axes = plt.subplots(figsize=(9, 4.5))
    for row, values in drawn:
        shares = np.arange(0, values.size + 1) / values.size  # from 0 at the first failure
        axes.step(np.r_[values[0], values], shares, where="post", label=f"{row.reason_name} ({row.trials:,})")
    axes.set_xscale("log")
    axes.set_ylim(0, 1.02)
    axes.set_xlabel("runtime to failure (minutes, log scale)")
    axes.set_ylabel("share of trials")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    return _svg(figure)


def gpu_time(report: Report, taxonomy: Taxonomy) -> str:
    """ "" when no failed attempt held GPU time (none has a start and end time)."""
    if not report.gpu_hours_lost:
        return ""
    figure, (by_reason, by_category) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    rows = sorted(report.table7, key=lambda r: r.rtf_x_demand_gpu_h)
    bars = by_reason.barh([r.reason_name for r in rows], [r.rtf_x_demand_gpu_h for r in rows], color="#4c72b0")
    by_reason.bar_label(bars, labels=[_hours(r.rtf_x_demand_gpu_h) for r in rows], fontsize=7, padding=2)
    by_reason.set_xlabel("GPU-h lost (RTF x GPUs)")
    by_reason.tick_params(axis="y", labelsize=8)
    by_reason.margins(x=0.15)
    categories = category_hours(report, taxonomy)
    bars = by_category.bar(list(categories), list(categories.values()), color="#dd8452")
    by_category.bar_label(bars, labels=[_hours(value) for value in categories.values()], fontsize=8, padding=2)
    by_category.set_ylabel("GPU-h lost")
    by_category.tick_params(axis="x", labelsize=8)
    by_category.margins(y=0.15)
    return _svg(figure)


def repeats_per_user(failed: Failed, taxonomy: Taxonomy) -> str:
    names = taxonomy.names()
    leaders = [user for user, _ in failures_per_user(failed)]
    if not leaders:
        return ""
    theirs = np.isin(failed.user.codes, [failed.user.names.index(user) for user in leaders])
    stacked = [reason for reason, _ in most_common(failed.reason.codes[theirs], failed.reason.names, STACKED_REASONS)]
    counts: dict[str, Counter[str]] = {}
    for code, user in zip(failed.reason.codes[theirs], failed.user.codes[theirs], strict=True):
        reason = failed.reason.names[code]
        counts.setdefault(reason if reason in stacked else OTHER, Counter())[failed.user.names[user]] += 1
    figure, axes = plt.subplots(figsize=(9, 4))
    bottom = np.zeros(len(leaders))
    for reason in [*stacked, OTHER]:
        if reason not in counts:
            continue
        heights = np.array([counts[reason][user] for user in leaders])
        axes.bar(leaders, heights, bottom=bottom, label=names.get(reason, reason))
        bottom += heights
    axes.set_ylabel("failed attempts")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.tick_params(axis="x", labelrotation=60, labelsize=8)
    axes.legend(fontsize=8)
    return _svg(figure)
