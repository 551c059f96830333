"""Failure reasons and their categories, loaded from signatures/taxonomy.yaml (its schema:
``TaxonomyFile`` and ``ReasonEntry``, checked by failclass.schema)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from failclass.resources import SIGNATURES
from failclass.schema import Invalid, allowed, load

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


@dataclass(frozen=True)
class ReasonEntry:
    """A reason as taxonomy.yaml writes it (a Reason, with its scheduler words by scheduler)."""

    name: str
    id: str = allowed(fullmatch=r"[a-z0-9_]+")
    categories: tuple[str, ...] = ()
    consequence: bool = False
    preemption: bool = False
    scheduler: dict[str, tuple[str, ...]] = allowed({})


@dataclass(frozen=True)
class TaxonomyFile:
    categories: dict[str, str]
    reasons: tuple[ReasonEntry, ...] = allowed(unique="id")

    def __post_init__(self) -> None:
        for index, entry in enumerate(self.reasons):
            unknown = [c for c in entry.categories if c not in self.categories]
            if unknown:
                raise Invalid(f"unknown categories {unknown}; known: {sorted(self.categories)}", f"reasons[{index}].categories")
        if NO_SIGNATURE not in {entry.id for entry in self.reasons}:
            raise Invalid(f"the taxonomy must define {NO_SIGNATURE!r}", "reasons")


def load_taxonomy(path: Path) -> Taxonomy:
    """Read and check a taxonomy file (ConfigError ``file: key.path: problem``)."""
    written = load(path, TaxonomyFile, "the taxonomy")
    reasons = {}
    for e in written.reasons:
        words = tuple((scheduler, word) for scheduler, listed in e.scheduler.items() for word in listed)
        reasons[e.id] = Reason(e.id, e.name, e.categories, e.consequence, e.preemption, words)
    return Taxonomy(reasons, written.categories)


@cache
def builtin_taxonomy() -> Taxonomy:
    return load_taxonomy(BUILTIN_DIR / "taxonomy.yaml")
