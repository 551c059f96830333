"""The controller: the replica holding the Lease lists the Job pods, then watches them
from the list's resourceVersion (listing again when the API answers 410 Gone); each
failed pod not yet decided is claimed (its failclass.io/handled annotation, written only
if the pod is unchanged since read), decided through the hook with its container logs
and the API's termination evidence, and its Job changed (see changes.py); a pod the idle
watch released (failclass.io/released, idle.py) is not decided, one it deleted as hung
is. Replicas
without the Lease wait; one that takes the Lease over lists again, and finishes pods
whose claimant lost the Lease mid-way (the hook gives such a pod the decision already
recorded for it: the attempt number of a pod is the same whoever asks)."""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from failclass.adapters.kubernetes.changes import JobDecision, job_changes
from failclass.adapters.kubernetes.cluster import Cluster, WatchExpired
from failclass.adapters.kubernetes.lease import LeaderLease
from failclass.adapters.kubernetes.objects import (
    CLAIMED,
    FailedPod,
    JobState,
    attempt_from_pod,
    evidence_lines,
    scheduler_evidence,
)
from failclass.adapters.protocol import Answer, Decide, Finished, Handled, handle_finished
from failclass.errors import InputError

SWAP_TRIES = 5
FATAL = (401, 403)  # credentials or RBAC: no retry mends them


def swap_handled(cluster: Cluster, pod: FailedPod, expected: str | None, value: str) -> FailedPod | None:
    """Compare-and-set the pod's handled annotation: only while it is still ``expected``
    (pods change under us: the Job controller removes its finalizer, for one)."""
    for _ in range(SWAP_TRIES):
        if pod.handled != expected:
            return None
        written = cluster.mark(pod, value)
        if written is not None:
            return written
        pod = cluster.pod(pod.namespace, pod.name)
    return None


class KubernetesJobs:
    """The adapter (failclass.adapters.protocol) over the pods one event brought."""

    def __init__(self, cluster: Cluster, lease: LeaderLease, pods: Iterable[FailedPod]) -> None:
        self.cluster, self.lease, self.pods = cluster, lease, pods
        self.claimed: dict[str, tuple[FailedPod, JobState]] = {}

    def _logs(self, pod: FailedPod, workdir: Path) -> dict[str, Path]:
        """The files the hook reads, by where their text came from (kubernetes://namespace/
        pod/container: what the store records, the same whichever replica asks)."""
        evidence = "\n".join(evidence_lines(pod)) + "\n"
        containers = [end.container for end in pod.failures] or [end.container for end in pod.ends]
        if not containers:
            path = workdir / f"{pod.name}.pod.log"
            path.write_text(evidence)
            return {f"kubernetes://{pod.key}": path}
        logs = {f"kubernetes://{pod.key}/{container}": workdir / f"{pod.name}.{container}.log" for container in containers}
        for container, path in zip(containers, logs.values(), strict=False):
            path.write_text(self.cluster.log(pod, container).rstrip("\n") + "\n" + evidence)
        return logs

    def finished(self, workdir: Path) -> Iterator[Finished]:
        for seen in self.pods:
            if not (seen.needs_decision(self.lease.identity) and self.lease.leading()):
                continue
            pod = swap_handled(self.cluster, seen, seen.handled, CLAIMED + self.lease.identity)
            if pod is None or pod.job is None:
                continue  # another replica wrote first; the pod's next event shows what it did
            job = self.cluster.job(pod.namespace, pod.job)
            logs = self._logs(pod, workdir)
            self.claimed[pod.key] = pod, job
            attempt = attempt_from_pod(pod, self.cluster.attempt_number(pod), tuple(logs))
            yield Finished(attempt, list(logs.values()), pod.key, scheduler_evidence(pod))

    def act(self, finished: Finished, answer: Answer) -> list[str]:
        pod, job = self.claimed.pop(finished.handle)
        decision = JobDecision.from_answer(answer)
        if not self.lease.leading():
            return []  # the Lease was lost while deciding: the new leader finishes this pod
        changes = job_changes(decision, job)
        for change in changes:
            self.cluster.change_job(job, change)
        if swap_handled(self.cluster, pod, CLAIMED + self.lease.identity, decision.action) is None:
            print(f"failclass: pod {pod.key}: claim taken over after the Job was changed", file=sys.stderr)
        return [json.dumps(change.merge_patch()) for change in changes]


