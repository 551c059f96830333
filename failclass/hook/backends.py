"""The scheduler hook: after a failed attempt, `decide`; at submission, `admit`.

Both work against the local store (a SQLite file, or any database URL) or a remote
failclass service. When the service cannot be reached (connection refused, timeout,
5xx), the call is tried once more after a short pause; if that fails too, `decide` falls
back to the local rules and policy without history, counting every earlier attempt of
the job as a failure of the same signature: a fallback never grants more retries than
the budget. When the attempt number itself is unknown (not given, and the service could
not say), the budget counts as spent: only retries that do not spend it are granted.
`admit` admits (failclass down must not stop a cluster). Either says so in its answer
(`"fallback": ...`). Answers are HookAnswer values; the scheduler's own evidence (a Slurm
NODE_FAIL, OUT_OF_MEMORY) is weighed against the logs (failclass.hook.evidence) before
the policy decides.

Exit status, one per action (documented in the README): retry 10, retry_elsewhere 11,
retry_with_more_resources 12, no_retry 13, hold 14, reject 15; admit 0. A decision in
audit mode (not enforced), and a passed attempt (only recorded), exit 0. Errors: 1
(unreadable logs), 2 (usage, including invalid facts), 3 (the store cannot be opened or
used: failclass.store.StoreUnavailable).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from failclass.attempts import Attempt, SchedulerEvidence
from failclass.classifier import Classifier, Examination
from failclass.hook.answer import RECORDED, HookAnswer
from failclass.hook.evidence import with_scheduler
from failclass.logs.attempt import examine_files
from failclass.policy.config import PolicyConfig
from failclass.store import StoreUnavailable
from failclass.usecases import admit_submission, decide_without_history, report_attempt

if TYPE_CHECKING:
    from failclass.store.records import Records

EXIT_CODES: dict[str, int] = {  # every Action (failclass.contracts), then the answers that decide nothing
    "retry": 10,
    "retry_elsewhere": 11,
    "retry_with_more_resources": 12,
    "no_retry": 13,
    "hold": 14,
    "reject": 15,
    "admit": 0,
    RECORDED: 0,
}


def exit_code(answer: HookAnswer) -> int:
    return EXIT_CODES[answer.action] if answer.enforced else 0


def examine(
    classifier: Classifier, attempt: Attempt, logs: list[Path], scheduler: SchedulerEvidence | None
) -> tuple[Path, Examination]:
    """The logs examined together (as ranks where they are: failclass.logs.attempt), then
    weighed against the scheduler's own evidence."""
    log, examined = examine_files(classifier, logs, attempt)
    return log, with_scheduler(examined, scheduler, classifier.ruleset.taxonomy)


@dataclass
class LocalBackend:
    """Decisions recorded in a database this process opens itself."""

    database_url: str
    classifier: Classifier
    policy: PolicyConfig

    @cached_property
    def store(self) -> Records:
        """Opened (and migrated) once per process, on first use; by the database driver
        alone where it can be (failclass.store.direct: the hook runs once per job)."""
        from failclass.store.direct import open_records

        return open_records(self.database_url)

    @contextmanager
    def _store(self) -> Iterator[Records]:
        """The store; what goes wrong opening or using it is StoreUnavailable."""
        from failclass.store.reach import reaching

        with reaching(self.database_url):
            yield self.store

    def decide(self, attempt: Attempt, logs: list[Path], scheduler: SchedulerEvidence | None = None) -> HookAnswer:
        log, examined = examine(self.classifier, attempt, logs, scheduler)
        with self._store() as store:
            recorded = report_attempt(store, attempt, examined, self.policy)
        context: dict[str, Any] = {"attempt_id": recorded.attempt_id, "classification": recorded.classification}
        if recorded.duplicate:  # the answer recorded then; the logs given now did not speak
            context["duplicate"] = True
        else:
            context["log"] = str(log)
        return HookAnswer.of_attempt(recorded.decision, self.policy.mode, **context)

    def deliver_notices(self) -> None:
        """After the answer: send the notices due, for at most the policy's ``hook_seconds``
        (failclass.notify); what fails or is left stays queued for `failclass notify flush`.
        A problem is one line on stderr: the decision stands."""
        settings = self.policy.notifications
        if not settings.routes or not settings.hook_seconds or "store" not in self.__dict__:
            return
        started = time.monotonic()
        from failclass.notify.delivery import deliver  # the senders' libraries too: within the time allowed

        try:
            with self._store() as store:
                done = deliver(store, settings, seconds=max(settings.hook_seconds - (time.monotonic() - started), 0.01))
        except StoreUnavailable as exc:
            print(f"failclass notify: {exc}", file=sys.stderr)
            return
        for error in done.errors:
            print(f"failclass notify: {error} (queued again)", file=sys.stderr)

    def next_attempt(self, job_id: str) -> int:
        with self._store() as store:
            return store.last_attempt(job_id) + 1

    def admit(self, attempt: Attempt) -> HookAnswer:
        with self._store() as store:
            return HookAnswer(admit_submission(store, attempt, self.policy))


def local_fallback(
    attempt: Attempt,
    logs: list[Path],
    classifier: Classifier,
    policy: PolicyConfig,
    why: str,
    scheduler: SchedulerEvidence | None = None,
    counted: bool = True,
) -> HookAnswer:
    """A decision without the store (see decide_without_history), saying why; ``counted``
    False: the attempt's number is unknown."""
    log, examined = examine(classifier, attempt, logs, scheduler)
    decided = decide_without_history(attempt, examined, policy, counted)
    return HookAnswer(decided, classification=examined.classification, log=str(log), fallback=why)
