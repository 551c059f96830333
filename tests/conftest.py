"""Shared fixtures: the built-in rules compiled once per test session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from failclass.classify import Classifier

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def classifier() -> Classifier:
    return Classifier()


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command line, as an operator would."""
    return subprocess.run(
        [sys.executable, "-m", "failclass.cli", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
