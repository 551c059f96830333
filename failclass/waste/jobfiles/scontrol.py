"""Slurm's view of its jobs as ``scontrol show job -d`` prints it (``-o`` too): one record
a job, from ``JobId=``. With ``-d`` each node of the allocation has its line with the GPU
indices (``Nodes=gpu01 CPU_IDs=0-7 Mem=64000 GRES=gpu:a100:2(IDX:0-1)``); without it only
the count (``TRES=...,gres/gpu=2``) and ``NodeList`` are known. ``BatchFlag=0`` marks an
interactive job; ``TimeLimit`` is the limit it asked for. Times are the cluster's local
time without a zone, read as UTC (as failclass reads nvidia-smi's). A running job's
``EndTime`` is only its time limit: it has no end yet. Jobs that never ran (pending,
cancelled while pending) are left out."""

from __future__ import annotations

import re
from pathlib import Path

from failclass.adapters.slurm_jobs import node_gpus
from failclass.waste.allocation import JobAllocation
from failclass.waste.jobfiles.common import JobsFile, allocation, finish, node_list, parse_limit, parse_time, spread, where

_RECORD = re.compile(r"^JobId=", re.MULTILINE)
_FIELD = re.compile(
    r"(?:^|\s)(JobId|ArrayJobId|ArrayTaskId|UserId|JobState|BatchFlag|Partition|StartTime|EndTime|TimeLimit|StdOut|NodeList|TRES)=(\S*)"
)
_GPU_TRES = re.compile(r"gres/gpu=(\d+)")
STILL_RUNNING = ("RUNNING", "SUSPENDED", "CONFIGURING", "RESIZING")


def read_scontrol(text: str, path: Path) -> JobsFile:
    starts = [m.start() for m in _RECORD.finditer(text)]
    jobs, never = [], 0
    for number, (begin, end) in enumerate(zip(starts, [*starts[1:], len(text)], strict=False), 1):
        record = text[begin:end]
        fields = dict(_FIELD.findall(record))
        if fields.get("JobState") == "PENDING" or not node_list(fields.get("NodeList", "")):
            never += 1
            continue
        jobs.append(_job(record, fields, path, number))
    notes = [f"{path}: {never} jobs that never ran (pending, or cancelled first) left out"] if never else []
    return finish(path, "scontrol show job -d", jobs, notes)


def _job(record: str, fields: dict[str, str], path: Path, number: int) -> JobAllocation:
    at = where(path, number)
    gpus = tuple((node, index) for node, indices in node_gpus(record) for index in indices)
    tres = _GPU_TRES.search(fields.get("TRES", ""))
    counts = () if gpus else spread(int(tres.group(1)) if tres else 0, node_list(fields["NodeList"]))
    parent, task = fields.get("ArrayJobId"), fields.get("ArrayTaskId")
    log = fields.get("StdOut", "")
    return allocation(
        at,
        fields["JobId"],
        user=fields.get("UserId", "").split("(")[0],
        cluster=fields.get("Partition", ""),
        kind="interactive" if fields.get("BatchFlag") == "0" else "batch",
        gpus=gpus,
        counts=counts,
        start=parse_time(fields.get("StartTime"), at),
        end=None if fields.get("JobState") in STILL_RUNNING else parse_time(fields.get("EndTime"), at),
        log=Path(log) if log and log != "/dev/null" else None,
        aliases=(f"{parent}_{task}",) if parent and task else (),
        time_limit_s=parse_limit(fields.get("TimeLimit"), at),
    )
