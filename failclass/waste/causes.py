"""The causes of low GPU utilisation as data: Gao et al.'s 15 categories in 4 dimensions,
each with the intervals it explains, the log lines that show it and the series
conditions it needs (``failclass/data/waste/causes.yaml``; an operator can give another
file). Order is priority: the first cause whose evidence is found explains an interval.
A pattern's leading ``^`` is the signature rules' (``signatures/prefixes.yaml``): the start
of the message, after any rank tag, time stamp, logger name or level."""

from __future__ import annotations

import re
import re._parser as sre_parse
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from failclass.errors import ConfigError
from failclass.logs.region import segment
from failclass.matching.patterns import MessageStart, load_prefixes
from failclass.matching.rules import BUILTIN_DIR
from failclass.matching.safety import nested_unbounded
from failclass.resources import PACKAGE_DATA
from failclass.waste.measure import DROP, IDLE, LOW, NEVER_USED, STEADY
from failclass.yamlload import SafeLoader

CAUSES = PACKAGE_DATA / "waste" / "causes.yaml"
DIMENSIONS = ("job", "model", "data", "library")
WHERE = ("during", "at_edge", "before_idle_to_end", "span", "anywhere")
UNTIMED = ("never", "start", "end", "anywhere")  # where a line without a time may still count
MESSAGE = MessageStart(load_prefixes(BUILTIN_DIR / "prefixes.yaml"))
SERIES = (
    "peak_memory_below_pct",
    "peak_memory_above_pct",
    "other_gpus_used",
    "job_kind",
    "min_idle_share",
    "job_low",
    "min_phase_share",
    "max_phase_share",
    "synchronous_dips",
    "min_low_share",
    "max_util_pct",
    "min_floor_pct",
    "max_busy_pct",
    "max_explained_share",
)
CONFIDENCE = ("high", "medium", "low")
INTERVAL_KINDS = (NEVER_USED, IDLE, DROP, LOW, STEADY)


@dataclass(frozen=True)
class LogEvidence:
    where: str  # during the interval, before an idle run to the job's end, a long span, anywhere
    patterns: tuple[re.Pattern[str], ...]
    min_span_s: float = 0.0
    untimed: str = "never"  # a line with no time: for an interval at the job's start, at its end, any, none
    silent_after: bool = False  # before_idle_to_end: a log silent from the interval on counts too

    def matches(self, line: str) -> bool:
        """Whether a pattern finds the line's message: its last carriage-return state, after
        any rank tag, time stamp, logger name or level (``^`` is the message's start)."""
        line = segment(line)
        anywhere, at_start = self._split
        if any(p.search(line) for p in anywhere):
            return True
        return bool(at_start) and any(p.match(line, at) for at in MESSAGE.starts(line) for p in at_start)

    @cached_property
    def _split(self) -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
        """The unanchored patterns, and the ``^`` ones without their caret, for ``match`` at each
        place a message may start (``re``'s ``^`` holds only at the string's start, not at ``pos``)."""
        anywhere = tuple(p for p in self.patterns if not p.pattern.startswith("^"))
        at_start = tuple(re.compile(p.pattern[1:], p.flags) for p in self.patterns if p.pattern.startswith("^"))
        return anywhere, at_start


@dataclass(frozen=True)
class Cause:
    id: str
    dimension: str
    name: str
    fix: str
    intervals: tuple[str, ...]
    log: LogEvidence | None
    series: dict[str, Any]
    sources: tuple[str, ...]
    declared_kind: str = ""  # the jobs file's kind that counts as evidence
    detectable: bool = True
    confidence: str = "low"  # when the series alone names it: how directly the series shows the cause


def load_causes(path: Path = CAUSES) -> tuple[Cause, ...]:
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("causes"), list):
        raise ConfigError(f"{path}: expected a mapping with a `causes` list")
    causes = tuple(_cause(entry, f"{path}: cause {number}") for number, entry in enumerate(document["causes"], 1))
    ids = [c.id for c in causes]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{path}: cause ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    return causes


def _cause(entry: Any, where: str) -> Cause:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: a cause is a mapping")
    missing = [key for key in ("id", "dimension", "name", "fix", "intervals") if not entry.get(key)]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(missing)}")
    where = f"{where} ({entry['id']})"
    if entry["dimension"] not in DIMENSIONS:
        raise ConfigError(f"{where}: dimension {entry['dimension']!r} is not one of {DIMENSIONS}")
    unknown = set(entry["intervals"]) - set(INTERVAL_KINDS)
    if unknown:
        raise ConfigError(f"{where}: unknown interval kinds {sorted(unknown)}; known: {INTERVAL_KINDS}")
    series = entry.get("series") or {}
    if set(series) - set(SERIES):
        raise ConfigError(f"{where}: unknown series conditions {sorted(set(series) - set(SERIES))}; known: {SERIES}")
    if entry.get("confidence", "low") not in CONFIDENCE:
        raise ConfigError(f"{where}: confidence {entry['confidence']!r} is not one of {CONFIDENCE}")
    log, detectable = entry.get("log"), entry.get("detectable", True)
    if detectable and not (log or series or entry.get("declared_kind")):
        raise ConfigError(f"{where}: a cause needs log evidence, a declared kind or series conditions (or detectable: false)")
    return Cause(
        entry["id"],
        entry["dimension"],
        entry["name"],
        " ".join(str(entry["fix"]).split()),
        tuple(entry["intervals"]),
        _log(log, where) if log else None,
        dict(series),
        tuple(entry.get("sources") or ()),
        str(entry.get("declared_kind") or ""),
        bool(detectable),
        str(entry.get("confidence", "low")),
    )


def _log(log: Any, where: str) -> LogEvidence:
    if not isinstance(log, dict) or log.get("where") not in WHERE or not log.get("patterns"):
        raise ConfigError(f"{where}: log needs `where` (one of {WHERE}) and `patterns`")
    if not isinstance(log["patterns"], list) or not all(isinstance(p, str) for p in log["patterns"]):
        raise ConfigError(f"{where}: log.patterns is a list of regular expressions")
    patterns = []
    for text in log["patterns"]:
        try:
            parsed = sre_parse.parse(text)
            patterns.append(re.compile(text))
        except re.error as exc:
            raise ConfigError(f"{where}: pattern {text!r}: {exc}") from exc
        if nested_unbounded(parsed):
            raise ConfigError(f"{where}: pattern {text!r} nests unbounded repeats (catastrophic backtracking)")
    untimed = log.get("untimed", "never")
    if untimed not in UNTIMED:
        raise ConfigError(f"{where}: log.untimed {untimed!r} is not one of {UNTIMED}")
    silent_after = log.get("silent_after", False)
    if not isinstance(silent_after, bool) or (silent_after and log["where"] != "before_idle_to_end"):
        raise ConfigError(f"{where}: log.silent_after is true or false, and only with where: before_idle_to_end")
    return LogEvidence(log["where"], tuple(patterns), float(log.get("min_span_s", 0)), untimed, silent_after)
