"""Which attempts a report covers: one typed filter shared by `failclass report` and
GET /v1/report, applied in SQL over the store and over the columns of manifests and batch
results, and the period a report is compared with.

An attempt's time is when it ended, else when it started, else when it was submitted
(in the store, else when it was recorded). A time bound leaves out attempts with no time.
The range is half-open: since <= time < until.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from failclass.analytics.columns import Attempts
from failclass.analytics.records import TIME
from failclass.attempts import STATUSES
from failclass.errors import InputError
from failclass.matching.taxonomy import Taxonomy

MAX_VALUES = 100  # per list (users, virtual clusters, reasons, statuses)
MAX_VALUE_CHARS = 200  # the store's column width
RELATIVE = re.compile(r"^(\d{1,5})([mhdw])$")
UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
PREVIOUS = "previous"


@dataclass(frozen=True)
class Selection:
    since: datetime | None = None
    until: datetime | None = None
    users: tuple[str, ...] = ()
    vcs: tuple[str, ...] = ()  # virtual clusters: Slurm partitions, Kubernetes namespaces
    reasons: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()

    def apply(self, attempts: Attempts) -> Attempts:
        """The attempts it keeps."""
        if self == Selection():
            return attempts
        when = attempts.times()
        keep = pa.chunked_array([pa.array(np.ones(len(attempts), dtype=bool))])
        if self.since or self.until:
            keep = pc.and_(keep, pc.is_valid(when))
        if self.since:
            keep = pc.and_(keep, pc.fill_null(pc.greater_equal(when, pa.scalar(self.since, TIME)), True))
        if self.until:
            keep = pc.and_(keep, pc.fill_null(pc.less(when, pa.scalar(self.until, TIME)), True))
        for name, values in (("user", self.users), ("vc", self.vcs), ("status", self.statuses)):
            if values:
                keep = pc.and_(keep, pc.is_in(attempts.column(name), pa.array(values, pa.string())))
        if self.reasons:
            reason = pc.fill_null(attempts.column("reason").cast(pa.string()), "")
            keep = pc.and_(keep, pc.is_in(reason, pa.array(self.reasons, pa.string())))
        return attempts.filter(keep)

    def previous(self, now: datetime) -> Selection:
        """The period of the same length just before this one (this week -> last week)."""
        if self.since is None:
            raise InputError("comparing with the previous period needs --since (the period's start)")
        until = self.until or now
        return replace(self, since=self.since - (until - self.since), until=self.since)

    def period(self) -> str:
        if self.since is None and self.until is None:
            return "all time"
        start = _day_or_time(self.since) if self.since else "the beginning"
        end = _day_or_time(self.until) if self.until else "now"
        return f"{start} to {end}"

    def describe(self) -> str:
        """The filter in words, for the report's header."""
        parts = [self.period()]
        for label, values in (("users", self.users), ("virtual clusters", self.vcs), ("reasons", self.reasons)):
            if values:
                parts.append(f"{label} {', '.join(values)}")
        if self.statuses:
            parts.append(f"status {', '.join(self.statuses)}")
        return "; ".join(parts)

    def check_reasons(self, taxonomy: Taxonomy) -> None:
        unknown = sorted(set(self.reasons) - set(taxonomy.reasons))
        if unknown:
            raise InputError(f"reasons unknown to the taxonomy: {', '.join(unknown)}")


def _day_or_time(moment: datetime) -> str:
    if (moment.hour, moment.minute, moment.second, moment.microsecond) == (0, 0, 0, 0):
        return moment.strftime("%Y-%m-%d")
    return moment.isoformat(timespec="minutes")


def parse_time(text: str, now: datetime, option: str) -> datetime:
    """ISO 8601 (a date or a time; UTC when no zone is given) or a span before now: 90m,
    12h, 7d, 2w."""
    text = text.strip()
    relative = RELATIVE.match(text)
    if relative:
        return now - timedelta(**{UNITS[relative.group(2)]: int(relative.group(1))})
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{option}: {text!r} is neither an ISO 8601 time nor a span such as 7d, 12h or 90m") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _values(values: Sequence[str], option: str) -> tuple[str, ...]:
    cleaned = tuple(dict.fromkeys(v.strip() for v in values if v.strip()))
    if len(cleaned) > MAX_VALUES:
        raise InputError(f"{option}: at most {MAX_VALUES} values, got {len(cleaned)}")
    long = [v for v in cleaned if len(v) > MAX_VALUE_CHARS]
    if long:
        raise InputError(f"{option}: a value is at most {MAX_VALUE_CHARS} characters ({long[0][:40]}...)")
    return cleaned


def parse_selection(
    since: str | None,
    until: str | None,
    users: Sequence[str] = (),
    vcs: Sequence[str] = (),
    reasons: Sequence[str] = (),
    statuses: Sequence[str] = (),
    now: datetime | None = None,
) -> Selection:
    """The filter from what a person typed (the CLI's options, the service's query)."""
    now = now or datetime.now(UTC)
    selection = Selection(
        since=parse_time(since, now, "since") if since else None,
        until=parse_time(until, now, "until") if until else None,
        users=_values(users, "user"),
        vcs=_values(vcs, "vc"),
        reasons=_values(reasons, "reason"),
        statuses=_values(statuses, "status"),
    )
    if selection.since and selection.until and selection.since >= selection.until:
        raise InputError(f"since ({selection.since.isoformat()}) must come before until ({selection.until.isoformat()})")
    wrong = sorted(set(selection.statuses) - set(STATUSES))
    if wrong:
        raise InputError(f"status: {', '.join(wrong)} unknown; one of {', '.join(STATUSES)}")
    return selection


def parse_comparison(text: str | None, selection: Selection, now: datetime | None = None) -> Selection | None:
    """The selection to compare with: ``previous`` (the period of the same length just
    before) or an explicit START/END; every other filter stays the same."""
    if not text:
        return None
    now = now or datetime.now(UTC)
    if text.strip() == PREVIOUS:
        return selection.previous(now)
    start, separator, end = text.partition("/")
    if not separator:
        raise InputError(f"compare-to: {text!r} is neither 'previous' nor START/END")
    other = replace(selection, since=parse_time(start, now, "compare-to"), until=parse_time(end, now, "compare-to"))
    if other.since and other.until and other.since >= other.until:
        raise InputError("compare-to: START must come before END")
    return other
