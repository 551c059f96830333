"""The measures on small series whose answers can be worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from failclass.waste.allocation import JobAllocation, assign
from failclass.waste.measure import Thresholds, measure
from failclass.waste.samples import GpuSamples
from failclass.waste.summary import job_waste

TOTAL = 40960.0


def series(job: str, gpu: int, values: list[tuple[float, float, float]], node: str = "n1"):
    """(time, utilisation, memory) readings of one GPU."""
    return [(node, gpu, ts, util, mem, TOTAL, job) for ts, util, mem in values]


def test_utilisation_is_time_weighted_not_a_mean_of_readings():
    # 80 % for 30 s, 20 % for 10 s, then 20 % for the usual interval (the median, 20 s)
    rows = series("a", 0, [(0, 80, 1000), (30, 20, 1000), (40, 20, 1000)])
    use = measure(GpuSamples.from_rows(rows, "t")).gpus
    assert use.held_s[0] == 60
    assert use.util[0] == pytest.approx((80 * 30 + 20 * 10 + 20 * 20) / 60)  # 46.7, not the readings' 40


def test_an_idle_slot_needs_sixty_seconds_of_zero_utilisation_and_memory():
    busy = [(t, 90, 5000) for t in range(0, 100, 10)]
    idle_59 = [(t, 0, 0) for t in range(100, 159, 1)]  # 59 readings of 1 s... gaps of 1 s
    rows = series("a", 0, busy + idle_59 + [(159, 90, 5000), (160, 90, 5000)])
    assert "idle_slot" not in measure(GpuSamples.from_rows(rows, "t")).intervals.kind.tolist()
    rows = series("a", 0, busy + [(t, 0, 0) for t in range(100, 160, 1)] + [(160, 90, 5000), (161, 90, 5000)])
    measured = measure(GpuSamples.from_rows(rows, "t"))
    assert measured.intervals.kind.tolist() == ["idle_slot"]
    assert (measured.intervals.start[0], measured.intervals.end[0]) == (100, 160)


def test_zero_utilisation_with_memory_held_is_not_idle():
    rows = series("a", 0, [(t, 0, 3000) for t in range(0, 600, 15)])
    measured = measure(GpuSamples.from_rows(rows, "t"))
    assert measured.gpus.idle_s[0] == 0 and not measured.gpus.never_used[0]
    assert measured.intervals.kind.tolist() == ["low_phase"]
    assert (measured.intervals.start[0], measured.intervals.end[0]) == (0, 600)


def test_a_gpu_the_job_never_touched_is_never_used_and_named_once():
    rows = series("a", 0, [(t, 90, 30000) for t in range(0, 600, 15)]) + series("a", 1, [(t, 0, 0) for t in range(0, 600, 15)])
    measured = measure(GpuSamples.from_rows(rows, "t"))
    assert measured.gpus.never_used.tolist() == [False, True]
    assert measured.intervals.kind.tolist() == ["never_used"]
    waste = job_waste(measured, {}, Thresholds())[0]
    assert (waste.gpus, waste.never_used_gpus, waste.never_used_gpu_h) == (2, 1, pytest.approx(600 / 3600))
    assert waste.util == pytest.approx(45.0)


def test_stable_phases_are_runs_longer_than_240_s_with_over_2_gib_free():
    full, roomy = TOTAL - 1024, TOTAL - 8192
    memory = [full] * 10 + [roomy] * 20 + [full] * 10 + [roomy] * 17 + [full] * 10 + [roomy] * 16 + [full] * 5
    rows = series("a", 0, [(15 * i, 90, m) for i, m in enumerate(memory)])
    # roomy runs: 20 x 15 = 300 s (a phase), 17 x 15 = 255 s (a phase), 16 x 15 = 240 s (not: longer than t)
    assert measure(GpuSamples.from_rows(rows, "t")).gpus.stable_phases.tolist() == [2]


def test_a_sudden_drop_is_found_below_the_robust_band_even_when_drops_are_frequent():
    rng = np.random.default_rng(0)
    util = np.clip(rng.normal(88, 3, 400), 0, 100)
    for start in range(20, 400, 40):  # a 2-minute drop every 10 minutes: 20 % of the time
        util[start : start + 8] = 62  # above 50 %: not low, but far below the GPU's own band
    rows = series("a", 0, [(15 * i, float(u), 30000) for i, u in enumerate(util)])
    measured = measure(GpuSamples.from_rows(rows, "t"))
    drops = measured.intervals.kind == "sudden_drop"
    assert drops.sum() == 10
    assert (measured.intervals.end[drops] - measured.intervals.start[drops]).tolist() == [120.0] * 10


def test_each_low_phase_is_its_own_interval_and_a_lone_reading_neither_cuts_nor_makes_one():
    """A preprocessing plateau at a few percent, then training at 90 % with one reading's
    dip, then a data-starved stretch at 0 % with one-reading bursts: two low phases with
    their own times; the dip and the bursts change nothing."""
    plateau = [(15 * i, 4, 1200) for i in range(20)]  # 0-300 s
    training = [(300 + 15 * i, 90, 30000) for i in range(40)]  # 300-900 s
    training[10] = (450, 3, 30000)  # one reading's dip
    starved = [(900 + 15 * i, 95 if i % 4 == 2 else 0, 30000) for i in range(22)]  # 900-1230 s
    tail = [(1230 + 15 * i, 90, 30000) for i in range(10)]
    measured = measure(GpuSamples.from_rows(series("a", 0, plateau + training + starved + tail), "t"))
    low = measured.intervals.kind == "low_phase"
    assert list(zip(measured.intervals.start[low], measured.intervals.end[low], strict=True)) == [(0, 300), (900, 1230)]
    assert measured.intervals.util[low][0] == pytest.approx(4)


def test_a_gap_in_the_readings_is_missing_data_not_time_held():
    rows = series("a", 0, [(0, 50, 1000), (15, 50, 1000), (30, 50, 1000), (5000, 50, 1000), (5015, 50, 1000)])
    assert measure(GpuSamples.from_rows(rows, "t")).gpus.held_s[0] == 75


def test_readings_go_to_the_job_that_held_the_gpu_at_that_time():
    rows = [("n1", 0, float(t), 90.0, 1.0, TOTAL, "") for t in range(0, 200, 10)]
    jobs = [
        JobAllocation("first", gpus=(("n1", 0),), start=0, end=95),
        JobAllocation("second", gpus=(("n1", 0),), start=100, end=150),
    ]
    placed = assign(GpuSamples.from_rows(rows, "t"), jobs)
    names = [placed.jobs[j] for j in placed.job]
    assert names.count("first") == 10 and names.count("second") == 6  # 160..190 belong to no job: dropped
    assert math.isclose(placed.ts[names.index("second")], 100)


def test_a_low_gpu_without_phases_is_persistently_low_over_its_whole_life():
    """Readings that alternate 20 % and 70 % (dips shorter than a reading's neighbours): no
    run of low readings, but U_i is 45 %: the GPU's whole life is one interval."""
    rows = series("a", 0, [(15 * i, 20 if i % 2 else 70, 30000) for i in range(200)])
    measured = measure(GpuSamples.from_rows(rows, "t"))
    assert measured.intervals.kind.tolist() == ["persistently_low"]
    assert (measured.intervals.start[0], measured.intervals.end[0]) == (0, 3000)


def test_frequent_short_dips_that_every_gpu_shares_are_synchronous_and_a_shared_pause_is_not():
    """Every fourth reading at 3 % on both GPUs at once: the ranks wait on each other. The
    same dips at different readings, or one long pause on both (a checkpoint), are not."""

    def job(dip_at):
        return [
            row for gpu in (0, 1) for row in series("a", gpu, [(15 * i, 3 if dip_at(gpu, i) else 90, 30000) for i in range(200)])
        ]

    together = measure(GpuSamples.from_rows(job(lambda gpu, i: i % 4 == 0), "t")).gpus.synchronous_dips
    apart = measure(GpuSamples.from_rows(job(lambda gpu, i: i % 4 == gpu), "t")).gpus.synchronous_dips
    pause = measure(GpuSamples.from_rows(job(lambda gpu, i: 50 <= i < 100), "t")).gpus.synchronous_dips
    assert together.tolist() == [True, True] and apart.tolist() == [False, False] and pause.tolist() == [False, False]


def test_a_stop_inside_a_slow_stretch_is_a_phase_of_its_own():
    """A tiny batch computing at 20 % with a save at 0 % in the middle: three phases, the
    save's own, and the levels (busy, floor) of each."""
    slow = [(15 * i, 20, 8000) for i in range(20)]  # 0-300 s
    save = [(300 + 15 * i, 0, 8000) for i in range(8)]  # 300-420 s, memory held
    more = [(420 + 15 * i, 20, 8000) for i in range(20)]  # 420-720 s
    measured = measure(GpuSamples.from_rows(series("a", 0, slow + save + more), "t"))
    iv = measured.intervals
    phases = sorted(
        (float(s), float(e), float(f), float(b))
        for k, s, e, f, b in zip(iv.kind, iv.start, iv.end, iv.floor, iv.busy, strict=True)
        if k == "low_phase"
    )
    assert phases == [(0, 300, 20, 20), (300, 420, 0, 0), (420, 720, 20, 20)]
