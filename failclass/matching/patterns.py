"""The rule pattern dialect: line prefixes and the expansion of ``^`` and ``$``.

A rule's leading ``^`` means "start of the message": after a carriage return or a line
start, then any run of the known prefixes (rank tags, hosts, timestamps, glog).
A trailing ``$`` tolerates CRLF. The expanded text is valid for Hyperscan and Python's ``re``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from failclass.errors import ConfigError
from failclass.yamlload import SafeLoader


@dataclass(frozen=True)
class Prefix:
    id: str
    pattern: str
    examples: tuple[str, ...]


def load_prefixes(path: Path) -> tuple[Prefix, ...]:
    """Read prefixes.yaml; every prefix must compile and consume each of its examples."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read prefixes: {exc}") from exc
    prefixes = []
    for entry in data.get("prefixes") or []:
        pid, pattern = entry.get("id"), entry.get("pattern")
        if not pid or not pattern:
            raise ConfigError(f"{path}: every prefix needs an id and a pattern")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{path}: prefix {pid}: pattern does not compile: {exc}") from exc
        examples = tuple(entry.get("examples") or ())
        for example in examples:
            if not compiled.fullmatch(example):
                raise ConfigError(f"{path}: prefix {pid}: pattern does not consume example {example!r}")
        prefixes.append(Prefix(pid, pattern, examples))
    return tuple(prefixes)


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
