"""Hostile inputs through the real command line: each gives an answer or a clear error,
within bounded memory. Memory is the child's peak RSS, read by a wrapper process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from failclass.limits import LIMITS

pytestmark = pytest.mark.e2e

DATA_MEMORY_MB = 48  # what a log may add to a run over a one-line log: two 4 MB pieces, the tail, slack
WRAPPER = (
    "import json, resource, subprocess, sys;"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "print(json.dumps({'rc': p.returncode, 'out': p.stdout, 'err': p.stderr,"
    " 'peak_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
)
OOM = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)\n"


def classify_measured(*paths: Path) -> dict:
    command = [sys.executable, "-c", WRAPPER, sys.executable, "-m", "failclass.cli", "classify", "--json", *map(str, paths)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900, check=True)
    report = json.loads(done.stdout)
    report["rows"] = [json.loads(line) for line in report["out"].splitlines()]
    return report


@pytest.fixture(scope="module")
def baseline_mb(tmp_path_factory: pytest.TempPathFactory) -> float:
    """Peak memory of classifying a one-line log that no rule explains: the interpreter,
    the rules and the fallback model (loaded only for such logs)."""
    path = tmp_path_factory.mktemp("baseline") / "one.log"
    path.write_bytes(b"epoch 1 step 10 loss 2.31\n")
    return classify_measured(path)["peak_mb"]


def write_random(path: Path, size: int, chunk: int = 16 << 20) -> None:
    with path.open("wb") as out:
        for _ in range(size // chunk):
            out.write(os.urandom(chunk))


def test_two_gigabytes_of_random_bytes(tmp_path: Path, baseline_mb: float) -> None:
    path = tmp_path / "random.bin"
    write_random(path, 2 << 30)
    started = time.monotonic()
    report = classify_measured(path)
    elapsed = time.monotonic() - started
    path.unlink()
    assert report["rc"] == 0, report["err"]
    (row,) = report["rows"]
    assert row["bytes"] == 2 << 30
    assert row["reason"] in {"no_signature"} or row["source"] == "signature"
    assert report["peak_mb"] - baseline_mb < DATA_MEMORY_MB, (report["peak_mb"], baseline_mb)
    print(f"2 GiB random: {elapsed:.1f} s, peak {report['peak_mb']:.0f} MB (one-line log: {baseline_mb:.0f} MB)")


def test_two_hundred_megabyte_single_line(tmp_path: Path, baseline_mb: float) -> None:
    path = tmp_path / "one-line.log"
    with path.open("wb") as out:
        for _ in range(200):
            out.write(b"3/8 [00:08<00:14]" * (1 << 20 // 17) + b"x" * ((1 << 20) % 17))
        out.write(b"\r" + OOM.rstrip(b"\n"))
    report = classify_measured(path)
    assert report["rc"] == 0, report["err"]
    (row,) = report["rows"]
    assert row["reason"] == "gpu_oom"
    assert row["lines"] == 1 and row["evidence"][0]["line"] == 1
    assert row["evidence"][0]["text"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert report["peak_mb"] - baseline_mb < DATA_MEMORY_MB, (report["peak_mb"], baseline_mb)


def test_empty_invalid_utf8_directory_and_missing_in_one_run(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"\xff\xfe\x00\x00\xc3\x28 \xa0\xa1\n\x00\x01\x02" + OOM.replace(b"20.00", b"\xe2\x28\xa1"))
    directory = tmp_path / "adir"
    directory.mkdir()
    missing = tmp_path / "missing.log"
    report = classify_measured(empty, junk, directory, missing)
    assert report["rc"] == 1  # an input failed; the others were still classified
    rows = {Path(r["path"]).name: r for r in report["rows"]}
    assert rows["empty.log"]["reason"] == "no_signature" and rows["empty.log"]["bytes"] == 0
    assert rows["junk.log"]["reason"] == "gpu_oom"
    assert "\ufffd" in rows["junk.log"]["evidence"][0]["text"]
    assert "is a directory" in rows["adir"]["error"]
    assert "no such file" in rows["missing.log"]["error"]
    assert [r["path"] for r in report["rows"]] == [str(p) for p in (empty, junk, directory, missing)]


def test_unreadable_file_is_an_input_error(tmp_path: Path) -> None:
    fifo_free = tmp_path / "truncated.log.gz"
    fifo_free.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\x4b\x4c\x4a")  # gzip cut short
    report = classify_measured(fifo_free)
    assert report["rc"] == 1
    assert "read failed" in report["rows"][0]["error"]


def test_pipes_and_fifos_stream_and_nothing_is_skipped(tmp_path: Path) -> None:
    """`<(cat log)` (a pipe, gzip or not) streams; a FIFO nobody writes to reads as an empty
    log instead of blocking for ever; the files after them are still classified."""
    log = ROOT / "samples" / "gpu_oom--nccl_p2p_setup_cuda_oom.log"
    fifo = tmp_path / "nobody-writes"
    os.mkfifo(fifo)
    script = f'"{sys.executable}" -m failclass.cli --no-model classify --json <(cat "{log}") <(gzip -c "{log}") "{fifo}" "{log}"'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["reason"] for row in rows] == ["gpu_oom", "gpu_oom", "no_signature", "gpu_oom"]
    assert rows[2]["bytes"] == 0


def test_devices_and_endless_streams_end_with_one_line_and_exit_1(tmp_path: Path) -> None:
    """A log that is not a regular file is a stream read up to LIMITS.stream_log_bytes:
    /dev/zero and `yes` end there with one line; /dev/null is an empty log; a gzip stream
    on standard input is read decompressed; a socket is refused. The files after them are
    still classified."""
    log = ROOT / "samples" / "gpu_oom--nccl_p2p_setup_cuda_oom.log"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    limit = f"over {LIMITS.stream_log_bytes:,} bytes, the limit for a log that is not a regular file"
    report = classify_measured(Path("/dev/zero"), Path("/dev/null"), tmp_path / "sock", log)
    assert report["rc"] == 1
    zero, null, sock, oom = report["rows"]
    assert zero == {"path": "/dev/zero", "error": f"/dev/zero: {limit} (pipe, FIFO, device)"}
    assert (null["reason"], null["bytes"]) == ("no_signature", 0)
    assert sock["error"] == f"{tmp_path / 'sock'}: is a socket, not a log file"
    assert oom["reason"] == "gpu_oom"
    server.close()
    command = f'yes "epoch 1 step 10 loss 2.31" | "{sys.executable}" -m failclass.cli --no-model classify -'
    endless = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert (endless.returncode, endless.stdout) == (1, "")
    assert endless.stderr == f"-: error: standard input: {limit} (pipe, FIFO, device)\n"
    zipped = subprocess.run(
        ["bash", "-c", f'gzip -c "{log}" | "{sys.executable}" -m failclass.cli --no-model classify --json -'],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert json.loads(zipped.stdout)["reason"] == "gpu_oom"


def test_batch_reads_a_device_named_as_its_source_as_a_stream(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "failclass.cli", "--no-model", "batch", "/dev/zero", "--out", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"problem: /dev/zero: over {LIMITS.stream_log_bytes:,} bytes" in done.stderr
