"""POST /v1/attempts (report a finished attempt: classified, decided, stored) and
POST /v1/admissions (may this submission run?)."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError

from failclass import usecases
from failclass.analytics.goodput import last_save_in_text
from failclass.attempts import Attempt, InvalidAttempt
from failclass.classifier import Examination
from failclass.contracts import Admitted, Decision
from failclass.errors import IdempotencyConflict
from failclass.logs.attempt import examine_text
from failclass.service.bodies import JsonRoute
from failclass.service.deps import ClassifierDep, MetricsDep, PolicyDep, StoreDep, Writer
from failclass.service.errors import STORED, documented
from failclass.service.fields import NO_NUL
from failclass.service.responses import AttemptOut
from failclass.service.schemas import AttemptIn
from failclass.store.repository import RequestIdentity

router = APIRouter(prefix="/v1", route_class=JsonRoute, tags=["attempts"], responses=documented(*STORED))
KeyHeader = Annotated[str | None, Header(min_length=1, max_length=200, pattern=NO_NUL)]


def _attempt(body: AttemptIn) -> Attempt:
    """The attempt model's own check (the hook's too): a refusal is a 422 naming the field."""
    try:
        return body.to_attempt()
    except InvalidAttempt as exc:
        raise RequestValidationError([{"loc": ("body", exc.field), "msg": exc.problem, "type": "value_error"}]) from None


def with_checkpoint(examined: Examination, attempt: Attempt, log: str) -> Examination:
    """A failed attempt's examination with its log's last checkpoint save in its run (kept
    with the classification: the report counts the GPU time lost since it)."""
    if attempt.status == "passed" or attempt.start_time is None or attempt.end_time is None:
        return examined
    return dataclasses.replace(examined, checkpoint=last_save_in_text(log, attempt.start_time, attempt.end_time))


def identity(body: AttemptIn, caller: str | None, header_key: str | None) -> RequestIdentity | None:
    """The idempotency key scoped to the caller (two tokens that happen to pick the same key
    never see each other's answers) and the request's digest; None without a key (nothing
    to compare, so the log is not hashed)."""
    key = body.idempotency_key or header_key
    if key is None:
        return None
    scoped = hashlib.sha256(f"{caller or ''}\0{key}".encode()).hexdigest()
    return RequestIdentity(scoped, hashlib.sha256(body.digest_source()).hexdigest())


@router.post("/attempts", status_code=201, response_model=AttemptOut, responses={200: {"model": AttemptOut}, **documented(409)})
def report_attempt(
    body: AttemptIn,
    request: Request,
    response: Response,
    store: StoreDep,
    classifier: ClassifierDep,
    policy: PolicyDep,
    metrics: MetricsDep,
    caller: Writer,
    idempotency_key: KeyHeader = None,
) -> AttemptOut:
    """Classify the attempt's log (as its ranks where it interleaves two or more: the
    origin's node placed by nodes, tasks_per_node and pods), decide what the scheduler
    should do, store both.
    The same request again (same idempotency key and body, or the same job and attempt
    number) answers the first answer with status 200; an idempotency key the caller used
    for another request answers 409."""
    attempt = _attempt(body)
    examined = with_checkpoint(examine_text(classifier, body.log, attempt), attempt, body.log)
    try:
        recorded = usecases.report_attempt(store, attempt, examined, policy, identity(body, caller, idempotency_key))
    except IdempotencyConflict as exc:
        raise HTTPException(409, str(exc)) from None
    if recorded.duplicate:
        response.status_code = 200
    else:
        metrics.attempt_recorded(attempt, examined, recorded.decision)
        if request.app.state.notices is not None:
            request.app.state.notices.wake()  # the notices the decision queued, sent after this answer
    return AttemptOut(
        attempt_id=recorded.attempt_id,
        duplicate=recorded.duplicate,
        classification=recorded.classification,
        decision=recorded.decision,
    )


@router.post("/admissions", response_model=Decision | Admitted)
def admit(body: AttemptIn, store: StoreDep, policy: PolicyDep, _: Writer) -> Decision | Admitted:
    """At submission: {"action": "admit"}, or the rejection (blacklisted input) or hold
    (the user is on hold for a reason this job failed with) that stops it."""
    return usecases.admit_submission(store, _attempt(body), policy)
