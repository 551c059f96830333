"""The endings (signatures/endings.yaml): what a log's last lines say of how a run ended,
data that decides outcomes, checked when loaded and run by `failclass rules test`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT

from failclass.classifier import Classifier
from failclass.errors import ConfigError
from failclass.logs.region import shows_failure
from failclass.matching.endings import ENDINGS_FILE, Ending, Endings, load_endings
from failclass.matching.examples import Example
from failclass.matching.ruletest import ending_problems, run_examples
from failclass.matching.taxonomy import BUILTIN_DIR, builtin_taxonomy

Edit = Callable[[dict[str, Any]], None]


def entry(endings: Endings, entry_id: str) -> Ending:
    return next(e for e in (*endings.no_cause, *endings.benign) if e.id == entry_id)


def without(endings: Endings, entry_id: str) -> Endings:
    return replace(
        endings,
        no_cause=tuple(e for e in endings.no_cause if e.id != entry_id),
        benign=tuple(e for e in endings.benign if e.id != entry_id),
    )


def test_the_shipped_endings_load_with_sources_and_negatives() -> None:
    endings = load_endings(BUILTIN_DIR / ENDINGS_FILE, builtin_taxonomy())
    entries = (*endings.no_cause, *endings.benign)
    assert {e.id for e in endings.no_cause} >= {"slurm_cancelled", "torchrun_sigterm", "sagemaker_job_failed"}
    assert len({e.id for e in entries}) == len(entries)
    assert all(e.positives and e.negatives for e in entries)
    assert all(x.source and x.source.startswith(("https://", "scenario:")) for e in entries for x in e.positives + e.negatives)


def _set(*keys: str | int, value: object) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        target: Any = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


def _delete(*keys: str | int) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        target: Any = data
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return edit


@pytest.mark.parametrize(
    ("edit", "where", "problem"),
    [
        (_set("no_cause", 0, "patterns", 0, value="cancelled at ("), "no_cause[0].patterns[0]", "does not compile"),
        (_set("benign", 3, "patterns", 0, value="(?i)entering retry loop"), "benign[3].patterns[0]", "does not compile"),
        (_delete("benign", 0, "examples", "positive", 0, "source"), "benign[0].examples.positive[0].source", "is required"),
        (
            _set("benign", 0, "examples", "positive", 0, "source", value="from memory"),
            "benign[0].examples.positive[0].source",
            "must be a URL",
        ),
        (_set("no_cause", 1, "examples", "negative", value=[]), "no_cause[1].examples.negative", "must be a non-empty list"),
        (_set("no_cause", 2, "ignore_case", value="yes"), "no_cause[2].ignore_case", "'yes' is not true or false"),
        (_set("benign", 1, "means", value="nothing failed"), "benign[1]", "unknown keys ['means']"),
        (_set("benign", 0, "id", value="slurm_cancelled"), "benign[0].id", "'slurm_cancelled' is the id of another entry"),
        (
            _set("benign", 2, "examples", "positive", 0, "classify_as", value="gpu_oom_x"),
            "benign[2].examples.positive[0].classify_as",
            "unknown reason",
        ),
        (_delete("benign"), "benign", "is required"),
    ],
)
def test_a_broken_endings_file_is_refused_with_its_file_and_key_path(
    tmp_path: Path, edit: Edit, where: str, problem: str
) -> None:
    data = yaml.safe_load((BUILTIN_DIR / ENDINGS_FILE).read_text())
    edit(data)
    path = tmp_path / ENDINGS_FILE
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as raised:
        load_endings(path, builtin_taxonomy())
    assert str(raised.value).startswith(f"{path}: {where}: {problem}"), str(raised.value)


def test_an_ending_example_that_does_not_do_what_it_says_fails_rules_test(classifier: Classifier) -> None:
    endings = classifier.ruleset.endings
    slurm = entry(endings, "slurm_cancelled")
    swapped = replace(slurm, positives=slurm.negatives, negatives=slurm.positives)
    assert dict(ending_problems(classifier, "no_cause", swapped)) == {
        "examples.positive[0]": "the entry does not match it",
        "examples.negative[0]": "the entry matches it",
        "examples.negative[1]": "the entry matches it",
    }
    elsewhere = replace(slurm, positives=(replace(slurm.positives[0], classify_as="gpu_oom"),))
    assert dict(ending_problems(classifier, "no_cause", elsewhere)) == {
        "examples.positive[0]": "classified as no_signature by none, expected gpu_oom"
    }
    no_failure_word = Example(  # a warning, but one that says no failure word
        "/opt/conda/envs/python35-paddle120-env/lib/python3.7/site-packages/paddle/nn/layer/norm.py:654: "
        "UserWarning: When training, we now always track global mean and variance.",
        "https://github.com/PaddlePaddle/PaddleSeg/issues/2506",
    )
    recorded = Example("ERROR: error code -6", "https://github.com/NVIDIA/DIGITS/issues/84")  # an error-level record
    warning, exit_status = entry(endings, "warning"), entry(endings, "exit_status")
    assert list(ending_problems(classifier, "benign", replace(warning, positives=(no_failure_word,)))) == [
        ("examples.positive[0]", "it says no failure word: the entry changes nothing for it")
    ]
    assert list(ending_problems(classifier, "benign", replace(exit_status, positives=(recorded,)))) == [
        ("examples.positive[0]", "it shows a failure all the same")
    ]
    count, failures = run_examples(Classifier(replace(classifier.ruleset, endings=replace(endings, no_cause=(swapped,)))))
    assert count > 1000 and [str(f).split(": ", 1)[1] for f in failures][:1] == [
        "no_cause ending slurm_cancelled: examples.positive[0]: the entry does not match it"
    ]


def test_the_endings_decide_the_outcome(classifier: Classifier) -> None:
    """Without its entry, SageMaker's client wrapper is no longer an end without a cause
    (its exception line fires a generic rule), and wandb's retried error is a failure line."""
    endings = classifier.ruleset.endings
    wrapper = ROOT / "corpora/public/no_signature/aws_amazon-sagemaker-examples_3444.log"
    assert classifier.classify_path(wrapper).reason == "no_signature"
    unaware = Classifier(replace(classifier.ruleset, endings=without(endings, "sagemaker_job_failed")))
    assert unaware.classify_path(wrapper).reason == "traceback_from_crash"
    retried = ["wandb: Network error (TransientError), entering retry loop."]
    assert not shows_failure(retried, endings) and shows_failure(retried, without(endings, "client_retries"))
