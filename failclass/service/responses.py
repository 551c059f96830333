"""Response bodies (pydantic): the contracts the service answers with, as OpenAPI
documents them. Classifications and decisions are the contract objects of DESIGN.md,
stored as JSON and validated on the way out; ``counters`` and ``evidence`` of holds and
blacklist entries are JSON the policy writes, typed as JSON values."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, JsonValue

from failclass.analytics.comparison import Comparison
from failclass.analytics.repetition import ReasonRepetition
from failclass.analytics.status import Table6Row
from failclass.analytics.table7 import Table7Row
from failclass.decision import ACTIONS


class EvidenceLine(BaseModel):
    line: int
    text: str


class ClassificationOut(BaseModel):
    """The classify contract: the reason, how it was found, and the lines that show it."""

    reason: str
    reason_name: str
    categories: list[str]
    source: str
    rule_id: str | None
    why: str
    confidence: float
    evidence: list[EvidenceLine]
    bytes: int
    lines: int


class Explanation(BaseModel):
    reason: str
    rule_id: str | None
    evidence: list[EvidenceLine]
    policy_clause: str
    message: str
    counters: dict[str, JsonValue]


class DecisionEffects(BaseModel):
    hold: str | None
    blacklisted_inputs: list[str]
    suspect_nodes: list[str]


class DecisionOut(BaseModel):
    """The decision contract: what the scheduler should do, and why."""

    action: Literal[ACTIONS]  # type: ignore[valid-type]
    mode: str
    enforced: bool
    backoff_seconds: float | None
    exclude_nodes: list[str]
    avoid_gpu_types: list[str]
    memory_factor: float | None
    explanation: Explanation
    effects: DecisionEffects


class AttemptOut(BaseModel):
    attempt_id: int
    duplicate: bool
    classification: ClassificationOut
    decision: DecisionOut | None


class Admitted(BaseModel):
    action: Literal["admit"]
    mode: str


class DecisionRecord(DecisionOut):
    """A stored decision: who and when, then the decision contract."""

    id: int
    kind: Literal["failure", "admission"]
    job_id: str
    user: str
    decided_at: str


class AttemptRecord(BaseModel):
    job_id: str
    attempt: int
    user: str
    vc: str
    status: str
    submit_time: str | None
    start_time: str | None
    end_time: str | None
    gpus: int
    gpu_type: str | None
    nodes: list[str]
    exit_code: int | None
    signal: int | None
    inputs: list[str]
    logs: list[str]
    recorded_at: str
    classification: ClassificationOut | None
    decision: DecisionRecord | None


class JobOut(BaseModel):
    job_id: str
    attempts: list[AttemptRecord]


class DecisionsOut(BaseModel):
    decisions: list[DecisionRecord]


class BlacklistEntry(BaseModel):
    id: int
    path: str
    why: str
    evidence: dict[str, JsonValue]
    created_at: str
    cleared_at: str | None
    cleared_by: str | None


class BlacklistOut(BaseModel):
    blacklist: list[BlacklistEntry]


class HoldEntry(BaseModel):
    id: int
    user: str
    reason: str
    evidence: dict[str, JsonValue]
    created_at: str
    released_at: str | None
    released_by: str | None


class HoldsOut(BaseModel):
    holds: list[HoldEntry]


class NodeEntry(BaseModel):
    node: str
    jobs: list[str]
    reasons: list[str]
    last_failure: str
    suspect: bool


class NodesOut(BaseModel):
    window_hours: float
    nodes: list[NodeEntry]


class LabelOut(BaseModel):
    id: int
    reason: str
    stored_as: str


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
    rules: int
    model: bool
    auth: bool
    database: str


class ReportScope(BaseModel):
    """What the report covers: its source, the filter in words, the attempts' time range."""

    source: str
    selection: str
    first: str | None
    last: str | None
    generated: str


class ReportOut(BaseModel):
    """Table 7, Table 6 and repeats per reason over the selection, and the comparison."""

    attempts: int
    failed_attempts: int
    jobs: int
    users: int
    gpu_hours_lost: float
    table7: list[Table7Row]
    table6: list[Table6Row]
    repetition: list[ReasonRepetition]
    scope: ReportScope
    comparison: Comparison | None
