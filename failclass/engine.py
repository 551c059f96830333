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

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import hyperscan

from failclass.errors import RuleError
from failclass.logtext import evidence_text
from failclass.rules import Rule, RuleSet

MAX_PIECE = 4 << 20
CACHE_ENV = "FAILCLASS_CACHE_DIR"



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


def cache_dir() -> Path:
    """Where compiled rule databases are kept: FAILCLASS_CACHE_DIR, else the XDG cache."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "failclass"


def _cache_path(expressions: list[bytes], flags: list[int]) -> Path:
    key = hashlib.sha256(f"{hyperscan.__version__}|{flags}|".encode() + b"\0".join(expressions))
    return cache_dir() / f"rules-{key.hexdigest()[:40]}.hsdb"


def _cached_database(path: Path) -> bytes | None:
    """A database compiled by an earlier run, if intact and loadable on this CPU."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest, blob = data[:32], data[32:]
    if hashlib.sha256(blob).digest() != digest:
        return None
    try:
        hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
    except hyperscan.error:
        return None
    return blob


def _store_database(path: Path, blob: bytes) -> None:
    """Best effort: a read-only home only costs the next start a compile."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as out:
            out.write(hashlib.sha256(blob).digest() + blob)
        os.replace(out.name, path)
    except OSError:
        pass


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
        cache = _cache_path(expressions, flags)
        self._blob = _cached_database(cache) or self._compile_and_store(expressions, flags, cache)
        self._local = threading.local()

    def _compile_and_store(self, expressions: list[bytes], flags: list[int], cache: Path) -> bytes:
        try:
            blob = hyperscan.dumpb(_compile(expressions, flags))
        except hyperscan.error as exc:
            raise self._culprit(expressions, flags, exc) from None
        _store_database(cache, blob)
        return blob

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
        """One database and scratch space per thread: Hyperscan scratch cannot be shared
        by concurrent scans, and the binding scans with the database's own scratch."""
        database = getattr(self._local, "database", None)
        if database is None:
            database = hyperscan.loadb(self._blob, hyperscan.HS_MODE_BLOCK)
            database.scratch = hyperscan.Scratch(database)
            self._local.database = database
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
