"""A real failclass service (uvicorn, started by `failclass serve`) for the service tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_service(
    database_url: str,
    workdir: Path,
    *args: str,
    env: dict[str, str] | None = None,
    launcher: Sequence[str] = (),
    port: int | None = None,
) -> Iterator[str]:
    """Start `failclass serve` on ``port`` (a free one by default), through ``launcher`` (a
    command that ends by running its arguments); yield its base URL; stop it."""
    port = port or free_port()
    serve = [sys.executable, "-m", "failclass.cli", "serve", "--port", str(port), "--database-url", database_url, *args]
    command = [*launcher, *serve]
    log = (workdir / f"server-{port}.log").open("wb")
    process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the service exited: {(workdir / f'server-{port}.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the service did not start within 60 s")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def serve_and_stop(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`failclass serve` expected to refuse to start (a minute at most, should it serve instead)."""
    command = [sys.executable, "-m", "failclass.cli", "serve", "--port", str(free_port()), "--database-url", database_url, *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
