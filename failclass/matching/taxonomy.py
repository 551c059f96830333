"""Failure reasons and their categories, loaded from signatures/taxonomy.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import yaml

from failclass.errors import ConfigError
from failclass.resources import SIGNATURES
from failclass.yamlload import SafeLoader

BUILTIN_DIR = SIGNATURES
NO_SIGNATURE = "no_signature"


@dataclass(frozen=True)
class Reason:
    id: str
    name: str
    categories: tuple[str, ...]
    consequence: bool = False  # names what followed a root cause (a fatal signal, a launcher's report): see matching.roles
    preemption: bool = False  # the scheduler took the GPUs back: a killed attempt of it is a failure
    scheduler: tuple[tuple[str, str], ...] = ()  # (scheduler, its word for an end of this reason)


@dataclass(frozen=True)
class Taxonomy:
    reasons: dict[str, Reason]
    categories: dict[str, str]

    def __getitem__(self, reason_id: str) -> Reason:
        return self.reasons[reason_id]

    def __contains__(self, reason_id: object) -> bool:
        return reason_id in self.reasons

    @cached_property
    def preemptions(self) -> frozenset[str]:
        """Reasons whose killed attempts count as failures (Table 7 counts preempted jobs)."""
        return frozenset(r.id for r in self.reasons.values() if r.preemption)

    @cached_property
    def scheduler_words(self) -> dict[str, dict[str, str]]:
        """Per scheduler, its words for how a job ended -> the reason each is evidence of."""
        words: dict[str, dict[str, str]] = {}
        for reason in self.reasons.values():
            for scheduler, word in reason.scheduler:
                words.setdefault(scheduler, {})[word] = reason.id
        return words

    def names(self) -> dict[str, str]:
        """Reason id -> its name in Table 7."""
        return {r.id: r.name for r in self.reasons.values()}


def load_taxonomy(path: Path) -> Taxonomy:
    """Read and check a taxonomy file: unique ids, known categories."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read taxonomy: {exc}") from exc
    categories = dict(data.get("categories") or {})
    reasons: dict[str, Reason] = {}
    for entry in data.get("reasons") or []:
        rid = entry.get("id")
        if not rid or rid in reasons:
            raise ConfigError(f"{path}: missing or duplicate reason id {rid!r}")
        cats = tuple(entry.get("categories") or ())
        unknown = [c for c in cats if c not in categories]
        if unknown:
            raise ConfigError(f"{path}: reason {rid}: unknown categories {unknown}")
        flags = (bool(entry.get("consequence", False)), bool(entry.get("preemption", False)))
        words = tuple((name, str(word)) for name, listed in (entry.get("scheduler") or {}).items() for word in listed)
        reasons[rid] = Reason(rid, str(entry.get("name") or rid), cats, *flags, words)
    if NO_SIGNATURE not in reasons:
        raise ConfigError(f"{path}: the taxonomy must define {NO_SIGNATURE!r}")
    return Taxonomy(reasons, categories)


@cache
def builtin_taxonomy() -> Taxonomy:
    return load_taxonomy(BUILTIN_DIR / "taxonomy.yaml")
