"""The multi-rank scorer (benchmarks/multirank/score.py): how it compares an answer with an
attempt's truth, how it reads the command's output, and how it tabulates, on hand-made
answers (the real ones come from `failclass classify --attempt`)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent.parent
SCORER = ROOT / "benchmarks" / "multirank" / "score.py"


def _scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("multirank_score", SCORER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SCORE = _scorer()
TRUTH = {
    "attempt": "srun_label__missing_input__r5of8__0",
    "style": "srun_label",
    "reason": "incorrect_inputs",
    "origin_prints_error": True,
    "origin": {"rank": 5, "local_rank": 1, "node": "node3", "gpu": None},
    "cascade": [0, 1, 2, 3, 4, 6, 7],
    "files": ["job.log"],
    "facts": {"job_id": "7", "nodes": ["node1", "node2", "node3", "node4"], "tasks_per_node": 2},
}
RIGHT = {
    "reason": "incorrect_inputs",
    "origin": {"rank": 5, "node": "node3", "gpu": None, "path": "job.log", "line": 40, "how": "first root cause"},
    "cascade": [7, 6, 4, 3, 2, 1, 0],
}


def test_a_right_answer_is_right_on_every_measure() -> None:
    assert SCORE.compare(TRUTH, RIGHT) == {"rank": True, "node": True, "gpu": True, "reason": True, "cascade": True}


def test_each_measure_fails_on_its_own() -> None:
    wrong_rank = {**RIGHT, "origin": {**RIGHT["origin"], "rank": 0}}
    wrong_node = {**RIGHT, "origin": {**RIGHT["origin"], "node": "node1"}}
    wrong_reason = {**RIGHT, "reason": "mpi_runtime_failure"}
    short_cascade = {**RIGHT, "cascade": [0, 1]}
    gpu_on_a_cpu_run = {**RIGHT, "origin": {**RIGHT["origin"], "gpu": 1}}
    assert SCORE.compare(TRUTH, wrong_rank) == {"rank": False, "node": True, "gpu": True, "reason": True, "cascade": True}
    assert SCORE.compare(TRUTH, wrong_node) == {"rank": True, "node": False, "gpu": True, "reason": True, "cascade": True}
    assert SCORE.compare(TRUTH, gpu_on_a_cpu_run) == {"rank": True, "node": True, "gpu": False, "reason": True, "cascade": True}
    assert SCORE.compare(TRUTH, wrong_reason) == {"rank": True, "node": True, "gpu": True, "reason": False, "cascade": True}
    assert SCORE.compare(TRUTH, short_cascade)["cascade"] is False


def test_no_answer_or_no_origin_is_wrong() -> None:
    assert not any(SCORE.compare(TRUTH, None).values())
    plain = SCORE.compare(TRUTH, {"reason": "incorrect_inputs"})  # a single-log answer
    assert plain == {"rank": False, "node": False, "gpu": False, "reason": True, "cascade": False}


def test_the_command_output_is_read_or_its_error_kept() -> None:
    printed = subprocess.CompletedProcess([], 0, stdout=json.dumps(RIGHT) + "\n", stderr="")
    assert SCORE.parse_answer(printed) == (RIGHT, None)
    refused = subprocess.CompletedProcess([], 2, stdout="", stderr="Usage: ...\nError: No such option: --attempt\n")
    assert SCORE.parse_answer(refused) == (None, "exit 2: Error: No such option: --attempt")
    listed = subprocess.CompletedProcess([], 0, stdout="[]", stderr="")
    assert SCORE.parse_answer(listed) == (None, "exit 0: printed list, not one JSON object")


def test_tables_count_per_group_and_overall(tmp_path: Path) -> None:
    other = {**TRUTH, "attempt": "mpirun_tag__hang__r2of4__0", "style": "mpirun_tag", "reason": "mpi_runtime_failure"}
    for truth in (TRUTH, other):
        folder = tmp_path / truth["attempt"]
        folder.mkdir()
        (folder / "truth.json").write_text(json.dumps(truth))
    attempts = SCORE.find_attempts([tmp_path])
    assert [a.name for a in attempts] == [other["attempt"], TRUTH["attempt"]]
    outcomes = [SCORE.Outcome(attempts[0], None, "exit 2: boom"), SCORE.Outcome(attempts[1], RIGHT, None)]
    rows = SCORE.table(outcomes, "style", "launcher style")
    assert rows[2:] == [
        "| mpirun_tag | 1 | 0.00 | 0.00 | 0.00 | 0.00 | 0.00 |",
        "| srun_label | 1 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 |",
        "| **all** | 2 | 0.50 | 0.50 | 0.50 | 0.50 | 0.50 |",
    ]
    assert SCORE.misses(outcomes) == [
        "- mpirun_tag__hang__r2of4__0: want rank 5 on node3 (GPU None), mpi_runtime_failure; ERROR exit 2: boom"
    ]
