"""Two periods side by side (this week against last): the totals and each reason's trials
and GPU time lost, with their deltas."""

from __future__ import annotations

from dataclasses import dataclass

from failclass.analytics.report import Report

TOTAL_HEADERS = ["measure", "this period", "compared period", "delta", "change"]
REASON_HEADERS = ["reason", "trials", "before", "delta", "GPU-h lost", "before", "delta"]


@dataclass(frozen=True)
class TotalChange:
    measure: str
    now: float
    before: float
    delta: float
    change_pct: float | None  # of before; None when before is 0, and for the failed share


@dataclass(frozen=True)
class ReasonChange:
    reason_id: str
    reason_name: str
    trials: int
    trials_before: int
    trials_delta: int
    gpu_h: float
    gpu_h_before: float
    gpu_h_delta: float


@dataclass(frozen=True)
class Comparison:
    period: str  # the compared selection, in words
    totals: list[TotalChange]
    reasons: list[ReasonChange]


def _change(measure: str, now: float, before: float, relative: bool = True) -> TotalChange:
    """``relative``: the change as a share of before (not for a share: its delta is in points)."""
    delta = round(now - before, 2)
    change = round(100 * delta / before, 1) if before and relative else None
    return TotalChange(measure, round(now, 2), round(before, 2), delta, change)


def _failed_share(report: Report) -> float:
    return 100 * report.failed_attempts / report.attempts if report.attempts else 0.0


def compare(now: Report, before: Report, period: str) -> Comparison:
    totals = [
        _change("attempts", now.attempts, before.attempts),
        _change("failed attempts", now.failed_attempts, before.failed_attempts),
        _change("failed share (%)", _failed_share(now), _failed_share(before), relative=False),
        _change("jobs", now.jobs, before.jobs),
        _change("GPU-h lost to failures", now.gpu_hours_lost, before.gpu_hours_lost),
    ]
    current = {row.reason_id: row for row in now.table7}
    earlier = {row.reason_id: row for row in before.table7}
    reasons = []
    for reason in dict.fromkeys([*current, *earlier]):
        row, old = current.get(reason), earlier.get(reason)
        trials, trials_before = (row.trials if row else 0), (old.trials if old else 0)
        gpu_h, gpu_h_before = (row.rtf_x_demand_gpu_h if row else 0.0), (old.rtf_x_demand_gpu_h if old else 0.0)
        reasons.append(
            ReasonChange(
                reason_id=reason,
                reason_name=row.reason_name if row else earlier[reason].reason_name,
                trials=trials,
                trials_before=trials_before,
                trials_delta=trials - trials_before,
                gpu_h=gpu_h,
                gpu_h_before=gpu_h_before,
                gpu_h_delta=round(gpu_h - gpu_h_before, 2),
            )
        )
    reasons.sort(key=lambda r: (-abs(r.trials_delta), -r.trials, r.reason_id))
    return Comparison(period, totals, reasons)


def signed(value: float) -> str:
    """A delta as people read it: +3, -1.50, 0."""
    if not value:
        return "0"
    return f"{value:+,}" if isinstance(value, int) else f"{value:+,.2f}"


def total_cells(comparison: Comparison) -> list[list[object]]:
    return [
        [t.measure, t.now, t.before, signed(t.delta), f"{t.change_pct:+.1f}%" if t.change_pct is not None else "-"]
        for t in comparison.totals
    ]


def reason_cells(comparison: Comparison) -> list[list[object]]:
    return [
        [r.reason_name, r.trials, r.trials_before, signed(r.trials_delta), r.gpu_h, r.gpu_h_before, signed(r.gpu_h_delta)]
        for r in comparison.reasons
    ]
