"""Jobs files in the shapes schedulers and operators export, one reader each, told by
content: ``sacct --json`` (``{"jobs": [...]}``), ``scontrol show job -d`` text
(``JobId=...``), Kubernetes pods (``kubectl get pods -o json``), and tables: CSV (also
``sacct -P``'s ``|``), JSON Lines or a JSON list, under common column names. Each gives
``JobAllocation``s; a problem is an ``InputError`` of one line, ``FILE: row N: problem``."""

from __future__ import annotations

import json
from pathlib import Path

from failclass.errors import InputError
from failclass.limits import LIMITS
from failclass.waste.allocation import JobAllocation
from failclass.waste.jobfiles.common import JobsFile
from failclass.waste.jobfiles.kubernetes import read_pods
from failclass.waste.jobfiles.sacct import read_sacct
from failclass.waste.jobfiles.scontrol import read_scontrol
from failclass.waste.jobfiles.table import read_table

__all__ = ["JobsFile", "load_jobs", "read_jobs"]


def read_jobs(path: Path) -> list[JobAllocation]:
    return load_jobs(path).jobs


def load_jobs(path: Path) -> JobsFile:
    """The jobs of ``path`` with the notes on what the file lacked."""
    try:
        if path.stat().st_size > LIMITS.waste_jobs_file_bytes:
            raise InputError(f"{path}: a jobs file over {LIMITS.waste_jobs_file_bytes:,} bytes")
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc
    head = text.lstrip()
    if not head:
        raise InputError(f"{path}: an empty jobs file")
    if head.startswith("JobId="):
        return read_scontrol(text, path)
    if head.startswith("{"):
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            return read_table(text, path)  # JSON Lines: one object a line
        if isinstance(document, dict) and isinstance(document.get("jobs"), list):
            return read_sacct(document, path)
        if isinstance(document, dict) and (document.get("kind") in ("List", "PodList", "Pod") or "items" in document):
            return read_pods(document, path)
    return read_table(text, path)
