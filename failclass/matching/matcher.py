"""Multi-pattern matching: every rule pattern in Hyperscan databases, one pass per log.

Hyperscan compiles all patterns into automata and scans in linear time: no pattern can
backtrack, whatever the input. A log of any size is scanned in pieces that end at a
line break (block mode over line-aligned pieces: the stream mode of the Python binding
crashes on long literals), so memory stays bounded and no line is split, except a
single line longer than ``LIMITS.scanned_line_bytes``, which is scanned in pieces of that size.

Anchored patterns (a leading ``^``: "after any known line prefix") are costly as
automata: the prefix grammar runs at every line start. So the main database holds
their bodies only, as a prefilter, and a second database with their full form is run
over a piece only when some body matched in it and the pattern is still unmatched.

Each pattern keeps only its first match in a log: the earliest occurrence is what
root-cause ordering needs, and a log that repeats one message millions of times costs
no more than one that prints it once.
"""

from __future__ import annotations

import hashlib
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import hyperscan

from failclass.errors import RuleError
from failclass.limits import LIMITS
from failclass.logs.text import evidence_text
from failclass.matching import cache
from failclass.matching.patterns import expand
from failclass.matching.rules import Rule, RuleSet

HYPERSCAN_VERSION: str = getattr(hyperscan, "__version__", "")  # loadb refuses a database of another Hyperscan anyway


@dataclass(frozen=True)
class Hit:
    """The first match of one rule pattern in a log."""

    rule_id: str
    offset: int
    line: int
    text: str


@dataclass(frozen=True)
class ScanResult:
    hits: tuple[Hit, ...]
    lines: int


@dataclass(frozen=True)
class _Expressions:
    """What goes into the two databases, indexed by pattern id."""

    main: list[bytes]
    main_flags: list[int]
    anchored: list[int]  # pattern ids whose main expression is only a prefilter
    confirm: list[bytes]  # full expressions of the anchored patterns, same order
    confirm_flags: list[int]

    def cache_key(self) -> str:
        digest = hashlib.sha256(f"{HYPERSCAN_VERSION}|{self.main_flags}|{self.anchored}|{self.confirm_flags}|".encode())
        for expression in [*self.main, b"--", *self.confirm]:
            digest.update(expression + b"\0")
        return digest.hexdigest()[:40]


def _flags(rule: Rule, single: bool = True) -> int:
    flags = hyperscan.HS_FLAG_MULTILINE | (hyperscan.HS_FLAG_SINGLEMATCH if single else 0)
    if rule.ignore_case:
        flags |= hyperscan.HS_FLAG_CASELESS
    return flags


def _compile(expressions: list[bytes], flags: list[int], ids: list[int] | None = None) -> hyperscan.Database:
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=ids or list(range(len(expressions))), flags=flags)
    return database


def _unpack(payload: bytes) -> tuple[bytes, bytes] | None:
    """Two serialised databases (the second may be empty), if loadable on this CPU."""
    if len(payload) < 8:
        return None
    (size,) = struct.unpack("<Q", payload[:8])
    blobs = payload[8 : 8 + size], payload[8 + size :]
    try:
        for blob in filter(None, blobs):
            hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
    except hyperscan.error:
        return None
    return blobs


