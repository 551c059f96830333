"""`failclass rules test`: every rule against its own examples, through the real engine."""

from __future__ import annotations

from dataclasses import dataclass

from failclass.classifier import Classifier
from failclass.contracts import Classification


@dataclass(frozen=True)
class ExampleFailure:
    rule_id: str
    path: str
    example: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: rule {self.rule_id}: {self.example}: {self.problem}"


def fired_rules(result: Classification) -> set[str]:
    """Every rule that matched: the winner and the ones that lost to it."""
    losers = {other.rule_id for other in result.also_matched}
    return losers | {result.rule_id} if result.rule_id else losers


def run_examples(classifier: Classifier) -> tuple[int, list[ExampleFailure]]:
    """Run every example: positives must fire their rule and classify as the rule's reason
    (or their ``classify_as``); negatives must not fire the rule. Returns (examples run, failures)."""
    failures: list[ExampleFailure] = []
    count = 0
    for rule in classifier.ruleset.rules:
        for number, example in enumerate(rule.positives):
            count += 1
            name = f"examples.positive[{number}]"
            result = classifier.classify_bytes(example.text)
            if rule.id not in fired_rules(result):
                failures.append(ExampleFailure(rule.id, rule.path, name, "the rule does not match it"))
                continue
            expected = example.classify_as or rule.reason
            if result.reason != expected:
                failures.append(
                    ExampleFailure(
                        rule.id, rule.path, name, f"classified as {result.reason} by {result.rule_id}, expected {expected}"
                    )
                )
        for number, example in enumerate(rule.negatives):
            count += 1
            if rule.id in fired_rules(classifier.classify_bytes(example.text)):
                failures.append(ExampleFailure(rule.id, rule.path, f"examples.negative[{number}]", "the rule matches it"))
    return count, failures
