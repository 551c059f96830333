"""Reading what a log is made of: Python tracebacks with their frames and exceptions,
found in the tail of a log with their true line numbers and offsets."""

from __future__ import annotations

import random
import re

from conftest import ROOT

from failclass.classifier import Classifier
from failclass.logs.text import Tail, blocks_of_text
from failclass.logs.tracebacks import exceptions_in
from failclass.matching.rules import load_rules

RULES = load_rules()
PREFIX = re.compile(RULES.line_start)


def strip(text: str) -> str:
    return text[PREFIX.match(text).end() :]  # type: ignore[union-attr]


def numbered(text: str) -> list[tuple[int, int, str]]:
    return [(n + 1, 0, line) for n, line in enumerate(text.splitlines())]


def test_a_traceback_is_read_whole_frames_and_exception() -> None:
    log = (ROOT / "corpora/public/model_ckpt_error/ast_torch_save_no_space_unexpected_pos.log").read_text()
    raised = list(exceptions_in(numbered(log), strip))
    in_save = [r for r in raised if any(f.file.endswith("torch/serialization.py") and f.function == "save" for f in r.frames)]
    assert in_save and in_save[0].name == "OSError" and "No space left on device" in in_save[0].message
    assert log.splitlines()[in_save[0].line - 1].strip() == in_save[0].text.strip()


def test_rank_prefixed_interleaved_output_still_gives_each_exception() -> None:
    log = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank0]: Traceback (most recent call last):\n[rank1]:   File "/opt/train.py", line 9, in <module>\n'
        "[rank0]:   File \"/opt/data.py\", line 3, in load\n[rank1]: KeyError: 'RANK'\n"
        "[rank0]: FileNotFoundError: [Errno 2] No such file or directory: '/data/train.json'\n"
    )
    names = [raised.name for raised in exceptions_in(numbered(log), strip)]
    assert names == ["KeyError", "FileNotFoundError"]


def test_chained_exceptions_each_count() -> None:
    log = (ROOT / "corpora/public/gpu_oom/fo_tf_oom_maxpool3d_sess_run.log").read_text()
    raised = list(exceptions_in(numbered(log), strip))
    assert [r.name for r in raised] == ["ResourceExhaustedError", "ResourceExhaustedError"]
    assert raised[0].line < raised[1].line and raised[1].frames


def test_tail_lines_keep_their_true_numbers_and_offsets() -> None:
    rng = random.Random(7)
    for _ in range(200):
        lines = ["".join(rng.choice("ab x") for _ in range(rng.randrange(30))) for _ in range(rng.randrange(1, 300))]
        text = "\n".join(lines) + ("\n" if rng.random() < 0.5 else "")
        tail = Tail(size=rng.choice([50, 300, 1 << 16]))
        for _ in tail.watch(blocks_of_text(text, block_size=rng.choice([7, 4096]))):
            pass
        total = len(lines)
        expected = [(n, s) for n, s in tail.numbered_lines(total) if "x" in s]
        ends = [i + 1 for i, byte in enumerate(tail.data) if byte == ord("x")]  # where a match of "x" ends
        found = list(tail.lines_ending(ends, total))
        assert [(n, s) for n, _, s in found] == expected
        assert all(text.encode()[offset : offset + len(s)].decode() == s for _, offset, s in found)


def test_the_exception_rule_beats_the_bare_traceback(classifier: Classifier) -> None:
    """Principle 2: FileNotFoundError on an input inside a data loader is an input problem,
    not "Traceback from crash" (a real excerpt)."""
    result = classifier.classify_path(ROOT / "corpora/public/incorrect_inputs/pseco_mmdet_annotations_not_found.log")
    assert (result.reason, result.rule_id) == ("incorrect_inputs", "incorrect_inputs.missing_input_file_exception")
    assert any(r.reason == "traceback_from_crash" for r in result.also_matched)


def test_a_traceback_ends_on_an_exception_whose_name_has_no_error_suffix() -> None:
    """``zipfile.BadZipFile`` (real output of the corrupt-archives scenario) ends its
    traceback; a bare capitalised word outside a traceback is not an exception."""
    log = (ROOT / "corpora/produced/incorrect_inputs/incorrect_inputs__corrupt_archives__0.log").read_text()
    raised = [r for r in exceptions_in(numbered(log), strip) if r.name == "BadZipFile"]
    assert raised and raised[0].type == "zipfile.BadZipFile" and raised[0].message == "File is not a zip file"
    assert raised[0].frames and raised[0].frames[-1].file.endswith("zipfile.py")
    assert not list(exceptions_in(numbered("zipfile.BadZipFile: File is not a zip file\nStopIteration\n"), strip))


def test_a_traceback_behind_an_unknown_prefix_is_read_through_it() -> None:
    """Lightning's ``[root.train_work] `` prefix is in no rule file: the traceback's frames
    and exception are still read (a real excerpt)."""
    log = (ROOT / "corpora/public/output_node_error/Lightning-Universe_lightning-quick-start_31.log").read_text()
    raised = list(exceptions_in(numbered(log), strip))
    client = [r for r in raised if r.name == "ClientError"]
    assert client and client[0].type == "botocore.exceptions.ClientError" and "PutObject" in client[0].message
    assert client[0].frames


def test_an_excerpt_cut_after_its_traceback_header_still_has_frames() -> None:
    """A real excerpt that starts at its first frame: the frames are read, so the save call
    they pass through decides (a checkpoint write, not a bare IOError)."""
    log = (ROOT / "corpora/public/model_ckpt_error/farizrahman4u_seq2seq_86.log").read_text()
    assert "Traceback (most recent call last)" not in log
    (raised,) = [r for r in exceptions_in(numbered(log), strip) if r.name == "IOError"]
    assert any(f.function == "save_model" for f in raised.frames)


def test_a_cxx_exception_that_ended_the_process_is_read_with_its_what_message() -> None:
    """``terminate called ... 'gloo::IoException'`` then ``what():`` (a real excerpt, behind
    a CI runner's prefix that no rule file knows) is one exception: type and message."""
    log = (ROOT / "corpora/public/mpi_runtime_failure/horovod_tf114_gloo_http_store_wait_timeout_50_nodes.log").read_text()
    (thrown, *_) = [r for r in exceptions_in(numbered(log), strip) if r.name == "IoException"]
    assert thrown.type == "gloo.IoException" and "Wait timeout" in thrown.message
    assert "what():" in log.splitlines()[thrown.line - 1]


def test_the_cxx_exception_type_decides_over_the_terminate_consequence(classifier: Classifier) -> None:
    """Principle 1: the gloo I/O failure names the cause; ``terminate called`` (a core-dump
    consequence) only says how the process died."""
    log = ROOT / "corpora/public/mpi_runtime_failure/horovod_tf114_gloo_http_store_wait_timeout_50_nodes.log"
    result = classifier.classify_path(log)
    assert (result.reason, result.rule_id) == ("mpi_runtime_failure", "mpi_runtime_failure.gloo_io_exception")
    assert any(r.rule_id == "core_dump.cxx_terminate" for r in result.also_matched)
