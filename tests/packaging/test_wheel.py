"""What a user installs: the wheel, built from this checkout, installed with its declared
dependencies into a fresh virtual environment, used from a folder that is not the
checkout (the README's examples: classify, rules test, batch and its report, serve)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv where only the wheel (and what it declares) is installed."""
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(work)], check=True)
    (wheel,) = work.glob("failclass-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "failclass",
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info",
    }
    for packaged in (
        "signatures/taxonomy.yaml",
        "signatures/prefixes.yaml",
        "models/fallback.npz",
        "policy/default.yaml",
        "waste/causes.yaml",
        "waste/lines.yaml",
        "waste/report.html.j2",
    ):
        assert f"failclass/data/{packaged}" in names, packaged
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True, timeout=900)
    return venv / "bin"


def run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "failclass"), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def test_installed_wheel_classifies_and_tests_its_rules_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    for sample in (ROOT / "samples").glob("*.log"):
        shutil.copy(sample, tmp_path)
    assert run(installed, "--version", cwd=tmp_path).stdout.startswith("failclass, version")
    done = run(installed, "classify", "--json", *sorted(p.name for p in tmp_path.glob("*.log")), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 14 and all(row["path"].split("--")[0] == row["reason"] for row in rows)
    assert "warning" not in done.stderr  # the packaged model loaded
    tested = run(installed, "rules", "test", cwd=tmp_path)
    assert tested.returncode == 0 and " 0 failures" in tested.stdout, tested.stdout[-500:]


def test_installed_wheel_batches_and_reports(installed: Path, tmp_path: Path) -> None:
    shutil.copy(ROOT / "samples" / "attempts.tar.gz", tmp_path)
    done = run(installed, "batch", "attempts.tar.gz", "--out", "results", "--processes", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = run(installed, "report", "results/results.jsonl", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "14 attempts, 14 failed" in report.stdout


def test_installed_wheel_generates_and_reports_gpu_waste(installed: Path, tmp_path: Path) -> None:
    assert run(installed, "waste", "generate", "trace", "--jobs", "10", cwd=tmp_path).returncode == 0
    done = run(
        installed, "waste", "report", "trace/samples.parquet", "--jobs", "trace/jobs.csv", "--format", "html", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "GPU time held but not used" in done.stdout and "<svg" in done.stdout


def test_installed_wheel_serves(installed: Path, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(installed / "failclass"), "serve", "--port", str(port), "--database-url", f"sqlite:///{tmp_path / 's.db'}"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
                    health = json.loads(answer.read())
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (
                    server.stderr.read().decode() if server.stderr else ""
                )
                time.sleep(0.3)
        assert health["status"] == "ok" and health["model"] is True and health["rules"] >= 300
        body = (ROOT / "samples" / "gpu_oom--nccl_p2p_setup_cuda_oom.log").read_bytes()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/classify", data=body, headers={"Content-Type": "text/plain"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert json.loads(answer.read())["reason"] == "gpu_oom"
    finally:
        server.terminate()
        server.wait(timeout=30)
