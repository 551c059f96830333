"""The structural pass: after the literal scan, the exceptions at the end of the log
are read whole (failclass.logs.tracebacks) and matched by the rules that have an
``exception`` pattern (failclass.matching.exceptions); their hits join the literal ones
in the root-cause ranking."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from failclass.logs.tracebacks import exceptions_in
from failclass.matching.exceptions import ExceptionPattern
from failclass.matching.matcher import Hit
from failclass.matching.rules import RuleSet


class StructureMatcher:
    """The rules with an ``exception`` pattern, matched against a log's exceptions."""

    def __init__(self, ruleset: RuleSet) -> None:
        self.rules: tuple[tuple[str, ExceptionPattern], ...] = tuple(
            (rule.id, rule.exception) for rule in ruleset.rules if rule.exception is not None
        )
        prefix = re.compile(ruleset.line_start)
        self._strip: Callable[[str], str] = lambda text: text[prefix.match(text).end() :]  # type: ignore[union-attr]

    def hits(self, lines: Iterable[tuple[int, int, str]]) -> Iterator[Hit]:
        """The first exception each rule matches, as a hit at its exception line."""
        if not self.rules:
            return
        pending = dict(self.rules)
        for raised in exceptions_in(lines, self._strip):
            for rule_id, pattern in list(pending.items()):
                if pattern.matches(raised):
                    del pending[rule_id]
                    yield Hit(rule_id, raised.offset, raised.line, raised.text.strip()[:600])
            if not pending:
                return
