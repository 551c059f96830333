"""The independent waste-trace generator (benchmarks/independent_waste): the same seed gives the
same bytes, its DCGM series are Prometheus range-query answers that carry exactly the readings its
truth was computed from, and every planted cause lies inside its job, on its GPUs and log lines."""

from __future__ import annotations

import csv
import datetime as dt
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
GENERATOR = ROOT / "benchmarks" / "independent_waste" / "generate.py"
DCGM = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"}
EXPORTER_LABELS = {"__name__", "gpu", "UUID", "device", "modelName", "Hostname", "pci_bus_id", "DCGM_FI_DRIVER_VERSION"}


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("independent_waste_generate", GENERATOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def _run(out: Path, seed: int, *options: str) -> dict:
    assert GEN.main(["--out", str(out), "--jobs", "8", "--seed", str(seed), *options]) == 0
    return json.loads((out / "truth.json").read_text())


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_seed_writes_the_same_bytes_and_another_seed_another_trace(tmp_path: Path) -> None:
    _run(tmp_path / "a", 5)
    _run(tmp_path / "b", 5)
    _run(tmp_path / "c", 9)
    first = _files(tmp_path / "a")
    assert len(first) > 5
    assert first == _files(tmp_path / "b")
    assert first["truth.json"] != _files(tmp_path / "c")["truth.json"]


@pytest.mark.parametrize("jobs_format", ["sacct-json", "k8s-pods"])
def test_prometheus_files_are_range_query_answers_that_hold_the_truths_readings(tmp_path: Path, jobs_format: str) -> None:
    truth = _run(tmp_path, 4, "--jobs-format", jobs_format, "--signals", "prometheus")
    opts = truth["options"]
    step, usable = opts["step_seconds"], None
    readings: dict[tuple[str, str, str], dict[float, int]] = {}  # (metric, job or "", gpu uuid) -> ts -> value
    for name in truth["files"]["metrics"]:
        doc = json.loads((tmp_path / name).read_text())
        assert doc["status"] == "success" and doc["data"]["resultType"] == "matrix"
        assert doc["data"]["result"]
        for series in doc["data"]["result"]:
            labels = series["metric"]
            assert set(labels) >= EXPORTER_LABELS and labels["__name__"] in DCGM
            assert labels["modelName"] == opts["gpu_model"]
            stamps = [ts for ts, _ in series["values"]]
            assert stamps == sorted(set(stamps))
            assert all(isinstance(ts, (int, float)) and (ts - stamps[0]) % step == 0 for ts in stamps)
            assert all(isinstance(v, str) and v.isdigit() for _, v in series["values"])
            owner = labels.get("hpc_job") or (
                f"{labels['exported_namespace']}/{labels['exported_pod']}" if "exported_pod" in labels else ""
            )
            key = (labels["__name__"], owner, labels["UUID"])
            readings.setdefault(key, {}).update({ts: int(v) for ts, v in series["values"]})
    # memory: used + free is the same total on every reading of every GPU
    for (metric, owner, uuid), values in readings.items():
        if metric == "DCGM_FI_DEV_FB_USED":
            free = readings[("DCGM_FI_DEV_FB_FREE", owner, uuid)]
            totals = {values[ts] + free[ts] for ts in values}
            assert len(totals) == 1 and (usable is None or totals == {usable})
            usable = totals.pop()
            assert usable < opts["gpu_memory_total_mib"]
    assert truth["jobs"]
    for job in truth["jobs"]:
        per_gpu = []
        for gpu in job["gpus"]:
            owner = f"{job['namespace']}/{job['pods'][gpu['node']]}" if "pods" in job else job["job"]
            util = list(readings[("DCGM_FI_DEV_GPU_UTIL", owner, gpu["uuid"])].values())
            assert all(job["start"] < ts <= job["end"] for ts in readings[("DCGM_FI_DEV_GPU_UTIL", owner, gpu["uuid"])])
            assert len(util) == (job["end"] - job["start"]) // step
            per_gpu.append(sum(util) / len(util))
        assert sum(per_gpu) / len(per_gpu) == pytest.approx(job["U"], abs=1e-3)
        assert job["low_utilisation"] == (job["U"] <= 50)
        assert job["low_utilisation"] == bool(job["causes"])


def test_nvidia_smi_logs_hold_the_truths_readings(tmp_path: Path) -> None:
    truth = _run(tmp_path, 1, "--jobs-format", "csv", "--signals", "nvidia-smi")
    util: dict[str, list[tuple[float, int]]] = {}
    for name in truth["files"]["metrics"]:
        with (tmp_path / name).open() as f:
            rows = list(csv.reader(f, skipinitialspace=True))
        assert rows[0] == ["timestamp", "index", "uuid", "utilization.gpu [%]", "memory.used [MiB]", "memory.total [MiB]"]
        for stamp, _index, uuid, percent, used, total in rows[1:]:
            ts = dt.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=dt.UTC).timestamp()
            assert percent.endswith(" %") and used.endswith(" MiB") and total == f"{truth['options']['gpu_memory_total_mib']} MiB"
            util.setdefault(uuid, []).append((ts, int(percent[:-2])))
    for job in truth["jobs"]:
        per_gpu = [[v for ts, v in util[g["uuid"]] if job["start"] < ts <= job["end"]] for g in job["gpus"]]
        assert all(len(x) == (job["end"] - job["start"]) // truth["options"]["step_seconds"] for x in per_gpu)
        assert sum(sum(x) / len(x) for x in per_gpu) / len(per_gpu) == pytest.approx(job["U"], abs=1e-3)


@pytest.mark.parametrize(("seed", "jobs_format"), [(2, "k8s-pods"), (3, "sacct-parsable"), (8, "sacct-json"), (9, "csv")])
def test_truth_spans_lie_inside_their_jobs_on_their_gpus_and_log_lines(tmp_path: Path, seed: int, jobs_format: str) -> None:
    truth = _run(tmp_path, seed, "--jobs-format", jobs_format)
    names = {c["id"]: c["category"] for c in truth["categories"]}
    assert len(names) == 15
    planted = 0
    for job in truth["jobs"]:
        gpus = {f"{g['node']}:{g['index']}" for g in job["gpus"]}
        lines = (tmp_path / job["log"]).read_text().splitlines() if job["log"] else []
        for cause in job["causes"]:
            planted += 1
            assert names[cause["id"]] == cause["category"]
            assert cause["spans"] and cause["extent"] == [cause["spans"][0][0], cause["spans"][-1][1]]
            for a, b in cause["spans"]:
                assert job["start"] <= a < b <= job["end"]
            assert cause["gpus"] and set(cause["gpus"]) <= gpus
            assert all(1 <= n <= len(lines) for n in cause["evidence_lines"])
        for benign in job["benign"]:
            assert all(job["start"] <= a < b <= job["end"] for a, b in benign["spans"])
        assert set(job["never_used_gpus"]) <= gpus
    assert planted >= 8


def test_snippets_read_without_pyyaml_as_pyyaml_reads_them() -> None:
    path = GENERATOR.parent / "snippets.yaml"
    ours = [vars(s) | {"lines": list(s.lines)} for s in GEN.load_snippets(path)]
    assert ours == yaml.safe_load(path.read_text())
    assert all(s["source"].startswith("https://") for s in ours)
