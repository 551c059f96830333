"""Reading the store and operators' actions on it: a job's attempts, decisions, the
blacklist, holds, suspect nodes, labels, and every attempt for the analytics.

The operators' lists that leave as JSON (the service answers with them as they are) are
TypedDicts: typed for the code, plain objects on the wire. Classifications and decisions
are read back into their contract objects (failclass.contracts); the analytics' rows are
dataclasses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from pydantic import JsonValue
from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from failclass.attempts import Attempt, Status
from failclass.contracts import Classification, DecisionRecord, from_json
from failclass.store.database import Database
from failclass.store.models import (
    AttemptRow,
    BlacklistRow,
    ClassificationRow,
    DecisionRow,
    HoldRow,
    LabelRow,
    NodeFailureRow,
)

DEFAULT_LIMIT = 100


@dataclass(frozen=True, kw_only=True)
class RecordedAttempt(Attempt):
    """An attempt as the store recorded it: its facts, when, its classification and
    decision, and where its failure started (the rank, node and GPU of its Origin,
    failclass.contracts), where its logs were read as ranks."""

    recorded_at: datetime
    classification: Classification | None = None
    decision: DecisionRecord | None = None
    origin_rank: int | None = None
    origin_node: str | None = None
    origin_gpu: int | None = None


class BlacklistEntry(TypedDict):
    id: int
    path: str
    why: str
    evidence: dict[str, JsonValue]  # the failures behind it
    created_at: str
    cleared_at: str | None
    cleared_by: str | None


class HoldEntry(TypedDict):
    id: int
    user: str
    reason: str
    evidence: dict[str, JsonValue]  # the failures behind it
    created_at: str
    released_at: str | None
    released_by: str | None


class NodeEntry(TypedDict):
    node: str
    jobs: list[str]
    reasons: list[str]
    last_failure: str
    suspect: bool


@dataclass(frozen=True)
class StoredAttempt:
    """One attempt with its classification and decision, for the analytics."""

    job_id: str
    attempt: int
    user: str
    vc: str
    status: str
    submit_time: datetime | None
    start_time: datetime | None
    end_time: datetime | None
    recorded_at: datetime
    gpus: int
    nodes: tuple[str, ...]
    exit_code: int | None
    inputs: tuple[str, ...]
    logs: tuple[str, ...]
    reason: str | None
    source: str | None
    rule_id: str | None
    confidence: float | None
    action: str | None
    clause: str | None
    checkpoint_basis: str | None
    last_checkpoint_at: datetime | None
    origin_node: str | None
    origin_gpu: int | None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


class StoreViews(Database):
    def job(self, job_id: str) -> list[RecordedAttempt]:
        with self.sessions() as session:
            rows = session.scalars(select(AttemptRow).where(AttemptRow.job_id == job_id).order_by(AttemptRow.attempt_no)).all()
            return [attempt_view(session, row) for row in rows]

    def decisions(
        self,
        user: str | None = None,
        job_id: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> list[DecisionRecord]:
        query = select(DecisionRow).order_by(DecisionRow.decided_at.desc(), DecisionRow.id.desc()).limit(limit)
        for column, value in ((DecisionRow.user, user), (DecisionRow.job_id, job_id), (DecisionRow.action, action)):
            if value is not None:
                query = query.where(column == value)
        if since is not None:
            query = query.where(DecisionRow.decided_at >= since)
        with self.sessions() as session:
            return [decision_view(row) for row in session.scalars(query)]

    def blacklist(self, include_cleared: bool = False) -> list[BlacklistEntry]:
        query = select(BlacklistRow).order_by(BlacklistRow.created_at)
        if not include_cleared:
            query = query.where(BlacklistRow.cleared_at.is_(None))
        with self.sessions() as session:
            return [
                BlacklistEntry(
                    id=row.id,
                    path=row.path,
                    why=row.why,
                    evidence=row.evidence,
                    created_at=row.created_at.isoformat(),
                    cleared_at=_iso(row.cleared_at),
                    cleared_by=row.cleared_by,
                )
                for row in session.scalars(query)
            ]

    def clear_blacklist(self, entry_id: int, by: str, now: datetime | None = None) -> bool:
        with self.sessions() as session, session.begin():
            row = session.get(BlacklistRow, entry_id)
            if row is None or row.cleared_at is not None:
                return False
            row.cleared_at, row.cleared_by = now or datetime.now(UTC), by
            return True

    def holds(self, include_released: bool = False) -> list[HoldEntry]:
        query = select(HoldRow).order_by(HoldRow.created_at)
        if not include_released:
            query = query.where(HoldRow.released_at.is_(None))
        with self.sessions() as session:
            return [
                HoldEntry(
                    id=row.id,
                    user=row.user,
                    reason=row.reason,
                    evidence=row.evidence,
                    created_at=row.created_at.isoformat(),
                    released_at=_iso(row.released_at),
                    released_by=row.released_by,
                )
                for row in session.scalars(query)
            ]

    def release_hold(self, hold_id: int, by: str, now: datetime | None = None) -> bool:
        with self.sessions() as session, session.begin():
            row = session.get(HoldRow, hold_id)
            if row is None or row.released_at is not None:
                return False
            row.released_at, row.released_by = now or datetime.now(UTC), by
            return True

    def nodes(self, window_hours: float, min_jobs: int, now: datetime | None = None) -> list[NodeEntry]:
        """Nodes with hardware failures in the window; suspect from ``min_jobs`` distinct jobs."""
        now = now or datetime.now(UTC)
        since = now - timedelta(hours=window_hours)
        with self.sessions() as session:
            rows = session.execute(
                select(NodeFailureRow.node, NodeFailureRow.job_id, NodeFailureRow.reason, NodeFailureRow.failed_at).where(
                    NodeFailureRow.failed_at >= since
                )
            ).all()
        jobs: dict[str, set[str]] = {}
        reasons: dict[str, set[str]] = {}
        last: dict[str, datetime] = {}
        for node, job, reason, at in rows:
            jobs.setdefault(node, set()).add(job)
            reasons.setdefault(node, set()).add(reason)
            last[node] = max(last.get(node, at), at)
        result = [
            NodeEntry(
                node=node,
                jobs=sorted(jobs[node]),
                reasons=sorted(reasons[node]),
                last_failure=last[node].isoformat(),
                suspect=len(jobs[node]) >= min_jobs,
            )
            for node in jobs
        ]
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

    def attempt_rows(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        users: Sequence[str] = (),
        vcs: Sequence[str] = (),
        reasons: Sequence[str] = (),
        statuses: Sequence[str] = (),
    ) -> list[StoredAttempt]:
        """Every attempt with its classification and decision, for the analytics; filtered
        in SQL. An attempt's time is its end, else start, submission, recording time;
        since <= time < until."""
        query = (
            select(*STORED_ATTEMPT_COLUMNS)  # columns, not ORM objects: ten times faster at 100,000 rows
            .outerjoin(ClassificationRow, ClassificationRow.attempt_id == AttemptRow.id)
            .outerjoin(DecisionRow, DecisionRow.attempt_id == AttemptRow.id)
            .where(*_attempt_filters(since, until, users, vcs, reasons, statuses))
            .order_by(AttemptRow.id)
        )
        with self.sessions() as session:
            return [stored_attempt(*row) for row in session.execute(query)]


def _attempt_filters(
    since: datetime | None,
    until: datetime | None,
    users: Sequence[str],
    vcs: Sequence[str],
    reasons: Sequence[str],
    statuses: Sequence[str],
) -> list[ColumnElement[bool]]:
    when = func.coalesce(AttemptRow.end_time, AttemptRow.start_time, AttemptRow.submit_time, AttemptRow.recorded_at)
    where: list[ColumnElement[bool]] = []
    if since is not None:
        where.append(when >= since)
    if until is not None:
        where.append(when < until)
    for column, values in (
        (AttemptRow.user, users),
        (AttemptRow.vc, vcs),
        (ClassificationRow.reason, reasons),
        (AttemptRow.status, statuses),
    ):
        if values:
            where.append(column.in_(list(values)))
    return where


STORED_ATTEMPT_COLUMNS = (
    AttemptRow.job_id,
    AttemptRow.attempt_no,
    AttemptRow.user,
    AttemptRow.vc,
    AttemptRow.status,
    AttemptRow.submit_time,
    AttemptRow.start_time,
    AttemptRow.end_time,
    AttemptRow.recorded_at,
    AttemptRow.gpus,
    AttemptRow.nodes,
    AttemptRow.exit_code,
    AttemptRow.inputs,
    AttemptRow.logs,
    ClassificationRow.reason,
    ClassificationRow.source,
    ClassificationRow.rule_id,
    ClassificationRow.confidence,
    DecisionRow.action,
    DecisionRow.clause,
    ClassificationRow.checkpoint_basis,
    ClassificationRow.last_checkpoint_at,
    ClassificationRow.origin_node,
    ClassificationRow.origin_gpu,
)


def stored_attempt(*values: Any) -> StoredAttempt:
    """A StoredAttempt from one row of STORED_ATTEMPT_COLUMNS (lists as tuples)."""
    row = list(values)
    for index in (10, 12, 13):  # nodes, inputs, logs
        row[index] = tuple(str(item) for item in row[index] or ())
    return StoredAttempt(*row)


def decision_view(row: DecisionRow) -> DecisionRecord:
    who = {"id": row.id, "kind": row.kind, "job_id": row.job_id, "user": row.user, "decided_at": row.decided_at}
    return from_json(DecisionRecord, {**row.body, **who})


def attempt_view(session: Session, row: AttemptRow) -> RecordedAttempt:
    classification = session.scalar(select(ClassificationRow).where(ClassificationRow.attempt_id == row.id))
    decision = session.scalar(select(DecisionRow).where(DecisionRow.attempt_id == row.id))
    return RecordedAttempt(
        job_id=row.job_id,
        attempt=row.attempt_no,
        user=row.user,
        vc=row.vc,
        status=cast(Status, row.status),
        submit_time=row.submit_time,
        start_time=row.start_time,
        end_time=row.end_time,
        gpus=row.gpus,
        gpu_type=row.gpu_type,
        nodes=tuple(row.nodes or ()),
        tasks_per_node=row.tasks_per_node,
        pods=row.pods or {},
        exit_code=row.exit_code,
        signal=row.signal,
        inputs=tuple(row.inputs or ()),
        logs=tuple(row.logs or ()),
        recorded_at=row.recorded_at,
        classification=from_json(Classification, classification.body) if classification else None,
        decision=decision_view(decision) if decision else None,
        origin_rank=classification.origin_rank if classification else None,
        origin_node=classification.origin_node if classification else None,
        origin_gpu=classification.origin_gpu if classification else None,
    )
