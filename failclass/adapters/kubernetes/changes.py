"""What each decision does to the Job (Kubernetes cannot change a running Job's pod
template, only a suspended Job's scheduling directives, since 1.27):

| decision | action on the Job |
|---|---|
| retry | nothing: the Job controller retries within backoffLimit |
| retry_elsewhere | suspend, add a node anti-affinity (NotIn the nodes to avoid), resume |
| retry_with_more_resources | backoffLimit = failures so far (resources of a Job cannot change); resubmit with more memory |
| no_retry, reject | backoffLimit = failures so far: the Job fails now (BackoffLimitExceeded) |
| hold | suspend (an operator resumes it) |

Every decision is also written into the Job's annotations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from failclass.adapters.kubernetes.objects import ANNOTATION, JobState
from failclass.adapters.protocol import Answer
from failclass.limits import LIMITS

ENDS_NOW = ("no_retry", "reject", "retry_with_more_resources")


@dataclass(frozen=True)
class JobDecision:
    """The part of the hook's answer the Job is changed by."""

    action: str
    reason: str
    message: str
    enforced: bool = True
    exclude_nodes: tuple[str, ...] = ()

    @classmethod
    def from_answer(cls, answer: Answer) -> JobDecision:
        decided = answer.decided
        explanation = decided.explanation if decided else None
        return cls(
            action=answer.action,
            reason=str(explanation.reason if explanation else None),
            message=(explanation.message if explanation else "")[: LIMITS.k8s_explanation_chars],
            enforced=answer.enforced,
            exclude_nodes=decided.exclude_nodes if decided else (),
        )


@dataclass(frozen=True)
class JobChange:
    """One change of a Job, in the order they are made."""

    annotations: tuple[tuple[str, str], ...] = ()
    backoff_limit: int | None = None
    suspend: bool | None = None
    avoid_nodes: tuple[str, ...] = ()

    def merge_patch(self) -> dict[str, Any]:
        """The JSON merge patch (RFC 7386) that makes this change."""
        if self.annotations:
            return {"metadata": {"annotations": dict(self.annotations)}}
        if self.backoff_limit is not None:
            return {"spec": {"backoffLimit": self.backoff_limit}}
        if self.suspend is not None:
            return {"spec": {"suspend": self.suspend}}
        avoid = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": list(self.avoid_nodes)}
        terms = {"nodeSelectorTerms": [{"matchExpressions": [avoid]}]}
        return {
            "spec": {
                "template": {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}}}
            }
        }


def job_changes(decision: JobDecision, job: JobState) -> list[JobChange]:
    """The changes (in order) that carry out ``decision`` on ``job``."""
    note = JobChange(
        annotations=(
            (ANNOTATION + "decision", decision.action),
            (ANNOTATION + "reason", decision.reason),
            (ANNOTATION + "explanation", decision.message),
        )
    )
    if not decision.enforced:
        return [note]
    if decision.action in ENDS_NOW:
        return [note, JobChange(backoff_limit=job.failed)]
    if decision.action == "hold":
        return [note, JobChange(suspend=True)]
    if decision.action == "retry_elsewhere" and decision.exclude_nodes:
        return [note, JobChange(suspend=True), JobChange(avoid_nodes=decision.exclude_nodes), JobChange(suspend=False)]
    return [note]
