"""The idle watch's signals carried out on Kubernetes (``waste watch --act kubernetes``),
as gpu-pruner treats idle notebooks: scaled to zero, not killed.

- warn, never_used, hung: an Event on each pod of the job (reason FailclassIdle,
  FailclassGpuNeverUsed, FailclassHung; the signal's reason as message) and the step in
  the pod's failclass.io/watch annotation; the workload is left as it is.
- release: an Event on what is released; its pods marked failclass.io/released
  (failclass's controller skips their end, as the Slurm epilog skips a RELEASED
  comment); then the owner scaled to 0 through its scale subresource (a StatefulSet; a
  Deployment, through its ReplicaSet; a ReplicaSet), a Kubeflow Notebook (the owner of
  its StatefulSet, which would scale it back) annotated kubeflow-resource-stopped as
  Kubeflow's own culler does, a Job suspended (the Job controller deletes its running
  pods and creates none until it is resumed; KEP-2232), or a pod without owner deleted.
- cancel (hung): each pod marked failclass.io/hung, then deleted: a Job's pod ends
  Failed and counts against the Job's backoffLimit, and failclass's controller decides
  its attempt as a failure.

A release keeps the workload, so the least is lost: scaling it up again (or
``kubectl patch job NAME -p '{"spec":{"suspend":false}}'``; a queue such as Kueue
re-admits a suspended Job itself) brings it back. Hence the policy's two ways of release,
cancel and requeue, do the same here. A pod whose owner is of another kind (a custom
resource's controller would recreate a deleted pod) is not released, and the step says so.

Each API call is a line of the step's ``done``; a failed one carries the API's status
and message. A release stops at a failed mark (nothing ends unmarked) and takes the mark
back when the release itself failed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from failclass.adapters.kubernetes.objects import ANNOTATION, HUNG_MARK, RELEASED
from failclass.adapters.kubernetes.workloads import NOTEBOOKS, Json, Workloads, explain
from failclass.contracts import CANCEL, HUNG, NEVER_USED, RELEASE, WARN
from failclass.waste.allocation import JobAllocation
from failclass.waste.enforce import FAILED
from failclass.waste.watch import Signal

WATCHED = ANNOTATION + "watch"  # the last step taken on a pod: "warn 2: no GPU work for 45 min; ..."
REASONS = {
    WARN: "FailclassIdle",
    NEVER_USED: "FailclassGpuNeverUsed",
    HUNG: "FailclassHung",
    RELEASE: "FailclassReleased",
    CANCEL: "FailclassHungDeleted",
}
SCALABLE = ("StatefulSet", "Deployment", "ReplicaSet")
ABOVE = {"ReplicaSet": ("apps", "Deployment"), "StatefulSet": (NOTEBOOKS[0], "Notebook")}  # owners released through theirs
RELEASABLE = (*SCALABLE, "Job", "Pod", "Notebook")
EVENT_CHARS = 1024


@dataclass(frozen=True)
class Workload:
    """A pod, or the object that owns it."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    def reference(self) -> dict[str, str]:
        """The Event's involvedObject (an ObjectReference)."""
        fields = {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace, "name": self.name}
        return fields | ({"uid": self.uid} if self.uid else {})

    def __str__(self) -> str:
        return f"{self.kind.lower()} {self.namespace}/{self.name}"


def _controller(meta: Json) -> Json | None:
    return next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)


def _workload(raw: Json) -> Workload:
    meta = raw["metadata"]
    return Workload(raw.get("apiVersion", "v1"), raw.get("kind", "Pod"), meta["namespace"], meta["name"], meta.get("uid", ""))


def _step(signal: Signal) -> str:
    return f"{signal.action} {signal.step}" if signal.action == WARN else signal.action


def _failure(exc: Exception) -> str:
    """``  # failed (403 Forbidden): <the API's message>``."""
    return FAILED + explain(exc)


