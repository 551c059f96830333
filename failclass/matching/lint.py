"""`failclass rules lint`: patterns that are dangerous, too broad, or overlap another rule.

Hyperscan itself never backtracks, but the same patterns are read by backtracking
engines too (Python's `re` in the loader, operators' own tools, grep exports), so the
dialect stays safe for them: no nested unbounded quantifiers, a required literal in each.
"""

from __future__ import annotations

from collections.abc import Iterator

from failclass.logs.text import blocks_of_text
from failclass.matching.matcher import Matcher
from failclass.matching.rules import RuleSet
from failclass.matching.safety import Finding, lint_pattern, regexes


def overlaps(ruleset: RuleSet, matcher: Matcher) -> Iterator[Finding]:
    """A rule of another reason, of equal or higher priority, matching a rule's own
    positive example: the example would be won by the other rule unless it says so."""
    rules = ruleset.by_id()
    for rule in ruleset.rules:
        for number, example in enumerate(rule.positives):
            if example.classify_as:
                continue
            matched = {hit.rule_id for hit in matcher.scan(blocks_of_text(example.text)).hits}
            for other_id in sorted(matched - {rule.id}):
                other = rules[other_id]
                if other.reason != rule.reason and other.priority >= rule.priority:
                    yield Finding(
                        "warning",
                        rule.id,
                        rule.path,
                        f"examples.positive[{number}] is also matched by {other_id} ({other.reason}, priority {other.priority})",
                    )


def lint(ruleset: RuleSet, matcher: Matcher) -> list[Finding]:
    """Every finding over a rule set: per-pattern dangers, duplicates and overlaps."""
    findings: list[Finding] = []
    owners: dict[tuple[str, bool], str] = {}
    for rule in ruleset.rules:
        for where, regex, flags in regexes(rule):
            findings.extend(lint_pattern(rule, where, regex, flags))
        for index, pattern in enumerate(rule.patterns):
            key = (pattern, rule.ignore_case)
            if key in owners and owners[key] != rule.id:
                findings.append(Finding("error", rule.id, rule.path, f"patterns[{index}] duplicates a pattern of {owners[key]}"))
            owners.setdefault(key, rule.id)
    findings.extend(overlaps(ruleset, matcher))
    return findings
