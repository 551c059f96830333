"""Recording an attempt (its classification, the history a decision needs, the decision
and its effects) and judging a submission, each in one transaction, with the database
driver alone (sqlite3 or psycopg): the scheduler hook records without loading SQLAlchemy
(failclass.store.direct), and the service's Store records through this same code on its
engine's connections (failclass.store.repository). What to decide is not the store's
business: the caller hands it a function from History to Decision (failclass.usecases).

The rows are those of failclass.store.models, written as SQLAlchemy writes them
(failclass.store.statements).

Concurrency: on PostgreSQL, a transaction first takes advisory locks on its keys (the
job, the user, the input paths; in sorted order: no deadlock), so that two reports about
one job or one user are decided one after the other and every attempt is counted exactly
once (the unique (job, attempt) and idempotency-key constraints back this up). SQLite
serialises writers itself; within one process a lock keeps the read-decide-write
sequence whole.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from failclass.attempts import Attempt
from failclass.contracts import Classification, Decision, from_json, to_json
from failclass.errors import IdempotencyConflict
from failclass.history import Blacklisted, Failure, History, HistoryNeeds, PriorAttempt
from failclass.logs.facts import Progress
from failclass.store.goodruns import GoodRuns
from failclass.store.outbox import Outbox
from failclass.store.statements import Transaction, placeholders
from failclass.store.steps import WatchSteps

if TYPE_CHECKING:
    from failclass.classifier import Examination

NODES_SAMPLE = 5000


@dataclass(frozen=True)
class RequestIdentity:
    """Who asked what: the idempotency key scoped to its caller and the digest of the
    request it came with."""

    key: str
    digest: str


@dataclass(frozen=True)
class Recorded:
    """What the store answers for a reported attempt: as recorded now, or before."""

    attempt_id: int
    classification: Classification
    decision: Decision | None
    duplicate: bool


class Records(Outbox, WatchSteps, GoodRuns, ABC):
    """Reporting attempts and judging submissions (and the notices they give: Outbox; the
    job's good run and its failures' unseen lines: GoodRuns). A subclass says how to get a
    connection of ``driver`` (the DB-API module), whether it is PostgreSQL, and may turn
    the driver's errors into its own."""

    driver: Any  # the DB-API module: sqlite3, psycopg
    postgres: bool
    _local_lock: threading.Lock

    @abstractmethod
    def _connection(self) -> AbstractContextManager[Any]:
        """A connection of ``driver``, for one transaction."""

    def _driver_errors(self) -> AbstractContextManager[None]:
        """Where the driver's errors leave this class."""
        return nullcontext()

    @contextmanager
    def _transaction(self, keys: Sequence[str] = ()) -> Iterator[Transaction]:
        """A transaction that holds the locks of ``keys`` until it ends."""
        with self._connection() as connection, nullcontext() if self.postgres else self._local_lock:
            try:
                db = Transaction(connection.cursor(), self.postgres)
                if self.postgres and keys:
                    # one statement: a row's columns are computed left to right, so the
                    # locks are taken in sorted order
                    ordered = sorted(set(keys))
                    db.rows(f"SELECT {', '.join(['pg_advisory_xact_lock(hashtextextended(?, 0))'] * len(ordered))}", *ordered)
                yield db
                connection.commit()
            except BaseException:
                with suppress(self.driver.Error):
                    connection.rollback()
                raise

    def last_attempt(self, job_id: str) -> int:
        """The job's highest attempt number recorded, 0 for none."""
        with self._driver_errors(), self._transaction() as db:
            found = db.one("SELECT MAX(attempt_no) FROM attempts WHERE job_id = ?", job_id)
            return int(found[0]) if found and found[0] is not None else 0

    # -- reporting an attempt ------------------------------------------------------------

    def record(
        self,
        attempt: Attempt,
        examined: Examination,
        lock_paths: Sequence[str],
        decide: Callable[[History], Decision] | None,
        needs: HistoryNeeds,
        request: RequestIdentity | None = None,
        now: datetime | None = None,
    ) -> Recorded:
        """Store the attempt; unless ``decide`` is None, read the history ``needs`` names
        (the attempt itself excluded), decide and keep the decision and its effects. An
        attempt reported again (same idempotency key and request, or same job and attempt
        number) gets the first answer back; a key reused for another request raises
        IdempotencyConflict."""
        now = now or datetime.now(UTC)
        keys = [f"job:{attempt.job_id}", f"user:{attempt.user}", *(f"path:{p}" for p in lock_paths)]
        if request is not None:
            keys.append(f"key:{request.key}")
        with self._driver_errors():
            try:
                with self._transaction(keys) as db:
                    earlier = self._existing(db, attempt, request)
                    if earlier is not None:
                        return self._recorded(db, earlier, duplicate=True)
                    attempt_id = self._insert_attempt(db, attempt, examined, request, now)
                    self._keep_lines(db, attempt_id, attempt, examined, now)
                    decision = None
                    if decide is not None:
                        decision = decide(self._history(db, attempt_id, attempt, lock_paths, needs))
                        self._keep_decision(db, attempt_id, attempt, decision, now)
                    return Recorded(attempt_id, examined.classification, decision, duplicate=False)
            except self.driver.IntegrityError:
                # Another transaction recorded the same attempt first (SQLite, or a key race).
                with self._transaction() as db:
                    earlier = self._existing(db, attempt, request)
                    if earlier is None:
                        raise
                    return self._recorded(db, earlier, duplicate=True)

    @staticmethod
    def _existing(db: Transaction, attempt: Attempt, request: RequestIdentity | None) -> int | None:
        """The id of the attempt as recorded before: by the request's key (which must have
        come with the same request), else by job and attempt number."""
        if request is not None:
            found = db.one("SELECT id, job_id, attempt_no, request_digest FROM attempts WHERE idempotency_key = ?", request.key)
            if found is not None:
                attempt_id, job_id, attempt_no, digest = found
                if digest not in (None, request.digest):
                    raise IdempotencyConflict(
                        f"this Idempotency-Key was used for another request (job {job_id!r}, attempt "
                        f"{attempt_no}, other facts or log); use a new key for a new report"
                    )
                return int(attempt_id)
        found = db.one("SELECT id FROM attempts WHERE job_id = ? AND attempt_no = ?", attempt.job_id, attempt.attempt)
        return None if found is None else int(found[0])

    @staticmethod
    def _recorded(db: Transaction, attempt_id: int, duplicate: bool) -> Recorded:
        classification = db.one("SELECT body FROM classifications WHERE attempt_id = ?", attempt_id)
        decision = db.one("SELECT body FROM decisions WHERE attempt_id = ?", attempt_id)
        assert classification is not None
        kept = from_json(Decision, db.json(decision[0])) if decision else None
        return Recorded(attempt_id, from_json(Classification, db.json(classification[0])), kept, duplicate)

    @staticmethod
    def _insert_attempt(
        db: Transaction,
        attempt: Attempt,
        examined: Examination,
        request: RequestIdentity | None,
        now: datetime,
    ) -> int:
        classification = examined.classification
        failure = Failure.of(classification, examined.progress)
        facts = attempt.facts()
        facts["attempt_no"] = facts.pop("attempt")
        key, digest = (request.key, request.digest) if request is not None else (None, None)
        attempt_id = db.insert("attempts", {**facts, "idempotency_key": key, "request_digest": digest, "recorded_at": now})
        progress = failure.progress
        db.add(
            "classifications",
            {
                "attempt_id": attempt_id,
                "reason": failure.reason,
                "source": classification.source,
                "rule_id": failure.rule_id,
                "signature": failure.signature,
                "confidence": classification.confidence,
                "progress_epoch": progress.epoch if progress else None,
                "progress_step": progress.step if progress else None,
                "checkpoint_basis": examined.checkpoint[0] if examined.checkpoint else None,
                "last_checkpoint_at": examined.checkpoint[1] if examined.checkpoint else None,
                "origin_rank": examined.origin.rank if examined.origin else None,
                "origin_node": examined.origin.node if examined.origin else None,
                "origin_gpu": examined.origin.gpu if examined.origin else None,
                "body": to_json(classification),
            },
        )
        return attempt_id

    def _history(self, db: Transaction, current: int, attempt: Attempt, paths: Sequence[str], needs: HistoryNeeds) -> History:
        """What a decision may use, the attempt being recorded (row ``current``) excluded;
        only what ``needs`` names is read."""
        prior = db.rows(
            "SELECT a.attempt_no, c.signature, c.reason, c.progress_epoch, c.progress_step"
            " FROM attempts a JOIN classifications c ON c.attempt_id = a.id"
            " WHERE a.job_id = ? AND a.attempt_no != ? AND a.status != ?",
            attempt.job_id,
            attempt.attempt,
            "passed",
        )
        job_attempts = tuple(
            PriorAttempt(
                n,
                sig,
                reason,
                None
                if epoch is None and step is None
                else Progress(epoch if epoch is not None else -1, step if step is not None else -1),
            )
            for n, sig, reason, epoch, step in prior
        )
        since, nodes_since = needs.user_failures_since, needs.nodes_since
        return History(
            job_attempts=job_attempts,
            user_failures=self._user_failures(db, current, attempt.user, since) if since else {},
            held_reasons=self._held(db, attempt.user),
            blacklisted=self._active_blacklist(db, paths),
            input_failures=self._input_failures(db, paths) if needs.input_failures else {},
            node_jobs=self._node_jobs(db, nodes_since) if nodes_since else {},
            nodes_seen=self._nodes_seen(db, nodes_since) if nodes_since else 0,
        )

    @staticmethod
    def _held(db: Transaction, user: str) -> frozenset[str]:
        return frozenset(r for (r,) in db.rows('SELECT reason FROM holds WHERE "user" = ? AND released_at IS NULL', user))

    @staticmethod
    def _user_failures(db: Transaction, current: int, user: str, since: datetime) -> dict[str, int]:
        releases = {
            reason: db.time(released)
            for reason, released in db.rows(
                'SELECT reason, MAX(released_at) FROM holds WHERE "user" = ? AND released_at IS NOT NULL GROUP BY reason', user
            )
        }
        rows = db.rows(
            "SELECT c.reason, a.recorded_at FROM classifications c JOIN attempts a ON c.attempt_id = a.id"
            ' WHERE a."user" = ? AND a.id != ? AND a.status != ? AND a.recorded_at >= ?',
            user,
            current,
            "passed",
            since,
        )
        counts: dict[str, int] = defaultdict(int)
        for reason, at in rows:
            released = releases.get(reason)
            if released is None or db.time(at) > released:
                counts[reason] += 1
        return dict(counts)

    @staticmethod
    def _active_blacklist(db: Transaction, paths: Sequence[str]) -> dict[str, Blacklisted]:
        if not paths:
            return {}
        rows = db.rows(
            f"SELECT path, why, evidence FROM blacklist WHERE path IN ({placeholders(paths)}) AND cleared_at IS NULL", *paths
        )
        return {path: Blacklisted(why, (db.json(evidence) or {}).get("reason")) for path, why, evidence in rows}

    @staticmethod
    def _input_failures(db: Transaction, paths: Sequence[str]) -> dict[str, list[str]]:
        if not paths:
            return {}
        within = f"path IN ({placeholders(paths)})"
        cleared = {
            path: None if at is None else db.time(at)
            for path, at in db.rows(f"SELECT path, MAX(cleared_at) FROM blacklist WHERE {within} GROUP BY path", *paths)
        }
        found: dict[str, list[str]] = defaultdict(list)
        for path, job, at in db.rows(f"SELECT path, job_id, failed_at FROM input_failures WHERE {within}", *paths):
            last_clear = cleared.get(path)
            if last_clear is None or db.time(at) > last_clear:
                found[path].append(job)
        return dict(found)

    @staticmethod
    def _node_jobs(db: Transaction, since: datetime) -> dict[str, frozenset[str]]:
        jobs: dict[str, set[str]] = defaultdict(set)
        for node, job in db.rows("SELECT node, job_id FROM node_failures WHERE failed_at >= ?", since):
            jobs[node].add(job)
        return {node: frozenset(ids) for node, ids in jobs.items()}

    @staticmethod
    def _nodes_seen(db: Transaction, since: datetime) -> int:
        """Nodes of the window's last NODES_SAMPLE attempts: the cluster's size, as far as
        the exclusion cap needs it."""
        seen: set[str] = set()
        recent = "SELECT nodes FROM attempts WHERE recorded_at >= ? ORDER BY id DESC LIMIT ?"
        for (nodes,) in db.rows(recent, since, NODES_SAMPLE):
            seen.update(db.json(nodes) or ())
        return len(seen)

    def _keep_decision(
        self,
        db: Transaction,
        attempt_id: int,
        attempt: Attempt,
        decision: Decision,
        now: datetime,
    ) -> None:
        """The decision and its effects (input and node failures, blacklist entries, a hold)."""
        effects, why = decision.effects, decision.explanation
        for path in effects.implicated_inputs:
            db.add("input_failures", {"path": path, "job_id": attempt.job_id, "attempt_id": attempt_id, "failed_at": now})
        for node in effects.implicated_nodes:
            failure = {"node": node, "job_id": attempt.job_id, "attempt_id": attempt_id, "reason": why.reason}
            db.add("node_failures", {**failure, "failed_at": now})
        for path in effects.blacklisted_inputs:
            behind = {
                "reason": why.reason,
                "failures": why.counters.get("input_failures", {}).get(path),
                "job": attempt.job_id,
                "attempt": attempt.attempt,
            }
            db.add("blacklist", {"path": path, "why": why.message, "evidence": behind, "created_at": now})
        if effects.hold:
            behind = {"failures": why.counters.get("user_failures"), "job": attempt.job_id, "attempt": attempt.attempt}
            db.add("holds", {"user": attempt.user, "reason": effects.hold, "evidence": behind, "created_at": now})
        self._keep_decision_row(db, attempt, decision, now, attempt_id)

    @staticmethod
    def _keep_decision_row(db: Transaction, attempt: Attempt, decision: Decision, now: datetime, attempt_id: int | None) -> None:
        db.add(
            "decisions",
            {
                "attempt_id": attempt_id,
                "job_id": attempt.job_id,
                "user": attempt.user,
                "kind": "failure" if attempt_id is not None else "admission",
                "action": decision.action,
                "mode": decision.mode,
                "reason": decision.explanation.reason,
                "clause": decision.explanation.policy_clause,
                "body": to_json(decision),
                "decided_at": now,
            },
        )

    # -- admission ------------------------------------------------------------------------

    def admit(
        self, attempt: Attempt, judge: Callable[[History, Sequence[str]], Decision | None], now: datetime | None = None
    ) -> Decision | None:
        """A submission's rejection or hold (recorded), or None when it is admitted.
        ``judge`` gets the user's holds, the inputs' blacklist entries and the reasons of
        the job's earlier failures."""
        now = now or datetime.now(UTC)
        keys = [f"job:{attempt.job_id}", f"user:{attempt.user}", *(f"path:{p}" for p in attempt.inputs)]
        with self._driver_errors(), self._transaction(keys) as db:
            history = History(
                held_reasons=self._held(db, attempt.user),
                blacklisted=self._active_blacklist(db, sorted(attempt.inputs)),
            )
            expected = db.rows(
                "SELECT c.reason FROM classifications c JOIN attempts a ON c.attempt_id = a.id"
                " WHERE a.job_id = ? AND a.status != ?",
                attempt.job_id,
                "passed",
            )
            decision = judge(history, [reason for (reason,) in expected])
            if decision is None:
                return None
            self._keep_decision_row(db, attempt, decision, now, None)
            return decision
