"""The API calls the controller makes, through the official client: every call it makes
is a method here (adapters/kubernetes/rbac.yaml grants exactly these; tests/adapters/
test_kubernetes_manifests.py derives them from this module and checks it)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines

from failclass.adapters.kubernetes.changes import JobChange
from failclass.adapters.kubernetes.objects import HANDLED, FailedPod, JobState, parse_job, parse_pod
from failclass.limits import LIMITS

REQUEST_SECONDS = 30
GONE, CONFLICT, NOT_FOUND = 410, 409, 404


class WatchExpired(Exception):
    """The resourceVersion a watch resumes from is gone (410): list again."""


@dataclass(frozen=True)
class PodEvent:
    kind: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    resource_version: str
    pod: FailedPod | None  # None for a BOOKMARK


@dataclass(frozen=True)
class LeaseRecord:
    """A coordination.k8s.io/v1 Lease, as leader election reads and writes it."""

    holder: str | None
    duration_s: int
    acquired: datetime | None
    renewed: datetime | None
    transitions: int
    resource_version: str | None = None


def connect() -> client.ApiClient:
    """In a pod: its service account; elsewhere: the kubeconfig ($KUBECONFIG or ~/.kube/config)."""
    configuration = client.Configuration()
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(client_configuration=configuration)
    return client.ApiClient(configuration)


def _json(response: Any) -> Any:
    return json.loads(response.data)


class Cluster:
    """Pods of Jobs, their logs, their Jobs, and the controller's Lease."""

    def __init__(self, api_client: client.ApiClient, namespace: str | None, selector: str) -> None:
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.leases = client.CoordinationV1Api(api_client)
        self.namespace, self.selector = namespace, selector

    def _pod_listing(self) -> Any:
        return self.core.list_namespaced_pod if self.namespace else self.core.list_pod_for_all_namespaces

    def _scope(self) -> tuple[str, ...]:
        return (self.namespace,) if self.namespace else ()

    def list_pods(self) -> tuple[list[FailedPod], str]:
        """The Job pods now, and the resourceVersion to watch from."""
        listed = _json(self._pod_listing()(*self._scope(), label_selector=self.selector, _preload_content=False))
        return [parse_pod(item) for item in listed["items"]], str(listed["metadata"]["resourceVersion"])

    def watch_pods(self, resource_version: str, seconds: int) -> Iterator[PodEvent]:
        """Changes after ``resource_version``, for at most ``seconds`` (the server ends the
        watch). Events are read as JSON, not as the client's models: a field the installed
        client does not know must not stop the controller."""
        try:
            response = self._pod_listing()(
                *self._scope(),
                label_selector=self.selector,
                resource_version=resource_version,
                timeout_seconds=seconds,
                allow_watch_bookmarks=True,
                watch=True,
                _preload_content=False,
                _request_timeout=seconds + REQUEST_SECONDS,
            )
        except ApiException as exc:  # a server may refuse the version before streaming, too
            if exc.status == GONE:
                raise WatchExpired(str(exc.reason)) from exc
            raise
        try:
            for line in iter_resp_lines(response):
                event = json.loads(line) if line.strip() else None
                if event is None:
                    continue
                raw = event["object"]
                if event["type"] == "ERROR":  # a Status: 410 Expired when the version is compacted away
                    if raw.get("code") == GONE:
                        raise WatchExpired(str(raw.get("message")))
                    raise ApiException(status=raw.get("code"), reason=f"{raw.get('reason')}: {raw.get('message')}")
                pod = None if event["type"] == "BOOKMARK" else parse_pod(raw)
                yield PodEvent(event["type"], str(raw["metadata"]["resourceVersion"]), pod)
        finally:
            response.release_conn()

    def pod(self, namespace: str, name: str) -> FailedPod:
        return parse_pod(_json(self.core.read_namespaced_pod(name, namespace, _preload_content=False)))

    def attempt_number(self, pod: FailedPod) -> int:
        """The Job's failed pods created up to this one (ties by name): the same number
        whenever asked, unlike the Job's status.failed, which runs ahead of the watch."""
        selector = f"job-name={pod.job}"
        listed = _json(self.core.list_namespaced_pod(pod.namespace, label_selector=selector, _preload_content=False))
        failed = (parse_pod(item) for item in listed["items"])
        return sum(1 for other in failed if other.phase == "Failed" and (other.created, other.name) <= (pod.created, pod.name))

    def log(self, pod: FailedPod, container: str) -> str:
        """The end of a container's log ("" when the kubelet has none to give)."""
        try:
            response: Any = self.core.read_namespaced_pod_log(
                pod.name,
                pod.namespace,
                container=container,
                tail_lines=LIMITS.container_log_lines,
                limit_bytes=LIMITS.container_log_bytes,
                _preload_content=False,
            )
        except ApiException as exc:
            if exc.status in (NOT_FOUND, 400):  # the pod or its container is gone, or never started
                return ""
            raise
        return bytes(response.data).decode("utf-8", errors="replace")

    def mark(self, pod: FailedPod, value: str) -> FailedPod | None:
        """Set the handled annotation if the pod is still at ``pod.resource_version``;
        None when it changed since (HTTP 409: someone else wrote first)."""
        patch = {"metadata": {"resourceVersion": pod.resource_version, "annotations": {HANDLED: value}}}
        try:
            raw = self.core.patch_namespaced_pod(
                pod.name, pod.namespace, patch, _content_type="application/merge-patch+json", _preload_content=False
            )
        except ApiException as exc:
            if exc.status == CONFLICT:
                return None
            raise
        return parse_pod(_json(raw))

    def job(self, namespace: str, name: str) -> JobState:
        return parse_job(_json(self.batch.read_namespaced_job(name, namespace, _preload_content=False)))

    def change_job(self, job: JobState, change: JobChange) -> None:
        self.batch.patch_namespaced_job(
            job.name, job.namespace, change.merge_patch(), _content_type="application/merge-patch+json", _preload_content=False
        )

    def read_lease(self, namespace: str, name: str) -> LeaseRecord | None:
        try:
            lease = self.leases.read_namespaced_lease(name, namespace)
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return None
            raise
        return _record(lease)

    def write_lease(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | None:
        """Create the Lease (no resourceVersion) or replace the version read; None when
        another replica wrote it first (409: AlreadyExists or Conflict)."""
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name=name, namespace=namespace, resource_version=record.resource_version),
            spec=client.V1LeaseSpec(
                holder_identity=record.holder,
                lease_duration_seconds=record.duration_s,
                acquire_time=record.acquired,
                renew_time=record.renewed,
                lease_transitions=record.transitions,
            ),
        )
        try:
            if record.resource_version is None:
                return _record(self.leases.create_namespaced_lease(namespace, body))
            return _record(self.leases.replace_namespaced_lease(name, namespace, body))
        except ApiException as exc:
            if exc.status == CONFLICT:
                return None
            raise


def _record(lease: client.V1Lease) -> LeaseRecord:
    spec = lease.spec or client.V1LeaseSpec()
    return LeaseRecord(
        holder=spec.holder_identity,
        duration_s=int(spec.lease_duration_seconds or 0),
        acquired=spec.acquire_time,
        renewed=spec.renew_time,
        transitions=int(spec.lease_transitions or 0),
        resource_version=lease.metadata.resource_version if lease.metadata else None,
    )
