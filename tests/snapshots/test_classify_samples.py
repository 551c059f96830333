"""What `failclass classify --explain --json` answers for each log in samples/, kept as a
snapshot (classify_samples.jsonl beside this file): a rule or model change that moves an
answer, its evidence or the rules it beat shows in review as a diff of that file.

    FAILCLASS_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/snapshots  # after a deliberate change
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import ROOT, run_cli

SNAPSHOT = Path(__file__).with_name("classify_samples.jsonl")


def answers() -> list[dict[str, object]]:
    logs = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "samples").glob("*.log"))
    done = run_cli("classify", "--explain", "--json", *logs)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_samples_are_answered_as_the_snapshot_says() -> None:
    now = answers()
    assert len(now) >= 10
    text = "".join(json.dumps(answer, sort_keys=True, ensure_ascii=False) + "\n" for answer in now)
    if os.environ.get("FAILCLASS_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    kept = SNAPSHOT.read_text(encoding="utf-8").splitlines()
    changed = [
        f"{json.loads(old)['path']}: {json.loads(old)['reason']} -> {json.loads(new)['reason']}"
        for old, new in zip(kept, text.splitlines(), strict=False)
        if old != new
    ]
    assert len(kept) == len(now) and not changed, (
        "answers moved (rerun with FAILCLASS_UPDATE_SNAPSHOTS=1 if meant):\n" + "\n".join(changed)
    )
