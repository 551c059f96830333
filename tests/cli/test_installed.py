"""The package as a wheel installs it (a copy of failclass/ alone, outside the checkout,
used from another folder): what needs the checkout says so in one line, and nothing is
written into the package."""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from failclass.model.corpus import read_manifest


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the package, as site-packages does."""
    folder = tmp_path_factory.mktemp("site")
    shutil.copytree(ROOT / "failclass", folder / "failclass", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def installed(site: Path, cwd: Path, *args: str, data_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_DATA_HOME": str(data_home or cwd / "data")}
    env.pop("FAILCLASS_RULES_DIR", None)
    command = [sys.executable, "-m", "failclass.cli", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_copy_is_used_and_is_no_checkout(site: Path, tmp_path: Path) -> None:
    done = installed(site, tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    probe = "import failclass.resources as r; print(r.PACKAGE_DATA, r.CHECKOUT)"
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(site / "failclass" / "data"), "None"]


def test_rules_new_writes_to_the_operators_folder_never_into_the_package(site: Path, tmp_path: Path) -> None:
    builtin = site / "failclass" / "data" / "signatures"
    before = {p.name: p.read_bytes() for p in builtin.glob("*.yaml")}
    done = installed(site, tmp_path, "rules", "new", "gpu_oom", "site_allocator")
    assert done.returncode == 0, done.stderr
    mine = tmp_path / "data" / "failclass" / "rules" / "gpu_oom.yaml"
    assert f"added gpu_oom.site_allocator to {mine}: fill in" in done.stdout
    assert {p.name: p.read_bytes() for p in builtin.glob("*.yaml")} == before
    refused = installed(site, tmp_path, "rules", "list")  # the skeleton is refused until it has a real example
    assert refused.returncode == 2 and f"{mine}: rule gpu_oom.site_allocator: field" in refused.stderr
    mine.write_text(
        mine.read_text()
        .replace('description: ""', "description: in-house allocator")
        .replace("      - ''", "      - 'acme-alloc: device heap exhausted'")
        .replace('source: ""', "source: scenario:site_allocator")
        .replace("# paste the real log lines here", "acme-alloc: device heap exhausted on gpu 3")
    )
    listed = installed(site, tmp_path, "rules", "list", "--reason", "gpu_oom")
    assert listed.returncode == 0 and "gpu_oom.site_allocator" in listed.stdout  # the default folder is loaded

    elsewhere = tmp_path / "team-rules"
    done = installed(site, tmp_path, "rules", "new", "cpu_oom", "site_x", "--rules-dir", str(elsewhere))
    assert done.returncode == 0 and (elsewhere / "cpu_oom.yaml").is_file(), done.stderr
    done = installed(site, tmp_path, "rules", "new", "cpu_oom", "site_y", "--dir", str(builtin))
    assert done.returncode == 2 and "holds the installed package's own rules" in done.stderr
    assert all(filecmp.cmp(p, ROOT / "failclass" / "data" / "signatures" / p.name, shallow=False) for p in builtin.glob("*.yaml"))


@pytest.mark.parametrize(
    ("args", "needs"),
    [
        (("simulate", "--fraction", "0.001", "--out", "sim"), "failclass simulate draws each log's failure excerpt"),
        (("evaluate",), "failclass evaluate scores"),
        (("train", "--out", "m.npz"), "failclass train fits the model on"),
    ],
)
def test_what_needs_the_corpus_says_so_in_one_line(site: Path, tmp_path: Path, args: tuple[str, ...], needs: str) -> None:
    done = installed(site, tmp_path, *args)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"Error: {tmp_path / 'corpora' / 'manifest.jsonl'}: no corpus manifest: {needs}")
    assert line.endswith("give the checkout's corpora/manifest.jsonl with --manifest")


def test_simulate_and_evaluate_take_a_checkouts_corpus_from_anywhere(site: Path, tmp_path: Path) -> None:
    manifest = str(ROOT / "corpora" / "manifest.jsonl")
    done = installed(site, tmp_path, "simulate", "--fraction", "0.001", "--seed", "3", "--out", "sim", "--manifest", manifest)
    assert done.returncode == 0, done.stderr
    logs = sorted((tmp_path / "sim" / "logs").glob("*.log"))
    assert logs and all(log.stat().st_size for log in logs)
    done = installed(site, tmp_path, "--no-model", "simulate", "--no-logs", "--out", "trace")
    assert done.returncode == 0 and (tmp_path / "trace" / "attempts.jsonl").is_file(), done.stderr
    holdout = sum(entry.split == "holdout" for entry in read_manifest())
    done = installed(site, tmp_path, "evaluate", "--split", "holdout", "--manifest", manifest)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"split holdout: {holdout} failed logs, 0 logs without a failure")
