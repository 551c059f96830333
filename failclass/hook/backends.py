"""The scheduler hook: after a failed attempt, `decide`; at submission, `admit`.

Both work against the local store (a SQLite file, or any database URL) or a remote
failclass service. When the service cannot be reached (connection refused, timeout,
5xx), the call is tried once more after a short pause; if that fails too, `decide` falls back to the local rules and policy without history, counting every
earlier attempt of the job as a failure of the same signature: a fallback never grants
more retries than the budget; `admit` admits (failclass down must not stop a cluster).
Either says so in its answer (`"fallback": ...`). Answers are HookAnswer values; the
scheduler's own evidence (a Slurm NODE_FAIL, OUT_OF_MEMORY) is weighed against the logs
(failclass.hook.evidence) before the policy decides.

Exit status, one per action (documented in the README): retry 10, retry_elsewhere 11,
retry_with_more_resources 12, no_retry 13, hold 14, reject 15; admit 0. A decision in
audit mode (not enforced), and a passed attempt (only recorded), exit 0. Errors: 1
(unreadable logs), 2 (usage, including invalid facts).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from failclass.attempts import Attempt, SchedulerEvidence
from failclass.classifier import Classifier, Examination
from failclass.errors import ServiceRefused
from failclass.hook.answer import HookAnswer
from failclass.hook.evidence import with_scheduler
from failclass.policy.config import PolicyConfig
from failclass.usecases import admit_submission, decide_without_history, report_attempt

if TYPE_CHECKING:
    from failclass.store.repository import Store

EXIT_CODES = {
    "retry": 10,
    "retry_elsewhere": 11,
    "retry_with_more_resources": 12,
    "no_retry": 13,
    "hold": 14,
    "reject": 15,
    "admit": 0,
    "recorded": 0,
}
RECORDED = "recorded"  # the answer about a passed attempt: recorded for the reports, nothing decided
MAX_SENT_BYTES = 8 << 20  # of the logs' ends sent to a remote service (its limit is 16 MiB)
RETRY_PAUSE = 0.5  # seconds before the one retry of a service call that could not be made


def exit_code(answer: HookAnswer) -> int:
    return EXIT_CODES[answer.action] if answer.enforced else 0


def examine(classifier: Classifier, logs: list[Path], scheduler: SchedulerEvidence | None) -> tuple[Path, Examination]:
    """The logs examined together, then weighed against the scheduler's own evidence."""
    log, examined = classifier.examine_paths(logs)
    return log, with_scheduler(examined, scheduler, classifier.ruleset.taxonomy)


def read_ends(paths: list[Path], budget: int = MAX_SENT_BYTES) -> str:
    """The end of each log (an equal share of the budget), one after the other."""
    share = budget // max(len(paths), 1)
    parts = []
    for path in paths:
        with path.open("rb") as stream:
            size = stream.seek(0, 2)
            stream.seek(max(size - share, 0))
            parts.append(stream.read().decode("utf-8", "replace"))
    return "\n".join(parts)


@dataclass
class LocalBackend:
    """Decisions recorded in a database this process opens itself."""

    database_url: str
    classifier: Classifier
    policy: PolicyConfig

    @cached_property
    def store(self) -> Store:
        """Opened (and migrated) once per process, on first use."""
        from failclass.store.repository import Store

        return Store.open(self.database_url)

    def decide(self, attempt: Attempt, logs: list[Path], scheduler: SchedulerEvidence | None = None) -> HookAnswer:
        log, examined = examine(self.classifier, logs, scheduler)
        recorded = report_attempt(self.store, attempt, examined, self.policy)
        context: dict[str, Any] = {"attempt_id": recorded.attempt_id, "classification": recorded.classification, "log": str(log)}
        if recorded.decision is None:  # a passed attempt: recorded, nothing decided
            return HookAnswer(RECORDED, self.policy.mode, **context)
        return HookAnswer.from_json(recorded.decision, **context)

    def next_attempt(self, job_id: str) -> int:
        return max((a["attempt"] for a in self.store.job(job_id)), default=0) + 1

    def admit(self, attempt: Attempt) -> HookAnswer:
        return HookAnswer.from_json(admit_submission(self.store, attempt, self.policy))


@dataclass
class RemoteBackend:
    """A failclass service; falls back to local rules when it cannot be reached."""

    url: str
    token: str | None
    timeout: float
    classifier: Classifier
    policy: PolicyConfig

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The service's answer; a call that could not be made (no connection, timeout, 5xx)
        is made once more after RETRY_PAUSE (requests carry an idempotency key), then raises."""
        try:
            return self._post_once(path, body)
        except (httpx.TransportError, httpx.HTTPStatusError):
            time.sleep(RETRY_PAUSE)
            return self._post_once(path, body)

    def _post_once(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(self.url.rstrip("/") + path, json=body, headers=self._headers(), timeout=self.timeout)
        if response.status_code >= 500:
            raise httpx.HTTPStatusError(f"{response.status_code} from the service", request=response.request, response=response)
        if response.status_code >= 400:
            raise ServiceRefused(f"the service refused the request ({response.status_code}): {response.text[:500]}")
        return response.json()  # type: ignore[no-any-return]

    def next_attempt(self, job_id: str) -> int:
        """The attempt after those the service recorded; 1 if it cannot be asked."""
        try:
            response = httpx.get(f"{self.url.rstrip('/')}/v1/jobs/{job_id}", headers=self._headers(), timeout=self.timeout)
        except httpx.TransportError:
            return 1
        if response.status_code != 200:
            return 1
        return max((a["attempt"] for a in response.json()["attempts"]), default=0) + 1

    def decide(self, attempt: Attempt, logs: list[Path], scheduler: SchedulerEvidence | None = None) -> HookAnswer:
        """The service decides from the logs' ends; the scheduler's lines go first, so the
        service sees them (it weighs them by its rules only: it has no field for them)."""
        sent = "\n".join(scheduler.lines) + "\n" if scheduler else ""
        body = {**attempt.to_json(), "log": sent + read_ends(logs), "idempotency_key": f"{attempt.job_id}/{attempt.attempt}"}
        try:
            answer = self._post("/v1/attempts", body)
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            why = f"service unreachable ({exc}), tried twice: decided locally from the rules, without history"
            return local_fallback(attempt, logs, self.classifier, self.policy, why, scheduler)
        context: dict[str, Any] = {"attempt_id": answer["attempt_id"], "classification": answer["classification"]}
        if answer["decision"] is None:
            return HookAnswer(RECORDED, self.policy.mode, **context)
        return HookAnswer.from_json(answer["decision"], **context)

    def admit(self, attempt: Attempt) -> HookAnswer:
        try:
            return HookAnswer.from_json(self._post("/v1/admissions", attempt.to_json()))
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            why = f"service unreachable ({exc}), tried twice: admitted unchecked"
            return HookAnswer("admit", self.policy.mode, self.policy.mode == "enforce", fallback=why)


def local_fallback(
    attempt: Attempt,
    logs: list[Path],
    classifier: Classifier,
    policy: PolicyConfig,
    why: str,
    scheduler: SchedulerEvidence | None = None,
) -> HookAnswer:
    """A decision without the store (see decide_without_history), saying why."""
    log, examined = examine(classifier, logs, scheduler)
    decided = decide_without_history(attempt, examined, policy)
    return HookAnswer.from_json(decided, classification=decided["classification"], log=str(log), fallback=why)
