"""`failclass batch` over every kind of source, damaged and malicious ones, and a run
killed for real and resumed."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
import zstandard
from conftest import ROOT, run_cli

from failclass.batch.runner import run_batch
from failclass.limits import LIMITS
from failclass.logs import archives
from failclass.options import ClassifierOptions

pytestmark = pytest.mark.e2e

LOGS = {
    "jobs/job-a/attempt-1/stdout.log": "corpora/public/gpu_oom/deepspeed_zero_inference_torch_oom.log",
    "jobs/job-a/attempt-1/stderr.log": "corpora/passed/runs/train_progress_plain_0.log",
    "jobs/job-a/attempt-2/rank0.log": "corpora/produced/syntax_error/syntax_error__indentation__0.log",
    "jobs/job-b/out.log": "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log",
}
EXPECTED = {("job-a", 1): "gpu_oom", ("job-a", 2): "syntax_error", ("job-b", 1): "mpi_runtime_failure"}


def tree(base: Path) -> Path:
    for name, source in LOGS.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / source, base / name)
    return base / "jobs"


def results(out: Path) -> dict[tuple[str, int], str]:
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    found = {(r["job_id"], r["attempt"]): r["reason"] for r in rows}
    assert len(found) == len(rows), "an attempt was written twice"
    return found


def batch(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("batch", "--processes", "2", *args)


def tar_of(folder: Path, target: Path, mode: str) -> Path:
    with tarfile.open(target, mode) as archive:
        archive.add(folder, arcname="jobs")
    return target


@pytest.mark.parametrize("suffix", [".tar", ".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".zip", "dir"])
def test_every_source_kind_gives_the_same_attempts(tmp_path: Path, suffix: str) -> None:
    folder = tree(tmp_path / "src")
    if suffix == "dir":
        source = folder
    elif suffix == ".zip":
        source = tmp_path / "jobs.zip"
        with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in LOGS:
                archive.write(tmp_path / "src" / name, name)
    elif suffix == ".tar.zst":
        plain = tar_of(folder, tmp_path / "jobs.tar", "w")
        source = tmp_path / "jobs.tar.zst"
        source.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    else:
        mode = {".tar": "w", ".tar.gz": "w:gz", ".tar.bz2": "w:bz2", ".tar.xz": "w:xz"}[suffix]
        source = tar_of(folder, tmp_path / f"jobs{suffix}", mode)
    done = batch(str(source), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert results(tmp_path / "out") == EXPECTED
    assert (tmp_path / "out" / "results.parquet").exists()
    assert "3 attempts classified" in done.stdout


def test_single_compressed_logs(tmp_path: Path) -> None:
    data = (ROOT / LOGS["jobs/job-b/out.log"]).read_bytes()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "b.log.gz").write_bytes(gzip.compress(data))
    (tmp_path / "in" / "c.log.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    for name in ("b.log.gz", "c.log.zst"):
        done = batch(str(tmp_path / "in" / name), "--out", str(tmp_path / f"out-{name}"))
        assert done.returncode == 0, done.stderr
        assert list(results(tmp_path / f"out-{name}").values()) == ["mpi_runtime_failure"]


def test_a_truncated_archive_keeps_what_came_before(tmp_path: Path) -> None:
    whole = tar_of(tree(tmp_path / "src"), tmp_path / "jobs.tar.gz", "w:gz").read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    done = batch(str(cut), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "damaged" in done.stderr or "cannot be read" in done.stderr


def test_malicious_tar_members_are_refused_and_the_rest_goes_on(tmp_path: Path) -> None:
    log = (ROOT / LOGS["jobs/job-b/out.log"]).read_bytes()
    source = tmp_path / "evil.tar"
    with tarfile.open(source, "w") as archive:
        for name in (
            "../../escape/job-x/out.log",
            "/etc/job-y/out.log",
            "jobs/job-ok/out.log",
            b"jobs/job-\xff/out.log".decode("utf-8", "surrogateescape"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(log)
            archive.addfile(info, io.BytesIO(log))
        link = tarfile.TarInfo("jobs/job-link/out.log")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
        hard = tarfile.TarInfo("jobs/job-hard/out.log")
        hard.type, hard.linkname = tarfile.LNKTYPE, "jobs/job-ok/out.log"
        archive.addfile(hard)
    done = batch(str(source), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert results(tmp_path / "out") == {("job-ok", 1): "mpi_runtime_failure", ("job-\\xff", 1): "mpi_runtime_failure"}
    assert done.stderr.count("unsafe name") == 2
    assert "symlink" in done.stderr and "hard link" in done.stderr
    assert not (tmp_path / "escape").exists() and not list(tmp_path.glob("**/passwd"))


def test_bombs_stop_at_the_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archives, "LIMITS", replace(LIMITS, zip_ratio=50, archive_member_bytes=1 << 20))
    zeros = b"\0" * (4 << 20)
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("jobs/job-z/out.log", zeros)
        archive.writestr("jobs/job-ok/out.log", (ROOT / LOGS["jobs/job-b/out.log"]).read_bytes())
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(zeros))
    for source, name in ((bomb, "bomb"), (gz, "gz")):
        summary = run_batch([source], tmp_path / f"out-{name}", processes=1, options=ClassifierOptions(no_model=True))
        assert any("larger than the limit" in p for p in summary.problems), summary.problems
    assert results(tmp_path / "out-bomb")[("job-ok", 1)] == "mpi_runtime_failure"


def test_the_library_reports_progress_to_the_end_and_resumes(tmp_path: Path) -> None:
    source, out = tree(tmp_path / "src"), tmp_path / "out"
    heard: list[tuple[int, int]] = []
    summary = run_batch(
        [source], out, processes=1, options=ClassifierOptions(no_model=True), on_progress=lambda *n: heard.append(n)
    )
    assert summary.attempts == 3 and heard[-1] == (3, 3) and {total for _, total in heard} == {3}
    assert [done for done, _ in heard] == sorted(done for done, _ in heard)
    heard.clear()
    again = run_batch(
        [source], out, processes=1, options=ClassifierOptions(no_model=True), on_progress=lambda *n: heard.append(n)
    )
    assert (again.attempts, again.skipped_done, heard) == (0, 3, [(0, 0)])
    assert results(out) == EXPECTED


def test_an_enormous_single_line(tmp_path: Path) -> None:
    folder = tmp_path / "jobs" / "job-long"
    folder.mkdir(parents=True)
    (folder / "out.log").write_bytes(
        b"3/8 [00:08<00:14]" * 600_000 + b"\r" + (ROOT / LOGS["jobs/job-a/attempt-1/stdout.log"]).read_bytes()
    )
    done = batch(str(tmp_path / "jobs"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert results(tmp_path / "out") == {("job-long", 1): "gpu_oom"}


def test_killed_for_real_then_resumed_loses_and_repeats_nothing(tmp_path: Path) -> None:
    total = 960  # members go to workers 64 at a time: enough chunks that the kill lands mid-run
    source, out = many_jobs(tmp_path, total), tmp_path / "out"
    process = start_batch(source, out, processes=1)
    deadline = time.monotonic() + 120
    while (
        not (out / "results.jsonl").exists() or len((out / "results.jsonl").read_bytes().splitlines()) < 30
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the whole group: the runner and its workers
    process.wait()
    first = len((out / "results.jsonl").read_bytes().splitlines())
    assert 30 <= first < total, first
    done = run_cli("--no-model", "batch", str(source), "--out", str(out), "--processes", "2")
    assert done.returncode == 0, done.stderr
    assert "already done" in done.stdout
    found = results(out)
    assert len(found) == total and all(key[0].startswith("job-") for key in found)


def test_dask_workers_classify_and_give_the_local_rows(tmp_path: Path) -> None:
    from distributed import LocalCluster

    source = tar_of(tree(tmp_path / "src"), tmp_path / "jobs.tar.gz", "w:gz")
    (tmp_path / "more").mkdir()
    for n in range(12):
        shutil.copy(ROOT / list(LOGS.values())[n % 4], tmp_path / "more" / f"job-{n}.log")
    local = run_cli("batch", str(source), str(tmp_path / "more"), "--out", str(tmp_path / "local"), "--processes", "2")
    assert local.returncode == 0, local.stderr
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = run_cli(
            "batch",
            str(source),
            str(tmp_path / "more"),
            "--out",
            str(tmp_path / "dask"),
            "--executor",
            "dask",
            "--scheduler",
            cluster.scheduler_address,
        )
        workers = set(cluster.scheduler_info["workers"])
    assert remote.returncode == 0, remote.stderr

    def rows(out: Path) -> list[dict[str, object]]:
        return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]

    def without_worker(found: list[dict[str, object]]) -> list[str]:
        return sorted(json.dumps({k: v for k, v in row.items() if k != "classified_by"}, sort_keys=True) for row in found)

    on_dask, on_pool = rows(tmp_path / "dask"), rows(tmp_path / "local")
    assert without_worker(on_dask) == without_worker(on_pool) and len(on_pool) == 15
    assert {row["classified_by"] for row in on_dask} <= workers, "every attempt was classified by a Dask worker"
    assert not {row["classified_by"] for row in on_pool} & workers


def test_fsspec_urls_as_sources(tmp_path: Path) -> None:
    source = tar_of(tree(tmp_path / "src"), tmp_path / "jobs.tar.gz", "w:gz")
    done = batch(f"file://{source}", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert results(tmp_path / "out") == EXPECTED


def test_manifest_joins_facts_and_gives_the_report(tmp_path: Path) -> None:
    tree(tmp_path / "src")
    manifest = tmp_path / "attempts.jsonl"
    rows = [
        {
            "job_id": "train-7",
            "attempt": 1,
            "user": "ann",
            "status": "failed",
            "gpus": 8,
            "start_time": "2026-11-02T09:00:00+00:00",
            "end_time": "2026-11-02T11:00:00+00:00",
            "logs": ["job-a/attempt-1/stdout.log", "job-a/attempt-1/stderr.log"],
        },
        {"job_id": "train-9", "attempt": 1, "user": "bob", "status": "failed", "gpus": 1, "logs": ["job-b/out.log"]},
    ]
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = batch(str(tmp_path / "src" / "jobs"), "--out", str(tmp_path / "out"), "--manifest", str(manifest))
    assert done.returncode == 0, done.stderr
    found = {r["job_id"]: r for r in (json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines())}
    assert found["train-7"]["reason"] == "gpu_oom" and found["train-7"]["user"] == "ann" and found["train-7"]["gpus"] == 8
    assert found["train-9"]["reason"] == "mpi_runtime_failure"
    assert "| GPU out of memory | U | 1 | 1 | 1 | 120.00 |" in (tmp_path / "out" / "report.md").read_text()
    assert (tmp_path / "out" / "report.html").read_text().count("<svg") == 3


def test_malicious_zip_names_and_the_sample_archive(tmp_path: Path) -> None:
    log = (ROOT / LOGS["jobs/job-b/out.log"]).read_bytes()
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../../outside/job-x/out.log", log)
        archive.writestr("/abs/job-y/out.log", log)
        archive.writestr("jobs/job-ok/out.log", log)
    done = batch(str(evil), "--out", str(tmp_path / "out"))
    assert done.returncode == 1 and done.stderr.count("unsafe name") == 2
    assert results(tmp_path / "out") == {("job-ok", 1): "mpi_runtime_failure"}
    sample = batch(str(ROOT / "samples" / "attempts.tar.gz"), "--out", str(tmp_path / "samples"))
    assert sample.returncode == 0 and sample.stdout.startswith("14 attempts classified")
    assert len(results(tmp_path / "samples")) == 14


def test_killing_the_runner_alone_takes_its_workers_with_it(tmp_path: Path) -> None:
    source, out = many_jobs(tmp_path, 3000), tmp_path / "out"
    process = start_batch(source, out, processes=2)
    deadline = time.monotonic() + 120
    workers = children_of(process.pid)
    while not workers and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        workers = children_of(process.pid)
    assert workers, "the runner started no worker process"
    os.kill(process.pid, signal.SIGKILL)  # the runner only, as an OOM killer or an operator would
    process.wait()
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if alive(pid)], "workers outlived their runner"


def many_jobs(base: Path, count: int) -> Path:
    """A folder of ``count`` jobs, one real log each."""
    source = base / "many"
    logs = [ROOT / p for p in LOGS.values()]
    for n in range(count):
        folder = source / f"job-{n:03d}"
        folder.mkdir(parents=True)
        shutil.copy(logs[n % len(logs)], folder / "out.log")
    return source


def start_batch(source: Path, out: Path, processes: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "failclass.cli", "--no-model", "batch", str(source), "--out", str(out)]
    command += ["--processes", str(processes)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def children_of(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


def test_a_manifest_that_names_no_log_of_the_sources_is_an_error(tmp_path: Path) -> None:
    manifest = tmp_path / "attempts.csv"
    manifest.write_text("job_id,attempt,user,status,logs\njob-9,1,alice,failed,elsewhere/stdout.log\n")
    done = batch(str(tree(tmp_path / "src")), "--manifest", str(manifest), "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "the manifest lists 1 logs and the sources hold none of them" in done.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists() or not (tmp_path / "out" / "results.jsonl").read_text()


@pytest.mark.parametrize("suffix", ["dir", ".tar.gz", ".zip"])
def test_only_files_named_like_logs_are_classified_the_others_counted(tmp_path: Path, suffix: str) -> None:
    """Beside the logs (plain, .gz, .zst, no extension, a Slurm .out) lie a README, a URL,
    a table, Parquet and a hidden file: they are skipped and counted, not classified;
    compressed logs are read decompressed, also above the size read in memory."""
    oom = (ROOT / LOGS["jobs/job-a/attempt-1/stdout.log"]).read_bytes()
    mpi = (ROOT / LOGS["jobs/job-b/out.log"]).read_bytes()
    padding = b"step 1 loss 2.5\n" * ((LIMITS.batch_in_memory_bytes >> 4) + 1)  # past what is read in memory
    files = {
        "jobs/job-a/stdout": oom,
        "jobs/job-b/rank0.log.gz": gzip.compress(mpi),
        "jobs/job-c/rank0.log.zst": zstandard.ZstdCompressor().compress(padding + oom),
        "jobs/job-d/slurm-4711.out": mpi,
        "jobs/README.md": b"# what these jobs were\n",
        "jobs/job-a/thread.url": b"https://github.com/example/issue/1\n",
        "jobs/job-a/attempts.csv": b"job_id,attempt\njob-a,1\n",
        "jobs/job-b/results.parquet": b"PAR1\x00PAR1",
        "jobs/job-d/.DS_Store": b"\x00\x00\x00\x01Bud1",
    }
    folder = tmp_path / "src"
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    if suffix == "dir":
        source = folder / "jobs"
    elif suffix == ".zip":
        source = tmp_path / "jobs.zip"
        with zipfile.ZipFile(source, "w", zipfile.ZIP_DEFLATED) as archive:
            for name in files:
                archive.write(folder / name, name)
    else:
        source = tar_of(folder / "jobs", tmp_path / "jobs.tar.gz", "w:gz")
    done = batch(str(source), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    expected = {("job-a", 1): "gpu_oom", ("job-b", 1): "mpi_runtime_failure", ("job-c", 1): "gpu_oom"}
    assert results(tmp_path / "out") == {**expected, ("job-d", 1): "mpi_runtime_failure"}
    assert done.stdout.startswith("4 attempts classified (0 already done), 4 logs (5 other files skipped: not named like logs)")


def test_a_file_the_manifest_lists_is_a_log_whatever_its_name(tmp_path: Path) -> None:
    folder = tmp_path / "jobs" / "job-a"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / LOGS["jobs/job-b/out.log"], folder / "output.json")
    (folder / "notes.md").write_text("rerun on another node\n")
    manifest = tmp_path / "attempts.csv"
    manifest.write_text("job_id,attempt,user,status,logs\njob-a,1,alice,failed,job-a/output.json\n")
    done = batch(str(tmp_path / "jobs"), "--manifest", str(manifest), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert results(tmp_path / "out") == {("job-a", 1): "mpi_runtime_failure"}
    assert "1 logs (1 other files skipped" in done.stdout
