"""The idle watch's signals carried out on Slurm: a warning is written into the job's
output with ``scontrol notify``; a release notifies, marks the job's comment (so that
failclass's epilog does not take the end for a failure and requeue it), then
``scancel``s the job, or ``scontrol requeue``s it where the policy releases by requeueing
(the job goes back to the queue, its GPUs freed); a hung job is cancelled with its own
mark, which the epilog does not skip: its attempt is decided as a failure."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from failclass.adapters.slurm import RELEASED
from failclass.contracts import CANCEL, RELEASE
from failclass.limits import LIMITS
from failclass.waste.enforce import FAILED
from failclass.waste.watch import Signal

HUNG_MARK = "failclass: hung"

Run = Callable[[list[str]], subprocess.CompletedProcess[str]]


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


def act(signal: Signal, run: Run = _run) -> list[str]:
    """The commands run for ``signal``, each with its outcome when it failed."""
    message = f"failclass: {signal.action}: {signal.reason}"
    if signal.gpus and signal.action != RELEASE:
        message += f" (GPUs {', '.join(signal.gpus)})"
    commands = [["scontrol", "notify", signal.job, message]]
    if signal.action in (RELEASE, CANCEL):
        mark = RELEASED if signal.action == RELEASE else HUNG_MARK
        comment = f"{mark}: {signal.reason}".replace('"', "'")[: LIMITS.slurm_comment_chars]
        requeue = signal.action == RELEASE and signal.release == "requeue"
        end = ["scontrol", "requeue", signal.job] if requeue else ["scancel", signal.job]
        commands += [["scontrol", "update", f"JobId={signal.job}", f"Comment={comment}"], end]
    done = []
    for command in commands:
        result = run(command)
        outcome = "" if result.returncode == 0 else f"{FAILED} ({result.returncode}): {result.stderr.strip()[:200]}"
        done.append(" ".join(command[:3]) + (f" {command[3]!r}" if len(command) > 3 else "") + outcome)
    return done
