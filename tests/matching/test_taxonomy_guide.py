"""docs/TAXONOMY.md is the labelling guide: every decided case it lists, a real log of the
corpus, is classified as the guide says (the early-root-cause cases of principle 1
included), and the corpus's folders only use the guide's reasons."""

from __future__ import annotations

import pytest
from conftest import ROOT

from failclass.classifier import Classifier

GUIDE = ROOT / "docs" / "TAXONOMY.md"


def decided_cases() -> list[tuple[str, str, str]]:
    section = GUIDE.read_text().split("## Decided cases", 1)[1]
    cases = []
    for row in section.splitlines():
        cells = [cell.strip() for cell in row.split("|")]
        if len(cells) == 6 and cells[4].startswith("corpora/"):
            cases.append((cells[1], cells[2], cells[4]))
    return cases


def test_the_guide_lists_decided_cases_for_every_principle() -> None:
    cases = decided_cases()
    assert len(cases) >= 15
    section = GUIDE.read_text().split("## Decided cases", 1)[1]
    assert all(f"| {n}" in section or f", {n} |" in section or f"| {n}," in section for n in "123456")


@pytest.mark.parametrize(("case", "reason", "log"), decided_cases(), ids=[c[2].rsplit("/", 1)[-1] for c in decided_cases()])
def test_decided_case(classifier: Classifier, case: str, reason: str, log: str) -> None:
    path = ROOT / log
    assert path.parent.name == reason, f"{log} is filed under {path.parent.name}, the guide says {reason}"
    result = classifier.classify_path(path)
    assert result.reason == reason, f"{case}: {result.rule_id} {[e.text for e in result.evidence]}"


def test_corpus_folders_use_the_guides_reasons() -> None:
    reasons = {
        row.split("|")[1].strip()
        for row in GUIDE.read_text().splitlines()
        if row.startswith("| ") and "`" not in row.split("|")[1]
    }
    for side in ("public", "holdout", "produced"):
        for folder in (ROOT / "corpora" / side).iterdir():
            if folder.is_dir():
                assert folder.name in reasons, f"corpora/{side}/{folder.name} is no reason of docs/TAXONOMY.md"
