"""Dependencies of the routes, as Annotated aliases: coroutines, which FastAPI runs on the
event loop (a plain function would cost each request a trip through the thread pool)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from failclass.classifier import Classifier
from failclass.policy.config import PolicyConfig
from failclass.service.auth import requires
from failclass.service.metrics import Metrics
from failclass.service.settings import Settings
from failclass.store.repository import Store


async def _store(request: Request) -> Store:
    return request.app.state.store  # type: ignore[no-any-return]


async def _classifier(request: Request) -> Classifier:
    return request.app.state.classifier  # type: ignore[no-any-return]


async def _policy(request: Request) -> PolicyConfig:
    return request.app.state.policy  # type: ignore[no-any-return]


async def _settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def _metrics(request: Request) -> Metrics:
    return request.app.state.metrics  # type: ignore[no-any-return]


StoreDep = Annotated[Store, Depends(_store)]
ClassifierDep = Annotated[Classifier, Depends(_classifier)]
PolicyDep = Annotated[PolicyConfig, Depends(_policy)]
SettingsDep = Annotated[Settings, Depends(_settings)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
Reader = Annotated[str | None, Depends(requires("read"))]
Writer = Annotated[str | None, Depends(requires("write"))]
