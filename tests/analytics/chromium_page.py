"""A real headless Chromium (Debian's `chromium`) driven over the DevTools protocol: open
a page, evaluate JavaScript in it, take a screenshot. Enough for DOM and layout
assertions without a browser download."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

STARTUP_S = 30
CALL_S = 30


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    def __init__(self, executable: str, profile: Path, width: int = 1200, height: int = 900) -> None:
        command = [
            executable,
            "--headless",
            "--no-sandbox",  # tests run as root in CI containers
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--window-size={width},{height}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + STARTUP_S
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page"]
        self.stack = ExitStack()
        self.socket: ClientConnection = self.stack.enter_context(connect(pages[0]["webSocketDebuggerUrl"], max_size=64 << 20))
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        deadline = time.monotonic() + CALL_S
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv(timeout=CALL_S))
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]  # type: ignore[no-any-return]
            self.events.append(message)
        raise TimeoutError(method)

    def open(self, url: str) -> None:
        self.call("Page.enable")
        self.events.clear()
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + CALL_S
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load")
            self.events.append(json.loads(self.socket.recv(timeout=CALL_S)))

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(answer["exceptionDetails"])
        return answer["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        if getattr(self, "stack", None) is not None:
            self.stack.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


# What the tests read of a rendered report page: layout and text as the browser has them.
PAGE_FACTS = """(() => {
  const box = el => { const r = el.getBoundingClientRect(); return {top: r.top, width: r.width, height: r.height}; };
  const figures = [...document.querySelectorAll('figure')].map(f => ({
    id: f.id, svg: box(f.querySelector('svg')), caption: f.querySelector('figcaption').innerText,
    texts: [...f.querySelectorAll('svg text')].map(t => t.textContent.trim()).filter(t => t)}));
  const tables = Object.fromEntries([...document.querySelectorAll('table')].map(t =>
    [t.id, [...t.rows].map(r => [...r.cells].map(c => c.innerText))]));
  const empty = document.querySelector('.empty');
  return {title: document.title, scope: document.getElementById('scope').innerText,
    scopeTop: box(document.getElementById('scope')).top, figures, tables,
    empty: empty ? empty.innerText : null, emptyVisible: empty ? box(empty).height > 0 : false,
    bodyText: document.body.innerText};
})()"""
