"""The scheduler's own word (failclass.attempts.SchedulerEvidence) set against the logs':
when the scheduler names the cause (the node failed, the job ran out of memory, it was
preempted), that is the root cause (docs/TAXONOMY.md, principle 1) and whatever the log
printed came after it. Its lines become the evidence, so that a node record among them
names the node the policy implicates; a log whose rule names the same reason keeps its
rule (a model's guess does not: the scheduler's record is firmer). The origin the logs
read as ranks gave goes with their answer: the scheduler's record names its own node."""

from __future__ import annotations

from dataclasses import replace

from failclass.attempts import SchedulerEvidence
from failclass.classifier import Examination
from failclass.contracts import Evidence
from failclass.matching.taxonomy import Taxonomy


def with_scheduler(examined: Examination, scheduler: SchedulerEvidence | None, taxonomy: Taxonomy) -> Examination:
    """The examination, its classification replaced by the scheduler's where that names another reason."""
    found = examined.classification
    if scheduler is None or (scheduler.reason == found.reason and found.rule_id is not None):
        return examined
    reason = taxonomy[scheduler.reason]
    classification = replace(
        found,
        reason=reason.id,
        reason_name=reason.name,
        categories=reason.categories,
        source="scheduler",
        rule_id=scheduler.rule_id,
        why=f"the scheduler's own record names the cause (the log alone said {found.reason})",
        confidence=1.0,
        evidence=tuple(Evidence(0, line) for line in scheduler.lines),
        also_matched=(),
    )
    return replace(examined, classification=classification, origin=None)
