"""What the controller reads of the API's objects, as typed values: a failed Job pod (how
each container ended, why the pod ended) and its Job. The raw JSON is read here and
nowhere else."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from failclass.attempts import Attempt, SchedulerEvidence
from failclass.matching.taxonomy import builtin_taxonomy

ANNOTATION = "failclass.io/"
HANDLED = ANNOTATION + "handled"  # "claimed <identity>" while one replica decides, then the action
CLAIMED = "claimed "
RELEASED = ANNOTATION + "released"  # the idle watch released it (idle.py): its end is no failure
HUNG_MARK = ANNOTATION + "hung"  # the idle watch deleted it as hung: its end is decided as a failure
JOB_LABELS = ("batch.kubernetes.io/job-name", "job-name")
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")

ApiObject = Mapping[str, Any]  # an object as the API sends it (JSON)


@dataclass(frozen=True)
class ContainerEnd:
    """How one container ended (its ``state.terminated``, or ``lastState.terminated``)."""

    container: str
    exit_code: int
    reason: str | None = None  # OOMKilled, Error, ContainerCannotRun, DeadlineExceeded, ...
    message: str | None = None
    signal: int | None = None
    started: datetime | None = None
    finished: datetime | None = None


@dataclass(frozen=True)
class FailedPod:
    """A pod of a Job, as far as the controller cares."""

    namespace: str
    name: str
    resource_version: str
    phase: str
    job: str | None
    node: str | None
    user: str | None
    gpus: int
    handled: str | None  # the failclass.io/handled annotation
    released: str | None = None  # the failclass.io/released annotation
    created: str = ""  # metadata.creationTimestamp (RFC 3339, UTC: sorts as text)
    reason: str | None = None  # the pod's own end: Evicted, DeadlineExceeded, ...
    message: str | None = None
    ends: tuple[ContainerEnd, ...] = field(default=())

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def failures(self) -> tuple[ContainerEnd, ...]:
        return tuple(end for end in self.ends if end.exit_code != 0)

    def needs_decision(self, identity: str) -> bool:
        """Failed, of a Job, not released by the idle watch (as the Slurm epilog skips a
        job whose comment says so), and neither decided nor being decided by this replica.
        A pod the watch deleted as hung is decided like any failure."""
        if self.phase != "Failed" or self.job is None or self.released is not None:
            return False
        return self.handled is None or (self.handled.startswith(CLAIMED) and self.handled != CLAIMED + identity)


@dataclass(frozen=True)
class JobState:
    namespace: str
    name: str
    failed: int  # status.failed: pods of this Job that failed so far


def _time(value: object) -> datetime | None:
    return datetime.fromisoformat(str(value)) if value else None


def _container_end(status: ApiObject) -> ContainerEnd | None:
    states = status.get("state") or {}, status.get("lastState") or {}
    ended = next((state["terminated"] for state in states if state.get("terminated")), None)
    if ended is None:
        return None
    code = int(ended.get("exitCode", 0))
    signal = ended.get("signal") or (code - 128 if code > 128 else None)
    return ContainerEnd(
        container=str(status["name"]),
        exit_code=code,
        reason=ended.get("reason"),
        message=ended.get("message"),
        signal=int(signal) if signal else None,
        started=_time(ended.get("startedAt")),
        finished=_time(ended.get("finishedAt")),
    )


def _job_of(meta: ApiObject) -> str | None:
    for owner in meta.get("ownerReferences") or []:
        if owner.get("kind") == "Job":
            return str(owner["name"])
    labels = meta.get("labels") or {}
    return next((str(labels[key]) for key in JOB_LABELS if key in labels), None)


def _gpus(spec: ApiObject) -> int:
    limits = [(container.get("resources") or {}).get("limits") or {} for container in spec.get("containers") or []]
    return sum(int(limit.get(name, 0)) for limit in limits for name in GPU_RESOURCES)


def parse_pod(raw: ApiObject) -> FailedPod:
    """A pod from its JSON (a list item, a watch event's object, a GET)."""
    meta, spec, status = raw["metadata"], raw.get("spec") or {}, raw.get("status") or {}
    ends = (_container_end(s) for s in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])])
    return FailedPod(
        namespace=str(meta.get("namespace", "default")),
        name=str(meta["name"]),
        resource_version=str(meta.get("resourceVersion", "")),
        phase=str(status.get("phase", "Unknown")),
        job=_job_of(meta),
        node=spec.get("nodeName"),
        user=(meta.get("labels") or {}).get("user"),
        gpus=_gpus(spec),
        handled=(meta.get("annotations") or {}).get(HANDLED),
        released=(meta.get("annotations") or {}).get(RELEASED),
        created=str(meta.get("creationTimestamp") or ""),
        reason=status.get("reason"),
        message=status.get("message"),
        ends=tuple(end for end in ends if end is not None),
    )


def parse_job(raw: ApiObject) -> JobState:
    meta = raw["metadata"]
    return JobState(str(meta.get("namespace", "default")), str(meta["name"]), int((raw.get("status") or {}).get("failed", 0)))


def evidence_lines(pod: FailedPod) -> list[str]:
    """What the API says about the end, in `kubectl describe pod`'s layout: a log does not
    show that the kernel killed the container for its memory limit (OOMKilled), that the
    kubelet evicted the pod, or that its activeDeadlineSeconds ran out; the rules read
    these lines as they read a pasted `kubectl describe`."""
    lines = [f"kubernetes: pod {pod.key} of job {pod.job}: phase {pod.phase}"]
    if pod.reason:
        lines.append(f"Reason:       {pod.reason}")
    if pod.message:
        lines.append(f"Message:      {pod.message}")
    for end in pod.failures:
        lines += [f"  {end.container}:", "    State:          Terminated"]
        lines += [f"      Reason:       {end.reason}"] if end.reason else []
        lines += [f"      Message:      {end.message}"] if end.message else []
        lines += [f"      Exit Code:    {end.exit_code}"]
        lines += [f"      Signal:       {end.signal}"] if end.signal else []
    return lines


def scheduler_evidence(pod: FailedPod) -> SchedulerEvidence | None:
    """The API's word on the cause, when it names one (docs/TAXONOMY.md): a container the
    kernel killed for its memory limit (OOMKilled) is cpu_oom; a pod the kubelet evicted
    (node pressure: the node, not the job, ran short) is job_preempted; an exceeded
    activeDeadlineSeconds, like a time limit, names nothing and the log speaks."""
    words = builtin_taxonomy().scheduler_words.get("kubernetes", {})  # termination reason -> reason (taxonomy.yaml)
    for said in (*(end.reason for end in pod.ends), pod.reason):
        if said in words:
            return SchedulerEvidence(words[said], f"kubernetes.{said.lower()}", tuple(evidence_lines(pod)))
    return None


def attempt_from_pod(pod: FailedPod, number: int, logs: tuple[str, ...]) -> Attempt:
    """The attempt this pod was; ``number``: the Job's failed pods created up to it."""
    ended = pod.failures[0] if pod.failures else None
    return Attempt(
        job_id=f"{pod.namespace}/{pod.job or pod.name}",
        attempt=max(number, 1),
        user=pod.user or pod.namespace,
        vc=pod.namespace,
        start_time=ended.started if ended else None,
        end_time=ended.finished if ended else None,
        gpus=pod.gpus,
        nodes=(pod.node,) if pod.node else (),
        exit_code=ended.exit_code if ended else None,
        signal=ended.signal if ended else None,
        logs=logs,
    )
