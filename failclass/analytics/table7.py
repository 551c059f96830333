"""Table 7 of the Philly study for any set of classified failed attempts: per reason its
categories, trials, jobs and users, runtime to failure (RTF) percentiles and share, GPU
demand buckets, and RTF x GPU demand with its share. Sorted by trials, "No signature"
last, as in the paper."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from failclass.analytics.columns import Failed, counts, distinct, sums
from failclass.matching.taxonomy import NO_SIGNATURE, Taxonomy

PERCENTILES = (50, 90, 95)


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


def table7(failed: Failed, taxonomy: Taxonomy) -> list[Table7Row]:
    groups = len(failed.reason.names)
    rtf = np.nan_to_num(failed.rtf_minutes)
    rtf_sum = sums(failed.reason.codes, rtf, groups)
    weighted = sums(failed.reason.codes, rtf * failed.demand(), groups)
    total_rtf, total_weighted = sum(rtf_sum.tolist()), sum(weighted.tolist())  # in order of first appearance
    trials = counts(failed.reason.codes, groups)
    jobs, users = distinct(failed.reason.codes, failed.job, groups), distinct(failed.reason.codes, failed.user.codes, groups)
    buckets = np.digitize(failed.gpus, (2, 5))  # 1 GPU (or none), 2-4, >4
    demand = [counts(failed.reason.codes[buckets == bucket], groups) for bucket in range(3)]
    table = []
    for code, reason in enumerate(failed.reason.names):
        mine = failed.rtf_minutes[failed.reason.codes == code]
        known = mine[~np.isnan(mine)]
        p50, p90, p95 = (round(float(np.percentile(known, q)), 2) for q in PERCENTILES) if known.size else (None, None, None)
        name = taxonomy[reason]
        table.append(
            Table7Row(
                reason_id=reason,
                reason_name=name.name,
                categories=";".join(name.categories),
                trials=int(trials[code]),
                jobs=int(jobs[code]),
                users=int(users[code]),
                rtf_p50_min=p50,
                rtf_p90_min=p90,
                rtf_p95_min=p95,
                rtf_total_pct=percent(float(rtf_sum[code]), total_rtf),
                demand_1=int(demand[0][code]),
                demand_2_4=int(demand[1][code]),
                demand_gt4=int(demand[2][code]),
                rtf_x_demand_gpu_min=round(float(weighted[code]), 2),
                rtf_x_demand_pct=percent(float(weighted[code]), total_weighted),
                rtf_x_demand_gpu_h=round(float(weighted[code]) / 60, 2),
            )
        )
    return sorted(table, key=lambda row: (row.reason_id == NO_SIGNATURE, -row.trials, row.reason_id))
