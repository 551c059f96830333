"""A real `failclass serve` on a bad day for its store. A store that cannot be opened (a
damaged SQLite file, a PostgreSQL server that does not answer, a schema from a newer
failclass) stops it with one line and exit status 3. A store that cannot be written (a
read-only file system, a read-only PostgreSQL transaction, a full disk) leaves it
classifying, answers 503 where it would record, and /readyz says so while /healthz (a
read) still answers. The read-only and full file systems are small tmpfs mounts in a
mount namespace of the server's own (unshare), as an unprivileged user can make them."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import ROOT, postgres_schema_url, run_cli
from service_server import running_service, serve_and_stop

pytestmark = pytest.mark.e2e

OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)\n"
ATTEMPT = {"job_id": "bad-day-1", "attempt": 1, "user": "u", "log": OOM}
UNSHARE = shutil.which("unshare")


def namespaces_work() -> bool:
    if UNSHARE is None:
        return False
    probe = [UNSHARE, "--map-root-user", "--mount", "sh", "-c", "mount -t tmpfs tmpfs /mnt"]
    return subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0


needs_namespaces = pytest.mark.skipif(not namespaces_work(), reason="unshare cannot make a user and mount namespace here")


def on_small_file_system(folder: Path, database_url: str, then: str) -> list[str]:
    """A launcher: a 8 MiB tmpfs at ``folder`` in a namespace of the server's own, the
    store migrated there, then ``then`` (a shell command), then the server."""
    migrate = f"{sys.executable} -m failclass.cli db upgrade --database-url {database_url}"
    script = f'mount -t tmpfs -o size=8m tmpfs {folder} && {migrate} && {then} && exec "$@"'
    assert UNSHARE is not None
    return [UNSHARE, "--map-root-user", "--mount", "sh", "-c", script, "serve"]


def assert_refuses_writes_but_classifies(base: str, cause: str, log: Path) -> None:
    with httpx.Client(base_url=base, timeout=30) as http:
        assert http.get("/healthz").status_code == 200  # alive, and the store answers a read
        for refused in (http.get("/readyz"), http.post("/v1/attempts", json=ATTEMPT)):
            assert refused.status_code == 503, refused.text
            error = refused.json()["error"]
            assert error["code"] == "unavailable" and cause in error["message"], error
        classified = http.post("/v1/classify", content=OOM, headers={"Content-Type": "text/plain"})
        assert classified.status_code == 200 and classified.json()["reason"] == "gpu_oom"
        assert "failclass_store_writable 0.0" in http.get("/metrics").text
    text = log.read_text()
    warnings = [line for line in text.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and cause in warnings[0], text[-3000:]
    assert "Traceback" not in text, text[-3000:]


@pytest.fixture
def read_only_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, list[str], str]]:
    """(database URL, launcher, the driver's words for a refused write)."""
    if request.param == "sqlite":
        if not namespaces_work():
            pytest.skip("unshare cannot make a user and mount namespace here")
        folder = tmp_path / "store"
        folder.mkdir()
        url = f"sqlite:///{folder / 'failclass.db'}"
        yield url, on_small_file_system(folder, url, f"mount -o remount,ro {folder}"), "attempt to write a readonly database"
    else:
        for url in postgres_schema_url():
            assert run_cli("db", "upgrade", "--database-url", url).returncode == 0
            read_only = url + "%20-cdefault_transaction_read_only%3Don"  # as a hot standby refuses writes
            yield read_only, [], "read-only transaction"


@pytest.mark.parametrize("read_only_store", ["sqlite", "postgresql"], indirect=True)
def test_a_store_that_cannot_be_written_still_classifies(tmp_path: Path, read_only_store: tuple[str, list[str], str]) -> None:
    url, launcher, cause = read_only_store
    with running_service(url, tmp_path, launcher=launcher) as base:
        assert_refuses_writes_but_classifies(base, cause, next(tmp_path.glob("server-*.log")))


@needs_namespaces
def test_a_full_disk_is_not_ready_until_there_is_room_again(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    url = f"sqlite:///{folder / 'failclass.db'}"
    freed = tmp_path / "free-the-disk"  # outside the namespace's tmpfs: the test's signal
    fill = f"(dd if=/dev/zero of={folder}/fill bs=64k 2>/dev/null; true)"
    server = "$$"  # the shell that becomes the server: the watcher ends with it
    watcher = f"{{ (while [ ! -e {freed} ] && kill -0 {server}; do sleep 0.2; done; rm -f {folder}/fill) & }}"
    with running_service(url, tmp_path, launcher=on_small_file_system(folder, url, f"{fill} && {watcher}")) as base:
        assert_refuses_writes_but_classifies(base, "database or disk is full", next(tmp_path.glob("server-*.log")))
        freed.touch()
        deadline = time.monotonic() + 10
        while httpx.get(f"{base}/readyz", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "still not ready once the disk has room"
            time.sleep(0.2)
        assert httpx.post(f"{base}/v1/attempts", json=ATTEMPT, timeout=30).status_code == 201
        assert "failclass_store_writable 1.0" in httpx.get(f"{base}/metrics", timeout=30).text


def stores_that_cannot_be_opened(tmp_path: Path) -> Iterator[tuple[str, str]]:
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"not a database, whatever its name says\n" * 100)
    yield f"sqlite:///{damaged}", "file is not a database"
    yield "postgresql+psycopg://failclass@127.0.0.1:1/failclass", "Connection refused"
    newer = tmp_path / "newer.db"
    assert run_cli("db", "upgrade", "--database-url", f"sqlite:///{newer}").returncode == 0
    with sqlite3.connect(newer) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")  # written by a newer failclass
    yield f"sqlite:///{newer}", "Can't locate revision identified by '9999'"


def test_a_store_that_cannot_be_opened_is_one_line_and_exit_status_3(tmp_path: Path) -> None:
    for url, cause in stores_that_cannot_be_opened(tmp_path):
        done = serve_and_stop(url)
        assert done.returncode == 3, (url, done.stderr[-3000:])
        (line,) = done.stderr.splitlines()  # one line: the store, then the cause in the driver's words
        assert line.startswith(f"Error: store {url} unavailable: ") and cause in line, done.stderr


def test_serve_documents_its_exit_statuses() -> None:
    said = run_cli("serve", "--help").stdout
    assert "3: the store cannot be opened" in " ".join(said.split())
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "exit status 3 when the store cannot be opened" in readme and "`GET /readyz` says whether it can record" in readme