def action_line(handled: Handled) -> str:
    """What the controller prints for each decided pod."""
    namespace, pod = handled.finished.handle.split("/", 1)
    job = handled.finished.attempt.job_id.split("/", 1)[1]
    patches = [json.loads(line) for line in handled.done]
    return json.dumps({"namespace": namespace, "pod": pod, "job": job, "action": handled.answer.action, "patches": patches})


class Controller:
    """One replica: a thread renews (or seeks) the Lease, the caller's thread watches."""

    def __init__(
        self, cluster: Cluster, lease: LeaderLease, decide: Decide, workdir: Path, report: Callable[[str], None] = print
    ) -> None:
        self.cluster, self.lease, self.decide, self.workdir, self.report = cluster, lease, decide, workdir, report
        self.watch_s = max(int(lease.settings.renew_deadline_s), 1)

    def handle(self, pods: Iterable[FailedPod]) -> list[Handled]:
        """Decide each pod on its own: one the hook refuses (InputError) is reported and
        stays claimed, and the others go on."""
        handled: list[Handled] = []
        for pod in pods:
            with tempfile.TemporaryDirectory(prefix="pod-", dir=self.workdir) as scratch:  # its logs, gone after
                try:
                    done = list(handle_finished(KubernetesJobs(self.cluster, self.lease, [pod]), self.decide, Path(scratch)))
                except InputError as exc:
                    print(f"failclass: pod {pod.key}: {exc}", file=sys.stderr)
                    continue
            for one in done:
                self.report(action_line(one))
            handled += done
        return handled

    def _renew(self, stop: threading.Event) -> None:
        while not stop.is_set():
            was = self.lease.leading()
            try:
                self.lease.try_acquire_or_renew()
            except (ApiException, HTTPError) as exc:
                print(f"failclass: lease {self.lease.settings.name}: {exc}", file=sys.stderr)
            if self.lease.leading() != was:
                state = "leading" if self.lease.leading() else "following"
                print(f"failclass: {self.lease.identity} is {state}", file=sys.stderr, flush=True)
            stop.wait(self.lease.settings.retry_s)

    def _lead(self, stop: threading.Event) -> None:
        """List, then watch from the list's version until the Lease or the version is lost."""
        pods, version = self.cluster.list_pods()
        self.handle(pods)
        while self.lease.leading() and not stop.is_set():
            try:
                for event in self.cluster.watch_pods(version, self.watch_s):
                    version = event.resource_version
                    if event.pod is not None and event.kind != "DELETED":
                        self.handle([event.pod])
                    if stop.is_set() or not self.lease.leading():
                        return
            except WatchExpired as gone:
                print(f"failclass: watch from {version}: {gone}; listing again", file=sys.stderr)
                return

    def run(self, stop: threading.Event) -> None:
        """Until ``stop`` is set; the Lease is given up on the way out."""
        renewer = threading.Thread(target=self._renew, args=(stop,), name="failclass-lease", daemon=True)
        renewer.start()
        try:
            while not stop.is_set():
                if not self.lease.leading():
                    stop.wait(self.lease.settings.retry_s)
                    continue
                try:
                    self._lead(stop)
                except (ApiException, HTTPError) as exc:
                    if isinstance(exc, ApiException) and exc.status in FATAL:
                        raise
                    print(f"failclass: {exc}; listing again", file=sys.stderr)
                    stop.wait(self.lease.settings.retry_s)
        finally:
            stop.set()
            renewer.join()
            self.lease.release()


def run_controller(decide: Decide, cluster: Cluster, lease: LeaderLease) -> None:
    """The replica's life: until SIGTERM/SIGINT (which the caller turns into SystemExit)."""
    with tempfile.TemporaryDirectory(prefix="failclass-k8s-") as scratch:
        Controller(cluster, lease, decide, Path(scratch)).run(threading.Event())
