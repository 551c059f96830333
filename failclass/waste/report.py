"""The waste report: the cluster's headline figures, the causes ranked by GPU-hours,
the jobs, users and virtual clusters that waste most, every explained interval with its
evidence and fix, early-termination advice and right-sizing advice per job and user, after
what the inputs lacked (warnings, and the GPUs without a memory total); rendered as text or
JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import zip_longest
from typing import Any

import numpy as np

from failclass.waste.causes import Cause
from failclass.waste.explain import Attribution
from failclass.waste.inputs import InputReport
from failclass.waste.loss import Convergence
from failclass.waste.measure import Measured
from failclass.waste.memory import OPTION, describe
from failclass.waste.rightsize import FEWER_GPUS, SHORTER_LIMIT, SMALLER_GPU, Rightsizing
from failclass.waste.summary import GroupWaste, Headline, JobWaste

UNEXPLAINED = "unexplained"


@dataclass(frozen=True, slots=True)  # millions in a month's report
class IntervalRow:
    """One phase of one GPU (an idle slot, a low phase, a drop, a whole life) and its cause."""

    job: str
    node: str
    gpu: int
    kind: str
    start: str  # ISO 8601, UTC
    minutes: float
    util: float
    cause: str
    evidence: tuple[str, ...]
    end: str = ""  # ISO 8601, UTC
    mem_gib: float = 0.0  # mean memory used inside
    lines: tuple[int, ...] = ()  # the evidence's line numbers in the job's log
    confidence: str = ""  # high, medium or low (none when unexplained)
    basis: str = ""  # what the confidence rests on

    @property
    def summary(self) -> str:
        """The phase in one line: job, GPU, when, cause, utilisation, memory, evidence."""
        start, end = self.start[11:16], self.end[11:16]
        cause = self.cause.replace("_", " ") if self.cause != UNEXPLAINED else "no cause found"
        head = f"job {self.job}, GPU {self.node}:{self.gpu}, {start}-{end}: {cause}, {self.util:.0f}% util, {self.mem_gib:.1f} GB"
        if self.confidence:
            head += f", confidence {self.confidence} ({self.basis})"
        if not self.evidence:
            return head
        first = f"line {self.lines[0]}: " if self.lines and self.lines[0] else ""
        return f"{head}, evidence: {first}{self.evidence[0]}"


@dataclass(frozen=True)
class CauseRow:
    cause: str
    name: str
    dimension: str
    intervals: int
    jobs: int
    gpu_h: float
    fix: str


@dataclass(frozen=True)
class ConvergenceRow:
    job: str
    loss_values: int
    best_loss: float
    within_at_pct: float  # of the run, when the loss came within 0.1 % of its best
    after_gpu_h: float | None


@dataclass(frozen=True)
class WasteReport:
    headline: Headline
    causes: list[CauseRow]
    jobs: list[JobWaste]
    users: list[GroupWaste]
    clusters: list[GroupWaste]
    intervals: list[IntervalRow]
    convergence: list[ConvergenceRow]
    inputs: InputReport
    rightsizing: Rightsizing

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = _plain(self)
        return document


def _plain(value: Any) -> Any:
    """Dataclasses as dicts (an interval with its summary), lists and tuples of them as lists,
    all the way down (``asdict`` without its copies; a tuple of plain values stays one)."""
    if hasattr(value, "__dataclass_fields__"):
        found = {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
        if isinstance(value, IntervalRow):
            found["summary"] = value.summary
        return found
    if isinstance(value, list) or (isinstance(value, tuple) and value and not isinstance(value[0], str | int | float)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def interval_rows(measured: Measured, attributions: Sequence[Attribution]) -> list[IntervalRow]:
    iv, table = measured.intervals, measured.samples
    rows = np.asarray([e.interval for e in attributions], dtype=np.int64)
    starts, ends = _isos(iv.start[rows]), _isos(iv.end[rows])
    minutes = np.round((iv.end[rows] - iv.start[rows]) / 60, 2).tolist()
    utils, mems = np.round(iv.util[rows].astype(np.float64), 2).tolist(), np.round(iv.mem[rows] / 1024, 2).tolist()
    jobs, nodes, gpus, kinds = iv.job[rows].tolist(), iv.node[rows].tolist(), iv.gpu[rows].tolist(), iv.kind[rows].tolist()
    return [
        IntervalRow(
            table.jobs[jobs[i]],
            table.nodes[nodes[i]],
            int(gpus[i]),
            str(kinds[i]),
            starts[i],
            minutes[i],
            utils[i],
            e.cause or UNEXPLAINED,
            e.evidence,
            ends[i],
            mems[i],
            e.lines,
            e.confidence,
            e.basis,
        )
        for i, e in enumerate(attributions)
    ]


def _isos(ts: np.ndarray) -> list[str]:
    """Unix seconds as ISO 8601 in UTC, to the second (as ``_iso``), all at once."""
    return [text + "+00:00" for text in np.datetime_as_string(ts.astype("datetime64[s]"), unit="s").tolist()]


def build(
    headline: Headline,
    jobs: list[JobWaste],
    groups: tuple[list[GroupWaste], list[GroupWaste]],
    intervals: list[IntervalRow],
    causes: Sequence[Cause],
    convergence: Mapping[str, Convergence],
    inputs: InputReport,
    rightsizing: Rightsizing,
) -> WasteReport:
    known = {cause.id: cause for cause in causes}
    totals: dict[str, tuple[int, set[str], float]] = {}
    for row in intervals:
        count, job_set, hours = totals.get(row.cause, (0, set(), 0.0))
        job_set.add(row.job)
        totals[row.cause] = (count + 1, job_set, hours + row.minutes / 60 * (1 - row.util / 100))
    cause_rows = [
        CauseRow(
            cause,
            known[cause].name if cause in known else "No cause found in the log or the series",
            known[cause].dimension if cause in known else "-",
            count,
            len(job_set),
            round(hours, 3),
            known[cause].fix if cause in known else "Look at the job's timeline; failclass found no evidence.",
        )
        for cause, (count, job_set, hours) in totals.items()
    ]
    converged = [
        ConvergenceRow(
            job, c.points, c.best, round(100 * c.within_at, 1), None if math.isnan(c.after_gpu_h) else round(c.after_gpu_h, 3)
        )
        for job, c in sorted(convergence.items())
    ]
    return WasteReport(
        headline,
        sorted(cause_rows, key=lambda c: -c.gpu_h),
        sorted(jobs, key=lambda j: (-j.unused_gpu_h, j.job)),
        groups[0],
        groups[1],
        sorted(intervals, key=lambda row: (-row.minutes, row.job, row.node, row.gpu, row.start)),  # not the series' order
        converged,
        inputs,
        rightsizing,
    )


def to_json(report: WasteReport) -> str:
    return "".join(json_chunks(report))


def json_chunks(report: WasteReport) -> Iterator[str]:
    """The report as JSON, piece by piece (each row made when written): its sections and
    their parts indented, each row of a table (a job, an interval) on a line of its own."""
    yield from _layout(report, "")
    yield "\n"


def _layout(value: Any, indent: str) -> Iterator[str]:
    inner = indent + "  "
    if hasattr(value, "__dataclass_fields__") and len(indent) < 4:
        value = {name: getattr(value, name) for name in value.__dataclass_fields__}
    if isinstance(value, dict) and value and len(indent) < 4:
        yield "{"
        for number, (key, item) in enumerate(value.items()):
            yield ("," if number else "") + f"\n{inner}{json.dumps(key)}: "
            yield from _layout(item, inner)
        yield f"\n{indent}}}"
    elif isinstance(value, list) and value and len(indent) < 6:
        yield "["
        for number, item in enumerate(value):
            yield ("," if number else "") + f"\n{inner}{_compact(item)}"
        yield f"\n{indent}]"
    else:
        yield _compact(value)


def _compact(value: Any) -> str:
    return json.dumps(_plain(value), allow_nan=False, default=str, separators=(", ", ": "))


def to_text(report: WasteReport, top: int = 10) -> str:
    h = report.headline
    out = [
        f"GPU time held but not used: {h.jobs} jobs, {h.gpus_held_h:,.1f} GPU-hours held",
        f"  low-utilisation jobs (U <= 50%): {h.low_jobs_pct:.1f}%",
        f"  idle-slot share of GPU time: interactive {h.interactive_idle_pct:.2f}%, batch {h.batch_idle_pct:.2f}%",
        f"  multi-GPU jobs with a never-used GPU: {h.multi_gpu_never_used_pct:.2f}%",
        f"  jobs with several stable phases: {h.several_stable_phases_pct:.2f}%",
    ]
    if h.interactive_at_limit_pct is not None:
        out.append(f"  interactive jobs that ran into the time limit: {h.interactive_at_limit_pct:.2f}%")
    out += _inputs(report.inputs)
    out += ["", "Causes, by GPU-hours lost in their intervals:"]
    out += [
        f"  {c.gpu_h:10.2f} h  {c.intervals:5d} intervals  {c.jobs:4d} jobs  {c.name} [{c.dimension}]\n      fix: {c.fix}"
        for c in report.causes
    ]
    out += ["", f"Jobs wasting most (top {top}):", "  job            user      U%   held h  unused h  idle h  never-used  shape"]
    for j in report.jobs[:top]:
        out.append(
            f"  {j.job:<14} {j.user:<8} {j.util:5.1f} {j.held_gpu_h:8.2f} {j.unused_gpu_h:9.2f} {j.idle_gpu_h:7.2f}"
            f" {j.never_used_gpus:6d}/{j.gpus:<4d} {j.shape or '-'}"
        )
    out += ["", "Users wasting most:"] + [
        f"  {g.name:<12} {g.unused_gpu_h:9.2f} unused GPU-h of {g.held_gpu_h:.2f} ({g.low_jobs}/{g.jobs} jobs low)"
        for g in report.users[:top]
    ]
    out += ["", "Virtual clusters:"] + [
        f"  {g.name:<12} {g.unused_gpu_h:9.2f} unused GPU-h of {g.held_gpu_h:.2f}" for g in report.clusters[:top]
    ]
    out += ["", f"Longest phases (top {top}), with evidence:"]
    for row in report.intervals[:top]:
        out.append(f"  {row.summary}")
        more = list(zip_longest(row.lines, row.evidence))[1:]
        out += [f"      | line {n}: {line}" if n else f"      | {line}" for n, line in more]
    late = [c for c in report.convergence if c.after_gpu_h]
    if report.convergence:
        out += ["", "Early termination: GPU time after the loss came within 0.1% of its best"]
        early = sum(c.within_at_pct <= 40 for c in report.convergence)
        out.append(
            f"  {early} of {len(report.convergence)} runs got there within 40% of their time;"
            f" {sum(c.after_gpu_h or 0 for c in late):,.2f} GPU-h spent after"
        )
        out += [
            f"  {c.job:<14} at {c.within_at_pct:5.1f}% of the run, {c.after_gpu_h:.2f} GPU-h after"
            for c in sorted(late, key=lambda c: -(c.after_gpu_h or 0))[:top]
        ]
    out += _rightsizing(report.rightsizing, top)
    return "\n".join(out) + "\n"


KIND_NAMES = {SMALLER_GPU: "MIG slice or smaller GPU", FEWER_GPUS: "fewer GPUs", SHORTER_LIMIT: "shorter time limit"}


def _rightsizing(sizing: Rightsizing, top: int) -> list[str]:
    """The advice that frees most, and each user's sums (a limit's GPU-hours are reserved, not held)."""
    if not sizing.advice:
        return []
    sums = {kind: sum(a.frees_gpu_h for a in sizing.advice if a.kind == kind) for kind in KIND_NAMES}
    out = [
        "",
        f"Right-sizing ({len({a.job for a in sizing.advice})} jobs, headroom {100 * sizing.rules.headroom:g}%):"
        f" a MIG slice {sums[SMALLER_GPU]:,.2f} GPU-h, fewer GPUs {sums[FEWER_GPUS]:,.2f} GPU-h freed;"
        f" shorter limits {sums[SHORTER_LIMIT]:,.2f} GPU-h no longer reserved",
    ]
    out += [f"  {a.job:<14} {a.user:<8} {a.advice} ({a.basis}): {a.frees_gpu_h:,.2f} GPU-h" for a in sizing.advice[:top]]
    out += ["  per user:        jobs   slice h   fewer h   limit h  advice freeing most"]
    out += [
        f"  {u.user:<16} {u.jobs:4d} {u.smaller_gpu_h:9.2f} {u.fewer_gpus_h:9.2f} {u.shorter_limit_h:9.2f}  {u.top}"
        for u in sizing.users[:top]
    ]
    return out


def _inputs(inputs: InputReport) -> list[str]:
    """The inputs' warnings and the memory-total line, under the headline."""
    memory = describe(inputs.memory_total)
    lines = [f"  warning: {text}" for text in inputs.warnings] + ([f"  warning: {memory}"] if memory else [])
    estimated = {k: n for k, n in inputs.memory_total.sources.items() if k.startswith("GPU model table") or k == OPTION}
    if estimated:
        lines.append("  memory totals estimated: " + ", ".join(f"{n} GPUs from {k}" for k, n in estimated.items()))
    return ["", "Inputs:", *lines] if lines else []


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")
