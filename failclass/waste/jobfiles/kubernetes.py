"""Kubernetes pods as ``kubectl get pods -o json`` prints them (a ``List``/``PodList`` of
``items``, or one ``Pod``).

A pod is named ``namespace/pod``, as DCGM's pod labels name its readings. The pods of one
Job or training job are one job ``namespace/job`` with each pod's name as an alias: the
pods of one owner (its uid: the ``controller-uid`` labels or the controller's
``ownerReferences`` entry), or, where no uid is given, the pods under one job-name label
(``batch.kubernetes.io/job-name``, ``job-name``, ``training.kubeflow.org/job-name``) that
started together (within GANG_S of the first, as a job's parallel pods or replicas are
created) and while the others ran. A Job's name is unique only while it exists: pods under
one name that ran one after the other, or that started long after the first, are jobs of
their own, each named after its pod. Each pod's GPUs count as held over its own lifetime
only. The GPUs are the containers' ``nvidia.com/gpu`` limits on ``spec.nodeName`` (the
device plugin does not say which indices). The user is a label or annotation named
``user``, ``username`` or ``owner`` (``hub.jupyter.org/username``...), the cluster the
namespace; a JupyterHub single-user server or a Kubeflow notebook is interactive. The pod
ran from ``status.startTime`` to the last container's ``finishedAt``; a pod that never
started is left out."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from failclass.errors import InputError
from failclass.waste.allocation import JobAllocation
from failclass.waste.jobfiles.common import JobsFile, allocation, finish, parse_time, where

GPU = "nvidia.com/gpu"
GROUPS = ("batch.kubernetes.io/job-name", "training.kubeflow.org/job-name", "job-name")
OWNER_UIDS = ("batch.kubernetes.io/controller-uid", "controller-uid")
USER_KEYS = ("user", "username", "owner")
GANG_S = 600.0  # pods of one job without a uid started within this of its first
FINISHED = ("Succeeded", "Failed")


def read_pods(document: dict[str, Any], path: Path) -> JobsFile:
    items = document.get("items") if document.get("kind") != "Pod" else [document]
    if not isinstance(items, list):
        raise InputError(f"{path}: a Kubernetes list without `items`")
    groups: dict[tuple[str, str], list[JobAllocation]] = {}  # (job name, owner uid or "") -> its pods
    never = 0
    for number, pod in enumerate(items, 1):
        if not isinstance(pod, dict) or (pod.get("kind") not in (None, "Pod")):
            raise InputError(f"{where(path, number)}: not a Pod (kind {pod.get('kind') if isinstance(pod, dict) else pod!r})")
        found = _pod(pod, path, number)
        if found is None:
            never += 1
            continue
        group, job = found
        groups.setdefault(group, []).append(job)
    runs = [run for (name, owner), pods in groups.items() for run in _runs(name, owner, pods)]
    names = Counter(name for name, _ in runs)  # one name, owners one after the other: each named after its first pod
    jobs = [_merge(name if names[name] == 1 else _first(name, pods), pods) for name, pods in runs]
    notes = [f"{path}: {never} pods that never started (pending) left out"] if never else []
    return finish(path, "Kubernetes pods", jobs, notes)


def _pod(pod: dict[str, Any], path: Path, number: int) -> tuple[tuple[str, str], JobAllocation] | None:
    at = where(path, number)
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    namespace, name = meta.get("namespace") or "default", meta.get("name")
    if not name:
        raise InputError(f"{at}: a pod without metadata.name")
    start = parse_time(status.get("startTime"), at)
    if start is None or not spec.get("nodeName"):
        return None
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    group = next((labels[key] for key in GROUPS if labels.get(key)), "")
    owner = next((labels[key] for key in OWNER_UIDS if labels.get(key)), "") or _controller_uid(meta)
    gpus = sum(_count(c, at) for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])])
    job = allocation(
        at,
        f"{namespace}/{name}",
        user=_user(annotations) or _user(labels),
        cluster=namespace,
        kind="interactive" if _notebook(labels) else "batch",
        counts=((spec["nodeName"], gpus),) if gpus else (),
        start=start,
        end=_end(status, at),
    )
    return ((f"{namespace}/{group}", owner) if group else (job.job, "")), job


def _controller_uid(meta: dict[str, Any]) -> str:
    owners = meta.get("ownerReferences") or []
    return next((str(o.get("uid") or "") for o in owners if isinstance(o, dict) and o.get("controller")), "")


def _runs(name: str, owner: str, pods: list[JobAllocation]) -> list[tuple[str, list[JobAllocation]]]:
    """The jobs of one group: all its pods where the owner's uid is known; else each set of
    pods that started together while the others ran, named after the group where it is the
    only such set, else a single pod after itself."""
    if owner or len(pods) == 1:
        return [(name, pods)]
    runs: list[list[JobAllocation]] = []
    for pod in sorted(pods, key=lambda p: p.start):
        if runs and pod.start < max(p.end for p in runs[-1]) and pod.start - runs[-1][0].start <= GANG_S:
            runs[-1].append(pod)
        else:
            runs.append([pod])
    if len(runs) == 1:
        return [(name, pods)]
    return [(run[0].job if len(run) == 1 else _first(name, run), run) for run in runs]


def _first(name: str, pods: list[JobAllocation]) -> str:
    """A job named ``name`` that is not the only one so named: after its first pod."""
    return pods[0].job if len(pods) == 1 else f"{name}@{min(pods, key=lambda p: p.start).job.rsplit('/', 1)[-1]}"


def _count(container: Any, at: str) -> int:
    limits = ((container or {}).get("resources") or {}).get("limits") or {}
    try:
        return int(str(limits.get(GPU, 0)))
    except ValueError as exc:
        raise InputError(f"{at}: {GPU} limit {limits.get(GPU)!r} is not a whole number") from exc


def _user(values: dict[str, Any]) -> str:
    return next((str(v) for k, v in values.items() if k.rsplit("/", 1)[-1].lower() in USER_KEYS and v), "")


def _notebook(labels: dict[str, Any]) -> bool:
    component = labels.get("component") or labels.get("app.kubernetes.io/component")
    return component == "singleuser-server" or "notebook-name" in labels


def _end(status: dict[str, Any], at: str) -> float | None:
    """When the last container finished, for a pod that is over."""
    if status.get("phase") not in FINISHED:
        return None
    ends = [
        parse_time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"), at)
        for s in status.get("containerStatuses") or []
    ]
    return max((e for e in ends if e is not None), default=None)


def _merge(name: str, pods: list[JobAllocation]) -> JobAllocation:
    """One job of the pods of a Job: all their GPUs, from the first start to the last end,
    each pod's GPUs placed over its own lifetime."""
    if len(pods) == 1 and pods[0].job == name:
        return pods[0]
    counts: dict[str, int] = {}
    for pod in pods:
        for node, count in pod.counts:
            counts[node] = counts.get(node, 0) + count
    first = pods[0]
    return JobAllocation(
        name,
        first.user,
        first.cluster,
        first.kind,
        (),
        min(p.start for p in pods),
        math.inf if any(math.isinf(p.end) for p in pods) else max(p.end for p in pods),
        None,
        tuple(counts.items()),
        tuple(p.job for p in pods),
        tuple(pods),
    )
