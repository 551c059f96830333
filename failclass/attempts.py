"""Attempt facts: what the scheduler knows of one run of a job, besides its log, and what
the scheduler itself says ended it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

STATUSES = ("passed", "failed", "killed", "unsuccessful")


@dataclass(frozen=True)
class Attempt:
    """One attempt of a job (attempt numbers start at 1)."""

    job_id: str
    attempt: int
    user: str
    vc: str = "default"
    status: str = "failed"
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    gpus: int = 0
    gpu_type: str | None = None
    nodes: tuple[str, ...] = ()
    exit_code: int | None = None
    signal: int | None = None
    inputs: tuple[str, ...] = field(default=())
    logs: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.job_id or not self.user:
            raise ValueError("an attempt needs a job id and a user")
        if self.attempt < 1:
            raise ValueError(f"attempt numbers start at 1, got {self.attempt}")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.gpus < 0:
            raise ValueError("gpus cannot be negative")

    def facts(self) -> dict[str, Any]:
        """Every field, the tuples as lists: what a database row holds."""
        return {f.name: list(value) if isinstance(value := getattr(self, f.name), tuple) else value for f in fields(self)}

    def to_json(self) -> dict[str, Any]:
        """The facts as a JSON body (times in ISO 8601)."""
        return {name: value.isoformat() if isinstance(value, datetime) else value for name, value in self.facts().items()}

    @classmethod
    def from_facts(cls, facts: Mapping[str, Any]) -> Attempt:
        converted: dict[str, Any] = {name: tuple(value) if isinstance(value, list) else value for name, value in facts.items()}
        return cls(**converted)

    @property
    def runtime_minutes(self) -> float | None:
        """Runtime to failure (or to the end), in minutes, when start and end are known."""
        if self.start_time is None or self.end_time is None:
            return None
        return max((self.end_time - self.start_time).total_seconds(), 0.0) / 60


@dataclass(frozen=True)
class SchedulerEvidence:
    """The scheduler's own word on how an attempt ended (a Slurm job state, a pod's
    termination reason), when it names a cause: the failure reason it is evidence of
    (docs/TAXONOMY.md), a rule id to count the retry budget by, and the scheduler's lines
    that say so (a node's record among them names the node)."""

    reason: str
    rule_id: str
    lines: tuple[str, ...]
