"""The structural pass: after the literal scan, the exceptions at the end of the log
are read whole (failclass.logs.tracebacks) and matched by the rules that have an
``exception`` pattern (failclass.matching.exceptions); their hits join the literal ones
in the root-cause ranking."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator

import hyperscan

from failclass.limits import LIMITS
from failclass.logs.text import Tail
from failclass.logs.tracebacks import exceptions_in
from failclass.matching.exceptions import ExceptionPattern
from failclass.matching.matcher import HYPERSCAN_VERSION, Hit, compiled
from failclass.matching.rules import RuleSet


class StructureMatcher:
    """The rules with an ``exception`` pattern, matched against a log's exceptions."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.rules: tuple[tuple[str, ExceptionPattern], ...] = tuple(
            (rule.id, rule.exception) for rule in ruleset.rules if rule.exception is not None
        )
        self._line_start = ruleset.line_start  # compiled (re's cache) only when a tail is parsed
        names = sorted({name.rsplit(".", 1)[-1] for _, pattern in self.rules for name in pattern.types})
        # Hyperscan finds, in one pass over the tail, the lines the parser needs: traceback
        # headers, frames, and lines naming an exception some rule looks for. Any other line
        # would be skipped by the parser anyway; a tail without such a name is not parsed.
        self.names = len(names)
        self._blob: bytes | None = None
        if names:  # compiled once, then read from the cache (failclass.matching.cache)
            key = hashlib.sha256("|".join([HYPERSCAN_VERSION, *names]).encode()).hexdigest()[:40]
            self._blob = compiled(f"structure-{key}.hsdb", lambda: (hyperscan.dumpb(_lines_database(names)), b""))[0]
        self._local = threading.local()  # a database and scratch per thread: scratch cannot be shared

    @property
    def database(self) -> hyperscan.Database | None:
        if self._blob is None:
            return None
        database = getattr(self._local, "database", None)
        if database is None:
            database = self._local.database = hyperscan.loadb(self._blob, hyperscan.HS_MODE_BLOCK)
            database.scratch = hyperscan.Scratch(database)
        return database

    def hits(self, tail: Tail, total_lines: int) -> Iterator[Hit]:
        """The first exception each rule matches, as a hit at its exception line."""
        database = self.database
        if database is None:
            return
        ends: list[tuple[int, int]] = []
        database.scan(tail.data, match_event_handler=lambda pid, _s, end, _f, _c: ends.append((pid, end)))
        if not any(pid < self.names for pid, _ in ends):
            return
        pending = dict(self.rules)
        for raised in exceptions_in(tail.lines_ending(sorted({end for _, end in ends}), total_lines), self._strip):
            for rule_id, pattern in list(pending.items()):
                if pattern.matches(raised):
                    del pending[rule_id]
                    yield Hit(rule_id, raised.offset, raised.line, raised.text.strip()[: LIMITS.evidence_chars])
            if not pending:
                return

    def _strip(self, text: str) -> str:
        """The line without its prefixes (rank tags, hosts, timestamps)."""
        return text[re.match(self._line_start, text).end() :]  # type: ignore[union-attr]  # the prefixes may be none


def _lines_database(names: list[str]) -> hyperscan.Database:
    """Pattern ids below len(names) are the names; then the traceback header, a frame, and
    the two lines of a C++ exception that ended the process."""
    expressions = [rb"\b" + re.escape(name.encode()) + rb"\b" for name in names]
    expressions += [rb"Traceback \(most recent call last\)", rb'File "', rb"terminate called after throwing", rb"what\(\):"]
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=list(range(len(expressions))), flags=[0] * len(expressions))
    return database
