"""GET /v1/report: Table 7 of the Philly study over the failed attempts in the store."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from failclass.analytics.table7 import FailedAttempt, table7
from service.deps import ClassifierDep, Reader, StoreDep

router = APIRouter(prefix="/v1", tags=["report"])


@router.get("/report")
def report(store: StoreDep, classifier: ClassifierDep, _: Reader) -> dict[str, Any]:
    rows = [r for r in store.attempt_rows() if r["status"] != "passed"]
    failed = [
        FailedAttempt(
            reason=r["reason"],
            job_id=r["job_id"],
            user=r["user"],
            rtf_minutes=(r["end_time"] - r["start_time"]).total_seconds() / 60 if r["start_time"] and r["end_time"] else None,
            gpus=r["gpus"],
        )
        for r in rows
    ]
    table = table7(failed, classifier.ruleset.taxonomy)
    return {"failed_attempts": len(failed), "table7": [row.to_dict() for row in table]}
