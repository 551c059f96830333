"""Prometheus range queries: a real Prometheus scrapes a real DCGM exporter scrape
(served from a file) and failclass reads its HTTP API's answer."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from failclass.waste.formats import read_signal

SIGNALS = Path(__file__).resolve().parents[2] / "corpora" / "gpu_signals"
SCRAPE = SIGNALS / "dcgm_scrape--lke_rtx4000ada_pod_labels.prom"
RECORDED = SIGNALS / "prom_range--recorded_prometheus_lke_scrape.json"


def check(samples) -> None:
    assert len(samples) >= 3  # one row per second of the range
    assert set(samples.nodes) == {"lke529760-766837-0a634ab30000"}
    assert {samples.jobs[j] for j in samples.job} == {"default/cuda-75454ffb9f-8ljq7"}
    assert set(samples.util.tolist()) == {0.0} and set(samples.mem_used.tolist()) == {1.0}
    assert set(samples.mem_total.tolist()) == {20016.0}


def test_a_recorded_range_query_answer_reads_as_a_series(tmp_path):
    check(read_signal(RECORDED))


@pytest.mark.e2e
@pytest.mark.skipif(
    shutil.which("prometheus") is None, reason="no prometheus binary (apt-get install prometheus; make test does)"
)
def test_a_live_prometheus_answer_reads_as_the_same_series(tmp_path):
    spec = importlib.util.spec_from_file_location("record_range_query", SIGNALS / "record_range_query.py")
    recorder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorder)
    answer = recorder.record(SCRAPE, seconds=8)
    assert answer["status"] == "success" and answer["data"]["resultType"] == "matrix"
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    check(read_signal(tmp_path / "answer.json"))
