"""POST /v1/attempts (report a finished attempt: classified, decided, stored) and
POST /v1/admissions (may this submission run?)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, HTTPException, Response

from failclass import usecases
from failclass.attempts import Attempt
from failclass.service.deps import ClassifierDep, MetricsDep, PolicyDep, StoreDep, Writer
from failclass.service.schemas import AttemptIn, AttemptOut

router = APIRouter(prefix="/v1", tags=["attempts"])


def _attempt(body: AttemptIn) -> Attempt:
    try:
        return body.to_attempt()
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None


@router.post("/attempts", status_code=201, response_model=AttemptOut)
def report_attempt(
    body: AttemptIn,
    response: Response,
    store: StoreDep,
    classifier: ClassifierDep,
    policy: PolicyDep,
    metrics: MetricsDep,
    _: Writer,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> AttemptOut:
    """Classify the attempt's log, decide what the scheduler should do, store both.
    The same attempt reported again (same idempotency key, or same job and attempt
    number) returns the first answer with status 200."""
    examined = classifier.examine_bytes(body.log)
    recorded = usecases.report_attempt(store, _attempt(body), examined, policy, body.idempotency_key or idempotency_key)
    if recorded.duplicate:
        response.status_code = 200
    else:
        metrics.classifications.labels(examined.classification.reason, examined.classification.source).inc()
        if recorded.decision is not None:
            metrics.decisions.labels(recorded.decision["action"]).inc()
    return AttemptOut(
        attempt_id=recorded.attempt_id,
        duplicate=recorded.duplicate,
        classification=recorded.classification,
        decision=recorded.decision,
    )


@router.post("/admissions")
def admit(body: AttemptIn, store: StoreDep, policy: PolicyDep, _: Writer) -> dict[str, Any]:
    """At submission: {"action": "admit"}, or the rejection (blacklisted input) or hold
    (the user is on hold for a reason this job failed with) that stops it."""
    return usecases.admit_submission(store, _attempt(body), policy)
