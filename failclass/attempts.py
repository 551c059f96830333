"""Attempt facts: what the scheduler knows of one run of a job, besides its log, and what
the scheduler itself says ended it.

`Attempt` is the one definition of the facts: the service's request body
(failclass.service.schemas.AttemptIn) is built from its fields, each bounded by the kind
of value its metadata names (``held``: what the database holds of it, in
failclass.service.fields), and the hook checks its facts against that body's schema."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Literal, get_args

Status = Literal["passed", "failed", "killed", "unsuccessful"]
STATUSES: tuple[Status, ...] = get_args(Status)


def held(kind: str, most: int | None = None, description: str | None = None) -> dict[str, Any]:
    """A field's bound at the door: the kind of value (a name, a row id, a node, a path...),
    for a list how many items at most (for a mapping, names to such values: how many names),
    and what the field means where its name does not say."""
    return {"held": kind, "most": most, "description": description}


class InvalidAttempt(ValueError):
    """Facts an attempt cannot have; names the field."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class Attempt:
    """One attempt of a job (attempt numbers start at 1)."""

    job_id: str = field(metadata=held("name"))
    attempt: int = field(metadata=held("row_id"))
    user: str = field(metadata=held("name"))
    vc: str = field(default="default", metadata=held("label"))
    status: Status = "failed"
    submit_time: datetime | None = field(default=None, metadata=held("time"))
    start_time: datetime | None = field(default=None, metadata=held("time"))
    end_time: datetime | None = field(default=None, metadata=held("time"))
    gpus: int = field(default=0, metadata=held("count"))
    gpu_type: str | None = field(default=None, metadata=held("gpu_type"))
    nodes: tuple[str, ...] = field(default=(), metadata=held("node", 4096))
    tasks_per_node: int | None = field(
        default=None, metadata=held("count", description="ranks per node: rank r ran on nodes[r // tasks_per_node]")
    )
    pods: Mapping[str, str] = field(  # not hashed: an attempt's hash is its other facts'
        default_factory=dict, hash=False, metadata=held("node", 4096, "pod name -> the node it ran on")
    )
    exit_code: int | None = field(default=None, metadata=held("int32"))
    signal: int | None = field(default=None, metadata=held("int32"))
    inputs: tuple[str, ...] = field(default=(), metadata=held("path", 1024))
    logs: tuple[str, ...] = field(
        default=(), metadata={**held("path", 1024), "description": "where the logs are, recorded as facts"}
    )

    def __post_init__(self) -> None:
        """The one check of attempt facts: the service's requests and the hook's facts alike."""
        for name in ("job_id", "user"):
            if not getattr(self, name):
                raise InvalidAttempt(name, "an attempt needs a job id and a user")
        if self.attempt < 1:
            raise InvalidAttempt("attempt", f"attempt numbers start at 1, got {self.attempt}")
        if self.status not in STATUSES:
            raise InvalidAttempt("status", f"must be one of {STATUSES}, got {self.status!r}")
        if self.gpus < 0:
            raise InvalidAttempt("gpus", "cannot be negative")
        if self.tasks_per_node is not None and self.tasks_per_node < 1:
            raise InvalidAttempt("tasks_per_node", f"a node runs at least one rank, got {self.tasks_per_node}")
        if self.start_time and self.end_time and _instant(self.end_time) < _instant(self.start_time):
            raise InvalidAttempt("end_time", f"{self.end_time.isoformat()} is before start_time {self.start_time.isoformat()}")

    def facts(self) -> dict[str, Any]:
        """Every field, the tuples as lists and the pods as a dict: what a database row holds."""
        return {f.name: _row_value(getattr(self, f.name)) for f in fields(self)}

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
        return (_instant(self.end_time) - _instant(self.start_time)).total_seconds() / 60


def _row_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return dict(value) if isinstance(value, Mapping) else value


def _instant(moment: datetime) -> datetime:
    """A time without a zone is local time (as the hook reads one)."""
    return moment if moment.tzinfo else moment.astimezone()


@dataclass(frozen=True)
class SchedulerEvidence:
    """The scheduler's own word on how an attempt ended (a Slurm job state, a pod's
    termination reason), when it names a cause: the failure reason it is evidence of
    (docs/TAXONOMY.md), a rule id to count the retry budget by, and the scheduler's lines
    that say so (a node's record among them names the node)."""

    reason: str
    rule_id: str
    lines: tuple[str, ...]
