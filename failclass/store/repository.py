"""The store: records an attempt with its classification, reads the history a decision
needs and keeps the decision and its effects, all in one serialised transaction. What to
decide is not its business: the caller hands it a function from History to Decision
(see failclass.usecases)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from failclass.attempts import Attempt
from failclass.decision import Decision
from failclass.errors import IdempotencyConflict
from failclass.history import Blacklisted, Failure, History, HistoryNeeds, PriorAttempt
from failclass.logs.facts import Progress
from failclass.store.database import default_database_url, make_engine, open_engine
from failclass.store.models import (
    AttemptRow,
    BlacklistRow,
    ClassificationRow,
    DecisionRow,
    HoldRow,
    InputFailureRow,
    NodeFailureRow,
)
from failclass.store.views import StoreViews

NODES_SAMPLE = 5000

__all__ = ["Recorded", "RequestIdentity", "Store", "default_database_url", "make_engine"]


@dataclass(frozen=True)
class RequestIdentity:
    """Who asked what: the idempotency key scoped to its caller and the digest of the
    request it came with."""

    key: str
    digest: str


@dataclass(frozen=True)
class Recorded:
    """What the store answers for a reported attempt (bodies as stored: JSON)."""

    attempt_id: int
    classification: dict[str, Any]
    decision: dict[str, Any] | None
    duplicate: bool


class Store(StoreViews):
    @classmethod
    def open(cls, url: str, migrate: bool = True) -> Store:
        return cls(open_engine(url, migrate))

    def has_attempt(self, attempt_id: int) -> bool:
        with self.sessions() as session:
            return session.get(AttemptRow, attempt_id) is not None

    # -- reporting an attempt ------------------------------------------------------------

    def record(
        self,
        attempt: Attempt,
        classification: dict[str, Any],
        failure: Failure,
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
        try:
            with self.serialised(keys) as session:
                earlier = self._existing(session, attempt, request)
                if earlier is not None:
                    return self._recorded(session, earlier, duplicate=True)
                row = self._insert_attempt(session, attempt, classification, failure, request, now)
                if decide is not None:
                    decision = decide(self._history(session, row.id, attempt, lock_paths, needs))
                    self._keep_decision(session, row, attempt, decision, classification.get("evidence", []), now)
                session.flush()
                return self._recorded(session, row, duplicate=False)
        except IntegrityError:
            # Another transaction recorded the same attempt first (SQLite, or a key race).
            with self.sessions() as session:
                earlier = self._existing(session, attempt, request)
                if earlier is None:
                    raise
                return self._recorded(session, earlier, duplicate=True)

    @staticmethod
    def _existing(session: Session, attempt: Attempt, request: RequestIdentity | None) -> AttemptRow | None:
        """The attempt as recorded before: by the request's key (which must have come
        with the same request), else by job and attempt number."""
        if request is not None:
            found = session.scalar(select(AttemptRow).where(AttemptRow.idempotency_key == request.key))
            if found is not None:
                if found.request_digest not in (None, request.digest):
                    raise IdempotencyConflict(
                        f"this Idempotency-Key was used for another request (job {found.job_id!r}, attempt "
                        f"{found.attempt_no}, other facts or log); use a new key for a new report"
                    )
                return found
        query = select(AttemptRow).where(AttemptRow.job_id == attempt.job_id, AttemptRow.attempt_no == attempt.attempt)
        return session.scalar(query)

    @staticmethod
    def _recorded(session: Session, row: AttemptRow, duplicate: bool) -> Recorded:
        classification = session.scalar(select(ClassificationRow).where(ClassificationRow.attempt_id == row.id))
        decision = session.scalar(select(DecisionRow).where(DecisionRow.attempt_id == row.id))
        assert classification is not None
        return Recorded(row.id, classification.body, decision.body if decision else None, duplicate)

    def _insert_attempt(
        self,
        session: Session,
        attempt: Attempt,
        classification: dict[str, Any],
        failure: Failure,
        request: RequestIdentity | None,
        now: datetime,
    ) -> AttemptRow:
        facts = attempt.facts()
        facts["attempt_no"] = facts.pop("attempt")
        key, digest = (request.key, request.digest) if request is not None else (None, None)
        row = AttemptRow(**facts, idempotency_key=key, request_digest=digest, recorded_at=now)
        session.add(row)
        session.flush()
        progress = failure.progress
        session.add(
            ClassificationRow(
                attempt_id=row.id,
                reason=failure.reason,
                source=classification.get("source", "none"),
                rule_id=failure.rule_id,
                signature=failure.signature,
                confidence=float(classification.get("confidence", 0.0)),
                progress_epoch=progress.epoch if progress else None,
                progress_step=progress.step if progress else None,
                body=classification,
            )
        )
        return row

    def _history(self, session: Session, current: int, attempt: Attempt, paths: Sequence[str], needs: HistoryNeeds) -> History:
        """What a decision may use, the attempt being recorded (row ``current``) excluded;
        only what ``needs`` names is read."""
        prior = session.execute(
            select(
                AttemptRow.attempt_no,
                ClassificationRow.signature,
                ClassificationRow.reason,
                ClassificationRow.progress_epoch,
                ClassificationRow.progress_step,
            )
            .join(ClassificationRow, ClassificationRow.attempt_id == AttemptRow.id)
            .where(AttemptRow.job_id == attempt.job_id, AttemptRow.attempt_no != attempt.attempt, AttemptRow.status != "passed")
        ).all()
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
            user_failures=self._user_failures(session, current, attempt.user, since) if since else {},
            held_reasons=self._held(session, attempt.user),
            blacklisted=self._active_blacklist(session, paths),
            input_failures=self._input_failures(session, paths) if needs.input_failures else {},
            node_jobs=self._node_jobs(session, nodes_since) if nodes_since else {},
            nodes_seen=self._nodes_seen(session, nodes_since) if nodes_since else 0,
        )

    @staticmethod
    def _held(session: Session, user: str) -> frozenset[str]:
        query = select(HoldRow.reason).where(HoldRow.user == user, HoldRow.released_at.is_(None))
        return frozenset(session.scalars(query))

    @staticmethod
    def _user_failures(session: Session, current: int, user: str, since: datetime) -> dict[str, int]:
        releases = dict(
            session.execute(
                select(HoldRow.reason, func.max(HoldRow.released_at))
                .where(HoldRow.user == user, HoldRow.released_at.is_not(None))
                .group_by(HoldRow.reason)
            ).all()
        )
        rows = session.execute(
            select(ClassificationRow.reason, AttemptRow.recorded_at)
            .join(AttemptRow, ClassificationRow.attempt_id == AttemptRow.id)
            .where(
                AttemptRow.user == user,
                AttemptRow.id != current,
                AttemptRow.status != "passed",
                AttemptRow.recorded_at >= since,
            )
        ).all()
        counts: dict[str, int] = defaultdict(int)
        for reason, at in rows:
            released = releases.get(reason)
            if released is None or at > released:
                counts[reason] += 1
        return dict(counts)

    @staticmethod
    def _active_blacklist(session: Session, paths: Sequence[str]) -> dict[str, Blacklisted]:
        if not paths:
            return {}
        rows = session.execute(
            select(BlacklistRow.path, BlacklistRow.why, BlacklistRow.evidence).where(
                BlacklistRow.path.in_(paths), BlacklistRow.cleared_at.is_(None)
            )
        )
        return {path: Blacklisted(why, (evidence or {}).get("reason")) for path, why, evidence in rows}

    @staticmethod
    def _input_failures(session: Session, paths: Sequence[str]) -> dict[str, list[str]]:
        if not paths:
            return {}
        cleared = dict(
            session.execute(
                select(BlacklistRow.path, func.max(BlacklistRow.cleared_at))
                .where(BlacklistRow.path.in_(paths))
                .group_by(BlacklistRow.path)
            ).all()
        )
        found: dict[str, list[str]] = defaultdict(list)
        for path, job, at in session.execute(
            select(InputFailureRow.path, InputFailureRow.job_id, InputFailureRow.failed_at).where(InputFailureRow.path.in_(paths))
        ):
            last_clear = cleared.get(path)
            if last_clear is None or at > last_clear:
                found[path].append(job)
        return dict(found)

    @staticmethod
    def _node_jobs(session: Session, since: datetime) -> dict[str, frozenset[str]]:
        jobs: dict[str, set[str]] = defaultdict(set)
        for node, job in session.execute(
            select(NodeFailureRow.node, NodeFailureRow.job_id).where(NodeFailureRow.failed_at >= since)
        ):
            jobs[node].add(job)
        return {node: frozenset(ids) for node, ids in jobs.items()}

    @staticmethod
    def _nodes_seen(session: Session, since: datetime) -> int:
        """Nodes of the window's last NODES_SAMPLE attempts: the cluster's size, as far as
        the exclusion cap needs it."""
        seen: set[str] = set()
        recent = (
            select(AttemptRow.nodes).where(AttemptRow.recorded_at >= since).order_by(AttemptRow.id.desc()).limit(NODES_SAMPLE)
        )
        for nodes in session.scalars(recent):
            seen.update(nodes or ())
        return len(seen)

    def _keep_decision(
        self,
        session: Session,
        row: AttemptRow,
        attempt: Attempt,
        decision: Decision,
        evidence: Sequence[dict[str, Any]],
        now: datetime,
    ) -> None:
        """The decision and its effects: input and node failures, blacklist entries, a hold."""
        effects = decision.effects
        for path in effects.implicated_inputs:
            session.add(InputFailureRow(path=path, job_id=attempt.job_id, attempt_id=row.id, failed_at=now))
        for node in effects.implicated_nodes:
            session.add(
                NodeFailureRow(node=node, job_id=attempt.job_id, attempt_id=row.id, reason=decision.reason, failed_at=now)
            )
        for path in effects.blacklist:
            why = {
                "reason": decision.reason,
                "failures": decision.counters.get("input_failures", {}).get(path),
                "job": attempt.job_id,
                "attempt": attempt.attempt,
            }
            session.add(BlacklistRow(path=path, why=decision.message, evidence=why, created_at=now))
        if effects.hold_reason:
            why = {"failures": decision.counters.get("user_failures"), "job": attempt.job_id, "attempt": attempt.attempt}
            session.add(HoldRow(user=attempt.user, reason=effects.hold_reason, evidence=why, created_at=now))
        session.add(self._decision_row(attempt, decision, decision.to_dict(evidence), now, attempt_id=row.id))

    @staticmethod
    def _decision_row(
        attempt: Attempt, decision: Decision, body: dict[str, Any], now: datetime, attempt_id: int | None = None
    ) -> DecisionRow:
        return DecisionRow(
            attempt_id=attempt_id,
            job_id=attempt.job_id,
            user=attempt.user,
            kind="failure" if attempt_id is not None else "admission",
            action=decision.action,
            mode=decision.mode,
            reason=decision.reason,
            clause=decision.clause,
            body=body,
            decided_at=now,
        )

    # -- admission ------------------------------------------------------------------------

    def admit(
        self, attempt: Attempt, judge: Callable[[History, Sequence[str]], Decision | None], now: datetime | None = None
    ) -> dict[str, Any] | None:
        """A submission's rejection or hold (recorded), or None when it is admitted.
        ``judge`` gets the user's holds, the inputs' blacklist entries and the reasons of
        the job's earlier failures."""
        now = now or datetime.now(UTC)
        keys = [f"job:{attempt.job_id}", f"user:{attempt.user}", *(f"path:{p}" for p in attempt.inputs)]
        with self.serialised(keys) as session:
            history = History(
                held_reasons=self._held(session, attempt.user),
                blacklisted=self._active_blacklist(session, sorted(attempt.inputs)),
            )
            expected = session.scalars(
                select(ClassificationRow.reason)
                .join(AttemptRow, ClassificationRow.attempt_id == AttemptRow.id)
                .where(AttemptRow.job_id == attempt.job_id, AttemptRow.status != "passed")
            ).all()
            decision = judge(history, expected)
            if decision is None:
                return None
            body = decision.to_dict()
            session.add(self._decision_row(attempt, decision, body, now))
            return body
