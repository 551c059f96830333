"""The scheduler hook: after a failed attempt, `decide`; at submission, `admit`.

Both work against the local store (a SQLite file, or any database URL) or a remote
failclass service. When the service cannot be reached (connection refused, timeout,
5xx), `decide` falls back to the local rules and policy without history, counting every
earlier attempt of the job as a failure of the same signature: a fallback never grants
more retries than the budget; `admit` admits (failclass down must not stop a cluster).
Either says so in its answer (`"fallback": ...`).

Exit status, one per action (documented in the README): retry 10, retry_elsewhere 11,
retry_with_more_resources 12, no_retry 13, hold 14, reject 15; admit 0. A decision in
audit mode (not enforced) exits 0. Errors: 1 (unreadable logs), 2 (usage).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.errors import ServiceRefused
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
}
MAX_SENT_BYTES = 8 << 20  # of the logs' ends sent to a remote service (its limit is 16 MiB)


def exit_code(answer: dict[str, Any]) -> int:
    if not answer.get("enforced", True):
        return 0
    return EXIT_CODES[answer["action"]]


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

    def decide(self, attempt: Attempt, logs: list[Path]) -> dict[str, Any]:
        log, examined = self.classifier.examine_paths(logs)
        recorded = report_attempt(self.store, attempt, examined, self.policy)
        return {
            "attempt_id": recorded.attempt_id,
            "classification": recorded.classification,
            "log": str(log),
            **(recorded.decision or {}),
        }

    def next_attempt(self, job_id: str) -> int:
        return max((a["attempt"] for a in self.store.job(job_id)), default=0) + 1

    def admit(self, attempt: Attempt) -> dict[str, Any]:
        return admit_submission(self.store, attempt, self.policy)


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

    def decide(self, attempt: Attempt, logs: list[Path]) -> dict[str, Any]:
        body = {**attempt.to_json(), "log": read_ends(logs), "idempotency_key": f"{attempt.job_id}/{attempt.attempt}"}
        try:
            answer = self._post("/v1/attempts", body)
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            return local_fallback(
                attempt,
                logs,
                self.classifier,
                self.policy,
                f"service unreachable ({exc}): decided locally from the rules, without history",
            )
        return {"attempt_id": answer["attempt_id"], "classification": answer["classification"], **(answer["decision"] or {})}

    def admit(self, attempt: Attempt) -> dict[str, Any]:
        try:
            return self._post("/v1/admissions", attempt.to_json())
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            return {"action": "admit", "mode": self.policy.mode, "fallback": f"service unreachable ({exc}): admitted unchecked"}


def local_fallback(attempt: Attempt, logs: list[Path], classifier: Classifier, policy: PolicyConfig, why: str) -> dict[str, Any]:
    """A decision without the store (see decide_without_history), saying why."""
    log, examined = classifier.examine_paths(logs)
    return {**decide_without_history(attempt, examined, policy), "log": str(log), "fallback": why}
