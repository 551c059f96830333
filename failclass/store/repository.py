"""The store: records attempts with their classification and decision, gathers the
history the policy needs, and applies the decision's effects, in one transaction.

Concurrency: on PostgreSQL, a transaction first takes advisory locks on its job, user
and input paths (in sorted order: no deadlock), so that two reports about one job or one
user are decided one after the other and every attempt is counted exactly once (the
unique (job, attempt) and idempotency-key constraints back this up). SQLite serialises
writers itself; within one process a lock keeps the read-decide-write sequence whole.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, func, make_url, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from failclass.attempts import Attempt
from failclass.logfacts import Progress
from failclass.policy import Decision, Failure, History, PriorAttempt, admit, decide, implicated_inputs
from failclass.policy_config import PolicyConfig
from failclass.store.migrate import upgrade
from failclass.store.models import (
    AttemptRow,
    BlacklistRow,
    ClassificationRow,
    DecisionRow,
    HoldRow,
    InputFailureRow,
    LabelRow,
    NodeFailureRow,
)

DEFAULT_LIMIT = 100
NODES_SAMPLE = 5000


@dataclass(frozen=True)
class Recorded:
    """What the store answers for a reported attempt."""

    attempt_id: int
    classification: dict[str, Any]
    decision: dict[str, Any] | None
    duplicate: bool


def default_database_url() -> str:
    """The embedded default: a SQLite file in the user's data folder."""
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{data_home / 'failclass' / 'failclass.db'}"


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created when missing."""
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        return create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


class Store:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)
        self.postgres = engine.dialect.name == "postgresql"
        self._local_lock = threading.Lock()

    @classmethod
    def open(cls, url: str, migrate: bool = True) -> Store:
        engine = make_engine(url)
        if migrate:
            upgrade(engine)
        return cls(engine)

    def ping(self) -> None:
        """Raise if the database does not answer."""
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    @contextmanager
    def _serialised(self, keys: Sequence[str]) -> Iterator[Session]:
        """A transaction that holds the locks of ``keys`` until it ends."""
        with self.sessions() as session, session.begin():
            if self.postgres:
                for key in sorted(set(keys)):
                    session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key})
                yield session
            else:
                with self._local_lock:
                    yield session

    # -- reporting an attempt ------------------------------------------------------------

    def record(
        self,
        attempt: Attempt,
        classification: dict[str, Any],
        progress: Progress | None,
        config: PolicyConfig,
        idempotency_key: str | None = None,
        now: datetime | None = None,
    ) -> Recorded:
        """Store the attempt, decide (unless it passed), apply the effects; an attempt
        reported again (same idempotency key, or same job and attempt number) gets the
        first answer back."""
        now = now or datetime.now(UTC)
        failure = Failure(
            classification["reason"],
            classification.get("rule_id"),
            tuple(e["text"] for e in classification.get("evidence", [])),
            progress,
        )
        paths = sorted(set(attempt.inputs) | set(implicated_inputs(attempt, failure)))
        keys = [f"job:{attempt.job_id}", f"user:{attempt.user}", *(f"path:{p}" for p in paths)]
        try:
            with self._serialised(keys) as session:
                earlier = self._existing(session, attempt, idempotency_key)
                if earlier is not None:
                    return self._recorded(session, earlier, duplicate=True)
                row = self._insert_attempt(session, attempt, classification, failure, idempotency_key, now)
                if attempt.status != "passed":
                    history = self._history(session, row.id, attempt, failure, paths, config, now)
                    decision = decide(attempt, failure, history, config)
                    self._apply(session, row, attempt, decision, now)
                    session.add(
                        DecisionRow(
                            attempt_id=row.id,
                            job_id=attempt.job_id,
                            user=attempt.user,
                            action=decision.action,
                            mode=decision.mode,
                            reason=decision.reason,
                            clause=decision.clause,
                            body=decision.to_dict(classification.get("evidence", [])),
                            decided_at=now,
                        )
                    )
                session.flush()
                return self._recorded(session, row, duplicate=False)
        except IntegrityError:
            # Another transaction recorded the same attempt first (SQLite, or a key race).
            with self.sessions() as session:
                earlier = self._existing(session, attempt, idempotency_key)
                if earlier is None:
                    raise
                return self._recorded(session, earlier, duplicate=True)

    def _existing(self, session: Session, attempt: Attempt, key: str | None) -> AttemptRow | None:
        if key:
            found = session.scalar(select(AttemptRow).where(AttemptRow.idempotency_key == key))
            if found is not None:
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
        key: str | None,
        now: datetime,
    ) -> AttemptRow:
        facts = attempt.facts()
        facts["attempt_no"] = facts.pop("attempt")
        row = AttemptRow(**facts, idempotency_key=key, recorded_at=now)
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

    def _history(
        self,
        session: Session,
        current: int,
        attempt: Attempt,
        failure: Failure,
        paths: Sequence[str],
        config: PolicyConfig,
        now: datetime,
    ) -> History:
        """What the policy needs to know, the attempt being recorded (row ``current``) excluded.
        Only what this failure's settings can use is read: a decision stays cheap as the
        store grows."""
        rules = config.for_failure(failure.reason, failure.rule_id, attempt.vc)
        about_nodes = rules.suspect_node or rules.action == "retry_elsewhere"
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
        held = set(session.scalars(select(HoldRow.reason).where(HoldRow.user == attempt.user, HoldRow.released_at.is_(None))))
        return History(
            job_attempts=job_attempts,
            user_failures=self._user_failures(session, current, attempt, config, now) if rules.hold_after else {},
            held_reasons=frozenset(held),
            blacklisted=self._active_blacklist(session, paths),
            input_failures=self._input_failures(session, paths) if rules.blacklist_inputs else {},
            node_jobs=self._node_jobs(session, config, now) if about_nodes else {},
            nodes_seen=self._nodes_seen(session, config, now) if about_nodes else 0,
        )

    def _user_failures(
        self, session: Session, current: int, attempt: Attempt, config: PolicyConfig, now: datetime
    ) -> dict[str, int]:
        since = now - timedelta(hours=config.user_window_hours)
        releases = dict(
            session.execute(
                select(HoldRow.reason, func.max(HoldRow.released_at))
                .where(HoldRow.user == attempt.user, HoldRow.released_at.is_not(None))
                .group_by(HoldRow.reason)
            ).all()
        )
        rows = session.execute(
            select(ClassificationRow.reason, AttemptRow.recorded_at)
            .join(AttemptRow, ClassificationRow.attempt_id == AttemptRow.id)
            .where(
                AttemptRow.user == attempt.user,
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

    def _active_blacklist(self, session: Session, paths: Sequence[str]) -> dict[str, str]:
        if not paths:
            return {}
        rows = session.execute(
            select(BlacklistRow.path, BlacklistRow.why).where(BlacklistRow.path.in_(paths), BlacklistRow.cleared_at.is_(None))
        )
        return {path: why for path, why in rows}

    def _input_failures(self, session: Session, paths: Sequence[str]) -> dict[str, list[str]]:
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

    def _node_jobs(self, session: Session, config: PolicyConfig, now: datetime) -> dict[str, frozenset[str]]:
        since = now - timedelta(hours=config.nodes.window_hours)
        jobs: dict[str, set[str]] = defaultdict(set)
        for node, job in session.execute(
            select(NodeFailureRow.node, NodeFailureRow.job_id).where(NodeFailureRow.failed_at >= since)
        ):
            jobs[node].add(job)
        return {node: frozenset(ids) for node, ids in jobs.items()}

    def _nodes_seen(self, session: Session, config: PolicyConfig, now: datetime) -> int:
        """Nodes of the window's last NODES_SAMPLE attempts: the cluster's size, as far as
        the exclusion cap needs it."""
        since = now - timedelta(hours=config.nodes.window_hours)
        seen: set[str] = set()
        recent = (
            select(AttemptRow.nodes).where(AttemptRow.recorded_at >= since).order_by(AttemptRow.id.desc()).limit(NODES_SAMPLE)
        )
        for nodes in session.scalars(recent):
            seen.update(nodes or ())
        return len(seen)

    def _apply(self, session: Session, row: AttemptRow, attempt: Attempt, decision: Decision, now: datetime) -> None:
        effects = decision.effects
        for path in effects.implicated_inputs:
            session.add(InputFailureRow(path=path, job_id=attempt.job_id, attempt_id=row.id, failed_at=now))
        for node in effects.implicated_nodes:
            session.add(
                NodeFailureRow(node=node, job_id=attempt.job_id, attempt_id=row.id, reason=decision.reason, failed_at=now)
            )
        for path in effects.blacklist:
            evidence = {
                "failures": decision.counters.get("input_failures", {}).get(path),
                "job": attempt.job_id,
                "attempt": attempt.attempt,
            }
            session.add(BlacklistRow(path=path, why=decision.message, evidence=evidence, created_at=now))
        if effects.hold_reason:
            evidence = {"failures": decision.counters.get("user_failures"), "job": attempt.job_id, "attempt": attempt.attempt}
            session.add(HoldRow(user=attempt.user, reason=effects.hold_reason, evidence=evidence, created_at=now))

    # -- admission ------------------------------------------------------------------------

    def admit(self, attempt: Attempt, config: PolicyConfig, now: datetime | None = None) -> dict[str, Any] | None:
        """A submission's rejection or hold (recorded), or None when it is admitted."""
        now = now or datetime.now(UTC)
        keys = [f"job:{attempt.job_id}", f"user:{attempt.user}", *(f"path:{p}" for p in attempt.inputs)]
        with self._serialised(keys) as session:
            held = frozenset(
                session.scalars(select(HoldRow.reason).where(HoldRow.user == attempt.user, HoldRow.released_at.is_(None)))
            )
            history = History(held_reasons=held, blacklisted=self._active_blacklist(session, sorted(attempt.inputs)))
            expected = session.scalars(
                select(ClassificationRow.reason)
                .join(AttemptRow, ClassificationRow.attempt_id == AttemptRow.id)
                .where(AttemptRow.job_id == attempt.job_id, AttemptRow.status != "passed")
            ).all()
            decision = admit(attempt, history, expected)
            if decision is None:
                return None
            body = {**decision.to_dict(), "mode": config.mode, "enforced": config.mode == "enforce"}
            session.add(
                DecisionRow(
                    job_id=attempt.job_id,
                    user=attempt.user,
                    kind="admission",
                    action=decision.action,
                    mode=config.mode,
                    reason=decision.reason,
                    clause=decision.clause,
                    body=body,
                    decided_at=now,
                )
            )
            return body

    # -- reading and operator actions -----------------------------------------------------

    def job(self, job_id: str) -> list[dict[str, Any]]:
        with self.sessions() as session:
            rows = session.scalars(select(AttemptRow).where(AttemptRow.job_id == job_id).order_by(AttemptRow.attempt_no)).all()
            return [attempt_dict(session, row) for row in rows]

    def decisions(
        self,
        user: str | None = None,
        job_id: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> list[dict[str, Any]]:
        query = select(DecisionRow).order_by(DecisionRow.decided_at.desc(), DecisionRow.id.desc()).limit(limit)
        for column, value in ((DecisionRow.user, user), (DecisionRow.job_id, job_id), (DecisionRow.action, action)):
            if value is not None:
                query = query.where(column == value)
        if since is not None:
            query = query.where(DecisionRow.decided_at >= since)
        with self.sessions() as session:
            return [decision_dict(row) for row in session.scalars(query)]

    def blacklist(self, include_cleared: bool = False) -> list[dict[str, Any]]:
        query = select(BlacklistRow).order_by(BlacklistRow.created_at)
        if not include_cleared:
            query = query.where(BlacklistRow.cleared_at.is_(None))
        with self.sessions() as session:
            return [
                row_dict(row, ("id", "path", "why", "evidence", "created_at", "cleared_at", "cleared_by"))
                for row in session.scalars(query)
            ]

    def clear_blacklist(self, entry_id: int, by: str, now: datetime | None = None) -> bool:
        with self.sessions() as session, session.begin():
            row = session.get(BlacklistRow, entry_id)
            if row is None or row.cleared_at is not None:
                return False
            row.cleared_at, row.cleared_by = now or datetime.now(UTC), by
            return True

    def holds(self, include_released: bool = False) -> list[dict[str, Any]]:
        query = select(HoldRow).order_by(HoldRow.created_at)
        if not include_released:
            query = query.where(HoldRow.released_at.is_(None))
        with self.sessions() as session:
            return [
                row_dict(row, ("id", "user", "reason", "evidence", "created_at", "released_at", "released_by"))
                for row in session.scalars(query)
            ]

    def release_hold(self, hold_id: int, by: str, now: datetime | None = None) -> bool:
        with self.sessions() as session, session.begin():
            row = session.get(HoldRow, hold_id)
            if row is None or row.released_at is not None:
                return False
            row.released_at, row.released_by = now or datetime.now(UTC), by
            return True

    def nodes(self, config: PolicyConfig, now: datetime | None = None) -> list[dict[str, Any]]:
        """Nodes with hardware failures in the window; suspect from min_jobs distinct jobs."""
        now = now or datetime.now(UTC)
        since = now - timedelta(hours=config.nodes.window_hours)
        with self.sessions() as session:
            rows = session.execute(
                select(NodeFailureRow.node, NodeFailureRow.job_id, NodeFailureRow.reason, NodeFailureRow.failed_at).where(
                    NodeFailureRow.failed_at >= since
                )
            ).all()
        grouped: dict[str, dict[str, Any]] = {}
        for node, job, reason, at in rows:
            entry = grouped.setdefault(node, {"node": node, "jobs": set(), "reasons": set(), "last_failure": at})
            entry["jobs"].add(job)
            entry["reasons"].add(reason)
            entry["last_failure"] = max(entry["last_failure"], at)
        result = []
        for entry in grouped.values():
            jobs = sorted(entry["jobs"])
            result.append(
                {
                    "node": entry["node"],
                    "jobs": jobs,
                    "reasons": sorted(entry["reasons"]),
                    "last_failure": entry["last_failure"].isoformat(),
                    "suspect": len(jobs) >= config.nodes.min_jobs,
                }
            )
        return sorted(result, key=lambda e: (-len(e["jobs"]), e["node"]))

    def add_label(self, attempt_id: int | None, reason: str, stored_as: str, note: str, by: str) -> int:
        """Record an operator's label; KeyError when ``attempt_id`` names no attempt."""
        with self.sessions() as session, session.begin():
            if attempt_id is not None and session.get(AttemptRow, attempt_id) is None:
                raise KeyError(attempt_id)
            row = LabelRow(attempt_id=attempt_id, reason=reason, stored_as=stored_as, note=note, labelled_by=by)
            session.add(row)
            session.flush()
            return row.id

    def attempt_rows(self) -> list[dict[str, Any]]:
        """Every attempt with its classification, for the analytics."""
        with self.sessions() as session:
            rows = session.execute(
                select(AttemptRow, ClassificationRow).join(ClassificationRow, ClassificationRow.attempt_id == AttemptRow.id)
            ).all()
            return [
                {
                    "job_id": a.job_id,
                    "attempt": a.attempt_no,
                    "user": a.user,
                    "vc": a.vc,
                    "status": a.status,
                    "gpus": a.gpus,
                    "start_time": a.start_time,
                    "end_time": a.end_time,
                    "reason": c.reason,
                }
                for a, c in rows
            ]


def row_dict(row: Any, names: Sequence[str]) -> dict[str, Any]:
    out = {}
    for name in names:
        value = getattr(row, name)
        out[name] = value.isoformat() if isinstance(value, datetime) else value
    return out


def decision_dict(row: DecisionRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "kind": row.kind,
        "job_id": row.job_id,
        "user": row.user,
        "decided_at": row.decided_at.isoformat(),
        **row.body,
    }


def attempt_dict(session: Session, row: AttemptRow) -> dict[str, Any]:
    classification = session.scalar(select(ClassificationRow).where(ClassificationRow.attempt_id == row.id))
    decision = session.scalar(select(DecisionRow).where(DecisionRow.attempt_id == row.id))
    facts = row_dict(
        row,
        (
            "job_id",
            "attempt_no",
            "user",
            "vc",
            "status",
            "submit_time",
            "start_time",
            "end_time",
            "gpus",
            "gpu_type",
            "nodes",
            "exit_code",
            "signal",
            "inputs",
            "logs",
            "recorded_at",
        ),
    )
    facts["attempt"] = facts.pop("attempt_no")
    return {
        **facts,
        "classification": classification.body if classification else None,
        "decision": decision_dict(decision) if decision else None,
    }
