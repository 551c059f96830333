"""Running jobs and the GPUs they hold, from Slurm itself: ``scontrol show job -d`` prints,
per allocated node, ``Nodes=gpu01 CPU_IDs=0-7 Mem=64000 GRES=gpu:a100:2(IDX:0-1)``
(``GRES_IDX=gpu(IDX:0,2-3,5)`` before 19.05). ``BatchFlag=0`` marks an interactive job
(salloc, srun --pty). A job whose GPU indices Slurm does not print (GRES without a device
file) has no placement, and its readings cannot be told apart."""

from __future__ import annotations

import re
import subprocess
from datetime import datetime
from typing import TYPE_CHECKING

from failclass.errors import InputError

if TYPE_CHECKING:
    from failclass.waste.allocation import JobAllocation

_RECORD = re.compile(r"^JobId=", re.MULTILINE)
_NODE = re.compile(r"\bNodes=(\S+) CPU_IDs=\S* Mem=\S* (?:GRES|GRES_IDX)=(\S*)")
_GPU_IDX = re.compile(r"gpu[^,(]*\((?:IDX:)?([0-9,\-]+)\)")
_FIELD = re.compile(r"(?:^|\s)(JobId|UserId|JobState|BatchFlag|Partition|StartTime|StdOut)=(\S*)")


def running_allocations(text: str) -> list[JobAllocation]:
    """Every RUNNING job of ``scontrol show job -d`` output, with its GPUs where Slurm names them."""
    from failclass.waste.allocation import JobAllocation  # numpy loads for the idle watch, not the epilog

    starts = [m.start() for m in _RECORD.finditer(text)]
    jobs = []
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=False):
        record = text[begin:end]
        fields = dict(_FIELD.findall(record))
        if fields.get("JobState") != "RUNNING":
            continue
        gpus = tuple((node, index) for node, indices in node_gpus(record) for index in indices)
        jobs.append(
            JobAllocation(
                fields["JobId"],
                fields.get("UserId", "unknown").split("(")[0],
                fields.get("Partition") or "default",
                "interactive" if fields.get("BatchFlag") == "0" else "batch",
                gpus,
                _time(fields.get("StartTime")),
            )
        )
    return jobs


def node_gpus(record: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each node of one job's allocation with the GPU indices it holds there, from the
    per-node lines of ``scontrol show job -d`` (in the one-line ``-o`` form too)."""
    return tuple((node, tuple(_indices(gres))) for nodes, gres in _NODE.findall(record) for node in hostnames(nodes))


def read_running(scontrol: str = "scontrol") -> list[JobAllocation]:
    """The running jobs of the Slurm this host talks to."""
    try:
        done = subprocess.run([scontrol, "show", "job", "-d"], capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise InputError(f"cannot run {scontrol} show job -d: {exc.strerror or exc}") from exc
    if done.returncode != 0:
        raise InputError(f"scontrol show job -d: {done.stderr.strip() or done.returncode}")
    return running_allocations(done.stdout)


def hostnames(nodes: str) -> list[str]:
    """Slurm's host list, ``gpu[01-03,07],login1``, one name each."""
    names, depth, part = [], 0, ""
    for char in nodes + ",":
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            names += _expand(part)
            part = ""
        else:
            part += char
    return names


def _expand(part: str) -> list[str]:
    match = re.fullmatch(r"([^\[]*)\[([^\]]+)\](.*)", part)
    if not match:
        return [part] if part else []
    prefix, ranges, suffix = match.groups()
    names = []
    for piece in ranges.split(","):
        low, _, high = piece.partition("-")
        for number in range(int(low), int(high or low) + 1):
            names += _expand(f"{prefix}{number:0{len(low)}d}{suffix}")
    return names


def _indices(gres: str) -> list[int]:
    found: list[int] = []
    for spec in _GPU_IDX.findall(gres):
        for piece in spec.split(","):
            low, _, high = piece.partition("-")
            found += range(int(low), int(high or low) + 1)
    return found


def _time(value: str | None) -> float:
    if not value or value in ("Unknown", "None"):
        return float("-inf")
    return datetime.fromisoformat(value).astimezone().timestamp()
