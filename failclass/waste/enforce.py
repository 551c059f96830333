"""Graduated enforcement: the watch's signals (failclass.waste.watch) carried out as the
policy's ``watch:`` section says, each step once per idle or hung stretch. A step is
recorded in the store before it is carried out (so that two watches running at once do
not both take it), then carried out by the scheduler's adapter unless the policy is in
audit mode, then kept with what was run; its notice is queued for the policy's routes
(delivered after, never blocking a step). A release that makes a user's count reach the
policy's ``repeat`` names that user to the operators."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from failclass.contracts import RELEASE, WatchStep
from failclass.notify.notices import enqueue, watch_notice
from failclass.policy.config import PolicyConfig
from failclass.waste.watch import Signal

if TYPE_CHECKING:
    from failclass.store.records import Records

Act = Callable[[Signal], list[str]]  # the scheduler's commands run for a signal, each with its outcome
FAILED = "  # failed"  # how a command's line in a step's done says it failed: "<command>  # failed (<why>): <message>"


def step_of(signal: Signal, now: datetime, enforced: bool) -> WatchStep:
    since = datetime.fromtimestamp(signal.since, UTC)
    return WatchStep(
        signal.job,
        signal.user,
        signal.cluster,
        signal.action,
        signal.step,
        since,
        now,
        signal.reason,
        signal.gpus,
        signal.evidence,
        enforced=enforced,
    )


def enforce(signals: Sequence[Signal], store: Records, policy: PolicyConfig, now: datetime, act: Act) -> list[WatchStep]:
    """Take the steps of ``signals`` that their stretch has not had; the steps taken."""
    enforced = policy.mode == "enforce"
    taken: list[WatchStep] = []
    for signal in signals:
        step = step_of(signal, now, enforced)
        row = store.take_step(step)
        if row is None:
            continue
        if enforced:
            step = replace(step, done=tuple(act(signal)))
            store.step_done(row, step)
        taken.append(step)
        if signal.action == RELEASE:
            repeat = policy.watch.repeat
            since = now - timedelta(days=repeat.days)
            offence = store.repeat_offence(signal.user, since, repeat.releases, now, signal.job, signal.cluster)
            taken += [offence] if offence else []
    enqueue(store, [watch_notice(step) for step in taken], policy.notifications, datetime.now(UTC))  # due now, whenever judged
    return taken
