"""Kubernetes: a small controller loop that watches failed pods of Jobs, asks the hook
about each with the container's log, and acts on the Job.

What each decision becomes (Kubernetes cannot change a running Job's pod template, only
a suspended Job's scheduling directives, since 1.27):

| decision | action on the Job |
|---|---|
| retry | nothing: the Job controller retries within backoffLimit |
| retry_elsewhere | suspend, add a node anti-affinity (NotIn the nodes to avoid), resume |
| retry_with_more_resources | backoffLimit = failures so far (resources of a Job cannot change); resubmit with more memory |
| no_retry, reject | backoffLimit = failures so far: the Job fails now (BackoffLimitExceeded) |
| hold | suspend (an operator resumes it) |

Every decision is also written into the Job's annotations (failclass.io/decision,
failclass.io/reason, failclass.io/explanation). The API is reached through kubectl
(``KubectlApi``); tests give recorded API objects to the same loop.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from failclass.adapters.protocol import Answer, Decide, Finished, handle_finished
from failclass.attempts import Attempt

ANNOTATION = "failclass.io/"
HANDLED = ANNOTATION + "handled"
JOB_LABELS = ("batch.kubernetes.io/job-name", "job-name")
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")


class Api(Protocol):
    def failed_pods(self) -> list[dict[str, Any]]: ...
    def log(self, pod: dict[str, Any], container: str) -> str: ...
    def job(self, namespace: str, name: str) -> dict[str, Any]: ...
    def patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any]) -> None: ...


def job_name(pod: dict[str, Any]) -> str | None:
    for owner in pod["metadata"].get("ownerReferences", []):
        if owner.get("kind") == "Job":
            return str(owner["name"])
    labels = pod["metadata"].get("labels", {})
    return next((labels[key] for key in JOB_LABELS if key in labels), None)


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def terminated(pod: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(container, terminated state) of the containers that ended with a failure."""
    found = []
    for status in pod.get("status", {}).get("containerStatuses", []):
        state = status.get("state", {}).get("terminated") or status.get("lastState", {}).get("terminated")
        if state and state.get("exitCode", 0) != 0:
            found.append((status["name"], state))
    return found


def attempt_from_pod(pod: dict[str, Any], job: dict[str, Any], logs: tuple[str, ...]) -> Attempt:
    meta, spec = pod["metadata"], pod.get("spec", {})
    ended = terminated(pod)
    state = ended[0][1] if ended else {}
    code = int(state.get("exitCode", 1))
    gpus = 0
    for container in spec.get("containers", []):
        limits = container.get("resources", {}).get("limits", {})
        gpus += sum(int(limits.get(name, 0)) for name in GPU_RESOURCES)
    return Attempt(
        job_id=f"{meta.get('namespace', 'default')}/{job_name(pod) or meta['name']}",
        attempt=int(job.get("status", {}).get("failed", 0)) or 1,
        user=meta.get("labels", {}).get("user") or meta.get("namespace", "default"),
        vc=meta.get("namespace", "default"),
        start_time=_time(state.get("startedAt")),
        end_time=_time(state.get("finishedAt")),
        gpus=gpus,
        nodes=(spec["nodeName"],) if spec.get("nodeName") else (),
        exit_code=code,
        signal=code - 128 if code > 128 else None,
        logs=logs,
    )


def status_lines(pod: dict[str, Any]) -> str:
    """What the API says about the end of each container: a log does not show an OOM kill."""
    lines = []
    for container, state in terminated(pod):
        lines.append(
            f"kubernetes: container {container} terminated: reason {state.get('reason')}, exit code {state.get('exitCode')}"
        )
    return "\n".join(lines)


