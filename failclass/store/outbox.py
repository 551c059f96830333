"""The outbox of notices (table ``notices``, failclass.store.models.NoticeRow): queued
after a decision (de-duplicated by key, rate-limited per job and kind, per channel),
claimed one at a time by whoever delivers (the hook, the service's thread, `failclass
notify flush`), then marked sent, or due again later, or given up. A claim moves the
row's next try forward by a lease, so that two deliverers never send one notice at once,
and one that dies leaves it due again when the lease ends. Written with the driver's own
statements, as the rest of failclass.store.records, so that the hook needs no SQLAlchemy."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from failclass.contracts import Notice, from_json, to_json
from failclass.store.statements import Transaction, placeholders

QUEUED, SENT, FAILED = "queued", "sent", "failed"
Queueing = Literal["queued", "duplicate", "rate_limited"]
LEASE = timedelta(minutes=5)  # a claimed notice is due again after this, should its deliverer die


@dataclass(frozen=True)
class NoticeLimits:
    """What may be queued now: no key twice since ``dedup_since``, at most
    ``per_job_and_kind`` notices of one kind about one job since ``rate_since``."""

    dedup_since: datetime
    rate_since: datetime
    per_job_and_kind: int


@dataclass(frozen=True)
class Pending:
    """A claimed notice: the row, its channel, the notice, the tries before this one."""

    id: int
    channel: str
    notice: Notice
    tries: int


class Outbox:
    """The notices table, for a class that gives transactions (failclass.store.records.Records)."""

    def _transaction(self, keys: Sequence[str] = ()) -> AbstractContextManager[Transaction]:
        raise NotImplementedError

    def _driver_errors(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def enqueue_notices(
        self, routed: Sequence[tuple[Notice, str]], limits: NoticeLimits, now: datetime
    ) -> list[tuple[Notice, str, Queueing]]:
        """Queue each (notice, channel) unless its key was queued for that channel since
        ``limits.dedup_since`` or the job has had its share of that kind; what became of each."""
        keys = sorted({f"notice:{notice.job_id}" for notice, _ in routed})
        done: list[tuple[Notice, str, Queueing]] = []
        with self._driver_errors(), self._transaction(keys) as db:
            for notice, channel in routed:
                done.append((notice, channel, self._queue(db, notice, channel, limits, now)))
        return done

    @staticmethod
    def _queue(db: Transaction, notice: Notice, channel: str, limits: NoticeLimits, now: datetime) -> Queueing:
        seen = db.one(
            'SELECT COUNT(*) FROM notices WHERE channel = ? AND "key" = ? AND created_at >= ?',
            channel,
            notice.key,
            limits.dedup_since,
        )
        if seen and seen[0]:
            return "duplicate"
        counted = db.one(
            "SELECT COUNT(*) FROM notices WHERE channel = ? AND job_id = ? AND kind = ? AND created_at >= ?",
            channel,
            notice.job_id,
            notice.kind,
            limits.rate_since,
        )
        if counted and counted[0] >= limits.per_job_and_kind:
            return "rate_limited"
        row = {
            "channel": channel,
            "key": notice.key,
            "kind": notice.kind,
            "job_id": notice.job_id,
            "user": notice.user,
            "body": to_json(notice),
            "status": QUEUED,
            "tries": 0,
            "next_try_at": now,
            "created_at": now,
        }
        db.add("notices", row)
        return "queued"

    def claim_notice(self, now: datetime, tried: Collection[int] = ()) -> Pending | None:
        """The oldest notice due now, but those ``tried`` (in this round already), claimed
        for LEASE; None when none is due."""
        skip = f" AND id NOT IN ({placeholders(list(tried))})" if tried else ""
        with self._driver_errors(), self._transaction() as db:
            for row_id, channel, body, tries in db.rows(
                f"SELECT id, channel, body, tries FROM notices WHERE status = ? AND next_try_at <= ?{skip} ORDER BY id LIMIT 20",
                QUEUED,
                now,
                *tried,
            ):
                claimed = db.changed(
                    "UPDATE notices SET next_try_at = ? WHERE id = ? AND status = ? AND next_try_at <= ?",
                    now + LEASE,
                    row_id,
                    QUEUED,
                    now,
                )
                if claimed:
                    return Pending(int(row_id), str(channel), from_json(Notice, db.json(body)), int(tries))
        return None

    def notice_sent(self, pending: Pending, now: datetime) -> None:
        with self._driver_errors(), self._transaction() as db:
            db.changed(
                "UPDATE notices SET status = ?, tries = ?, sent_at = ?, last_error = NULL WHERE id = ?",
                SENT,
                pending.tries + 1,
                now,
                pending.id,
            )

    def notice_failed(self, pending: Pending, error: str, retry_at: datetime | None) -> None:
        """A try failed: due again at ``retry_at``, or given up (None)."""
        with self._driver_errors(), self._transaction() as db:
            sql, value = ("status = ?", FAILED) if retry_at is None else ("next_try_at = ?", retry_at)
            db.changed(
                f"UPDATE notices SET {sql}, tries = ?, last_error = ? WHERE id = ?",
                value,
                pending.tries + 1,
                error[:2000],
                pending.id,
            )

    def notices(self, status: str | None = None) -> list[dict[str, Any]]:
        """Every notice row (of ``status``), oldest first: what was queued, sent, given up."""
        where, params = ("WHERE status = ?", (status,)) if status else ("", ())
        columns = ("id", "channel", "key", "kind", "job_id", "user", "status", "tries", "next_try_at", "last_error", "sent_at")
        with self._driver_errors(), self._transaction() as db:
            quoted = ", ".join(f'"{c}"' for c in columns)
            found = db.rows(f"SELECT {quoted} FROM notices {where} ORDER BY id", *params)
        times = ("next_try_at", "sent_at")
        return [
            {c: db.time(v) if c in times and v is not None else v for c, v in zip(columns, row, strict=True)} for row in found
        ]
