"""What the controller reads of a pod, what it tells the classifier, and what each decision
does to the Job. Pods: the one recorded from a real cluster (tests/data/kubernetes, source
beside it), and pods written here in the API's shape whose ends are the kubelet's own
(reasons and messages: tests/data/kubernetes/api_formats.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT

from failclass.adapters.kubernetes.changes import JobChange, JobDecision, job_changes
from failclass.adapters.kubernetes.objects import (
    CLAIMED,
    JobState,
    attempt_from_pod,
    evidence_lines,
    parse_pod,
    scheduler_evidence,
)
from failclass.classifier import Classifier
from failclass.contracts import Decision, Explanation
from failclass.hook.answer import HookAnswer
from failclass.hook.backends import EXIT_CODES, LocalBackend
from failclass.policy.config import load_policy

RECORDED = ROOT / "tests" / "data" / "kubernetes"
RECORDED_POD = json.loads((RECORDED / "verrazzano_install_job_pod.json").read_text())
# A produced run that the kernel killed for its memory (corpora/produced/cpu_oom): what the
# container printed before the kill; the node's dmesg is not in a container's log.
OOM_RUN = (ROOT / "corpora/produced/cpu_oom/cpu_oom__cgroup_oom_killer__0.log").read_text().split("exit code: 137")[0]
# A kubelet eviction message as recorded in https://github.com/sustainable-computing-io/susql-operator/issues/140
EVICTION = (
    "The node was low on resource: ephemeral-storage. Threshold quantity: 24068434671, available: 23201836Ki. "
    "Container kube-rbac-proxy was using 8Ki, request is 0, has larger consumption of ephemeral-storage. "
    "Container manager was using 106848Ki, request is 0, has larger consumption of ephemeral-storage. "
)
DEADLINE = "Pod was active on the node longer than the specified deadline"


def job_pod(name: str, pod_status: dict[str, Any], terminated: dict[str, Any] | None) -> dict[str, Any]:
    """A pod of Job "train-resnet" (written here, in the core/v1 shape)."""
    container: dict[str, Any] = {"name": "train", "ready": False, "restartCount": 0}
    container["state"] = {"terminated": terminated} if terminated else {"waiting": {"reason": "ContainerCreating"}}
    return {
        "metadata": {
            "name": name,
            "namespace": "vision",
            "resourceVersion": "4711",
            "labels": {"batch.kubernetes.io/job-name": "train-resnet", "job-name": "train-resnet", "user": "alice"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train-resnet", "controller": True}],
        },
        "spec": {"nodeName": "gpu-node-3", "containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        "status": {"phase": "Failed", **pod_status, "containerStatuses": [container]},
    }


ENDED = {"startedAt": "2026-11-02T09:00:00Z", "finishedAt": "2026-11-02T09:40:00Z"}
OOM_KILLED = job_pod("train-resnet-q9d4m", {}, {"exitCode": 137, "reason": "OOMKilled", **ENDED})
EVICTED = job_pod("train-resnet-b2x8k", {"reason": "Evicted", "message": EVICTION}, None)
TIMED_OUT = job_pod(
    "train-resnet-z7w1c", {"reason": "DeadlineExceeded", "message": DEADLINE}, {"exitCode": 143, "reason": "Error", **ENDED}
)


def test_a_pod_is_read_into_typed_facts() -> None:
    pod = parse_pod(OOM_KILLED)
    assert (pod.key, pod.job, pod.node, pod.user, pod.gpus, pod.resource_version) == (
        "vision/train-resnet-q9d4m",
        "train-resnet",
        "gpu-node-3",
        "alice",
        4,
        "4711",
    )
    (end,) = pod.failures
    assert (end.container, end.reason, end.exit_code, end.signal) == ("train", "OOMKilled", 137, 9)
    attempt = attempt_from_pod(pod, 2, ("train.log",))
    assert (attempt.job_id, attempt.attempt, attempt.vc, attempt.exit_code, attempt.signal) == (
        "vision/train-resnet",
        2,
        "vision",
        137,
        9,
    )
    assert attempt.runtime_minutes == 40 and attempt.nodes == ("gpu-node-3",) and attempt.gpus == 4


def test_the_recorded_pod() -> None:
    pod = parse_pod(RECORDED_POD)
    attempt = attempt_from_pod(pod, 1, ("install.log",))
    assert attempt.job_id == "verrazzano-install/verrazzano-install-my-verrazzano"
    assert (attempt.exit_code, attempt.signal, attempt.nodes) == (1, None, ("verrazzano-control-plane",))
    assert attempt.runtime_minutes is not None and round(attempt.runtime_minutes, 2) == 10.23


def test_which_pods_need_a_decision() -> None:
    def with_mark(mark: str | None, watch: dict[str, str] | None = None) -> bool:
        raw = json.loads(json.dumps(OOM_KILLED))
        raw["metadata"]["annotations"] = ({"failclass.io/handled": mark} if mark else {}) | (watch or {})
        return parse_pod(raw).needs_decision("replica-a")

    assert with_mark(None) and with_mark(CLAIMED + "replica-b")  # a claim of a replica that lost the Lease
    assert not with_mark(CLAIMED + "replica-a") and not with_mark("no_retry")
    assert not with_mark(None, {"failclass.io/released": "no GPU work for 61 min"})  # the idle watch ended it
    assert with_mark(None, {"failclass.io/hung": "no GPU work for 70 min"})  # deleted as hung: a failure
    running = json.loads(json.dumps(OOM_KILLED)) | {"status": {"phase": "Running"}}
    assert not parse_pod(running).needs_decision("replica-a")


def classify(pod: dict[str, Any], log: str, classifier: Classifier, tmp_path: Path) -> str:
    """The reason the classifier gives the container log followed by the API's evidence."""
    path = tmp_path / "train.log"
    path.write_text(log + "\n".join(evidence_lines(parse_pod(pod))) + "\n")
    _, examined = classifier.examine_paths([path])
    return examined.classification.reason


