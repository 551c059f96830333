"""GET /v1/jobs/{id} and GET /v1/decisions: what was reported and decided."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from failclass.service.deps import Reader, SettingsDep, StoreDep

router = APIRouter(prefix="/v1", tags=["history"])


@router.get("/jobs/{job_id}")
def job(job_id: str, store: StoreDep, _: Reader) -> dict[str, Any]:
    attempts = store.job(job_id)
    if not attempts:
        raise HTTPException(404, f"no attempt of job {job_id!r} was reported")
    return {"job_id": job_id, "attempts": attempts}


@router.get("/decisions")
def decisions(
    store: StoreDep,
    settings: SettingsDep,
    _: Reader,
    user: str | None = None,
    job_id: str | None = None,
    action: str | None = None,
    since: datetime | None = None,
    limit: Annotated[int, Query(ge=1)] = 100,
) -> dict[str, Any]:
    """Newest first."""
    if limit > settings.max_page:
        raise HTTPException(422, f"limit is at most {settings.max_page}")
    return {"decisions": store.decisions(user=user, job_id=job_id, action=action, since=since, limit=limit)}
