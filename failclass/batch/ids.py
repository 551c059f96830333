"""Which attempt a log belongs to: a manifest's rows (job_id, attempt, logs as member
paths, and any other attempt facts), else the member's path matched by an id pattern (a
regular expression with the named groups ``job`` and optionally ``attempt``; by default
the folder holding a log is its job, and a folder ``attempt-N`` below it its attempt)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from failclass.logs.archives import Member, is_log_name

DEFAULT_ID_PATTERN = r"(?:^|/)(?P<job>[^/]+)/(?:attempt[-_]?(?P<attempt>\d+)/)?[^/]+$"
Key = tuple[str, int]  # (job id, attempt)
Facts = dict[str, Any]  # a manifest row's other columns, as read from CSV, JSON Lines or Parquet


def attempt_of(name: str, pattern: re.Pattern[str]) -> Key:
    match = pattern.search(name)
    if match is None:
        return Path(name).stem, 1
    attempt = match.groupdict().get("attempt")
    return match.group("job"), int(attempt) if attempt else 1


def is_log(member: Member, listed: Mapping[str, Key]) -> bool:
    """A source named alone, a log the manifest lists, or a file named like a log."""
    return not member.inside or member.name in listed or is_log_name(member.name)


def manifest_maps(raw_rows: Iterable[Facts]) -> tuple[dict[Key, Facts], dict[str, Key]]:
    """Attempt facts per (job, attempt), and which attempt each listed log belongs to."""
    facts: dict[Key, Facts] = {}
    owners: dict[str, Key] = {}
    for row in raw_rows:
        key = (str(row["job_id"]), int(row.get("attempt") or 1))
        facts[key] = {k: v for k, v in row.items() if k not in ("logs", "log", "reason")}
        logs = row.get("logs") or row.get("log") or []
        for log in [logs] if isinstance(logs, str) else logs:
            for part in str(log).split(";"):
                if part:
                    owners[part] = key
    return facts, owners