@pytest.mark.parametrize(
    ("pod", "reason", "without_evidence"),
    [
        (OOM_KILLED, "cpu_oom", "no_signature"),
        (EVICTED, "job_preempted", "no_signature"),
        (TIMED_OUT, "no_signature", "no_signature"),
    ],
    ids=["OOMKilled", "Evicted", "DeadlineExceeded"],
)
def test_the_termination_is_evidence(
    pod: dict[str, Any], reason: str, without_evidence: str, classifier: Classifier, tmp_path: Path
) -> None:
    """An OOM kill and an eviction are not in the container's log, only in the API: with
    the evidence lines they classify as the taxonomy says (OOMKilled: cpu_oom; Evicted:
    job_preempted; a deadline, like a time limit, names no failure)."""
    assert classify(pod, OOM_RUN, classifier, tmp_path) == reason
    lines = evidence_lines(parse_pod(pod))
    assert not any(line in OOM_RUN for line in lines)
    bare = tmp_path / "bare.log"
    bare.write_text(OOM_RUN)
    _, examined = classifier.examine_paths([bare])
    assert examined.classification.reason == without_evidence


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (JobDecision("retry", "r", "m"), []),
        (JobDecision("no_retry", "r", "m"), [JobChange(backoff_limit=3)]),
        (JobDecision("retry_with_more_resources", "r", "m"), [JobChange(backoff_limit=3)]),
        (JobDecision("hold", "r", "m"), [JobChange(suspend=True)]),
        (
            JobDecision("retry_elsewhere", "r", "m", exclude_nodes=("gpu-7",)),
            [JobChange(suspend=True), JobChange(avoid_nodes=("gpu-7",)), JobChange(suspend=False)],
        ),
        (JobDecision("no_retry", "r", "m", enforced=False), []),
    ],
)
def test_decisions_map_to_job_changes(decision: JobDecision, expected: list[JobChange]) -> None:
    note, *changes = job_changes(decision, JobState("vision", "train-resnet", 3))
    assert dict(note.annotations)["failclass.io/decision"] == decision.action
    assert changes == expected


def test_changes_are_merge_patches() -> None:
    assert JobChange(backoff_limit=2).merge_patch() == {"spec": {"backoffLimit": 2}}
    assert JobChange(suspend=False).merge_patch() == {"spec": {"suspend": False}}
    affinity = JobChange(avoid_nodes=("gpu-7",)).merge_patch()["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["gpu-7"]}]}]
    answer = HookAnswer(Decision("hold", explanation=Explanation("cpu_oom", None, "holds", "x" * 5000)))
    assert len(JobDecision.from_answer(answer).message) == 1000


def test_pod_failure_policy_example_follows_the_hook_exit_codes() -> None:
    job = yaml.safe_load((ROOT / "adapters/kubernetes/training-job.yaml").read_text())
    rules = {rule["action"]: rule for rule in job["spec"]["podFailurePolicy"]["rules"]}
    fail = {EXIT_CODES[a] for a in ("no_retry", "hold", "reject")}
    count = {EXIT_CODES[a] for a in ("retry", "retry_elsewhere", "retry_with_more_resources")}
    assert set(rules["FailJob"]["onExitCodes"]["values"]) == fail
    assert set(rules["Count"]["onExitCodes"]["values"]) == count
    assert rules["Ignore"]["onPodConditions"] == [{"type": "DisruptionTarget"}]


def test_the_api_names_the_cause_as_scheduler_evidence(tmp_path: Path) -> None:
    """OOMKilled and Evicted reach the hook as the scheduler's own word, which outranks a
    log that names nothing (here: the run's output alone, without the evidence lines)."""
    evidence = {
        name: scheduler_evidence(parse_pod(pod))
        for name, pod in (("oom", OOM_KILLED), ("evicted", EVICTED), ("deadline", TIMED_OUT))
    }
    assert evidence["deadline"] is None
    assert evidence["oom"] is not None and (evidence["oom"].reason, evidence["oom"].rule_id) == (
        "cpu_oom",
        "kubernetes.oomkilled",
    )
    assert evidence["evicted"] is not None and evidence["evicted"].reason == "job_preempted"
    assert "Reason:       Evicted" in evidence["evicted"].lines
    log = tmp_path / "train.log"
    log.write_text(OOM_RUN)
    backend = LocalBackend(f"sqlite:///{tmp_path / 'f.db'}", Classifier(), load_policy())
    attempt = attempt_from_pod(parse_pod(OOM_KILLED), 1, (str(log),))
    answer = backend.decide(attempt, [log], evidence["oom"])
    assert answer.decided is not None and answer.decided.explanation.reason == "cpu_oom"
    other = backend.decide(replace(attempt, job_id="vision/other"), [log], None).decided
    assert other is not None and other.explanation.reason == "no_signature"
