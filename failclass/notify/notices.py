"""The notices a recorded decision gives: a new hold on its user, inputs it blacklisted,
nodes it made suspect (its effects, failclass.contracts.Effects), and the sample that
`failclass notify test` sends."""

from __future__ import annotations

from datetime import datetime

from failclass.attempts import Attempt
from failclass.contracts import Decision, Evidence, Notice, NoticeKind

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


def sample_notice(now: datetime) -> Notice:
    """What `failclass notify test` sends: a notice that says it is a test."""
    line = "failclass notify test: a sample notice; no job was decided"
    return Notice("hold", "test", "failclass", "test", line, now, f"test:{now.isoformat()}", evidence=(Evidence(0, line),))
