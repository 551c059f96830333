"""The Slurm adapter's reading of what Slurm really prints inside EpilogSlurmctld
(tests/data/slurm: recorded here from Slurm 22.05.8; README.md there) and the scontrol
commands each decision becomes."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ROOT

from failclass.adapters.slurm import Scontrol, SlurmJob, attempt_from_job, comment_for, declared_inputs
from failclass.adapters.slurm_state import ending_state, requeued_by_slurm, scheduler_evidence
from failclass.attempts import Attempt
from failclass.contracts import Decision
from failclass.history import Failure, History
from failclass.hook.answer import HookAnswer
from failclass.policy.config import load_policy
from failclass.policy.decide import decide

SLURM = ROOT / "tests" / "data" / "slurm"


def env_of(name: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (SLURM / name).read_text().splitlines())


def test_a_one_node_job_as_the_epilog_sees_it() -> None:
    job = SlurmJob.parse((SLURM / "show_job_in_epilog.txt").read_text())
    fields = job.fields
    assert (fields["JobState"], fields["ExitCode"], fields["Reason"], fields["BatchHost"]) == (
        "COMPLETING",
        "1:0",
        "NonZeroExitCode",
        "vm",
    )
    attempt = attempt_from_job(job, env_of("epilog_env.txt"), declared_inputs((SLURM / "batch_script.txt").read_text()))
    assert (attempt.job_id, attempt.attempt, attempt.user, attempt.vc, attempt.status) == ("1", 1, "root", "debug", "failed")
    assert (attempt.exit_code, attempt.signal, attempt.nodes, attempt.gpus) == (1, None, ("vm",), 0)
    assert attempt.inputs == ("/data/imagenet",)
    assert attempt.logs == ("/tmp/fc/slx/b/jobs/train-resnet-1.out",)
    assert attempt.start_time is not None and attempt.start_time.tzinfo is not None


def test_a_multi_node_job_brings_its_whole_allocation() -> None:
    # NodeList= is empty inside the epilog and BatchHost is one node; -d lists them all.
    job = SlurmJob.parse((SLURM / "show_job_d_multinode_in_epilog.txt").read_text())
    assert job.fields["NodeList"] == "" and job.fields["BatchHost"] == "node1"
    assert job.allocation == (("node1", ()), ("node2", ()), ("node3", ()))
    attempt = attempt_from_job(job, {}, ())
    assert attempt.nodes == ("node1", "node2", "node3") and (attempt.exit_code, attempt.signal) == (3, None)


def test_per_node_gpu_indices_count_the_gpus() -> None:
    text = (ROOT / "corpora/slurm_jobs/scontrol_show_job_d--huji-gres-idx-noncontig-4gpu.txt").read_text()
    job = SlurmJob.parse(" ".join(text.split()))  # the one-line form the epilog reads
    assert job.allocation == (("node-06", (0, 2, 3, 5)),)
    assert attempt_from_job(job, {}, ()).gpus == 4


def test_the_ending_state_is_read_from_a_completing_job() -> None:
    node_fail = SlurmJob.parse((SLURM / "show_job_d_node_fail_in_epilog.txt").read_text())
    preempted = SlurmJob.parse((SLURM / "show_job_d_preempted_in_epilog.txt").read_text())
    multinode = SlurmJob.parse((SLURM / "show_job_d_multinode_in_epilog.txt").read_text())
    assert (node_fail.state, preempted.state, multinode.state) == ("NODE_FAIL", "PREEMPTED", "COMPLETING")
    assert ending_state({"JobState": "COMPLETING", "Reason": "OutOfMemory"}) == "OUT_OF_MEMORY"
    assert ending_state({"JobState": "OUT_OF_MEMORY"}) == "OUT_OF_MEMORY"
    assert ending_state({"JobState": "COMPLETING", "Reason": "TimeLimit"}) == "TIMEOUT"
    # A node failure is a failure even with exit 0:15 and an empty log; its nodes all come.
    attempt = attempt_from_job(node_fail, env_of("epilog_env_node_fail.txt"), ())
    assert attempt.status == "failed" and attempt.nodes == ("node2", "node3") and attempt.signal == 15


def test_slurm_names_the_failed_node_and_the_policy_excludes_only_it() -> None:
    job = SlurmJob.parse((SLURM / "show_job_d_node_fail_in_epilog.txt").read_text())
    down = {"NodeName": "node3", "State": "DOWN+NOT_RESPONDING", "Reason": "Not responding [root@2026-11-26T21:53:20]"}
    evidence = scheduler_evidence(job.fields, [{"NodeName": "node2", "State": "MIXED"}, down])
    assert evidence is not None and (evidence.reason, evidence.rule_id) == ("job_preempted", "slurm.node_fail")
    assert evidence.lines == (
        "JobId=3 JobState=COMPLETING Reason=NodeDown ExitCode=0:15 Restarts=0 PreemptTime=None",
        "NodeName=node3 State=DOWN+NOT_RESPONDING Reason=Not responding [root@2026-11-26T21:53:20]",
    )
    assert scheduler_evidence(SlurmJob.parse((SLURM / "show_job_d_multinode_in_epilog.txt").read_text()).fields, []) is None
    # Had the policy sent it elsewhere, it would have avoided node3 alone, not node2 too.
    attempt = Attempt("3", 1, "root", nodes=("node2", "node3"))
    elsewhere = load_policy().for_failure("gpu_ecc_error", None, "default")
    assert elsewhere.action == "retry_elsewhere"
    decision = decide(attempt, Failure("gpu_ecc_error", None, evidence.lines), History(nodes_seen=8), load_policy())
    assert isinstance(decision, Decision) and decision.exclude_nodes == ("node3",)
    assert decision.effects.implicated_nodes == ("node3",)


class RecordingScontrol(Scontrol):
    def __init__(self) -> None:
        super().__init__()
        self.ran: list[tuple[str, ...]] = []

    def run(self, *args: str) -> str:
        self.ran.append(args)
        return ""


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"action": "retry", "backoff_seconds": 31.6}, [("requeue", "7"), ("update", "jobid=7", "StartTime=now+31")]),
        (
            {"action": "retry_elsewhere", "exclude_nodes": ["gpu-1", "gpu-2"]},
            [("requeue", "7"), ("update", "jobid=7", "ExcNodeList=gpu-1,gpu-2")],
        ),
        ({"action": "hold"}, [("requeuehold", "7")]),
        ({"action": "no_retry"}, [("requeuehold", "State=SpecialExit", "7")]),
    ],
)
def test_each_decision_becomes_scontrol_commands(answer: dict[str, Any], expected: list[tuple[str, ...]]) -> None:
    body = {**answer, "explanation": {"reason": "r", "rule_id": "r.x", "policy_clause": "defaults.action", "message": "m"}}
    scontrol = RecordingScontrol()
    scontrol.act("7", HookAnswer.of_body(body))
    assert scontrol.ran[:-1] == expected
    assert scontrol.ran[-1] == ("update", "jobid=7", f"comment={comment_for(HookAnswer.of_body(body))}")
    assert comment_for(HookAnswer.of_body(body)) == f"failclass: {answer['action']}: r (r.x): m"
    audit = RecordingScontrol()
    assert audit.act("7", HookAnswer.of_body({**body, "enforced": False})) == [] and audit.ran == []
    left = RecordingScontrol()
    left.act("7", HookAnswer.of_body({**body, "action": "no_retry"}), no_retry="leave-failed")
    assert left.ran == []


def test_a_job_slurm_requeued_itself_is_a_failed_attempt_of_a_failed_node() -> None:
    job = SlurmJob.parse((SLURM / "show_job_d_requeued_by_slurm_in_epilog.txt").read_text())
    env = {"SLURM_JOB_RESTART_COUNT": "0", "SLURM_JOB_NODELIST": "node[1-2]"}
    assert requeued_by_slurm(job.fields, env) and not requeued_by_slurm(job.fields, {"SLURM_JOB_RESTART_COUNT": "1"})
    attempt = attempt_from_job(job, env, ())
    assert (attempt.attempt, attempt.status, attempt.exit_code) == (1, "failed", 0)  # exit 0:0, yet it did not end well
    down = {"NodeName": "node2", "State": "DOWN+NOT_RESPONDING", "Reason": "failclass test: slurmd killed"}
    assert ending_state(job.fields, True, [down]) == "NODE_FAIL" and ending_state(job.fields, True, []) == "COMPLETING"
    evidence = scheduler_evidence(job.fields, [{"NodeName": "node1", "State": "IDLE"}, down], requeued=True)
    assert evidence is not None and evidence.rule_id == "slurm.node_fail"
    assert evidence.lines[1] == "NodeName=node2 State=DOWN+NOT_RESPONDING Reason=failclass test: slurmd killed"
    # Already pending: a retry only updates it, anything else holds it.
    retry, stop = RecordingScontrol(), RecordingScontrol()
    body = {
        "action": "retry",
        "backoff_seconds": 3,
        "explanation": {
            "reason": "job_preempted",
            "rule_id": "slurm.node_fail",
            "policy_clause": "defaults.action",
            "message": "",
        },
    }
    retry.act("1", HookAnswer.of_body(body), requeued=True)
    stop.act("1", HookAnswer.of_body({**body, "action": "no_retry"}), requeued=True)
    assert [c[:2] for c in retry.ran] == [("update", "jobid=1"), ("update", "jobid=1")] and retry.ran[0][2] == "StartTime=now+3"
    assert stop.ran[0] == ("hold", "1")
