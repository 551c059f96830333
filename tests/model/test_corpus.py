"""The labelled corpus: what the manifest promises is what is on disk, the split keeps
sources apart, and the sizes the project commits to hold."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from failclass.classifier import Classifier
from failclass.matching.taxonomy import NO_SIGNATURE, builtin_taxonomy
from failclass.model.corpus import CORPORA, Entry, read_manifest, resolve, scan_corpus, split_of

MANIFEST = read_manifest()
REASONS = set(builtin_taxonomy().reasons) - {NO_SIGNATURE}


def test_committed_manifest_is_what_is_on_disk() -> None:
    assert [e.to_json() for e in scan_corpus()] == [e.to_json() for e in MANIFEST], "regenerate it: make corpus"


def test_split_is_by_source_and_fixed() -> None:
    sides: dict[str, set[str]] = defaultdict(set)
    for entry in MANIFEST:
        sides[entry.source.split("#", 1)[0]].add(entry.split)
        if entry.origin == "killed":  # scored only, never trained on: always the test side
            assert entry.split == "test"
        elif entry.origin != "holdout":
            assert entry.split == split_of(entry.source)
    assert all(len(split) == 1 for split in sides.values())
    assert split_of("scenario:syntax_error__indentation") == split_of("scenario:syntax_error__indentation#x")


def test_corpus_sizes() -> None:
    origins = Counter(e.origin for e in MANIFEST)
    failed = [e for e in MANIFEST if e.outcome == "failed" and e.origin != "holdout"]
    assert len(failed) + origins["passed"] >= 600
    assert origins["passed"] >= 50
    produced_reasons = {e.reason for e in MANIFEST if e.origin == "produced"}
    assert len(produced_reasons) >= 12
    public_reasons = {e.reason for e in MANIFEST if e.origin == "public"}
    assert produced_reasons | public_reasons >= REASONS
    test_reasons = {e.reason for e in MANIFEST if e.split == "test"}
    assert len(test_reasons & REASONS) >= 18, "the test side should cover nearly every reason"


def test_produced_logs_carry_their_label_scenario_and_command() -> None:
    produced = [e for e in MANIFEST if e.origin == "produced"]
    assert produced
    for entry in produced:
        facts = json.loads(resolve(entry).with_suffix(".json").read_text())
        assert facts["reason"] == entry.reason
        assert facts["command"].startswith("cd corpora/scenarios && ")
        assert (CORPORA / "scenarios" / facts["command"].split()[-1].lstrip("./")).exists()
        assert facts["prelude"].startswith("$PY ")


def test_every_public_and_holdout_log_has_its_url_or_scenario() -> None:
    for entry in MANIFEST:
        if entry.origin == "holdout" or (entry.origin == "public" and not entry.source.startswith("scenario:")):
            assert entry.source.startswith(("https://", "http://")), entry.path
        elif entry.origin == "public":  # a few excerpts were cut from a scenario's output
            name = entry.source.removeprefix("scenario:")
            assert list((CORPORA / "scenarios").glob(f"{name}.*")), entry.path


@pytest.mark.parametrize("entry", [e for e in MANIFEST if e.outcome == "passed"], ids=lambda e: Path(e.path).name)
def test_no_signature_fires_on_a_passed_job(classifier: Classifier, entry) -> None:  # type: ignore[no-untyped-def]
    result = classifier.classify_path(resolve(entry))
    assert result.reason == NO_SIGNATURE, result.evidence


def test_no_rule_was_written_from_the_holdout(classifier: Classifier) -> None:
    holdout = {e.source.split("#", 1)[0] for e in MANIFEST if e.origin == "holdout"}
    cited = {
        f"{rule.id}: {example.source}"
        for rule in classifier.ruleset.rules
        for example in rule.positives
        if (example.source or "").split("#", 1)[0] in holdout
    }
    assert not cited, "rules cite holdout logs (move those logs to corpora/public/):\n" + "\n".join(sorted(cited))


def test_an_example_cut_from_a_corpus_log_carries_its_label_or_loses_to_it(classifier: Classifier) -> None:
    """An excerpt taken from a labelled log answers that log's reason; where it answers another (a line
    of what followed the root cause: a fatal signal, a device that then failed to initialise), the whole
    log must still be classified as its label, so the rule never overrules the guide in context."""
    logs: dict[str, list[Entry]] = defaultdict(list)
    for entry in MANIFEST:
        logs[entry.source.split("#", 1)[0]].append(entry)
    disagree = []
    for rule in classifier.ruleset.rules:
        for example in rule.positives:
            for entry in logs.get((example.source or "").split("#", 1)[0], []):
                if (example.classify_as or rule.reason) == entry.reason:
                    continue
                answer = classifier.classify_path(resolve(entry))
                if answer.reason != entry.reason:
                    disagree.append(f"{rule.id}: {entry.path} ({entry.reason}) is classified {answer.reason} by {answer.rule_id}")
    assert not disagree, "\n".join(disagree)
