"""Jobs as a table: CSV (or ``|``/tab separated, as ``sacct -P`` prints), JSON Lines or a
JSON list of objects, one job a row, under the column names operators use.

Each field is looked up under its aliases, case, ``_``, ``-`` and spaces ignored: the job
under ``job``, ``JobIDRaw``, ``JobID``, ``job_id``, ``id``; the GPUs as failclass's
``node:indices`` list, or a count (``gpus``, ``ngpus``, a TRES string's ``gres/gpu=N``: the
job's total) beside the nodes (``NodeList``, ``nodes``, ``host``), or a GRES string
(``gpu:h100:8``: per node, as ``--gres`` and ``TresPerNode`` count); the time limit
under ``Timelimit``, ``TimelimitRaw`` or ``limit``, in Slurm's forms (a bare number is
minutes). Rows of ``sacct -P`` steps (``1234.batch``) are not jobs: a ``batch`` step marks
its job batch, its absence interactive (salloc, srun)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import replace
from pathlib import Path

from failclass.errors import InputError
from failclass.waste.allocation import JobAllocation
from failclass.waste.jobfiles.common import (
    JobsFile,
    allocation,
    finish,
    node_list,
    parse_gpus,
    parse_limit,
    parse_time,
    spread,
    where,
)

ALIASES: dict[str, tuple[str, ...]] = {
    "job": ("job", "jobidraw", "jobid", "id"),
    "user": ("user", "username", "userid", "owner"),
    "cluster": ("cluster", "partition", "virtualcluster", "vc", "queue", "namespace"),
    "kind": ("kind", "jobkind", "jobtype", "type"),
    "gpus": ("gpus", "gpu", "gpulist", "gpuids", "ngpus", "numgpus", "gpucount", "gpunum", "numgpu"),
    "tres": ("alloctres", "tres", "reqtres", "allocgres", "gres"),
    "nodes": ("nodes", "nodelist", "node", "nodename", "host", "hostname", "hosts", "machine"),
    "start": ("start", "starttime", "startedat", "begin", "begintime"),
    "end": ("end", "endtime", "finish", "finishedat", "stop", "finishtime"),
    "limit": ("timelimit", "timelimitraw", "limit"),
    "log": ("log", "stdout", "output", "logfile", "logpath", "out"),
    "pod": ("pod", "podname"),
    "namespace": ("namespace", "podnamespace"),
    "state": ("state", "jobstate", "status", "phase"),
}
NEVER_RAN = ("PENDING", "REQUEUED", "REQUEUE_HOLD")
_GPU_TRES = re.compile(r"gres/gpu(?::[^=,]*)?=(\d+)|(?:^|,)gpu(?::[^:,(]+)?:(\d+)")  # TRES gres/gpu=N, GRES gpu:type:N
_STEP = re.compile(r"^(.+)\.([A-Za-z0-9_+-]+)$")


def read_table(text: str, path: Path) -> JobsFile:
    """Rows of a CSV, JSON Lines or JSON list, told by their first character."""
    first = text.lstrip()[:1]
    if first == "[":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not JSON: {exc}") from exc
        rows, shape = [_object(row, path, number) for number, row in enumerate(document, 1)], "JSON list"
    elif first == "{":
        lines = [line for line in text.splitlines() if line.strip()]
        rows, shape = [_object(_json(line, path, n), path, n) for n, line in enumerate(lines, 1)], "JSON Lines"
    else:
        rows, shape = _delimited(text, path)
    return _jobs(rows, path, shape)


def _json(line: str, path: Path, number: int) -> object:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where(path, number)}: not JSON: {exc}") from exc


def _object(row: object, path: Path, number: int) -> dict[str, str]:
    if not isinstance(row, dict):
        raise InputError(f"{where(path, number)}: a job is a JSON object")
    return {str(key): "" if value is None else str(value) for key, value in row.items()}


def _delimited(text: str, path: Path) -> tuple[list[dict[str, str]], str]:
    header = text.split("\n", 1)[0]
    delimiter = max(",|\t;", key=header.count)
    reader = csv.DictReader(text.splitlines(), delimiter=delimiter)
    rows = []
    for number, row in enumerate(reader, 1):
        if None in row or None in row.values():
            raise InputError(
                f"{where(path, number)}: {len(row) - (None in row)} fields where the header has {len(reader.fieldnames or ())}"
            )
        rows.append({key: value or "" for key, value in row.items()})
    return rows, {",": "CSV", "|": "sacct -P (|-separated)", "\t": "TSV", ";": "CSV (;)"}[delimiter]


def _columns(rows: list[dict[str, str]]) -> tuple[dict[str, str], list[str]]:
    """field -> the column that holds it, and the columns no field reads."""
    present: dict[str, str] = {}
    for row in rows:
        for column in row:
            present.setdefault(_normal(column), column)
    found = {
        field: next(present[a] for a in aliases if a in present)
        for field, aliases in ALIASES.items()
        if any(a in present for a in aliases)
    }
    return found, [column for column in present.values() if column not in found.values()]


def _normal(column: str) -> str:
    return re.sub(r"[\s_\-.]", "", column.lower())


def _jobs(rows: list[dict[str, str]], path: Path, shape: str) -> JobsFile:
    if not rows:  # a header alone: no jobs (a scheduler's export of an empty window)
        return JobsFile(path, shape, [])
    column, unread = _columns(rows)
    if "job" not in column and "pod" not in column:
        headers = ", ".join(dict.fromkeys(c for row in rows for c in row))
        raise InputError(
            f"{path}: no job column (looked for {', '.join(ALIASES['job'] + ALIASES['pod'])}); the columns: {headers}"
        )
    names = [_name(row, column) for row in rows]
    ids = set(names)
    steps: dict[str, set[str]] = {}
    jobs, never = [], 0
    for number, (row, name) in enumerate(zip(rows, names, strict=False), 1):
        step = _STEP.match(name)
        if step and step.group(1) in ids:
            steps.setdefault(step.group(1), set()).add(step.group(2))
            continue
        if not name:
            raise InputError(f"{where(path, number)}: a job row without a job id ({column.get('job') or column['pod']})")
        if row.get(column.get("state", ""), "").split(" ")[0].upper() in NEVER_RAN:
            never += 1
            continue
        jobs.append(_row(row, column, path, number, name))
    notes = [f"{path}: {never} jobs that never started (pending) left out"] if never else []
    if steps:
        jobs = [_kind_from_steps(job, steps) for job in jobs]
    said = {
        "user": "user" in column,
        "cluster": "cluster" in column or "namespace" in column,
        "kind": "kind" in column or bool(steps),
        "place": any(f in column for f in ("gpus", "tres", "nodes")),
        "time": "start" in column or "end" in column,
    }
    hint = f" (columns not read: {', '.join(unread)})" if unread else ""
    return finish(path, shape, jobs, notes, [name for name, found in said.items() if not found], hint)


def _name(row: dict[str, str], column: dict[str, str]) -> str:
    """The job's id; a pod's is ``namespace/pod``, as DCGM's pod labels name it."""
    if "job" in column:
        return row.get(column["job"], "").strip()
    pod, namespace = row.get(column["pod"], "").strip(), row.get(column.get("namespace", ""), "").strip()
    return f"{namespace}/{pod}" if pod and namespace else pod


