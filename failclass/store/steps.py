"""The steps the watch took on running jobs (table ``watch_steps``,
failclass.store.models.WatchStepRow): a step is taken once per idle or hung stretch, so
that a watch run every few minutes warns once, warns again, then releases. Written with
the driver's own statements, as the outbox is."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime

from failclass.contracts import RELEASE, REPEAT_IDLE, WatchStep, from_json, to_json
from failclass.store.statements import Transaction


class WatchSteps:
    """The watch_steps table, for a class that gives transactions (failclass.store.records.Records)."""

    def _transaction(self, keys: Sequence[str] = ()) -> AbstractContextManager[Transaction]:
        raise NotImplementedError

    def _driver_errors(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def take_step(self, step: WatchStep) -> int | None:
        """Record ``step`` unless its job took the same step since its stretch began; its
        row id, or None when it was taken already."""
        with self._driver_errors(), self._transaction([f"watch:{step.job_id}"]) as db:
            seen = db.one(
                "SELECT COUNT(*) FROM watch_steps WHERE job_id = ? AND action = ? AND step = ? AND taken_at >= ?",
                step.job_id,
                step.action,
                step.step,
                step.since,
            )
            if seen and seen[0]:
                return None
            return self._insert(db, step)

    def step_done(self, row_id: int, step: WatchStep) -> None:
        """Keep what was run for the step recorded as ``row_id``."""
        with self._driver_errors(), self._transaction() as db:
            db.changed("UPDATE watch_steps SET body = ? WHERE id = ?", to_json(step), row_id)

    def repeat_offence(self, user: str, since: datetime, releases: int, now: datetime, job_id: str, vc: str) -> WatchStep | None:
        """The user named as a repeat offender (recorded), when their jobs were released
        ``releases`` times since ``since`` and they were not named since then; else None."""
        with self._driver_errors(), self._transaction([f"watch-user:{user}"]) as db:
            counted = db.one(
                'SELECT COUNT(*) FROM watch_steps WHERE "user" = ? AND action = ? AND taken_at >= ?', user, RELEASE, since
            )
            named = db.one(
                'SELECT COUNT(*) FROM watch_steps WHERE "user" = ? AND action = ? AND taken_at >= ?', user, REPEAT_IDLE, since
            )
            count = int(counted[0]) if counted else 0
            if count < releases or (named and named[0]):
                return None
            reason = f"{user}'s jobs were released {count} times for idle GPUs since {since:%Y-%m-%d %H:%M} UTC"
            step = WatchStep(job_id, user, vc, REPEAT_IDLE, count, since, now, reason)
            self._insert(db, step)
            return step

    def watch_steps(self, job_id: str | None = None, user: str | None = None, limit: int = 1000) -> list[WatchStep]:
        """The steps taken (of a job, of a user), newest first."""
        wheres = [(column, value) for column, value in (("job_id", job_id), ("user", user)) if value is not None]
        where = " AND ".join(f'"{column}" = ?' for column, _ in wheres)
        with self._driver_errors(), self._transaction() as db:
            found = db.rows(
                f"SELECT body FROM watch_steps {'WHERE ' + where if where else ''} ORDER BY id DESC LIMIT ?",
                *(value for _, value in wheres),
                limit,
            )
            return [from_json(WatchStep, db.json(body)) for (body,) in found]

    @staticmethod
    def _insert(db: Transaction, step: WatchStep) -> int:
        row = {
            "job_id": step.job_id,
            "user": step.user,
            "vc": step.vc,
            "action": step.action,
            "step": step.step,
            "since": step.since,
            "taken_at": step.taken_at,
            "body": to_json(step),
        }
        return db.insert("watch_steps", row)
