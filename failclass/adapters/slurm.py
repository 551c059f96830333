"""Slurm adapter. Slurm's EpilogSlurmctld runs `failclass hook slurm-epilog` after every
job: it reads the job with scontrol, decides, and acts with scontrol, writing the
decision into the job's comment:

- retry, retry_with_more_resources: `requeue` (then StartTime=now+backoff);
- retry_elsewhere: `requeue`, then ExcNodeList=<nodes to avoid>;
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
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from failclass.adapters.protocol import Answer, Decide, Finished, handle_finished
from failclass.attempts import Attempt

_FIELD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")
_DIRECTIVE = re.compile(r"^#FAILCLASS\s+inputs\s+(.+)$", re.MULTILINE)
_GPUS = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")
COMMENT_CHARS = 250
REQUEUE = ("retry", "retry_elsewhere", "retry_with_more_resources")
NO_RETRY_ENV = "FAILCLASS_SLURM_NO_RETRY"
RELEASED = "failclass: released"


def parse_show_job(text: str) -> dict[str, str]:
    """`scontrol show job -o N` (one line of Key=Value pairs; values may hold spaces)."""
    line = text.strip()
    keys = list(_FIELD.finditer(line))
    fields = {}
    for here, following in zip(keys, [*keys[1:], None]):
        end = following.start() if following else len(line)
        fields[here.group(1)] = line[here.end() : end].strip()
    return fields


def declared_inputs(batch_script: str) -> tuple[str, ...]:
    return tuple(path for match in _DIRECTIVE.finditer(batch_script) for path in match.group(1).split())


def _time(value: str | None) -> datetime | None:
    if not value or value in ("Unknown", "None"):
        return None
    return datetime.fromisoformat(value).astimezone()


def attempt_from_job(job: Mapping[str, str], env: Mapping[str, str], inputs: tuple[str, ...]) -> Attempt:
    """The attempt that just ended, from scontrol's view of the job and the epilog's environment."""
    exit_status, _, signal = job.get("ExitCode", "0:0").partition(":")
    failed = job.get("ExitCode", "0:0") != "0:0" or job.get("Reason", "None") not in ("None", "")
    gpus = _GPUS.search(job.get("AllocTRES") or job.get("TRES") or job.get("ReqTRES") or "")
    node = job.get("BatchHost") or env.get("SLURM_JOB_NODELIST", "")
    logs = tuple(dict.fromkeys(p for p in (job.get("StdOut"), job.get("StdErr")) if p))
    return Attempt(
        job_id=env.get("SLURM_JOB_ID") or job["JobId"],
        attempt=int(job.get("Restarts", "0") or 0) + 1,
        user=env.get("SLURM_JOB_USER") or job.get("UserId", "unknown").split("(")[0],
        vc=job.get("Partition") or "default",
        status="failed" if failed else "passed",
        submit_time=_time(job.get("SubmitTime")),
        start_time=_time(job.get("StartTime")),
        end_time=_time(job.get("EndTime")),
        gpus=int(gpus.group(1)) if gpus else 0,
        nodes=(node,) if node else (),
        exit_code=int(exit_status or 0),
        signal=int(signal or 0) or None,
        inputs=inputs,
        logs=logs,
    )


def comment_for(answer: Mapping[str, Any]) -> str:
    explanation = answer.get("explanation", {})
    prefix = "failclass" if answer.get("enforced", True) else "failclass (audit, not enforced)"
    rule = explanation.get("rule_id") or "no rule"
    text = f"{prefix}: {answer['action']}: {explanation.get('reason')} ({rule}): {explanation.get('message', '')}"
    if answer.get("fallback"):
        text += " [fallback: local rules]"
    return text.replace('"', "'")[:COMMENT_CHARS]


class Scontrol:
    def __init__(self, binary: str = "scontrol") -> None:
        self.binary = binary

    def run(self, *args: str) -> str:
        done = subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=30, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"scontrol {' '.join(args)}: {done.stderr.strip() or done.returncode}")
        return done.stdout

    def show_job(self, job_id: str) -> dict[str, str]:
        return parse_show_job(self.run("show", "job", "-o", job_id))

    def batch_script(self, job_id: str) -> str:
        try:
            return self.run("write", "batch_script", job_id, "-")
        except RuntimeError:
            return ""

    def act(self, job_id: str, answer: Mapping[str, Any], no_retry: str = "special-exit") -> list[str]:
        """Carry out a decision; returns the scontrol commands it ran. The job is put back
        in the queue first: only then does Slurm accept an update of its comment."""
        action = answer["action"]
        if not answer.get("enforced", True):
            return []  # audit: a finished job cannot even take a comment; the store has it
        if action in REQUEUE:
            commands = [["requeue", job_id]]
            if action == "retry_elsewhere" and answer.get("exclude_nodes"):
                commands.append(["update", f"jobid={job_id}", f"ExcNodeList={','.join(answer['exclude_nodes'])}"])
            if answer.get("backoff_seconds"):
                commands.append(["update", f"jobid={job_id}", f"StartTime=now+{max(int(answer['backoff_seconds']), 1)}"])
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

    def finished(self, workdir: Path) -> Iterator[Finished]:
        job = self.scontrol.show_job(self.job_id)
        if job.get("Comment", "").startswith(RELEASED):  # the idle watch ended it: not a failure
            print(f"job {self.job_id}: {job['Comment'][:120]}; nothing to decide", file=sys.stderr)
            return
        attempt = attempt_from_job(job, self.env, declared_inputs(self.scontrol.batch_script(self.job_id)))
        logs = [Path(p) for p in attempt.logs if Path(p).is_file()]
        if not logs:
            print(f"job {self.job_id}: no readable log among {attempt.logs}; nothing to classify", file=sys.stderr)
            return
        yield Finished(attempt, logs, self.job_id)

    def act(self, finished: Finished, answer: Answer) -> list[str]:
        return self.scontrol.act(finished.handle, answer, self.env.get(NO_RETRY_ENV, "special-exit"))


def epilog(decide: Decide, env: Mapping[str, str] = os.environ, scontrol: Scontrol | None = None) -> int:
    """The EpilogSlurmctld side; ``decide(attempt, logs)`` is the hook's backend."""
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        print("failclass slurm-epilog: no SLURM_JOB_ID: not run by Slurm?", file=sys.stderr)
        return 2
    for handled in handle_finished(SlurmEpilog(job_id, env, scontrol or Scontrol()), decide, Path.cwd()):
        attempt = handled.finished.attempt
        if attempt.status == "passed":  # recorded (for the reports), nothing to decide
            print(f"job {job_id} attempt {attempt.attempt}: ended well, recorded")
            continue
        for command in handled.done:
            print(command)
        print(f"job {job_id} attempt {attempt.attempt}: {comment_for(handled.answer)}")
    return 0
