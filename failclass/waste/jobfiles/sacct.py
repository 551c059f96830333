"""Slurm accounting as ``sacct --json`` prints it: ``{"jobs": [...]}``, one object a job,
in the shapes of Slurm 22.05 (openapi dbv0.0.38, recorded here: ``state.current`` a
string, ``array.task_id`` a number) and 23.02 onwards (data_parser v0.0.39+, as SchedMD's
parsers.c defines it: ``state.current`` a list, numbers that may be unset as
``{"set", "infinite", "number"}``, ``stdout_expanded``).

The job is its ``job_id`` (what ``SLURM_JOB_ID`` and so DCGM's ``hpc_job`` label hold),
an array task also ``<array job>_<task>``. Accounting keeps how many GPUs a job held
(``tres.allocated``: ``gres``/``gpu``) and on which nodes, not their indices. A job with
a ``batch`` step is batch; one without (salloc, srun) interactive. ``time.limit`` is
the job's time limit in minutes. Jobs that never started (``time.start`` 0) are left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from failclass.errors import InputError
from failclass.waste.allocation import JobAllocation
from failclass.waste.jobfiles.common import INTERACTIVE_PARTITION, JobsFile, allocation, finish, node_list, spread, where


def read_sacct(document: dict[str, Any], path: Path) -> JobsFile:
    listed = document.get("jobs")
    if not isinstance(listed, list):
        raise InputError(f"{path}: sacct --json without a `jobs` list")
    jobs, never = [], 0
    for number, entry in enumerate(listed, 1):
        if not isinstance(entry, dict):
            raise InputError(f"{where(path, number)}: a job is a JSON object")
        if _seconds((entry.get("time") or {}).get("start")) is None:
            never += 1
            continue
        jobs.append(_job(entry, path, number))
    notes = [f"{path}: {never} jobs that never started (pending, or cancelled first) left out"] if never else []
    return finish(path, "sacct --json", jobs, notes)


def _job(entry: dict[str, Any], path: Path, number: int) -> JobAllocation:
    at = where(path, number)
    job_id = _number(entry.get("job_id"))
    if not job_id:
        raise InputError(f"{at}: a job without job_id")
    array = entry.get("array") or {}
    task, parent = _number(array.get("task_id")), _number(array.get("job_id"))
    times = entry.get("time") or {}
    nodes = node_list(str(entry.get("nodes") or ""))
    steps = {_step_name(step) for step in entry.get("steps") or []}
    log = _log(entry)
    return allocation(
        at,
        str(job_id),
        user=str(entry.get("user") or ""),
        cluster=str(entry.get("partition") or ""),
        # a batch script on an interactive partition (a notebook server started by sbatch) is interactive
        kind="interactive"
        if INTERACTIVE_PARTITION.search(str(entry.get("partition") or "")) or (steps and "batch" not in steps)
        else "batch",
        counts=spread(_gpus(entry, at), nodes),
        start=_seconds(times.get("start")),
        end=_seconds(times.get("end")),
        log=Path(log) if log else None,
        aliases=(f"{parent}_{task}",) if parent and task is not None else (),
        time_limit_s=_limit(times.get("limit")),
    )


def _number(value: Any) -> Any:
    """A number as either shape prints it; None when unset."""
    if isinstance(value, dict):
        return value.get("number") if value.get("set", True) and not value.get("infinite") else None
    return value


def _seconds(value: Any) -> float | None:
    """A Unix time; None for 0 or unset (not started, still running)."""
    number = _number(value)
    return float(number) if number else None


def _limit(value: Any) -> float | None:
    """``time.limit`` (minutes) in seconds; None where unset or infinite."""
    number = _number(value)
    return float(number) * 60 if number else None


def _step_name(step: Any) -> str:
    named = (step.get("step") or {}) if isinstance(step, dict) else {}
    return str(named.get("name") or str(named.get("id") or "").rsplit(".", 1)[-1])


def _gpus(entry: dict[str, Any], at: str) -> int:
    tres = (entry.get("tres") or {}).get("allocated") or []
    counts = [_number(t.get("count")) for t in tres if isinstance(t, dict) and t.get("type") == "gres" and t.get("name") == "gpu"]
    try:
        return int(sum(c for c in counts if c))
    except (TypeError, ValueError) as exc:
        raise InputError(f"{at}: tres.allocated gres/gpu count is not a number: {counts}") from exc


def _log(entry: dict[str, Any]) -> str:
    """The job's output file where Slurm printed it expanded (24.05 and later: ``stdout_expanded``)."""
    return str(entry.get("stdout_expanded") or "")
