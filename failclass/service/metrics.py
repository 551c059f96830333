"""Prometheus metrics, one registry per app (tests build many apps in one process)."""

from __future__ import annotations

import time

from fastapi import Response
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.classifications = Counter(
            "failclass_classifications_total", "Logs classified", ["reason", "source"], registry=self.registry
        )
        self.decisions = Counter("failclass_decisions_total", "Decisions made", ["action"], registry=self.registry)
        self.waste_gpu_hours = Gauge(
            "failclass_waste_gpu_hours", "GPU-hours lost per cause in the last waste report", ["cause"], registry=self.registry
        )
        self.waste_signals = Counter(
            "failclass_waste_signals_total", "Idle-watch signals given", ["action"], registry=self.registry
        )
        self.requests = Histogram(
            "failclass_request_seconds", "Request latency", ["method", "route", "status"], registry=self.registry
        )

    def exposition(self) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class RequestTimer:
    """Pure ASGI middleware (no task group around the app, so errors raised while a
    route reads its body reach the app's handlers) observing each request's latency."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_watching(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_watching)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.requests.labels(scope["method"], route, str(status)).observe(time.perf_counter() - started)
