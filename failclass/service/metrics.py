"""Prometheus metrics. In one process, a registry per app (tests build many apps in one
process). Under `failclass serve`, every worker writes its values to files in
PROMETHEUS_MULTIPROC_DIR and a scrape adds up all the workers' files, so whichever
worker answers, it answers for all of them. What the store holds (holds, blacklist
entries, suspect nodes) is read from the database at scrape time."""

from __future__ import annotations

import functools
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi import Response
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
    multiprocess,
    values,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from failclass import __version__
from failclass.analytics.goodput import UserGoodput
from failclass.attempts import Attempt
from failclass.classifier import Examination
from failclass.contracts import Decision
from failclass.policy.config import NodePolicy
from failclass.store.database import Database
from failclass.store.models import BlacklistRow, HoldRow, NodeFailureRow
from failclass.store.reach import cause

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
log = logging.getLogger("failclass.service")


def multiprocess_dir() -> Path | None:
    """The folder the workers share their values in, when there is one."""
    given = os.environ.get(MULTIPROC_ENV)
    return Path(given) if given else None


@contextmanager
def shared_between_workers() -> Iterator[Path]:
    """For `failclass serve`, before its workers start: an emptied folder for their values
    (PROMETHEUS_MULTIPROC_DIR if the operator set it, else a new one removed at the end),
    named in the environment the workers inherit."""
    given = multiprocess_dir()
    directory = given or Path(tempfile.mkdtemp(prefix="failclass-metrics-"))
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):  # values of an earlier run would be counted again
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(directory)
    # prometheus_client chose where values live when it was imported; with one worker,
    # the app runs in this very process, which imported it before the folder was named.
    values.ValueClass = values.get_value_class()
    try:
        yield directory
    finally:
        if given is None:
            shutil.rmtree(directory, ignore_errors=True)


@asynccontextmanager
async def worker_lifespan(app: Any) -> AsyncIterator[None]:
    """The app's lifespan: a worker that shuts down takes its live gauges (its presence)
    out of the shared folder; its counts stay. (At exit would be too late: uvicorn ends a
    worker by raising the signal it got again, and no exit handler runs.)"""
    yield
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(os.getpid())


class Metrics:
    def __init__(self, store: Database | None = None, nodes: NodePolicy | None = None) -> None:
        self.registry = CollectorRegistry()
        self.classifications = Counter(
            "failclass_classifications_total", "Logs classified", ["reason", "source"], registry=self.registry
        )
        self.decisions = Counter("failclass_decisions_total", "Decisions made", ["action"], registry=self.registry)
        self.failed_attempts = Counter(
            "failclass_failed_attempts_total", "Failed attempts recorded, by reason", ["reason"], registry=self.registry
        )
        self.gpu_hours_lost = Counter(
            "failclass_gpu_hours_lost_total",
            "GPU-hours of failed attempts (runtime to failure x GPUs), by reason",
            ["reason"],
            registry=self.registry,
        )
        self._goodput_metrics()
        self.waste_gpu_hours = Gauge(
            "failclass_waste_gpu_hours",
            "GPU-hours lost per cause in the last waste report",
            ["cause"],
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )
        self.waste_signals = Counter(
            "failclass_waste_signals_total", "Idle-watch signals given", ["action"], registry=self.registry
        )
        self.requests = Histogram(
            "failclass_request_seconds", "Request latency", ["method", "route", "status"], registry=self.registry
        )
        started = Gauge(
            "failclass_worker_start_time_seconds",
            "When each serving process started (one series per live worker)",
            registry=self.registry,
            multiprocess_mode="liveall",
        )
        started.set(time.time())
        self.scraped: list[Collector] = [BuildInfo()]
        if store is not None:
            self.scraped.append(StoreState(store, nodes or NodePolicy()))
        self.shared = multiprocess_dir()
        if self.shared is None:
            ProcessCollector(registry=self.registry)
            for collector in self.scraped:
                self.registry.register(collector)

    def _goodput_metrics(self) -> None:
        """GPU time lost the field's way (failclass/analytics/goodput.py)."""
        self.gpu_hours_lost_since_checkpoint = Counter(
            "failclass_gpu_hours_lost_since_checkpoint_total",
            "GPU-hours of failed attempts since their last checkpoint save in the log (the whole attempt without one), by reason",
            ["reason"],
            registry=self.registry,
        )
        self.user_gpu_hours_lost = Gauge(
            "failclass_user_gpu_hours_lost",
            "GPU-hours per user in the last report: to failures since checkpoint and whole, to idle, restarts and queueing",
            ["user", "lost_to"],
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )
        self.user_ettr = Gauge(
            "failclass_user_ettr",
            "Effective training time ratio per user in the last report (productive over wall GPU time)",
            ["user"],
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )

    def attempt_recorded(self, attempt: Attempt, examined: Examination, decision: Decision | None) -> None:
        """Count a newly recorded attempt: its classification, decision and, when it
        failed, the GPU time it held, whole and since its log's last checkpoint save."""
        classification = examined.classification
        self.classifications.labels(classification.reason, classification.source).inc()
        if decision is not None:
            self.decisions.labels(decision.action).inc()
        if attempt.status != "passed":
            self.failed_attempts.labels(classification.reason).inc()
            minutes = attempt.runtime_minutes
            if minutes is not None and attempt.start_time is not None:
                self.gpu_hours_lost.labels(classification.reason).inc(minutes / 60 * attempt.gpus)
                saved = examined.checkpoint[1] if examined.checkpoint else None
                before = (saved - attempt.start_time).total_seconds() / 3600 if saved else 0.0  # saved: start's zone
                self.gpu_hours_lost_since_checkpoint.labels(classification.reason).inc((minutes / 60 - before) * attempt.gpus)

    def report_built(self, users: Iterable[UserGoodput]) -> None:
        """The per-user figures of a report just built (GET /v1/report)."""
        for user in users:
            lost = {
                "failures_since_checkpoint": user.failures_since_checkpoint_gpu_h,
                "failures_whole": user.failures_whole_gpu_h,
                "idle": user.idle_gpu_h,
                "restarts": user.restart_gpu_h,
                "queue": user.queue_gpu_h,
            }
            for lost_to, hours in lost.items():
                self.user_gpu_hours_lost.labels(user.user, lost_to).set(hours)
            if user.ettr is not None:
                self.user_ettr.labels(user.user).set(user.ettr)

    def exposition(self) -> Response:
        if self.shared is None:
            registry = self.registry
        else:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry, path=str(self.shared))
            registry.register(WorkerProcesses(self.shared))
            for collector in self.scraped:
                registry.register(collector)
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


