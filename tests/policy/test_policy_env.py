"""One environment variable names the operator's policy file for every entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from failclass.policy.config import POLICY_ENV
from failclass.service.settings import Settings


def test_the_service_reads_the_policy_file_from_the_hooks_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    monkeypatch.setenv(POLICY_ENV, str(policy))
    assert POLICY_ENV == "FAILCLASS_POLICY"
    assert Settings().policy_file == policy
    monkeypatch.delenv(POLICY_ENV)
    monkeypatch.setenv("FAILCLASS_POLICY_FILE", str(policy))  # the second name is gone
    assert Settings().policy_file is None
