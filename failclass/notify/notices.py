"""The notices a recorded decision gives (a new hold on its user, inputs it blacklisted,
nodes it made suspect: its effects, failclass.contracts.Effects), queued in the store for
the channels the policy routes them to; and the sample that `failclass notify test`
sends. Nothing here sends: the decision's path loads no network client."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from failclass.attempts import Attempt
from failclass.contracts import (
    CANCEL,
    HUNG,
    NEVER_USED,
    RELEASE,
    REPEAT_IDLE,
    WARN,
    Decision,
    Evidence,
    Notice,
    NoticeKind,
    WatchStep,
)
from failclass.notify.config import Notifications

if TYPE_CHECKING:
    from failclass.store.outbox import Outbox, Queueing

EVIDENCE_LINES = 5  # the lines a notice quotes: enough to see why, short enough for a chat message


def notice_key(kind: NoticeKind, job_id: str) -> str:
    """The default de-duplication key: one notice of a kind per job."""
    return f"{kind}:{job_id}"


def notices_of(decision: Decision, attempt: Attempt, attempt_id: int | None, now: datetime) -> list[Notice]:
    """One notice per effect the decision had on the cluster's memory."""
    why, effects = decision.explanation, decision.effects
    audit = "" if decision.enforced else " (audit mode: recorded, not enforced)"
    evidence = why.evidence[:EVIDENCE_LINES]

    def notice(kind: NoticeKind, message: str, nodes: tuple[str, ...] = (), inputs: tuple[str, ...] = ()) -> Notice:
        key = notice_key(kind, attempt.job_id)
        head = (kind, attempt.job_id, attempt.user, why.reason, message + audit, now, key)
        return Notice(*head, nodes=nodes, inputs=inputs, evidence=evidence, attempt_id=attempt_id)

    job, made = attempt.job_id, []
    if effects.hold:
        made.append(notice("hold", f"{attempt.user} is on hold for {effects.hold} after job {job}: {why.message}"))
    if effects.blacklisted_inputs:
        paths = ", ".join(effects.blacklisted_inputs)
        message = f"blacklisted after job {job}: {paths}: {why.message}"
        made.append(notice("blacklisted_input", message, inputs=effects.blacklisted_inputs))
    if effects.suspect_nodes:
        message = f"suspect after job {job} ({why.reason}): {', '.join(effects.suspect_nodes)}"
        made.append(notice("suspect_node", message, nodes=effects.suspect_nodes))
    return made


WATCH_KINDS: dict[str, NoticeKind] = {
    WARN: "idle_warning",
    NEVER_USED: "idle_warning",
    RELEASE: "release",
    HUNG: "hung_job",
    CANCEL: "hung_job",
    REPEAT_IDLE: "repeat_idle",
}


def watch_notice(step: WatchStep) -> Notice:
    """The notice of a step the watch took: keyed by the step and its stretch, so that the
    second warning is not taken for a repeat of the first."""
    kind = WATCH_KINDS[step.action]
    what = f"{step.action} {step.step}" if step.action == WARN else step.action
    audit = "" if step.enforced else " (audit mode: recorded, not enforced)"
    message = f"job {step.job_id} ({step.user}): {what}: {step.reason}{audit}"
    key = f"{kind}:{step.job_id}:{step.action}:{step.step}:{step.since:%Y%m%dT%H%M%S}"
    nodes = tuple(dict.fromkeys(gpu.rpartition(":")[0] for gpu in step.gpus))
    evidence = tuple(Evidence(0, line) for line in step.evidence[:EVIDENCE_LINES])
    return Notice(kind, step.job_id, step.user, step.action, message, step.taken_at, key, nodes=nodes, evidence=evidence)


def sample_notice(now: datetime) -> Notice:
    """What `failclass notify test` sends: a notice that says it is a test."""
    line = "failclass notify test: a sample notice; no job was decided"
    return Notice("hold", "test", "failclass", "test", line, now, f"test:{now.isoformat()}", evidence=(Evidence(0, line),))


def enqueue(store: Outbox, notices: Sequence[Notice], settings: Notifications, now: datetime) -> list[Queueing]:
    """Queue each notice for each channel its kind is routed to (de-duplicated and
    rate-limited per channel); what became of each. No store work without a route."""
    from failclass.store.outbox import NoticeLimits

    routed = [(notice, channel) for notice in notices for channel in settings.channels_for(notice.kind)]
    if not routed:
        return []
    limits = NoticeLimits(
        now - timedelta(hours=settings.dedup_hours),
        now - timedelta(minutes=settings.rate.window_minutes),
        settings.rate.per_job_and_kind,
    )
    return [queued for _, _, queued in store.enqueue_notices(routed, limits, now)]
