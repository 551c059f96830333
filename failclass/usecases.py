"""The use cases every entry point shares (the HTTP service, the scheduler hook, its
fallback): "an attempt finished" and "may this submission run". Each examines what it
must, then, in one store transaction, reads the history, calls the pure policy and keeps
its decision and effects; then queues the notices those effects give (failclass.notify),
which are delivered after the answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from failclass.attempts import Attempt
from failclass.classifier import Examination
from failclass.contracts import Admitted, Decision
from failclass.history import Failure, History, PriorAttempt
from failclass.policy.config import PolicyConfig
from failclass.policy.decide import admit, decide, history_needs, implicated_inputs

if TYPE_CHECKING:  # the store loads only where a use case records something
    from failclass.store.records import Recorded, Records, RequestIdentity


def failure_of(examined: Examination) -> Failure:
    """The classification facts the policy uses (the origin's node among them)."""
    return Failure.of(examined.classification, examined.progress, examined.origin)


def _with_evidence(decision: Decision, examined: Examination) -> Decision:
    """The decision, its explanation quoting the classification's evidence."""
    why = dataclasses.replace(decision.explanation, evidence=examined.classification.evidence)
    return dataclasses.replace(decision, explanation=why)


def report_attempt(
    store: Records,
    attempt: Attempt,
    examined: Examination,
    config: PolicyConfig,
    request: RequestIdentity | None = None,
    now: datetime | None = None,
) -> Recorded:
    """Record a finished attempt; a failed one is decided from its history and the policy."""
    now = now or datetime.now(UTC)
    failure = failure_of(examined)
    paths = sorted(set(attempt.inputs) | set(implicated_inputs(attempt, failure)))
    passed = attempt.status == "passed"

    def deciding(history: History) -> Decision:
        return _with_evidence(decide(attempt, failure, history, config), examined)

    recorded = store.record(
        attempt,
        examined,
        paths,
        None if passed else deciding,
        history_needs(attempt, failure, config, now),
        request,
        now,
    )
    if recorded.decision is not None and not recorded.duplicate and config.notifications.routes:
        from failclass.notify.notices import enqueue, notices_of

        enqueue(store, notices_of(recorded.decision, attempt, recorded.attempt_id, now), config.notifications, now)
    return recorded


def decide_without_history(attempt: Attempt, examined: Examination, config: PolicyConfig, counted: bool = True) -> Decision:
    """A decision when the store cannot be reached: every earlier attempt of the job counts
    as a failure of the same signature, so it never grants more retries than the budget.
    Not ``counted`` (the attempt's number is unknown), the budget counts as spent: a
    retry that would spend it is refused, one that does not (a preemption) is granted."""
    failure = failure_of(examined)
    rules = config.for_failure(failure.reason, failure.rule_id, attempt.vc)
    earlier = attempt.attempt - 1 if counted else rules.max_retries
    prior = tuple(PriorAttempt(n, failure.signature, failure.reason) for n in range(1, earlier + 1))
    decision = decide(attempt, failure, History(job_attempts=prior), config)
    why = decision.explanation
    if not counted and why.policy_clause.endswith(".max_retries"):
        unknown = {**why.counters, "failure_of_signature": None}
        message = f"attempt number unknown: the retry budget ({rules.max_retries}) cannot be counted, so no retry is granted"
        decision = dataclasses.replace(decision, explanation=dataclasses.replace(why, message=message, counters=unknown))
    return _with_evidence(decision, examined)


def admit_submission(store: Records, attempt: Attempt, config: PolicyConfig, now: datetime | None = None) -> Decision | Admitted:
    """Admitted, or the rejection or hold (recorded) that stops the submission."""

    def judge(history: History, expected: Sequence[str]) -> Decision | None:
        return admit(attempt, history, config, expected)

    answer = store.admit(attempt, judge, now)
    return answer if answer is not None else Admitted(config.mode, config.mode == "enforce")
