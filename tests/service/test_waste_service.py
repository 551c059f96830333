"""POST /v1/waste/report and /v1/waste/watch on a real `failclass serve`, with a real
Prometheus range-query answer (corpora/gpu_signals) and readings built in the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from conftest import ROOT
from service_server import running_service

pytestmark = pytest.mark.e2e

RECORDED = json.loads((ROOT / "corpora/gpu_signals/prom_range--recorded_prometheus_lke_scrape.json").read_text())
START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("waste-service")
    with running_service(f"sqlite:///{workdir / 'failclass.db'}", workdir) as url:
        yield url


def answer(metric: str, node: str, gpu: int, values: list[float]) -> dict[str, Any]:
    """A Prometheus range-query answer for one series, one value a minute from START."""
    points = [[(START + timedelta(minutes=i)).timestamp(), str(v)] for i, v in enumerate(values)]
    labels = {"__name__": metric, "Hostname": node, "gpu": str(gpu), "instance": "10.0.0.7:9400", "job": "dcgm"}
    return {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": labels, "values": points}]}}


def test_a_real_range_query_answer_with_pod_labels_gives_a_job_report(base: str) -> None:
    response = httpx.post(f"{base}/v1/waste/report", json={"prometheus": [RECORDED]}, timeout=30)
    assert response.status_code == 200, response.text
    (job,) = response.json()["jobs"]
    assert (job["job"], job["util"], job["gpus"]) == ("default/cuda-75454ffb9f-8ljq7", 0.0, 1)


def test_jobs_place_unlabelled_readings_and_the_metrics_show_the_causes(base: str) -> None:
    busy = [80.0] * 20 + [0.0] * 40  # an interactive job idle for its last 40 minutes
    body = {
        "prometheus": [
            answer("DCGM_FI_DEV_GPU_UTIL", "gpu-7", 0, busy),
            answer("DCGM_FI_DEV_FB_USED", "gpu-7", 0, [9000.0] * 20 + [0.0] * 40),
        ],
        "jobs": [{"job": "nb-1", "user": "ana", "kind": "interactive", "gpus": ["gpu-7:0"], "start": START.isoformat()}],
    }
    report = httpx.post(f"{base}/v1/waste/report", json=body, timeout=30).json()
    assert report["jobs"][0]["user"] == "ana"
    assert {row["cause"] for row in report["intervals"]} == {"interactive_job"}
    metrics = httpx.get(f"{base}/metrics", timeout=30).text
    assert 'failclass_waste_gpu_hours{cause="interactive_job"}' in metrics

    body["now"] = (START + timedelta(minutes=59)).isoformat()
    signals = httpx.post(f"{base}/v1/waste/watch", json=body, timeout=30).json()["signals"]
    assert [(s["job"], s["action"]) for s in signals] == [("nb-1", "warn")]
    assert 'failclass_waste_signals_total{action="warn"} 1.0' in httpx.get(f"{base}/metrics", timeout=30).text


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({}, "give `prometheus`"),
        ({"prometheus": [{"status": "error"}]}, "not a successful Prometheus API answer"),
        ({"exposition": 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} 250\n'}, "utilisation outside 0-100"),
        ({"exposition": "x", "jobs": [{"job": "a", "gpus": ["n:5000"]}]}, "gpus"),
        ({"exposition": "x", "time_limit_hours": 1e308}, "time_limit_hours"),
        ({"exposition": "x", "surprise": 1}, "surprise"),
    ],
)
def test_bad_bodies_are_422_with_the_reason(base: str, body: dict[str, Any], needle: str) -> None:
    response = httpx.post(f"{base}/v1/waste/report", json=body, timeout=30)
    assert response.status_code == 422, response.text
    assert needle in response.text and "Traceback" not in response.text
