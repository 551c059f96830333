"""An attempt's logs read as ranks (failclass.logs.ranks), on real launchers' output made
here (tests/data/ranks/README.md) and real lines of public logs (their sources beside them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.contracts import AttemptAnswer, Classification, Evidence, Origin, from_json, to_json
from failclass.errors import ConfigError
from failclass.history import Failure
from failclass.logs.launchers import _task_list, reports
from failclass.logs.origin import AttemptReader, ranks_settings, read_attempt
from failclass.logs.ranks import Labels, Layout, RankLine, Tag, _labels, _parse, rank_streams, read_lines, time_of
from failclass.matching.taxonomy import builtin_taxonomy
from failclass.policy.decide import implicated_nodes

DATA = ROOT / "tests" / "data" / "ranks"


def attempt_of(classifier: Classifier, *names: str, layout: Layout | None = None) -> AttemptAnswer:
    paths = sorted(p for name in names for p in ([DATA / name] if (DATA / name).is_file() else (DATA / name).rglob("*.*")))
    return read_attempt(classifier, [p for p in paths if p.suffix in (".log", ".out")], layout or Layout())


@pytest.mark.parametrize(
    ("names", "reason", "rank", "cascade"),
    [
        (("torchrun_interleaved.log",), "incorrect_inputs", 2, (0, 1, 3)),
        (("torchrun_two_causes.log",), "incorrect_inputs", 2, (0, 1, 3)),
        (("torchrun_tee_two_causes.log",), "incorrect_inputs", 2, (0, 1, 3)),
        (("torchrun_logdir_segv/logs",), "core_dump", 3, (0, 2)),
        (("torchrun_interleaved_segv.log",), "core_dump", 1, (0, 2, 3)),
        (("torchrun_two_nodes",), "incorrect_inputs", 5, (0, 1, 2, 3, 4, 6, 7)),
        (("mpirun_tag_output.log",), "incorrect_inputs", 2, (0, 1, 3)),
        (("srun_label.out",), "import_error", 3, (0, 1, 2)),
        (("srun_pertask",), "incorrect_inputs", 1, (0, 2, 3)),
    ],
)
def test_the_rank_that_failed_first_and_its_reason(
    classifier: Classifier, names: tuple[str, ...], reason: str, rank: int, cascade: tuple[int, ...]
) -> None:
    answer = attempt_of(classifier, *names)
    assert answer.classification.reason == reason
    assert answer.origin is not None and answer.origin.rank == rank
    assert answer.cascade == cascade
    # The origin's line is the file's own line, and it shows the failure.
    assert answer.origin.path is not None and answer.origin.line is not None
    line = read_lines(Path(answer.origin.path))[answer.origin.line - 1]
    assert answer.classification.evidence[0].text in line


def test_a_cause_before_consequences_and_the_earliest_of_two_causes_by_time(classifier: Classifier) -> None:
    # Rank 3 fails of its own cause 1.5 s after rank 2: with --tee every line has its time.
    answer = attempt_of(classifier, "torchrun_tee_two_causes.log")
    assert answer.origin is not None and "by the time on its lines" in answer.origin.how
    assert answer.cascade_kinds == {"named a cause": 1, "lost a peer": 1, "reported by its launcher": 1}
    # Without --tee the tracebacks carry no time: torchrun's Root Cause decides.
    plain = attempt_of(classifier, "torchrun_two_causes.log")
    assert plain.origin is not None and plain.origin.rank == 2 and plain.origin.how.startswith("torchrun saw it fail first")


def test_a_hung_rank_is_the_one_the_others_waited_on(classifier: Classifier) -> None:
    # Rank 1 hung; ranks 0 and 2 timed out in gloo; torchrun's Root Cause names rank 0.
    answer = attempt_of(classifier, "torchrun_hang.log")
    assert answer.origin is not None and answer.origin.rank == 1
    assert "reported no failure while the others lost a peer" in answer.origin.how
    assert answer.cascade == (0, 2)


def test_a_console_without_rank_lines_takes_torchruns_root_cause(classifier: Classifier) -> None:
    answer = attempt_of(classifier, "torchrun_logdir_segv/console.log")
    # The agent's own "failed (exitcode: -11) local_rank: 3" line, its table left aside.
    assert answer.origin is not None and (answer.origin.rank, answer.origin.line) == (3, 8)
    assert "SIGSEGV" in answer.origin.how and "exitcode: -11" in answer.classification.evidence[0].text
    assert answer.classification.rule_id == "traceback_from_crash.launcher_reports_fatal_signal"


def test_where_from_the_facts_and_from_srun(classifier: Classifier) -> None:
    two = attempt_of(classifier, "torchrun_two_nodes", layout=Layout(("node-a", "node-b"), 4))
    assert two.origin is not None and two.origin.node == "node-b"
    # torchrun's table says localhost: no node without the facts.
    alone = attempt_of(classifier, "torchrun_two_nodes")
    assert alone.origin is not None and alone.origin.node is None
    # srun's own "srun: error: node2: task 3: Exited with exit code 1" names the node.
    label = attempt_of(classifier, "srun_label.out")
    assert label.origin is not None and label.origin.node == "node2"
    per_task = attempt_of(classifier, "srun_pertask", layout=Layout(("node1", "node2"), 2))
    assert per_task.origin is not None and (per_task.origin.rank, per_task.origin.node) == (1, "node1")
    # One file per pod: the pod's node.
    pods = Layout(pods={"pertask-1-vm-1": "gpu-node-7"})
    assert attempt_of(classifier, "srun_pertask", layout=pods).origin == Origin(
        1, "gpu-node-7", None, str(DATA / "srun_pertask/pertask-1-vm-1.out"), 12, "the only rank that named a cause"
    )


MULTIRANK = ROOT / "corpora" / "multirank" / "attempts"


def corpus_attempt(classifier: Classifier, name: str) -> AttemptAnswer:
    """An attempt of the multi-rank corpus (a real Slurm, real torch.distributed) read with its facts."""
    truth = json.loads((MULTIRANK / name / "truth.json").read_text())
    facts = truth["facts"]
    layout = Layout(tuple(facts["nodes"]), facts.get("tasks_per_node"))
    return read_attempt(classifier, [MULTIRANK / name / f for f in truth["files"]], layout)


def test_a_rank_that_died_silently_is_the_one_srun_saw_end_first(classifier: Classifier) -> None:
    # Rank 3 was SIGKILLed and printed nothing; ranks 0 and 2 then lost their peer in gloo,
    # rank 1 printed only a c10 warning and its steps; srun -K terminated the rest.
    answer = corpus_attempt(classifier, "srun_label__sigkill__r3of4__0")
    assert answer.origin is not None and (answer.origin.rank, answer.origin.node) == (3, "node2")
    found = answer.classification
    assert (found.reason, found.source) == ("traceback_from_crash", "launcher")
    assert found.evidence[0].text == "srun: error: node2: task 3: Killed"
    assert answer.cascade_kinds == {"lost a peer": 2, "reported by its launcher": 1}


def test_a_rank_killed_by_its_own_fault_before_the_step_was_cancelled_died_of_itself(classifier: Classifier) -> None:
    # Rank 0's file ends with slurmstepd's "STEP ... CANCELLED" after its segfault: a consequence.
    answer = corpus_attempt(classifier, "srun_files__sigsegv_reported__r0of8__0")
    assert answer.origin is not None and (answer.origin.rank, answer.origin.node) == (0, "node1")
    assert answer.classification.reason == "core_dump"


def test_a_rank_mpirun_noticed_dying_of_a_signal_is_the_origin(classifier: Classifier) -> None:
    # Rank 0 read address 0 and printed nothing; the others lost their peer in gloo.
    answer = corpus_attempt(classifier, "mpirun_tag__sigsegv__r0of4__0")
    assert answer.origin is not None and answer.origin.rank == 0
    assert answer.classification.reason == "traceback_from_crash"
    assert "exited on signal 11 (Segmentation fault)" in answer.classification.evidence[0].text


def test_a_hung_rank_that_printed_nothing_is_the_one_of_the_facts_ranks_that_said_nothing(classifier: Classifier) -> None:
    # mpirun, 4 ranks on one node: rank 1 hung without a line; ranks 0, 2, 3 timed out.
    answer = corpus_attempt(classifier, "mpirun_tag__hang__r1of4__0")
    assert answer.origin is not None and answer.origin.rank == 1
    assert answer.classification.reason == "mpi_runtime_failure"


def test_a_node_s_local_rank_is_placed_by_the_facts(classifier: Classifier) -> None:
    # torchrun --log-dir on node2: local rank 0's files say no global rank; node2 is the
    # second node of two ranks each, so it is rank 2.
    answer = corpus_attempt(classifier, "torchrun_logdir__abort_reported__r2of4__0")
    assert answer.origin is not None and (answer.origin.rank, answer.origin.node) == (2, "node2")
    assert answer.classification.reason == "core_dump"


def test_a_hung_rank_under_srun_is_the_one_no_other_rank_waited_for(classifier: Classifier) -> None:
    # Rank 0 hung: rank 1 timed out and exited first; srun lists every task.
    answer = corpus_attempt(classifier, "srun_label__hang__r0of4__0")
    assert answer.origin is not None and answer.origin.rank == 0
    assert answer.classification.reason == "mpi_runtime_failure"


def test_times_as_each_format_writes_them() -> None:
    glog = time_of("W1128 19:33:38.582000 30309 torch/distributed/run.py:874]")
    iso = time_of("2026-11-28 19:33:38,600 INFO rank 0 step 0")
    assert glog is not None and iso is not None and 0 < iso - glog < 0.02
    # torch's C++ records (github.com/XPixelGroup/BasicSR/issues/737) and DeepSpeed's
    # (github.com/huggingface/transformers/issues/22363); torchrun's table's own time.
    assert time_of("[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught") is not None
    assert time_of("[2023-03-24 10:26:51,118] [INFO] [launch.py:142:main] WORLD INFO DICT") is not None
    assert time_of("2026-11-28_19:33:46") == time_of("2026-11-28 19:33:46")
    assert time_of("rank 0 step 0 loss 16.000") is None


def test_prefixes_of_launchers_not_run_here() -> None:
    # pdsh, as DeepSpeed's multi-node runner prints (github.com/huggingface/transformers/issues/22363).
    pdsh = [
        "gpu1504: [2023-03-24 10:26:51,118] [INFO] [launch.py:142:main] WORLD INFO DICT: {'gpu1504': [0], 'gpu1505': [0]}",
        "gpu1505: [2023-03-24 10:26:51,118] [INFO] [launch.py:142:main] WORLD INFO DICT: {'gpu1504': [0], 'gpu1505': [0]}",
        "RuntimeError: NCCL error in: /root/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, unhandled system error",
    ]
    labels = _labels(pdsh, Layout())
    assert labels.hosts == {"gpu1504", "gpu1505"}  # an exception's name is no host
    tag, rest = _parse(pdsh[0], Tag(), labels)
    assert tag.host == "gpu1504" and rest.startswith("[2023-03-24") and time_of(rest) is not None
    # Ray's worker prefix and Ray Train's rank (github.com/ray-project/ray/issues/23060).
    ray = "(BaseWorkerMixin pid=25342, ip=10.0.100.14) 2022-03-11 01:47:25,982\tINFO torch.py:66 -- Setting up process group for: env:// [rank=1, world_size=5]"
    tag, rest = _parse(ray, Tag(), Labels())
    assert (tag.pid, tag.host) == (25342, "10.0.100.14") and rest.startswith("2022-03-11")
    # mpirun inside srun inside torch: each prefix peeled in turn.
    tag, rest = _parse("0: [default1]:[rank5]: Traceback (most recent call last):", Tag(), Labels())
    assert (tag.task, tag.local, tag.rank, rest) == (0, 1, 5, "Traceback (most recent call last):")


def test_ray_workers_and_nccl_processes_become_ranks(classifier: Classifier) -> None:
    ray = {  # github.com/ray-project/ray/issues/23060
        "ray.log": [
            "(BaseWorkerMixin pid=20102, ip=10.0.100.15) 2022-03-11 01:47:25,905\tINFO torch.py:66 -- Setting up process group for: env:// [rank=0, world_size=5]",
            "(BaseWorkerMixin pid=25342, ip=10.0.100.14) 2022-03-11 01:47:25,982\tINFO torch.py:66 -- Setting up process group for: env:// [rank=1, world_size=5]",
        ]
    }
    streams = {s.key: s for s in rank_streams(ray, Layout())}
    assert streams[("rank", 0)].hosts == ["10.0.100.15"] and streams[("rank", 1)].hosts == ["10.0.100.14"]
    nccl = {  # github.com/pytorch/examples/issues/1279
        "nccl.log": [
            "d-9-11-1:2870757:2870757 [0] NCCL INFO comm 0x560c6a8aafd0 rank 0 nranks 2 cudaDev 0 busId 86000 - Abort COMPLETE"
        ]
    }
    (stream,) = rank_streams(nccl, Layout())
    assert (stream.rank, stream.hosts) == (0, ["d-9-11-1"])
    assert AttemptReader(classifier)._node(stream, [], {}) == "d-9-11-1"


def test_layout_from_the_attempt_facts() -> None:
    layout = Layout.of({"job_id": "j", "nodes": ["gpu-01.cluster", "gpu-02.cluster"], "tasks_per_node": 8, "pods": {}})
    assert layout.node_of_rank(9) == "gpu-02.cluster" and layout.node_of_rank(16) is None
    assert layout.node_named("gpu-01") == "gpu-01.cluster" and layout.node_named("localhost") is None
    with pytest.raises(ValueError, match="tasks_per_node"):
        Layout.of({"nodes": ["a"], "tasks_per_node": "8"})


def test_the_reasons_a_multi_rank_answer_names_are_data_and_the_taxonomys(classifier: Classifier, tmp_path: Path) -> None:
    settings = ranks_settings()
    named = {*settings.peer_reasons, settings.launcher_death, settings.crash_signal}
    assert settings.peer_reasons and set(builtin_taxonomy().reasons) >= named
    wrong = tmp_path / "ranks.yaml"
    wrong.write_text("peer_reasons: mpi_runtime_failure\nlauncher_death: a\ncrash_signal: b\n")  # a string, not a list
    with pytest.raises(ConfigError, match="peer_reasons"):
        ranks_settings(wrong)


def test_the_answer_travels_as_json() -> None:
    found = Classification("gpu_ecc_error", "GPU ECC error", ("IF",), "signature", "x.y", "", 0.9, (Evidence(3, "Xid"),), 10, 3)
    answer = AttemptAnswer(
        found, Origin(5, "node-b", 1, "r5.log", 3, "the only rank that named a cause"), (0, 1), {"lost a peer": 2}
    )
    assert from_json(AttemptAnswer, to_json(answer)) == answer


def test_the_decision_implicates_the_origin_node_not_every_node() -> None:
    found = Classification(
        "gpu_ecc_error", "GPU ECC error", ("IF",), "signature", "x.y", "", 0.9, (Evidence(3, "Xid 48"),), 10, 3
    )
    nodes = ("node-a", "node-b", "node-c")
    origin = Origin(5, "node-b", None, "r5.log", 3, "")
    assert implicated_nodes(Attempt("j", 1, "u", nodes=nodes), Failure.of(found, None, origin)) == ("node-b",)
    assert implicated_nodes(Attempt("j", 1, "u", nodes=nodes), Failure.of(found, None)) == nodes
    elsewhere = Origin(5, "node-z", None, "r5.log", 3, "")  # not this attempt's: not trusted
    assert implicated_nodes(Attempt("j", 1, "u", nodes=nodes), Failure.of(found, None, elsewhere)) == nodes


def test_what_the_launchers_say() -> None:
    def lines(name: str) -> list[RankLine]:
        return [RankLine(name, n, text) for n, text in enumerate(read_lines(DATA / name), 1)]

    # Each torchrun agent prints its node's table: node-a's Root Cause is rank 3, a rank
    # that only lost its peer, a second after node-b's rank 5.
    said = reports(lines("torchrun_two_nodes/node-a.log") + lines("torchrun_two_nodes/node-b.log"))
    roots = sorted((r.time, r.rank) for r in said if r.root)
    assert [rank for _, rank in roots] == [5, 3] and {r.host for r in said} == {"localhost"}
    assert {r.rank for r in said if not r.root} == {0, 1, 2, 4, 6, 7}
    srun = [r for r in reports(lines("srun_label.out")) if r.by == "srun"]
    assert (srun[0].rank, srun[0].host, srun[0].root) == (3, "node2", True)
    mpirun = [r for r in reports(lines("mpirun_tag_output.log")) if r.by == "mpirun"]
    assert [(r.rank, r.root) for r in mpirun] == [(2, True)]
    assert _task_list("1,3-5") == [1, 3, 4, 5]


def test_nccl_processes_and_c10d_ranks_in_public_logs(classifier: Classifier) -> None:
    # Two NCCL processes on one host: the one whose CUDA calloc failed (device 3) started it,
    # the other only saw its peer close the socket (github.com/NVIDIA/nccl/issues/1235).
    oom = read_attempt(classifier, [ROOT / "samples" / "gpu_oom--nccl_p2p_setup_cuda_oom.log"])
    assert oom.classification.reason == "gpu_oom"
    assert oom.origin is not None and (oom.origin.node, oom.origin.gpu, oom.origin.line) == ("ng30903", 3, 14)
    # c10d's "[Rank 1]" in the message names the rank (samples/*.url says where it is from).
    ecc = read_attempt(classifier, [ROOT / "samples" / "gpu_ecc_error--kohya_ddp_ecc_nccl_watchdog.log"])
    assert ecc.classification.reason == "gpu_ecc_error" and ecc.origin is not None and ecc.origin.rank == 1


@pytest.mark.parametrize(
    ("name", "srun", "roles"),
    [
        ("torchrun_interleaved.log", False, set()),
        ("srun_label.out", True, set()),
        ("torchrun_tee_two_causes.log", False, {"default"}),
    ],
)
def test_labels_counted_where_a_launcher_put_them(name: str, srun: bool, roles: set[str]) -> None:
    labels = _labels(read_lines(DATA / name), Layout())
    assert (labels.srun, labels.roles, labels.hosts) == (srun, roles, frozenset())
