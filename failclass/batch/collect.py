"""Members' answers gathered per attempt: an attempt's row is written to results.jsonl
(and flushed) once the answers of all its logs are in; the strongest answer speaks for
the attempt."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from failclass.batch.ids import Facts, Key
from failclass.batch.output import RESULTS
from failclass.batch.workers import MemberAnswer
from failclass.contracts import classification_json


class AttemptCollector:
    """Members' answers gathered per attempt; an attempt is written once all are in."""

    def __init__(self, expected: dict[Key, int], facts: dict[Key, Facts], out: Path) -> None:
        self.expected = expected
        self.facts = facts
        self.parts: dict[Key, list[tuple[str, MemberAnswer | None]]] = defaultdict(list)
        self.handle = (out / RESULTS).open("a")
        self.written = 0
        self.reasons: dict[str, int] = defaultdict(int)

    def add(self, key: Key, member: str, answer: MemberAnswer | None) -> None:
        self.parts[key].append((member, answer))
        if len(self.parts[key]) == self.expected[key]:
            self._write(key, self.parts.pop(key))

    def _write(self, key: Key, parts: list[tuple[str, MemberAnswer | None]]) -> None:
        answered = [(m, a) for m, a in parts if a is not None]
        logs = [m for m, _ in parts]
        row: dict[str, Any] = {**self.facts.get(key, {}), "job_id": key[0], "attempt": key[1], "logs": logs}  # JSON out
        if answered:
            log, best = max(answered, key=lambda pair: pair[1].strength)
            row.update(classification_json(best.classification))
            row["evidence_log"] = log
            row["classified_by"] = best.worker
            progresses = [a.progress for _, a in answered if a.progress]
            furthest = max(progresses, key=lambda p: (p.epoch, p.step)) if progresses else None
            row["progress"] = furthest.to_dict() if furthest else None
        else:
            row.update({"reason": None, "error": "no log of this attempt could be read"})
        self.handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.handle.flush()
        self.written += 1
        self.reasons[row.get("reason") or "unreadable"] += 1

    def close(self) -> None:
        self.handle.close()
