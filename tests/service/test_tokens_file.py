"""The tokens file as `failclass serve` and `failclass token create` read it: a file that is
not a list of tokens, or holds none (every call would answer 401), stops the service with
one line `file: problem` and exit status 2; one other users can read gets a warning line,
as ssh gives for a key."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from conftest import run_cli
from service_server import running_service, serve_and_stop

pytestmark = pytest.mark.e2e

TOKEN = {"name": "ops", "sha256": "0" * 64, "scopes": ["read", "write"]}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{}", "{} is not a list"),
        ("[]", "no token in the tokens file, so every call would be refused"),
        ('[{"name": "ops", "sha256": "0",', "not JSON: Expecting"),
        (json.dumps([{**TOKEN, "sha256": "abc"}]), "[0].sha256: 'abc' does not match [0-9a-f]{64}"),
        (json.dumps([{**TOKEN, "scopes": ["admin"]}]), "[0].scopes[0]: 'admin' is not one of ('read', 'write')"),
        (json.dumps([{**TOKEN, "scope": "read"}]), "[0]: unknown keys ['scope']; known: ['name', 'scopes', 'sha256']"),
        (json.dumps([{**TOKEN, "scopes": "read"}]), "[0].scopes: 'read' is not a list"),
    ],
)
def test_a_tokens_file_that_is_not_a_list_of_tokens_stops_serve_in_one_line(tmp_path: Path, content: str, problem: str) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(content)
    tokens.chmod(0o600)
    done = serve_and_stop(f"sqlite:///{tmp_path / 'f.db'}", "--tokens-file", str(tokens))
    assert done.returncode == 2, done.stderr[-3000:]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"Error: {tokens}: ") and problem in line, line


def test_token_create_refuses_a_broken_tokens_file_in_one_line(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text('[{"name": ')
    done = run_cli("token", "create", "ops", "--file", str(tokens))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"{tokens}: not JSON" in done.stderr
    assert tokens.read_text() == '[{"name": '  # left as it was


def test_a_tokens_file_others_can_read_is_used_with_a_warning(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    secret = run_cli("token", "create", "ops", "--scopes", "read", "--file", str(tokens)).stdout.strip()
    assert tokens.stat().st_mode & 0o777 == 0o600
    tokens.chmod(0o644)
    with running_service(f"sqlite:///{tmp_path / 'f.db'}", tmp_path, "--tokens-file", str(tokens)) as base:
        assert httpx.get(f"{base}/v1/holds", headers={"Authorization": f"Bearer {secret}"}, timeout=10).status_code == 200
    text = next(tmp_path.glob("server-*.log")).read_text()
    warnings = [line for line in text.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {tokens}: permissions 0644 are too open (other users can read it); chmod 600 {tokens}"]
