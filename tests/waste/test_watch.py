"""The idle watch's decisions over running jobs' recent readings."""

from __future__ import annotations

from failclass.waste.allocation import JobAllocation
from failclass.waste.causes import load_causes
from failclass.waste.samples import GpuSamples
from failclass.waste.timeline import timeline_of
from failclass.waste.watch import NEVER_USED, RELEASE, WARN, WatchPolicy, watch

START = 1_700_000_000.0
POLICY = WatchPolicy(warn_idle_s=1800, release_idle_s=3600)
FINISHED = next(c for c in load_causes() if c.id == "unreleased_job")


def readings(job: str, busy_until_min: float, minutes: float, gpus: int = 1, memory: float = 0.0):
    rows = []
    for gpu in range(gpus):
        for i in range(int(minutes * 4)):
            t = START + 15 * i
            busy = t < START + busy_until_min * 60
            rows.append(("n1", gpu, t, 70.0 if busy else 0.0, 9000.0 if busy else memory, 40960.0, job))
    return GpuSamples.from_rows(rows, "test")


def signals(samples, kind="interactive", now_min=None, timelines=None):
    now = START + (now_min if now_min is not None else samples.ts.max() / 60 - START / 60) * 60
    jobs = {"nb": JobAllocation("nb", kind=kind, start=START)}
    return [(s.action, s.job, round(s.idle_s / 60)) for s in watch(samples, jobs, now, POLICY, FINISHED, timelines)]


def test_an_interactive_job_idle_past_the_limits_is_warned_then_released():
    assert signals(readings("nb", 10, 30)) == []
    assert signals(readings("nb", 10, 50)) == [(WARN, "nb", 40)]
    assert signals(readings("nb", 10, 80)) == [(RELEASE, "nb", 70)]


def test_memory_held_by_an_idle_notebook_does_not_count_as_work():
    assert signals(readings("nb", 10, 80, memory=9000.0)) == [(RELEASE, "nb", 70)]


def test_a_batch_job_is_not_released_for_idling():
    assert signals(readings("nb", 10, 80), kind="batch") == []


def test_a_gpu_never_touched_after_ten_minutes_is_flagged_with_its_name():
    busy = readings("nb", 60, 20)
    rows = [
        (busy.nodes[n], int(g), t, float(u), float(m), 40960.0, "nb")
        for n, g, t, u, m in zip(busy.node, busy.gpu, busy.ts, busy.util, busy.mem_used, strict=False)
    ]
    rows += [("n1", 1, START + 15 * i, 0.0, 0.0, 40960.0, "nb") for i in range(80)]
    found = watch(GpuSamples.from_rows(rows, "t"), {"nb": JobAllocation("nb", start=START)}, START + 20 * 60, POLICY)
    assert [(s.action, s.gpus) for s in found] == [(NEVER_USED, ("n1:1",))]
    early = watch(GpuSamples.from_rows(rows, "t"), {"nb": JobAllocation("nb", start=START)}, START + 5 * 60, POLICY)
    assert early == []


def test_a_batch_job_idle_after_its_training_finished_is_released_with_the_line():
    line = "2023-11-14T22:23:00Z `Trainer.fit` stopped: `max_epochs=3` reached."  # START + 9 min 40 s
    timeline = {"nb": timeline_of([line])}
    assert signals(readings("nb", 10, 20), kind="batch", timelines=timeline) == []  # 10 min idle: within the grace
    found = signals(readings("nb", 10, 40), kind="batch", timelines=timeline)
    assert found == [(RELEASE, "nb", 30)]


def test_a_job_that_ended_is_not_watched_however_long_it_idled():
    samples = readings("nb", 10, 80)
    now = START + 80 * 60
    running = {"nb": JobAllocation("nb", kind="interactive", start=START, end=now)}  # ends now: still running
    assert [s.action for s in watch(samples, running, now, POLICY)] == [RELEASE]
    ended = {"nb": JobAllocation("nb", kind="interactive", start=START, end=now - 1)}
    assert watch(samples, ended, now, POLICY) == []
    assert watch(samples, ended, now + 5 * 365 * 86400, POLICY) == []  # years later: still nothing
