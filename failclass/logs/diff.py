"""What a failed attempt printed that a good run of the same job never did.

Each line is reduced to its template: its last state where a progress bar redrew it, then
numbers and addresses masked as the model reads lines (failclass.logs.region), ids (a
temporary folder's name) masked and a progress bar's fill folded, so that times, steps,
losses, ranks, pids, run folders and how far a bar got do not tell two lines apart. The
failed log's lines whose template no good run printed are the candidates for its
failure's evidence, where no rule names a cause (L4 and LogSage compare with the last
good run the same way).

A run's templates are collected while its log streams past the classifier (Templates), so
that the store can keep a good run's without reading its log again: at most KEPT_TEMPLATES
of them, with their counts. Lines that differ only in their digits share a template, so a
block's lines are counted first with their digits made zeros (in C), and only each such
distinct line is templated, once per run."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence, Set
from dataclasses import dataclass, field

from failclass.logs.facts import reports_progress
from failclass.logs.region import LINE_CHARS, mask, region_indices, segment

KEPT_TEMPLATES = 4000  # of one run: a good run's are kept in the store (failclass.store.goodruns)
PARTIAL_LINE_BYTES = 64 << 10  # of a line still without its newline, the end kept
TEMPLATED_LINES = 10_000  # distinct lines (digits aside) of one run templated; past them, lines are dropped
KEY_BYTES = 1024  # of such a line, what tells it apart
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_MIXED = re.compile(r"(?<!\w)(?=\w*[A-Za-z])(?=\w*0)\w+(?!\w)", re.ASCII)  # an id: run-a0f_0c, sm_0
_BAR = re.compile(r"\|[#=>.\-\u2588-\u258f ]+\|")  # a progress bar's fill, however far it got
_MASKED = re.compile(r"( ?\bHEX\b ?|\bID\b|0| )")  # what the masks put in a template's text


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
    masked = _MIXED.sub("ID", mask(segment(line.removesuffix("\r"))))
    return _BAR.sub("|#|", masked).strip()[:LINE_CHARS]


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
            parts.append(r"\w+")
        elif piece == " ":
            parts.append(r"[ \t]+")
        elif piece:
            parts.append(re.escape(piece))
    return "".join(parts)


@dataclass
class Templates:
    """The templates of one run's log lines, collected as its blocks pass (watch), with
    how many lines each covers, for at most KEPT_TEMPLATES templates (``dropped``: lines
    of templates past that); ``end``: the log's last lines, numbered, as the classifier
    kept them."""

    counts: dict[str, int] = field(default_factory=dict)
    lines: int = 0
    dropped: int = 0
    end: list[tuple[int, str]] = field(default_factory=list)
    _partial: bytes = b""
    _templated: dict[bytes, str] = field(default_factory=dict)  # a line, digits made zeros -> its template

    def watch(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        for block in blocks:
            data = self._partial + block
            cut = data.rfind(b"\n") + 1
            self._partial = data[cut:][-PARTIAL_LINE_BYTES:]
            if cut:
                self._count(data[: cut - 1])
            yield block
        if self._partial:
            self._count(self._partial)
            self._partial = b""

    def _count(self, data: bytes) -> None:
        """Count the templates of whole lines (newlines between them)."""
        for line, count in Counter(data.replace(b"\r\n", b"\n").translate(_DIGITS).split(b"\n")).items():
            self.lines += count
            key = line[:KEY_BYTES]
            found = self._templated.get(key)
            if found is None:
                if len(self._templated) == TEMPLATED_LINES:
                    self.dropped += count
                    continue
                found = self._templated[key] = template(key.decode("utf-8", "replace"))
            self._add(found, count)

    def _add(self, key: str, count: int) -> None:
        if not key:
            return
        if key in self.counts:
            self.counts[key] += count
        elif len(self.counts) < KEPT_TEMPLATES:
            self.counts[key] = count
        else:
            self.dropped += count

    def merged(self, other: Templates) -> Templates:
        """Two logs of one attempt as one run (the last lines: this one's)."""
        both = Templates(dict(self.counts), self.lines + other.lines, self.dropped + other.dropped, self.end)
        for key, count in other.counts.items():
            both._add(key, count)
        return both

    def failure_start(self) -> int:
        """Where a failed run's failure begins: after the last of its last lines that
        reports training progress, else where its last lines begin."""
        for number, text in reversed(self.end):
            if reports_progress(segment(text)):
                return number + 1
        return self.end[0][0] if self.end else self.lines + 1

    def before(self, start: int) -> dict[str, int]:
        """The counts of the templates printed before line ``start``, one of the last lines."""
        after = Counter(template(text) for number, text in self.end if number >= start)
        return {key: count - after[key] for key, count in self.counts.items() if count > after[key]}

    def candidates(self, known: Set[str], most: int) -> list[NewLine]:
        """The lines of the log's failure region (what the model reads) whose template is
        not ``known``: at most ``most``, the first and the last halves where there are more."""
        texts = [text for _, text in self.end]
        region = region_indices(texts)
        found = new_lines([texts[index] for index in region], known)
        kept = [NewLine(self.end[region[new.line - 1]][0], new.text, new.count) for new in found]
        return kept if len(kept) <= most else kept[: most // 2] + kept[-(most - most // 2) :]
