"""The app factory: validated settings in, a FastAPI app out. Nothing happens at import
time; tests build apps on SQLite or PostgreSQL alike, and `failclass serve` builds one
from the environment."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request, Response
from fastapi.responses import PlainTextResponse

from failclass import __version__
from failclass.classifier import Classifier
from failclass.policy.config import load_policy
from failclass.service import docs, errors, openapi
from failclass.service.auth import load_tokens
from failclass.service.limits import RequestSizeLimit
from failclass.service.metrics import Metrics, RequestTimer, worker_lifespan
from failclass.service.responses import HealthOut
from failclass.service.routers import attempts, classify, history, labels, report, state, waste
from failclass.service.settings import Settings
from failclass.store.repository import Store

log = logging.getLogger("failclass.service")


def create_app(settings: Settings | None = None, store: Store | None = None, classifier: Classifier | None = None) -> FastAPI:
    settings = settings or Settings()
    if classifier is None:
        classifier = settings.classifier_options().build(log.warning)
    if store is None:
        store = Store.open(settings.database_url)

    app = FastAPI(
        title="failclass",
        version=__version__,
        description="Why did this GPU training attempt fail, and what should the scheduler do next?",
        docs_url=None,
        redoc_url=None,
        lifespan=worker_lifespan,
    )
    app.state.settings = settings
    app.state.store = store
    app.state.classifier = classifier
    app.state.policy = load_policy(settings.policy_file, set(classifier.ruleset.taxonomy.reasons))
    app.state.tokens = load_tokens(settings.tokens_file)
    app.state.metrics = metrics = Metrics(store, app.state.policy.nodes)
    errors.install(app)
    docs.install(app)
    openapi.install(app, settings, auth=app.state.tokens is not None, reasons=sorted(classifier.ruleset.taxonomy.reasons))
    app.add_middleware(RequestSizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(RequestTimer, metrics=metrics)
    for router in (classify.router, attempts.router, history.router, state.router, report.router, labels.router, waste.router):
        app.include_router(router, responses=errors.documented(*errors.READING))

    @app.get("/healthz", tags=["operations"], responses=errors.documented(500))
    def healthz(request: Request) -> HealthOut:
        """Liveness and readiness: the database answers, the rules are loaded."""
        request.app.state.store.ping()
        loaded: Classifier = request.app.state.classifier
        return HealthOut(
            status="ok",
            version=__version__,
            rules=len(loaded.ruleset.rules),
            model=loaded.model is not None,
            auth=request.app.state.tokens is not None,
            database=store.engine.dialect.name,
        )

    internal_error = {"description": errors.WHEN[500], "content": {"application/json": {"schema": errors.ERROR_REF}}}

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse, responses={500: internal_error})
    def prometheus(request: Request) -> Response:
        """Prometheus text exposition."""
        return request.app.state.metrics.exposition()  # type: ignore[no-any-return]

    return app


def app_from_environment() -> FastAPI:
    """For `uvicorn --factory failclass.service.app:app_from_environment` (several workers)."""
    return create_app(Settings())
