"""The Kubernetes controller loop and the podFailurePolicy mapping. No cluster runs here:
a failed Job pod recorded from a real cluster, with its container log
(tests/data/kubernetes, sources beside them), goes through the loop; the other pods below
are written for these tests in the shape of the core/v1 API, and say so, to cover what
the recording does not (an OOM kill, GPUs, a training log)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT

from failclass.adapters.kubernetes import HANDLED, attempt_from_pod, job_name, job_patches, run_once, terminated
from failclass.classifier import Classifier
from failclass.hook.backends import EXIT_CODES, LocalBackend
from failclass.policy.config import load_policy


def failed_pod(name: str, reason: str, exit_code: int, node: str = "gpu-node-3") -> dict[str, Any]:
    """A failed pod of Job "train-resnet", as the API describes one (written for the tests)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "vision",
            "labels": {"batch.kubernetes.io/job-name": "train-resnet", "user": "alice"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train-resnet", "controller": True}],
        },
        "spec": {"nodeName": node, "containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "train",
                    "state": {
                        "terminated": {
                            "exitCode": exit_code,
                            "reason": reason,
                            "startedAt": "2026-11-02T09:00:00Z",
                            "finishedAt": "2026-11-02T09:40:00Z",
                        }
                    },
                }
            ],
        },
    }


FAILED_PODS = [
    ("error", failed_pod("train-resnet-x7k2p", "Error", 1)),
    ("oom", failed_pod("train-resnet-q9d4m", "OOMKilled", 137)),
]


@pytest.mark.parametrize(("name", "pod"), FAILED_PODS, ids=[n for n, _ in FAILED_PODS])
def test_attempt_facts_from_a_pod(name: str, pod: dict[str, Any]) -> None:
    job = {"status": {"failed": 2}}
    attempt = attempt_from_pod(pod, job, ("pod.log",))
    (_, state), *_ = terminated(pod)
    assert attempt.exit_code == state["exitCode"] != 0
    assert attempt.signal == (state["exitCode"] - 128 if state["exitCode"] > 128 else None)
    assert attempt.attempt == 2 and attempt.vc == pod["metadata"].get("namespace", "default")
    if pod.get("spec", {}).get("nodeName"):
        assert attempt.nodes == (pod["spec"]["nodeName"],)
    assert attempt.job_id == "vision/train-resnet" and attempt.user == "alice" and attempt.gpus == 4
    assert attempt.runtime_minutes == 40


RECORDED = ROOT / "tests" / "data" / "kubernetes"
RECORDED_POD = json.loads((RECORDED / "verrazzano_install_job_pod.json").read_text())
RECORDED_LOG = (RECORDED / "verrazzano_install_job_pod.install.log").read_text()


def test_attempt_facts_from_the_recorded_pod() -> None:
    attempt = attempt_from_pod(RECORDED_POD, {"status": {"failed": 1}}, ("install.log",))
    assert attempt.job_id == "verrazzano-install/verrazzano-install-my-verrazzano"
    assert (attempt.exit_code, attempt.signal, attempt.nodes) == (1, None, ("verrazzano-control-plane",))
    assert attempt.runtime_minutes is not None and round(attempt.runtime_minutes, 2) == 10.23


