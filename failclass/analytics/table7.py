"""Table 7 of the Philly study for any set of classified failed attempts: per reason its
categories, trials, jobs and users, runtime to failure (RTF) percentiles and share, GPU
demand buckets, and RTF x GPU demand with its share. Sorted by trials, "No signature"
last, as in the paper."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from failclass.matching.taxonomy import NO_SIGNATURE, Taxonomy

PERCENTILES = (50, 90, 95)


@dataclass(frozen=True)
class FailedAttempt:
    """What Table 7 needs of one failed attempt."""

    reason: str
    job_id: str
    user: str
    rtf_minutes: float | None
    gpus: int


@dataclass(frozen=True)
class Table7Row:
    reason_id: str
    reason_name: str
    categories: str
    trials: int
    jobs: int
    users: int
    rtf_p50_min: float | None
    rtf_p90_min: float | None
    rtf_p95_min: float | None
    rtf_total_pct: float | None  # None where no failed attempt has a runtime: no share of nothing
    demand_1: int
    demand_2_4: int
    demand_gt4: int
    rtf_x_demand_gpu_min: float
    rtf_x_demand_pct: float | None
    rtf_x_demand_gpu_h: float  # the same GPU time in the unit of every other table and plot

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def percent(part: float, whole: float) -> float | None:
    """``part`` as a percentage of ``whole``, two decimals; None of a whole of zero."""
    return round(100 * part / whole, 2) if whole else None


def demand_bucket(gpus: int) -> str:
    if gpus <= 1:
        return "demand_1"
    return "demand_2_4" if gpus <= 4 else "demand_gt4"


def table7(attempts: Iterable[FailedAttempt], taxonomy: Taxonomy) -> list[Table7Row]:
    groups: dict[str, list[FailedAttempt]] = defaultdict(list)
    for attempt in attempts:
        groups[attempt.reason].append(attempt)
    rtf_sum = {reason: sum(a.rtf_minutes or 0.0 for a in rows) for reason, rows in groups.items()}
    weighted = {reason: sum((a.rtf_minutes or 0.0) * max(a.gpus, 1) for a in rows) for reason, rows in groups.items()}
    total_rtf, total_weighted = sum(rtf_sum.values()), sum(weighted.values())
    table = []
    for reason, rows in groups.items():
        known = np.array([a.rtf_minutes for a in rows if a.rtf_minutes is not None], dtype=float)
        p50, p90, p95 = (round(float(np.percentile(known, q)), 2) for q in PERCENTILES) if known.size else (None, None, None)
        buckets: dict[str, int] = defaultdict(int)
        for a in rows:
            buckets[demand_bucket(a.gpus)] += 1
        name = taxonomy[reason]
        table.append(
            Table7Row(
                reason_id=reason,
                reason_name=name.name,
                categories=";".join(name.categories),
                trials=len(rows),
                jobs=len({a.job_id for a in rows}),
                users=len({a.user for a in rows}),
                rtf_p50_min=p50,
                rtf_p90_min=p90,
                rtf_p95_min=p95,
                rtf_total_pct=percent(rtf_sum[reason], total_rtf),
                demand_1=buckets["demand_1"],
                demand_2_4=buckets["demand_2_4"],
                demand_gt4=buckets["demand_gt4"],
                rtf_x_demand_gpu_min=round(weighted[reason], 2),
                rtf_x_demand_pct=percent(weighted[reason], total_weighted),
                rtf_x_demand_gpu_h=round(weighted[reason] / 60, 2),
            )
        )
    return sorted(table, key=lambda row: (row.reason_id == NO_SIGNATURE, -row.trials, row.reason_id))
