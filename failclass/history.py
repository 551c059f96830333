"""What the store remembers of earlier attempts and the policy reads: the failure being
decided, the job's prior attempts, the user's recent failures, holds, the blacklist and
node failures. Plain values, shared by the store (which fills them) and the policy (which
reads them); neither imports the other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from failclass.contracts import Classification, Origin
from failclass.logs.facts import Progress


@dataclass(frozen=True)
class Failure:
    """The classification facts the policy uses."""

    reason: str
    rule_id: str | None
    evidence: tuple[str, ...] = ()
    progress: Progress | None = None
    origin_node: str | None = None  # the node of the rank that failed first (failclass.logs.ranks)

    @classmethod
    def of(cls, classification: Classification, progress: Progress | None, origin: Origin | None = None) -> Failure:
        evidence = tuple(e.text for e in classification.evidence)
        return cls(classification.reason, classification.rule_id, evidence, progress, origin.node if origin else None)

    @property
    def signature(self) -> str:
        """What a retry budget is counted per: the rule, else the reason."""
        return self.rule_id or self.reason


@dataclass(frozen=True)
class PriorAttempt:
    attempt: int
    signature: str
    reason: str
    progress: Progress | None = None


@dataclass(frozen=True)
class Blacklisted:
    """An input on the blacklist: why, and the reason of the failures that put it there
    (None for an entry recorded before failclass kept it)."""

    why: str
    reason: str | None = None


@dataclass(frozen=True)
class History:
    """What happened before, as the store saw it (this attempt excluded)."""

    job_attempts: tuple[PriorAttempt, ...] = ()
    user_failures: Mapping[str, int] = field(default_factory=dict)  # reason -> failures in the window since release
    held_reasons: frozenset[str] = frozenset()
    blacklisted: Mapping[str, Blacklisted] = field(default_factory=dict)  # path -> why it is there
    input_failures: Mapping[str, Sequence[str]] = field(default_factory=dict)  # path -> job ids, one per failure
    node_jobs: Mapping[str, frozenset[str]] = field(default_factory=dict)  # node -> jobs with hardware failures
    nodes_seen: int = 0


@dataclass(frozen=True)
class HistoryNeeds:
    """Which parts of the history a decision can use (the rest is not read: a decision
    stays cheap as the store grows). None: not needed."""

    user_failures_since: datetime | None = None
    input_failures: bool = False
    nodes_since: datetime | None = None
