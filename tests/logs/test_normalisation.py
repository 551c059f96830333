"""Normalisation before matching: prefixes, carriage returns, ANSI codes, CRLF, bad bytes.

The rules here are test-local (an operator folder) so the mechanics are checked apart
from the built-in rule set; their lines are real output (bash's job-control message and
PyTorch's CUDA OOM message)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import ROOT

from failclass.classifier import Classifier
from failclass.matching.rules import load_rules

RULES = """
reason: cpu_oom
rules:
  - id: cpu_oom.test_killed
    kind: explicit
    description: bash reports its child killed by SIGKILL
    patterns: ['^Killed$']
    examples:
      positive:
        - source: scenario:cpu_oom__sigkill_killed
          text: "Killed"
"""
GPU_RULES = """
reason: gpu_oom
rules:
  - id: gpu_oom.test_torch
    kind: explicit
    priority: 85
    description: PyTorch CUDA OOM
    patterns: ['^(?:torch\\.OutOfMemoryError|RuntimeError): CUDA out of memory']
    examples:
      positive:
        - source: https://github.com/pytorch/pytorch/issues/16417
          text: "RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB"
"""
OOM = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Classifier:
    folder = tmp_path_factory.mktemp("rules")
    (folder / "cpu_oom.yaml").write_text(RULES)
    (folder / "gpu_oom.yaml").write_text(GPU_RULES)
    return Classifier(load_rules([folder], builtin=False))


@pytest.mark.parametrize(
    "prefix",
    [
        b"[1,3]<stderr>:",
        b"[rank3]: ",
        b"(WorkerDict pid=12) [rank3]: ",
        b"algo-1-xyz | ",
        b"E1119 12:00:00.123 api.py:882] ",
        b"2024-05-01 12:00:00,123 - ",
        b"[default0]:",
        b"12: ",
        b"    ",
    ],
)
def test_anchored_rule_matches_after_known_prefixes(local: Classifier, prefix: bytes) -> None:
    result = local.classify_bytes(b"epoch 3 step 10\n" + prefix + OOM + b"\n")
    assert result.reason == "gpu_oom"
    assert result.evidence[0].line == 2


def test_anchor_is_not_a_substring_match(local: Classifier) -> None:
    # The message quoted inside another sentence is not the message.
    result = local.classify_bytes(b"see https://x.org/faq: why torch.OutOfMemoryError: CUDA out of memory happens\n")
    assert result.reason == "no_signature"


def test_progress_bar_glued_to_killed(local: Classifier) -> None:
    log = b"Epoch 1:  38%|###8      | 3/8 [00:08<00:14]Killed\n"
    assert local.classify_bytes(log).rule_id == "cpu_oom.test_killed"


def test_carriage_return_progress_then_killed(local: Classifier) -> None:
    log = b"train\n 10%|#         | 1/10 [00:01<00:09]\r 20%|##        | 2/10 [00:02<00:08]\rKilled\n"
    result = local.classify_bytes(log)
    assert result.rule_id == "cpu_oom.test_killed"
    assert result.evidence[0].line == 2
    assert result.evidence[0].text == "Killed"


def test_killed_inside_a_word_is_not_killed(local: Classifier) -> None:
    assert local.classify_bytes(b"Worker 3 was Killed by the user? no: KilledProcesses=0\n").reason == "no_signature"


def test_crlf_and_ansi_colours(local: Classifier) -> None:
    log = b"step 1\r\n\x1b[31m\x1b[1mtorch.OutOfMemoryError\x1b[0m: CUDA out of memory. Tried\r\nKilled\r\n"
    result = local.classify_bytes(log)
    assert result.reason == "gpu_oom"
    assert result.evidence[0].text.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert {m.rule_id for m in result.also_matched} == {"cpu_oom.test_killed"}


def test_invalid_utf8_survives_as_replacement_characters(local: Classifier) -> None:
    log = b"\xff\xfe garbage \xc3\x28\n" + OOM + b" \xe2\x82\n"
    result = local.classify_bytes(log)
    assert result.reason == "gpu_oom"
    assert "\ufffd" in result.evidence[0].text


def test_gzip_log_is_read_transparently(local: Classifier, tmp_path: Path) -> None:
    path = tmp_path / "attempt.log"  # no .gz suffix: detected by its magic bytes
    path.write_bytes(gzip.compress(b"step\n" * 1000 + OOM + b"\n"))
    result = local.classify_path(path)
    assert (result.reason, result.evidence[0].line) == ("gpu_oom", 1001)


def test_line_numbers_across_block_boundaries(local: Classifier) -> None:
    # 3 MB of progress lines: the message lands after several 1 MB read blocks.
    progress = b"".join(b"step %07d loss 0.1234\n" % i for i in range(130_000))
    result = local.classify_bytes(progress + OOM + b"\n")
    assert result.evidence[0].line == 130_001
    assert result.lines == 130_001


def test_long_line_evidence_is_cut_around_the_match(local: Classifier) -> None:
    result = local.classify_bytes(b"x" * 100_000 + b" " + OOM[6:] + b" " + b"y" * 100_000)
    assert result.reason == "no_signature"  # not at a message start
    result = local.classify_bytes(b"x" * 100_000 + b"\n" + OOM + b" " + b"y" * 100_000)
    text = result.evidence[0].text
    assert text.startswith("torch.OutOfMemoryError") and text.endswith("…") and len(text) < 700


def test_anchored_match_after_a_false_candidate_in_the_same_block(local: Classifier) -> None:
    # "... was Killed" ends like the rule but is not at a message start; the real line
    # comes later in the same 1 MB piece and must still be found, with its own number.
    log = b"step 1\nworker 3 was Killed\n" + b"step 2\n" * 1000 + b"[rank0]: Killed\n"
    result = local.classify_bytes(log)
    assert result.rule_id == "cpu_oom.test_killed"
    assert result.evidence[0].line == 1003


def test_anchored_and_plain_matches_in_a_later_piece(local: Classifier) -> None:
    filler = b"".join(b"step %07d loss 0.1234\n" % i for i in range(300_000))  # several pieces
    result = local.classify_bytes(filler + b"[1,2]<stderr>:Killed\n")
    assert (result.rule_id, result.evidence[0].line) == ("cpu_oom.test_killed", 300_001)


def test_concurrent_scans_in_threads_agree(classifier: Classifier) -> None:
    from concurrent.futures import ThreadPoolExecutor

    logs = sorted((ROOT / "corpora" / "public").glob("*/*.log"))[:80]
    alone = [classifier.classify_path(p) for p in logs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda p: classifier.classify_path(p), logs * 3))
    assert together == alone * 3


def test_compiled_database_cache_is_reused_and_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from failclass.matching.cache import CACHE_KEEP

    monkeypatch.setenv("FAILCLASS_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "rules"
    folder.mkdir()
    for n in range(CACHE_KEEP + 2):  # a new rule set each time: a new database
        (folder / "gpu_oom.yaml").write_text(GPU_RULES.replace("CUDA out of memory", f"CUDA out of memory{n}"))
        Classifier(load_rules([folder], builtin=False))
    assert len(list(tmp_path.glob("rules-*.hsdb"))) == CACHE_KEEP
    (cached,) = sorted(tmp_path.glob("rules-*.hsdb"), key=lambda p: p.stat().st_mtime)[-1:]
    cached.write_bytes(b"garbage")  # a damaged cache file is recompiled, not trusted
    again = Classifier(load_rules([folder], builtin=False))
    assert again.classify_bytes(b"RuntimeError: CUDA out of memory9. x\n").reason == "gpu_oom"
