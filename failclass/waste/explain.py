"""Name the likely cause of each low-utilisation interval: the job's log laid over the
interval (checkpoint saves, installs, downloads, a finished run left idling...) and the
GPU's series (peak memory against total, the job's other GPUs), with the evidence lines."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from failclass.waste.allocation import JobAllocation
from failclass.waste.causes import Cause, any_cause
from failclass.waste.measure import DROP, IDLE, LOW, STEADY, Measured
from failclass.waste.timeline import TimedLine, Timeline

SLACK_S = 60.0  # a log line this close to an interval's edges counts as inside it (or 5 % of a shorter job)
MAX_EVIDENCE = 3
QUIET_SLACKS = 10  # a log that went quiet this close before the GPU did (10 minutes in a long job), and stayed quiet


@dataclass(frozen=True)
class Attribution:
    """A low-utilisation interval attributed to a cause (not a decision's Explanation)."""

    interval: int  # row in Measured.intervals
    cause: str  # a cause id, or "" when nothing explains it
    evidence: tuple[str, ...]
    lines: tuple[int, ...] = ()  # the evidence's line numbers in the log
    confidence: str = ""  # high, medium or low: how directly the log and the series show the cause
    basis: str = ""  # what the confidence rests on


def explain(
    measured: Measured, causes: Sequence[Cause], jobs: Mapping[str, JobAllocation], timelines: Mapping[str, Timeline]
) -> list[Attribution]:
    if not len(measured.intervals.kind):
        return []
    every = [(row, facts, timelines.get(name)) for row, facts, name in _interval_facts(measured, jobs)]
    hits = _Hits(any_cause(list(causes)))
    # first without the causes that only the series show where the log explains nothing else
    # (max_explained_share), then with them, knowing how much of each GPU's low time the log explained
    first = [_first_cause(row, facts, causes, timeline, hits) for row, facts, timeline in every]
    if not any("max_explained_share" in c.series for c in causes):
        return first
    share = _explained_share(causes, [facts for _, facts, _ in every], first, len(measured.gpus.job))
    return [
        _first_cause(row, replace(facts, explained_share=float(share[facts.gpu])), causes, timeline, hits)
        for row, facts, timeline in every
    ]


def _interval_facts(measured: Measured, jobs: Mapping[str, JobAllocation]) -> list[tuple[int, _Facts, str]]:
    """Each interval's facts, with its job's name."""
    iv, use, names = measured.intervals, measured.gpus, measured.samples.jobs
    gpu_of = {(int(j), int(n), int(g)): i for i, (j, n, g) in enumerate(zip(use.job, use.node, use.gpu, strict=True))}
    used = {int(j) for j, never in zip(use.job, use.never_used, strict=False) if not never}
    size = len(names)
    job_end = np.full(size, -np.inf)
    np.maximum.at(job_end, use.job, use.start + use.held_s)
    job_start = np.full(size, np.inf)
    np.minimum.at(job_start, use.job, use.start)
    idle_share = np.bincount(use.job, weights=use.idle_s, minlength=size) / np.maximum(
        np.bincount(use.job, weights=use.held_s, minlength=size), 1e-9
    )
    job_util = np.bincount(use.job, weights=use.util, minlength=size) / np.maximum(np.bincount(use.job, minlength=size), 1)
    low_s = np.zeros(len(use.job))  # per GPU, its time in low phases (all of it when persistently low)
    for low in np.flatnonzero((iv.kind == LOW) | (iv.kind == STEADY)):
        low_s[gpu_of[(int(iv.job[low]), int(iv.node[low]), int(iv.gpu[low]))]] += float(iv.end[low] - iv.start[low])
    every = []
    for row in range(len(iv.kind)):
        code = int(iv.job[row])
        name = names[code]
        gpu = gpu_of[(code, int(iv.node[row]), int(iv.gpu[row]))]
        facts = _Facts(
            kind=str(iv.kind[row]),
            start=float(iv.start[row]),
            end=float(iv.end[row]),
            job_start=float(job_start[code]),
            job_end=float(job_end[code]),
            peak_pct=_pct(float(use.mem_peak[gpu]), float(use.mem_total[gpu])),
            other_gpus_used=code in used,
            job_kind=jobs[name].kind if name in jobs else "batch",
            idle_share=float(idle_share[code]),
            slack=min(SLACK_S, 0.05 * float(job_end[code] - job_start[code])),
            synchronous_dips=bool(use.synchronous_dips[gpu]),
            job_low=bool(job_util[code] <= measured.thresholds.low_util_pct),
            phase_share=float(iv.end[row] - iv.start[row]) / max(float(use.held_s[gpu]), 1e-9),
            low_share=min(1.0, low_s[gpu] / max(float(use.held_s[gpu]), 1e-9)),
            util=float(iv.util[row]),
            busy=float(iv.busy[row]),
            floor=float(iv.floor[row]),
            gpu=gpu,
        )
        every.append((row, facts, name))
    return every


def _explained_share(causes: Sequence[Cause], facts: Sequence[_Facts], found: Sequence[Attribution], gpus: int) -> np.ndarray:
    """Per GPU, the share of its time in low phases and drops (and, persistently low, the rest
    of its life outside its intervals) that causes named from the log explain."""
    by_log = {c.id for c in causes if c.log is not None or c.declared_kind}
    time = {kind: np.zeros(gpus) for kind in (LOW, IDLE, STEADY, "explained")}
    for fact, explanation in zip(facts, found, strict=True):
        kind = LOW if fact.kind == DROP else fact.kind
        if kind in time:
            time[kind][fact.gpu] += fact.end - fact.start
            time["explained"][fact.gpu] += (fact.end - fact.start) * (kind == LOW and explanation.cause in by_log)
    paused = time[LOW] + np.maximum(time[STEADY] - time[LOW] - time[IDLE], 0)
    return time["explained"] / np.maximum(paused, 1e-9)


@dataclass(frozen=True)
class _Facts:
    kind: str
    start: float
    end: float
    job_start: float
    job_end: float
    peak_pct: float
    other_gpus_used: bool
    job_kind: str
    idle_share: float
    slack: float  # how close to an edge a line or a time still counts
    synchronous_dips: bool  # the GPU's frequent short dips are shared by all the job's GPUs
    job_low: bool  # the job's U (the mean of its GPUs') at or below the low threshold
    phase_share: float  # the interval's share of the GPU's time held
    low_share: float  # the share of the GPU's time held in low phases (or 1 when persistently low)
    util: float  # the interval's mean utilisation
    busy: float  # the interval's 90th-percentile reading: how high the GPU goes when it works
    floor: float  # its 10th-percentile reading: whether the GPU stops in it or computes throughout
    gpu: int  # row in Measured.gpus
    explained_share: float = math.inf  # the share of the GPU's low time that log-named causes explain (unknown yet)


class _Hits:
    """Each cause's matching lines of each log, found once however many intervals ask."""

    def __init__(self, maybe: re.Pattern[str] | None) -> None:
        self._maybe = maybe  # finds every line some cause may find (causes.any_cause)
        self._found: dict[tuple[int, str], list[TimedLine]] = {}
        self._candidates: dict[int, list[TimedLine]] = {}

    def of(self, cause: Cause, timeline: Timeline) -> list[TimedLine]:
        key = (id(timeline), cause.id)
        if key not in self._found:
            assert cause.log is not None
            self._found[key] = [line for line in self._lines(timeline) if cause.log.matches(line.body)]
        return self._found[key]

    def _lines(self, timeline: Timeline) -> list[TimedLine]:
        if id(timeline) not in self._candidates:
            maybe = self._maybe
            self._candidates[id(timeline)] = [line for line in timeline.lines if maybe and maybe.search(line.text)]
        return self._candidates[id(timeline)]


def _first_cause(row: int, facts: _Facts, causes: Sequence[Cause], timeline: Timeline | None, hits: _Hits) -> Attribution:
    for cause in causes:
        if not cause.detectable or facts.kind not in cause.intervals or not _series_hold(cause.series, facts):
            continue
        if cause.log is None and not cause.declared_kind:
            return Attribution(row, cause.id, (), (), cause.confidence, _series_basis(cause, facts))
        found = _log_evidence(cause, facts, timeline, hits) if cause.log else None
        if found is None and cause.declared_kind and facts.job_kind == cause.declared_kind:
            text = f"the jobs file declares the job {cause.declared_kind}"
            found = _Found((text,), (), "high", text)
        if found is not None:
            return Attribution(row, cause.id, found.texts, found.lines, found.confidence, found.basis)
    return Attribution(row, "", ())


def _series_basis(cause: Cause, facts: _Facts) -> str:
    """What the series show, in the words of the cause's conditions."""
    said = {
        "peak_memory_below_pct": f"peak memory {facts.peak_pct:.0f}% of total",
        "peak_memory_above_pct": f"peak memory {facts.peak_pct:.0f}% of total",
        "other_gpus_used": "the job's other GPUs used" if facts.other_gpus_used else "no GPU of the job used",
        "synchronous_dips": "dips at the same readings on all the job's GPUs",
        "min_low_share": f"low for {facts.low_share:.0%} of its time",
        "max_busy_pct": f"90th percentile {facts.busy:.0f}%",
        "min_floor_pct": f"10th percentile {facts.floor:.0f}%",
        "max_explained_share": f"{facts.explained_share:.0%} of its pauses explained by the log",
        "job_low": "the job's U low",
    }
    return "the series: " + ", ".join(said[name] for name in cause.series if name in said)


_CHECKS: dict[str, Callable[[_Facts, Any], bool]] = {
    "peak_memory_below_pct": lambda f, v: f.peak_pct < float(v),
    "peak_memory_above_pct": lambda f, v: f.peak_pct > float(v),
    "other_gpus_used": lambda f, v: f.other_gpus_used == bool(v),
    "job_kind": lambda f, v: f.job_kind == v,
    "min_idle_share": lambda f, v: f.idle_share >= float(v),
    "job_low": lambda f, v: f.job_low == bool(v),
    "min_phase_share": lambda f, v: f.phase_share >= float(v),
    "max_phase_share": lambda f, v: f.phase_share <= float(v),
    "synchronous_dips": lambda f, v: f.synchronous_dips == bool(v),
    "min_low_share": lambda f, v: f.low_share >= float(v),
    "max_util_pct": lambda f, v: f.util <= float(v),
    "min_floor_pct": lambda f, v: f.floor >= float(v),
    "max_busy_pct": lambda f, v: f.busy <= float(v),
    "max_explained_share": lambda f, v: f.explained_share <= float(v),
}


def _series_hold(series: Mapping[str, object], facts: _Facts) -> bool:
    return all(_CHECKS[name](facts, value) for name, value in series.items())


@dataclass(frozen=True)
class _Found:
    texts: tuple[str, ...]
    lines: tuple[int, ...]
    confidence: str
    basis: str


def _log_evidence(cause: Cause, facts: _Facts, timeline: Timeline | None, found: _Hits) -> _Found | None:
    """The lines that show the cause in this interval, and how surely: a line whose own time
    places it (or one the whole job's log states) is high; a line placed only between its
    neighbours' times, a line with no time, or a log that went quiet, medium."""
    assert cause.log is not None
    if timeline is None:
        return None
    hits = found.of(cause, timeline)
    where = cause.log.where
    timed = [h for h in hits if not math.isnan(h.ts)]
    if where == "anywhere":
        chosen = hits
    elif where == "during":
        chosen = [h for h in timed if _meets(h, facts.start - facts.slack, facts.end + facts.slack)]
    elif where == "at_edge":  # the pause begins with the line, or the line reports it done
        edges = (facts.start, facts.end)
        chosen = [h for h in timed if any(_meets(h, edge - facts.slack, edge + facts.slack) for edge in edges)]
    elif where == "before_idle_to_end":
        ends_job = facts.end >= facts.job_end - facts.slack
        chosen = [h for h in timed if h.ts <= facts.start + facts.slack] if ends_job else []
        last = timeline.last
        went_quiet = last is not None and facts.start - QUIET_SLACKS * facts.slack <= last.ts <= facts.start + facts.slack
        if ends_job and not chosen and cause.log.silent_after and went_quiet:
            assert last is not None
            text = f"the log prints nothing after its line at {_iso(last.ts)}: {last.text.strip()[:240]}"
            return _Found((text,), (last.number,), "medium", "the log went quiet as the GPU did")
    else:  # span: first to last matching line lasts long enough and overlaps the interval
        long_enough = timed and timed[-1].ts - timed[0].ts >= cause.log.min_span_s
        overlaps = long_enough and timed[0].ts <= facts.end + facts.slack and timed[-1].ts >= facts.start - facts.slack
        chosen = [timed[0], timed[-1]] if overlaps else []
    basis = "the log states it for the whole job" if where == "anywhere" else "a line whose time places it"
    confidence = "high"
    if chosen and where != "anywhere" and all(not math.isnan(h.until) and h.until > h.ts + facts.slack for h in chosen):
        confidence, basis = "medium", "a line without a time of its own, placed between its neighbours'"
    if not chosen and where != "anywhere":
        chosen = _untimed(cause.log.untimed, [h for h in hits if math.isnan(h.ts)], facts)
        confidence, basis = "medium", "a line without a time, where such a line may count"
    if not chosen:
        return None
    shown = chosen[:MAX_EVIDENCE]
    return _Found(tuple(h.text.strip()[:300] for h in shown), tuple(h.number for h in shown), confidence, basis)


def _meets(line: TimedLine, start: float, end: float) -> bool:
    """Whether the line may lie in [start, end]: its time, or for a line without one the span
    from its predecessor's time to the next timed line's."""
    return line.ts <= end and (line.ts if math.isnan(line.until) else line.until) >= start


def _untimed(rule: str, hits: list[TimedLine], facts: _Facts) -> list[TimedLine]:
    """Lines without a time (an untimed log, or lines before its first time stamp) that may
    still explain an interval: one that begins with the job (an install, a download, a
    preprocessing step, printed before training), one that lasts to its end (a finished run),
    or any."""
    if rule == "start" and facts.start <= facts.job_start + facts.slack:
        return hits
    if rule == "end" and facts.end >= facts.job_end - facts.slack:
        return hits
    return hits if rule == "anywhere" else []


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _pct(peak: float, total: float) -> float:
    return 100 * peak / total if total and math.isfinite(total) else math.nan
