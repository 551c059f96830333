"""Leave-repository-out cross-validation: generalisation measured the way it is judged,
on logs from repositories nothing was learnt from.

The development side (public excerpts, produced runs, passed runs) is cut into FOLDS
folds by repository: a GitHub thread's owner/name, another site's host, a scenario's
name (its runs), so that one repository's logs are all in one fold. For each fold, a
model is fitted on the other folds, and every rule whose real examples all come from
the fold's repositories is left out (it was written from them); the fold is then
classified by rules alone, rules plus that model, and the model alone.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from failclass.classifier import Classifier
from failclass.matching.rules import Rule, RuleSet
from failclass.model.artifact import LoadedModel
from failclass.model.corpus import Entry
from failclass.model.estimator import FailureTextModel
from failclass.model.evaluation import Evaluation, merged, score
from failclass.model.training import texts_of

FOLDS = 5
_GITHUB = re.compile(r"https?://(?:www\.)?github\.com/([^/#?]+/[^/#?]+)")
_HOST = re.compile(r"https?://([^/#?]+)")


def repository_of(source: str) -> str:
    """The repository or site a log comes from (see the module's docstring)."""
    if found := _GITHUB.match(source):
        return found.group(1).lower()
    if found := _HOST.match(source):
        return found.group(1).lower()
    return source.split("#", 1)[0]


def fold_of(source: str) -> int:
    return int(hashlib.sha1(repository_of(source).encode()).hexdigest(), 16) % FOLDS


def written_from(rule: Rule, fold: int) -> bool:
    """Whether every real example of the rule comes from the fold's repositories."""
    sources = [example.source for example in rule.positives if example.source]
    return bool(sources) and all(fold_of(source) == fold for source in sources)


def without_fold(ruleset: RuleSet, fold: int) -> RuleSet:
    """The rule set less the rules written from the fold's repositories (the endings stay)."""
    return replace(ruleset, rules=tuple(rule for rule in ruleset.rules if not written_from(rule, fold)))


def cross_validate(
    entries: Sequence[Entry],
    ruleset: RuleSet,
    threshold: float,
    params: dict[str, Any] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[Evaluation, list[dict[str, Any]]]:
    """The merged evaluation of every fold, and what each fold held out; ``on_progress``
    hears (logs scored, logs) across the folds."""
    development = [e for e in entries if e.split in ("train", "test")]
    parts, folds = [], []
    for fold in range(FOLDS):
        held = [e for e in development if fold_of(e.source) == fold]
        learn = [e for e in development if fold_of(e.source) != fold and e.outcome != "killed"]  # killed: scored only
        model = FailureTextModel(**(params or {})).fit(texts_of(learn), [e.reason for e in learn])
        rules = without_fold(ruleset, fold)
        loaded = LoadedModel.fitted(model, threshold)
        scored = sum(fold_of(e.source) < fold for e in development)  # by the folds before

        def advance(done: int, _: int, before: int = scored) -> None:
            if on_progress is not None:
                on_progress(before + done, len(development))

        parts.append((held, score(held, Classifier(rules), Classifier(rules, model=loaded), f"fold {fold}", advance)))
        repositories = {repository_of(e.source) for e in held}
        folds.append(
            {
                "fold": fold,
                "logs": len(held),
                "repositories": len(repositories),
                "rules_left_out": len(ruleset.rules) - len(rules.rules),
            }
        )
    return merged(f"leave-repository-out, {FOLDS} folds", parts), folds
