"""What a user installs: the wheel, built from this checkout, installed with its declared
dependencies into a fresh virtual environment, used from a folder that is not the
checkout. First the core alone (what a scheduler's controller installs: classify and
every mode of the hook, without the report, batch, waste and service libraries), then
``[all]`` in the same environment for the README's other examples (rules test, batch and
its report, waste, serve)."""

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

NOT_IN_THE_CORE = ("matplotlib", "jinja2", "pyarrow", "dask", "distributed", "fastapi", "uvicorn", "sklearn", "scipy", "psycopg")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, with only the failclass package and its data in it."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # setuptools builds in the source tree: a copy, so that no other test's files move under it
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True
    )
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(work)], check=True)
    (built,) = work.glob("failclass-*.whl")
    names = zipfile.ZipFile(built).namelist()
    assert {name.split("/")[0] for name in names} == {
        "failclass",
        built.name.split("-")[0] + "-" + built.name.split("-")[1] + ".dist-info",
    }
    for packaged in (
        "signatures/taxonomy.yaml",
        "signatures/prefixes.yaml",
        "signatures/endings.yaml",
        "models/fallback.npz",
        "policy/default.yaml",
        "waste/causes.yaml",
        "waste/lines.yaml",
        "waste/report.html.j2",
    ):
        assert f"failclass/data/{packaged}" in names, packaged
    return built


@pytest.fixture(scope="module")
def core(wheel: Path) -> Path:
    """bin/ of a fresh venv where the wheel is installed without extras."""
    venv = wheel.parent / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(wheel)], check=True, timeout=900)
    return venv / "bin"


@pytest.fixture(scope="module")
def installed(wheel: Path, core: Path) -> Path:
    """The same venv after ``pip install 'failclass[all]'`` (so the core checks come first)."""
    subprocess.run([str(core / "pip"), "install", "-q", "--no-compile", f"{wheel}[all]"], check=True, timeout=900)
    return core


def run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / "failclass"), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def classifies_the_samples(bin_dir: Path, folder: Path) -> None:
    done = run(bin_dir, "classify", "--json", *sorted(p.name for p in folder.glob("*.log")), cwd=folder)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 14 and all(row["path"].split("--")[0] == row["reason"] for row in rows)
    assert "warning" not in done.stderr  # the packaged model loaded


def test_the_core_install_classifies_and_runs_the_hook_without_the_heavy_extras(core: Path, tmp_path: Path) -> None:
    found = subprocess.run(
        [str(core / "python"), "-c", f"import importlib.util as u; print([m for m in {NOT_IN_THE_CORE} if u.find_spec(m)])"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip() == "[]", found.stdout
    for sample in (ROOT / "samples").glob("*.log"):
        shutil.copy(sample, tmp_path)
    assert run(core, "--version", cwd=tmp_path).stdout.startswith("failclass, version")
    classifies_the_samples(core, tmp_path)
    oom = ["--user", "alice", "--gpus", "8", "--node", "gpu-07", "--log", "gpu_oom--nccl_p2p_setup_cuda_oom.log", "--json"]
    store = ["--database-url", f"sqlite:///{tmp_path / 'failclass.db'}"]
    decided = run(core, "hook", "decide", "--job-id", "4711", "--attempt", "1", *oom, *store, cwd=tmp_path)
    assert decided.returncode == 11, decided.stderr  # retry_elsewhere
    answer = json.loads(decided.stdout)
    assert (answer["classification"]["reason"], answer["action"], answer["attempt_id"]) == ("gpu_oom", "retry_elsewhere", 1)
    assert run(core, "hook", "admit", "--job-id", "4712", "--user", "alice", *store, cwd=tmp_path).returncode == 0
    remote = ["--service-url", "http://127.0.0.1:9", "--token", "t", "--timeout", "2"]  # nothing listens: the local fallback
    fallback = run(core, "hook", "decide", "--job-id", "4713", "--attempt", "1", *oom, *remote, cwd=tmp_path)
    assert fallback.returncode == 11 and json.loads(fallback.stdout)["fallback"].startswith("service unreachable"), (
        fallback.stderr
    )
    shutil.copy(ROOT / "corpora" / "gpu_signals" / "nvidia_smi--xuesongtap_a10_lms.csv", tmp_path / "gpu-node-7.csv")
    (tmp_path / "jobs.csv").write_text(
        "job,user,gpus,start,end,kind\nnotebook-42,ana,gpu-node-7:0,2024-01-16T14:44:00Z,2024-01-16T15:00:00Z,interactive\n"
    )
    idle = ["gpu-node-7.csv", "--jobs", "jobs.csv", "--now", "2024-01-16T14:47:00Z", "--warn-after", "1", "--release-after", "2"]
    idle += ["--grace", "0"]  # started 3 minutes before
    watched = run(core, "hook", "idle-watch", *idle, cwd=tmp_path)  # text signals: no pyarrow
    assert watched.returncode == 0 and watched.stdout.startswith("release notebook-42: no GPU work"), watched.stderr


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        (["serve"], "service"),
        (["batch", "samples", "--out", "results"], "batch"),
        (["waste", "generate", "trace"], "waste"),
        (["hook", "idle-watch", "samples.parquet", "--jobs", "jobs.csv"], "waste"),  # Parquet signals only
        (
            ["hook", "decide", "--job-id", "1", "--user", "u", "--log", "x.log", "--database-url", "postgresql:///test"],
            "postgres",
        ),
    ],
)
def test_the_core_install_names_the_extra_a_command_needs(core: Path, tmp_path: Path, command: list[str], extra: str) -> None:
    shutil.copy(ROOT / "samples" / "gpu" / "samples.parquet", tmp_path)
    (tmp_path / "jobs.csv").write_text("job,user,gpus,start,end\n")
    (tmp_path / "x.log").write_text("RuntimeError: CUDA error: out of memory\n")
    (tmp_path / "samples").mkdir()
    done = run(core, *command, cwd=tmp_path)
    path = " ".join(command[:2] if command[0] in ("hook", "waste") else command[:1])
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"Error: failclass {path} needs the '{extra}' extra: pip install 'failclass[{extra}]'\n"


def test_installed_wheel_classifies_and_tests_its_rules_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    for sample in (ROOT / "samples").glob("*.log"):
        shutil.copy(sample, tmp_path)
    assert run(installed, "--version", cwd=tmp_path).stdout.startswith("failclass, version")
    classifies_the_samples(installed, tmp_path)
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
