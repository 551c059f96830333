"""The controller over HTTP against tests/kube_apiserver.py (no kube-apiserver can be had
here: tests/data/kubernetes/api_formats.md), through the official client, with the
shipped RBAC rules enforced: the Lease, the watch resumed from a resourceVersion and
listed again after 410 Gone, and two `failclass hook k8s-controller` processes deciding a
watched pod failure once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import ROOT
from kube_apiserver import ADMIN, CONTROLLER, ApiServer, ApiState, roles_from_manifests, write_kubeconfig
from kubernetes import config

from failclass.adapters.kubernetes.cluster import Cluster, WatchExpired
from failclass.adapters.kubernetes.controller import Controller, swap_handled
from failclass.adapters.kubernetes.lease import LeaderLease, LeaseSettings
from failclass.attempts import Attempt, SchedulerEvidence
from failclass.classifier import Classifier
from failclass.errors import InputError
from failclass.hook.answer import HookAnswer
from failclass.hook.backends import LocalBackend
from failclass.policy.config import load_policy

MANIFESTS = ROOT / "adapters" / "kubernetes"
OOM_RUN = (ROOT / "corpora/produced/cpu_oom/cpu_oom__cgroup_oom_killer__0.log").read_text().split("exit code: 137")[0]
DEADLINE = "Pod was active on the node longer than the specified deadline"  # pkg/kubelet/active_deadline.go
JOB = "train-resnet"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[ApiState, ApiServer, Path]]:
    """The server with the shipped RBAC, its URL in a kubeconfig for the controller."""
    documents = list(yaml.safe_load_all((MANIFESTS / "rbac.yaml").read_text()))
    state = ApiState(roles_from_manifests(documents, "failclass-controller"))
    server = ApiServer(state)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    write_kubeconfig(tmp_path / "kubeconfig", server.url, CONTROLLER)
    admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10)
    admin.post(
        "/apis/batch/v1/namespaces/training/jobs", json={"metadata": {"name": JOB}, "spec": {"backoffLimit": 6}}
    ).raise_for_status()
    yield state, server, tmp_path / "kubeconfig"
    server.stop()


def fail_pod(server: ApiServer, name: str, pod_status: dict[str, Any], terminated: dict[str, Any], failures: int) -> None:
    """What the kubelet and the Job controller would write: the pod, its end, the Job's count."""
    admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10)
    labels = {"batch.kubernetes.io/job-name": JOB, "job-name": JOB}
    owner = [{"apiVersion": "batch/v1", "kind": "Job", "name": JOB, "controller": True}]
    body = {"metadata": {"name": name, "labels": labels, "ownerReferences": owner}, "spec": {"containers": [{"name": "train"}]}}
    admin.post("/api/v1/namespaces/training/pods", json=body).raise_for_status()
    server.state.logs[("training", name, "train")] = OOM_RUN
    container = {"name": "train", "ready": False, "restartCount": 0, "state": {"terminated": terminated}}
    status = {"status": {"phase": "Failed", **pod_status, "containerStatuses": [container]}}
    merge = {"Content-Type": "application/merge-patch+json"}
    admin.patch(f"/api/v1/namespaces/training/pods/{name}/status", content=json.dumps(status), headers=merge).raise_for_status()
    job_status = json.dumps({"status": {"failed": failures}})
    admin.patch(f"/apis/batch/v1/namespaces/training/jobs/{JOB}/status", content=job_status, headers=merge).raise_for_status()


def cluster_for(kubeconfig: Path) -> Cluster:
    return Cluster(config.new_client_from_config(config_file=str(kubeconfig)), "training", "job-name")


