"""Leave-repository-out cross-validation: folds by repository, rules written only from a
fold's repositories left out of it, every development log scored exactly once."""

from __future__ import annotations

from failclass.classifier import Classifier
from failclass.model.corpus import read_manifest
from failclass.model.crossval import FOLDS, cross_validate, fold_of, repository_of, without_fold, written_from


def test_repository_of_a_source() -> None:
    assert repository_of("https://github.com/NVIDIA/nccl/issues/1235#issuecomment-9") == "nvidia/nccl"
    assert repository_of("https://discuss.pytorch.org/t/ddp-hangs/1234") == "discuss.pytorch.org"
    assert repository_of("scenario:cpu_oom__python_memoryerror") == "scenario:cpu_oom__python_memoryerror"
    assert fold_of("https://github.com/NVIDIA/nccl/issues/1") == fold_of("https://github.com/nvidia/nccl/pull/2")


def test_a_fold_loses_exactly_the_rules_written_only_from_its_repositories(classifier: Classifier) -> None:
    rules = classifier.ruleset
    for fold in range(FOLDS):
        kept = {rule.id for rule in without_fold(rules, fold).rules}
        for rule in rules.rules:
            assert (rule.id in kept) != written_from(rule, fold)
    assert sum(len(rules.rules) - len(without_fold(rules, fold).rules) for fold in range(FOLDS)) > 50


def test_every_development_log_is_scored_once_by_a_model_that_never_saw_its_repository(classifier: Classifier) -> None:
    chosen = [e for e in read_manifest() if e.split != "holdout" and e.reason in ("gpu_oom", "syntax_error", "no_signature")]
    evaluation, folds = cross_validate(chosen, classifier.ruleset, threshold=0.5)
    failed = [e for e in chosen if e.outcome == "failed"]
    assert sum(f["logs"] for f in folds) == len(chosen)
    assert len(evaluation.scores["rules+model"].truth) == len(failed)
    assert evaluation.scores["rules"].accuracy > 0.8  # these two reasons' rules generalise well
