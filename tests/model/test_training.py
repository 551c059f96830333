"""`failclass label`, `failclass train` and `failclass evaluate` as an operator runs them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from failclass.model.corpus import read_manifest, resolve, write_manifest

LOG = ROOT / "corpora" / "public" / "no_signature" / "slurm_lightning_init_hang_cancelled.log"


@pytest.fixture(scope="module")
def small_manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few real logs of four reasons, both sides of the split, passed runs included."""
    chosen = []
    for split in ("train", "test"):
        for reason in ("gpu_oom", "syntax_error", "mpi_runtime_failure", "no_signature"):
            chosen += [e for e in read_manifest() if e.reason == reason and e.split == split and e.outcome == "failed"][:10]
        chosen += [e for e in read_manifest() if e.outcome == "passed" and e.split == split][:5]
    path = tmp_path_factory.mktemp("corpus") / "manifest.jsonl"
    write_manifest([replace(e, path=str(resolve(e))) for e in chosen], path)  # outside the checkout: absolute paths
    return path


def test_label_keeps_a_copy_and_the_latest_correction_wins(tmp_path: Path) -> None:
    labels = tmp_path / "labels"
    done = run_cli("label", str(LOG), "job_preempted", "--labels-dir", str(labels), "--note", "slurm cancelled it")
    assert done.returncode == 0, done.stderr
    (stored,) = labels.glob("*/*.log")
    assert stored.parent.name == "job_preempted" and stored.read_bytes() == LOG.read_bytes()
    facts = json.loads(stored.with_suffix(".json").read_text())
    assert facts["note"] == "slurm cancelled it" and facts["original"] == str(LOG)

    assert run_cli("label", str(LOG), "cpu_oom", "--labels-dir", str(labels)).returncode == 0
    assert [p.parent.name for p in labels.glob("*/*.log")] == ["cpu_oom"]


def test_label_refuses_unknown_reasons_and_empty_logs(tmp_path: Path) -> None:
    done = run_cli("label", str(LOG), "gpu_on_fire", "--labels-dir", str(tmp_path))
    assert done.returncode == 2 and "unknown reason 'gpu_on_fire'" in done.stderr
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"\n\n")
    done = run_cli("label", str(empty), "cpu_oom", "--labels-dir", str(tmp_path))
    assert done.returncode == 1 and "empty log" in done.stderr
    assert not list(tmp_path.glob("*/*.log"))


def test_train_then_evaluate_with_the_new_model(small_manifest: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels"
    assert run_cli("label", str(LOG), "job_preempted", "--labels-dir", str(labels)).returncode == 0
    model = tmp_path / "model" / "fallback.npz"
    done = run_cli("train", "--manifest", str(small_manifest), "--labels-dir", str(labels), "--out", str(model))
    assert done.returncode == 0, done.stderr
    assert "1 operator labels" in done.stdout
    metadata = json.loads(model.with_suffix(".json").read_text())
    train_side = [e for e in read_manifest(small_manifest) if e.split == "train"]
    assert metadata["trained_on"]["logs"] == len(train_side) + 1
    assert "job_preempted" in metadata["classes"]
    assert len(metadata["corpus_hash"]) == 64 and metadata["versions"]["scikit-learn"]
    assert 0.3 <= metadata["threshold"] <= 0.95

    done = run_cli("--model", str(model), "evaluate", "--manifest", str(small_manifest), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    test_side = [e for e in read_manifest(small_manifest) if e.split == "test"]
    assert report["rules+model"]["failed_logs"] == sum(e.outcome == "failed" for e in test_side)
    assert report["rules"]["passed_logs"] == sum(e.outcome == "passed" for e in test_side) > 0
    assert report["rules"]["false_fire_rate"] == 0.0
    assert len(report["rules+model"]["confusion"]) == len(report["rules+model"]["labels"])


def test_train_without_a_manifest_is_a_clear_error(tmp_path: Path) -> None:
    done = run_cli("train", "--manifest", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "m.npz"))
    assert done.returncode == 2 and "no corpus manifest" in done.stderr
