"""The causes of low GPU utilisation as data: Gao et al.'s 15 categories in 4 dimensions,
each with the intervals it explains, the log lines that show it and the series
conditions it needs (``failclass/data/waste/causes.yaml``; an operator can give another
file). Order is priority: the first cause whose evidence is found explains an interval.
A pattern's leading ``^`` is the signature rules' (``signatures/prefixes.yaml``): the start
of the message, after any rank tag, time stamp, logger name or level.

The file's schema is the classes below (``CausesFile``, ``Cause``, ``LogEvidence``,
``Series``), checked by failclass.schema: a new key of a cause is one field of ``Cause``."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from failclass.logs.region import segment
from failclass.matching.patterns import MessageStart, load_prefixes
from failclass.matching.rules import BUILTIN_DIR
from failclass.resources import PACKAGE_DATA
from failclass.schema import Invalid, allowed, load
from failclass.waste.measure import DROP, IDLE, LOW, NEVER_USED, STEADY

CAUSES = PACKAGE_DATA / "waste" / "causes.yaml"
DIMENSIONS = ("job", "model", "data", "library")
WHERE = ("during", "at_edge", "before_idle_to_end", "span", "anywhere")
UNTIMED = ("never", "start", "end", "anywhere")  # where a line without a time may still count
MESSAGE = MessageStart(load_prefixes(BUILTIN_DIR / "prefixes.yaml"))
CONFIDENCE = ("high", "medium", "low")  # how surely the series alone show a cause
INTERVAL_KINDS = (NEVER_USED, IDLE, DROP, LOW, STEADY)


@dataclass(frozen=True)
class LogEvidence:
    where: str = allowed(choices=WHERE)  # during the interval, before an idle run to the job's end, a long span, anywhere
    patterns: tuple[re.Pattern[str], ...] = allowed()
    min_span_s: float = allowed(0.0, ge=0)
    untimed: str = allowed("never", choices=UNTIMED)  # a line with no time counts for an interval at the start, end, any, none
    silent_after: bool = False  # before_idle_to_end: a log silent from the interval on counts too

    def __post_init__(self) -> None:
        if self.silent_after and self.where != "before_idle_to_end":
            raise Invalid("true only with where: before_idle_to_end", "silent_after")

    def matches(self, line: str) -> bool:
        """Whether a pattern finds the line's message: its last carriage-return state, after
        any rank tag, time stamp, logger name or level (``^`` is the message's start)."""
        line = segment(line)
        anywhere, at_start = self._joined
        if anywhere is not None and anywhere.search(line):
            return True
        return at_start is not None and any(at_start.match(line, at) for at in _message_starts(line))

    @cached_property
    def _joined(self) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
        """The unanchored patterns as one alternation, and the ``^`` ones without their caret as
        another, for ``match`` at each place a message may start (``re``'s ``^`` holds only at
        the string's start, not at ``pos``); each keeps its own flags."""
        anywhere = [p for p in self.patterns if not p.pattern.startswith("^")]
        at_start = [re.compile(p.pattern[1:], p.flags) for p in self.patterns if p.pattern.startswith("^")]
        return _alternation(anywhere), _alternation(at_start)


def _alternation(patterns: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    """One pattern matching where any of ``patterns`` does (their flags scoped to each)."""
    if not patterns:
        return None
    scoped = (f"(?{_letters(p.flags)}:{_GLOBAL_FLAGS.sub('', p.pattern, count=1)})" for p in patterns)
    return re.compile("|".join(scoped))


_GLOBAL_FLAGS = re.compile(r"^\(\?[aiLmsux]+\)")  # (?i) at a pattern's start: in its flags already


def _letters(flags: int) -> str:
    """A pattern's flags as a scoped group's letters (str patterns are Unicode already)."""
    named = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"))
    left = flags & ~re.UNICODE & ~sum(flag for flag, _ in named)
    if left:
        raise Invalid(f"a pattern flag other than i, m, s, x: {flags}", "patterns")
    return "".join(letter for flag, letter in named if flags & flag)


def any_cause(causes: tuple[Cause, ...] | list[Cause]) -> re.Pattern[str] | None:
    """One pattern that finds every line some cause's log evidence may find (anywhere in it,
    carets dropped): a line it does not find is no cause's, and is not asked again."""
    logs = [cause.log for cause in causes if cause.log and cause.detectable]
    return _alternation([re.compile(p.pattern.removeprefix("^"), p.flags) for log in logs for p in log.patterns])


@lru_cache(maxsize=64)
def _message_starts(line: str) -> list[int]:
    """Where a line's message may start (the causes ask for the same line in turn)."""
    return MESSAGE.starts(line)


@dataclass(frozen=True)
class Series:
    """The conditions on a GPU's series a cause may set (a cause keeps those it sets)."""

    peak_memory_below_pct: float = allowed(ge=0, le=100)
    peak_memory_above_pct: float = allowed(ge=0, le=100)
    other_gpus_used: bool = allowed()
    job_kind: str = allowed()
    min_idle_share: float = allowed(ge=0, le=1)
    job_low: bool = allowed()
    min_phase_share: float = allowed(ge=0, le=1)
    max_phase_share: float = allowed(ge=0, le=1)
    synchronous_dips: bool = allowed()
    min_low_share: float = allowed(ge=0, le=1)
    max_util_pct: float = allowed(ge=0, le=100)
    min_floor_pct: float = allowed(ge=0, le=100)
    max_busy_pct: float = allowed(ge=0, le=100)
    max_explained_share: float = allowed(ge=0, le=1)


@dataclass(frozen=True)
class Cause:
    """A cause as causes.yaml writes it (the file's header says what each key means): a new
    key is one field here, a new series condition one field of ``Series`` (and its check in
    failclass/waste/explain.py)."""

    id: str
    name: str
    fix: str
    dimension: str = allowed(choices=DIMENSIONS)
    intervals: tuple[str, ...] = allowed(choices=INTERVAL_KINDS)
    log: LogEvidence | None = None
    series: dict[str, Any] = allowed({}, fields_of=Series)  # the conditions set, by name
    sources: tuple[str, ...] = ()
    declared_kind: str = ""  # the jobs file's kind that counts as evidence
    detectable: bool = True
    confidence: str = allowed("low", choices=CONFIDENCE)  # when the series alone names it: how directly they show it

    def __post_init__(self) -> None:
        if self.detectable and not (self.log or self.series or self.declared_kind):
            raise Invalid("a cause needs log evidence, a declared kind or series conditions (or detectable: false)")


@dataclass(frozen=True)
class CausesFile:
    causes: tuple[Cause, ...] = allowed(unique="id")


def load_causes(path: Path = CAUSES) -> tuple[Cause, ...]:
    """The causes of ``path``, in order; ConfigError (``file: key.path: problem``) for a bad one."""
    return tuple(replace(cause, fix=" ".join(cause.fix.split())) for cause in load(path, CausesFile, "the causes").causes)