class BuildInfo(Collector):
    """failclass_build_info{version, python} 1."""

    def collect(self) -> Iterable[Metric]:
        info = GaugeMetricFamily("failclass_build_info", "The running failclass", labels=["version", "python"])
        info.add_metric([__version__, platform.python_version()], 1)
        yield info


class WorkerProcesses(Collector):
    """process_* (CPU, memory, open files, start time) of every live worker, labelled with
    its pid; the workers are those whose live gauge files are in the shared folder."""

    def __init__(self, shared: Path) -> None:
        self.shared = shared

    def pids(self) -> list[int]:
        found = {int(path.stem.rsplit("_", 1)[1]) for path in self.shared.glob("gauge_live*_*.db")}
        return sorted(pid for pid in found if Path(f"/proc/{pid}").exists())

    def collect(self) -> Iterable[Metric]:
        if not sys.platform.startswith("linux"):
            return
        merged: dict[str, Metric] = {}
        for pid in self.pids():
            for family in ProcessCollector(pid=functools.partial(int, pid), registry=None).collect():
                into = merged.setdefault(family.name, Metric(family.name, family.documentation, family.type))
                for sample in family.samples:
                    into.samples.append(Sample(sample.name, {**sample.labels, "pid": str(pid)}, sample.value))
        yield from merged.values()


class StoreState(Collector):
    """Active holds (by reason), active blacklist entries and suspect nodes, counted in
    the store at each scrape (three aggregate queries); failclass_store_up says whether
    the store answered, failclass_store_writable whether it took a write (as /readyz)."""

    def __init__(self, store: Database, nodes: NodePolicy) -> None:
        self.store = store
        self.nodes = nodes

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily("failclass_store_up", "1 when the store answered the scrape's queries")
        try:
            holds, blacklisted, suspects = state_counts(self.store, self.nodes)
        except SQLAlchemyError as exc:
            log.warning("metrics: the store did not answer: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield GaugeMetricFamily("failclass_store_writable", "1 when the store took a write (rolled back)", value=self.writable())
        held = GaugeMetricFamily("failclass_holds_active", "Users on hold, by reason", labels=["reason"])
        for reason, count in sorted(holds.items()):
            held.add_metric([reason], count)
        yield held
        yield GaugeMetricFamily("failclass_blacklist_entries", "Blacklisted inputs not cleared", value=blacklisted)
        yield GaugeMetricFamily(
            "failclass_suspect_nodes",
            f"Nodes with hardware failures of at least {self.nodes.min_jobs} jobs in the last {self.nodes.window_hours} h",
            value=suspects,
        )

    def writable(self) -> int:
        try:
            self.store.check_writable()
        except SQLAlchemyError as exc:
            log.warning("metrics: the store refused a write: %s", cause(exc))
            return 0
        return 1


def state_counts(store: Database, nodes: NodePolicy, now: datetime | None = None) -> tuple[dict[str, int], int, int]:
    """(active holds per reason, active blacklist entries, suspect nodes): as GET /v1/holds,
    /v1/blacklist and /v1/nodes count them."""
    since = (now or datetime.now(UTC)) - timedelta(hours=nodes.window_hours)
    suspects = (
        select(NodeFailureRow.node)
        .where(NodeFailureRow.failed_at >= since)
        .group_by(NodeFailureRow.node)
        .having(func.count(func.distinct(NodeFailureRow.job_id)) >= nodes.min_jobs)
        .subquery()
    )
    with store.sessions() as session:
        holds = session.execute(
            select(HoldRow.reason, func.count()).where(HoldRow.released_at.is_(None)).group_by(HoldRow.reason)
        ).all()
        blacklisted = session.scalar(select(func.count()).select_from(BlacklistRow).where(BlacklistRow.cleared_at.is_(None)))
        suspect_count = session.scalar(select(func.count()).select_from(suspects))
    return {reason: count for reason, count in holds}, blacklisted or 0, suspect_count or 0


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
