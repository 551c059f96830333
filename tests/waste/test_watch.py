"""The idle watch's decisions over running jobs' recent readings."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import ROOT

from failclass.contracts import CANCEL, HUNG, NEVER_USED, RELEASE, WARN
from failclass.policy.watch import IdleRule, WatchPolicy
from failclass.waste.allocation import JobAllocation
from failclass.waste.causes import load_causes
from failclass.waste.samples import GpuSamples
from failclass.waste.timeline import timeline_of
from failclass.waste.watch import LogActivity, log_activity, watch

START = 1_700_000_000.0
POLICY = WatchPolicy(idle=(IdleRule(warn_minutes=(30,), release_minutes=60, grace_minutes=0),))
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


HANG_LOG = ROOT / "corpora" / "multirank" / "attempts" / "srun_label__hang__r0of4__0" / "job.log"


def hung_job(tmp_path: Path, written_min_ago: float, now: float) -> dict[str, LogActivity]:
    """A real job log (its first steps, before the hang) last written ``written_min_ago``."""
    log = tmp_path / "job.log"
    log.write_text("".join(HANG_LOG.read_text().splitlines(keepends=True)[:12]))
    os.utime(log, (now - written_min_ago * 60, now - written_min_ago * 60))
    return {"nb": log_activity(log)}


def test_a_job_that_worked_then_stopped_with_its_log_silent_is_hung_then_cancelled(tmp_path: Path) -> None:
    samples = readings("nb", 10, 50)
    now = float(samples.ts.max())
    jobs = {"nb": JobAllocation("nb", kind="batch", start=START)}
    hung = watch(samples, jobs, now, POLICY, activity=hung_job(tmp_path, 40, now))
    assert [(s.action, round(s.idle_s / 60)) for s in hung] == [(HUNG, 40)]
    assert hung[0].reason.startswith("no GPU work for 40 min and no log line for 40 min after it had worked")
    assert hung[0].evidence == tuple(HANG_LOG.read_text().splitlines()[7:12])  # its last lines, quoted
    # Still writing to its log (a long CPU phase, an evaluation printing): not hung.
    assert watch(samples, jobs, now, POLICY, activity=hung_job(tmp_path, 2, now)) == []
    later = readings("nb", 10, 80)
    cancelled = watch(later, jobs, float(later.ts.max()), POLICY, activity=hung_job(tmp_path, 70, float(later.ts.max())))
    assert [s.action for s in cancelled] == [CANCEL]


def test_a_job_that_never_worked_or_idles_by_choice_is_not_hung(tmp_path: Path) -> None:
    never = readings("nb", 0, 50)
    now = float(never.ts.max())
    batch = {"nb": JobAllocation("nb", kind="batch", start=START)}
    assert watch(never, batch, now, POLICY, activity=hung_job(tmp_path, 40, now)) == []
    notebook = {"nb": JobAllocation("nb", kind="interactive", start=START)}
    samples = readings("nb", 10, 50)
    found = watch(samples, notebook, float(samples.ts.max()), POLICY, activity=hung_job(tmp_path, 40, float(samples.ts.max())))
    assert [s.action for s in found] == [WARN]


def test_no_reading_for_a_while_is_not_an_idle_gpu(tmp_path: Path) -> None:
    samples = readings("nb", 10, 80)
    stale_now = float(samples.ts.max()) + 11 * 60  # the exporter stopped 11 minutes ago
    notebook = {"nb": JobAllocation("nb", kind="interactive", start=START)}
    assert watch(samples, notebook, stale_now, POLICY) == []
    assert [s.action for s in watch(samples, notebook, float(samples.ts.max()), POLICY)] == [RELEASE]


def test_the_default_policy_warns_twice_then_releases_and_a_job_in_its_grace_is_left_alone():
    from failclass.policy.config import load_policy

    default = load_policy().watch
    jobs = {"nb": JobAllocation("nb", user="ana", cluster="short", kind="interactive", start=START)}
    trace = readings("nb", 10, 90)

    def at(minute: float) -> list[tuple[str, int, float]]:
        found = watch(trace, jobs, START + minute * 60, default)
        return [(s.action, s.step, round((s.since - START) / 60)) for s in found]

    assert at(35) == []  # 25 min idle
    assert at(41) == [(WARN, 1, 10)]  # 31 min: the first warning of this stretch, which began at minute 10
    assert at(56) == [(WARN, 2, 10)]
    assert at(71) == [(RELEASE, 1, 10)]
    (released,) = watch(trace, jobs, START + 71 * 60, default)
    assert (released.user, released.cluster, released.release) == ("ana", "short", "cancel")
    fresh = {"nb": JobAllocation("nb", kind="interactive", start=START + 35 * 60)}  # started 5 min before: in its grace
    assert watch(trace, fresh, START + 40 * 60, default) == []


def test_an_idle_rule_covers_its_kinds_on_its_clusters_and_may_requeue():
    policy = WatchPolicy(
        idle=(
            IdleRule(
                kinds=("batch",),
                virtual_clusters=("short",),
                grace_minutes=0,
                warn_minutes=(),
                release_minutes=20,
                release="requeue",
            ),
            IdleRule(grace_minutes=0),
        )
    )
    trace = readings("j", 10, 45)
    short = {"j": JobAllocation("j", cluster="short", kind="batch", start=START)}
    elsewhere = {"j": JobAllocation("j", cluster="long", kind="batch", start=START)}
    assert [(s.action, s.release) for s in watch(trace, short, float(trace.ts.max()), policy)] == [(RELEASE, "requeue")]
    assert watch(trace, elsewhere, float(trace.ts.max()), policy) == []
