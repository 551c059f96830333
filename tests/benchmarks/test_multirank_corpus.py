"""The multi-rank corpus (corpora/multirank/attempts) is what its truth says: every file
listed and present, the origin's node the one the scheduler's facts give its rank, the
cascade every other rank, a reason of the guide, the launcher failed, and the origin's
own error (where it prints one) really printed in the attempt's files."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
ATTEMPTS = ROOT / "corpora" / "multirank" / "attempts"
REASONS = {r["id"] for r in yaml.safe_load((ROOT / "failclass/data/signatures/taxonomy.yaml").read_text())["reasons"]}
# What each printing fault's rank wrote, as seen in the runs (tests/benchmarks can hold real text).
PRINTED = {
    "missing_input": "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/data/shard_",
    "corrupt_checkpoint": "PytorchStreamReader failed",
    "config_key": "KeyError: 'warmup_steps'",
    "shape_mismatch": "mat1 and mat2 shapes cannot be multiplied",
    "nan_loss": "Loss is nan, stopping training",
    "checkpoint_dir": "Parent directory /nonexistent/checkpoints/step_3 does not exist.",
    "missing_module": "No module named 'apex'",
    "numpy_alloc": "Unable to allocate 8.00 TiB",
    "torch_alloc": "DefaultCPUAllocator: can't allocate memory",
    "invalid_free": "free(): invalid pointer",
    "sigsegv_reported": "Fatal Python error: Segmentation fault",
    "abort_reported": "Fatal Python error: Aborted",
}


def _faults() -> dict[str, tuple[object, str]]:
    spec = importlib.util.spec_from_file_location("multirank_worker", ROOT / "corpora" / "multirank" / "worker.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.FAULTS


TRUTHS = sorted(ATTEMPTS.glob("*/truth.json"))


def test_the_corpus_is_there() -> None:
    truths = [json.loads(path.read_text()) for path in TRUTHS]
    assert len(truths) >= 60
    assert {t["launcher"] for t in truths} == {"torchrun", "srun", "mpirun"}
    assert len({t["origin"]["rank"] for t in truths}) > 4  # not always rank 0


@pytest.mark.parametrize("path", TRUTHS, ids=[path.parent.name for path in TRUTHS])
def test_each_attempt_is_what_its_truth_says(path: Path) -> None:
    truth = json.loads(path.read_text())
    folder = path.parent
    present = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "truth.json")
    assert truth["files"] == present
    facts, origin = truth["facts"], truth["origin"]
    assert len(facts["nodes"]) * facts["tasks_per_node"] == truth["world_size"]
    assert origin["node"] == facts["nodes"][origin["rank"] // facts["tasks_per_node"]]
    assert truth["cascade"] == [rank for rank in range(truth["world_size"]) if rank != origin["rank"]]
    assert truth["reason"] in REASONS
    assert truth["reason"] == _faults()[truth["fault"]][1]
    statuses = truth["exit_status"].values() if isinstance(truth["exit_status"], dict) else [truth["exit_status"]]
    assert any(status not in (0, "timeout") for status in statuses)
    text = "\n".join((folder / name).read_text(errors="replace") for name in truth["files"])
    if truth["fault"] in PRINTED:
        assert PRINTED[truth["fault"]] in text