class IdleActions:
    """``act(signal)``, as failclass.waste.enforce takes it, over the jobs the watch read
    (a job of several pods names them in its aliases)."""

    def __init__(self, workloads: Workloads, jobs: Mapping[str, JobAllocation]) -> None:
        self.workloads, self.jobs = workloads, jobs

    def _call(self, done: list[str], what: str, change: Callable[..., None], *args: Any) -> bool:
        """Make one change, its line in ``done``; whether it was made."""
        try:
            change(*args)
        except (ApiException, HTTPError) as exc:
            done.append(what + _failure(exc))
            return False
        done.append(what)
        return True

    def _read(self, done: list[str], what: str, read: Callable[[str, str], Json], namespace: str, name: str) -> Json | None:
        """An object, or None with a line in ``done`` when it cannot be read."""
        try:
            return read(namespace, name)
        except (ApiException, HTTPError) as exc:
            done.append(what + _failure(exc))
            return None

    def _pods(self, job: str, done: list[str]) -> list[Json]:
        """The job's pods as the API has them now (a job read from pods is namespace/pod, or names them)."""
        held = self.jobs.get(job)
        keys = held.aliases if held is not None and held.aliases else (job,)
        pods = []
        for key in keys:
            namespace, _, name = key.partition("/")
            if not name:
                done.append(f"# not acted: {key} names no pod (namespace/pod)")
                continue
            pod = self._read(done, f"get pod {key}", self.workloads.pod, namespace, name)
            pods += [pod] if pod is not None else []
        return pods

    def _owner(self, pod: Json, done: list[str]) -> Workload | None:
        """What a release changes: the pod's controller (a ReplicaSet's Deployment, a
        StatefulSet's Kubeflow Notebook), or the pod."""
        namespace = pod["metadata"]["namespace"]
        owner = _controller(pod["metadata"])
        if owner is None:
            return _workload(pod)
        found = Workload(owner["apiVersion"], owner["kind"], namespace, owner["name"], owner.get("uid", ""))
        if found.kind not in ABOVE:
            return found
        read = self.workloads.replica_set if found.kind == "ReplicaSet" else self.workloads.stateful_set
        parent = self._read(done, f"get {found}", read, namespace, found.name)
        if parent is None:
            return None
        above = _controller(parent["metadata"])
        if above is None or (above["apiVersion"].split("/")[0], above["kind"]) != ABOVE[found.kind]:
            return found
        return Workload(above["apiVersion"], above["kind"], namespace, above["name"], above.get("uid", ""))

    def _event(self, on: Workload, signal: Signal, done: list[str]) -> None:
        message = f"failclass: {_step(signal)}: {signal.reason}"
        if signal.gpus and signal.action != RELEASE:
            message += f" (GPUs {', '.join(signal.gpus)})"
        reason = REASONS[signal.action]
        self._call(done, f"create event {reason} on {on}", self.workloads.event, on.reference(), reason, message[:EVENT_CHARS])

    def _annotate(self, pod: Workload, annotations: dict[str, str | None], done: list[str]) -> bool:
        what = f"annotate {pod} {', '.join(annotations)}"
        return self._call(done, what, self.workloads.annotate_pod, pod.namespace, pod.name, annotations)

    def act(self, signal: Signal) -> list[str]:
        """The API calls made for ``signal``, each with its outcome when it failed."""
        done: list[str] = []
        pods = self._pods(signal.job, done)
        if signal.action == RELEASE:
            self._release(signal, pods, done)
            return done
        for pod in map(_workload, pods):
            self._event(pod, signal, done)
            marks: dict[str, str | None] = {WATCHED: f"{_step(signal)}: {signal.reason}"}
            marked = self._annotate(pod, marks | ({HUNG_MARK: signal.reason} if signal.action == CANCEL else {}), done)
            if signal.action == CANCEL and marked:
                self._call(done, f"delete {pod}", self.workloads.delete_pod, pod.namespace, pod.name)
        return done

    def _release(self, signal: Signal, pods: list[Json], done: list[str]) -> None:
        """Each owner once: an Event on it, its pods marked, then scaled to 0, suspended or deleted."""
        owners: dict[Workload, list[Workload]] = {}
        for raw in pods:
            owner = self._owner(raw, done)
            if owner is not None:
                owners.setdefault(owner, []).append(_workload(raw))
        for owner, mine in owners.items():
            if owner.kind not in RELEASABLE:
                done.append(f"# not released: {owner} has no scale subresource or suspend that failclass knows")
                continue
            self._event(owner, signal, done)
            if not all(self._annotate(pod, {RELEASED: signal.reason}, done) for pod in mine):
                continue
            at = owner.namespace, owner.name
            if owner.kind in SCALABLE:
                ended = self._call(done, f"scale {owner} to 0", self.workloads.scale_to_zero, owner.kind, *at)
            elif owner.kind == "Notebook":
                stop = self.workloads.stop_notebook
                ended = self._call(done, f"stop {owner}", stop, owner.api_version, *at, {RELEASED: signal.reason})
            elif owner.kind == "Job":
                ended = self._call(done, f"suspend {owner}", self.workloads.suspend_job, *at, {RELEASED: signal.reason})
            else:
                ended = self._call(done, f"delete {owner}", self.workloads.delete_pod, *at)
            if not ended:
                for pod in mine:
                    self._annotate(pod, {RELEASED: None}, done)
