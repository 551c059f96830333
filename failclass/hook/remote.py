"""The hook against a remote failclass service: the logs' ends are sent, the service
decides with its history; a call that cannot be made is tried once more, then the hook
decides locally without history (failclass.hook.backends.local_fallback). httpx loads
only here, so a hook on the local store starts without it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from failclass.attempts import Attempt, SchedulerEvidence
from failclass.classifier import Classifier
from failclass.errors import ServiceRefused
from failclass.hook.answer import HookAnswer
from failclass.hook.backends import local_fallback
from failclass.limits import LIMITS
from failclass.policy.config import PolicyConfig

SENT_BYTES = LIMITS.request_bytes // 2  # of the logs' ends sent: well inside the service's request limit
RETRY_PAUSE = 0.5  # seconds before the one retry of a service call that could not be made


def read_ends(paths: list[Path], budget: int = SENT_BYTES) -> str:
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
        return HookAnswer.of_recorded(answer["decision"], self.policy.mode, **context)

    def admit(self, attempt: Attempt) -> HookAnswer:
        try:
            return HookAnswer.from_json(self._post("/v1/admissions", attempt.to_json()))
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            why = f"service unreachable ({exc}), tried twice: admitted unchecked"
            return HookAnswer("admit", self.policy.mode, self.policy.mode == "enforce", fallback=why)
