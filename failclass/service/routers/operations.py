"""For operators and probes, no token needed: GET /healthz (liveness), /readyz (can it
record attempts now?) and /metrics (Prometheus)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import PlainTextResponse

from failclass import __version__
from failclass.service.deps import ClassifierDep, MetricsDep, StoreDep
from failclass.service.errors import STORED, documented
from failclass.service.responses import HealthOut

router = APIRouter(tags=["operations"])


def _health(request: Request, store: StoreDep, classifier: ClassifierDep) -> HealthOut:
    return HealthOut(
        status="ok",
        version=__version__,
        rules=len(classifier.ruleset.rules),
        model=classifier.model is not None,
        auth=request.app.state.tokens is not None,
        database=store.engine.dialect.name,
    )


@router.get("/healthz", responses=documented(*STORED))
def healthz(request: Request, store: StoreDep, classifier: ClassifierDep) -> HealthOut:
    """Liveness: the rules are loaded, the database answers a read. It says nothing of
    writes: /readyz does."""
    store.ping()
    return _health(request, store, classifier)


@router.get("/readyz", responses=documented(*STORED))
def readyz(request: Request, store: StoreDep, classifier: ClassifierDep) -> HealthOut:
    """Readiness: the service can record attempts now (a write to the store, rolled back);
    503 while it cannot (read-only, disk full, database down), though /v1/classify still
    answers."""
    store.check_writable()
    return _health(request, store, classifier)


@router.get("/metrics", response_class=PlainTextResponse)
def prometheus(metrics: MetricsDep) -> Response:
    """Prometheus text exposition."""
    return metrics.exposition()
