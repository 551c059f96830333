"""A node's kernel log among an attempt's files (failclass.logs.ranks, failclass.logs.origin):
its Xid is that node's evidence, upstream of what the ranks printed, and its PCI bus id
names the GPU (as NCCL's lines or nvidia-smi's table in the logs map it) and so the rank
that used it. Real lines of public logs, their sources in tests/data/xid/README.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.logs.attempt import examine_files
from failclass.logs.origin import read_attempt
from failclass.logs.ranks import Labels, Layout, Tag, _parse, rank_streams, read_lines, time_of
from failclass.policy.config import load_policy
from failclass.policy.decide import implicated_nodes
from failclass.store.repository import Store
from failclass.usecases import failure_of, report_attempt

DATA = ROOT / "tests" / "data" / "xid"
WORKER4 = [DATA / "worker4.kern.log", DATA / "worker4.rank1.out"]
EVE = [DATA / "EVE.kern.log", DATA / "EVE.rank0.out"]
HANG = ROOT / "corpora" / "multirank" / "attempts" / "srun_label__hang__r0of4__0" / "job.log"  # node1, node2; rank 0 hung


def test_an_xid_in_a_nodes_syslog_is_the_origin_on_the_gpu_nccl_says_its_rank_used(classifier: Classifier) -> None:
    """Rank 1 printed only that its peer closed the connection; worker4's syslog holds the
    Xid 48 of 0000:07:00, the bus id of rank 1's CUDA device 1 (NCCL's busId 7000)."""
    attempt = Attempt("xid-1", 1, "u", nodes=("worker4", "worker5"), tasks_per_node=2, gpus=4)
    log, examined = examine_files(classifier, WORKER4, attempt)
    assert examined.classification.reason == "gpu_ecc_error" and log == DATA / "worker4.kern.log"
    origin = examined.origin
    assert origin is not None and (origin.rank, origin.node, origin.gpu, origin.line) == (1, "worker4", 1, 4)
    assert "NVRM: Xid (PCI:0000:07:00): 48" in read_lines(log)[origin.line - 1]
    assert "bus id 0000:07:00 is GPU 1 of rank 1 (NCCL's busId)" in origin.how
    assert implicated_nodes(attempt, failure_of(examined)) == ("worker4",)


@pytest.mark.e2e
def test_the_decision_excludes_the_xids_node_and_the_store_keeps_its_gpu(classifier: Classifier, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'failclass.db'}"
    attempt = Attempt("xid-2", 1, "u", nodes=("worker4", "worker5"), tasks_per_node=2, gpus=4)
    recorded = report_attempt(Store.open(url), attempt, examine_files(classifier, WORKER4, attempt)[1], load_policy())
    assert recorded.decision is not None and recorded.decision.action == "retry_elsewhere"
    assert recorded.decision.exclude_nodes == ("worker4",)
    (row,) = Store.open(url).job("xid-2")
    assert (row.origin_rank, row.origin_node, row.origin_gpu) == (1, "worker4", 1)


def test_classify_attempt_prints_the_origin_gpu(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"job_id": "xid-3", "nodes": ["worker4", "worker5"], "tasks_per_node": 2}))
    done = run_cli("classify", "--attempt", "--json", "--facts", str(facts), *map(str, WORKER4))
    assert done.returncode == 0, done.stderr
    origin = json.loads(done.stdout)["origin"]
    assert (origin["rank"], origin["node"], origin["gpu"], origin["path"]) == (1, "worker4", 1, str(WORKER4[0]))


def test_nvidia_smis_table_maps_the_xids_bus_id_to_a_gpu(classifier: Classifier) -> None:
    """EVE's Xid 79 is of 0000:01:00, GPU 0 in the table a rank printed; the rank on it is
    the one the facts place there where each rank has one GPU, else unknown."""
    one_each = read_attempt(classifier, EVE, Layout(("EVE", "node2"), 2, gpus=4))
    assert one_each.classification.reason == "gpu_ecc_error" and one_each.origin is not None
    assert (one_each.origin.rank, one_each.origin.node, one_each.origin.gpu, one_each.origin.line) == (0, "EVE", 0, 2)
    assert "is GPU 0 of rank 0 (nvidia-smi's table)" in one_each.origin.how
    unknown = read_attempt(classifier, EVE, Layout(("EVE", "node2"), 2))
    assert unknown.origin is not None and (unknown.origin.rank, unknown.origin.node, unknown.origin.gpu) == (None, "EVE", 0)


def test_an_xid_outweighs_ranks_that_only_lost_a_peer(classifier: Classifier) -> None:
    """Every rank of the hung attempt timed out waiting; node2's dmesg, named by its file,
    holds an Xid 79: the node is the origin, its GPU unknown (no log maps 0000:a1:00)."""
    layout = Layout(("node1", "node2"), 2)
    alone = read_attempt(classifier, [HANG], layout)
    assert alone.origin is not None and (alone.origin.rank, alone.origin.node) == (0, "node1")
    with_node = read_attempt(classifier, [HANG, DATA / "node2.dmesg"], layout)
    assert with_node.classification.reason == "gpu_ecc_error" and with_node.origin is not None
    assert (with_node.origin.rank, with_node.origin.node, with_node.origin.gpu) == (None, "node2", None)
    assert "no log maps the Xid's bus id 0000:a1:00 to a GPU" in with_node.origin.how
    assert set(with_node.cascade) == {0, 1, 2, 3}


@pytest.mark.parametrize(
    ("line", "host"),
    [
        (
            "Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.",
            "worker4",
        ),
        (
            "[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            None,
        ),
        ("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0", None),  # github.com/NVIDIA/NVSentinel/issues/155
    ],
)
def test_kernel_records_are_their_nodes_whatever_file_they_are_in(line: str, host: str | None) -> None:
    tag, rest = _parse(line, Tag(task=3, context="dmesg-3.log"), Labels())
    assert (tag.kernel, tag.host, tag.task, rest) == (True, host, None, line)


def test_kernel_logs_named_alike_are_nodes_not_tasks() -> None:
    """Two nodes' dmesg files differ by one number, as srun's per-task files do: their
    records stay each node's, never a rank's."""
    line = (
        "[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    )
    streams = rank_streams({"dmesg-node1.log": [line], "dmesg-node2.log": [line]}, Layout(("node1", "node2")))
    assert sorted((s.key, s.rank, s.kernel, tuple(s.hosts)) for s in streams) == [
        (("kernel", "node1"), None, True, ("node1",)),
        (("kernel", "node2"), None, True, ("node2",)),
    ]


def test_kernel_times_on_the_ranks_scale() -> None:
    syslog = time_of("Dec  2 11:38:47 worker4 kernel: [  219.470994] NVRM: Xid (PCI:0000:07:00): 48,")
    assert syslog is not None and syslog == time_of("2026-12-02 11:38:47")
    assert time_of("[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79,") == time_of("2024-04-05T21:29:39")
    assert time_of("Traceback (most recent call last):") is None


def test_a_ranks_gpu_where_the_facts_give_each_rank_one() -> None:
    one_each = Layout(("gpu-01", "gpu-02"), 8, gpus=16)
    assert (one_each.gpu_of_rank(9), one_each.rank_on_gpu("gpu-02", 1)) == (1, 9)
    shared = Layout(("gpu-01", "gpu-02"), 8, gpus=8)  # two ranks a GPU: which is not known
    assert (shared.gpu_of_rank(9), shared.rank_on_gpu("gpu-02", 1)) == (None, None)
    assert Layout.of({"nodes": ["a"], "tasks_per_node": 2, "gpus": 2}).gpu_of_rank(1) == 1
    with pytest.raises(ValueError, match="gpus"):
        Layout.of({"nodes": ["a"], "gpus": "2"})


def test_a_ranks_cuda_error_is_the_consequence_of_its_nodes_xid(classifier: Classifier) -> None:
    """Rank 1's watchdog names the ECC error CUDA reported (samples/*.url says where it is
    from); node2's kernel log, where rank 1 ran, holds the Xid itself: the kernel's record
    is the origin and rank 1 is in the cascade."""
    ecc = ROOT / "samples" / "gpu_ecc_error--kohya_ddp_ecc_nccl_watchdog.log"
    answer = read_attempt(classifier, [ecc, DATA / "node2.dmesg"], Layout(("node1", "node2"), 1))
    assert answer.origin is not None and (answer.origin.node, answer.origin.path) == ("node2", str(DATA / "node2.dmesg"))
    assert answer.classification.reason == "gpu_ecc_error" and 1 in answer.cascade
