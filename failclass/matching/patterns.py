"""The rule pattern dialect: line prefixes and the expansion of ``^`` and ``$``.

A rule's leading ``^`` means "start of the message": after a carriage return or a line
start, then any run of the known prefixes (rank tags, hosts, timestamps, glog).
A trailing ``$`` tolerates CRLF. The expanded text is valid for Hyperscan and Python's ``re``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from failclass.schema import Invalid, allowed, load


@dataclass(frozen=True)
class Prefix:
    id: str
    pattern: str
    examples: tuple[str, ...]


@dataclass(frozen=True)
class PrefixEntry:
    """A prefix as prefixes.yaml writes it: its pattern a fragment, with no literal required."""

    id: str
    description: str
    examples: tuple[str, ...]  # text the pattern consumes whole
    pattern: re.Pattern[str] = allowed(min_literal=0)

    def __post_init__(self) -> None:
        for index, example in enumerate(self.examples):
            if not self.pattern.fullmatch(example):
                raise Invalid(f"{example!r} is not consumed whole by the pattern", f"examples[{index}]")


@dataclass(frozen=True)
class PrefixesFile:
    prefixes: tuple[PrefixEntry, ...] = allowed(unique="id")


def load_prefixes(path: Path) -> tuple[Prefix, ...]:
    """Read prefixes.yaml; every prefix must compile and consume each of its examples."""
    written = load(path, PrefixesFile, "the prefixes")
    return tuple(Prefix(entry.id, entry.pattern.pattern, entry.examples) for entry in written.prefixes)


def line_start(prefixes: tuple[Prefix, ...]) -> str:
    """The expansion of a rule's leading ``^``."""
    alternatives = "|".join(f"(?:{p.pattern})" for p in prefixes)
    return f"(?:^|\\r)(?:{alternatives})*"


class MessageStart:
    """Where the message of a line may begin, for Python's ``re``: the line's start and the
    end of each known prefix consumed in turn from it (a loop, not one nested repeat, which
    ``re`` would backtrack through for ever on a line of blanks). Every such start is kept,
    as the engine's ``(?:prefix)*`` would try them: ``pkg-1.0 | 5 MB | ###`` may be a
    compose service's prefix or a progress line's first column."""

    def __init__(self, prefixes: tuple[Prefix, ...]) -> None:
        self._prefixes = tuple(re.compile(p.pattern) for p in prefixes)

    def starts(self, line: str) -> list[int]:
        found, at = [0], 0
        while (end := next((m.end() for p in self._prefixes if (m := p.match(line, at)) and m.end() > at), None)) is not None:
            found.append(end)
            at = end
        return found


def expand(pattern: str, start: str) -> str:
    """Rewrite a rule pattern's leading ``^`` and trailing ``$`` into the engine's form."""
    if pattern.startswith("^"):
        pattern = start + pattern[1:]
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + "\\r?$"
    return pattern
