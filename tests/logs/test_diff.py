"""`failclass diff`: a failed rank's log against the logs of ranks of the same real job
(corpora/multirank, a real Slurm) that ran the same steps and printed no failure."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from conftest import ROOT, run_cli

from failclass.logs.diff import Templates, new_lines, template, templates_of
from failclass.logs.ranks import read_lines
from failclass.logs.text import blocks_of_text

ATTEMPT = ROOT / "corpora" / "multirank" / "attempts" / "srun_files__sigsegv_reported__r0of8__0"
FAILED = ATTEMPT / "train-16-node0-0.out"
GOOD = [ATTEMPT / "train-16-node1-2.out", ATTEMPT / "train-16-node1-3.out"]


def test_times_steps_losses_and_ranks_do_not_tell_lines_apart() -> None:
    failed, good = read_lines(FAILED), read_lines(GOOD[0])
    assert template(failed[2]) == template(good[2])  # "... INFO [rank0] train: step 0 loss 0.0653" and rank 2's


def test_the_lines_no_good_run_printed_start_with_the_failure() -> None:
    found = new_lines(read_lines(FAILED), set().union(*(templates_of(read_lines(path)) for path in GOOD)))
    assert found[0].text == "Fatal Python error: Segmentation fault" and found[0].line == 6
    assert not any("loss" in new.text for new in found)  # every step line was printed by the good ranks too


def test_the_command_prints_them_and_says_how_many_lines_they_cover(tmp_path: Path) -> None:
    done = run_cli("diff", str(FAILED), *map(str, GOOD))
    assert done.returncode == 0, done.stderr
    head, first = done.stdout.splitlines()[:2]
    assert head.endswith("8 of 15 lines in 8 templates no good run printed")
    assert first == "    line 6: Fatal Python error: Segmentation fault"
    as_json = json.loads(run_cli("diff", "--json", "--limit", "1", str(FAILED), str(GOOD[0])).stdout)
    assert [n["text"] for n in as_json["new"]] == ["Fatal Python error: Segmentation fault"]
    missing = run_cli("diff", str(FAILED), str(tmp_path / "none.log"))
    assert missing.returncode != 0 and "none.log" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


def test_a_run_streamed_in_blocks_has_the_templates_its_lines_have() -> None:
    """What the store keeps of a good run (collected while the classifier reads it, block by
    block, lines cut across blocks) is what `failclass diff` computes line by line."""
    for log in (ROOT / "corpora" / "passed" / "runs" / "train_progress_bar_1_warnings.log", GOOD[0]):
        data = log.read_bytes()
        kept = Templates()
        for _ in kept.watch(blocks_of_text(data, block_size=97)):
            pass
        lines = data.decode().split("\n")[:-1]
        assert kept.lines == len(lines) and kept.counts == Counter(t for t in map(template, lines) if t)
