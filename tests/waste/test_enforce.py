"""Graduated enforcement on a store (SQLite and PostgreSQL): a watch run every few
minutes takes each step once per idle stretch (warn, warn again, release), records it with
what was run, queues its notice; a stretch after new work starts over; audit mode records
and runs nothing; a user released often is named once to the operators."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from failclass.contracts import RELEASE, REPEAT_IDLE, WARN
from failclass.notify.config import Channel, Notifications
from failclass.policy.config import PolicyConfig, load_policy
from failclass.policy.watch import RepeatOffenders
from failclass.store.repository import Store
from failclass.waste.allocation import JobAllocation
from failclass.waste.enforce import enforce
from failclass.waste.samples import GpuSamples
from failclass.waste.watch import Signal, watch

START = 1_795_000_000.0  # 2026-11-18


def notebook_trace(job: str, busy: list[tuple[float, float]], minutes: float) -> GpuSamples:
    """One GPU read every 15 s for ``minutes``, busy within the (from, to) minute spans."""
    rows = []
    for i in range(int(minutes * 4)):
        t = START + 15 * i
        working = any(a * 60 <= t - START < b * 60 for a, b in busy)
        rows.append(("n1", 0, t, 60.0 if working else 0.0, 4000.0, 40960.0, job))
    return GpuSamples.from_rows(rows, "test")


class Slurm:
    """What the watch asked the scheduler to do."""

    def __init__(self) -> None:
        self.acted: list[tuple[str, str, int]] = []

    def __call__(self, signal: Signal) -> list[str]:
        self.acted.append((signal.action, signal.job, signal.step))
        return [f"scontrol notify {signal.job}"]


@pytest.fixture
def store(database_url: str) -> Store:
    return Store.open(database_url)


def routed_policy(**changes: object) -> PolicyConfig:
    ops = Channel("webhook", url="http://127.0.0.1:9/ops")
    kinds = ("idle_warning", "release", "hung_job", "repeat_idle")
    notifications = Notifications({"ops": ops}, dict.fromkeys(kinds, ("ops",)))
    return replace(load_policy(), notifications=notifications, **changes)  # type: ignore[arg-type]


def run(store: Store, policy: PolicyConfig, trace: GpuSamples, minute: float, slurm: Slurm, user: str = "ana") -> list:
    jobs = {j: JobAllocation(j, user=user, kind="interactive", start=START) for j in trace.jobs if j}
    now = START + minute * 60
    return enforce(watch(trace, jobs, now, policy.watch), store, policy, datetime.fromtimestamp(now, UTC), slurm)


def test_a_watch_every_five_minutes_warns_once_warns_again_then_releases(store: Store) -> None:
    policy, slurm = routed_policy(), Slurm()
    trace = notebook_trace("nb", [(0, 10)], 90)
    taken = [(s.action, s.step) for minute in range(15, 90, 5) for s in run(store, policy, trace, minute, slurm)]
    assert taken == [(WARN, 1), (WARN, 2), (RELEASE, 1)]  # at 40, 55 and 70 minutes: 30, 45 and 60 idle
    assert slurm.acted == [(WARN, "nb", 1), (WARN, "nb", 2), (RELEASE, "nb", 1)]
    kept = store.watch_steps(job_id="nb")[::-1]  # newest first
    since = datetime.fromtimestamp(START + 585, UTC).isoformat()  # the stretch began at its last busy reading
    assert [(s.action, s.step, s.since.isoformat(), s.done) for s in kept] == [
        (a, n, since, ("scontrol notify nb",)) for a, n in taken
    ]
    assert kept[0].reason == "no GPU work for 30 min; interactive jobs are released after 60 min idle" and kept[0].enforced
    notices = store.notices()
    assert [(n["kind"], n["job_id"]) for n in notices] == [("idle_warning", "nb"), ("idle_warning", "nb"), ("release", "nb")]
    assert len({n["key"] for n in notices}) == 3  # the second warning is no duplicate of the first


def test_work_after_a_warning_starts_a_new_stretch(store: Store) -> None:
    policy, slurm = routed_policy(), Slurm()
    trace = notebook_trace("nb", [(0, 10), (45, 50)], 100)  # idle 10-45, works 45-50, idle again
    for minute in (41, 44, 60, 81):
        run(store, policy, trace, minute, slurm)
    assert slurm.acted == [(WARN, "nb", 1), (WARN, "nb", 1)]  # at 41 (31 idle) and at 81 (31 idle again)
    assert [s.since.timestamp() - START for s in store.watch_steps(job_id="nb")[::-1]] == [
        585,
        50 * 60 - 15,
    ]  # last busy readings


def test_audit_mode_records_and_notifies_and_runs_nothing(store: Store) -> None:
    policy, slurm = routed_policy(mode="audit"), Slurm()
    (step,) = run(store, policy, notebook_trace("nb", [(0, 10)], 75), 72, slurm)
    assert (step.action, step.enforced, step.done, slurm.acted) == (RELEASE, False, (), [])
    (notice,) = store.notices()
    assert notice["kind"] == "release"


def test_a_user_released_three_times_in_a_week_is_named_once(store: Store) -> None:
    policy, slurm = routed_policy(), Slurm()
    policy = replace(policy, watch=replace(policy.watch, repeat=RepeatOffenders(releases=3, days=7)))
    named = []
    for job in ("a", "b", "c", "d"):
        taken = run(store, policy, notebook_trace(job, [(0, 10)], 75), 72, slurm, user="bo")
        named += [s for s in taken if s.action == REPEAT_IDLE]
    (offence,) = named
    assert (offence.user, offence.job_id, offence.step) == ("bo", "c", 3)
    assert offence.reason.startswith("bo's jobs were released 3 times for idle GPUs since ")
    assert [n["kind"] for n in store.notices()].count("repeat_idle") == 1
    assert [s.action for s in store.watch_steps(user="bo")].count(RELEASE) == 4
