"""A store that cannot be opened or used (a corrupt SQLite file, a read-only folder, a
PostgreSQL server that is not there or has no such database, a user without a home):
every command that opens one says so in one line naming the store (its password masked)
and the cause, exit status 3."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import POSTGRES_URL, ROOT
from service_server import free_port

NCCL = ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log"
NOBODY = 65534


def failclass(*args: str, env: dict[str, str] | None = None, user: int | None = None) -> subprocess.CompletedProcess[str]:
    """The real command line, with this environment (FAILCLASS_*, XDG_* and HOME left out
    unless given), as ``user`` when given (util-linux's setpriv, which root runs)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FAILCLASS_", "XDG_")) and k != "HOME"}
    as_user = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
    return subprocess.run(
        [*as_user, sys.executable, "-m", "failclass.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**clean, **(env or {})},
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def shared_tmp() -> Iterator[Path]:
    """A folder another user can reach (pytest's own is private to its user)."""
    folder = Path(tempfile.mkdtemp(prefix="failclass-store-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def other_user() -> int | None:
    """Root writes anywhere: a read-only file or folder is tried as another user."""
    return NOBODY if os.geteuid() == 0 else None


def broken_stores(shared_tmp: Path) -> dict[str, tuple[str, int | None, tuple[str, ...]]]:
    """name -> (URL, user to run as, what the line may say)."""
    corrupt = shared_tmp / "corrupt.db"
    corrupt.write_bytes(b"not a database" + bytes(range(256)) * 64)
    read_only = shared_tmp / "read-only"
    read_only.mkdir(exist_ok=True)
    read_only.chmod(0o555)
    port = free_port()
    return {
        "corrupt": (f"sqlite:///{corrupt}", None, ("file is not a database",)),
        "read-only folder": (
            f"sqlite:///{read_only / 'failclass.db'}",
            other_user(),
            (f"{read_only}/failclass.db.migrate-lock: Permission denied", "unable to open database file"),
        ),
        "no server": (f"postgresql+psycopg://failclass:s3cret@127.0.0.1:{port}/failclass", None, ("Connection refused",)),
        "no such database": (POSTGRES_URL.rsplit("/", 1)[0] + "/no_such_failclass_db", None, ("does not exist",)),
    }


COMMANDS = {
    "hook decide": ("hook", "decide", "--job-id", "j", "--user", "u", "--log", str(NCCL), "--database-url"),
    "hook admit": ("hook", "admit", "--job-id", "j", "--user", "u", "--database-url"),
    "report": ("report", "--database-url"),
    "db upgrade": ("db", "upgrade", "--database-url"),
    "notify flush": ("notify", "flush", "--database-url"),
}


@pytest.mark.parametrize("store", ["corrupt", "read-only folder", "no server", "no such database"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_store_that_cannot_be_opened_is_one_line_and_exit_3(shared_tmp: Path, store: str, command: str) -> None:
    url, user, says = broken_stores(shared_tmp)[store]
    done = failclass(*COMMANDS[command], url, user=user)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "s3cret" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    shown = url.replace(":s3cret@", ":***@")
    assert line.startswith(f"Error: store {shown} unavailable: ") and any(s in line for s in says), line


def test_a_database_that_cannot_be_written_is_one_line_and_exit_3(shared_tmp: Path) -> None:
    """It opens (the schema is at head: nothing to migrate), then refuses the attempt."""
    folder = shared_tmp / "read-only-file"
    folder.mkdir()
    folder.chmod(0o777)
    url = f"sqlite:///{folder / 'failclass.db'}"
    assert failclass("db", "upgrade", "--database-url", url).returncode == 0
    (folder / "failclass.db").chmod(0o444)
    (folder / "failclass.db.migrate-lock").chmod(0o666)
    done = failclass(*COMMANDS["hook decide"], url, user=other_user())
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert done.stderr.strip() == f"Error: store {url} unavailable: attempt to write a readonly database"


def test_a_store_without_the_schema_is_not_read_as_empty(tmp_path: Path) -> None:
    """`report` does not migrate: an empty database says what to run instead of failing on a
    missing table (or reporting nothing)."""
    done = failclass("report", "--database-url", f"sqlite:///{tmp_path / 'empty.db'}")
    assert done.returncode == 3, done.stderr
    assert "its schema is at revision none" in done.stderr and "failclass db upgrade" in done.stderr
    assert failclass("db", "upgrade", "--database-url", f"sqlite:///{tmp_path / 'empty.db'}").returncode == 0
    assert failclass("report", "--database-url", f"sqlite:///{tmp_path / 'empty.db'}").returncode == 0


def test_an_unusable_home_names_the_default_store(tmp_path: Path) -> None:
    """HOME is not a folder: the default store cannot be made there; the line names it."""
    home = tmp_path / "home"
    home.write_text("a file, not a folder")
    done = failclass("hook", "decide", "--job-id", "j", "--user", "u", "--log", str(NCCL), env={"HOME": str(home)})
    assert done.returncode == 3, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        f"Error: store sqlite:///{home}/.local/share/failclass/failclass.db unavailable: "
        f"{home}/.local/share/failclass: Not a directory"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="runs as a user without a passwd entry, which needs root")
def test_a_user_without_a_home_is_told_to_name_a_store() -> None:
    """No HOME, no passwd entry (a daemon's user): no default store to open, and no rule
    cache either (the rules are compiled at each start instead)."""
    done = failclass("hook", "decide", "--job-id", "j", "--user", "u", "--log", str(NCCL), user=4242)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == (
        "Error: no default store: no XDG_DATA_HOME and no home folder; give --database-url or FAILCLASS_DATABASE_URL"
    )
