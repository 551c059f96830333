"""Many clients report attempts for the same jobs and users at once, each twice: nothing
is lost, each attempt is counted exactly once, and the per-user hold fires exactly once.
A real uvicorn server: two worker processes on PostgreSQL, one on SQLite (which allows
one writer process)."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, postgres_schema_url
from service_server import running_service

pytestmark = pytest.mark.e2e

CPU_OOM = (ROOT / "corpora/produced/cpu_oom/cpu_oom__python_memoryerror__0.log").read_text()
NCCL = (ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log").read_text()
OOM_JOBS = 60  # one user's CPU OOMs across independent jobs: the 20th puts them on hold
NCCL_JOBS, NCCL_ATTEMPTS = 30, 3


def reports() -> list[dict[str, Any]]:
    bodies = [{"job_id": f"oom-{n}", "attempt": 1, "user": "carol", "log": CPU_OOM} for n in range(OOM_JOBS)]
    for job in range(NCCL_JOBS):
        for attempt in range(1, NCCL_ATTEMPTS + 1):
            bodies.append({"job_id": f"nccl-{job}", "attempt": attempt, "user": f"user-{job % 7}", "gpus": 8, "log": NCCL})
    for body in bodies:
        body["idempotency_key"] = f"{body['job_id']}/{body['attempt']}"
    return bodies


@pytest.mark.parametrize("database", ["postgresql", "sqlite"])
def test_concurrent_reports_count_each_attempt_once(database: str, tmp_path: Path) -> None:
    urls = iter(postgres_schema_url()) if database == "postgresql" else iter([f"sqlite:///{tmp_path / 'failclass.db'}"])
    workers = "2" if database == "postgresql" else "1"
    bodies = reports()
    requests = bodies * 2  # every attempt reported twice, as a retrying client would
    random.Random(7).shuffle(requests)
    limits = httpx.Limits(max_connections=32)
    with (
        running_service(next(urls), tmp_path, "--workers", workers) as base,
        httpx.Client(base_url=base, timeout=120, limits=limits) as http,
    ):

        def send(body: dict[str, Any]) -> tuple[str, int, dict[str, Any]]:
            # A new connection per report, as independent clients: both workers get them.
            response = httpx.post(f"{base}/v1/attempts", json=body, timeout=120)
            return body["idempotency_key"], response.status_code, response.json()

        with ThreadPoolExecutor(32) as pool:
            answers = list(pool.map(send, requests))
        decisions = http.get("/v1/decisions", params={"limit": 1000}).json()["decisions"]
        holds = http.get("/v1/holds").json()["holds"]
    next(urls, None)

    by_key: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for key, status, body in answers:
        assert status in (200, 201), body
        by_key[key].append((status, body))
    assert len(by_key) == len(bodies)
    for key, pair in by_key.items():
        assert sorted(status for status, _ in pair) == [200, 201], key
        first, second = (body for _, body in pair)
        assert first["attempt_id"] == second["attempt_id"] and first["decision"] == second["decision"], key

    assert len(decisions) == len(bodies)  # one decision per attempt, none lost, none doubled
    carol = Counter(d["action"] for d in decisions if d["user"] == "carol")
    assert carol == {"retry_with_more_resources": 19, "hold": OOM_JOBS - 19}
    assert [(h["user"], h["reason"]) for h in holds] == [("carol", "cpu_oom")]
    per_job = Counter(d["action"] for d in decisions if d["job_id"].startswith("nccl-"))
    assert per_job == {"retry": NCCL_JOBS * NCCL_ATTEMPTS}
