"""GET /v1/report: Table 7, Table 6 and repeats per reason over the attempts in the store."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from failclass.analytics.records import store_records
from failclass.analytics.report import build_report
from failclass.service.deps import ClassifierDep, Reader, StoreDep

router = APIRouter(prefix="/v1", tags=["report"])


@router.get("/report")
def report(store: StoreDep, classifier: ClassifierDep, _: Reader) -> dict[str, Any]:
    return build_report(store_records(store.attempt_rows()), classifier.ruleset.taxonomy).to_dict()
