"""A job's log as timed lines, so its messages can be laid over the GPU series.

A line's time is the first date-time in its first 64 characters (``2024-05-01 12:00:00,123``,
``2024/05/01 12:00:00``, ``2024-05-01T12:00:00.123Z``, Jupyter's ``[I 2024-05-01 ...]``), or
one without a year where the job's start gives it (glog's ``I0501 12:00:00.123456``,
detectron2's ``[05/01 12:00:00``, mmengine's ``05/01 12:00:00 -``); a line without one lies
between its predecessor's time and the next timed line's (after the last one, at any later
time). A log with no time at all cannot be aligned: its lines still count as evidence for
the whole job.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from failclass.errors import InputError
from failclass.limits import LIMITS
from failclass.logs.text import open_log, strip_ansi

_STAMP = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[ T-](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?")
_NO_YEAR = re.compile(r"(?:^|[\[\s:])(?:[IWEF](\d\d)(\d\d)|(\d\d)/(\d\d)) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\b")
HEAD = 64


_PREFIX = re.compile(r"^\[?\d{4}[-/]\d\d[-/]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s+")


@dataclass(frozen=True)
class TimedLine:
    ts: float  # its time, or its predecessor's; NaN before the first timed line, or in an untimed log
    text: str
    until: float = math.nan  # a line without a time: the next timed line's (inf after the last); else ts
    number: int = 0  # its line number in the log, from 1

    @property
    def body(self) -> str:
        """The line without a collector's leading time stamp (kubectl logs --timestamps, ts)."""
        return _PREFIX.sub("", self.text, count=1)


@dataclass(frozen=True)
class Timeline:
    lines: tuple[TimedLine, ...]
    timed: bool  # whether any line carried a time
    last: TimedLine | None = None  # the log's last line that carried a time


def read_timeline(path: Path, keep: Callable[[str], bool], year_of: float = math.nan) -> Timeline:
    """The lines of a log that ``keep`` wants, timed; the whole log streams through. Times
    without a year take the year of ``year_of`` (the job's start)."""
    try:
        with open_log(path) as stream:
            text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="")
            return timeline_of((_clipped(line) for line in text), keep, year_of)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from exc


def timeline_of(lines: Iterable[str], keep: Callable[[str], bool] = lambda line: True, year_of: float = math.nan) -> Timeline:
    kept: list[TimedLine] = []
    waiting: list[int] = []  # kept lines without a time since the last timed one: they end where the next begins
    current, timed, last = math.nan, False, None
    year = datetime.fromtimestamp(year_of, UTC).year if math.isfinite(year_of) else None
    number = 1  # as an editor counts: a carriage return (a progress bar's redraw) starts no new line
    for line in lines:
        stamp = _time(line[:HEAD], year)
        until = math.nan if stamp is None else stamp
        timed_line = TimedLine(stamp if stamp is not None else current, line.rstrip("\r\n"), until, number)
        if stamp is not None:
            current, timed, last = stamp, True, timed_line
            if waiting:
                kept[len(kept) - len(waiting) :] = [_until(kept[i], stamp) for i in waiting]
                waiting = []
        if len(kept) < LIMITS.waste_log_lines and keep(timed_line.body):
            if stamp is None:
                waiting.append(len(kept))
            kept.append(timed_line)
        number += not line.endswith("\r")
    kept[len(kept) - len(waiting) :] = [_until(kept[i], math.inf) for i in waiting]
    return Timeline(tuple(kept), timed, last)


def _until(line: TimedLine, until: float) -> TimedLine:
    return TimedLine(line.ts, line.text, until, line.number)  # dataclasses.replace, without its cost (a line of a month's logs)


def _time(head: str, year_hint: int | None = None) -> float | None:
    match = _STAMP.search(head)
    if not match:
        return None if year_hint is None else _time_without_year(head, year_hint)
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC)
    except ValueError:
        return None
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        moment -= sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[-2:]))
    return moment.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)


def _time_without_year(head: str, year: int) -> float | None:
    match = _NO_YEAR.search(head)
    if not match:
        return None
    glog_month, glog_day, month, day, hour, minute, second, fraction = match.groups()
    try:
        moment = datetime(year, int(glog_month or month), int(glog_day or day), int(hour), int(minute), int(second), tzinfo=UTC)
    except ValueError:
        return None
    return moment.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)


def _clipped(line: str) -> str:
    """The line without terminal escapes, cut to the longest kept; a carriage return that ends
    it (a redraw, which starts no new line) is kept."""
    plain = _plain(line)
    if len(plain) <= LIMITS.waste_line_chars:
        return plain
    return plain[: LIMITS.waste_line_chars] + ("\r" if plain.endswith("\r") else "")


def _plain(line: str) -> str:
    return line if "\x1b" not in line else strip_ansi(line.encode()).decode("utf-8", "replace")
