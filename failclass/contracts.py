"""The contract objects as they travel: one typed model per concept (the evidence of a
classification, a decision with its explanation and effects, a stored decision, an
admission), and the one place they become JSON and are read back (`to_json`,
`from_json`). The library makes them, the store keeps their JSON, the hook and the
adapters read them back, and the service answers with them: pydantic reads these
dataclasses for validation and for the OpenAPI document. Plain dataclasses, so that the
hook, which starts in a tenth of a second, loads no pydantic to read them."""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

Action = Literal["retry", "retry_elsewhere", "retry_with_more_resources", "no_retry", "hold", "reject"]
ACTIONS: tuple[Action, ...] = get_args(Action)
RetryAction = Literal["retry", "retry_elsewhere", "retry_with_more_resources"]
RETRY_ACTIONS: tuple[RetryAction, ...] = get_args(RetryAction)
Mode = Literal["enforce", "audit"]
MODES: tuple[Mode, ...] = get_args(Mode)
Source = Literal["signature", "model", "scheduler", "launcher", "none"]  # what named a classification's reason
DecisionKind = Literal["failure", "admission"]  # a finished attempt's decision, or a submission's
NoticeKind = Literal[
    "hold", "blacklisted_input", "suspect_node", "idle_warning", "release", "hung_job", "repeat_idle", "rightsizing"
]
NOTICE_KINDS: tuple[NoticeKind, ...] = get_args(NoticeKind)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """One line of the log that shows the reason (line numbers from 1; 0 for a line that
    is not the log's: the scheduler's own record)."""

    line: int
    text: str


@dataclasses.dataclass(frozen=True)
class Rival:
    """A rule that fired but lost to the answer, and why."""

    rule_id: str
    reason: str
    kind: str
    priority: int
    line: int
    text: str
    lost_because: str


@dataclasses.dataclass(frozen=True)
class Classification:
    """Why an attempt failed, as its log shows it: the reason (docs/TAXONOMY.md), what
    named it, the lines that show it, how much of the log was read, and the rules that
    fired but lost (`classify --explain` prints them)."""

    reason: str
    reason_name: str
    categories: tuple[str, ...]
    source: Source
    rule_id: str | None
    why: str
    confidence: float
    evidence: tuple[Evidence, ...]
    bytes: int
    lines: int
    also_matched: tuple[Rival, ...] = ()


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a multi-rank attempt's failure started: the rank, its node and GPU where the
    logs or the attempt's facts say them, the file and line of its failure, and the
    evidence that decided it (``how``). The GPU is an index on its node: the CUDA device the
    failure or the rank's NCCL lines name, the GPU an Xid's bus id maps to, or the rank's
    local rank where the facts give each rank one GPU."""

    rank: int | None
    node: str | None
    gpu: int | None
    path: str | None
    line: int | None
    how: str


@dataclasses.dataclass(frozen=True)
class AttemptAnswer:
    """One answer for an attempt's logs read together as ranks: the origin rank's
    classification, the origin, and the other ranks that failed after it (the cascade),
    counted by how they failed."""

    classification: Classification
    origin: Origin | None = None
    cascade: tuple[int, ...] = ()
    cascade_kinds: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Explanation:
    """Why a decision was made: the classified reason and rule, the evidence, the policy
    clause that decided, in words, and the policy's counters."""

    reason: str
    rule_id: str | None
    policy_clause: str
    message: str
    counters: dict[str, Any] = dataclasses.field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()


@dataclasses.dataclass(frozen=True)
class Effects:
    """What a decision changes in the cluster's memory (a hold on the user for a reason,
    inputs blacklisted, nodes that became suspect) and what it counts against (the inputs
    and nodes this failure implicates)."""

    hold: str | None = None
    blacklisted_inputs: tuple[str, ...] = ()
    suspect_nodes: tuple[str, ...] = ()
    implicated_inputs: tuple[str, ...] = ()
    implicated_nodes: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Decision:
    """What the scheduler should do with a failed attempt or a stopped submission, and why."""

    action: Action
    mode: Mode = "enforce"
    enforced: bool = True  # mode == "enforce": an audit decision is reported, not acted on
    backoff_seconds: float | None = None
    exclude_nodes: tuple[str, ...] = ()
    avoid_gpu_types: tuple[str, ...] = ()
    memory_factor: float | None = None
    explanation: Explanation = dataclasses.field(kw_only=True)
    effects: Effects = dataclasses.field(default_factory=Effects)

    def in_mode(self, mode: Mode) -> Decision:
        return dataclasses.replace(self, mode=mode, enforced=mode == "enforce")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DecisionRecord(Decision):
    """A stored decision: the decision, then what it was about and when."""

    id: int
    kind: DecisionKind
    job_id: str
    user: str
    decided_at: datetime