def wait_for(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_the_lease_elects_one_leader(api: tuple[ApiState, ApiServer, Path]) -> None:
    state, _, kubeconfig = api
    now = {"a": 0.0, "b": 0.0}
    settings = LeaseSettings("failclass", duration_s=15, renew_deadline_s=10, retry_s=2)
    a = LeaderLease(cluster_for(kubeconfig), settings, "replica-a", clock=lambda: now["a"])
    b = LeaderLease(cluster_for(kubeconfig), settings, "replica-b", clock=lambda: now["b"])
    assert a.try_acquire_or_renew() and a.leading()
    assert not b.try_acquire_or_renew() and not b.leading()
    now["b"] += 14  # a has not renewed for 14 s of b's clock: not yet expired
    assert not b.try_acquire_or_renew()
    now["a"] += 10  # a could not renew within its deadline: it stops acting first
    assert not a.leading()
    now["b"] += 1  # 15 s without a renewal b saw: the Lease is b's
    assert b.try_acquire_or_renew() and b.leading()
    lease = state.get("coordination.k8s.io", "leases", "failclass", settings.name)["spec"]
    assert (lease["holderIdentity"], lease["leaseTransitions"], lease["leaseDurationSeconds"]) == ("replica-b", 1, 15)
    assert not a.try_acquire_or_renew()  # a's clock says nothing changed for 10 s, but the Lease was b's all along
    stale = a.observed
    assert stale is not None and b.try_acquire_or_renew()
    assert a.cluster.write_lease("failclass", settings.name, stale) is None  # a write of an old version: 409


def test_of_two_claims_on_one_pod_the_first_wins(api: tuple[ApiState, ApiServer, Path]) -> None:
    """The claim is written only if the pod is as read: a replica acting on a pod it read
    before another's claim gets 409, reads the pod again, sees the claim and leaves it."""
    _, server, kubeconfig = api
    fail_pod(server, "train-resnet-c1", {}, {"exitCode": 137, "reason": "OOMKilled"}, 1)
    first, second = cluster_for(kubeconfig), cluster_for(kubeconfig)
    seen_by_second = second.pod("training", "train-resnet-c1")
    claimed = swap_handled(first, first.pod("training", "train-resnet-c1"), None, "claimed replica-a")
    assert claimed is not None and claimed.handled == "claimed replica-a"
    assert second.mark(seen_by_second, "claimed replica-b") is None  # 409 Conflict
    assert swap_handled(second, seen_by_second, None, "claimed replica-b") is None
    assert swap_handled(first, claimed, "claimed replica-a", "retry") is not None
    assert second.pod("training", "train-resnet-c1").handled == "retry"


def test_the_watch_resumes_and_lists_again_after_410(api: tuple[ApiState, ApiServer, Path], tmp_path: Path) -> None:
    state, server, kubeconfig = api
    cluster = cluster_for(kubeconfig)
    pods, version = cluster.list_pods()
    fail_pod(server, "train-resnet-a1", {}, {"exitCode": 137, "reason": "OOMKilled"}, 1)
    seen = [event.pod.name for event in cluster.watch_pods(version, 1) if event.pod]
    assert pods == [] and seen == ["train-resnet-a1"] * 2  # created, then failed
    state.compact()
    with pytest.raises(WatchExpired, match="too old resource version"):
        list(cluster.watch_pods(version, 1))

    lease = LeaderLease(cluster, LeaseSettings("failclass", duration_s=6, renew_deadline_s=4, retry_s=1), "replica-a")
    listing = cluster.list_pods

    def list_then_lose_history() -> Any:
        """The list, then a pod fails and the history is compacted before the watch starts."""
        listed = listing()
        if not any(p.name == "train-resnet-a2" for p in listed[0]):
            fail_pod(
                server,
                "train-resnet-a2",
                {"reason": "DeadlineExceeded", "message": DEADLINE},
                {"exitCode": 143, "reason": "Error"},
                2,
            )
            state.compact()
        return listed

    cluster.list_pods = list_then_lose_history  # type: ignore[method-assign]
    backend = LocalBackend(f"sqlite:///{tmp_path / 'f.db'}", Classifier(), load_policy())
    lines: list[str] = []
    controller = Controller(cluster, lease, backend.decide, tmp_path, lines.append)
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(stop,))
    runner.start()
    try:
        assert wait_for(lambda: len(lines) == 2, 20), lines
    finally:
        stop.set()
        runner.join(15)
    decided = [json.loads(line)["pod"] for line in lines]
    assert decided == ["train-resnet-a1", "train-resnet-a2"]  # a2 failed while the history was lost: found by the new list
    # a2's end (activeDeadlineSeconds) names no cause: the log speaks, and says nothing known
    assert state.get("batch", "jobs", "training", JOB)["metadata"]["annotations"]["failclass.io/reason"] == "no_signature"
    lists = [a for a in state.accesses if a.token == CONTROLLER and a.verb == "list"]
    assert len(lists) >= 2  # listed again after the 410
    assert (
        state.get("coordination.k8s.io", "leases", "failclass", "failclass-k8s-controller")["spec"].get("holderIdentity") is None
    )


def replica(identity: str, kubeconfig: Path, database: Path, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "failclass", "hook", "k8s-controller", "--namespace", "training"]
    command += ["--lease-namespace", "failclass", "--identity", identity, "--database-url", f"sqlite:///{database}"]
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.Popen(command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)


def decisions(logs: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for log in logs for line in log.read_text().splitlines() if line.startswith("{")]


