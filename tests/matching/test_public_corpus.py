"""Real public log excerpts of the development side (corpora/public/<reason>/*.log, one
source URL beside each): every one is classified as the reason of its folder, except
the known misses listed, with the rule that answered, in corpora/public/KNOWN_MISSES.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from failclass.classifier import Classifier
from failclass.model.corpus import read_manifest

PUBLIC = ROOT / "corpora" / "public"
LOGS = sorted(ROOT / e.path for e in read_manifest() if e.path.startswith("corpora/public/"))  # logs not yet listed wait
KNOWN_MISSES = {
    line.split("|")[1].strip()
    for line in (PUBLIC / "KNOWN_MISSES.md").read_text().splitlines()
    if line.startswith("| ") and "/" in line.split("|")[1]
}


def _case(path: Path) -> object:
    name = f"{path.parent.name}/{path.stem}"
    marks = [pytest.mark.xfail(strict=True, reason="corpora/public/KNOWN_MISSES.md")] if name in KNOWN_MISSES else []
    return pytest.param(path, id=name, marks=marks)


def test_the_corpus_covers_every_reason(classifier: Classifier) -> None:
    reasons = {path.parent.name for path in LOGS}
    assert reasons - {"no_signature"} == set(classifier.ruleset.taxonomy.reasons) - {"no_signature"}
    assert reasons <= set(classifier.ruleset.taxonomy.reasons)
    assert len(LOGS) >= 100


def test_known_misses_are_few_and_exist() -> None:
    assert all((PUBLIC / f"{name}.log").exists() for name in KNOWN_MISSES)
    assert len(KNOWN_MISSES) <= 0.10 * len(LOGS)  # the rules cover at least 90% of the side they are written from


@pytest.mark.parametrize("path", [_case(p) for p in LOGS])
def test_public_log_is_classified_as_its_folder(classifier: Classifier, path: Path) -> None:
    source = path.with_suffix(".url")
    assert source.exists() and source.read_text().strip().startswith(("https://", "http://", "scenario:"))
    result = classifier.classify_path(path)
    assert result.reason == path.parent.name, f"{result.rule_id}: {[e.text for e in result.evidence]}"


PASSED = sorted((ROOT / "corpora" / "passed").glob("*.log"))


@pytest.mark.parametrize("path", PASSED, ids=[p.stem for p in PASSED])
def test_passed_job_log_fires_no_signature(classifier: Classifier, path: Path) -> None:
    result = classifier.classify_path(path)
    assert result.reason == "no_signature", f"{result.rule_id} fired on a passed job: {[e.text for e in result.evidence]}"
