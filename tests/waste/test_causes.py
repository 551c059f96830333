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


CAUSE = "{id: x, dimension: model, name: X, fix: y, intervals: [idle_slot]"  # a cause, its mapping left open


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("causes: {}", "causes: {} is not a list"),
        (
            f"causes: [{CAUSE}}}]",
            "causes[0]: a cause needs log evidence, a declared kind or series conditions (or detectable: false)",
        ),
        (
            f"causes: [{CAUSE.replace('model', 'mood')}, series: {{job_kind: batch}}}}]",
            "causes[0].dimension: 'mood' is not one of ('job', 'model', 'data', 'library')",
        ),
        (
            f"causes: [{CAUSE}, series: {{job_low: true}}, confidence: sure}}]",
            "causes[0].confidence: 'sure' is not one of ('high', 'medium', 'low')",
        ),
        (
            f"causes: [{CAUSE.replace('idle_slot', 'nap')}, series: {{job_kind: batch}}}}]",
            "causes[0].intervals[0]: 'nap' is not one of "
            "('never_used', 'idle_slot', 'sudden_drop', 'low_phase', 'persistently_low')",
        ),
        (
            f"causes: [{CAUSE}, series: {{colour: red}}}}]",
            "causes[0].series: unknown keys ['colour']; known: ['job_kind', 'job_low', 'max_busy_pct', 'max_explained_share', "
            "'max_phase_share', 'max_util_pct', 'min_floor_pct', 'min_idle_share', 'min_low_share', 'min_phase_share', "
            "'other_gpus_used', 'peak_memory_above_pct', 'peak_memory_below_pct', 'synchronous_dips']",
        ),
        (
            f"causes: [{CAUSE}, series: {{other_gpus_used: 'no'}}}}]",
            "causes[0].series.other_gpus_used: 'no' is not true or false",
        ),
        (
            f"causes: [{CAUSE}, series: {{peak_memory_below_pct: 150}}}}]",
            "causes[0].series.peak_memory_below_pct: 150 must be <= 100",
        ),
        (
            f"causes: [{CAUSE}, log: {{where: during, patterns: ['(a+)+$']}}}}]",
            "causes[0].log.patterns[0]: '(a+)+$' nests unbounded quantifiers (catastrophic backtracking)",
        ),
        (
            f"causes: [{CAUSE}, log: {{where: during, patterns: ['(']}}}}]",
            "causes[0].log.patterns[0]: '(' does not parse: missing ), unterminated subpattern at position 0",
        ),
        (
            f"causes: [{CAUSE}, log: {{where: during, patterns: ['\\d+%']}}}}]",
            "causes[0].log.patterns[0]: '\\\\d+%' has no required literal of 3+ characters",  # the pattern's repr
        ),
        (
            f"causes: [{CAUSE}, log: {{where: someday, patterns: [Saving]}}}}]",
            "causes[0].log.where: 'someday' is not one of ('during', 'at_edge', 'before_idle_to_end', 'span', 'anywhere')",
        ),
        (
            f"causes: [{CAUSE}, log: {{where: during, patterns: [Saving], silent_after: true}}}}]",
            "causes[0].log.silent_after: true only with where: before_idle_to_end",
        ),
        (f"causes: [{CAUSE.replace('fix: y', 'fix: ' + repr(' '))}, declared_kind: batch}}]", "causes[0].fix: must not be empty"),
        (f"causes: [{CAUSE}, declared_kind: batch}}, {CAUSE}, declared_kind: batch}}]", "causes[1].id: 'x' repeats causes[0].id"),
        (f"causes: [{CAUSE.replace('id: x, ', '')}, declared_kind: batch}}]", "causes[0]: missing ['id']"),
    ],
)
def test_a_bad_causes_file_is_refused_in_one_line_with_its_place(tmp_path, body, line):
    path = tmp_path / "causes.yaml"
    path.write_text(body)
    with pytest.raises(ConfigError) as refused:
        load_causes(path)
    assert str(refused.value) == f"{path}: {line}"


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
