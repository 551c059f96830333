"""The use cases every entry point shares (the HTTP service, the scheduler hook, its
fallback): "an attempt finished" and "may this submission run". Each examines what it
must, then, in one store transaction, reads the history, calls the pure policy and keeps
its decision and effects."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from failclass.attempts import Attempt
from failclass.classifier import Examination
from failclass.decision import Decision
from failclass.history import Failure, History, PriorAttempt
from failclass.policy.config import PolicyConfig
from failclass.policy.decide import admit, decide, history_needs, implicated_inputs

if TYPE_CHECKING:  # the store loads only where a use case records something
    from failclass.store.records import Recorded, Records, RequestIdentity


def failure_of(examined: Examination) -> Failure:
    """The classification facts the policy uses."""
    result = examined.classification
    return Failure(result.reason, result.rule_id, tuple(e.text for e in result.evidence), examined.progress)


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
        return decide(attempt, failure, history, config)

    return store.record(
        attempt,
        examined.classification.to_dict(),
        failure,
        paths,
        None if passed else deciding,
        history_needs(attempt, failure, config, now),
        request,
        now,
    )


def decide_without_history(attempt: Attempt, examined: Examination, config: PolicyConfig, counted: bool = True) -> dict[str, Any]:
    """A decision when the store cannot be reached: every earlier attempt of the job counts
    as a failure of the same signature, so it never grants more retries than the budget.
    Not ``counted`` (the attempt's number is unknown), the budget counts as spent: a
    retry that would spend it is refused, one that does not (a preemption) is granted."""
    failure = failure_of(examined)
    rules = config.for_failure(failure.reason, failure.rule_id, attempt.vc)
    earlier = attempt.attempt - 1 if counted else rules.max_retries
    prior = tuple(PriorAttempt(n, failure.signature, failure.reason) for n in range(1, earlier + 1))
    decision = decide(attempt, failure, History(job_attempts=prior), config)
    if not counted and decision.clause.endswith(".max_retries"):
        unknown = {**decision.counters, "failure_of_signature": None}
        message = f"attempt number unknown: the retry budget ({rules.max_retries}) cannot be counted, so no retry is granted"
        decision = dataclasses.replace(decision, message=message, counters=unknown)
    classification = examined.classification.to_dict()
    return {"classification": classification, **decision.to_dict(classification["evidence"])}


def admit_submission(store: Records, attempt: Attempt, config: PolicyConfig, now: datetime | None = None) -> dict[str, Any]:
    """{"action": "admit"}, or the rejection or hold (recorded) that stops the submission."""

    def judge(history: History, expected: Sequence[str]) -> Decision | None:
        found = admit(attempt, history, config, expected)
        return None if found is None else dataclasses.replace(found, mode=config.mode)

    answer = store.admit(attempt, judge, now)
    return answer if answer is not None else {"action": "admit", "mode": config.mode}
