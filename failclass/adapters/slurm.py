"""Slurm adapter. Slurm's EpilogSlurmctld runs `failclass hook slurm-epilog` after every
job: it reads the job with `scontrol show job -d` (the whole allocation, each node with
its GPU indices; how the job ended: failclass.adapters.slurm_state), decides, and acts
with scontrol, writing the decision into the job's comment:

- retry, retry_with_more_resources: `requeue` (then StartTime=now+backoff);
- retry_elsewhere: `requeue`, then ExcNodeList=<nodes to avoid> (of a multi-node job,
  the nodes the evidence names: failclass.policy.decide.implicated_nodes);
- hold: `requeuehold` (pending until an operator runs `scontrol release`);
- no_retry, reject: `requeuehold State=SpecialExit`: the job stays, held, in Slurm's
  SPECIAL_EXIT state (meant for exactly this use by EpilogSlurmctld) and never runs
  again unless released. Slurm refuses any update to a finished job, its comment
  included, even while the epilog runs ("Job has already finished", measured on 22.05),
  so a job left FAILED could not carry the decision; FAILCLASS_SLURM_NO_RETRY=leave-failed
  leaves it FAILED, with the decision only in the store and the hook's log.

A job the idle watch released (`failclass waste watch --act slurm` marks its comment
"failclass: released ..." before `scancel`) is no failure: the epilog leaves it alone.
At the epilog a cancelled job is COMPLETING with exit 0:15, like any SIGTERM, so the mark
is what tells them apart (measured on Slurm 22.05).

A job_submit.lua (written by `failclass hook slurm-install`) asks `failclass hook admit`
about jobs whose batch script declares inputs with ``#FAILCLASS inputs /path ...``, and
refuses them when the answer is reject or hold.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from failclass.adapters.protocol import Answer, Decide, Finished, handle_finished
from failclass.adapters.slurm_jobs import hostnames, node_gpus
from failclass.adapters.slurm_state import ending_state, names_cause, requeued_by_slurm, scheduler_evidence
from failclass.attempts import Attempt
from failclass.limits import LIMITS

_FIELD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")
_DIRECTIVE = re.compile(r"^#FAILCLASS\s+inputs\s+(.+)$", re.MULTILINE)
_GPUS = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")
REQUEUE = ("retry", "retry_elsewhere", "retry_with_more_resources")
NO_RETRY_ENV = "FAILCLASS_SLURM_NO_RETRY"
RELEASED = "failclass: released"


def parse_show_job(text: str) -> dict[str, str]:
    """`scontrol show job -o N` (one line of Key=Value pairs; values may hold spaces)."""
    line = text.strip()
    keys = list(_FIELD.finditer(line))
    fields = {}
    for here, following in zip(keys, [*keys[1:], None], strict=False):
        end = following.start() if following else len(line)
        fields[here.group(1)] = line[here.end() : end].strip()
    return fields


@dataclass(frozen=True)
class SlurmJob:
    """One job as `scontrol show job -d -o` prints it: its fields and its whole allocation,
    each node with the GPU indices it holds there (none where GRES have no device file)."""

    fields: Mapping[str, str]
    allocation: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @classmethod
    def parse(cls, text: str) -> SlurmJob:
        return cls(parse_show_job(text), node_gpus(text))

    @property
    def state(self) -> str:
        return ending_state(self.fields)

    def nodes(self, env: Mapping[str, str]) -> tuple[str, ...]:
        """The allocation's nodes: the per-node lines, else the epilog's SLURM_JOB_NODELIST,
        else the batch host (inside the epilog NodeList is empty)."""
        listed = [node for node, _ in self.allocation] or hostnames(env.get("SLURM_JOB_NODELIST", ""))
        batch = self.fields.get("BatchHost")
        return tuple(dict.fromkeys(listed or ([batch] if batch else [])))


def declared_inputs(batch_script: str) -> tuple[str, ...]:
    return tuple(path for match in _DIRECTIVE.finditer(batch_script) for path in match.group(1).split())


def _time(value: str | None) -> datetime | None:
    if not value or value in ("Unknown", "None"):
        return None
    return datetime.fromisoformat(value).astimezone()


def attempt_from_job(slurm_job: SlurmJob, env: Mapping[str, str], inputs: tuple[str, ...]) -> Attempt:
    """The attempt that just ended, from scontrol's view of the job and the epilog's environment."""
    job = slurm_job.fields
    exit_status, _, signal = job.get("ExitCode", "0:0").partition(":")
    requeued = requeued_by_slurm(job, env)  # then it did not end well, whatever its exit code
    failed = job.get("ExitCode", "0:0") != "0:0" or job.get("Reason", "None") not in ("None", "") or requeued
    restarts = env.get("SLURM_JOB_RESTART_COUNT") or job.get("Restarts") or "0"  # the epilog's: this attempt's
    counted = _GPUS.search(job.get("AllocTRES") or job.get("TRES") or job.get("ReqTRES") or "")
    indexed = sum(len(indices) for _, indices in slurm_job.allocation)
    logs = tuple(dict.fromkeys(p for p in (job.get("StdOut"), job.get("StdErr")) if p))
    return Attempt(
        job_id=env.get("SLURM_JOB_ID") or job["JobId"],
        attempt=int(restarts) + 1 if restarts.isdigit() else 1,
        user=env.get("SLURM_JOB_USER") or job.get("UserId", "unknown").split("(")[0],
        vc=job.get("Partition") or "default",
        status="failed" if failed else "passed",
        submit_time=_time(job.get("SubmitTime")),
        start_time=_time(job.get("StartTime")),
        end_time=_time(job.get("EndTime")),
        gpus=indexed or (int(counted.group(1)) if counted else 0),
        nodes=slurm_job.nodes(env),
        exit_code=int(exit_status or 0),
        signal=int(signal or 0) or None,
        inputs=inputs,
        logs=logs,
    )


def comment_for(answer: Answer) -> str:
    prefix = "failclass" if answer.enforced else "failclass (audit, not enforced)"
    text = f"{prefix}: {answer.summary()}"
    if answer.fallback:
        text += " [fallback: local rules]"
    return text.replace('"', "'")[: LIMITS.slurm_comment_chars]


class Scontrol:
    def __init__(self, binary: str = "scontrol") -> None:
        self.binary = binary

    def run(self, *args: str) -> str:
        done = subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=30, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"scontrol {' '.join(args)}: {done.stderr.strip() or done.returncode}")
        return done.stdout

    def show_job(self, job_id: str) -> SlurmJob:
        return SlurmJob.parse(self.run("show", "job", "-d", "-o", job_id))

    def show_nodes(self, nodes: tuple[str, ...]) -> list[dict[str, str]]:
        """Each node's record (`scontrol show node -o`); none if scontrol cannot say."""
        try:
            text = self.run("show", "node", "-o", ",".join(nodes)) if nodes else ""
        except RuntimeError:
            return []
        return [parse_show_job(line) for line in text.splitlines() if line.strip()]

    def batch_script(self, job_id: str) -> str:
        try:
            return self.run("write", "batch_script", job_id, "-")
        except RuntimeError:
            return ""

    def act(self, job_id: str, answer: Answer, no_retry: str = "special-exit", requeued: bool = False) -> list[str]:
        """Carry out a decision; returns the scontrol commands it ran. The job is put back
        in the queue first: only then does Slurm accept an update of its comment. A job
        Slurm requeued itself is pending already: it is updated, or held (``hold``)."""
        action = answer.action
        if not answer.enforced:
            return []  # audit: a finished job cannot even take a comment; the store has it
        if requeued and action not in REQUEUE:
            commands = [["hold", job_id]]
        elif action in REQUEUE:
            commands = [] if requeued else [["requeue", job_id]]
            decided = answer.decided
            if decided and decided.action == "retry_elsewhere" and decided.exclude_nodes:
                commands.append(["update", f"jobid={job_id}", f"ExcNodeList={','.join(decided.exclude_nodes)}"])
            if decided and decided.backoff_seconds:
                commands.append(["update", f"jobid={job_id}", f"StartTime=now+{max(int(decided.backoff_seconds), 1)}"])
        elif action == "hold":
            commands = [["requeuehold", job_id]]
        elif no_retry == "special-exit":
            commands = [["requeuehold", "State=SpecialExit", job_id]]
        else:
            return []
        commands.append(["update", f"jobid={job_id}", f"comment={comment_for(answer)}"])
        for command in commands:
            self.run(*command)
        return [" ".join(shlex.quote(part) for part in ["scontrol", *c]) for c in commands]


