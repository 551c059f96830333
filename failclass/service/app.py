"""The app factory: validated settings in, a FastAPI app out. Nothing happens at import
time; tests build apps on SQLite or PostgreSQL alike, and `failclass serve` builds one
from the environment."""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from failclass import __version__
from failclass.classifier import Classifier
from failclass.policy.config import load_policy
from failclass.service import docs, errors, openapi
from failclass.service.auth import load_tokens
from failclass.service.limits import RequestSizeLimit
from failclass.service.metrics import Metrics, RequestTimer, worker_lifespan
from failclass.service.routers import attempts, classify, history, labels, operations, report, state, waste
from failclass.service.settings import Settings
from failclass.store.repository import Store

log = logging.getLogger("failclass.service")
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


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
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.store = store
    app.state.classifier = classifier
    app.state.policy = load_policy(settings.policy_file, set(classifier.ruleset.taxonomy.reasons), set(classifier.rules))
    app.state.tokens = load_tokens(settings.tokens_file)
    app.state.metrics = metrics = Metrics(store, app.state.policy.nodes)
    app.state.notices = None  # the deliverer of notices, while the app runs, where the policy routes any
    errors.install(app)
    docs.install(app)
    openapi.install(app, settings, auth=app.state.tokens is not None, reasons=sorted(classifier.ruleset.taxonomy.reasons))
    app.add_middleware(RequestSizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(RequestTimer, metrics=metrics)
    for router in (classify.router, attempts.router, history.router, state.router, report.router, labels.router, waste.router):
        app.include_router(router, responses=errors.documented(*errors.READING))
    app.include_router(operations.router)

    return app


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The worker's lifespan (failclass.service.metrics), and a thread that delivers the
    notices decisions queue (failclass.notify) when the policy routes any."""
    notifications = app.state.policy.notifications
    if notifications.routes:
        from failclass.notify.delivery import DeliveryThread

        app.state.notices = DeliveryThread(app.state.store, notifications)
        app.state.notices.start()
    try:
        async with worker_lifespan(app):
            yield
    finally:
        if app.state.notices is not None:
            app.state.notices.stop()


def app_from_environment() -> FastAPI:
    """For `uvicorn --factory failclass.service.app:app_from_environment` (several workers)."""
    end_with_supervisor()
    return create_app(Settings())


def end_with_supervisor() -> None:
    """In a worker of `serve --workers N` (a child of uvicorn's supervisor): ask the kernel
    for SIGTERM when the supervisor dies, even by SIGKILL, so that no orphan keeps serving
    its port (Linux). With one worker the app runs in the `serve` process: nothing to do."""
    supervisor = multiprocessing.parent_process()
    if supervisor is None or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != supervisor.pid:  # it died before the request was made
        signal.raise_signal(signal.SIGTERM)
