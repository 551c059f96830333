"""What the report's plots say, computed from the same data they draw: the sums behind
them and their captions (no sentence is written before the data is seen)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from failclass.analytics.columns import Failed, most_common
from failclass.analytics.report import Report
from failclass.matching.taxonomy import Taxonomy

TOP_USERS = 15
SAME_WITHIN = 1.1  # medians within 10% of each other read as "about as soon"


def category_hours(report: Report, taxonomy: Taxonomy) -> dict[str, float]:
    """GPU-hours lost per category name; a reason counts in each of its categories."""
    hours: dict[str, float] = defaultdict(float)
    for row in report.table7:
        for mark in filter(None, row.categories.split(";")):
            hours[taxonomy.categories.get(mark, mark)] += row.rtf_x_demand_gpu_h
    return {name: round(value, 2) for name, value in sorted(hours.items(), key=lambda item: -item[1])}


def rtf_by_category(failed: Failed, taxonomy: Taxonomy) -> dict[str, list[float]]:
    """Runtimes to failure (minutes) of failed attempts per category name."""
    runs: dict[str, list[float]] = defaultdict(list)
    for code, reason in enumerate(failed.reason.names):
        mine = failed.rtf_minutes[failed.reason.codes == code]
        for mark in taxonomy[reason].categories:
            runs[taxonomy.categories.get(mark, mark)].extend(mine[~np.isnan(mine)].tolist())
    return {name: values for name, values in runs.items() if values}


def failures_per_user(failed: Failed, top: int = TOP_USERS) -> list[tuple[str, int]]:
    return most_common(failed.user.codes, failed.user.names, top)


def duration(minutes: float) -> str:
    if minutes < 1:
        return f"{minutes * 60:.0f} s"
    if minutes < 120:
        return f"{minutes:.0f} min"
    return f"{minutes / 60:.1f} h"


def rtf_caption(failed: Failed, taxonomy: Taxonomy) -> str:
    runs = rtf_by_category(failed, taxonomy)
    if not runs:
        return "No failed attempt has a start and end time: runtime to failure cannot be drawn."
    medians = sorted(((float(np.median(values)), name, len(values)) for name, values in runs.items()))
    parts = [f"{name} {duration(median)} ({count:,} trial{'s' if count != 1 else ''})" for median, name, count in medians]
    text = f"Runtime to failure per reason. Median by category: {', '.join(parts)}."
    (fast, fast_name, _), (slow, slow_name, _) = medians[0], medians[-1]
    if len(medians) > 1 and slow > fast * SAME_WITHIN:
        text += f" {fast_name} errors fail soonest, {slow_name} errors latest."
    elif len(medians) > 1:
        text += " The categories fail about as soon as each other."
    return text + " A reason counts in each of its categories."


def gpu_caption(report: Report, taxonomy: Taxonomy) -> str:
    if not report.table7:
        return "No failed attempt: no GPU time was lost."
    if not report.gpu_hours_lost:
        return "No failed attempt has a start and end time: the GPU time they held cannot be counted or drawn."
    worst = max(report.table7, key=lambda row: row.rtf_x_demand_gpu_h)
    categories = category_hours(report, taxonomy)
    text = (
        f"Where the GPU time went: {report.gpu_hours_lost:,.2f} GPU-h of runtime to failure x GPUs; "
        f"{worst.reason_name} lost most ({worst.rtf_x_demand_gpu_h:,.2f} GPU-h, {worst.rtf_x_demand_pct:.1f}%)."
    )
    if categories:
        top_name, top_hours = next(iter(categories.items()))
        text += f" By category, {top_name} leads with {top_hours:,.2f} GPU-h (a reason counts in each of its categories)."
    return text


def repeats_caption(failed: Failed, top: int = TOP_USERS) -> str:
    leaders = failures_per_user(failed, top)
    total = len(failed)
    if not leaders:
        return "No failed attempt: nobody failed again."
    held = sum(n for _, n in leaders)
    user, most = leaders[0]
    return (
        f"Who fails again and again: the {len(leaders)} users with most failed attempts hold "
        f"{100 * held / total:.1f}% of the {total:,}; {user} alone has {most:,} ({100 * most / total:.1f}%)."
    )
