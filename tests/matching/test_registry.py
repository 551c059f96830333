"""Meta-tests over the built-in rule registry: counts, coverage, sources, examples."""

from __future__ import annotations

from collections import Counter

from conftest import ROOT

from failclass.classifier import Classifier
from failclass.matching.lint import lint
from failclass.matching.ruletest import run_examples
from failclass.matching.taxonomy import NO_SIGNATURE

SCENARIOS = ROOT / "corpora" / "scenarios"


def test_at_least_230_rules_over_every_reason(classifier: Classifier) -> None:
    per_reason = Counter(rule.reason for rule in classifier.ruleset.rules)
    assert sum(per_reason.values()) >= 230
    reasons = set(classifier.ruleset.taxonomy.reasons) - {NO_SIGNATURE}
    assert set(per_reason) == reasons
    thin = {reason: count for reason, count in per_reason.items() if count < 4}
    assert not thin, f"reasons with fewer than 4 rules: {thin}"


def test_every_example_passes_through_the_real_engine(classifier: Classifier) -> None:
    count, failures = run_examples(classifier)
    assert count >= 500
    assert not failures, "\n".join(map(str, failures))


def test_lint_finds_no_errors(classifier: Classifier) -> None:
    errors = [f for f in lint(classifier.ruleset, classifier.matcher) if f.severity == "error"]
    assert not errors, "\n".join(map(str, errors))


def test_every_scenario_source_has_its_script(classifier: Classifier) -> None:
    missing = set()
    for rule in classifier.ruleset.rules:
        for example in rule.positives + rule.negatives:
            if example.source and example.source.startswith("scenario:"):
                name = example.source.removeprefix("scenario:")
                if not any((SCENARIOS / f"{name}{ext}").exists() for ext in (".sh", ".py")):
                    missing.add((rule.id, name))
    assert not missing, sorted(missing)


def test_most_rules_name_their_cause_and_implicit_ones_stay_below_explicit(classifier: Classifier) -> None:
    kinds = Counter(rule.kind for rule in classifier.ruleset.rules)
    assert kinds["explicit"] > 3 * kinds["implicit"]
    top_implicit = max(r.priority for r in classifier.ruleset.rules if r.kind == "implicit")
    assert top_implicit < 60  # context rules (a checkpoint-save frame) may outrank generic errors, never a root cause


def test_every_rule_has_description_and_web_or_scenario_source(classifier: Classifier) -> None:
    for rule in classifier.ruleset.rules:
        assert rule.description.strip(), rule.id
        assert all(e.source.startswith(("http://", "https://", "scenario:")) for e in rule.positives), rule.id
