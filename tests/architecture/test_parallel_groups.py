"""`make test` runs the suite on every core (pytest-xdist): the modules that start a Slurm
share one worker, one after the other (two clusters on one host collide), and a module's
tests share one worker, so that its module fixtures are built once."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

MODULE = """
import os
from pathlib import Path

import pytest
{mark}

@pytest.fixture(scope="module")
def built():
    Path("{seen}", "{name}-setup-" + os.environ["PYTEST_XDIST_WORKER"] + "-" + str(os.getpid())).touch()

@pytest.mark.parametrize("n", range(4))
def test_it(built, n):
    Path("{seen}", "{name}-ran-" + os.environ["PYTEST_XDIST_WORKER"]).touch()
"""


def test_slurm_modules_share_a_worker_and_a_module_builds_its_fixtures_once(tmp_path: Path) -> None:
    assert "-n auto --dist loadgroup" in (ROOT / "Makefile").read_text()
    seen = tmp_path / "seen"
    seen.mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    slurm = 'pytestmark = pytest.mark.xdist_group("slurm")'
    for name, mark in (("slurm_a", slurm), ("slurm_b", slurm), ("plain_c", ""), ("plain_d", "")):
        (tmp_path / f"test_{name}.py").write_text(MODULE.format(mark=mark, seen=seen, name=name))
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    ran = {p.name for p in seen.iterdir() if "-ran-" in p.name}
    assert len({name.split("-ran-")[1] for name in ran if name.startswith("slurm")}) == 1, ran
    for name in ("slurm_a", "slurm_b", "plain_c", "plain_d"):
        assert len([p for p in seen.iterdir() if p.name.startswith(f"{name}-setup-")]) == 1, sorted(seen.iterdir())
