"""Resuming: a run that starts on an existing output folder skips the attempts already
in results.jsonl, after cutting a last line that a killed run left half-written. No
attempt is lost or written twice."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from failclass.batch.ids import Key, is_log
from failclass.errors import InputError
from failclass.logs.archives import Member, members


def done_attempts(results: Path) -> set[Key]:
    """Attempts already written; a half-written last line (a killed run) is cut off."""
    if not results.exists():
        return set()
    data = results.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    if len(complete) != len(data):
        with results.open("r+b") as handle:
            handle.truncate(len(complete))
    done = set()
    for line in complete.splitlines():
        row = json.loads(line)
        done.add((row["job_id"], row["attempt"]))
    return done


def pending_attempts(
    sources: Sequence[str | Path],
    key_of: Callable[[Member], Key],
    done: set[Key],
    listed: dict[str, Key],
) -> tuple[dict[Key, int], int]:
    """Members per attempt still to classify, and how many attempts are done already.
    InputError when a manifest lists logs and the sources hold none of them."""
    expected: dict[Key, int] = defaultdict(int)
    listing_errors: list[str] = []
    found = 0
    for source in sources:
        for member, _ in members(source, listing_errors):
            if is_log(member, listed):
                expected[key_of(member)] += 1
                found += member.name in listed
    if listed and not found:
        example = next(iter(listed))
        raise InputError(
            f"the manifest lists {len(listed)} logs and the sources hold none of them (the manifest names logs by "
            f"their path inside a source, e.g. {example!r}); nothing was classified"
        )
    pending = {key: count for key, count in expected.items() if key not in done}
    return pending, len(expected) - len(pending)
