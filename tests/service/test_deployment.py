"""Deploying the service: `failclass serve --workers 2` on a fresh PostgreSQL schema
(both workers migrate at start, one after the other), killed by SIGKILL under load (on
SQLite and PostgreSQL: every report answered is kept), and the container's entrypoint
(docker/entrypoint.sh) run as compose.yaml runs it, against the real PostgreSQL: it
migrates, then serves with two workers. Docker itself is not needed."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import ROOT, postgres_schema_url, run_cli
from service_server import free_port, running_service

from failclass.store.migrate import HEAD

pytestmark = pytest.mark.e2e

STARTED = "Application startup complete."
OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)\n"
LOAD_CLIENTS, LOAD_REPORTS = 16, 1000  # reports still unsent when the supervisor is killed


def wait_for_workers(log: Path, workers: int, deadline_s: float = 60) -> str:
    """The server log once ``workers`` workers have started (or the deadline passed)."""
    deadline = time.monotonic() + deadline_s
    while True:
        text = log.read_text(errors="replace")
        if text.count(STARTED) >= workers or time.monotonic() > deadline:
            return text
        time.sleep(0.2)


def test_two_workers_on_a_fresh_postgresql_schema_both_start(tmp_path: Path) -> None:
    for url in postgres_schema_url():
        with running_service(url, tmp_path, "--workers", "2") as base:
            (log,) = tmp_path.glob("server-*.log")
            text = wait_for_workers(log, 2)
            assert text.count(STARTED) == 2, text[-4000:]
            assert "Traceback" not in text and "died" not in text, text[-4000:]
            for _ in range(6):  # answers come from either worker
                assert httpx.get(f"{base}/healthz", timeout=5).json()["database"] == "postgresql"


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            if f"\nPPid:\t{pid}\n" in status.read_text():
                found.add(int(status.parent.name))
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    """Running (a zombie, ended but not yet reaped, is not)."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def serving(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return False
    return True


def report(base: str, n: int, answered: list[str]) -> None:
    """Report a failed attempt; its job id kept in ``answered`` once the service answers
    that it recorded it (a refused or cut connection is the client's to retry)."""
    job_id = f"storm-{n}"
    try:
        body = {"job_id": job_id, "attempt": 1, "user": f"user-{n % 8}", "log": OOM}
        response = httpx.post(f"{base}/v1/attempts", json=body, timeout=60)
    except httpx.TransportError:
        return
    if response.status_code in (200, 201):
        answered.append(job_id)


def test_workers_end_with_their_supervisor_even_killed_by_sigkill(tmp_path: Path, database_url: str) -> None:
    """`kill -9` of `serve --workers 2` while clients report attempts leaves no worker
    holding the port (each asked the kernel for SIGTERM when its parent dies), the service
    starts again on the same port, and every report it answered is kept."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [
        sys.executable,
        "-m",
        "failclass.cli",
        "serve",
        "--workers",
        "2",
        "--port",
        str(port),
        "--database-url",
        database_url,
    ]
    log = tmp_path / "first.log"
    answered: list[str] = []
    with log.open("wb") as out, ThreadPoolExecutor(LOAD_CLIENTS) as clients:
        supervisor = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            assert wait_for_workers(log, 2).count(STARTED) == 2, log.read_text()[-4000:]
            workers = children(supervisor.pid)
            assert len(workers) >= 2 and serving(port)
            sent = [clients.submit(report, base, n, answered) for n in range(LOAD_REPORTS)]
            deadline = time.monotonic() + 60
            while len(answered) < LOAD_CLIENTS and time.monotonic() < deadline:  # the service under load
                time.sleep(0.05)
            assert answered and not all(request.done() for request in sent), log.read_text()[-3000:]
        finally:
            supervisor.kill()
            supervisor.wait(timeout=30)
    deadline = time.monotonic() + 30
    try:
        while any(alive(p) for p in workers) or serving(port):
            assert time.monotonic() < deadline, f"still serving on {port} after the supervisor died: {log.read_text()[-3000:]}"
            time.sleep(0.2)
    finally:
        for orphan in filter(alive, workers):
            os.kill(orphan, signal.SIGKILL)
    with running_service(database_url, tmp_path, "--workers", "2", port=port) as again:  # no "Address already in use"
        kept = httpx.get(f"{again}/v1/decisions", params={"limit": LOAD_REPORTS}, timeout=30).json()["decisions"]
    assert set(answered) <= {decision["job_id"] for decision in kept}


def compose_environment() -> dict[str, str]:
    service = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["failclass"]
    return {name: str(value) for name, value in service["environment"].items()}


def test_the_entrypoint_migrates_then_serves_as_compose_runs_it(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    made = run_cli("token", "create", "ops", "--scopes", "read,write", "--file", str(tokens))
    assert made.returncode == 0, made.stderr
    port = free_port()
    compose = compose_environment()
    assert compose["FAILCLASS_DATABASE_URL"].startswith("postgresql+psycopg://") and compose["FAILCLASS_WORKERS"] == "2"
    for url in postgres_schema_url():
        env = {
            **os.environ,
            **compose,
            "FAILCLASS_DATABASE_URL": url,  # the test server instead of the `db` container
            "FAILCLASS_HOST": "127.0.0.1",
            "FAILCLASS_PORT": str(port),
            "FAILCLASS_TOKENS_FILE": str(tokens),  # compose mounts it as a secret
            "FAILCLASS_LABELS_DIR": str(tmp_path / "labels"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT),  # the `failclass` on PATH runs this checkout, installed or not
        }
        log = tmp_path / "entrypoint.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["sh", str(ROOT / "docker/entrypoint.sh")], env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                text = wait_for_workers(log, 2, deadline_s=90)
                assert text.count(STARTED) == 2, text[-4000:]
                assert f"schema at revision {HEAD}" in text  # migrated before serving
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json()
                assert health["status"] == "ok" and health["auth"] is True and health["database"] == "postgresql"
                probe = re.search(r"HEALTHCHECK .*?127\.0\.0\.1:%s(/\w+)", (ROOT / "Dockerfile").read_text(), re.DOTALL)
                assert probe and probe.group(1) == "/readyz"  # can it record, not only read
                assert httpx.get(f"http://127.0.0.1:{port}{probe.group(1)}", timeout=5).status_code == 200
                assert httpx.get(f"http://127.0.0.1:{port}/v1/holds", timeout=5).status_code == 401
            finally:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)


def test_the_entrypoint_refuses_to_start_without_a_database_url(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FAILCLASS_DATABASE_URL"}
    done = subprocess.run(
        ["sh", str(ROOT / "docker/entrypoint.sh")], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode != 0 and "FAILCLASS_DATABASE_URL" in done.stderr