def _row(row: dict[str, str], column: dict[str, str], path: Path, number: int, name: str) -> JobAllocation:
    at = where(path, number)
    value = {field: row.get(header, "").strip() for field, header in column.items()}
    nodes = node_list(value.get("nodes", ""))
    gpus, count = _gpu_field(value.get("gpus", ""), len(nodes), at)
    if not count and value.get("tres"):
        count = _gpu_count(value["tres"], len(nodes))
    aliases = [row[header].strip() for header in row if _normal(header) in ALIASES["job"]]
    if value.get("pod"):
        aliases.append(_name(row, {k: v for k, v in column.items() if k != "job"}))
    log = value.get("log", "")
    return allocation(
        at,
        name,
        user=value.get("user", "").split("(")[0],
        cluster=value.get("cluster") or value.get("namespace", ""),
        kind=value.get("kind", ""),
        gpus=gpus,
        counts=() if gpus else spread(count, nodes),
        start=parse_time(value.get("start"), at),
        end=parse_time(value.get("end"), at),
        log=(path.parent / log) if log and "%" not in log else None,
        aliases=tuple(aliases),
        time_limit_s=parse_limit(value.get("limit"), at),
    )


def _gpu_field(text: str, nodes: int, at: str) -> tuple[tuple[tuple[str, int], ...], int]:
    """A ``node:indices`` list, or a count (of the job's ``nodes``, for a GRES string)."""
    if not text:
        return (), 0
    if text.isdigit():
        return (), int(text)
    if _GPU_TRES.search(text):
        return (), _gpu_count(text, nodes)
    return parse_gpus(text, at), 0


def _gpu_count(text: str, nodes: int) -> int:
    """The job's GPUs a TRES (``gres/gpu=16``: the job's) or GRES (``gpu:h100:8``: each of
    its ``nodes``') string says; 0 where it names none."""
    match = _GPU_TRES.search(text)
    if match is None:
        return 0
    return int(match.group(1)) if match.group(1) else int(match.group(2)) * max(nodes, 1)


def _kind_from_steps(job: JobAllocation, steps: dict[str, set[str]]) -> JobAllocation:
    if job.job not in steps:
        return job
    return replace(job, kind="batch" if "batch" in steps[job.job] else "interactive")
