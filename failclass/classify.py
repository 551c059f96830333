"""The one entry point: a log (path, bytes or text) -> Classification."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failclass.engine import Engine, ScanResult
from failclass.logtext import BlockReader, blocks_of_text, open_log
from failclass.rootcause import Ranking, rank
from failclass.rules import RuleSet, load_rules
from failclass.taxonomy import NO_SIGNATURE

MAX_EVIDENCE_LINES = 5


def signature_confidence(priority: int) -> float:
    """Confidence of a signature answer: 0.55 for the weakest implicit rule, 0.95 at priority 90."""
    return round(min(0.5 + priority / 200, 0.99), 2)


@dataclass(frozen=True)
class Evidence:
    line: int
    text: str


@dataclass(frozen=True)
class Classification:
    reason: str
    reason_name: str
    categories: tuple[str, ...]
    source: str
    rule_id: str | None
    why: str
    confidence: float
    evidence: tuple[Evidence, ...]
    bytes_read: int
    lines: int
    also_matched: tuple[dict[str, Any], ...] = field(default=())

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        """The classify contract of DESIGN.md (plus ``also_matched`` when explaining)."""
        data: dict[str, Any] = {
            "reason": self.reason,
            "reason_name": self.reason_name,
            "categories": list(self.categories),
            "source": self.source,
            "rule_id": self.rule_id,
            "why": self.why,
            "confidence": self.confidence,
            "evidence": [{"line": e.line, "text": e.text} for e in self.evidence],
            "bytes": self.bytes_read,
            "lines": self.lines,
        }
        if explain:
            data["also_matched"] = list(self.also_matched)
        return data


class Classifier:
    """Rules compiled once, then any number of logs classified."""

    def __init__(self, ruleset: RuleSet | None = None, extra_rule_dirs: Iterable[Path] = ()) -> None:
        self.ruleset = ruleset or load_rules(extra_rule_dirs)
        self.engine = Engine(self.ruleset)
        self.rules = self.ruleset.by_id()

    def classify_path(self, path: Path) -> Classification:
        with open_log(path) as stream:
            return self._classify(BlockReader(stream))

    def classify_bytes(self, data: bytes | str) -> Classification:
        return self._classify(blocks_of_text(data))

    def _classify(self, reader: BlockReader) -> Classification:
        scan = self.engine.scan(reader)
        return self._decide(scan, reader.bytes_read)

    def _decide(self, scan: ScanResult, size: int) -> Classification:
        ranking = rank(scan.hits, self.rules)
        if ranking.winner is None:
            return self._classification(NO_SIGNATURE, "none", None, 0.0, (), scan, size, ranking)
        winner = ranking.winner
        lines = {hit.line: hit.text for hit in winner.hits}
        evidence = tuple(Evidence(n, text) for n, text in sorted(lines.items())[:MAX_EVIDENCE_LINES])
        confidence = signature_confidence(winner.rule.priority)
        return self._classification(winner.rule.reason, "signature", winner.rule.id, confidence, evidence, scan, size, ranking)

    def _classification(
        self,
        reason_id: str,
        source: str,
        rule_id: str | None,
        confidence: float,
        evidence: tuple[Evidence, ...],
        scan: ScanResult,
        size: int,
        ranking: Ranking,
    ) -> Classification:
        reason = self.ruleset.taxonomy[reason_id]
        also = tuple(
            {
                "rule_id": loser.rule.id,
                "reason": loser.rule.reason,
                "kind": loser.rule.kind,
                "priority": loser.rule.priority,
                "line": loser.first.line,
                "text": loser.first.text,
                "lost_because": why,
            }
            for loser, why in ranking.others
        )
        return Classification(
            reason=reason.id,
            reason_name=reason.name,
            categories=reason.categories,
            source=source,
            rule_id=rule_id,
            why=self.rules[rule_id].why if rule_id else "",
            confidence=confidence,
            evidence=evidence,
            bytes_read=size,
            lines=scan.lines,
            also_matched=also,
        )
