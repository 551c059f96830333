"""Reading the store and operators' actions on it: a job's attempts, decisions, the
blacklist, holds, suspect nodes, labels, and every attempt for the analytics."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

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


class StoreViews(Database):
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

    def nodes(self, window_hours: float, min_jobs: int, now: datetime | None = None) -> list[dict[str, Any]]:
        """Nodes with hardware failures in the window; suspect from ``min_jobs`` distinct jobs."""
        now = now or datetime.now(UTC)
        since = now - timedelta(hours=window_hours)
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
                    "suspect": len(jobs) >= min_jobs,
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
