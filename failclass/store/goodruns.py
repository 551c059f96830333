"""A job's last good run and the lines of its failures that no rule named (tables
``good_runs`` and ``unseen_lines``, failclass.store.models), written with the driver's own
statements in the transaction that records an attempt (failclass.store.records), from
the templates the classifier collected while it read the log (failclass.logs.diff): the
log is not read again.

The good run is the job's last attempt that passed; where none has, the failed attempt
that progressed furthest, by its lines up to its last progress report. A failure that no rule
named (No signature, or the model's answer) keeps the lines of its failure region whose
template that good run never printed (all of them, where there is none)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from failclass.attempts import Attempt
from failclass.logs.diff import template
from failclass.logs.facts import Progress
from failclass.matching.taxonomy import NO_SIGNATURE
from failclass.store.statements import Transaction

if TYPE_CHECKING:
    from failclass.classifier import Examination

UNSEEN_KEPT = 20  # lines of one failure kept for `failclass rules propose`
EXAMPLES = 3  # real lines shown per cluster, from as many jobs


@dataclass(frozen=True)
class GoodRun:
    """A job's good run as the store keeps it: its templates and how many lines each covered."""

    job_id: str
    user: str
    attempt: int
    status: str
    lines: int
    templates: dict[str, int]


@dataclass(frozen=True)
class UnseenCluster:
    """One template printed by failures of ``jobs`` (of ``users``) that no rule named, with
    real lines, (job id, line), and what those failures were answered: (reason, failures)."""

    template: str
    jobs: int
    users: int
    examples: tuple[tuple[str, str], ...]
    answers: tuple[tuple[str, int], ...]


class GoodRuns:
    """The good_runs and unseen_lines tables, for a class that gives transactions
    (failclass.store.records.Records)."""

    def _transaction(self, keys: Sequence[str] = ()) -> AbstractContextManager[Transaction]:
        raise NotImplementedError

    def _driver_errors(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def good_run(self, job_id: str) -> GoodRun | None:
        """The job's good run, None when it has none."""
        with self._driver_errors(), self._transaction() as db:
            found = db.one('SELECT job_id, "user", attempt_no, status, lines, templates FROM good_runs WHERE job_id = ?', job_id)
        if found is None:
            return None
        job, user, attempt, status, lines, templates = found
        return GoodRun(job, user, int(attempt), status, int(lines), db.json(templates))

    def unseen_clusters(self, min_jobs: int) -> list[UnseenCluster]:
        """The unseen lines' templates printed by failures of at least ``min_jobs`` jobs,
        most jobs first (then most users)."""
        shared = "SELECT template FROM unseen_lines GROUP BY template HAVING COUNT(DISTINCT job_id) >= ?"
        with self._driver_errors(), self._transaction() as db:
            rows = db.rows(
                'SELECT u.template, u.job_id, u."user", u.text, c.reason FROM unseen_lines u'
                f" JOIN classifications c ON c.attempt_id = u.attempt_id WHERE u.template IN ({shared}) ORDER BY u.id",
                min_jobs,
            )
        jobs: dict[str, dict[str, str]] = defaultdict(dict)  # template -> job -> its first line
        users: dict[str, set[str]] = defaultdict(set)
        answers: dict[str, Counter[str]] = defaultdict(Counter)
        for key, job, user, text, reason in rows:
            jobs[key].setdefault(job, text)
            users[key].add(user)
            answers[key][reason] += 1
        clusters = [
            UnseenCluster(key, len(by_job), len(users[key]), tuple(by_job.items())[:EXAMPLES], tuple(answers[key].most_common()))
            for key, by_job in jobs.items()
        ]
        return sorted(clusters, key=lambda cluster: (-cluster.jobs, -cluster.users, cluster.template))

    @classmethod
    def _keep_lines(cls, db: Transaction, attempt_id: int, attempt: Attempt, examined: Examination, now: datetime) -> None:
        """The attempt's unseen lines, if no rule named its failure; the attempt as the job's
        good run, if it passed, or failed having progressed further than the job's failed one."""
        kept, found, progress = examined.templates, examined.classification, examined.progress
        if kept is None:
            return
        reference = db.one(
            "SELECT attempt_id, status, progress_epoch, progress_step FROM good_runs WHERE job_id = ?", attempt.job_id
        )
        passed = attempt.status == "passed"
        if not passed and (found.reason == NO_SIGNATURE or found.source == "model"):
            templates = db.one("SELECT templates FROM good_runs WHERE job_id = ?", attempt.job_id) if reference else None
            known = set(db.json(templates[0])) if templates else set()
            row = {"attempt_id": attempt_id, "job_id": attempt.job_id, "user": attempt.user}
            for new in kept.candidates(known, UNSEEN_KEPT):
                line = {"template": template(new.text), "line": new.line, "text": new.text, "count": new.count}
                db.add("unseen_lines", {**row, **line, "against": reference[0] if reference else None})
        if passed:
            cls._keep_good_run(db, attempt_id, attempt, examined, kept.counts, now, replacing=reference is not None)
        elif progress is not None and (reference is None or (reference[1] != "passed" and _further(progress, reference))):
            before = kept.before(kept.failure_start())
            cls._keep_good_run(db, attempt_id, attempt, examined, before, now, replacing=reference is not None)

    @staticmethod
    def _keep_good_run(
        db: Transaction,
        attempt_id: int,
        attempt: Attempt,
        examined: Examination,
        templates: dict[str, int],
        now: datetime,
        replacing: bool,
    ) -> None:
        """The attempt, with ``templates``, as its job's good run, in place of the one before
        where there is one (``replacing``; the job's lock keeps another from being added)."""
        progress, kept = examined.progress, examined.templates
        assert kept is not None
        if replacing:
            db.changed("DELETE FROM good_runs WHERE job_id = ?", attempt.job_id)
        facts = {"job_id": attempt.job_id, "user": attempt.user, "attempt_id": attempt_id, "attempt_no": attempt.attempt}
        at = {"progress_epoch": progress.epoch if progress else None, "progress_step": progress.step if progress else None}
        sizes = {"lines": kept.lines, "dropped": kept.dropped, "templates": templates}
        db.add("good_runs", {**facts, "status": attempt.status, **at, **sizes, "kept_at": now})


def _further(progress: Progress, reference: tuple[Any, ...]) -> bool:
    """Whether ``progress`` is past the good-run row's."""
    epoch, step = reference[2], reference[3]
    return (progress.epoch, progress.step) > (-1 if epoch is None else epoch, -1 if step is None else step)
