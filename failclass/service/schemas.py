"""Request bodies (pydantic): validated at the door, documented in OpenAPI. Every field
the database keeps is bounded to what the database holds (failclass.service.fields)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, fields
from types import GenericAlias
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model

from failclass.attempts import Attempt
from failclass.service.fields import NO_NUL, Count, Int32, Name, Node, PathText, RowId, Timestamp


class AttemptBody(BaseModel):
    """A report of one attempt: its facts (failclass.attempts.Attempt's fields, added by
    `AttemptIn`) and its log text."""

    model_config = ConfigDict(extra="forbid")

    log: str = Field(
        default="", description="the attempt's stdout/stderr text, classified (what UTF-8 cannot hold kept as U+FFFD)"
    )
    idempotency_key: Name | None = Field(default=None, description="or the Idempotency-Key header")

    def to_attempt(self) -> Attempt:
        return Attempt.from_facts(self.model_dump(exclude={"log", "idempotency_key"}))

    def digest_source(self) -> bytes:
        """What identifies the request for its idempotency key: everything but the key."""
        return self.model_dump_json(exclude={"idempotency_key"}).encode()


HELD: dict[str, Any] = {  # the kinds of value an attempt's fields name (failclass.attempts.held)
    "name": Name,
    "row_id": RowId,
    "label": Annotated[str, Field(max_length=200, pattern=NO_NUL)],
    "gpu_type": Annotated[str, Field(max_length=100, pattern=NO_NUL)],
    "count": Count,
    "int32": Int32,
    "node": Node,
    "path": PathText,
    "time": Timestamp,
}


def _attempt_fields() -> dict[str, Any]:
    """Attempt's fields as pydantic declares them, each bounded as its metadata says."""
    hints = get_type_hints(Attempt)
    declared: dict[str, Any] = {}
    for fact in fields(Attempt):
        kind, most = fact.metadata.get("held"), fact.metadata.get("most")
        hint = HELD[kind] if kind else hints[fact.name]
        described = {"description": fact.metadata["description"]} if fact.metadata.get("description") else {}
        if get_origin(hints[fact.name]) is Mapping:  # names to values of the kind
            declared[fact.name] = (GenericAlias(dict, (Name, hint)), Field(default_factory=dict, max_length=most, **described))
        elif most is not None:
            declared[fact.name] = (GenericAlias(list, (hint,)), Field(default_factory=list, max_length=most, **described))
        elif fact.default is MISSING:
            declared[fact.name] = (hint, Field(**described))
        else:
            optional = Optional[hint] if fact.default is None else hint  # noqa: UP045  # hint is a value here
            declared[fact.name] = (optional, Field(default=fact.default, **described))
    return declared


if TYPE_CHECKING:
    AttemptIn = AttemptBody  # what the code reads of a report; the attempt's facts through to_attempt()
else:
    AttemptIn = create_model(
        "AttemptIn",
        __base__=AttemptBody,
        __doc__="Facts of one attempt and its log text, as a scheduler reports them.",
        **_attempt_fields(),
    )


class ClassifyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    log: str


class LabelIn(BaseModel):
    """An operator's correction: the log and its true reason."""

    model_config = ConfigDict(extra="forbid")
    log: str = Field(pattern=r"[^ \t\n\r\x0b\x0c]", description="the log text; not only whitespace")
    reason: Annotated[str, Field(min_length=1, max_length=64, pattern=NO_NUL)]
    attempt_id: RowId | None = None
    note: Annotated[str, Field(max_length=2000, pattern=NO_NUL)] = ""


READINGS_GIVEN: list[JsonValue] = [  # one of the two, not empty
    {"required": ["prometheus"], "properties": {"prometheus": {"minItems": 1}}},
    {"required": ["exposition"], "properties": {"exposition": {"type": "string", "minLength": 1}}},
]


class WasteJobIn(BaseModel):
    """A job and the GPUs it holds (``node:index``), as the scheduler knows them."""

    model_config = ConfigDict(extra="forbid")

    job: Name
    user: Annotated[str, Field(max_length=200, pattern=NO_NUL)] = "unknown"
    cluster: Annotated[str, Field(max_length=200, pattern=NO_NUL)] = "default"
    kind: Literal["batch", "interactive"] = "batch"
    gpus: list[Annotated[str, Field(pattern=r"^[^\s:]+:(?:[0-9]|[1-9][0-9]{1,2}|10[01][0-9]|102[0-3])$")]] = Field(
        default_factory=list, max_length=1024
    )
    start: Timestamp | None = None
    end: Timestamp | None = None


class WasteIn(BaseModel):
    """GPU readings (Prometheus range-query answers for DCGM metrics, or one exporter
    scrape) and the jobs that held the GPUs (not needed where the readings carry
    ``hpc_job`` or pod labels)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"anyOf": READINGS_GIVEN})

    prometheus: list[dict[str, JsonValue]] = Field(default_factory=list, max_length=64)  # Prometheus's own JSON
    exposition: str | None = Field(default=None, max_length=8 << 20)
    scraped_at: Timestamp | None = None
    jobs: list[WasteJobIn] = Field(default_factory=list, max_length=100_000)
    time_limit_hours: float | None = Field(default=None, gt=0, le=8760)


class WatchIn(WasteIn):
    now: Timestamp | None = None
    # None, or no kinds: the service's policy (its watch: section)
    warn_after_minutes: float | None = Field(default=None, ge=1, le=525_600)
    release_after_minutes: float | None = Field(default=None, ge=1, le=525_600)
    never_used_after_minutes: float | None = Field(default=None, ge=1, le=525_600)
    kinds: list[Literal["batch", "interactive"]] = Field(default=[], max_length=2)
