"""uvicorn's HTTP protocol (httptools, as uvicorn[standard] installs it) answering a
request it cannot parse (a malformed request line, header or Content-Length) in the
service's error shape, where uvicorn answers plain text; the app never sees such a
request. `failclass serve` runs uvicorn with it."""

from __future__ import annotations

import json

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from failclass.service.errors import error_body


class JsonErrorsProtocol(HttpToolsProtocol):
    def send_400_response(self, msg: str) -> None:
        body = json.dumps(error_body(400, f"the request cannot be read as HTTP: {msg}")).encode()
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body), b"connection: close\r\n\r\n"]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
