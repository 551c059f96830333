"""Real receivers of notices for the tests: an HTTP server that keeps what is posted to it
(a webhook's, Slack's), and an SMTP server (aiosmtpd, the dev extra) that keeps the mail."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Receiver:
    url: str
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # answered in turn; 200 once they run out


@contextmanager
def receiver() -> Iterator[Receiver]:
    got = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
            status = got.statuses.pop(0) if got.statuses else 200
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"receiver says no")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Mailbox:
    port: int
    mail: list[Any] = field(default_factory=list)  # aiosmtpd's envelopes, as they came


@contextmanager
def smtp_server() -> Iterator[Mailbox]:
    """A local SMTP server without login; skips the test where aiosmtpd is not installed."""
    controller_module = pytest.importorskip("aiosmtpd.controller", reason="aiosmtpd (the dev extra) is not installed")
    box = Mailbox(free_port())

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            box.mail.append(envelope)
            return "250 Message accepted for delivery"

    controller = controller_module.Controller(Handler(), hostname="127.0.0.1", port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
