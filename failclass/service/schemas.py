"""Request and response bodies (pydantic): validated at the door, documented in OpenAPI."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from failclass.attempts import Attempt


class AttemptIn(BaseModel):
    """Facts of one attempt and its log text, as a scheduler reports them."""

    model_config = ConfigDict(extra="forbid")

    job_id: str = Field(min_length=1, max_length=200)
    attempt: int = Field(ge=1)
    user: str = Field(min_length=1, max_length=200)
    vc: str = Field(default="default", max_length=200)
    status: Literal["failed", "killed", "unsuccessful", "passed"] = "failed"
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    gpus: int = Field(default=0, ge=0)
    gpu_type: str | None = Field(default=None, max_length=100)
    nodes: list[str] = Field(default_factory=list, max_length=4096)
    exit_code: int | None = None
    signal: int | None = None
    inputs: list[str] = Field(default_factory=list, max_length=1024)
    logs: list[str] = Field(default_factory=list, max_length=1024, description="where the logs are, recorded as facts")
    log: str = Field(default="", description="the attempt's stdout/stderr text, classified")
    idempotency_key: str | None = Field(default=None, max_length=200, description="or the Idempotency-Key header")

    def to_attempt(self) -> Attempt:
        return Attempt.from_facts(self.model_dump(exclude={"log", "idempotency_key"}))


class AttemptOut(BaseModel):
    attempt_id: int
    duplicate: bool
    classification: dict[str, Any]
    decision: dict[str, Any] | None


class ClassifyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    log: str


class LabelIn(BaseModel):
    """An operator's correction: the log and its true reason."""

    model_config = ConfigDict(extra="forbid")
    log: str = Field(min_length=1)
    reason: str
    attempt_id: int | None = None
    note: str = Field(default="", max_length=2000)


class LabelOut(BaseModel):
    id: int
    reason: str
    stored_as: str


class WasteJobIn(BaseModel):
    """A job and the GPUs it holds (``node:index``), as the scheduler knows them."""

    model_config = ConfigDict(extra="forbid")

    job: str = Field(min_length=1, max_length=200)
    user: str = Field(default="unknown", max_length=200)
    cluster: str = Field(default="default", max_length=200)
    kind: Literal["batch", "interactive"] = "batch"
    gpus: list[Annotated[str, Field(pattern=r"^[^\s:]+:(?:[0-9]|[1-9][0-9]{1,2}|10[01][0-9]|102[0-3])$")]] = Field(
        default_factory=list, max_length=1024
    )
    start: datetime | None = None
    end: datetime | None = None


class WasteIn(BaseModel):
    """GPU readings (Prometheus range-query answers for DCGM metrics, or one exporter
    scrape) and the jobs that held the GPUs (not needed where the readings carry
    ``hpc_job`` or pod labels)."""

    model_config = ConfigDict(extra="forbid")

    prometheus: list[dict[str, Any]] = Field(default_factory=list, max_length=64)
    exposition: str | None = Field(default=None, max_length=8 << 20)
    scraped_at: datetime | None = None
    jobs: list[WasteJobIn] = Field(default_factory=list, max_length=100_000)
    time_limit_hours: float | None = Field(default=None, gt=0, le=8760)


class WatchIn(WasteIn):
    now: datetime | None = None
    warn_after_minutes: float = Field(default=30, ge=1, le=525_600)
    release_after_minutes: float = Field(default=60, ge=1, le=525_600)
    never_used_after_minutes: float = Field(default=10, ge=1, le=525_600)
    kinds: list[Literal["batch", "interactive"]] = Field(default=["interactive"], max_length=2)
