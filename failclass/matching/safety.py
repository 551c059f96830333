"""Whether a pattern is safe to hand to a backtracking engine: no nested unbounded
quantifiers, a required literal, no accidental line-crossing. `failclass rules lint` runs
these checks over every rule (its patterns and its exception pattern's regexes), the loader
runs them over an operator's rules, and failclass.schema over the data files' regexes."""

from __future__ import annotations

import re
import re._parser as sre_parse  # Python's own regex parser: a real AST, no guessing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol


class Rule(Protocol):
    """What the checks read of a rule (failclass.matching.rules.Rule has it)."""

    @property
    def id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def ignore_case(self) -> bool: ...
    @property
    def patterns(self) -> tuple[str, ...]: ...
    @property
    def exception(self) -> Any: ...  # an ExceptionPattern, or None


MIN_LITERAL = 3
UNBOUNDED = sre_parse.MAXREPEAT
REPEATS = (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT)


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" or "warning"
    rule_id: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: rule {self.rule_id}: {self.message}"


def _walk(parsed: Any) -> Iterator[tuple[Any, Any]]:
    for op, arg in parsed:
        yield op, arg
        if op in REPEATS:
            yield from _walk(arg[2])
        elif op is sre_parse.SUBPATTERN:
            yield from _walk(arg[-1])
        elif op is sre_parse.BRANCH:
            for branch in arg[1]:
                yield from _walk(branch)


def _has_unbounded_repeat(parsed: Any) -> bool:
    return any(op in REPEATS and arg[1] == UNBOUNDED for op, arg in _walk(parsed))


def nested_unbounded(parsed: Any) -> bool:
    """True for shapes like (a+)+ or (.*x)* that backtrack exponentially."""
    return any(op in REPEATS and arg[1] == UNBOUNDED and _has_unbounded_repeat(arg[2]) for op, arg in _walk(parsed))


def longest_required_literal(parsed: Any) -> int:
    """Length of the longest run of literal characters every match must contain."""
    best = run = 0
    for op, arg in parsed:
        if op is sre_parse.LITERAL:
            run += 1
            best = max(best, run)
            continue
        run = 0
        if op is sre_parse.SUBPATTERN:
            best = max(best, longest_required_literal(arg[-1]))
        elif op in REPEATS and arg[0] >= 1:
            best = max(best, longest_required_literal(arg[2]))
        elif op is sre_parse.BRANCH:
            best = max(best, min(longest_required_literal(b) for b in arg[1]))
    return best


def _breaks_line(item: tuple[Any, Any]) -> bool:
    r"""Whether one element of a pattern or class is a line break: \n or \s."""
    op, arg = item
    return (op is sre_parse.LITERAL and arg == ord("\n")) or (op is sre_parse.CATEGORY and arg is sre_parse.CATEGORY_SPACE)


def matches_line_break(parsed: Any) -> bool:
    r"""True where a \n or \s can match a line break; inside a negated class (``[^\n]``,
    the way to stay on one line) they cannot."""
    for op, arg in _walk(parsed):
        if op is sre_parse.IN and not (arg and arg[0][0] is sre_parse.NEGATE) and any(map(_breaks_line, arg)):
            return True
        if _breaks_line((op, arg)):
            return True
    return False


def pattern_errors(pattern: str, flags: int = 0, min_literal: int = MIN_LITERAL) -> list[str]:
    """What refuses a pattern: it does not parse, it nests unbounded quantifiers, or (where
    ``min_literal`` asks for one) no literal of that many characters is in every match."""
    try:
        parsed = sre_parse.parse(pattern, flags)
    except re.error as exc:
        return [f"does not parse: {exc}"]
    problems = []
    if nested_unbounded(parsed):
        problems.append("nests unbounded quantifiers (catastrophic backtracking)")
    if min_literal and longest_required_literal(parsed) < min_literal:
        problems.append(f"has no required literal of {min_literal}+ characters")
    return problems


def regexes(rule: Rule) -> Iterator[tuple[str, str, int]]:
    """A rule's regular expressions with their field and flags: its patterns, and its
    exception pattern's message and frames (matched as written, case counting)."""
    flags = re.IGNORECASE if rule.ignore_case else 0
    for index, pattern in enumerate(rule.patterns):
        yield f"patterns[{index}]", pattern, flags
    if rule.exception is not None:
        for key, pattern in rule.exception.regexes().items():
            yield f"exception.{key}", pattern, 0


def lint_pattern(rule: Rule, where: str, pattern: str, flags: int) -> Iterator[Finding]:
    """The errors that refuse the pattern at ``where`` (a field of the rule), and a warning
    where it can match across lines."""
    for problem in pattern_errors(pattern, flags):
        yield Finding("error", rule.id, rule.path, f"{where} {problem}")
    try:
        crosses = matches_line_break(sre_parse.parse(pattern, flags))
    except re.error:
        return
    if crosses:
        yield Finding("warning", rule.id, rule.path, f"{where} uses \\s or \\n, which can match across lines; use [ \\t]")
