"""An in-memory Kubernetes API server, for the controller's tests: no kube-apiserver can be
installed here (tests/data/kubernetes/api_formats.md says why, and where each format and
message below is from). It serves the endpoints the controller uses, over real HTTP on
127.0.0.1, with the semantics the controller relies on:

- one resourceVersion counter over all writes (etcd's revision), in every object and list;
- watch: a chunked stream of JSON events after the version asked, ending after
  ``timeoutSeconds``; a version older than the compacted history gets the ERROR event
  with Status 410 Expired;
- writes carrying metadata.resourceVersion (merge patch, PUT) are conditional: 409;
- authorization: a request with the controller's token (or another service account's) is
  checked against the Role rules of the shipped RBAC manifests, as the RBAC authorizer
  does (verb from the method and the watch parameter, resource/subresource from the
  path); every request is recorded;
- the scale subresource of StatefulSets, Deployments and ReplicaSets: an autoscaling/v1
  Scale read from and written into the object's spec.replicas;
- DELETE of a pod is graceful, as for a pod on a node: it gets deletionTimestamp and
  deletionGracePeriodSeconds and stays until the kubelet is done (the tests play the
  kubelet); other objects go at once.

It is a stand-in, not Kubernetes: no admission, validation, defaulting, field selectors,
kubelet or controllers; the tests set pod and Job status themselves."""

from __future__ import annotations

import copy
import json
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Json = dict[str, Any]
ADMIN, CONTROLLER = "admin-token", "controller-token"
CONTROLLER_USER = "system:serviceaccount:failclass:failclass-controller"
MAX_WATCH_S = 30.0
KINDS = {
    "pods": ("v1", "Pod"),
    "events": ("v1", "Event"),
    "jobs": ("batch/v1", "Job"),
    "leases": ("coordination.k8s.io/v1", "Lease"),
    "statefulsets": ("apps/v1", "StatefulSet"),
    "deployments": ("apps/v1", "Deployment"),
    "replicasets": ("apps/v1", "ReplicaSet"),
    "notebooks": ("kubeflow.org/v1", "Notebook"),  # a custom resource (Kubeflow's CRD)
}
DEFAULT_GRACE_S = 30  # a pod's terminationGracePeriodSeconds when its spec gives none
_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)
OPTIMISTIC_LOCK = "the object has been modified; please apply your changes to the latest version and try again"


@dataclass(frozen=True)
class Rule:
    group: str
    resource: str  # "pods", "pods/log"
    verbs: frozenset[str]


@dataclass(frozen=True)
class Access:
    """One request, as the authorizer sees it, and its answer."""

    token: str
    verb: str
    group: str
    resource: str
    namespace: str
    code: int


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, group: str = "", kind: str = "", name: str = "") -> None:
        super().__init__(message)
        self.status: Json = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
        self.status |= {"reason": reason, "code": code}
        if kind:
            self.status["details"] = {"name": name, "group": group, "kind": kind}
        self.code = code


def _qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def _selected(obj: Json, selector: str) -> bool:
    """Label selectors of the forms `key`, `key=value`, comma-separated."""
    labels = obj["metadata"].get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if key not in labels or (value and labels[key] != value):
            return False
    return True