@pytest.mark.e2e
def test_two_replicas_decide_a_watched_failure_once(api: tuple[ApiState, ApiServer, Path], tmp_path: Path) -> None:
    state, server, kubeconfig = api
    database, logs = tmp_path / "failclass.db", [tmp_path / "a.out", tmp_path / "b.out"]
    replicas = [replica(name, kubeconfig, database, log) for name, log in zip(("replica-a", "replica-b"), logs, strict=False)]
    try:
        assert wait_for(lambda: any("is leading" in log.read_text() for log in logs), 30), [log.read_text() for log in logs]
        leader = next(i for i, log in enumerate(logs) if "is leading" in log.read_text())
        fail_pod(server, "train-resnet-q9d4m", {}, {"exitCode": 137, "reason": "OOMKilled"}, 1)
        assert wait_for(lambda: len(decisions(logs)) >= 1, 30), [log.read_text() for log in logs]
        time.sleep(3)  # time for a second decision, were there one
        (decided,) = decisions(logs)
        assert decided["pod"] == "train-resnet-q9d4m" and decided["action"] == "retry_with_more_resources"
        assert decided in decisions([logs[leader]])
        job = state.get("batch", "jobs", "training", JOB)
        assert job["spec"]["backoffLimit"] == 1 and job["metadata"]["annotations"]["failclass.io/reason"] == "cpu_oom"

        replicas[leader].send_signal(signal.SIGTERM)  # a clean stop gives the Lease up: the other takes over
        assert replicas[leader].wait(15) == 0
        assert wait_for(lambda: "is leading" in logs[1 - leader].read_text(), 15)
        fail_pod(
            server,
            "train-resnet-x7k2p",
            {"reason": "DeadlineExceeded", "message": DEADLINE},
            {"exitCode": 143, "reason": "Error"},
            2,
        )
        assert wait_for(lambda: len(decisions(logs)) >= 2, 30), [log.read_text() for log in logs]
        time.sleep(2)
    finally:
        for process in replicas:
            process.terminate()
            process.wait(15)
    assert sorted(d["pod"] for d in decisions(logs)) == ["train-resnet-q9d4m", "train-resnet-x7k2p"]  # each once
    for decided in decisions(logs):
        pod = state.get("", "pods", "training", decided["pod"])
        assert pod["metadata"]["annotations"]["failclass.io/handled"] == decided["action"]
    with sqlite3.connect(database) as db:
        recorded = db.execute("SELECT job_id, attempt_no FROM attempts ORDER BY attempt_no").fetchall()
        (first_logs,) = db.execute("SELECT logs FROM attempts WHERE attempt_no = 1").fetchone()
        (decisions_recorded,) = db.execute("SELECT count(*) FROM decisions").fetchone()
    assert recorded == [(f"training/{JOB}", 1), (f"training/{JOB}", 2)] and decisions_recorded == 2  # one per failure
    assert json.loads(first_logs) == ["kubernetes://training/train-resnet-q9d4m/train"]  # where the log came from

    used = {(a.group, a.resource, a.verb) for a in state.accesses if a.token == CONTROLLER}
    granted = {(r.group, r.resource, verb) for rules in state.roles.values() for r in rules for verb in r.verbs}
    assert [a for a in state.accesses if a.code == 403] == []
    assert used <= granted  # (pods get only on a conflict; test_kubernetes_manifests.py checks the rest from the code)
    assert {
        ("", "pods", "watch"),
        ("", "pods/log", "get"),
        ("batch", "jobs", "patch"),
        ("coordination.k8s.io", "leases", "update"),
    } <= used


def test_a_pod_the_hook_refuses_does_not_stop_the_others(api: tuple[ApiState, ApiServer, Path], tmp_path: Path) -> None:
    _, server, kubeconfig = api
    fail_pod(server, "train-resnet-r1", {}, {"exitCode": 1, "reason": "Error"}, 1)
    fail_pod(server, "train-resnet-r2", {}, {"exitCode": 1, "reason": "Error"}, 2)
    cluster = cluster_for(kubeconfig)
    lease = LeaderLease(cluster, LeaseSettings("failclass"), "replica-a")
    assert lease.try_acquire_or_renew()
    backend = LocalBackend(f"sqlite:///{tmp_path / 'f.db'}", Classifier(), load_policy())

    def decide(attempt: Attempt, logs: list[Path], scheduler: SchedulerEvidence | None) -> HookAnswer:
        if attempt.attempt == 1:
            raise InputError(f"{logs[0]}: refused")
        return backend.decide(attempt, logs, scheduler)

    lines: list[str] = []
    workdir = tmp_path / "work"
    workdir.mkdir()
    handled = Controller(cluster, lease, decide, workdir, lines.append).handle(cluster.list_pods()[0])
    assert [one.finished.handle for one in handled] == ["training/train-resnet-r2"] and len(lines) == 1
    assert cluster.pod("training", "train-resnet-r1").handled == "claimed replica-a"  # left for an operator to see
    assert list(workdir.iterdir()) == []  # the logs written for the hook are gone
