"""What a fresh machine gets from the README's two commands: the CPU build of PyTorch, the
system tools installed or named when they cannot be, the PostgreSQL half of the suite
skipped with its reason where no server runs (failed instead in CI), and CI running the
test command in a clean environment with the lint."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

import failclass


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is installed by `make test` only")
def test_the_torch_that_make_installs_is_the_cpu_build() -> None:
    import torch

    assert torch.version.cuda is None, f"torch {torch.__version__} is a CUDA build: `make test` installs the CPU wheel"


def fake_commands(folder: Path, commands: dict[str, str]) -> str:
    """A PATH of stand-ins (name -> shell body), with the basic tools the script needs."""
    folder.mkdir()
    for name, body in commands.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)
    for tool in ("bash", "mkdir", "rm", "tail", "dirname", "cat"):
        (folder / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    return str(folder)


def run_install_tools(tmp_path: Path, commands: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """tests/install_tools.sh in a copy of the checkout's layout, every system tool present
    but the Node one (so nothing is really installed)."""
    script = tmp_path / "checkout" / "tests" / "install_tools.sh"
    script.parent.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "install_tools.sh", script)
    present = {"slurmctld": "true", "prometheus": "true", "chromium": "true"}
    path = fake_commands(tmp_path / "bin", {**present, **commands})
    return subprocess.run(
        ["/bin/sh", "-c", f"exec {script}"], env={"PATH": path}, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_tool_that_cannot_be_installed_is_named_and_its_installers_words_are_kept(tmp_path: Path) -> None:
    failed = run_install_tools(tmp_path, {"npm": "echo 'npm error code SELF_SIGNED_CERT_IN_CHAIN' >&2; exit 1"})
    assert failed.returncode == 0  # not fatal: the tests that need it skip
    log = tmp_path / "checkout" / ".venv" / "setup" / "npm.log"
    assert "npm install of typescript and @grafana/schema failed" in failed.stderr
    assert str(log.relative_to(tmp_path / "checkout")) in failed.stderr
    assert "SELF_SIGNED_CERT_IN_CHAIN" in failed.stderr and "SELF_SIGNED_CERT_IN_CHAIN" in log.read_text()
    missing = run_install_tools(tmp_path / "again", {})
    assert "npm not found" in missing.stderr


def test_node_is_told_to_trust_the_systems_certificates(tmp_path: Path) -> None:
    """Behind a TLS-intercepting proxy whose CA only the system trusts, npm needs it."""
    seen = run_install_tools(tmp_path, {"npm": 'echo "CA=$NODE_EXTRA_CA_CERTS" >&2; exit 1'})
    if Path("/etc/ssl/certs/ca-certificates.crt").exists():
        assert "CA=/etc/ssl/certs/ca-certificates.crt" in seen.stderr


def run_store_test(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    test = "tests/store/test_store.py::test_migrations_build_the_schema[postgresql]"
    env = {k: v for k, v in os.environ.items() if k not in ("FAILCLASS_REQUIRE_POSTGRES", "FAILCLASS_TEST_POSTGRES")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test],
        cwd=ROOT,
        env={**env, **environment},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_without_a_postgresql_server_its_tests_skip_saying_why_and_fail_in_ci() -> None:
    nowhere = "postgresql+psycopg://postgres@127.0.0.1:9/test?connect_timeout=2"
    skipped = run_store_test({"FAILCLASS_TEST_POSTGRES": nowhere})
    assert skipped.returncode == 0, skipped.stdout
    assert "1 skipped" in skipped.stdout and "PostgreSQL at postgresql+psycopg://postgres@127.0.0.1:9/test" in skipped.stdout
    required = run_store_test({"FAILCLASS_TEST_POSTGRES": nowhere, "FAILCLASS_REQUIRE_POSTGRES": "1"})
    assert required.returncode == 1 and "is not reachable" in required.stdout


def test_ci_runs_the_readmes_test_command_in_a_clean_environment_then_the_lint() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "env -i PATH=/usr/bin:/bin" in ci and 'HOME="$(mktemp -d)"' in ci
    assert '"${clean[@]}" make test' in ci and '"${clean[@]}" make lint' in ci
    assert "make test" in (ROOT / "README.md").read_text()
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", f"dist/failclass-{failclass.__version__}-py3-none-any.whl"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0, "dist/ must be ignored by git"


def test_pre_commit_runs_the_ruff_the_dev_extra_pins() -> None:
    pinned = re.search(r'"ruff==([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    hook = re.search(r"ruff-pre-commit\n\s+rev: v([\d.]+)", (ROOT / ".pre-commit-config.yaml").read_text())
    assert pinned and hook and pinned.group(1) == hook.group(1)