@dataclasses.dataclass(frozen=True)
class Notice:
    """What a person should hear about a job: a hold on its user, an input blacklisted, a
    node made suspect, an idle warning, a release, a hung job. ``key`` de-duplicates: a
    notice whose key was sent within the policy's window is not sent again (by default
    the kind and the job: failclass.notify.notices). It travels: kept as JSON in the
    store's outbox until every channel has it, and posted as the generic webhook body."""

    kind: NoticeKind
    job_id: str
    user: str
    reason: str  # the failure reason (docs/TAXONOMY.md) or the idle watch's cause
    message: str  # one sentence for the job's owner and the operator
    created_at: datetime
    key: str
    nodes: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    attempt_id: int | None = None
    link: str | None = None  # where to read more (the service's page of the attempt), if known


WARN, RELEASE, NEVER_USED, HUNG, CANCEL, REPEAT_IDLE = "warn", "release", "never_used", "hung", "cancel", "repeat_idle"
WATCH_ACTIONS = (WARN, RELEASE, NEVER_USED, HUNG, CANCEL, REPEAT_IDLE)  # what a step of the watch does


@dataclasses.dataclass(frozen=True)
class WatchStep:
    """One step the watch took on a running job (failclass.waste.enforce): a warning, a
    release, a hung job flagged or cancelled, a GPU never used, a user named as a repeat
    offender (``repeat_idle``). Taken once per idle or hung stretch (``since``: when it
    began), recorded with its evidence and with what was run on the scheduler."""

    job_id: str
    user: str
    vc: str
    action: str  # WATCH_ACTIONS
    step: int  # which warning (1, 2, ...); a repeat offence: the user's releases counted
    since: datetime
    taken_at: datetime
    reason: str
    gpus: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    done: tuple[str, ...] = ()  # the scheduler's commands run, each with its outcome where it failed
    enforced: bool = True  # false: the policy is in audit mode, nothing was run


@dataclasses.dataclass(frozen=True)
class Admitted:
    """A submission that may run."""

    mode: Mode = "enforce"
    enforced: bool = True
    action: Literal["admit"] = "admit"


# -- JSON: the one way in and out ---------------------------------------------------------

Model = TypeVar("Model")


def to_json(value: Any) -> Any:
    """A contract object (or a list or mapping of them) as JSON: tuples as lists, times in ISO 8601."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, Mapping):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def classification_json(found: Classification, explain: bool = False) -> dict[str, Any]:
    """The classify contract as `classify --json` and batch rows print it: the rules that
    lost only when explaining."""
    body = to_json(found)
    if not explain:
        del body["also_matched"]
    return body


def attempt_json(answer: AttemptAnswer, paths: list[str], explain: bool = False) -> dict[str, Any]:
    """`classify --attempt --json`: the classify contract of the attempt, with its files
    (``paths``), ``origin``, ``cascade`` and ``cascade_kinds``."""
    return {
        "paths": paths,
        **classification_json(answer.classification, explain),
        "origin": to_json(answer.origin),
        "cascade": list(answer.cascade),
        "cascade_kinds": answer.cascade_kinds,
    }


def from_json(kind: type[Model], body: Mapping[str, Any]) -> Model:
    """The contract object ``body`` (as `to_json` wrote it) describes; a key it lacks takes
    the field's default, so that bodies stored by an earlier version still read."""
    hints = _hints(kind)  # type: ignore[arg-type]  # a class is hashable
    names = (f.name for f in dataclasses.fields(kind))  # type: ignore[arg-type]
    return kind(**{name: _read(hints[name], body[name]) for name in names if name in body})


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    return get_type_hints(kind)


def _read(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        hint = next(arg for arg in get_args(hint) if arg is not type(None))
        origin = get_origin(hint)
    if origin is tuple:
        return tuple(_read(get_args(hint)[0], item) for item in value)
    if hint is datetime and isinstance(value, str):
        return datetime.fromisoformat(value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return from_json(hint, value)
    return value
