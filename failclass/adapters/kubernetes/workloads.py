"""The API calls the idle watch makes on Kubernetes (idle.py says what each signal does
with them), through the official client: adapters/kubernetes/idle-watch.yaml grants
exactly these (tests/adapters/test_kubernetes_manifests.py derives them from this module
and checks it). Objects are read and answered as the API's JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

MERGE = "application/merge-patch+json"
NOTEBOOKS = ("kubeflow.org", "notebooks")  # Kubeflow's Notebook: its controller owns the notebook's StatefulSet
STOPPED = "kubeflow-resource-stopped"  # a Notebook so annotated is scaled to zero by its controller (Kubeflow's culler sets it)
Json = dict[str, Any]


def _json(response: Any) -> Json:
    return dict(json.loads(response.data))


def explain(exc: Exception) -> str:
    """A failed call in one line: ``(403 Forbidden): <the API's message>``, or the error."""
    if not isinstance(exc, ApiException):
        return f": {exc}"
    try:
        message = json.loads(exc.body or "{}").get("message") or exc.reason
    except (ValueError, AttributeError):
        message = exc.body or exc.reason
    return f" ({exc.status} {exc.reason}): {str(message)[:300]}"


class Workloads:
    """Running pods, their owners, and the changes a signal makes to them."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    def pods(self, namespace: str | None) -> Json:
        """The PodList of ``namespace`` (None: of every namespace, which needs a ClusterRole)."""
        if namespace:
            return _json(self.core.list_namespaced_pod(namespace, _preload_content=False))
        return _json(self.core.list_pod_for_all_namespaces(_preload_content=False))

    def pod(self, namespace: str, name: str) -> Json:
        return _json(self.core.read_namespaced_pod(name, namespace, _preload_content=False))

    def replica_set(self, namespace: str, name: str) -> Json:
        return _json(self.apps.read_namespaced_replica_set(name, namespace, _preload_content=False))

    def stateful_set(self, namespace: str, name: str) -> Json:
        return _json(self.apps.read_namespaced_stateful_set(name, namespace, _preload_content=False))

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str | None]) -> None:
        """Merge ``annotations`` into the pod's (None removes one)."""
        patch = {"metadata": {"annotations": annotations}}
        self.core.patch_namespaced_pod(name, namespace, patch, _content_type=MERGE, _preload_content=False)

    def delete_pod(self, namespace: str, name: str) -> None:
        """Delete with the pod's own grace period: its containers get SIGTERM, then SIGKILL."""
        self.core.delete_namespaced_pod(name, namespace, _preload_content=False)

    def scale_to_zero(self, kind: str, namespace: str, name: str) -> None:
        """Set replicas 0 through the scale subresource (autoscaling/v1 Scale) of a
        StatefulSet, Deployment or ReplicaSet: the workload stays, its pods go."""
        scale = {
            "StatefulSet": self.apps.patch_namespaced_stateful_set_scale,
            "Deployment": self.apps.patch_namespaced_deployment_scale,
            "ReplicaSet": self.apps.patch_namespaced_replica_set_scale,
        }[kind]
        scale(name, namespace, {"spec": {"replicas": 0}}, _content_type=MERGE, _preload_content=False)

    def suspend_job(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """``spec.suspend: true`` (batch/v1, GA since 1.24) with ``annotations``: the Job
        controller deletes the Job's running pods and creates none until it is resumed."""
        patch = {"metadata": {"annotations": annotations}, "spec": {"suspend": True}}
        self.batch.patch_namespaced_job(name, namespace, patch, _content_type=MERGE, _preload_content=False)

    def stop_notebook(self, api_version: str, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """Annotate a Kubeflow Notebook ``kubeflow-resource-stopped`` (with ``annotations``):
        its controller scales its StatefulSet to zero, and would scale back one scaled by another."""
        group, version = api_version.split("/")
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        patch = {"metadata": {"annotations": {STOPPED: stamp, **annotations}}}
        self.custom.patch_namespaced_custom_object(group, version, namespace, NOTEBOOKS[1], name, patch, _content_type=MERGE)

    def event(self, involved: dict[str, str], reason: str, message: str) -> None:
        """A core/v1 Event about ``involved`` (an ObjectReference), named as client-go's
        recorder names its events (``<object>.<nanoseconds in hex>``)."""
        now = datetime.now(UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        body: Any = {  # the client takes its own model or the JSON
            "metadata": {"name": f"{involved['name']}.{int(now.timestamp() * 1e9):x}", "namespace": involved["namespace"]},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": "Warning",
            "source": {"component": "failclass"},
            "reportingComponent": "failclass",
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        self.core.create_namespaced_event(involved["namespace"], body, _preload_content=False)
