"""Whose log a member is (its path, or the manifest) and what a killed run left: the
batch runner's bookkeeping, without classifying."""

from __future__ import annotations

import json
import re
from pathlib import Path

from failclass.batch.ids import DEFAULT_ID_PATTERN, attempt_of, manifest_maps
from failclass.batch.resume import done_attempts


def test_the_default_pattern_reads_job_and_attempt_from_the_folders() -> None:
    pattern = re.compile(DEFAULT_ID_PATTERN)
    assert attempt_of("jobs/job-a/attempt-2/rank0.log", pattern) == ("job-a", 2)
    assert attempt_of("jobs/job-b/out.log", pattern) == ("job-b", 1)
    assert attempt_of("b.log.gz", pattern) == ("b.log", 1)  # no folder: the file's stem


def test_a_manifest_row_owns_each_log_it_lists() -> None:
    rows = [
        {"job_id": 7, "attempt": 2, "user": "ann", "reason": "gpu_oom", "logs": "a/out.log;a/err.log"},
        {"job_id": "9", "log": ["b/out.log"]},
    ]
    facts, owners = manifest_maps(rows)
    assert facts == {("7", 2): {"job_id": 7, "attempt": 2, "user": "ann"}, ("9", 1): {"job_id": "9"}}
    assert owners == {"a/out.log": ("7", 2), "a/err.log": ("7", 2), "b/out.log": ("9", 1)}


def test_a_half_written_last_line_is_cut_and_the_rest_is_done(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    whole = json.dumps({"job_id": "job-a", "attempt": 1, "reason": "gpu_oom"}) + "\n"
    results.write_text(whole + '{"job_id": "job-b", "att')
    assert done_attempts(results) == {("job-a", 1)}
    assert results.read_text() == whole
    assert done_attempts(tmp_path / "absent.jsonl") == set()
