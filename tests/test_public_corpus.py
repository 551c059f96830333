"""Real public log excerpts (corpora/public/<reason>/*.log, one source URL beside each):
every one must be classified as the reason of its folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from failclass.classify import Classifier

PUBLIC = ROOT / "corpora" / "public"
LOGS = sorted(PUBLIC.glob("*/*.log"))


def test_the_corpus_covers_every_reason(classifier: Classifier) -> None:
    reasons = {path.parent.name for path in LOGS}
    assert reasons == set(classifier.ruleset.taxonomy.reasons) - {"no_signature"}
    assert len(LOGS) >= 100


@pytest.mark.parametrize("path", LOGS, ids=[f"{p.parent.name}/{p.stem}" for p in LOGS])
def test_public_log_is_classified_as_its_folder(classifier: Classifier, path: Path) -> None:
    source = path.with_suffix(".url")
    assert source.exists() and source.read_text().strip().startswith(("https://", "http://", "scenario:"))
    result = classifier.classify_path(path)
    assert result.reason == path.parent.name, f"{result.rule_id}: {[e.text for e in result.evidence]}"
