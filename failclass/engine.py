"""Multi-pattern matching: every rule pattern in one Hyperscan database, one pass per log.

Hyperscan compiles all patterns into automata and scans in linear time: no pattern can
backtrack, whatever the input. A log of any size is scanned in pieces that end at a line
break (block mode over line-aligned pieces: the stream mode of the Python binding
crashes on long literals), so memory stays bounded and no line is split, except a
single line longer than ``MAX_PIECE``, which is scanned in pieces of that size.
Each pattern keeps only its first match in a log: the earliest occurrence is what
root-cause ordering needs, and a log that repeats one message millions of times costs
no more than one that prints it once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterable, Iterator

import hyperscan

from failclass.errors import RuleError
from failclass.logtext import evidence_text
from failclass.rules import Rule, RuleSet

MAX_PIECE = 4 << 20



@dataclass(frozen=True)
class Hit:
    """The first match of one rule pattern in a log."""

    rule_id: str
    pattern_index: int
    offset: int
    line: int
    text: str


@dataclass(frozen=True)
class ScanResult:
    hits: tuple[Hit, ...]
    lines: int


def _flags(rule: Rule) -> int:
    flags = hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_SINGLEMATCH
    if rule.ignore_case:
        flags |= hyperscan.HS_FLAG_CASELESS
    return flags


def _compile(expressions: list[bytes], flags: list[int]) -> hyperscan.Database:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=flags)
    return database


def line_pieces(blocks: Iterable[bytes]) -> Iterator[bytes]:
    """Re-cut blocks into pieces that end at a line break (the last piece may not)."""
    carry = b""
    for block in blocks:
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            carry += block
            if len(carry) >= MAX_PIECE:
                yield carry
                carry = b""
            continue
        yield carry + block[:cut] if carry else block[:cut]
        carry = block[cut:]
    if carry:
        yield carry


class _Scan:
    """State of one scan: the current piece, the lines before it, the hits so far."""

    def __init__(self, pattern_owner: list[tuple[str, int]]) -> None:
        self.pattern_owner = pattern_owner
        self.hits: list[Hit] = []
        self.seen: set[int] = set()
        self.piece = b""
        self.piece_start = 0
        self.lines_before = 0

    def on_match(self, pattern_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
        if pattern_id in self.seen:
            return
        self.seen.add(pattern_id)
        piece = self.piece
        last_char = max(end - 1, 0)
        line_start = piece.rfind(b"\n", 0, last_char) + 1
        line_end = piece.find(b"\n", end)
        line = piece[line_start : line_end if line_end >= 0 else len(piece)]
        number = self.lines_before + piece.count(b"\n", 0, last_char) + 1
        rule_id, pattern_index = self.pattern_owner[pattern_id]
        text = evidence_text(line, end - line_start)
        self.hits.append(Hit(rule_id, pattern_index, self.piece_start + end, number, text))

    def advance(self, piece: bytes) -> None:
        """Account for the piece just scanned."""
        self.lines_before += piece.count(b"\n")
        self.piece_start += len(piece)

    def line_count(self) -> int:
        ends_open = bool(self.piece) and not self.piece.endswith(b"\n")
        return self.lines_before + int(ends_open)


class Engine:
    """Compiled rules; ``scan`` returns the first hit of every pattern that matches."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.ruleset = ruleset
        self.pattern_owner: list[tuple[str, int]] = []
        expressions: list[bytes] = []
        flags: list[int] = []
        for rule in ruleset.rules:
            for index, pattern in enumerate(rule.patterns):
                self.pattern_owner.append((rule.id, index))
                expressions.append(ruleset.expanded(pattern).encode("utf-8"))
                flags.append(_flags(rule))
        self._expressions, self._flags = expressions, flags
        try:
            database = _compile(expressions, flags)
        except hyperscan.error as exc:
            raise self._culprit(expressions, flags, exc) from None
        self._local = threading.local()
        self._local.database = database

    def _culprit(self, expressions: list[bytes], flags: list[int], exc: Exception) -> RuleError:
        """Find which pattern Hyperscan refused, to name its file, rule and field."""
        by_id = self.ruleset.by_id()
        for pattern_id, (expression, flag) in enumerate(zip(expressions, flags)):
            try:
                _compile([expression], [flag])
            except hyperscan.error as single:
                rule_id, index = self.pattern_owner[pattern_id]
                return RuleError(by_id[rule_id].path, rule_id, f"patterns[{index}]", f"rejected by the engine: {single}")
        return RuleError("signatures", None, None, f"the engine cannot compile the rule set: {exc}")

    def _database(self) -> hyperscan.Database:
        """One compiled database per thread: the binding scans and closes streams with the
        database's own scratch space, which concurrent scans must not share."""
        database = getattr(self._local, "database", None)
        if database is None:
            database = self._local.database = _compile(self._expressions, self._flags)
        return database

    def scan(self, blocks: Iterable[bytes]) -> ScanResult:
        """Scan a log given as blocks of any size."""
        state = _Scan(self.pattern_owner)
        database = self._database()
        for piece in line_pieces(blocks):
            state.piece = piece
            database.scan(piece, match_event_handler=state.on_match)
            state.advance(piece)
        return ScanResult(tuple(state.hits), state.line_count())
