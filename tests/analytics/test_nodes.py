"""Where failures started, per node (lemon nodes) and per GPU: real multi-rank attempts
(corpora/multirank, tests/data/xid) examined as the hook examines them, recorded by the
real use case, then reported from the store."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.logs.attempt import examine_files
from failclass.policy.config import load_policy
from failclass.store.repository import Store
from failclass.usecases import report_attempt

MULTIRANK = ROOT / "corpora" / "multirank" / "attempts"
XID = ROOT / "tests" / "data" / "xid"  # a node's Xid and the rank log that maps its bus id to a GPU
ON_NODE4 = [
    "torchrun_stream__missing_module__r14of16__0",
    "srun_files__abort_reported__r7of8__0",
    "srun_label__missing_module__r15of16__0",
]
ELSEWHERE = ["srun_label__config_key__r5of8__0", "srun_label__missing_input__r3of8__0"]  # node3, node2


def record(store: Store, name: str, number: int) -> None:
    truth = json.loads((MULTIRANK / name / "truth.json").read_text())
    facts = truth["facts"]
    start = datetime(2026, 11, 20, 8, tzinfo=UTC) + timedelta(hours=number)
    attempt = Attempt(
        name,
        1,
        "ana",
        start_time=start,
        end_time=start + timedelta(minutes=30),
        gpus=8,
        nodes=tuple(facts["nodes"]),
        tasks_per_node=facts["tasks_per_node"],
    )
    _, examined = examine_files(Classifier(), [MULTIRANK / name / f for f in truth["files"]], attempt)
    report_attempt(store, attempt, examined, load_policy())


def test_a_node_that_starts_most_failures_is_named_a_lemon(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'failclass.db'}"
    store = Store.open(url)
    for number, name in enumerate(ON_NODE4 + ELSEWHERE):
        record(store, name, number)
    done = run_cli("report", "--database-url", url, "--format", "json")
    assert done.returncode == 0, done.stderr
    nodes = {n["node"]: n for n in json.loads(done.stdout)["nodes"]}
    assert {node: n["started"] for node, n in nodes.items()} == {"node4": 3, "node3": 1, "node2": 1}
    assert [node for node, n in nodes.items() if n["lemon"]] == ["node4"]  # 3 started, the median node 1
    assert nodes["node4"]["failed_attempts"] == 5 and nodes["node4"]["top_reason"] == "import_error"
    markdown = run_cli("report", "--database-url", url).stdout
    assert "Where failures started (lemon nodes)" in markdown and "| node4 | 3 | 5 |" in markdown


@pytest.mark.e2e
def test_the_gpu_that_started_a_nodes_failures_is_named_beside_its_node(tmp_path: Path) -> None:
    """worker4's GPU 1 started three failures (its Xid 48, rank 1's GPU by NCCL's busId),
    EVE's GPU 0 one (its Xid 79, GPU 0 in nvidia-smi's table)."""
    url = f"sqlite:///{tmp_path / 'failclass.db'}"
    store = Store.open(url)
    start = datetime(2026, 11, 20, 8, tzinfo=UTC)
    on = {"worker4": [XID / "worker4.kern.log", XID / "worker4.rank1.out"], "EVE": [XID / "EVE.kern.log", XID / "EVE.rank0.out"]}
    for number, node in enumerate(["worker4", "worker4", "EVE", "worker4"]):
        nodes = (node, f"{node}-peer")
        attempt = Attempt(
            f"xid-{number}",
            1,
            "ana",
            start_time=start,
            end_time=start + timedelta(hours=1),
            gpus=4,
            nodes=nodes,
            tasks_per_node=2,
        )
        report_attempt(store, attempt, examine_files(Classifier(), on[node], attempt)[1], load_policy())
    done = run_cli("report", "--database-url", url, "--format", "json")
    assert done.returncode == 0, done.stderr
    gpus = [
        (g["node"], g["gpu"], g["started"], g["started_gpu_h"], g["top_reason"], g["lemon"])
        for g in json.loads(done.stdout)["gpus"]
    ]
    assert gpus == [("worker4", 1, 3, 12.0, "gpu_ecc_error", True), ("EVE", 0, 1, 4.0, "gpu_ecc_error", False)]
    markdown = run_cli("report", "--database-url", url).stdout
    assert "Where failures started, per GPU" in markdown and "| worker4 | 1 | 3 | 3 | 12.00 |" in markdown
