"""Metrics count every worker: a real `failclass serve --workers 2` on PostgreSQL answers
every scrape with the same totals, whichever worker takes it; the holds, blacklist and
suspect-node gauges say what the store holds; a worker that is replaced takes its
presence away but not its counts."""

from __future__ import annotations

import os
import signal
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, postgres_schema_url
from ops.deploy_exprs import alert_exprs, dashboard_exprs, metric_names
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families
from service_server import running_service

import failclass

pytestmark = pytest.mark.e2e

LOGS = {
    "missing_input": (ROOT / "corpora/produced/incorrect_inputs/incorrect_inputs__missing_data_file__0.log").read_text(),
    "cpu_oom": (ROOT / "corpora/produced/cpu_oom/cpu_oom__python_memoryerror__0.log").read_text(),
    "ecc": (ROOT / "corpora/public/gpu_ecc_error/alpaca_lora_uncorrectable_ecc.log").read_text(),
}
ROUND = 40  # classify requests sent at a time
POLICY = "reasons:\n  cpu_oom: {hold_after: 2}\n"  # carol's second CPU OOM puts her on hold


def attempts() -> list[dict[str, Any]]:
    """Four missing-input failures from three jobs (a blacklist entry), two CPU OOMs of one
    user (a hold), two ECC failures of two jobs on gpu-07 (a suspect node); 2 h each."""
    times = {"start_time": "2026-11-20T10:00:00Z", "end_time": "2026-11-20T12:00:00Z"}
    bodies = [
        {"job_id": job, "attempt": n, "user": f"u{i}", "inputs": ["/data/gone"], "gpus": 1, "log": LOGS["missing_input"]}
        for i, (job, n) in enumerate((("bl-a", 1), ("bl-a", 2), ("bl-b", 1), ("bl-c", 1)))
    ]
    bodies += [{"job_id": f"oom-{n}", "attempt": 1, "user": "carol", "gpus": 2, "log": LOGS["cpu_oom"]} for n in range(2)]
    bodies += [
        {"job_id": f"ecc-{n}", "attempt": 1, "user": "dan", "gpus": 8, "nodes": ["gpu-07"], "log": LOGS["ecc"]} for n in range(2)
    ]
    return [{**body, **times} for body in bodies]