def job_patches(decision: dict[str, Any], job: dict[str, Any]) -> list[dict[str, Any]]:
    """The patches (in order) that carry out ``decision`` on ``job``."""
    explanation = decision.get("explanation", {})
    note = {
        "metadata": {
            "annotations": {
                ANNOTATION + "decision": decision["action"],
                ANNOTATION + "reason": str(explanation.get("reason")),
                ANNOTATION + "explanation": str(explanation.get("message", ""))[:1000],
            }
        }
    }
    if not decision.get("enforced", True):
        return [note]
    failed = int(job.get("status", {}).get("failed", 0))
    action = decision["action"]
    if action in ("no_retry", "reject", "retry_with_more_resources"):
        return [note, {"spec": {"backoffLimit": failed}}]
    if action == "hold":
        return [note, {"spec": {"suspend": True}}]
    if action == "retry_elsewhere" and decision.get("exclude_nodes"):
        avoid = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": list(decision["exclude_nodes"])}
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [avoid]}]}
            }
        }
        return [
            note,
            {"spec": {"suspend": True}},
            {"spec": {"template": {"spec": {"affinity": affinity}}}},
            {"spec": {"suspend": False}},
        ]
    return [note]


class KubernetesJobs:
    """The adapter over the API: failed pods of Jobs in, patches of their Jobs out."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.jobs: dict[str, tuple[str, dict[str, Any]]] = {}  # handle -> the pod's Job (name, object), read this pass

    def finished(self, workdir: Path) -> Iterator[Finished]:
        for pod in self.api.failed_pods():
            meta = pod["metadata"]
            name = job_name(pod)
            if name is None or meta.get("annotations", {}).get(HANDLED):
                continue
            namespace = meta.get("namespace", "default")
            job = self.api.job(namespace, name)
            logs = []
            for container, _ in terminated(pod):
                path = workdir / f"{meta['name']}.{container}.log"
                path.write_text(self.api.log(pod, container) + "\n" + status_lines(pod) + "\n")
                logs.append(path)
            if logs:
                handle = f"{namespace}/{meta['name']}"
                self.jobs[handle] = name, job
                yield Finished(attempt_from_pod(pod, job, tuple(str(p) for p in logs)), logs, handle)

    def act(self, finished: Finished, answer: Answer) -> list[str]:
        namespace, pod = finished.handle.split("/", 1)
        name, job = self.jobs.pop(finished.handle)
        patches = job_patches(answer, job)
        for patch in patches:
            self.api.patch("job", namespace, name, patch)
        self.api.patch("pod", namespace, pod, {"metadata": {"annotations": {HANDLED: answer["action"]}}})
        return [json.dumps(patch) for patch in patches]


def run_once(api: Api, decide: Decide, workdir: Path) -> list[dict[str, Any]]:
    """One pass over the failed pods not handled yet; returns what was done."""
    return [
        {
            "pod": handled.finished.handle.split("/", 1)[1],
            "job": handled.finished.attempt.job_id.split("/", 1)[1],
            "action": handled.answer["action"],
            "patches": [json.loads(line) for line in handled.done],
        }
        for handled in handle_finished(KubernetesJobs(api), decide, workdir)
    ]


class KubectlApi:
    """The API through kubectl (its kubeconfig, context and credentials)."""

    def __init__(self, namespace: str | None = None, kubectl: str = "kubectl") -> None:
        self.scope = ["-n", namespace] if namespace else ["--all-namespaces"]
        self.kubectl = kubectl

    def _run(self, *args: str) -> str:
        return subprocess.run([self.kubectl, *args], capture_output=True, text=True, check=True, timeout=60).stdout

    def failed_pods(self) -> list[dict[str, Any]]:
        listed = json.loads(self._run("get", "pods", *self.scope, "--field-selector=status.phase=Failed", "-o", "json"))
        return list(listed.get("items", []))

    def log(self, pod: dict[str, Any], container: str) -> str:
        meta = pod["metadata"]
        return self._run("logs", "-n", meta.get("namespace", "default"), meta["name"], "-c", container)

    def job(self, namespace: str, name: str) -> dict[str, Any]:
        return dict(json.loads(self._run("get", "job", "-n", namespace, name, "-o", "json")))

    def patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self._run("patch", kind, "-n", namespace, name, "--type=merge", "-p", json.dumps(patch))


def watch(api: Api, decide: Decide, every: float, passes: Iterable[int] | None = None) -> None:
    """The controller loop: a pass every ``every`` seconds, for ever (or ``passes``)."""
    with tempfile.TemporaryDirectory(prefix="failclass-k8s-") as scratch:
        for _ in itertools.count() if passes is None else passes:
            for action in run_once(api, decide, Path(scratch)):
                print(json.dumps(action), flush=True)
            time.sleep(every)
