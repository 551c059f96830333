"""The idle watch on Kubernetes (`waste watch --act kubernetes`) against tests/kube_apiserver.py,
through the official client, with the shipped RBAC rules enforced (adapters/kubernetes/
idle-watch.yaml for the watch, rbac.yaml for the controller): an idle Kubeflow notebook
(a StatefulSet's pod) warned with an Event and an annotation, then scaled to zero, each
step once across runs (a notebook owned by Kubeflow's Notebook: the Notebook stopped as
Kubeflow stops it); a Job's pod released by suspending its Job, which the controller
then does not decide; a hung pod deleted with its mark and decided as a failure; a
Forbidden kept in the step with the API's message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import ROOT
from kube_apiserver import ADMIN, CONTROLLER, ApiServer, ApiState, roles_from_manifests, write_kubeconfig
from kubernetes import config

from failclass.adapters.kubernetes.cluster import Cluster
from failclass.adapters.kubernetes.controller import Controller
from failclass.adapters.kubernetes.idle import IdleActions
from failclass.adapters.kubernetes.lease import LeaderLease, LeaseSettings
from failclass.adapters.kubernetes.workloads import Workloads
from failclass.classifier import Classifier
from failclass.contracts import CANCEL, RELEASE
from failclass.hook.backends import LocalBackend
from failclass.policy.config import load_policy
from failclass.waste.jobfiles.kubernetes import read_pods
from failclass.waste.watch import Signal

MANIFESTS = ROOT / "adapters" / "kubernetes"
IDLE_WATCH = "idle-watch-token"
IDLE_WATCH_USER = "system:serviceaccount:failclass:failclass-idle-watch"
NO_SCALE = "idle-watch-without-scale-token"
NODE = "gpu-node-1"
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)  # the notebook's start: 10 busy minutes, idle after
MERGE = {"Content-Type": "application/merge-patch+json"}


def manifest_roles(name: str, account: str) -> Any:
    return roles_from_manifests(list(yaml.safe_load_all((MANIFESTS / name).read_text())), account)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[ApiState, httpx.Client, Path]]:
    """The server with both shipped Roles; kubeconfigs for the watch, for the controller, and
    for the watch's account under a Role without the scale rule (an operator's narrower copy)."""
    idle = manifest_roles("idle-watch.yaml", "failclass-idle-watch")
    no_scale = {ns: [r for r in rules if r.resource != "statefulsets/scale"] for ns, rules in idle.items()}
    accounts = {IDLE_WATCH: (IDLE_WATCH_USER, idle), NO_SCALE: (IDLE_WATCH_USER, no_scale)}
    state = ApiState(manifest_roles("rbac.yaml", "failclass-controller"), accounts)
    server = ApiServer(state)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    write_kubeconfig(tmp_path / "watch.kubeconfig", server.url, IDLE_WATCH)
    write_kubeconfig(tmp_path / "no-scale.kubeconfig", server.url, NO_SCALE)
    write_kubeconfig(tmp_path / "controller.kubeconfig", server.url, CONTROLLER)
    admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10)
    yield state, admin, tmp_path
    server.stop()


def create(admin: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    created = admin.post(path, json=body)
    created.raise_for_status()
    return dict(created.json())


def running_pod(admin: httpx.Client, name: str, labels: dict[str, str], owner: dict[str, Any] | None) -> None:
    """A pod the kubelet runs on NODE with one GPU, started at START."""
    meta: dict[str, Any] = {"name": name, "labels": {"user": "ana", **labels}}
    meta |= {"ownerReferences": [{**owner, "controller": True}]} if owner else {}
    spec = {"nodeName": NODE, "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    status = {"phase": "Running", "startTime": START.strftime("%Y-%m-%dT%H:%M:%SZ")}
    create(admin, "/api/v1/namespaces/training/pods", {"metadata": meta, "spec": spec, "status": status})


def owner_of(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}


def notebook(admin: httpx.Client) -> None:
    """A Kubeflow notebook: StatefulSet nb-ana and its pod nb-ana-0 (labelled notebook-name)."""
    labels = {"statefulset": "nb-ana", "notebook-name": "nb-ana"}
    body = {"metadata": {"name": "nb-ana"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"statefulset": "nb-ana"}}}}
    running_pod(admin, "nb-ana-0", labels, owner_of(create(admin, "/apis/apps/v1/namespaces/training/statefulsets", body)))


def job_pod(admin: httpx.Client, job: str, pod: str) -> None:
    created = create(admin, "/apis/batch/v1/namespaces/training/jobs", {"metadata": {"name": job}, "spec": {"backoffLimit": 6}})
    labels = {"batch.kubernetes.io/job-name": job, "job-name": job, "controller-uid": created["metadata"]["uid"]}
    running_pod(admin, pod, labels, owner_of(created))


def write_readings(path: Path, minutes: int) -> None:
    """nvidia-smi readings of GPU 0 every minute from START: busy for 10 minutes, idle after."""
    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"]
    for minute in range(minutes + 1):
        busy = minute < 10
        moment = START + timedelta(minutes=minute)
        lines.append(f"{moment:%Y/%m/%d %H:%M:%S}.000, 0, {60 if busy else 0} %, {8000 if busy else 0} MiB, 40960 MiB")
    path.write_text("\n".join(lines) + "\n")


def watch(
    folder: Path, minute: int, kubeconfig: str = "watch.kubeconfig", command: str = "waste", namespace: str = "training"
) -> subprocess.CompletedProcess[str]:
    """`failclass waste watch` (or `hook idle-watch`) over the pods of ``namespace``, judging at START + minute."""
    args = [
        sys.executable,
        "-m",
        "failclass",
        command,
        "watch" if command == "waste" else "idle-watch",
        str(folder / f"{NODE}.csv"),
    ]
    args += ["--jobs-from-kubernetes", "--namespace", namespace, "--act", "kubernetes"]
    args += ["--database-url", f"sqlite:///{folder / 'steps.db'}", "--now", (START + timedelta(minutes=minute)).isoformat()]
    env = {**os.environ, "KUBECONFIG": str(folder / kubeconfig)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False)


def events(state: ApiState) -> list[tuple[str, str, str]]:
    """(involved object, reason, message) of the Events created, oldest first."""
    found = [obj for (resource, _, _), obj in state.objects.items() if resource == "events"]
    found.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [(f"{e['involvedObject']['kind']}/{e['involvedObject']['name']}", e["reason"], e["message"]) for e in found]


def test_an_idle_notebook_is_warned_twice_then_scaled_to_zero_each_step_once(api: tuple[ApiState, httpx.Client, Path]) -> None:
    state, admin, folder = api
    notebook(admin)
    write_readings(folder / f"{NODE}.csv", 90)

    warned = watch(folder, 40)
    assert warned.returncode == 0, warned.stderr
    assert warned.stdout.startswith("warn training/nb-ana-0: no GPU work for 31 min")
    assert (
        "    create event FailclassIdle on pod training/nb-ana-0\n    annotate pod training/nb-ana-0 failclass.io/watch"
        in warned.stdout
    )
    assert events(state) == [
        (
            "Pod/nb-ana-0",
            "FailclassIdle",
            f"failclass: warn 1: no GPU work for 31 min; interactive jobs are released after 60 min idle (GPUs {NODE}:0)",
        )
    ]
    pod = state.get("", "pods", "training", "nb-ana-0")
    assert pod["metadata"]["annotations"]["failclass.io/watch"].startswith("warn 1: no GPU work for 31 min")
    assert watch(folder, 41).stdout == ""  # the same stretch, the same step: taken once
    assert len(events(state)) == 1

    again = watch(folder, 55, command="hook")  # the same command where schedulers look for it
    assert again.returncode == 0 and again.stdout.startswith("warn training/nb-ana-0: no GPU work for 46 min"), again.stderr
    assert state.get("apps", "statefulsets", "training", "nb-ana")["spec"]["replicas"] == 1  # warnings change nothing

    released = watch(folder, 70)
    assert released.returncode == 0, released.stderr
    assert released.stdout.startswith("release training/nb-ana-0: no GPU work for 61 min")
    assert "    scale statefulset training/nb-ana to 0\n" in released.stdout
    assert state.get("apps", "statefulsets", "training", "nb-ana")["spec"]["replicas"] == 0  # kept, with no pod
    pod = state.get("", "pods", "training", "nb-ana-0")
    assert pod["metadata"]["annotations"]["failclass.io/released"].startswith("no GPU work for 61 min")
    assert events(state)[-1][:2] == ("StatefulSet/nb-ana", "FailclassReleased")
    assert watch(folder, 71).stdout == ""

    used = {(a.group, a.resource, a.verb) for a in state.accesses if a.token == IDLE_WATCH}
    assert [a for a in state.accesses if a.code >= 400] == []
    assert {("", "pods", "list"), ("", "events", "create"), ("apps", "statefulsets/scale", "patch")} <= used


def test_a_forbidden_call_is_kept_in_the_step_and_the_run_exits_4_and_a_forbidden_list_1(
    api: tuple[ApiState, httpx.Client, Path],
) -> None:
    """Without the right to scale: the Event and the mark made, the scale refused with the
    API's own message in the step, the mark taken back, exit status 4; the step is not
    taken again in its stretch."""
    state, admin, folder = api
    notebook(admin)
    write_readings(folder / f"{NODE}.csv", 90)
    refused = watch(folder, 70, kubeconfig="no-scale.kubeconfig")
    assert refused.returncode == 4, refused.stderr
    assert refused.stdout.split("\n")[1:] == [
        "    create event FailclassReleased on statefulset training/nb-ana",
        "    annotate pod training/nb-ana-0 failclass.io/released",
        '    scale statefulset training/nb-ana to 0  # failed (403 Forbidden): statefulsets.apps "nb-ana" is forbidden: '
        f'User "{IDLE_WATCH_USER}" cannot patch resource "statefulsets/scale" in API group "apps" in the namespace "training"',
        "    annotate pod training/nb-ana-0 failclass.io/released",  # taken back
        "",
    ]
    assert "failclass.io/released" not in state.get("", "pods", "training", "nb-ana-0")["metadata"]["annotations"]
    assert state.get("apps", "statefulsets", "training", "nb-ana")["spec"]["replicas"] == 1
    kept = subprocess.run(
        [
            sys.executable,
            "-m",
            "failclass",
            "waste",
            "steps",
            "--database-url",
            f"sqlite:///{folder / 'steps.db'}",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    (step,) = [json.loads(line) for line in kept.stdout.splitlines()]
    assert step["action"] == "release" and any("403 Forbidden" in line for line in step["done"])
    assert watch(folder, 71, kubeconfig="no-scale.kubeconfig").returncode == 0

    elsewhere = watch(folder, 71, namespace="research")  # not granted there: the pods cannot be read (exit 1)
    assert elsewhere.returncode == 1 and elsewhere.stderr.startswith(
        "error: cannot list the pods of namespace research (403 Forbidden): pods is forbidden: "
        f'User "{IDLE_WATCH_USER}" cannot list resource "pods" in API group "" in the namespace "research"'
    ), elsewhere.stderr
    nowhere = watch(folder, 71, kubeconfig="missing.kubeconfig")  # no cluster configured: exit 2
    assert nowhere.returncode == 2 and "Kubernetes: " in nowhere.stderr and "Traceback" not in nowhere.stderr


def end_pod(admin: httpx.Client, name: str) -> None:
    """What the kubelet writes once the pod's containers were stopped (SIGTERM: 143)."""
    ended = {"name": "main", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 143, "reason": "Error"}}}
    status = json.dumps({"status": {"phase": "Failed", "containerStatuses": [ended]}})
    admin.patch(f"/api/v1/namespaces/training/pods/{name}/status", content=status, headers=MERGE).raise_for_status()


