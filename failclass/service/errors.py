"""One JSON error shape for every 4xx and 5xx: {"error": {"status", "code", "message"}}
(plus "details" for invalid requests), from the app and from the HTTP server before it
(failclass.service.protocol). No stack trace leaves the server."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from failclass.store.database import UNAVAILABLE
from failclass.store.reach import cause

log = logging.getLogger("failclass.service")
CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    500: "internal_error",
    503: "unavailable",
}

WHEN = {
    400: "the request cannot be read: not HTTP (a malformed header or Content-Length), or a JSON body nested too deep"
    " or holding a number of over 4300 digits",
    401: "no API token, or an unknown one",
    403: "the token lacks the scope this operation needs",
    404: "no such resource",
    409: "the Idempotency-Key was used for another request",
    413: "the request body is over the limit",
    415: "a content type this operation does not accept",
    422: "the request is not valid: `details` says where and why",
    500: "an internal error (the server log has the details)",
    503: "the store cannot be reached or written now (database down, read-only, disk full); /readyz says when it can",
}

ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}
EVERY = (400, 413, 500)  # any request: unreadable, a body over the limit, an internal error
READING = (401, 403, 422)  # every authenticated operation
STORED = (503,)  # every operation that reads or writes the store


class Problem(BaseModel):
    where: str
    problem: str


class ErrorBody(BaseModel):
    status: int
    code: str
    message: str
    details: list[Problem] | None = None


class ErrorOut(BaseModel):
    """The one error shape of every 4xx and 5xx answer."""

    error: ErrorBody


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses: the error shape and when."""
    return {status: {"model": ErrorOut, "description": WHEN[status]} for status in statuses}


def described(status: int) -> dict[str, Any]:
    """One error status as the OpenAPI document lists it."""
    return {"description": WHEN[status], "content": {"application/json": {"schema": ERROR_REF}}}


def error_body(status: int, message: str, details: list[dict[str, str]] | None = None) -> dict[str, Any]:
    problems = None if details is None else [Problem.model_validate(d) for d in details]
    body = ErrorBody(status=status, code=CODES.get(status, "error"), message=message, details=problems)
    return ErrorOut(error=body).model_dump(exclude_none=True)


def error_response(
    status: int, message: str, details: list[dict[str, str]] | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, message, details), status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = [{"where": ".".join(str(p) for p in e["loc"]), "problem": e["msg"]} for e in exc.errors()]
        return error_response(422, "the request is not valid", details)

    async def store_unavailable(request: Request, exc: Exception) -> JSONResponse:
        log.error("the store is unavailable (%s %s): %s", request.method, request.url.path, cause(exc))
        return error_response(503, f"the store is unavailable now: {cause(exc)}")

    for kind in UNAVAILABLE:
        app.add_exception_handler(kind, store_unavailable)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal error; the server log has the details")
