"""JSON request bodies read as every failclass entry point reads JSON (failclass.inbound):
what UTF-8 cannot hold is kept as U+FFFD, and a body nested too deep or holding a number
of too many digits is a 400 that says so. FastAPI reads a body with ``Request.json()``;
every router's routes are JsonRoutes, which hand it a JsonRequest."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

from failclass.inbound import UnreadableJson, read_json


class JsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_read"):
            try:
                self._read = read_json(await self.body())
            except UnreadableJson as exc:
                raise HTTPException(400, f"the body cannot be read: {exc}") from None
        return self._read


class JsonRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            return await handler(JsonRequest(request.scope, request.receive))

        return route
