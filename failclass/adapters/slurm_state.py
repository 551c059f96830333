"""How a Slurm job ended, and what Slurm's own record of it is evidence of.

Names as Slurm writes them (SchedMD slurm, src/common/slurm_protocol_defs.c:
``job_state_string``, ``job_reason_string``). Inside EpilogSlurmctld the job is still
COMPLETING (measured on 22.05): its final state shows in its Reason (NodeDown for
NODE_FAIL, OutOfMemory for OUT_OF_MEMORY, TimeLimit for TIMEOUT) or, for PREEMPTED, in a
PreemptTime. `scontrol show job --json` does not exist in 22.05 ("unrecognized option
'--json'") and `sacct --json` needs accounting storage, so the text is read.

The states that name a cause, and the failure reason each is evidence of (taxonomy.yaml's
`scheduler` words, after docs/TAXONOMY.md):
OUT_OF_MEMORY is a host OOM kill (cpu_oom); PREEMPTED is job_preempted; NODE_FAIL and
BOOT_FAIL (a node of the allocation died or never came up) are, like a preemption, the
scheduler taking the resources away from a job that did nothing wrong (job_preempted:
retried, never spending the budget), whatever the log printed or did not print. TIMEOUT
names nothing (a time limit is no_signature): the log speaks.

A batch job that may be requeued (Slurm's default) is requeued by Slurm itself when one of
its nodes fails ("requeue job JobId=1 due to failure of node node2"). Its epilog then
sees it COMPLETING with Reason=None, ExitCode=0:0 and Restarts already one more than the
epilog's SLURM_JOB_RESTART_COUNT (measured on 22.05.8): that difference says Slurm
requeued it, and a DOWN node of its allocation says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from failclass.attempts import SchedulerEvidence
from failclass.matching.taxonomy import builtin_taxonomy

REASON_STATES = {"NodeDown": "NODE_FAIL", "OutOfMemory": "OUT_OF_MEMORY", "TimeLimit": "TIMEOUT"}
NODE_TROUBLE = ("DOWN", "FAIL", "NOT_RESPONDING")  # node state words (node_state_string) of a failed node
JOB_KEYS = ("JobId", "JobState", "Reason", "ExitCode", "Restarts", "PreemptTime")
NODE_KEYS = ("NodeName", "State", "Reason")


def requeued_by_slurm(job: Mapping[str, str], env: Mapping[str, str]) -> bool:
    """Slurm put the job back in the queue itself before its epilog ran (see above)."""
    ran = env.get("SLURM_JOB_RESTART_COUNT", "")
    return ran.isdigit() and job.get("Restarts", "0").isdigit() and int(job["Restarts"]) > int(ran)


def ending_state(job: Mapping[str, str], requeued: bool = False, nodes: Sequence[Mapping[str, str]] = ()) -> str:
    """The state the job ends in; for a COMPLETING job, the one its Reason or PreemptTime
    names, or NODE_FAIL for a job Slurm requeued while a node of it is down."""
    state = job.get("JobState", "UNKNOWN")
    if state != "COMPLETING":
        return state
    if job.get("Reason") in REASON_STATES:
        return REASON_STATES[job["Reason"]]
    if job.get("PreemptTime") not in (None, "", "None"):
        return "PREEMPTED"
    if requeued and any(troubled(node) for node in nodes):
        return "NODE_FAIL"
    return state


def names_cause(state: str) -> str | None:
    """The reason a Slurm job state is evidence of (taxonomy.yaml's `scheduler` words), if any."""
    return builtin_taxonomy().scheduler_words.get("slurm", {}).get(state)


def troubled(node: Mapping[str, str]) -> bool:
    """A node record (`scontrol show node -o`) of a node that is down, failed or not responding."""
    return any(word in node.get("State", "").split("+") for word in NODE_TROUBLE)


def scheduler_evidence(
    job: Mapping[str, str], nodes: Sequence[Mapping[str, str]], requeued: bool = False
) -> SchedulerEvidence | None:
    """Slurm's word on the cause, if its record names one: the job's state fields and the
    records of the allocation's troubled nodes, keys and values as scontrol printed them."""
    state = ending_state(job, requeued, nodes)
    reason = names_cause(state)
    if reason is None:
        return None
    lines = [" ".join(f"{key}={job[key]}" for key in JOB_KEYS if key in job)]
    lines += [" ".join(f"{key}={node[key]}" for key in NODE_KEYS if key in node) for node in nodes if troubled(node)]
    return SchedulerEvidence(reason, f"slurm.{state.lower()}", tuple(lines))
