"""Response bodies (pydantic): what the service answers with, as OpenAPI documents it.
Classifications, decisions and admissions are the contract objects of
failclass.contracts (dataclasses pydantic reads), the store's other rows its views'
TypedDicts, validated on the way out; this module only wraps them into answers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from failclass.analytics.comparison import Comparison
from failclass.analytics.goodput import UserGoodput
from failclass.analytics.nodes import NodeFailures
from failclass.analytics.repetition import ReasonRepetition
from failclass.analytics.status import Table6Row
from failclass.analytics.table7 import Table7Row
from failclass.contracts import Classification, Decision, DecisionRecord, WatchStep
from failclass.store.views import BlacklistEntry, HoldEntry, NodeEntry, RecordedAttempt
from failclass.waste.rightsize import UserRightsizing


class AttemptOut(BaseModel):
    attempt_id: int
    duplicate: bool
    classification: Classification
    decision: Decision | None


class JobOut(BaseModel):
    job_id: str
    attempts: list[RecordedAttempt]


class DecisionsOut(BaseModel):
    decisions: list[DecisionRecord]


class WatchStepsOut(BaseModel):
    steps: list[WatchStep]


class BlacklistOut(BaseModel):
    blacklist: list[BlacklistEntry]


class HoldsOut(BaseModel):
    holds: list[HoldEntry]


class NodesOut(BaseModel):
    window_hours: float
    nodes: list[NodeEntry]


class LabelOut(BaseModel):
    id: int
    reason: str
    stored_as: str = Field(description="the kept copy, relative to the service's labels folder: <reason>/<sha256 prefix>.log")


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
    """Table 7, Table 6 and repeats per reason over the selection, GPU time lost per user,
    the nodes and GPUs where failures started, right-sizing advice per user (from a
    `failclass waste` report: none here, as the CLI's ``--waste`` gives it), and the comparison."""

    attempts: int
    failed_attempts: int
    jobs: int
    users: int
    gpu_hours_lost: float
    table7: list[Table7Row]
    table6: list[Table6Row]
    repetition: list[ReasonRepetition]
    goodput: list[UserGoodput]
    nodes: list[NodeFailures]
    rightsizing: list[UserRightsizing]
    gpus: list[NodeFailures]
    scope: ReportScope
    comparison: Comparison | None