class FakeApi:
    """The controller's view of a cluster, served from the objects above."""

    def __init__(self, pods: list[dict[str, Any]], log: str) -> None:
        self.pods = pods
        self.text = log
        self.patches: list[tuple[str, str, str, dict[str, Any]]] = []

    def failed_pods(self) -> list[dict[str, Any]]:
        handled = {name for kind, _, name, _ in self.patches if kind == "pod"}
        return [p for p in self.pods if p["metadata"]["name"] not in handled]

    def log(self, pod: dict[str, Any], container: str) -> str:
        return self.text

    def job(self, namespace: str, name: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": namespace}, "status": {"failed": 1}}

    def patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.patches.append((kind, namespace, name, patch))


def test_the_controller_decides_once_per_failed_pod(tmp_path: Path) -> None:
    pods = [FAILED_PODS[0][1]]
    syntax_log = (ROOT / "corpora/produced/syntax_error/syntax_error__indentation__0.log").read_text()
    api = FakeApi(pods, syntax_log)
    backend = LocalBackend(f"sqlite:///{tmp_path / 'f.db'}", Classifier(), load_policy())
    done = run_once(api, backend.decide, tmp_path)
    assert [d["action"] for d in done] == ["no_retry"] * len(pods)
    for pod in pods:
        job_updates = [p for kind, _, name, p in api.patches if kind == "job" and name == job_name(pod)]
        assert {"spec": {"backoffLimit": 1}} in job_updates  # the Job fails now instead of retrying
        assert any(p["metadata"]["annotations"]["failclass.io/reason"] == "syntax_error" for p in job_updates if "metadata" in p)
        marks = [p for kind, _, name, p in api.patches if kind == "pod" and name == pod["metadata"]["name"]]
        assert marks == [{"metadata": {"annotations": {HANDLED: "no_retry"}}}]
    assert run_once(api, backend.decide, tmp_path) == []  # handled pods are not decided again


def test_the_recorded_failed_job_pod_through_the_loop(tmp_path: Path) -> None:
    api = FakeApi([RECORDED_POD], RECORDED_LOG)
    backend = LocalBackend(f"sqlite:///{tmp_path / 'f.db'}", Classifier(), load_policy())
    (done,) = run_once(api, backend.decide, tmp_path)
    # An installer timing out names no known failure: one more try, which the Job's own
    # backoffLimit gives, so the Job is only annotated.
    assert (done["job"], done["action"]) == ("verrazzano-install-my-verrazzano", "retry")
    (note,) = done["patches"]
    assert note["metadata"]["annotations"]["failclass.io/reason"] == "no_signature"
    assert (
        "pod",
        "verrazzano-install",
        "verrazzano-install-my-verrazzano-p7mqx",
        {"metadata": {"annotations": {HANDLED: "retry"}}},
    ) in api.patches


def test_an_oom_killed_pod_is_read_from_the_api_status(tmp_path: Path) -> None:
    """The log of an OOM-killed container says nothing; the API's termination reason does."""
    api = FakeApi([FAILED_PODS[1][1]], "epoch 3 step 1200 loss 0.41\n")
    backend = LocalBackend(f"sqlite:///{tmp_path / 'f.db'}", Classifier(), load_policy())
    (done,) = run_once(api, backend.decide, tmp_path)
    assert done["action"] == "retry_with_more_resources"
    assert {"spec": {"backoffLimit": 1}} in done["patches"]


@pytest.mark.parametrize(
    ("decision", "spec_patches"),
    [
        ({"action": "retry"}, []),
        ({"action": "no_retry"}, [{"backoffLimit": 3}]),
        ({"action": "hold"}, [{"suspend": True}]),
        ({"action": "retry_elsewhere", "exclude_nodes": ["gpu-7"]}, [{"suspend": True}, "affinity", {"suspend": False}]),
        ({"action": "no_retry", "enforced": False}, []),
    ],
)
def test_decisions_map_to_job_patches(decision: dict[str, Any], spec_patches: list[Any]) -> None:
    patches = job_patches({**decision, "explanation": {"reason": "r", "message": "m"}}, {"status": {"failed": 3}})
    assert patches[0]["metadata"]["annotations"]["failclass.io/decision"] == decision["action"]
    specs = [p["spec"] for p in patches[1:]]
    if "affinity" in spec_patches:
        affinity = specs[1]["template"]["spec"]["affinity"]["nodeAffinity"]
        terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0] == {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["gpu-7"]}
        specs[1] = "affinity"
    assert specs == spec_patches


def test_pod_failure_policy_example_follows_the_hook_exit_codes() -> None:
    job = yaml.safe_load((ROOT / "adapters/kubernetes/training-job.yaml").read_text())
    rules = {rule["action"]: rule for rule in job["spec"]["podFailurePolicy"]["rules"]}
    fail = {EXIT_CODES[a] for a in ("no_retry", "hold", "reject")}
    count = {EXIT_CODES[a] for a in ("retry", "retry_elsewhere", "retry_with_more_resources")}
    assert set(rules["FailJob"]["onExitCodes"]["values"]) == fail
    assert set(rules["Count"]["onExitCodes"]["values"]) == count
    assert rules["Ignore"]["onPodConditions"] == [{"type": "DisruptionTarget"}]
