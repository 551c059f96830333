"""The causes file as a registry: every log pattern has a real line behind it, every
source is a corpus file with its URL, and a bad file is refused with where and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from failclass.errors import ConfigError
from failclass.waste.causes import load_causes

LINES = Path(__file__).resolve().parents[2] / "corpora" / "waste_logs"
STUDY_CATEGORIES = {
    "interactive_job", "gpu_oversubscription", "unreleased_job", "non_dl_job",
    "improper_batch_size", "insufficient_gpu_memory", "model_checkpointing",
    "inefficient_host_gpu_transfer", "data_preprocessing", "remote_data_read", "external_data_usage",
    "intermediate_result_upload", "data_exchange", "long_library_installation", "api_misuse",
}  # fmt: skip


def test_the_built_in_causes_cover_gao_et_al_s_fifteen_categories():
    causes = load_causes()
    assert {c.id for c in causes} >= STUDY_CATEGORIES
    assert {c.dimension for c in causes} == {"job", "model", "data", "library"}


@pytest.mark.parametrize("cause", [c for c in load_causes() if c.log], ids=lambda c: c.id)
def test_every_log_pattern_matches_a_real_line_of_its_sources(cause):
    assert cause.sources, f"{cause.id} has log patterns but no source"
    lines = []
    for source in cause.sources:
        assert (LINES / source).is_file() and (LINES / source).with_suffix(".url").is_file(), source
        lines += (LINES / source).read_text(encoding="utf-8").splitlines()
    for pattern in cause.log.patterns:
        if any(pattern.search(line) for line in lines):
            continue
        # a pattern for another framework's form of the message: it must match some real line
        every = [line for path in LINES.glob("*.log") for line in path.read_text(encoding="utf-8").splitlines()]
        assert any(pattern.search(line) for line in every), f"{cause.id}: {pattern.pattern!r} matches no real line"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("causes: {}", "a `causes` list"),
        ("causes: [{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot]}]", "needs log evidence"),
        (
            "causes: [{id: x, dimension: mood, name: X, fix: y, intervals: [idle_slot], series: {job_kind: batch}}]",
            "dimension 'mood'",
        ),
        (
            "causes: [{id: x, dimension: model, name: X, fix: y, intervals: [nap], series: {job_kind: batch}}]",
            "unknown interval kinds",
        ),
        ("causes: [{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot], series: {colour: red}}]", "unknown series"),
        (
            "causes: [{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot], series: {job_low: true}, confidence: sure}]",
            "confidence 'sure'",
        ),
        (
            "causes: [{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot], log: {where: during, patterns: ['(a+)+$']}}]",
            "catastrophic",
        ),
        (
            "causes: [{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot], log: {where: during, patterns: ['(']}}]",
            "pattern '\\('",
        ),
        (
            "causes: [{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot], log: {where: someday, patterns: [a]}}]",
            "`where`",
        ),
    ],
)
def test_a_bad_causes_file_is_refused_with_the_reason(tmp_path, body, message):
    path = tmp_path / "causes.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=message):
        load_causes(path)


def test_an_anchored_pattern_finds_its_message_after_a_rank_tag_and_a_collectors_time():
    """`^` is the message's start, as for the signature rules: after `[rank0]:`, a logging
    prefix or a collector's time stamp, not only at the line's first character (the line is
    datasets' own, from corpora/waste_logs/preprocessing--hf-datasets-generating-train-split-bigbio.log)."""
    preprocessing = next(c for c in load_causes() if c.id == "data_preprocessing")
    assert preprocessing.log is not None
    line = next(
        text
        for text in (LINES / "preprocessing--hf-datasets-generating-train-split-bigbio.log").read_text().splitlines()
        if text.startswith("Generating train split")
    )
    for prefix in ("", "[rank0]:", "2024-05-03T09:16:33.597483309Z [rank0]:", "2024-05-01 07:41:32,106 - INFO - "):
        assert preprocessing.log.matches(prefix + line), prefix
    assert not preprocessing.log.matches("echo " + line)  # not the message's start
