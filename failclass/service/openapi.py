"""The OpenAPI document as the service runs: the error statuses any request may get
(EVERY) on every operation, the bearer scheme only where a tokens file is set, the `limit`
of listings bounded by the configured largest page, and reason ids (labels, report
filters) among the loaded taxonomy's."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from failclass.service.errors import EVERY, described
from failclass.service.settings import Settings

METHODS = ("get", "put", "post", "delete", "patch")


def install(app: FastAPI, settings: Settings, auth: bool, reasons: list[str]) -> None:
    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            for item in schema["paths"].values():
                for method in METHODS:
                    if method in item:
                        _adjust(item[method], settings, auth, reasons)
            components = schema.get("components", {})
            if not auth:
                components.pop("securitySchemes", None)
            if "LabelIn" in components.get("schemas", {}):
                components["schemas"]["LabelIn"]["properties"]["reason"]["enum"] = reasons
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = document  # type: ignore[method-assign]


def _adjust(operation: dict[str, Any], settings: Settings, auth: bool, reasons: list[str]) -> None:
    for status in EVERY:
        operation["responses"].setdefault(str(status), described(status))
    if not auth:
        operation.pop("security", None)
        for refused in ("401", "403"):
            operation["responses"].pop(refused, None)
    for parameter in operation.get("parameters", []):
        if parameter["name"] == "limit" and parameter["in"] == "query":
            parameter["schema"]["maximum"] = settings.max_page
        if parameter["name"] == "reason" and parameter["in"] == "query":
            _restrict_strings(parameter["schema"], reasons)


def _restrict_strings(schema: dict[str, Any], values: list[str]) -> None:
    """Every string in ``schema`` (a string, an array of them, either optional) to ``values``."""
    for option in schema.get("anyOf", [schema]):
        if option.get("type") == "string":
            option["enum"] = values
        elif option.get("type") == "array" and option.get("items", {}).get("type") == "string":
            option["items"]["enum"] = values