def scrape(base: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample of one scrape by name: (labels, value)."""
    samples: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in text_string_to_metric_families(httpx.get(f"{base}/metrics", timeout=30).text):
        for sample in family.samples:
            samples[sample.name].append((sample.labels, sample.value))
    return samples


def total(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(value for got, value in samples.get(name, []) if labels.items() <= got.items())


def classify_count(samples: dict[str, list[tuple[dict[str, str], float]]]) -> float:
    return total(samples, "failclass_request_seconds_count", route="/v1/classify", status="200")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp_path = tmp_path_factory.mktemp("metrics")
    shared = tmp_path / "metrics"
    shared.mkdir()
    (shared / "counter_1.db").write_bytes(b"left over from an earlier run")  # cleaned at start, or the scrape breaks
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    urls = postgres_schema_url()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(shared)}
    with running_service(next(urls), tmp_path, "--workers", "2", "--policy", str(policy), env=env) as base:
        workers(base, lambda pids: len(pids) == 2)  # /healthz answered as soon as one was up
        yield base, shared
    next(urls, None)


def workers(base: str, wanted: Callable[[set[str]], bool]) -> set[str]:
    """The pids of the live workers, once ``wanted`` holds of them (60 s at most)."""
    deadline = time.monotonic() + 60
    while True:
        pids = {labels["pid"] for labels, _ in scrape(base)["failclass_worker_start_time_seconds"]}
        if wanted(pids):
            return pids
        assert time.monotonic() < deadline, f"workers now: {pids}"
        time.sleep(0.5)


def classified_per_worker(shared: Path) -> list[float]:
    """Each worker's own count of classify requests, from its own file in the shared folder."""
    return [
        sample.value
        for path in shared.glob("histogram_*.db")
        for family in MultiProcessCollector.merge([str(path)])
        for sample in family.samples
        if sample.name == "failclass_request_seconds_count" and sample.labels["route"] == "/v1/classify"
    ]


def waste_body() -> dict[str, Any]:
    """An interactive job idle for its last 40 minutes, as DCGM readings answered by Prometheus."""
    start = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

    def answer(metric: str, values: list[float]) -> dict[str, Any]:
        points = [[(start + timedelta(minutes=i)).timestamp(), str(v)] for i, v in enumerate(values)]
        labels = {"__name__": metric, "Hostname": "gpu-7", "gpu": "0"}
        return {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": labels, "values": points}]}}

    return {
        "prometheus": [
            answer("DCGM_FI_DEV_GPU_UTIL", [80.0] * 20 + [0.0] * 40),
            answer("DCGM_FI_DEV_FB_USED", [9e3] * 20 + [0.0] * 40),
        ],
        "jobs": [{"job": "nb-1", "user": "ana", "kind": "interactive", "gpus": ["gpu-7:0"], "start": start.isoformat()}],
        "now": (start + timedelta(minutes=59)).isoformat(),
    }


@pytest.fixture(scope="module")
def exercised(service: tuple[str, Path]) -> int:
    """Classify requests until both workers have answered some, then the attempts, the report and a
    waste report and watch; how many classify requests were sent."""
    base, shared = service

    def classify(_: int) -> int:  # a new connection each, 16 at once: both workers take some
        response = httpx.post(f"{base}/v1/classify", content=LOGS["ecc"].encode(), headers={"Content-Type": "text/plain"})
        return response.status_code

    sent = 0
    with ThreadPoolExecutor(16) as pool:
        while len(classified_per_worker(shared)) < 2 and sent < 20 * ROUND:
            assert set(pool.map(classify, range(ROUND))) == {200}
            sent += ROUND
    for body in attempts():
        assert httpx.post(f"{base}/v1/attempts", json=body, timeout=60).status_code == 201
    assert httpx.get(f"{base}/v1/report", timeout=60).status_code == 200  # each user's figures
    report = {k: v for k, v in waste_body().items() if k != "now"}
    assert httpx.post(f"{base}/v1/waste/report", json=report, timeout=60).status_code == 200
    assert httpx.post(f"{base}/v1/waste/watch", json=waste_body(), timeout=60).json()["signals"]
    return sent


def test_every_scrape_counts_every_worker(service: tuple[str, Path], exercised: int) -> None:
    base, shared = service
    sent = exercised
    per_worker = classified_per_worker(shared)
    assert len(per_worker) == 2 and sum(per_worker) == sent, f"both workers must have answered: {per_worker}"

    scrapes = [scrape(base) for _ in range(8)]
    assert {classify_count(s) for s in scrapes} == {sent}
    assert {total(s, "failclass_classifications_total") for s in scrapes} == {sent + len(attempts())}
    samples = scrapes[-1]
    assert len(samples["failclass_worker_start_time_seconds"]) == 2
    assert {labels["pid"] for labels, _ in samples["process_resident_memory_bytes"]} == {
        labels["pid"] for labels, _ in samples["failclass_worker_start_time_seconds"]
    }
    assert samples["failclass_build_info"] == [
        ({"version": failclass.__version__, "python": samples["failclass_build_info"][0][0]["python"]}, 1)
    ]

    # Failed attempts and the GPU-hours they held, by reason: 2 h x GPUs each.
    assert total(samples, "failclass_failed_attempts_total") == len(attempts())
    assert total(samples, "failclass_gpu_hours_lost_total", reason="gpu_ecc_error") == 2 * 2 * 8
    assert total(samples, "failclass_gpu_hours_lost_total", reason="cpu_oom") == 2 * 2 * 2
    # Their logs save no checkpoint: lost since the last one is the whole attempt.
    assert total(samples, "failclass_gpu_hours_lost_since_checkpoint_total", reason="gpu_ecc_error") == 2 * 2 * 8

    # The state gauges say what the store says.
    holds = httpx.get(f"{base}/v1/holds").json()["holds"]
    blacklist = httpx.get(f"{base}/v1/blacklist").json()["blacklist"]
    nodes = httpx.get(f"{base}/v1/nodes").json()["nodes"]
    assert [(h["user"], h["reason"]) for h in holds] == [("carol", "cpu_oom")]
    assert samples["failclass_holds_active"] == [({"reason": "cpu_oom"}, 1)]
    assert len(blacklist) == 1 and total(samples, "failclass_blacklist_entries") == 1
    assert [n["node"] for n in nodes if n["suspect"]] == ["gpu-07"] and total(samples, "failclass_suspect_nodes") == 1
    assert total(samples, "failclass_store_up") == 1
    assert httpx.delete(f"{base}/v1/holds/{holds[0]['id']}").status_code == 204
    assert total(scrape(base), "failclass_holds_active") == 0


def test_a_replaced_worker_keeps_its_counts_and_drops_its_presence(service: tuple[str, Path]) -> None:
    base, _ = service
    for _ in range(10):
        httpx.post(f"{base}/v1/classify", content=b"x", headers={"Content-Type": "text/plain"})
    before = scrape(base)
    gone = min(labels["pid"] for labels, _ in before["failclass_worker_start_time_seconds"])
    os.kill(int(gone), signal.SIGTERM)  # uvicorn's supervisor starts another in its place
    workers(base, lambda pids: len(pids) == 2 and gone not in pids)
    assert classify_count(scrape(base)) == classify_count(before) > 0


def test_the_dashboard_and_the_alerts_read_only_exported_metrics(service: tuple[str, Path], exercised: int) -> None:
    """Every metric name in deploy/ is in a real scrape (`up` is Prometheus's own)."""
    families = list(text_string_to_metric_families(httpx.get(f"{service[0]}/metrics", timeout=30).text))
    exported = {f.name for f in families} | {sample.name for f in families for sample in f.samples} | {"up"}
    for where, exprs in (("alerts.yml", alert_exprs()), ("failclass.json", dashboard_exprs())):
        for name, expr in exprs.items():
            assert metric_names(expr), f"{where}: {name} reads no metric"
            assert metric_names(expr) <= exported, f"{where}: {name} reads {metric_names(expr) - exported}"
