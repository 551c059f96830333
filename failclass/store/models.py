"""SQLAlchemy 2 tables: attempts with their classification and decision, and the state
the policy keeps across jobs (input failures and the blacklist, holds, node failures),
plus operators' labels. Times are stored in UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, DateTime, Dialect, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware datetimes in, aware UTC datetimes out, on SQLite (which keeps no zone) too."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON, datetime: UTCDateTime}


class AttemptRow(Base):
    __tablename__ = "attempts"
    __table_args__ = (UniqueConstraint("job_id", "attempt_no", name="uq_attempt_job_no"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[str] = mapped_column(String(200), index=True)
    attempt_no: Mapped[int] = mapped_column(Integer)
    user: Mapped[str] = mapped_column(String(200), index=True)
    vc: Mapped[str] = mapped_column(String(200), default="default")
    status: Mapped[str] = mapped_column(String(20))
    submit_time: Mapped[datetime | None] = mapped_column()
    start_time: Mapped[datetime | None] = mapped_column()
    end_time: Mapped[datetime | None] = mapped_column()
    gpus: Mapped[int] = mapped_column(Integer, default=0)
    gpu_type: Mapped[str | None] = mapped_column(String(100))
    nodes: Mapped[list[Any]] = mapped_column(default=list)
    tasks_per_node: Mapped[int | None] = mapped_column(Integer)
    pods: Mapped[dict[str, Any] | None] = mapped_column(default=dict)  # pod -> node; NULL: recorded before 0005
    exit_code: Mapped[int | None] = mapped_column(Integer)
    signal: Mapped[int | None] = mapped_column(Integer)
    inputs: Mapped[list[Any]] = mapped_column(default=list)
    logs: Mapped[list[Any]] = mapped_column(default=list)
    idempotency_key: Mapped[str | None] = mapped_column(String(200), unique=True)
    request_digest: Mapped[str | None] = mapped_column(String(64))  # SHA-256 of the request the key came with
    recorded_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)

    classification: Mapped[ClassificationRow | None] = relationship(back_populates="attempt", uselist=False)
    decision: Mapped[DecisionRow | None] = relationship(back_populates="attempt", uselist=False)


class ClassificationRow(Base):
    __tablename__ = "classifications"

    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"), unique=True)
    reason: Mapped[str] = mapped_column(String(64), index=True)
    source: Mapped[str] = mapped_column(String(16))
    rule_id: Mapped[str | None] = mapped_column(String(200))
    signature: Mapped[str] = mapped_column(String(200))
    confidence: Mapped[float] = mapped_column(Float)
    progress_epoch: Mapped[int | None] = mapped_column(Integer)
    progress_step: Mapped[int | None] = mapped_column(Integer)
    checkpoint_basis: Mapped[str | None] = mapped_column(String(16))  # goodput's Basis, where the log was read
    last_checkpoint_at: Mapped[datetime | None] = mapped_column()  # the log's last checkpoint save in the attempt
    origin_rank: Mapped[int | None] = mapped_column(Integer)  # where the failure started (failclass.contracts.Origin)
    origin_node: Mapped[str | None] = mapped_column(String(300))
    origin_gpu: Mapped[int | None] = mapped_column(Integer)
    body: Mapped[dict[str, Any]] = mapped_column()  # the classify contract object

    attempt: Mapped[AttemptRow] = relationship(back_populates="classification")


class DecisionRow(Base):
    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[int | None] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"), unique=True)
    job_id: Mapped[str] = mapped_column(String(200), index=True)
    user: Mapped[str] = mapped_column(String(200), index=True)
    kind: Mapped[str] = mapped_column(String(16), default="failure")  # failure | admission
    action: Mapped[str] = mapped_column(String(32), index=True)
    mode: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(String(64))
    clause: Mapped[str] = mapped_column(String(300))
    body: Mapped[dict[str, Any]] = mapped_column()  # the decision contract object
    decided_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)

    attempt: Mapped[AttemptRow | None] = relationship(back_populates="decision")


class InputFailureRow(Base):
    """One incorrect-input failure implicating one path."""

    __tablename__ = "input_failures"
    __table_args__ = (UniqueConstraint("attempt_id", "path", name="uq_input_failure"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    path: Mapped[str] = mapped_column(String(2000), index=True)
    job_id: Mapped[str] = mapped_column(String(200))
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"))
    failed_at: Mapped[datetime] = mapped_column(default=utcnow)


class BlacklistRow(Base):
    __tablename__ = "blacklist"

    id: Mapped[int] = mapped_column(primary_key=True)
    path: Mapped[str] = mapped_column(String(2000), index=True)
    why: Mapped[str] = mapped_column(Text)
    evidence: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    cleared_at: Mapped[datetime | None] = mapped_column()
    cleared_by: Mapped[str | None] = mapped_column(String(200))


class HoldRow(Base):
    __tablename__ = "holds"

    id: Mapped[int] = mapped_column(primary_key=True)
    user: Mapped[str] = mapped_column(String(200), index=True)
    reason: Mapped[str] = mapped_column(String(64))
    evidence: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    released_at: Mapped[datetime | None] = mapped_column()
    released_by: Mapped[str | None] = mapped_column(String(200))


class NodeFailureRow(Base):
    """A hardware failure (ECC, CUDA init, ...) of one job on one node."""

    __tablename__ = "node_failures"
    __table_args__ = (Index("ix_node_failures_node_time", "node", "failed_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    node: Mapped[str] = mapped_column(String(300))
    job_id: Mapped[str] = mapped_column(String(200))
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"))
    reason: Mapped[str] = mapped_column(String(64))
    failed_at: Mapped[datetime] = mapped_column(default=utcnow)


class LabelRow(Base):
    __tablename__ = "labels"

    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[int | None] = mapped_column(ForeignKey("attempts.id", ondelete="SET NULL"))
    reason: Mapped[str] = mapped_column(String(64))
    stored_as: Mapped[str] = mapped_column(String(2000))
    note: Mapped[str] = mapped_column(Text, default="")
    labelled_by: Mapped[str] = mapped_column(String(200))
    labelled_at: Mapped[datetime] = mapped_column(default=utcnow)


class NoticeRow(Base):
    """One notice (failclass.contracts.Notice) for one channel: the outbox the hook and the
    service fill and `failclass notify flush` empties (failclass.notify.delivery).
    ``status``: queued (until sent, or tried ``tries`` times), sent, or failed (given up)."""

    __tablename__ = "notices"
    __table_args__ = (
        Index("ix_notices_due", "status", "next_try_at"),
        Index("ix_notices_key", "channel", "key", "created_at"),
        Index("ix_notices_job_kind", "channel", "job_id", "kind", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    channel: Mapped[str] = mapped_column(String(100))
    key: Mapped[str] = mapped_column(String(500))
    kind: Mapped[str] = mapped_column(String(32))
    job_id: Mapped[str] = mapped_column(String(200))
    user: Mapped[str] = mapped_column(String(200))
    body: Mapped[dict[str, Any]] = mapped_column()  # the notice contract object
    status: Mapped[str] = mapped_column(String(16))
    tries: Mapped[int] = mapped_column(Integer, default=0)
    next_try_at: Mapped[datetime] = mapped_column()
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column()


class WatchStepRow(Base):
    """One step the watch took on a running job (failclass.contracts.WatchStep), once per
    idle or hung stretch: what the store keeps so that the next run does not take it again,
    and the operator sees what was done, why, and to whom."""

    __tablename__ = "watch_steps"
    __table_args__ = (
        Index("ix_watch_steps_job", "job_id", "action", "step", "taken_at"),
        Index("ix_watch_steps_user", "user", "action", "taken_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[str] = mapped_column(String(200))
    user: Mapped[str] = mapped_column(String(200))
    vc: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(16))
    step: Mapped[int] = mapped_column(Integer)
    since: Mapped[datetime] = mapped_column()
    taken_at: Mapped[datetime] = mapped_column()
    body: Mapped[dict[str, Any]] = mapped_column()  # the step contract object, with what was done


class GoodRunRow(Base):
    """A job's last good run (failclass.store.goodruns): the line templates of its last
    attempt that passed or progressed further, with how many lines each covered; not the
    log itself. One row per job, replaced."""

    __tablename__ = "good_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[str] = mapped_column(String(200), unique=True)
    user: Mapped[str] = mapped_column(String(200))
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"))
    attempt_no: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    progress_epoch: Mapped[int | None] = mapped_column(Integer)
    progress_step: Mapped[int | None] = mapped_column(Integer)
    lines: Mapped[int] = mapped_column(Integer)  # of its logs
    dropped: Mapped[int] = mapped_column(Integer)  # lines of templates past the cap
    templates: Mapped[dict[str, Any]] = mapped_column()  # template -> lines it covered
    kept_at: Mapped[datetime] = mapped_column(default=utcnow)


class UnseenLineRow(Base):
    """A line of a failure that no rule named (No signature, or the model's answer) whose
    template its job's good run never printed (or, without one, a line of its failure
    region): what `failclass rules propose` clusters across jobs and users."""

    __tablename__ = "unseen_lines"
    __table_args__ = (Index("ix_unseen_lines_attempt", "attempt_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"))
    job_id: Mapped[str] = mapped_column(String(200))
    user: Mapped[str] = mapped_column(String(200))
    template: Mapped[str] = mapped_column(Text)
    line: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    count: Mapped[int] = mapped_column(Integer)
    against: Mapped[int | None] = mapped_column(Integer)  # the good run's attempt id; NULL: none to compare with
