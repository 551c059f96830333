"""What a failed attempt printed that a good run of the same job never did.

Each line is reduced to its template: its last state where a progress bar redrew it, then
numbers and addresses masked as the model reads lines (failclass.logs.region), so that
times, steps, losses, ranks and pids do not tell two lines apart. The failed log's lines
whose template no good run printed are the candidates for its failure's evidence, where
no rule names a cause (L4 and LogSage compare with the last good run the same way)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from failclass.logs.region import normalise_line, segment


@dataclass(frozen=True)
class NewLine:
    """A template the good runs never printed: its first line in the failed log, and how
    many of the failed log's lines it covers."""

    line: int  # from 1
    text: str
    count: int


def template(line: str) -> str:
    return normalise_line(segment(line))


def new_lines(failed: Sequence[str], good: Iterable[Sequence[str]]) -> list[NewLine]:
    """The failed log's lines whose template no good log has, first occurrence first."""
    known = {template(line) for lines in good for line in lines}
    first: dict[str, int] = {}
    counts: dict[str, int] = {}
    for number, line in enumerate(failed, 1):
        key = template(line)
        if not key or key in known:
            continue
        first.setdefault(key, number)
        counts[key] = counts.get(key, 0) + 1
    return [NewLine(number, segment(failed[number - 1]), counts[key]) for key, number in first.items()]
