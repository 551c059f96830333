"""The measures of GPU time held but not used, vectorised over one sample table.

Definitions (and the studies they come from):
- U_i, a GPU's utilisation: the time-weighted mean of its readings over the job's life;
  U, the job's: the mean of its U_i; a job with U <= 50 % is low (Gao et al., ICSE 2024).
- An idle slot: at least 60 s in which the GPU shows utilisation 0 and memory 0; a
  never-used GPU: one a job held and never touched (Yang et al., CloudBrain-I).
- A stable phase: longer than 240 s with more than 2 GiB of its memory idle (CloudBrain-I).
- A sudden drop: at least 60 s below the GPU's median minus three (robust) standard
  deviations of its active readings.
- A low phase: a run of at least five readings and 2 s whose utilisation (the median of each
  reading and its neighbours, so that a burst or a dip of one reading does not cut or make
  a phase) is at or below 50 % outside an idle slot: a preprocessing step, a data loader
  the GPU waits on, a checkpoint save, a tiny batch for the whole life. A low stretch is cut
  where the GPU stops (at or below 5 % for five readings) and where it computes slowly, so a
  save inside a tiny-batch run is a phase of its own. Each phase is explained on its own;
  readings in a phase are no sudden drop.
- Synchronous dips: at least a fifth of a GPU's readings are dips (below half its busy
  level, the 90th percentile of its readings), a new dip begins at least once in 10
  readings on average (a wait that recurs with the steps, not an epoch's pause), and three
  in four dips are at readings where every used GPU of the job dips too: the ranks waiting
  on each other's data (Gao et al.'s data exchange). Checkpoint and evaluation pauses also
  stall every rank, but rarely and for many readings at a time.
- Persistently low: a GPU with U_i <= 50 % whose idle slots, drops and low phases cover
  less than half its time (its dips are shorter than a reading, or it hovers near 50 %):
  its whole life is one interval, for the causes the series shows as a whole.

A reading stands for the time until the next one of its GPU; the last one, and any gap
longer than ``max_gap_s`` (missing data, not time held), counts the table's usual interval.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from failclass.waste.samples import GpuSamples

IDLE, DROP, LOW, NEVER_USED, STEADY = "idle_slot", "sudden_drop", "low_phase", "never_used", "persistently_low"
RECUR_READINGS = 10  # synchronous dips recur at least once in this many readings (a step's wait, not an epoch's pause)


@dataclass(frozen=True)
class Thresholds:
    idle_slot_s: float = 60.0
    stable_phase_s: float = 240.0
    stable_idle_mib: float = 2048.0
    low_util_pct: float = 50.0
    drop_sigmas: float = 3.0
    drop_min_s: float = 60.0
    phase_readings: int = 5
    phase_min_s: float = 2.0
    stop_pct: float = 5.0  # at or below, a low phase's GPU has stopped rather than computing slowly
    max_gap_s: float = 300.0


@dataclass(frozen=True)
class GpuUse:
    """One GPU of one job (a segment of the sorted table), as parallel arrays."""

    job: np.ndarray  # int32 codes into the samples' jobs
    node: np.ndarray
    gpu: np.ndarray
    start: np.ndarray  # first reading, Unix s
    held_s: np.ndarray  # time covered by readings
    util: np.ndarray  # U_i, percent
    mem_mean: np.ndarray  # MiB, time-weighted
    mem_peak: np.ndarray
    mem_total: np.ndarray
    idle_s: np.ndarray  # time in idle slots
    never_used: np.ndarray  # bool
    stable_phases: np.ndarray  # count
    synchronous_dips: np.ndarray  # bool: frequent short dips that every used GPU of the job shares
    mem_complete: np.ndarray  # bool: every reading has its memory used (the peak is a peak, not a gap)


@dataclass(frozen=True)
class Intervals:
    """Low-utilisation intervals: idle slots, sudden drops, persistently low GPUs."""

    kind: np.ndarray  # str
    job: np.ndarray
    node: np.ndarray
    gpu: np.ndarray
    start: np.ndarray
    end: np.ndarray
    util: np.ndarray  # mean utilisation inside
    mem: np.ndarray  # mean memory inside, MiB
    busy: np.ndarray  # the 90th percentile of the readings inside: the level it reaches when it works
    floor: np.ndarray  # the 10th percentile: whether it ever stops (a pause) or computes throughout


@dataclass(frozen=True)
class Measured:
    samples: GpuSamples
    gpus: GpuUse
    intervals: Intervals
    thresholds: Thresholds


def measure(samples: GpuSamples, thresholds: Thresholds = Thresholds()) -> Measured:
    """Every measure of ``samples`` (any order; rows of the unknown job are ignored)."""
    known = np.asarray([name != "" for name in samples.jobs] or [False])[samples.job]
    table = samples.take(np.flatnonzero(known)).sorted()
    if not len(table):
        return Measured(table, _empty_use(), _intervals([]), thresholds)
    change = np.ones(len(table), dtype=bool)
    change[1:] = (table.job[1:] != table.job[:-1]) | (table.node[1:] != table.node[:-1]) | (table.gpu[1:] != table.gpu[:-1])
    first = np.flatnonzero(change)
    segment = np.cumsum(change) - 1
    dt = _durations(table.ts, change, thresholds.max_gap_s)
    mem = np.nan_to_num(table.mem_used, nan=0.0)
    held = np.add.reduceat(dt, first)
    idle = (table.util == 0) & (mem == 0)
    idle_runs = _runs(idle, change, dt, thresholds.idle_slot_s)
    idle_s = np.bincount(segment[idle_runs.first], weights=idle_runs.seconds, minlength=len(first))
    free = table.mem_total - mem
    stable = _runs(free > thresholds.stable_idle_mib, change, dt, thresholds.stable_phase_s, strict=True)
    use = GpuUse(
        table.job[first],
        table.node[first],
        table.gpu[first],
        table.ts[first],
        held,
        np.add.reduceat(table.util * dt, first) / held,
        np.add.reduceat(mem * dt, first) / held,
        np.maximum.reduceat(mem, first),
        np.fmax.reduceat(table.mem_total, first),
        idle_s,
        np.logical_and.reduceat(idle, first),
        np.bincount(segment[stable.first], minlength=len(first)),
        np.zeros(len(first), dtype=bool),
        np.logical_and.reduceat(np.isfinite(table.mem_used), first),
    )
    use = replace(use, synchronous_dips=_synchronous_dips(table, segment, first, change, use, dt))
    # idle readings too short for an idle slot belong to the low phase around them (a short
    # job's idle tail, a pause of under a minute); a never-used GPU has no phases
    smoothed = _smoothed(table.util, change)
    low = (smoothed <= thresholds.low_util_pct) & ~idle_runs.covering(len(table)) & ~use.never_used[segment]
    # a low stretch is cut where the GPU stops (a save, a read, a preprocessing step) and
    # where it computes at a low level (a tiny batch, a starved loader): each is its own phase
    stopped = _long_runs(low & (smoothed <= thresholds.stop_pct), change, dt, thresholds)
    computing = _long_runs(low & ~stopped.covering(len(table)), change, dt, thresholds)
    phases = _Runs(*(np.concatenate([getattr(stopped, f), getattr(computing, f)]) for f in ("first", "last", "seconds")))
    in_phase = phases.covering(len(table))
    drops = _runs(_below_three_sigma(table, segment, first, idle, thresholds) & ~in_phase, change, dt, thresholds.drop_min_s)
    covered = sum(np.bincount(segment[r.first], weights=r.seconds, minlength=len(first)) for r in (idle_runs, drops, phases))
    steady = np.flatnonzero((use.util <= thresholds.low_util_pct) & ~use.never_used & (covered < 0.5 * held))
    util = table.util.astype(np.float64)
    levels = (_segment_high(util, segment, len(first)), _segment_high(util, segment, len(first), 1))
    parts = [
        _segment_intervals(NEVER_USED, use, np.flatnonzero(use.never_used), levels),  # its whole life, however short
        _run_intervals(IDLE, table, idle_runs.take(~use.never_used[segment[idle_runs.first]]), dt, mem),
        _run_intervals(DROP, table, drops, dt, mem),
        _run_intervals(LOW, table, phases, dt, mem),
        _segment_intervals(STEADY, use, steady, levels),
    ]
    return Measured(table, use, _intervals(parts), thresholds)


@dataclass(frozen=True)
class _Runs:
    first: np.ndarray  # row of the run's first reading
    last: np.ndarray
    seconds: np.ndarray

    def take(self, keep: np.ndarray) -> _Runs:
        return _Runs(self.first[keep], self.last[keep], self.seconds[keep])

    def covering(self, rows: int) -> np.ndarray:
        """A mask of the ``rows`` rows that lie in one of these runs."""
        edges = np.zeros(rows + 1, dtype=np.int64)
        np.add.at(edges, self.first, 1)
        np.add.at(edges, self.last + 1, -1)
        return np.cumsum(edges[:-1]) > 0


def _long_runs(mask: np.ndarray, change: np.ndarray, dt: np.ndarray, thresholds: Thresholds) -> _Runs:
    """The runs of ``mask`` long enough for a phase: enough readings and seconds."""
    runs = _runs(mask, change, dt, thresholds.phase_min_s)
    return runs.take(runs.last - runs.first + 1 >= thresholds.phase_readings)


def _durations(ts: np.ndarray, change: np.ndarray, max_gap_s: float) -> np.ndarray:
    dt = np.empty(len(ts), dtype=np.float64)
    dt[:-1] = ts[1:] - ts[:-1]
    ends = np.append(change[1:], True)
    usual = float(np.median(dt[~ends])) if (~ends).any() else 1.0
    dt[ends] = usual
    dt[(dt > max_gap_s) | (dt < 0)] = usual
    return dt


def _runs(mask: np.ndarray, change: np.ndarray, dt: np.ndarray, min_s: float, strict: bool = False) -> _Runs:
    """Maximal runs of ``mask`` inside segments lasting at least (or, strict, more than) ``min_s``."""
    starts = mask & (change | ~np.roll(mask, 1))
    starts[0] = mask[0]
    rows = np.flatnonzero(mask)
    if not len(rows):
        empty = np.empty(0, dtype=np.int64)
        return _Runs(empty, empty, np.empty(0))
    run = np.cumsum(starts)[rows] - 1
    seconds = np.bincount(run, weights=dt[rows])
    first = np.flatnonzero(starts)
    last = np.append(rows[np.flatnonzero(np.diff(run))], rows[-1])
    keep = seconds > min_s if strict else seconds >= min_s
    return _Runs(first[keep], last[keep], seconds[keep])


def _synchronous_dips(
    table: GpuSamples, segment: np.ndarray, first: np.ndarray, change: np.ndarray, use: GpuUse, dt: np.ndarray
) -> np.ndarray:
    """Per GPU, whether its dips are frequent, short and shared by all the job's used GPUs
    (readings put on a common clock: each time rounded to the usual interval, which absorbs
    nvidia-smi's per-node offsets)."""
    busy = _segment_high(table.util.astype(np.float64), segment, len(first))
    idle = (table.util == 0) & (np.nan_to_num(table.mem_used, nan=0.0) == 0)  # not started yet, or released
    dip = ~use.never_used[segment] & ~idle & (table.util < 0.5 * busy[segment])
    count = np.bincount(segment[~idle], minlength=len(first))
    runs = _runs(dip, change, np.ones(len(table)), 0.0)
    step = max(float(np.median(dt)), 1e-3) if len(dt) else 1.0
    tick = np.round((table.ts - table.ts.min()) / step).astype(np.int64) if len(table) else np.zeros(0, dtype=np.int64)
    gpus = np.bincount(use.job[~use.never_used], minlength=len(table.jobs))
    keys, where = np.unique(table.job[dip].astype(np.int64) * (1 << 40) + tick[dip], return_inverse=True)
    shared = np.zeros(len(table), dtype=bool)
    shared[np.flatnonzero(dip)] = (np.bincount(where, minlength=len(keys))[where] >= gpus[table.job[dip]]) & (
        gpus[table.job[dip]] >= 2
    )
    dips = np.bincount(segment[dip], minlength=len(first))
    frequent = dips >= 0.2 * count
    recurring = np.bincount(segment[runs.first], minlength=len(first)) >= count / RECUR_READINGS
    together = np.bincount(segment[shared], minlength=len(first)) >= 0.75 * np.maximum(dips, 1)
    return frequent & recurring & together


def _smoothed(util: np.ndarray, change: np.ndarray) -> np.ndarray:
    """Each reading's median with its neighbours on the same GPU (the edges keep their own)."""
    util = util.astype(np.float64)
    before, after = np.roll(util, 1), np.roll(util, -1)
    before[change] = util[change]
    ends = np.append(change[1:], True)
    after[ends] = util[ends]
    return np.median(np.stack([before, util, after]), axis=0)


def _below_three_sigma(table: GpuSamples, segment: np.ndarray, first: np.ndarray, idle: np.ndarray, t: Thresholds) -> np.ndarray:
    """Active readings below median - k * sigma of their GPU's active readings, with the
    robust sigma 1.4826 * MAD, so that frequent drops do not widen the band that finds them."""
    active = np.flatnonzero(~idle)
    median = _segment_median(table.util[active].astype(np.float64), segment[active], len(first))
    deviation = np.abs(table.util[active] - median[segment[active]])
    sigma = 1.4826 * _segment_median(deviation, segment[active], len(first))
    below = np.zeros(len(table), dtype=bool)
    floor = median - t.drop_sigmas * np.maximum(sigma, 1.0)  # a flat series still tolerates 1 point of noise
    below[active] = table.util[active] < floor[segment[active]]
    return below


def _segment_high(values: np.ndarray, segment: np.ndarray, segments: int, tenths: int = 9) -> np.ndarray:
    """Each segment's ``tenths`` decile: the 90th percentile by default (the level it works at
    when it works), the 10th for its floor."""
    ordered, starts, counts = _sorted_by_segment(values, segment, segments)
    high = np.full(segments, np.nan)
    present = counts > 0
    high[present] = ordered[starts[present] + (tenths * (counts[present] - 1)) // 10]
    return high


def _segment_median(values: np.ndarray, segment: np.ndarray, segments: int) -> np.ndarray:
    ordered, starts, counts = _sorted_by_segment(values, segment, segments)
    median = np.full(segments, np.nan)
    present = counts > 0
    low = starts[present] + (counts[present] - 1) // 2
    high = starts[present] + counts[present] // 2
    median[present] = (ordered[low] + ordered[high]) / 2
    return median


def _sorted_by_segment(values: np.ndarray, segment: np.ndarray, segments: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``values`` sorted within their segments, each segment's first index and its count."""
    counts = np.bincount(segment, minlength=segments)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return _sorted_within(values, segment), starts, counts


def _sorted_within(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """``values`` ordered by segment, then value: one sort of ``segment * 128 + value`` where
    that key is exact (utilisation, 0-100 %), else a two-key sort (several times slower)."""
    if len(values) and values.min() >= 0 and values.max() < 128 and segment.max() < 1 << 30:
        offset = segment.astype(np.float64) * 128
        key = offset + values
        if np.array_equal(key - offset, values):
            return np.sort(key) - np.sort(offset)
    return values[np.lexsort((values, segment))]


def _run_intervals(kind: str, table: GpuSamples, runs: _Runs, dt: np.ndarray, mem: np.ndarray) -> Intervals:
    cum_util = np.concatenate(([0.0], np.cumsum(table.util * dt)))
    cum_mem = np.concatenate(([0.0], np.cumsum(mem * dt)))

    def span(cum):
        return (cum[runs.last + 1] - cum[runs.first]) / runs.seconds

    lengths = runs.last - runs.first + 1
    run = np.repeat(np.arange(len(runs.first)), lengths)
    rows = runs.first[run] + np.arange(len(run)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return Intervals(
        np.full(len(runs.first), kind, dtype=object),
        table.job[runs.first],
        table.node[runs.first],
        table.gpu[runs.first],
        table.ts[runs.first],
        table.ts[runs.last] + dt[runs.last],
        span(cum_util),
        span(cum_mem),
        _segment_high(table.util[rows].astype(np.float64), run, len(runs.first)),
        _segment_high(table.util[rows].astype(np.float64), run, len(runs.first), 1),
    )


def _segment_intervals(kind: str, use: GpuUse, rows: np.ndarray, levels: tuple[np.ndarray, np.ndarray]) -> Intervals:
    return Intervals(
        np.full(len(rows), kind, dtype=object),
        use.job[rows],
        use.node[rows],
        use.gpu[rows],
        use.start[rows],
        use.start[rows] + use.held_s[rows],
        use.util[rows],
        use.mem_mean[rows],
        levels[0][rows],
        levels[1][rows],
    )


def _intervals(parts: list[Intervals]) -> Intervals:
    if not parts:
        fields = len(Intervals.__dataclass_fields__)
        return Intervals(*(np.empty(0, dtype=object if i == 0 else np.float64) for i in range(fields)))
    return Intervals(*(np.concatenate([getattr(p, f) for p in parts]) for f in Intervals.__dataclass_fields__))


def _empty_use() -> GpuUse:
    return GpuUse(*(np.empty(0) for _ in GpuUse.__dataclass_fields__))
