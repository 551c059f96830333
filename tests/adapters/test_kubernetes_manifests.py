"""The manifests an operator applies (adapters/kubernetes): they parse, the Deployment runs
two replicas of the controller with what it reads from its environment, and the Roles
grant exactly the API calls the controller's code (and the idle watch's) makes, derived
from that code and from the official client's own request builders (HTTP method and path
of each call)."""

from __future__ import annotations

import ast
import inspect
import re
from types import ModuleType
from typing import Any

import yaml
from conftest import ROOT
from kubernetes import client

from failclass.adapters.kubernetes import cluster, workloads
from failclass.cli.hook import k8s_controller

MANIFESTS = ROOT / "adapters" / "kubernetes"
APIS = {
    "core": client.CoreV1Api,
    "batch": client.BatchV1Api,
    "leases": client.CoordinationV1Api,
    "apps": client.AppsV1Api,
    "custom": client.CustomObjectsApi,
}
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def calls_in_code(module: ModuleType) -> tuple[set[tuple[str, str]], set[str]]:
    """(API object, client method) pairs ``module`` uses, and the methods it watches with."""
    tree = ast.parse(inspect.getsource(module))
    used = {
        (node.value.attr, node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr in APIS
    }
    watched_helpers = {
        call.func.func.attr
        for call in ast.walk(tree)
        if isinstance(call, ast.Call)
        and any(k.arg == "watch" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords)
        and isinstance(call.func, ast.Call)
        and isinstance(call.func.func, ast.Attribute)
    }
    helpers = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in watched_helpers]
    watched = {n.attr for f in helpers for n in ast.walk(f) if isinstance(n, ast.Attribute) and n.attr.startswith("list_")}
    return used, watched


def rbac_of(api: str, method: str, watched: set[str]) -> set[tuple[str, str, str]]:
    """What RBAC checks for a client method: its request's verb, API group and resource."""
    builder = inspect.getsource(getattr(APIS[api], f"_{method}_serialize"))
    http = re.search(r"method='(\w+)'", builder)
    path = re.search(r"resource_path='([^']+)'", builder)
    assert http and path, method
    if api == "custom":  # its path takes the group and resource from the code: the Notebooks it patches
        return {(*workloads.NOTEBOOKS, VERBS[http.group(1)])}
    parts = path.group(1).strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if rest[:1] == ["namespaces"]:
        rest = rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    if http.group(1) != "GET":
        return {(group, resource, VERBS[http.group(1)])}
    if len(rest) == 1:
        return {(group, resource, "list")} | ({(group, resource, "watch")} if method in watched else set())
    return {(group, resource, "get")}


def granted_by(name: str) -> set[tuple[str, str, str]]:
    """(group, resource, verb) the Roles of manifest ``name`` grant."""
    roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in documents(name) if d["kind"] == "Role"}
    return {
        (group, resource, verb)
        for role in roles.values()
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_roles_grant_exactly_the_calls_the_code_makes() -> None:
    used, watched = calls_in_code(cluster)
    assert ("core", "patch_namespaced_pod") in used and watched == {"list_namespaced_pod", "list_pod_for_all_namespaces"}
    needed = {rule for api, method in used for rule in rbac_of(api, method, watched)}
    assert granted_by("rbac.yaml") == needed


def test_the_idle_watch_role_grants_exactly_the_calls_it_makes() -> None:
    """Its own service account: events, deletes and scale subresources the controller never needs."""
    used, watched = calls_in_code(workloads)
    needed = {rule for api, method in used for rule in rbac_of(api, method, watched)}
    assert {("", "events", "create"), ("apps", "statefulsets/scale", "patch"), ("kubeflow.org", "notebooks", "patch")} <= needed
    assert granted_by("idle-watch.yaml") == needed
    account, *_ = documents("idle-watch.yaml")
    (binding,) = [d for d in documents("idle-watch.yaml") if d["kind"] == "RoleBinding"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", **account["metadata"]}]


def test_the_deployment_runs_two_replicas_with_what_the_controller_reads() -> None:
    account, deployment = documents("controller.yaml")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert deployment["spec"]["replicas"] == 2 and spec["serviceAccountName"] == account["metadata"]["name"]
    assert container["command"] == ["failclass", "hook", "k8s-controller"]
    env = {e["name"]: e.get("value") or e["valueFrom"] for e in container["env"]}
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    read = {name for p in k8s_controller.params for name in ([p.envvar] if isinstance(p.envvar, str) else p.envvar or [])}
    assert set(env) <= read  # every variable set is one the command reads

    bindings = [d for d in documents("rbac.yaml") if d["kind"] == "RoleBinding"]
    subject = {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}
    assert all(b["subjects"] == [subject] for b in bindings)
    namespaces = {b["roleRef"]["name"]: b["metadata"]["namespace"] for b in bindings}
    assert namespaces == {"failclass-controller": env["FAILCLASS_WATCH_NAMESPACE"], "failclass-controller-lease": "failclass"}
    assert deployment["metadata"]["namespace"] == account["metadata"]["namespace"] == "failclass"  # the Lease is here
