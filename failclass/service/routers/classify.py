"""POST /v1/classify: a log in, the classify contract object out (nothing stored)."""

from __future__ import annotations

import json

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from failclass.contracts import Classification
from failclass.service.bodies import JsonRoute
from failclass.service.deps import ClassifierDep, MetricsDep, Reader
from failclass.service.errors import documented
from failclass.service.schemas import ClassifyIn

router = APIRouter(prefix="/v1", route_class=JsonRoute, tags=["classify"])
RAW_TYPES = ("", "text/plain", "application/octet-stream")
RAW_BODY = {"schema": {"type": "string"}}
BODY_DOC = {
    "requestBody": {
        "content": {
            "text/plain": RAW_BODY,
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            "application/json": {"schema": ClassifyIn.model_json_schema()},
        },
        "required": False,  # no body: an empty log
    }
}


@router.post("/classify", openapi_extra=BODY_DOC, response_model=Classification, responses=documented(415))
async def classify(request: Request, classifier: ClassifierDep, metrics: MetricsDep, _: Reader) -> Classification:
    """Classify a log given as the raw body (any bytes; no content type means raw too) or
    as JSON {"log": "..."} (text UTF-8 cannot hold kept as U+FFFD)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            data: bytes | str = ClassifyIn.model_validate(await request.json()).log
        except json.JSONDecodeError as exc:
            raise HTTPException(422, f'expected {{"log": "..."}}: not JSON: {exc}') from None
        except ValidationError as exc:
            raise HTTPException(422, f'expected {{"log": "..."}}: {exc.errors()[0]["msg"]}') from None
    elif kind in RAW_TYPES:
        data = await request.body()
    else:
        raise HTTPException(415, f"send the log as text/plain, application/octet-stream or JSON, not {kind}")
    result = await run_in_threadpool(classifier.classify_bytes, data)
    metrics.classifications.labels(result.reason, result.source).inc()
    return result
