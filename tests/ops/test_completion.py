"""Shell completion as the README tells operators to set it up: the script click
generates for zsh and fish, and bash completing with the one it generates for bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent  # the environment's `failclass` script sits beside its python


def completion_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.mark.parametrize(
    ("shell", "marker"), [("zsh", "#compdef failclass"), ("fish", "complete --no-files --command failclass")]
)
def test_the_completion_script_generates(shell: str, marker: str) -> None:
    generated = subprocess.run(
        ["failclass"],
        env={**completion_env(), "_FAILCLASS_COMPLETE": f"{shell}_source"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert generated.returncode == 0, generated.stderr
    assert marker in generated.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_commands_and_options_with_it() -> None:
    script = """
    eval "$(_FAILCLASS_COMPLETE=bash_source failclass)"
    complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _failclass_completion failclass; echo "${COMPREPLY[*]}"; }
    complete_words failclass se
    complete_words failclass hook ad
    complete_words failclass serve --wo
    """
    done = subprocess.run(["bash", "-c", script], env=completion_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["serve", "admit", "--workers"]
