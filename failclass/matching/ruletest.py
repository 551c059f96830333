"""`failclass rules test`: every rule and every ending against its own examples, through
the real engine."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from failclass.classifier import Classifier
from failclass.contracts import Classification
from failclass.logs.region import FAILURE_WORDS, segment, shows_failure
from failclass.matching.endings import Ending
from failclass.matching.taxonomy import NO_SIGNATURE


@dataclass(frozen=True)
class ExampleFailure:
    owner: str  # "rule <id>", or "<section> ending <id>"
    path: str
    example: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.owner}: {self.example}: {self.problem}"


def fired_rules(result: Classification) -> set[str]:
    """Every rule that matched: the winner and the ones that lost to it."""
    losers = {other.rule_id for other in result.also_matched}
    return losers | {result.rule_id} if result.rule_id else losers


def run_examples(classifier: Classifier) -> tuple[int, list[ExampleFailure]]:
    """Run every example: positives must fire their rule and classify as the rule's reason
    (or their ``classify_as``); negatives must not fire the rule; then the endings' (see
    ending_problems). Returns (examples run, failures)."""
    failures: list[ExampleFailure] = []
    count = 0
    for rule in classifier.ruleset.rules:
        owner = f"rule {rule.id}"
        for number, example in enumerate(rule.positives):
            count += 1
            name = f"examples.positive[{number}]"
            result = classifier.classify_bytes(example.text)
            if rule.id not in fired_rules(result):
                failures.append(ExampleFailure(owner, rule.path, name, "the rule does not match it"))
                continue
            expected = example.classify_as or rule.reason
            if result.reason != expected:
                problem = f"classified as {result.reason} by {result.rule_id}, expected {expected}"
                failures.append(ExampleFailure(owner, rule.path, name, problem))
        for number, example in enumerate(rule.negatives):
            count += 1
            if rule.id in fired_rules(classifier.classify_bytes(example.text)):
                failures.append(ExampleFailure(owner, rule.path, f"examples.negative[{number}]", "the rule matches it"))
    endings = classifier.ruleset.endings
    for section, entries in (("no_cause", endings.no_cause), ("benign", endings.benign)):
        for entry in entries:
            count += len(entry.positives) + len(entry.negatives)
            owner = f"{section} ending {entry.id}"
            failures += [ExampleFailure(owner, endings.path, *found) for found in ending_problems(classifier, section, entry)]
    return count, failures


def ending_problems(classifier: Classifier, section: str, entry: Ending) -> Iterator[tuple[str, str]]:
    """(example, problem) for each example of an ending that does not do what it says. A
    positive: some line of it matches the entry, none of its lines shows a failure (a benign
    line says a failure word that the entry excuses), and it classifies as No signature (or
    its ``classify_as``). A negative: no line of it matches the entry."""
    endings = classifier.ruleset.endings
    for number, example in enumerate(entry.positives):
        name, lines = f"examples.positive[{number}]", [segment(line) for line in example.text.splitlines()]
        matched = [line for line in lines if entry.matches(line)]
        result = classifier.classify_bytes(example.text)
        expected = example.classify_as or NO_SIGNATURE
        if not matched:
            yield name, "the entry does not match it"
        elif section == "benign" and not any(FAILURE_WORDS.search(line) for line in matched):
            yield name, "it says no failure word: the entry changes nothing for it"
        elif shows_failure(lines, endings):
            yield name, "it shows a failure all the same"
        elif result.reason != expected:
            yield name, f"classified as {result.reason} by {result.rule_id or result.source}, expected {expected}"
    for number, example in enumerate(entry.negatives):
        if any(entry.matches(segment(line)) for line in example.text.splitlines()):
            yield f"examples.negative[{number}]", "the entry matches it"
