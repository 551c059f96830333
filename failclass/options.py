"""One way to build a classifier, for every entry point (CLI, service, batch workers,
the scheduler hook): the same options honoured everywhere.

``ClassifierOptions`` is a small frozen value, so it travels to batch worker processes
and Dask workers, which build their own classifier from it once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from failclass.classifier import Classifier
from failclass.matching.rules import RuleSet, load_rules
from failclass.model.artifact import LoadedModel, load_configured


@dataclass(frozen=True)
class ClassifierOptions:
    """What a user can say about the classifier: extra rule folders (FAILCLASS_RULES_DIR
    is added by the loader), the model (None: FAILCLASS_MODEL, else the built-in one),
    rules only, and the model's confidence threshold (None: the one chosen by training)."""

    rules_dirs: tuple[Path, ...] = ()
    model: Path | None = None
    no_model: bool = False
    threshold: float | None = None

    def ruleset(self) -> RuleSet:
        return load_rules(self.rules_dirs)

    def fallback(self, ruleset: RuleSet, warn: Callable[[str], None], required: bool = False) -> LoadedModel | None:
        """The fallback model, None for rules only. A model named by the user (or
        ``required``) must load: ModelError, a ConfigError, otherwise."""
        if self.no_model and not required:
            return None
        loaded = load_configured(self.model, set(ruleset.taxonomy.reasons), warn, required)
        return loaded if loaded is None or self.threshold is None else loaded.with_threshold(self.threshold)

    def build(self, warn: Callable[[str], None], with_model: bool = True) -> Classifier:
        """The classifier these options describe; ConfigError for invalid rules or model."""
        ruleset = self.ruleset()
        return Classifier(ruleset, model=self.fallback(ruleset, warn) if with_model else None)


def _ignore(_: str) -> None:
    """A warning nobody reads: batch workers report through their results instead."""


def build_quietly(options: ClassifierOptions) -> Classifier:
    """For worker processes, whose parent already reported any warning."""
    return options.build(_ignore)