def compiled(name: str, build: Callable[[], tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
    """Two serialised databases: those cached under ``name`` by an earlier run, else
    ``build()``'s, then cached (failclass.matching.cache)."""
    payload = cache.read(name)
    blobs = _unpack(payload) if payload is not None else None
    if blobs is None:
        blobs = build()
        cache.write(name, struct.pack("<Q", len(blobs[0])) + blobs[0] + blobs[1])
    return blobs


def _load(blob: bytes) -> hyperscan.Database:
    database = hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
    database.scratch = hyperscan.Scratch(database)
    return database


def line_pieces(blocks: Iterable[bytes]) -> Iterator[bytes]:
    """Re-cut blocks into pieces that end at a line break (the last piece may not)."""
    carry = b""
    for block in blocks:
        cut = block.rfind(b"\n") + 1
        if cut == 0:
            carry += block
            if len(carry) >= LIMITS.scanned_line_bytes:
                yield carry
                carry = b""
            continue
        yield carry + block[:cut] if carry else block[:cut]
        carry = block[cut:]
    if carry:
        yield carry


class _Scan:
    """State of one scan: the current piece, the lines before it, the hits so far."""

    def __init__(self, matcher: Matcher) -> None:
        self.pattern_owner = matcher.pattern_owner
        self.anchored = matcher.anchored
        self.hits: list[Hit] = []
        self.seen: set[int] = set()
        self.confirm_from = -1  # where the first line with an unconfirmed anchored candidate starts
        self.offset_shift = 0  # added to offsets reported by a scan of a piece's tail
        self.piece = b""
        self.piece_start = 0
        self.lines_before = 0
        self.counted_to = 0  # newlines of the piece before this offset are in counted_lines
        self.counted_lines = 0

    def start_piece(self, piece: bytes) -> None:
        self.piece = piece
        self.confirm_from = -1
        self.offset_shift = 0
        self.counted_to = self.counted_lines = 0

    def on_prefilter(self, pattern_id: int, start: int, end: int, flags: int, context: object) -> None:
        if pattern_id in self.seen:
            return
        if pattern_id not in self.anchored:
            self.on_match(pattern_id, start, end, flags, context)
            return
        line_start = self.piece.rfind(b"\n", 0, max(end - 1, 0)) + 1
        if self.confirm_from < 0 or line_start < self.confirm_from:
            self.confirm_from = line_start

    def on_match(self, pattern_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
        if pattern_id in self.seen:
            return
        self.seen.add(pattern_id)
        end += self.offset_shift
        piece = self.piece
        last_char = max(end - 1, 0)
        line_start = piece.rfind(b"\n", 0, last_char) + 1
        line_end = piece.find(b"\n", end)
        line = piece[line_start : line_end if line_end >= 0 else len(piece)]
        rule_id = self.pattern_owner[pattern_id][0]
        text = evidence_text(line, end - line_start)
        self.hits.append(Hit(rule_id, self.piece_start + end, self._line_number(line_start), text))

    def _line_number(self, line_start: int) -> int:
        """1-based number of the line starting at ``line_start``; counts incrementally
        (matches mostly arrive in order of their end offsets)."""
        if line_start < self.counted_to:
            self.counted_to = self.counted_lines = 0
        self.counted_lines += self.piece.count(b"\n", self.counted_to, line_start)
        self.counted_to = line_start
        return self.lines_before + self.counted_lines + 1

    def end_piece(self) -> None:
        self.lines_before += self.piece.count(b"\n")
        self.piece_start += len(self.piece)

    def line_count(self) -> int:
        ends_open = bool(self.piece) and not self.piece.endswith(b"\n")
        return self.lines_before + int(ends_open)


class Matcher:
    """Compiled rules; ``scan`` returns the first hit of every pattern that matches."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.ruleset = ruleset
        self.pattern_owner: list[tuple[str, int]] = []
        expressions = self._expressions(ruleset)
        self.anchored = frozenset(expressions.anchored)
        self._blobs = compiled(f"rules-{expressions.cache_key()}.hsdb", lambda: self._build(expressions))
        self._local = threading.local()

    def _expressions(self, ruleset: RuleSet) -> _Expressions:
        built = _Expressions([], [], [], [], [])
        for rule in ruleset.rules:
            for index, pattern in enumerate(rule.patterns):
                pattern_id = len(self.pattern_owner)
                self.pattern_owner.append((rule.id, index))
                if pattern.startswith("^"):
                    built.main.append(expand(pattern[1:], "").encode("utf-8"))
                    built.anchored.append(pattern_id)
                    built.confirm.append(ruleset.expanded(pattern).encode("utf-8"))
                    built.confirm_flags.append(_flags(rule))
                else:
                    built.main.append(ruleset.expanded(pattern).encode("utf-8"))
                built.main_flags.append(_flags(rule))
        return built

    def _build(self, expressions: _Expressions) -> tuple[bytes, bytes]:
        try:
            main = _compile(expressions.main, expressions.main_flags)
            confirm = (
                _compile(expressions.confirm, expressions.confirm_flags, expressions.anchored) if expressions.confirm else None
            )
        except hyperscan.error as exc:
            raise self._culprit(expressions, exc) from None
        return hyperscan.dumpb(main), hyperscan.dumpb(confirm) if confirm else b""

    def _culprit(self, expressions: _Expressions, exc: Exception) -> RuleError:
        """Find which pattern Hyperscan refused, to name its file, rule and field."""
        by_id = self.ruleset.by_id()
        confirm_of = dict(
            zip(expressions.anchored, zip(expressions.confirm, expressions.confirm_flags, strict=False), strict=False)
        )
        for pattern_id, (expression, flag) in enumerate(zip(expressions.main, expressions.main_flags, strict=False)):
            candidates = [(expression, flag)] + ([confirm_of[pattern_id]] if pattern_id in confirm_of else [])
            for candidate, candidate_flag in candidates:
                try:
                    _compile([candidate], [candidate_flag])
                except hyperscan.error as single:
                    rule_id, index = self.pattern_owner[pattern_id]
                    return RuleError(by_id[rule_id].path, rule_id, f"patterns[{index}]", f"rejected by the engine: {single}")
        return RuleError("signatures", None, None, f"the engine cannot compile the rule set: {exc}")

    def _databases(self) -> tuple[hyperscan.Database, hyperscan.Database | None]:
        """Databases and scratch spaces of this thread: Hyperscan scratch cannot be shared
        by concurrent scans, and the binding scans with the database's own scratch."""
        databases = getattr(self._local, "databases", None)
        if databases is None:
            main, confirm = (_load(blob) if blob else None for blob in self._blobs)
            assert main is not None
            databases = self._local.databases = (main, confirm)
        return databases

    def scan(self, blocks: Iterable[bytes]) -> ScanResult:
        """Scan a log given as blocks of any size."""
        state = _Scan(self)
        main, confirm = self._databases()
        for piece in line_pieces(blocks):
            state.start_piece(piece)
            main.scan(piece, match_event_handler=state.on_prefilter)
            if state.confirm_from >= 0 and confirm is not None:
                # Only from the first candidate line on: each body reports once per piece,
                # so a later occurrence after a false candidate must be found here too.
                state.offset_shift = state.confirm_from
                tail = memoryview(piece)[state.confirm_from :]
                confirm.scan(tail, match_event_handler=state.on_match)  # type: ignore[type-var]  # any buffer works
            state.end_piece()
        return ScanResult(tuple(state.hits), state.line_count())
