"""The hook against a remote failclass service: the logs' ends are sent, the service
decides with its history; a call that cannot be made is tried once more, then the hook
decides locally without history (failclass.hook.backends.local_fallback). httpx loads
only here, so a hook on the local store starts without it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from failclass.attempts import Attempt, SchedulerEvidence
from failclass.classifier import Classifier
from failclass.contracts import Admitted, Classification, Decision, from_json
from failclass.errors import ServiceRefused
from failclass.hook.answer import HookAnswer
from failclass.hook.backends import local_fallback
from failclass.limits import LIMITS
from failclass.logs.text import log_end
from failclass.policy.config import PolicyConfig

SENT_BYTES = LIMITS.request_bytes // 2  # of the logs' ends sent: well inside the service's request limit
RETRY_PAUSE = 0.5  # seconds before the one retry of a service call that could not be made


def read_ends(paths: list[Path], budget: int = SENT_BYTES) -> str:
    """The end of each log (an equal share of the budget) as the local path reads it
    (gunzipped), one after the other."""
    share = budget // max(len(paths), 1)
    return "\n".join(log_end(path, share).decode("utf-8", "replace") for path in paths)


@dataclass
class RemoteBackend:
    """A failclass service; falls back to local rules when it cannot be reached."""

    url: str
    token: str | None
    timeout: float
    classifier: Classifier
    policy: PolicyConfig
    uncounted: dict[str, str] = field(default_factory=dict)  # job id -> why its attempts could not be counted

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        """The service's answer (a 4xx included); a call that could not be made (no
        connection, timeout, 5xx) is made once more after RETRY_PAUSE (attempts carry an
        idempotency key), then raises."""
        try:
            return self._call_once(method, path, body)
        except (httpx.TransportError, httpx.HTTPStatusError):
            time.sleep(RETRY_PAUSE)
            return self._call_once(method, path, body)

    def _call_once(self, method: str, path: str, body: dict[str, Any] | None) -> httpx.Response:
        url = self.url.rstrip("/") + path
        response = httpx.request(method, url, json=body, headers=self._headers(), timeout=self.timeout)
        if response.status_code >= 500:
            raise httpx.HTTPStatusError(f"{response.status_code} from the service", request=response.request, response=response)
        return response

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self._call("POST", path, body)
        if response.status_code >= 400:
            raise ServiceRefused(f"the service refused the request ({response.status_code}): {response.text[:500]}")
        return response.json()  # type: ignore[no-any-return]

    def next_attempt(self, job_id: str) -> int:
        """The attempt after those the service recorded (1 for a job it does not know).
        When it cannot be asked, 1 stands in and the job is uncounted: its decision is
        made locally, without asking the service again (see decide)."""
        try:
            response = self._call("GET", f"/v1/jobs/{quote(job_id, safe='')}")
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            self.uncounted[job_id] = str(exc)
            return 1
        if response.status_code == 404:
            return 1
        if response.status_code != 200:
            raise ServiceRefused(
                f"the service refused to count job {job_id!r}'s attempts ({response.status_code}): {response.text[:500]}"
            )
        return max((a["attempt"] for a in response.json()["attempts"]), default=0) + 1

    def decide(self, attempt: Attempt, logs: list[Path], scheduler: SchedulerEvidence | None = None) -> HookAnswer:
        """The service decides from the logs' ends; the scheduler's lines go first, so the
        service sees them (it weighs them by its rules only: it has no field for them)."""
        if attempt.job_id in self.uncounted:
            why = (
                f"service unreachable ({self.uncounted[attempt.job_id]}), tried twice: the attempt number is unknown, "
                "decided locally from the rules, without history, and no retry that spends the budget"
            )
            return local_fallback(attempt, logs, self.classifier, self.policy, why, scheduler, counted=False)
        sent = "\n".join(scheduler.lines) + "\n" if scheduler else ""
        body = {**attempt.to_json(), "log": sent + read_ends(logs), "idempotency_key": f"{attempt.job_id}/{attempt.attempt}"}
        try:
            answer = self._post("/v1/attempts", body)
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            why = f"service unreachable ({exc}), tried twice: decided locally from the rules, without history"
            return local_fallback(attempt, logs, self.classifier, self.policy, why, scheduler)
        context: dict[str, Any] = {
            "attempt_id": answer["attempt_id"],
            "classification": from_json(Classification, answer["classification"]),
        }
        if answer["duplicate"]:
            context["duplicate"] = True
        decided = answer["decision"]
        return HookAnswer.of_attempt(from_json(Decision, decided) if decided else None, self.policy.mode, **context)

    def admit(self, attempt: Attempt) -> HookAnswer:
        try:
            return HookAnswer.of_body(self._post("/v1/admissions", attempt.to_json()))
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            why = f"service unreachable ({exc}), tried twice: admitted unchecked"
            return HookAnswer(Admitted(self.policy.mode, self.policy.mode == "enforce"), fallback=why)
