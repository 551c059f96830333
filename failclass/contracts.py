"""The contract objects as they travel (JSON): a classification, a decision, and a stored
decision. One definition for the store, which keeps and reads them, and the service, which
answers with them and documents them (pydantic reads these TypedDicts for OpenAPI)."""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

Action = Literal["retry", "retry_elsewhere", "retry_with_more_resources", "no_retry", "hold", "reject"]


class EvidenceLine(TypedDict):
    line: int
    text: str


class ClassificationOut(TypedDict):
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


class Explanation(TypedDict):
    reason: str
    rule_id: str | None
    evidence: list[EvidenceLine]
    policy_clause: str
    message: str
    counters: dict[str, JsonValue]  # the policy's counters


class DecisionEffects(TypedDict):
    hold: str | None
    blacklisted_inputs: list[str]
    suspect_nodes: list[str]


class DecisionOut(TypedDict):
    """The decision contract: what the scheduler should do, and why."""

    action: Action
    mode: str
    enforced: bool
    backoff_seconds: float | None
    exclude_nodes: list[str]
    avoid_gpu_types: list[str]
    memory_factor: float | None
    explanation: Explanation
    effects: DecisionEffects


class DecisionRecord(DecisionOut):
    """A stored decision: who and when, then the decision contract."""

    id: int
    kind: Literal["failure", "admission"]
    job_id: str
    user: str
    decided_at: str
