"""Text that UTF-8 cannot hold, at the command line's entry points: `classify` of a file and
of standard input, and `hook decide` given it in --facts (a JSON "\\ud800" escape, raw
bytes ED A0 80) or in an argument. One behaviour everywhere (the service's in
tests/service/test_service.py): the text is kept, what cannot be encoded becomes U+FFFD,
the log is classified and the attempt recorded."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

OOM = b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)\n"
SURROGATE = b"\xed\xa0\x80"  # what UTF-8 would make of U+D800, which it cannot hold


def cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The real command line; arguments as the OS passes them (undecodable bytes included)."""
    command = [sys.executable, "-m", "failclass.cli", "--no-model", *args]
    return subprocess.run(command, input=stdin, capture_output=True, cwd=ROOT, timeout=300, check=False)


def test_classify_keeps_undecodable_text_of_a_file_and_of_standard_input(tmp_path: Path) -> None:
    log = tmp_path / "oom.log"
    log.write_bytes(SURROGATE + b" " + OOM)
    for done in (cli("classify", "--json", str(log)), cli("classify", "--json", "-", stdin=log.read_bytes())):
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["reason"] == "gpu_oom"
        assert answer["evidence"][0]["text"].startswith("\ufffd\ufffd\ufffd RuntimeError: CUDA out of memory")


def test_the_hook_records_facts_and_arguments_utf8_cannot_hold(tmp_path: Path) -> None:
    database = tmp_path / "failclass.db"
    log = tmp_path / "oom.log"
    log.write_bytes(SURROGATE + b" " + OOM)
    escaped = tmp_path / "escaped.json"
    escaped.write_text(json.dumps({"job_id": "esc\ud800", "attempt": 1, "user": "u\udcff", "logs": [str(log)]}))
    raw = tmp_path / "raw.json"
    raw.write_bytes(b'{"job_id": "raw' + SURROGATE + b'", "attempt": 1, "user": "u", "logs": ["' + str(log).encode() + b'"]}')
    runs = [
        cli("hook", "decide", "--json", "--database-url", f"sqlite:///{database}", "--facts", str(escaped)),
        cli("hook", "decide", "--json", "--database-url", f"sqlite:///{database}", "--facts", "-", stdin=raw.read_bytes()),
        cli(
            "hook",
            "decide",
            "--json",
            "--database-url",
            f"sqlite:///{database}",
            "--job-id",
            "arg\udced\udca0\udc80",  # the bytes ED A0 80 in argv, as Python decodes them
            "--user",
            "u",
            "--log",
            str(log),
        ),
    ]
    for done in runs:
        assert done.returncode == 11, done.stderr  # gpu_oom: retry elsewhere (another GPU type)
        answer = json.loads(done.stdout)
        assert answer["explanation"]["evidence"][0]["text"].startswith("\ufffd\ufffd\ufffd RuntimeError")
        assert b"Traceback" not in done.stderr
    with sqlite3.connect(database) as connection:
        recorded = sorted(connection.execute("SELECT job_id, user FROM attempts"))
    assert recorded == [("arg\ufffd\ufffd\ufffd", "u"), ("esc\ufffd", "u\ufffd"), ("raw\ufffd\ufffd\ufffd", "u")]
