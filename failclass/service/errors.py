"""One JSON error shape for every 4xx and 5xx: {"error": {"status", "code", "message"}}
(plus "details" for invalid requests). No stack trace leaves the server."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

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
    400: "the body cannot be parsed (not UTF-8, not JSON)",
    401: "no API token, or an unknown one",
    403: "the token lacks the scope this operation needs",
    404: "no such resource",
    409: "the Idempotency-Key was used for another request",
    413: "the request body is over the limit",
    415: "a content type this operation does not accept",
    422: "the request is not valid: `details` says where and why",
    500: "an internal error (the server log has the details)",
}

ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}
READING = (401, 403, 422, 500)  # every authenticated operation
SENDING = (400, 401, 403, 413, 422, 500)  # every operation with a request body


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

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal error; the server log has the details")
