"""What a failed attempt printed that a good run of the same job never did.

Each line is reduced to its template: its last state where a progress bar redrew it, then
numbers and addresses masked as the model reads lines (failclass.logs.region), ids (a
temporary folder's name) masked and a progress bar's fill folded, so that times, steps,
losses, ranks, pids, run folders and how far a bar got do not tell two lines apart. The failed log's lines
whose template no good run printed are the candidates for its failure's evidence, where
no rule names a cause (L4 and LogSage compare with the last good run the same way).

A run's templates are collected while its log streams past the classifier (Templates), so
that the store can keep a good run's without reading its log again: at most
KEPT_TEMPLATES of them, with their counts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence, Set
from dataclasses import dataclass, field

from failclass.logs.facts import reports_progress
from failclass.logs.region import normalise_line, region_indices, segment

KEPT_TEMPLATES = 4000  # of one run: a good run's are kept in the store (failclass.store.goodruns)
PARTIAL_LINE_BYTES = 64 << 10  # of a line still without its newline, the end kept
_MIXED = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]*[A-Za-z])(?=[A-Za-z0-9]*0)[A-Za-z0-9]+(?![A-Za-z0-9])")  # an id: a0f0c
_BAR = re.compile(r"\|[#=>.\-\u2588-\u258f ]+\|")  # a progress bar's fill, however far it got
_MASKED = re.compile(r"( ?\bHEX\b ?|\bID\b|0| )")  # what normalise_line put in a template's text


@dataclass(frozen=True)
class NewLine:
    """A template the good runs never printed: its first line in the failed log, and how
    many of the failed log's lines it covers."""

    line: int  # from 1
    text: str
    count: int


def template(line: str) -> str:
    """The line's last state, numbers, addresses and ids (letters mixed with digits: a
    temporary folder's name, a run id) masked, a progress bar's fill folded."""
    return _BAR.sub("|#|", _MIXED.sub("ID", normalise_line(segment(line))))


def templates_of(lines: Iterable[str]) -> set[str]:
    return {template(line) for line in lines}


def new_lines(failed: Sequence[str], known: Set[str], first: int = 1) -> list[NewLine]:
    """The failed log's lines (numbered from ``first``) whose template is not ``known``,
    first occurrence first."""
    found: dict[str, int] = {}
    counts: dict[str, int] = {}
    for number, line in enumerate(failed, first):
        key = template(line)
        if not key or key in known:
            continue
        found.setdefault(key, number)
        counts[key] = counts.get(key, 0) + 1
    return [NewLine(number, segment(failed[number - first]), counts[key]) for key, number in found.items()]


def pattern_of(text: str) -> str:
    """A template as a rule pattern (failclass/data/signatures/README.md): its words
    escaped, a masked number as digits, an address as hex digits, an id as letters and
    digits, blanks as blanks."""
    parts = []
    for piece in _MASKED.split(text):
        if piece.strip() == "HEX":
            parts.append(r"[ \t]*(?:0x)?[0-9a-fA-F]+[ \t]*")
        elif piece == "0":
            parts.append(r"\d+")
        elif piece == "ID":
            parts.append(r"[A-Za-z0-9]+")
        elif piece == " ":
            parts.append(r"[ \t]+")
        elif piece:
            parts.append(re.escape(piece))
    return "".join(parts)


@dataclass
class Templates:
    """The templates of one run's log lines, collected as its blocks pass (watch): how
    many lines each covers and the line it first appeared on, for at most KEPT_TEMPLATES
    templates (``dropped``: lines of templates past that); ``end``: the log's last lines,
    numbered, as the classifier kept them."""

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)
    lines: int = 0
    dropped: int = 0
    end: list[tuple[int, str]] = field(default_factory=list)
    _partial: bytes = b""

    def watch(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        for block in blocks:
            pieces = (self._partial + block).split(b"\n")
            self._partial = pieces.pop()[-PARTIAL_LINE_BYTES:]
            for piece in pieces:
                self._add(piece)
            yield block
        if self._partial:
            self._add(self._partial)
            self._partial = b""

    def _add(self, raw: bytes) -> None:
        self.lines += 1
        key = template(raw.decode("utf-8", "replace"))
        if not key:
            return
        if key in self.counts:
            self.counts[key] += 1
        elif len(self.counts) < KEPT_TEMPLATES:
            self.counts[key], self.first[key] = 1, self.lines
        else:
            self.dropped += 1

    def merged(self, other: Templates) -> Templates:
        """Two logs of one attempt as one run (a template's first line: the earlier)."""
        both = Templates(dict(self.counts), dict(self.first), self.lines + other.lines, self.dropped + other.dropped, self.end)
        for key, count in other.counts.items():
            if key in both.counts or len(both.counts) < KEPT_TEMPLATES:
                both.counts[key] = both.counts.get(key, 0) + count
                both.first[key] = min(both.first.get(key, other.first[key]), other.first[key])
            else:
                both.dropped += count
        return both

    def before(self, line: int) -> dict[str, int]:
        """The counts of the templates that first appeared before ``line``."""
        return {key: count for key, count in self.counts.items() if self.first[key] < line}

    def failure_start(self) -> int:
        """Where a failed run's failure begins: after the last of its last lines that
        reports training progress, else where its last lines begin."""
        for number, text in reversed(self.end):
            if reports_progress(segment(text)):
                return number + 1
        return self.end[0][0] if self.end else self.lines + 1

    def candidates(self, known: Set[str], most: int) -> list[NewLine]:
        """The lines of the log's failure region (what the model reads) whose template is
        not ``known``: at most ``most``, the first and the last halves where there are more."""
        texts = [text for _, text in self.end]
        region = region_indices(texts)
        found = new_lines([texts[index] for index in region], known)
        kept = [NewLine(self.end[region[new.line - 1]][0], new.text, new.count) for new in found]
        return kept if len(kept) <= most else kept[: most // 2] + kept[-(most - most // 2) :]