class SlurmEpilog:
    """The adapter as EpilogSlurmctld runs it: one job, the one in its environment."""

    def __init__(self, job_id: str, env: Mapping[str, str], scontrol: Scontrol) -> None:
        self.job_id, self.env, self.scontrol = job_id, env, scontrol
        self.requeued = False  # Slurm requeued the job itself (a node failed): it is pending already

    def finished(self, workdir: Path) -> Iterator[Finished]:
        job = self.scontrol.show_job(self.job_id)
        comment = job.fields.get("Comment", "")
        if comment.startswith(RELEASED):  # the idle watch ended it: not a failure
            print(f"job {self.job_id}: {comment[:120]}; nothing to decide", file=sys.stderr)
            return
        attempt = attempt_from_job(job, self.env, declared_inputs(self.scontrol.batch_script(self.job_id)))
        self.requeued = requeued_by_slurm(job.fields, self.env)
        nodes = self.scontrol.show_nodes(attempt.nodes) if self.requeued or names_cause(job.state) else []
        state = ending_state(job.fields, self.requeued, nodes)
        requeued = " (requeued by Slurm)" if self.requeued else ""
        print(f"job {self.job_id} attempt {attempt.attempt}: {state}{requeued} on {allocation_text(job)}", file=sys.stderr)
        evidence = scheduler_evidence(job.fields, nodes, self.requeued)
        logs = [Path(p) for p in attempt.logs if Path(p).is_file()]
        if not logs and evidence:  # Slurm's record is the only log: a node that died may leave none
            logs = [workdir / f"slurm-{self.job_id}-{attempt.attempt}.state"]
            logs[0].write_text("\n".join(evidence.lines) + "\n")
        if not logs:
            print(f"job {self.job_id}: no readable log among {attempt.logs}; nothing to classify", file=sys.stderr)
            return
        yield Finished(attempt, logs, self.job_id, evidence)

    def act(self, finished: Finished, answer: Answer) -> list[str]:
        return self.scontrol.act(finished.handle, answer, self.env.get(NO_RETRY_ENV, "special-exit"), self.requeued)


def allocation_text(job: SlurmJob) -> str:
    """``node1 (GPUs 0,1), node2 (GPUs 0,1)``: the allocation, for the hook's log."""
    return ", ".join(f"{node} (GPUs {','.join(map(str, gpus))})" if gpus else node for node, gpus in job.allocation)


def epilog(decide: Decide, env: Mapping[str, str] = os.environ, scontrol: Scontrol | None = None) -> int:
    """The EpilogSlurmctld side; ``decide(attempt, logs)`` is the hook's backend."""
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        print("failclass slurm-epilog: no SLURM_JOB_ID: not run by Slurm?", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="failclass-epilog-") as scratch:
        handled_all = list(handle_finished(SlurmEpilog(job_id, env, scontrol or Scontrol()), decide, Path(scratch)))
    for handled in handled_all:
        attempt = handled.finished.attempt
        if attempt.status == "passed":  # recorded (for the reports), nothing to decide
            print(f"job {job_id} attempt {attempt.attempt}: ended well, recorded")
            continue
        for command in handled.done:
            print(command)
        print(f"job {job_id} attempt {attempt.attempt}: {comment_for(handled.answer)}")
    return 0