class ApiState:
    """The objects, their history for watches, and the recorded requests."""

    def __init__(
        self, roles: dict[str, list[Rule]], accounts: dict[str, tuple[str, dict[str, list[Rule]]]] | None = None
    ) -> None:
        self.roles = roles  # namespace -> rules granted to the controller there
        self.accounts = {CONTROLLER: (CONTROLLER_USER, roles), **(accounts or {})}  # token -> (user, its rules)
        self.changed = threading.Condition()
        self.version = 1000
        self.objects: dict[tuple[str, str, str], Json] = {}
        self.history: list[tuple[int, str, str, Json]] = []  # (version, type, resource, object)
        self.floor = 0  # history at or below this version is compacted away
        self.logs: dict[tuple[str, str, str], str] = {}
        self.accesses: list[Access] = []

    def authorize(self, token: str, verb: str, group: str, resource: str, namespace: str, name: str) -> None:
        if token == ADMIN:
            return
        user, roles = self.accounts.get(token, ("system:anonymous", {}))
        if any(r.group == group and r.resource == resource and verb in r.verbs for r in roles.get(namespace, [])):
            return
        what = f"{_qualified(group, resource.split('/')[0])} {json.dumps(name)}" if name else _qualified(group, resource)
        message = f'User "{user}" cannot {verb} resource "{resource}" in API group "{group}" in the namespace "{namespace}"'
        raise ApiError(403, "Forbidden", f"{what} is forbidden: {message}", group, resource.split("/")[0], name)

    def _commit(self, kind: str, resource: str, key: tuple[str, str, str], obj: Json | None) -> Json:
        """Store a change under the next version (the caller holds the lock)."""
        self.version += 1
        old = self.objects.get(key)
        stored = copy.deepcopy(obj if obj is not None else old) or {}
        stored["metadata"]["resourceVersion"] = str(self.version)
        if obj is None:
            del self.objects[key]
        else:
            self.objects[key] = stored
        self.history.append((self.version, kind, resource, copy.deepcopy(stored)))
        self.changed.notify_all()
        return copy.deepcopy(stored)

    def _missing(self, group: str, resource: str, name: str) -> ApiError:
        return ApiError(404, "NotFound", f"{_qualified(group, resource)} {json.dumps(name)} not found", group, resource, name)

    def get(self, group: str, resource: str, namespace: str, name: str) -> Json:
        with self.changed:
            if (resource, namespace, name) not in self.objects:
                raise self._missing(group, resource, name)
            return copy.deepcopy(self.objects[(resource, namespace, name)])

    def create(self, group: str, resource: str, namespace: str, body: Json) -> Json:
        name = body["metadata"]["name"]
        with self.changed:
            if (resource, namespace, name) in self.objects:
                message = f"{_qualified(group, resource)} {json.dumps(name)} already exists"
                raise ApiError(409, "AlreadyExists", message, group, resource, name)
            api_version, kind = KINDS[resource]
            obj = {**body, "apiVersion": api_version, "kind": kind}
            obj["metadata"] = {**body["metadata"], "namespace": namespace, "uid": str(uuid.uuid4())}
            obj["metadata"]["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            obj.setdefault("status", {"phase": "Pending"} if resource == "pods" else {})
            return self._commit("ADDED", resource, (resource, namespace, name), obj)

    def update(self, group: str, resource: str, namespace: str, name: str, change: Json, patch: bool, sub: str | None) -> Json:
        """PUT (``patch`` False) or merge patch; conditional when the body names a version."""
        key = (resource, namespace, name)
        with self.changed:
            if key not in self.objects:
                raise self._missing(group, resource, name)
            current = self.objects[key]
            wanted = (change.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                message = f"Operation cannot be fulfilled on {_qualified(group, resource)} {json.dumps(name)}: {OPTIMISTIC_LOCK}"
                raise ApiError(409, "Conflict", message, group, resource, name)
            if sub == "status":  # the status subresource changes the status only
                change = {"status": change.get("status")}
                updated = merge_patch(current, change) if patch else {**current, **change}
            else:
                updated = merge_patch(current, change) if patch else {**change, "status": current.get("status", {})}
            updated["metadata"] = {**current["metadata"], **{k: v for k, v in updated["metadata"].items() if k != "uid"}}
            return self._commit("MODIFIED", resource, key, updated)

    def delete(self, group: str, resource: str, namespace: str, name: str, body: Json) -> Json:
        """A pod: marked for deletion (graceful); any other object: gone."""
        key = (resource, namespace, name)
        with self.changed:
            if key not in self.objects:
                raise self._missing(group, resource, name)
            if resource != "pods":
                return self._commit("DELETED", resource, key, None)
            pod = copy.deepcopy(self.objects[key])
            grace = body.get("gracePeriodSeconds", (pod.get("spec") or {}).get("terminationGracePeriodSeconds", DEFAULT_GRACE_S))
            pod["metadata"].setdefault("deletionTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + grace)))
            pod["metadata"].setdefault("deletionGracePeriodSeconds", grace)
            return self._commit("MODIFIED", resource, key, pod)

    def scale(self, group: str, resource: str, namespace: str, name: str, patch: Json | None) -> Json:
        """The object's autoscaling/v1 Scale, after ``patch`` (a merge patch of the Scale) if given."""
        key = (resource, namespace, name)
        with self.changed:
            if key not in self.objects:
                raise self._missing(group, resource, name)
            obj = self.objects[key]
            if patch is not None:
                replicas = (patch.get("spec") or {}).get("replicas")
                obj = self._commit("MODIFIED", resource, key, merge_patch(obj, {"spec": {"replicas": replicas}}))
            meta = {k: obj["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")}
            labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            return {
                "kind": "Scale",
                "apiVersion": "autoscaling/v1",
                "metadata": meta,
                "spec": {"replicas": obj["spec"].get("replicas", 1)},
                "status": {
                    "replicas": (obj.get("status") or {}).get("replicas", 0),
                    "selector": ",".join(f"{k}={v}" for k, v in labels.items()),
                },
            }

    def listing(self, resource: str, namespace: str | None, selector: str) -> Json:
        with self.changed:
            items = [
                {k: v for k, v in copy.deepcopy(obj).items() if k not in ("apiVersion", "kind")}
                for (kind, ns, _), obj in sorted(self.objects.items())
                if kind == resource and (namespace is None or ns == namespace) and _selected(obj, selector)
            ]
            api_version, kind = KINDS[resource]
            return {
                "kind": kind + "List",
                "apiVersion": api_version,
                "metadata": {"resourceVersion": str(self.version)},
                "items": items,
            }

    def events_after(
        self, version: int, resource: str, namespace: str | None, selector: str, until: float
    ) -> tuple[list[Json], int]:
        """The changes after ``version`` (waiting for one until ``until``), and the version seen."""
        with self.changed:
            if version < self.floor:
                status = ApiError(410, "Expired", f"too old resource version: {version} ({self.floor})").status
                return [{"type": "ERROR", "object": status}], -1
            self.changed.wait_for(lambda: self.version > version, timeout=max(until - time.monotonic(), 0))
            events = [
                {"type": kind, "object": copy.deepcopy(obj)}
                for seen, kind, kinds, obj in self.history
                if seen > version
                and kinds == resource
                and (namespace is None or obj["metadata"]["namespace"] == namespace)
                and _selected(obj, selector)
            ]
            return events, self.version

    def compact(self) -> None:
        """Forget the history so far, as etcd compaction does: older watches get 410."""
        with self.changed:
            self.floor = self.version
            self.history.clear()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ApiServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _read_body(self) -> None:
        """Read the request's body, before any answer, so that the connection stays in step."""
        length = int(self.headers.get("Content-Length") or 0)
        self.body: Json = json.loads(self.rfile.read(length)) if length else {}

    def _body(self) -> Json:
        return self.body

    def _serve(self, method: str) -> None:
        self._read_body()
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        match = _PATH.match(url.path)
        if match is None:
            self._send(404, b"404 page not found", "text/plain")
            return
        group, namespace, resource = match["group"] or "", match["ns"] or "", match["resource"]
        name, sub = match["name"] or "", match["sub"]
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method) or (
            ("watch" if query.get("watch") in ("1", "true") else "list") if not name else "get"
        )
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        state = self.server.state
        code = 200
        try:
            state.authorize(token, verb, group, f"{resource}/{sub}" if sub else resource, namespace, name)
            if verb == "watch":
                self._watch(resource, namespace or None, query)
            else:
                self._answer(method, group, resource, namespace, name, sub, query)
        except ApiError as exc:
            code = exc.code
            self._send(exc.code, json.dumps(exc.status).encode())
        finally:
            with state.changed:
                state.accesses.append(Access(token, verb, group, f"{resource}/{sub}" if sub else resource, namespace, code))

    def _answer(
        self, method: str, group: str, resource: str, namespace: str, name: str, sub: str | None, query: dict[str, str]
    ) -> None:
        state = self.server.state
        if method == "GET" and not name:
            self._send(200, json.dumps(state.listing(resource, namespace or None, query.get("labelSelector", ""))).encode())
        elif method == "GET" and sub == "log":
            state.get(group, resource, namespace, name)
            text = state.logs.get((namespace, name, query.get("container", "")), "")
            lines = text.splitlines(keepends=True)[-int(query.get("tailLines", len(text) + 1)) :]
            self._send(200, "".join(lines).encode()[: int(query.get("limitBytes", len(text) + 1))], "text/plain")
        elif sub == "scale":
            self._patch_type(method)
            self._send(
                200,
                json.dumps(state.scale(group, resource, namespace, name, self._body() if method == "PATCH" else None)).encode(),
            )
        elif method == "GET":
            self._send(200, json.dumps(state.get(group, resource, namespace, name)).encode())
        elif method == "POST":
            self._send(201, json.dumps(state.create(group, resource, namespace, self._body())).encode())
        elif method == "DELETE":
            self._send(200, json.dumps(state.delete(group, resource, namespace, name, self._body())).encode())
        else:
            patch = method == "PATCH"
            self._patch_type(method)
            self._send(200, json.dumps(state.update(group, resource, namespace, name, self._body(), patch, sub)).encode())

    def _patch_type(self, method: str) -> None:
        """Only merge patches are served."""
        if method == "PATCH" and self.headers.get("Content-Type") != "application/merge-patch+json":
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format: {self.headers.get('Content-Type')}",
            )

    def _watch(self, resource: str, namespace: str | None, query: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        state = self.server.state
        version = int(query.get("resourceVersion") or state.version)
        until = time.monotonic() + min(float(query.get("timeoutSeconds", MAX_WATCH_S)), MAX_WATCH_S)
        while version >= 0 and time.monotonic() < until and not self.server.stopping.is_set():
            events, version = state.events_after(version, resource, namespace, query.get("labelSelector", ""), until)
            for event in events:
                data = json.dumps(event).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")


class ApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: ApiState) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = state
        self.stopping = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a replica stopped mid-watch) is no error of the server's."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        self.stopping.set()
        with self.state.changed:
            self.state.changed.notify_all()
        self.shutdown()
        self.server_close()


def roles_from_manifests(documents: list[Json], service_account: str) -> dict[str, list[Rule]]:
    """The rules each namespace grants ``service_account`` through Roles and RoleBindings."""
    roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in documents if d["kind"] == "Role"}
    granted: dict[str, list[Rule]] = {}
    for binding in (d for d in documents if d["kind"] == "RoleBinding"):
        if not any(s["kind"] == "ServiceAccount" and s["name"] == service_account for s in binding["subjects"]):
            continue
        namespace = binding["metadata"]["namespace"]
        for rule in roles[(namespace, binding["roleRef"]["name"])]["rules"]:
            for group in rule["apiGroups"]:
                granted.setdefault(namespace, []).extend(Rule(group, r, frozenset(rule["verbs"])) for r in rule["resources"])
    return granted


def write_kubeconfig(path: Any, url: str, token: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": url}}],
        "users": [{"name": "test", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }
    path.write_text(json.dumps(config))