def test_a_jobs_pod_is_released_by_suspending_the_job_and_a_hung_one_is_deleted_and_decided(
    api: tuple[ApiState, httpx.Client, Path],
) -> None:
    state, admin, folder = api
    job_pod(admin, "train-resnet", "train-resnet-h1")
    job_pod(admin, "sweep", "sweep-r1")
    replica_set = create(
        admin,
        "/apis/apps/v1/namespaces/training/replicasets",
        {
            "metadata": {
                "name": "serve-7d9f",
                "ownerReferences": [
                    {
                        **owner_of(
                            create(
                                admin,
                                "/apis/apps/v1/namespaces/training/deployments",
                                {"metadata": {"name": "serve"}, "spec": {"replicas": 2}},
                            )
                        ),
                        "controller": True,
                    }
                ],
            },
            "spec": {"replicas": 2},
        },
    )
    running_pod(admin, "serve-7d9f-x2", {"app": "serve"}, owner_of(replica_set))
    kubeflow = create(admin, "/apis/kubeflow.org/v1/namespaces/training/notebooks", {"metadata": {"name": "nb-bo"}, "spec": {}})
    stateful_set = {
        "metadata": {"name": "nb-bo", "ownerReferences": [{**owner_of(kubeflow), "controller": True}]},
        "spec": {"replicas": 1},
    }
    running_pod(
        admin,
        "nb-bo-0",
        {"notebook-name": "nb-bo"},
        owner_of(create(admin, "/apis/apps/v1/namespaces/training/statefulsets", stateful_set)),
    )
    listed = admin.get("/api/v1/namespaces/training/pods").json()
    jobs = {job.job: job for job in read_pods(listed, folder / "pods.json").jobs}
    assert jobs["training/train-resnet"].aliases == ("training/train-resnet-h1",)
    acting = IdleActions(Workloads(config.new_client_from_config(config_file=str(folder / "watch.kubeconfig"))), jobs)

    def signal(job: str, action: str) -> Signal:
        return Signal(job, action, "no GPU work for 70 min", (f"{NODE}:0",), 4200.0)

    hung = acting.act(signal("training/train-resnet", CANCEL))
    assert hung[-1] == "delete pod training/train-resnet-h1"
    deleted = state.get("", "pods", "training", "train-resnet-h1")["metadata"]
    assert deleted["annotations"]["failclass.io/hung"] == "no GPU work for 70 min" and "deletionTimestamp" in deleted
    assert acting.act(signal("training/sweep", RELEASE))[-1] == "suspend job training/sweep"
    sweep = state.get("batch", "jobs", "training", "sweep")
    assert sweep["spec"]["suspend"] is True and sweep["metadata"]["annotations"]["failclass.io/released"]
    assert acting.act(signal("training/serve-7d9f-x2", RELEASE))[-1] == "scale deployment training/serve to 0"
    assert state.get("apps", "deployments", "training", "serve")["spec"]["replicas"] == 0
    # a Kubeflow notebook: its Notebook stopped as Kubeflow's culler stops it (its controller then scales the StatefulSet)
    assert acting.act(signal("training/nb-bo-0", RELEASE))[-1] == "stop notebook training/nb-bo"
    stopped = state.get("kubeflow.org", "notebooks", "training", "nb-bo")["metadata"]["annotations"]
    assert stopped["kubeflow-resource-stopped"].endswith("Z") and stopped["failclass.io/released"] == "no GPU work for 70 min"
    end_pod(admin, "train-resnet-h1")  # the kubelet, after the delete
    end_pod(admin, "sweep-r1")  # the Job controller deleted the suspended Job's pod

    cluster = Cluster(config.new_client_from_config(config_file=str(folder / "controller.kubeconfig")), "training", "job-name")
    lease = LeaderLease(cluster, LeaseSettings("failclass"), "replica-a")
    assert lease.try_acquire_or_renew()
    backend = LocalBackend(f"sqlite:///{folder / 'f.db'}", Classifier(), load_policy())
    lines: list[str] = []
    handled = Controller(cluster, lease, backend.decide, folder, lines.append).handle(cluster.list_pods()[0])
    assert [one.finished.handle for one in handled] == ["training/train-resnet-h1"]  # the hung one, as a failure
    assert handled[0].finished.attempt.job_id == "training/train-resnet" and handled[0].answer.action.startswith("retry")
    assert "failclass.io/handled" not in state.get("", "pods", "training", "sweep-r1")["metadata"].get("annotations", {})
    assert [a for a in state.accesses if a.code == 403] == []
