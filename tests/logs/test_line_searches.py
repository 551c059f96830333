"""The searches that skip most lines of a log: the progress read from the end, and the
failure records looked for only in lines that hold a piece of one."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from failclass.logs.facts import Progress, progress_of
from failclass.logs.region import FAILURE_RECORD, records_failure

RECORDS = [
    "Traceback (most recent call last):",
    '  File "/app/train.py", line 12, in <module>',
    "torch.OutOfMemoryError: CUDA out of memory.",
    "RuntimeError",
    "ValueError(x): bad",
    "NCCL Failure: unhandled",
    "2024-01-01 ERROR worker died",
    "FATAL: the end",
    "CRITICAL lost",
    "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] timeout",
    "F0102 10:11:12.123 check failed",
    "0: E tensorflow/core/x.cc:12] failed",
    "caught SIGSEGV",
    "killed by signal 11",
]


@pytest.mark.parametrize("line", RECORDS)
def test_each_form_of_a_failure_record_is_found(line: str) -> None:
    assert FAILURE_RECORD.search(line) is not None and records_failure(line)


def test_the_corpora_lines_read_as_failure_records_as_the_full_search_reads_them() -> None:
    lines = [line for path in sorted((ROOT / "corpora").rglob("*.log")) for line in read(path)]
    assert lines
    assert [records_failure(line) for line in lines] == [FAILURE_RECORD.search(line) is not None for line in lines]


def read(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines()


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["Epoch 1 Step 5", "step 7 loss 2.0", "saving"], Progress(1, 7)),
        (["Epoch 1 Step 5", "Epoch 2\rEpoch 3 x", "done"], Progress(3, 5)),
        (["global_step 4 then iter 9"], Progress(-1, 9)),
        (["'epoch': 6", " 40%|####      | 4/10 [00:01<00:02]"], Progress(6, 4)),
        (["no numbers here", "Steps remain"], None),
    ],
)
def test_progress_is_the_last_epoch_and_the_last_step_mentioned(lines: list[str], expected: Progress | None) -> None:
    assert progress_of(lines) == expected
