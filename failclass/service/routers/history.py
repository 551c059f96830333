"""GET /v1/jobs/{id}, GET /v1/decisions and GET /v1/watch/steps: what was reported and
decided, and what the watch did to running jobs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query

from failclass.service.bodies import JsonRoute
from failclass.service.deps import Reader, SettingsDep, StoreDep
from failclass.service.errors import STORED, documented
from failclass.service.fields import NO_NUL, Timestamp
from failclass.service.responses import DecisionsOut, JobOut, WatchStepsOut

router = APIRouter(prefix="/v1", route_class=JsonRoute, tags=["history"], responses=documented(*STORED))
Filter = Annotated[str | None, Query(min_length=1, max_length=200, pattern=NO_NUL)]


@router.get("/jobs/{job_id:path}", response_model=JobOut, responses=documented(404))
def job(job_id: Annotated[str, Path(max_length=200, pattern=NO_NUL)], store: StoreDep, _: Reader) -> JobOut:
    """A job id may hold slashes (Kubernetes' namespace/name), as they are or as %2F."""
    attempts = store.job(job_id)
    if not attempts:
        raise HTTPException(404, f"no attempt of job {job_id!r} was reported")
    return JobOut(job_id=job_id, attempts=attempts)


@router.get("/decisions", response_model=DecisionsOut)
def decisions(
    store: StoreDep,
    settings: SettingsDep,
    _: Reader,
    user: Filter = None,
    job_id: Filter = None,
    action: Filter = None,
    since: Annotated[Timestamp | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, description="at most the service's largest page (FAILCLASS_MAX_PAGE)")] = 100,
) -> DecisionsOut:
    """Newest first."""
    if limit > settings.max_page:
        raise HTTPException(422, f"limit is at most {settings.max_page}")
    found = store.decisions(user=user, job_id=job_id, action=action, since=since, limit=limit)
    return DecisionsOut.model_validate({"decisions": found})


@router.get("/watch/steps", response_model=WatchStepsOut)
def watch_steps(
    store: StoreDep,
    settings: SettingsDep,
    _: Reader,
    user: Filter = None,
    job_id: Filter = None,
    limit: Annotated[int, Query(ge=1, description="at most the service's largest page (FAILCLASS_MAX_PAGE)")] = 100,
) -> WatchStepsOut:
    """The steps `failclass waste watch --act slurm` took on running jobs (warnings,
    releases, hung jobs cancelled, repeat offenders named), newest first, with their
    evidence and what was run on the scheduler."""
    if limit > settings.max_page:
        raise HTTPException(422, f"limit is at most {settings.max_page}")
    return WatchStepsOut(steps=store.watch_steps(job_id=job_id, user=user, limit=limit))
